"""Where a character's body is while a clip plays: bounds sampled over the motion, never the rest pose.

A figure's rest pose says little about where its feet are while it moves: a BVH take's rest pose
has the hips at the origin and the feet a metre below it, a crouching idle stands lower than its
bind pose, a run lifts the body. The programs therefore ground and frame a character from its
**animated** bounds: each clip is sampled at every key and every ``1 / SAMPLE_RATE`` seconds (at
most :data:`MAX_SAMPLES` poses, ends included), the figure's points are computed for every sample —
CPU-skinned mesh vertices (:func:`engine.anim.skinning.skin_vertices`), or the joint positions of
a character without meshes — and each sample's axis-aligned box is kept.

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
from dataclasses import dataclass

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.mesh import MeshData
from engine.anim.pose import Pose
from engine.anim.rootmotion import remove_planar
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skinning_palette
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
        ``(T, 3)`` position of joint 0 at each sample.
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


def sample_poses(skeleton: Skeleton, clip: Clip | None, times: FloatArray, *, in_place: bool = False) -> Pose:
    """Local poses ``(T, J)`` of ``clip`` at ``times`` (the rest pose ``T`` times for ``None``).

    With ``in_place`` joint 0 plays without its planar motion (heading and ground travel), as a
    program that takes root motion out of the pose shows it
    (:func:`engine.anim.rootmotion.remove_planar`).
    """
    if clip is None:
        rest = skeleton.rest_pose
        count = len(times)
        return Pose(
            np.repeat(rest.translations[None], count, axis=0),
            np.repeat(rest.rotations[None], count, axis=0),
            np.repeat(rest.scales[None], count, axis=0),
        )
    pose = sample(clip, skeleton.rest_pose, times)
    if in_place:
        pose.translations[:, 0], pose.rotations[:, 0] = remove_planar(pose.translations[:, 0], pose.rotations[:, 0])
    return pose


def sample_boxes(skeleton: Skeleton, meshes: Sequence[MeshData], model: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Box corners ``(T, 3)`` and ``(T, 3)`` of the figure for model-space joint matrices ``(T, J, 4, 4)``.

    The figure is the skinned vertices of every skinned mesh (skinned in batches of at most
    :data:`SKIN_BUDGET` vertices), or the joint positions when no mesh is skinned.
    """
    skinned = [mesh for mesh in meshes if mesh.joints is not None]
    if not skinned:
        joints = model[..., :3, 3]
        return joints.min(axis=-2), joints.max(axis=-2)
    count = model.shape[0]
    palette = skinning_palette(skeleton, model)
    lows, highs = np.full((count, 3), np.inf), np.full((count, 3), -np.inf)
    for mesh in skinned:  # one pass per mesh and batch of samples
        step = max(1, SKIN_BUDGET // max(mesh.num_vertices, 1))
        for start in range(0, count, step):
            rows = slice(start, start + step)
            points = skinned_positions(palette[rows], mesh)
            if points.shape[-2]:
                lows[rows] = np.minimum(lows[rows], points.min(axis=-2))
                highs[rows] = np.maximum(highs[rows], points.max(axis=-2))
    if not np.isfinite(lows).all():  # every vertex unweighted: fall back on the joints
        return sample_boxes(skeleton, (), model)
    return lows, highs


def skinned_positions(palette: FloatArray, mesh: MeshData) -> FloatArray:
    """Linear-blend-skinned positions ``(T, V', 3)`` of ``mesh``'s weighted vertices for palettes ``(T, J, 4, 4)``.

    The positions :func:`engine.anim.skinning.skin_vertices` gives (``Σ_k w_k · palette[joint_k] ·
    p``), without the normals; vertices with no weight are left out.
    """
    assert mesh.joints is not None
    assert mesh.weights is not None
    weights = mesh.weights / np.maximum(mesh.weights.sum(axis=1, keepdims=True), 1e-300)
    weighted = weights.sum(axis=1) > 0.0
    points = np.concatenate((mesh.positions, np.ones((mesh.num_vertices, 1))), axis=1)[weighted]
    out = np.zeros((palette.shape[0], points.shape[0], 3))
    for k in range(mesh.joints.shape[1]):  # one pass per influence slot, all vertices at once
        used = weights[weighted, k] > 0.0
        if used.any():
            moved = np.einsum("tvij,vj->tvi", palette[:, mesh.joints[weighted, k][used], :3, :], points[used])
            out[:, used] += weights[weighted, k][used, None] * moved
    return out


def clip_motion(
    skeleton: Skeleton,
    meshes: Sequence[MeshData],
    clip: Clip | None,
    space: FloatArray,
    *,
    in_place: bool = False,
) -> ClipMotion:
    """Per-sample boxes of the figure over ``clip`` (``None``: the rest pose), in ``space``.

    Parameters
    ----------
    skeleton, meshes
        The character.
    clip
        The clip played, or ``None`` for the rest pose.
    space
        ``(4, 4)`` skeleton model space → the space the boxes are measured in.
    in_place
        Play joint 0 without its planar motion (see :func:`sample_poses`).
    """
    times = sample_times(clip)
    model = space @ model_from_pose(skeleton, sample_poses(skeleton, clip, times, in_place=in_place))
    lows, highs = sample_boxes(skeleton, meshes, model)
    return ClipMotion(times, lows, highs, model[:, 0, :3, 3])


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
