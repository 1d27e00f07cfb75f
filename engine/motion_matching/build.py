"""Building a database: retarget, mirror, resample, find the roots, compute and normalise the features.

For each :class:`~engine.motion_matching.sources.ClipSource`, in order:

1. **Resample**: the clip is sampled every ``1 / fps`` seconds from its ``start`` to its ``end``.
2. **Retarget** onto the database's skeleton (the ``target`` given, else the first source's):
   a source over another skeleton goes through :func:`~engine.anim.retarget.plan_retarget` with
   the joint map :func:`~engine.anim.retarget.propose_joint_map` proposes (one plan per skeleton).
3. **Mirror** (``mirror=True``): the range is added a second time, reflected left for right
   (:mod:`engine.motion_matching.mirror`).
4. **Root**: each range's root track (:mod:`engine.motion_matching.root`), and its poses
   re-expressed in root space.
5. **Features** (:mod:`engine.motion_matching.features`): the pose part from each frame's
   root-space pose, the pose velocity arriving at it (:func:`~engine.anim.velocity.pose_velocity`
   of the previous frame and this one: the velocity the LINEAR range clip plays; the first frame
   of a range takes the velocity leaving it) and the root's velocity; the trajectory part from the
   roots ``horizons`` frames ahead, the track continued past the range's end by its last step
   (:func:`~engine.motion_matching.root.extend_track`).
6. **Normalise** over all frames (:func:`~engine.motion_matching.features.normalisation`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.anim.humanoid import Humanoid, find_humanoid
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.retarget import RetargetPlan, plan_retarget, propose_joint_map, retarget_pose
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import pose_velocity
from engine.errors import InvalidInputError, OssaWarning, SkeletonMismatchError
from engine.math import quat_conjugate, quat_rotate, trusted, unflip
from engine.math._checks import FloatArray
from engine.motion_matching.database import DEFAULT_END_MARGIN, Database, tag_bits
from engine.motion_matching.features import feature_vectors, normalisation, pose_features, trajectory_features
from engine.motion_matching.kinematics import model_rotations
from engine.motion_matching.layout import DEFAULT_FPS, DEFAULT_HORIZONS, GROUP_ROLES, FeatureLayout, make_layout
from engine.motion_matching.mirror import MirrorPlan, mirror_pose, plan_mirror
from engine.motion_matching.root import (
    DIRECTION_SIGMA,
    POSITION_SIGMA,
    RootTrack,
    extend_track,
    rest_forward,
    root_track,
    to_root_space,
    yaw_quaternions,
)
from engine.motion_matching.sources import ClipSource


@dataclass(frozen=True)
class BuildOptions:
    """How :func:`build_database` builds.

    Attributes
    ----------
    fps
        Frames per second of the database.
    horizons
        Trajectory horizons in frames at ``fps``.
    weights
        Group name → weight (others: :data:`~engine.motion_matching.layout.DEFAULT_WEIGHTS`).
    hands
        Add the hands' positions and velocities to the features.
    mirror
        Add every source a second time, mirrored.
    end_margin
        Frames at the end of each range never returned by a search.
    position_sigma, direction_sigma
        Gaussian widths (seconds) smoothing the root's position and facing.
    skip_unusable
        Leave out, with an :class:`~engine.errors.OssaWarning` naming it and why, a source whose
        skeleton cannot be retargeted onto the database's (instead of raising).
    """

    fps: float = DEFAULT_FPS
    horizons: tuple[int, ...] = DEFAULT_HORIZONS
    weights: Mapping[str, float] = field(default_factory=dict)
    hands: bool = False
    mirror: bool = True
    end_margin: int = DEFAULT_END_MARGIN
    position_sigma: float = POSITION_SIGMA
    direction_sigma: float = DIRECTION_SIGMA
    skip_unusable: bool = False


@dataclass
class _Range:
    """One range as built: its name, source, mirror flag, root-space poses, track and tags."""

    name: str
    source: str
    mirrored: bool
    pose: Pose
    track: RootTrack
    tags: list[tuple[str, ...]]


def _same_skeleton(a: Skeleton, b: Skeleton) -> bool:
    return a is b or (
        a.names == b.names
        and np.array_equal(a.parents, b.parents)
        and np.allclose(a.rest_translations, b.rest_translations, rtol=0.0, atol=1e-9)
        and np.allclose(a.rest_rotations, b.rest_rotations, rtol=0.0, atol=1e-9)
        and np.allclose(a.rest_scales, b.rest_scales, rtol=0.0, atol=1e-9)
    )


class _Builder:
    """The per-build state: target skeleton, its body parts, retarget plans, mirror plan."""

    def __init__(self, target: Skeleton, options: BuildOptions) -> None:
        try:
            self.body: Humanoid = find_humanoid(target)
        except SkeletonMismatchError as exc:
            raise SkeletonMismatchError(f"the database's skeleton: {exc}") from None
        self.target = target
        self.options = options
        self.forward = rest_forward(self.body)
        self.hips = self.body.roles["hips"]
        self.rest_hips = model_rotations(target, target.rest_rotations)[self.hips]
        self.plans: dict[int, RetargetPlan | None] = {}
        left = np.cross((0.0, 1.0, 0.0), self.forward)
        self.mirror: MirrorPlan | None = plan_mirror(target, left, self.body) if options.mirror else None

    def _plan(self, source: ClipSource) -> RetargetPlan | None:
        key = id(source.skeleton)
        if key not in self.plans:
            if _same_skeleton(source.skeleton, self.target):
                self.plans[key] = None
            else:
                try:
                    joint_map = propose_joint_map(source.skeleton, self.target)
                    self.plans[key] = plan_retarget(source.skeleton, self.target, joint_map)
                except SkeletonMismatchError as exc:
                    raise SkeletonMismatchError(f"clip {source.name!r} cannot be retargeted: {exc}") from None
        return self.plans[key]

    def usable_ranges(self, source: ClipSource) -> list[_Range]:
        """:meth:`ranges`, or none with a warning when ``skip_unusable`` and the source cannot be retargeted."""
        try:
            return self.ranges(source)
        except SkeletonMismatchError as exc:
            if not self.options.skip_unusable:
                raise
            warnings.warn(f"{exc}; left out", OssaWarning, stacklevel=4)
            return []

    def ranges(self, source: ClipSource) -> list[_Range]:
        """The range of ``source`` (and its mirror image): resampled, retargeted, in root space."""
        fps = self.options.fps
        span = (source.clip.duration if source.end is None else source.end) - source.start
        count = int(np.floor(span * fps + 1e-9)) + 1
        if count < 2:
            raise InvalidInputError(
                f"clip {source.name!r} spans {span:.4g} s: less than the two frames of a range at {fps:g} fps"
            )
        times = source.start + np.arange(count) / fps
        pose = sample(source.clip, source.skeleton.rest_pose, times)
        plan = self._plan(source)
        if plan is not None:
            pose = retarget_pose(plan, pose)
        tags = source.frame_tags(times)
        variants = [(source.name, False, pose)]
        if self.mirror is not None:
            variants.append((f"{source.name} (mirrored)", True, mirror_pose(self.mirror, pose)))
        out = []
        for name, mirrored, variant in variants:
            track = root_track(
                model_from_pose(self.target, variant)[:, self.hips, :3, 3],
                model_rotations(self.target, variant.rotations)[:, self.hips],
                self.rest_hips,
                self.forward,
                fps,
                position_sigma=self.options.position_sigma,
                direction_sigma=self.options.direction_sigma,
            )
            local = to_root_space(self.target, variant, self.hips, track)
            local.rotations[:] = unflip(local.rotations, axis=0)
            out.append(_Range(name, source.name, mirrored, local, track, tags))
        return out


def _root_rates(track: RootTrack, fps: float) -> tuple[FloatArray, FloatArray]:
    """The root's velocity arriving at each frame, in root axes ``(F, 3)``, and its yaw rate ``(F,)``."""
    steps = np.diff(track.positions, axis=0) * fps
    arriving = np.concatenate((steps[:1], steps))
    turns = np.diff(track.yaws) * fps
    with trusted():
        local = quat_rotate(quat_conjugate(yaw_quaternions(track.yaws)), arriving)
    return local, np.concatenate((turns[:1], turns))


