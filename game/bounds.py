"""Where a character's body is while a clip plays: bounds sampled over the motion, never the rest pose.

A figure's rest pose says little about where its feet are while it moves: a BVH take's rest pose
has the hips at the origin and the feet a metre below it, a crouching idle stands lower than its
bind pose, a run lifts the body. The programs therefore ground and frame a character from its
**animated** bounds: each clip is sampled at every key and every ``1 / SAMPLE_RATE`` seconds (at
most :data:`MAX_SAMPLES` poses, ends included), the whole scene is evaluated for every sample
(:func:`scene_frames`) and every vertex it draws is computed on the CPU
(:func:`engine.anim.scene.scene_vertices`: skinned meshes of every skin, rigid meshes under
joints or animated nodes, morph targets with the clip's weights; the nodes' origins for a file
without meshes), and each sample's axis-aligned box is kept.

The result, :class:`ClipMotion`, holds the per-sample boxes in the space asked for;
:class:`Bounds` is one box (the union over a clip, or over several clips).

Examples
--------
>>> from game.model import load_model
>>> model = load_model()
>>> walk = model.bounds["walk"]
>>> bool(abs(walk.low[1]) < 0.01), bool(1.7 < walk.size[1] < 1.9)   # feet on y = 0, metres
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.rootmotion import parent_up, remove_planar
from engine.anim.sampling import sample
from engine.anim.scene import Scene, SceneFrame, scene_vertices
from engine.anim.skeleton import Skeleton
from engine.camera import camera_axes
from engine.math import transform_points
from engine.math._checks import FloatArray

SAMPLE_RATE = 30.0
"""Poses per second of clip time sampled for the bounds, at least (every key is sampled too)."""
MAX_SAMPLES = 900
"""Most poses sampled per clip (a longer clip is sampled more sparsely): 7.5 s of 120 Hz mocap."""
MERGE_SECONDS = 1e-3
"""Sample times closer than this to the previous one are dropped."""
SKIN_BUDGET = 400_000
"""Vertices skinned per batch (samples × vertices), to bound the memory of long clips on big meshes."""


@dataclass(frozen=True)
class Bounds:
    """An axis-aligned box: corners ``low`` and ``high`` ``(3,)``."""

    low: FloatArray
    high: FloatArray

    @property
    def size(self) -> FloatArray:
        """``high - low`` ``(3,)``."""
        return self.high - self.low

    @property
    def centre(self) -> FloatArray:
        """Middle of the box ``(3,)``."""
        return 0.5 * (self.low + self.high)

    def corners(self) -> FloatArray:
        """The eight corners ``(8, 3)``."""
        pick = np.array([[(k >> axis) & 1 for axis in range(3)] for k in range(8)], dtype=bool)
        return np.where(pick, self.high, self.low)

    def transformed(self, matrix: FloatArray) -> Bounds:
        """The box around this box's corners moved by the affine ``matrix`` ``(4, 4)``.

        Exact for rotations by multiples of 90° (what the programs apply), a superset otherwise.
        """
        points = transform_points(matrix, self.corners())
        return Bounds(points.min(axis=0), points.max(axis=0))

    def shifted(self, offset: Sequence[float] | FloatArray) -> Bounds:
        """The box moved by ``offset`` ``(3,)``."""
        return Bounds(self.low + offset, self.high + offset)

    @staticmethod
    def union(boxes: Iterable[Bounds]) -> Bounds:
        """The smallest box holding every box of ``boxes`` (at least one)."""
        listed = list(boxes)
        return Bounds(np.min([b.low for b in listed], axis=0), np.max([b.high for b in listed], axis=0))


@dataclass(frozen=True)
class ClipMotion:
    """Per-sample boxes of a figure over one clip.

    Attributes
    ----------
    times
        ``(T,)`` clip times sampled, seconds.
    lows, highs
        ``(T, 3)`` box corners of each sample.
    roots
        ``(T, 3)`` position of the root joint at each sample (an object's: its box's middle).
    """

    times: FloatArray
    lows: FloatArray
    highs: FloatArray
    roots: FloatArray

    @property
    def bounds(self) -> Bounds:
        """The union of the samples' boxes."""
        return Bounds(self.lows.min(axis=0), self.highs.max(axis=0))

    @property
    def height(self) -> float:
        """The tallest the figure stands over the clip: largest per-sample vertical extent."""
        return float((self.highs[:, 1] - self.lows[:, 1]).max())

    def transformed(self, matrix: FloatArray) -> ClipMotion:
        """The same motion seen through the affine ``matrix`` (per-sample boxes as :meth:`Bounds.transformed`)."""
        boxes = [Bounds(low, high).transformed(matrix) for low, high in zip(self.lows, self.highs, strict=True)]
        return ClipMotion(
            self.times,
            np.array([b.low for b in boxes]),
            np.array([b.high for b in boxes]),
            transform_points(matrix, self.roots),
        )