def _range_features(database_layout: FeatureLayout, skeleton: Skeleton, built: _Range, fps: float) -> FloatArray:
    """Raw feature vectors ``(F, D)`` of one built range (module docstring, step 5)."""
    pose = built.pose
    frames = pose.shape[0]
    before = np.concatenate(([0], np.arange(frames - 1)))
    after = np.concatenate(([1], np.arange(1, frames)))
    velocity = pose_velocity(pose[before], pose[after], 1.0 / fps)
    root_velocity, yaw_rate = _root_rates(built.track, fps)
    pose_part = pose_features(database_layout, skeleton, pose, velocity, root_velocity, yaw_rate)
    horizons = np.asarray(database_layout.horizons)
    extended = extend_track(built.track, int(horizons[-1]))
    ahead = np.arange(frames)[:, None] + horizons[None, :]
    trajectory_part = trajectory_features(
        database_layout, built.track.positions, built.track.yaws, extended.positions[ahead], extended.yaws[ahead]
    )
    return feature_vectors(pose_part, trajectory_part)


def build_database(
    sources: Sequence[ClipSource], target: Skeleton | None = None, options: BuildOptions | None = None
) -> Database:
    """A :class:`~engine.motion_matching.database.Database` of ``sources`` (module docstring).

    Parameters
    ----------
    sources
        The clips, at least one.
    target
        The skeleton of the database (a character's); default the first source's.
    options
        :class:`BuildOptions`.

    Raises
    ------
    SkeletonMismatchError
        The target is not a humanoid, or a source's skeleton cannot be retargeted onto it, or
        it cannot be mirrored.
    InvalidInputError
        No sources, a source shorter than two frames, bad options.

    Warns
    -----
    OssaWarning
        A feature group constant over every frame (it cannot rank frames).
    """
    options = options or BuildOptions()
    if not sources:
        raise InvalidInputError("a database needs at least one clip source")
    if not (np.isfinite(options.fps) and options.fps > 0):
        raise InvalidInputError(f"fps must be a positive number, got {options.fps}")
    if (
        isinstance(options.end_margin, bool)
        or not isinstance(options.end_margin, (int, np.integer))
        or options.end_margin < 0
    ):
        raise InvalidInputError(f"end_margin must be a whole number of frames >= 0, got {options.end_margin!r}")
    target = sources[0].skeleton if target is None else target
    builder = _Builder(target, options)
    groups = ["foot_positions", "foot_velocities", "hip_velocity"]
    if options.hands:
        groups += ["hand_positions", "hand_velocities"]
    joints = {g: tuple(builder.body.roles[r] for r in GROUP_ROLES[g]) for g in groups}
    layout = make_layout(joints, options.horizons, options.weights)
    built = [r for source in sources for r in builder.usable_ranges(source)]
    if not built:
        raise InvalidInputError("no clip source could be used")
    features = np.concatenate([_range_features(layout, target, r, options.fps) for r in built])
    offset, scale, constant = normalisation(features, layout)
    if constant:
        warnings.warn(
            f"feature groups {list(constant)} are constant over every frame: they cannot rank frames",
            OssaWarning,
            stacklevel=2,
        )
    lengths = np.array([r.pose.shape[0] for r in built])
    stops = np.cumsum(lengths)
    tag_names, frame_tags = tag_bits([t for r in built for t in r.tags])

    def stack(get: Any) -> FloatArray:
        return np.concatenate([get(r) for r in built])

    velocities = [_root_rates(r.track, options.fps) for r in built]
    return Database(
        skeleton=target,
        fps=float(options.fps),
        layout=layout,
        translations=stack(lambda r: r.pose.translations),
        rotations=stack(lambda r: r.pose.rotations),
        scales=stack(lambda r: r.pose.scales),
        root_positions=stack(lambda r: r.track.positions),
        root_yaws=stack(lambda r: r.track.yaws),
        root_velocities=np.concatenate([v for v, _ in velocities]),
        root_yaw_rates=np.concatenate([w for _, w in velocities]),
        range_starts=stops - lengths,
        range_stops=stops,
        range_names=tuple(r.name for r in built),
        range_sources=tuple(r.source for r in built),
        range_mirrored=np.array([r.mirrored for r in built], dtype=bool),
        tag_names=tag_names,
        frame_tags=frame_tags,
        end_margin=options.end_margin,
        features=features,
        offset=offset,
        scale=scale,
    )