def sample_times(clip: Clip | None) -> FloatArray:
    """Clip times to sample: every key, and no gap longer than 1/:data:`SAMPLE_RATE` s.

    Between keys further apart, evenly spaced times are added; at most :data:`MAX_SAMPLES` are
    kept (evenly thinned, ends kept). The keys are where a linearly interpolated joint turns
    round (a mocap foot dips between two 30 Hz samples); the filled gaps cover cubic curves and
    sparse keys. Keys closer than :data:`MERGE_SECONDS` count once. ``[0]`` for ``None`` or a
    clip of zero duration.
    """
    if clip is None or clip.duration <= 0.0:
        return np.zeros(1)
    keys = np.concatenate([[0.0, clip.duration], *(channel.times for channel in clip.channels)])
    keys = np.unique(keys[(keys >= 0.0) & (keys <= clip.duration)])
    keys = keys[np.concatenate(([True], np.diff(keys) > MERGE_SECONDS))]  # float32 copies of one key
    gaps = np.diff(keys)
    pieces = np.maximum(np.ceil(gaps * SAMPLE_RATE - 1e-9).astype(int), 1)
    within = np.arange(pieces.sum()) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    times = np.append(np.repeat(keys[:-1], pieces) + within * np.repeat(gaps / pieces, pieces), keys[-1])
    if times.size > MAX_SAMPLES:  # evenly thinned, ends kept
        times = times[np.round(np.linspace(0, times.size - 1, MAX_SAMPLES)).astype(int)]
    return times


def sample_poses(skeleton: Skeleton, clip: Clip | None, times: FloatArray, *, in_place: int | None = None) -> Pose:
    """Local poses ``(T, N)`` of ``clip`` at ``times`` (the rest pose ``T`` times for ``None``).

    With ``in_place`` (a node index) that node plays without its planar motion (heading and
    ground travel about the up axis of its parent space, :func:`engine.anim.rootmotion.parent_up`:
    +Z below CesiumMan's correction node), as a program that takes root motion out of the pose
    shows it (:func:`engine.anim.rootmotion.remove_planar`).
    """
    if clip is None:
        return skeleton.rest_pose.broadcast_to((len(times),))
    pose = sample(clip, skeleton.rest_pose, times)
    if in_place is not None:
        pose.translations[:, in_place], pose.rotations[:, in_place] = remove_planar(
            pose.translations[:, in_place], pose.rotations[:, in_place], parent_up(skeleton, in_place)
        )
    return pose


def scene_frames(
    scene: Scene, clip: Clip | None, times: FloatArray, space: FloatArray, *, in_place: int | None = None
) -> SceneFrame:
    """The whole scene at ``times`` ``(T,)`` of ``clip`` (``None``: the rest pose), seen through ``space``.

    ``clip`` animates :attr:`Scene.hierarchy <engine.anim.scene.Scene.hierarchy>`; the morph
    weights are those of the scene's clip of the same name (the defaults without one). Every node
    world matrix is ``space @ world``, so skinned and rigid vertices alike come out in ``space``
    (:func:`~engine.anim.scene.instance_vertices`). ``in_place`` as in :func:`sample_poses`.
    """
    pose = sample_poses(scene.hierarchy, clip, times, in_place=in_place)
    world = space @ model_from_pose(scene.hierarchy, pose)
    morphed = clip is not None and clip.name in scene.clips and any(i.num_targets for i in scene.instances)
    weights = scene.sample_morph_weights(clip.name, times) if morphed and clip is not None else None
    return scene.frame(world, weights)


def frame_rows(frame: SceneFrame, rows: slice) -> SceneFrame:
    """Characters ``rows`` of a frame of batch ``(T,)``."""
    return SceneFrame(
        frame.world[rows],
        tuple(p[rows] for p in frame.skin_palettes),
        tuple(w[rows] for w in frame.morph_weights),
    )


def without_normals(scene: Scene) -> Scene:
    """``scene`` with its primitives' normals (and morph normals) left out: positions alone cost half as much."""
    instances = tuple(
        replace(
            instance,
            primitives=tuple(replace(p, normals=None, morph_normals=None) for p in instance.primitives),
        )
        for instance in scene.instances
    )
    return replace(scene, instances=instances)


def frame_boxes(scene: Scene, frame: SceneFrame) -> tuple[FloatArray, FloatArray]:
    """Box corners ``(T, 3)`` and ``(T, 3)`` of the drawn scene in each of the ``T`` samples of ``frame``.

    The figure is every vertex of every mesh instance (:func:`engine.anim.scene.scene_vertices`:
    skinned meshes of every skin, rigid meshes under joints or any node, morphs), computed in
    batches of at most :data:`SKIN_BUDGET` vertices; a scene without vertices is its nodes' origins.
    """
    count = frame.world.shape[0]
    vertices = sum(p.num_vertices for instance in scene.instances for p in instance.primitives)
    if not vertices:
        nodes = frame.world[..., :3, 3]
        return nodes.min(axis=-2), nodes.max(axis=-2)
    shape = without_normals(scene)
    lows, highs = np.empty((count, 3)), np.empty((count, 3))
    step = max(1, SKIN_BUDGET // vertices)
    for start in range(0, count, step):  # one pass per batch of samples
        rows = slice(start, start + step)
        points = scene_vertices(shape, frame_rows(frame, rows))
        lows[rows], highs[rows] = points.min(axis=-2), points.max(axis=-2)
    return lows, highs


def clip_motion(
    scene: Scene,
    clip: Clip | None,
    space: FloatArray,
    *,
    root: int | None = None,
    in_place: bool = False,
) -> ClipMotion:
    """Per-sample boxes of the drawn scene over ``clip`` (``None``: the rest pose), in ``space``.

    Parameters
    ----------
    scene
        The scene: every mesh instance counts.
    clip
        The clip played (over the scene's hierarchy), or ``None`` for the rest pose.
    space
        ``(4, 4)`` scene world space → the space the boxes are measured in.
    root
        The node whose position :attr:`ClipMotion.roots` follows (a character's root joint);
        ``None``: the middle of each sample's box (an object).
    in_place
        Play ``root`` without its planar motion (see :func:`sample_poses`).
    """
    times = sample_times(clip)
    frame = scene_frames(scene, clip, times, space, in_place=root if in_place else None)
    lows, highs = frame_boxes(scene, frame)
    roots = frame.world[:, root, :3, 3] if root is not None else 0.5 * (lows + highs)
    return ClipMotion(times, lows, highs, roots)


def fit_distance(
    points: FloatArray,
    centre: FloatArray,
    orientation: FloatArray,
    fov_y: float,
    aspect: float,
    *,
    fill: float = 0.7,
    centre_x: float = 0.0,
) -> float:
    """How far behind ``centre`` a camera must stand for all ``points`` ``(N, 3)`` to be in frame.

    The camera looks along ``orientation``'s forward at ``centre``, which projects to horizontal
    NDC ``centre_x`` (the camera is shifted sideways for it, see :func:`framing_position`).
    Every point then lies within ``fill`` of the frame's half-height vertically, and within
    ``fill`` of the free half-width ``1 - |centre_x|`` around ``centre_x`` horizontally: a point
    at depth ``d + z`` (``z`` along forward from the centre) and ``y`` up projects to ``y / ((d +
    z) tan(fov_y / 2))``, so ``d ≥ |y| / (fill · tan) - z``; likewise across.
    """
    right, up, forward = camera_axes(orientation)
    offsets = np.asarray(points) - centre
    x, y, z = offsets @ right, offsets @ up, offsets @ forward
    tan_y = float(np.tan(0.5 * fov_y))
    tan_x = tan_y * aspect
    half_width = fill * (1.0 - abs(centre_x))
    vertical = np.abs(y) / (fill * tan_y) - z
    across = np.abs(x - centre_x * z * tan_x) / (half_width * tan_x) - z
    return float(max(vertical.max(), across.max(), 2.0 * z.max(), 1e-3))


def framing_position(
    centre: FloatArray, orientation: FloatArray, distance: float, fov_y: float, aspect: float, centre_x: float = 0.0
) -> FloatArray:
    """Camera position ``(3,)`` for :func:`fit_distance`: ``distance`` behind ``centre``, shifted sideways."""
    right, _, forward = camera_axes(orientation)
    shift = centre_x * distance * float(np.tan(0.5 * fov_y)) * aspect
    return np.asarray(centre) - distance * forward - shift * right
