"""A clip's velocity at given times: from two samples inside one key segment, or a per-segment table.

- :func:`sample_velocity`: a clip's velocity at given times, the difference of two samples
  ``step`` apart taken **inside one key segment** of the clip (the segment arriving at ``t``,
  or the one leaving it). Within a segment LINEAR translations and scales move at a constant
  rate and slerped rotations at a constant angular velocity, so for those the difference is
  exact, whatever ``step``; cubic segments are first-order accurate in ``step``.
- :func:`sample_with_velocity`: the pose and its velocity from one sampling pass.
- :class:`VelocityTable` (:func:`velocity_table`): the exact velocity of a STEP/LINEAR clip per
  key segment, looked up without sampling.

Velocities are :class:`~engine.anim.velocity.PoseVelocity` per second of clip time.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.clip import Clip, SampledClip
from engine.anim.compiled_clip import CompiledClip
from engine.anim.pose import Pose
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array, trusted

#: Default window of :func:`sample_velocity`, seconds (clamped to the key segment holding ``t``).
DEFAULT_STEP = 1e-3


_TIMELINES: weakref.WeakKeyDictionary[Clip, FloatArray] = weakref.WeakKeyDictionary()


def key_times(clip: Clip | CompiledClip | SampledClip) -> FloatArray:
    """Every distinct key time of ``clip`` over all its channels, ascending ``(M,)`` (cached per clip).

    A compressed clip (:class:`~engine.anim.clip.SampledClip`): its sample times.
    """
    source = clip.clip if isinstance(clip, CompiledClip) else clip
    if not isinstance(source, Clip) and isinstance(source, SampledClip):
        return source.key_times
    if not isinstance(source, Clip):
        raise InvalidInputError(f"clip must be a Clip or CompiledClip, got {type(clip).__name__}")
    found = _TIMELINES.get(source)
    if found is None:
        channels = source.channels
        found = np.unique(np.concatenate([c.times for c in channels])) if channels else np.zeros(1)
        found.flags.writeable = False
        _TIMELINES[source] = found
    return found


def _window(
    clip: Clip | CompiledClip | SampledClip, times: Any, step: float, loop: bool, side: str
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Times ``t``, the two sample times of :func:`sample_velocity`'s window, and ``1 / window`` (0 when constant)."""
    if not (np.isfinite(step) and step > 0.0):
        raise InvalidInputError(f"step must be a positive number of seconds, got {step}")
    if side not in {"left", "right"}:
        raise InvalidInputError(f"side must be 'left' or 'right', got {side!r}")
    timeline = key_times(clip)
    given = as_array(times, "times")
    t = given
    last = timeline.size - 1
    if side == "left":
        if loop:
            t = np.where(t <= timeline[0], timeline[-1], t)
        segment = np.searchsorted(timeline, t, side="left") - 1  # timeline[segment] < t <= timeline[segment + 1]
    else:
        if loop:
            t = np.where(t >= timeline[-1], timeline[0], t)
        segment = np.searchsorted(timeline, t, side="right") - 1  # timeline[segment] <= t < timeline[segment + 1]
    moving = (segment >= 0) & (segment < last)
    low = timeline[np.clip(segment, 0, last)]
    high = timeline[np.clip(segment + 1, 0, last)]
    window = np.where(moving, np.minimum(step, high - low), 1.0)
    wanted = t - step if side == "left" else t
    start = np.where(moving, np.clip(wanted, low, high - window), t)
    stop = np.where(moving, start + window, t)
    return given, start, stop, np.where(moving, 1.0 / window, 0.0)


def _difference(before: Pose, after: Pose, rate: FloatArray) -> PoseVelocity:
    """``(after - before) · rate``, rotations as ``rotvec(after · before⁻¹) · rate``, component by component.

    Sampled poses are stored batch-innermost; whole component planes keep the arithmetic on long
    contiguous runs (the same formulas as :func:`~engine.math.quat.rotvec_from_quat`).
    """
    per_joint = rate[..., None, None]
    ax, ay, az, aw = np.moveaxis(before.rotations, -1, 0)
    bx, by, bz, bw = np.moveaxis(after.rotations, -1, 0)
    x = bx * aw - bw * ax - by * az + bz * ay
    y = by * aw - bw * ay - bz * ax + bx * az
    z = bz * aw - bw * az - bx * ay + by * ax
    w = bw * aw + bx * ax + by * ay + bz * az
    sine = np.sqrt(x * x + y * y + z * z)
    angle = 2.0 * np.arctan2(sine, np.abs(w))  # the shortest arc: w taken >= 0
    small = angle < 1e-4
    scale = np.where(small, 2.0 + angle * angle / 12.0, angle / np.where(small, 1.0, sine))
    scale *= np.copysign(1.0, w) * rate[..., None]
    angular = np.empty_like(before.translations)
    angular[..., 0] = x * scale
    angular[..., 1] = y * scale
    angular[..., 2] = z * scale
    with trusted():
        return PoseVelocity(
            (after.translations - before.translations) * per_joint,
            angular,
            (after.scales - before.scales) * per_joint,
        )


def sample_velocity(
    clip: Clip | CompiledClip | SampledClip,
    skeleton: Skeleton,
    times: Any,
    *,
    step: float = DEFAULT_STEP,
    loop: bool = False,
    side: str = "left",
) -> PoseVelocity:
    """Velocity of ``clip`` played at ``times``, from two samples inside one key segment.

    ``side="left"`` gives the derivative of the motion arriving at ``t`` (the key segment
    ``(k_i, k_{i+1}]`` holding ``t``), ``"right"`` the motion leaving it (``[k_i, k_{i+1})``): they
    differ at a key where the velocity has a kink. The two samples are ``step`` apart (or the
    whole segment when it is shorter) and lie in that segment, ending (``"left"``) or starting
    (``"right"``) at ``t`` when the segment allows. LINEAR and STEP channels therefore come out
    exact (see the module docstring). Before the first key and after the last one the clip is
    constant and its velocity zero.

    Parameters
    ----------
    clip
        The clip (or its compiled form).
    skeleton
        Its skeleton (supplies the rest values of joints that no channel animates).
    times
        Clip times in seconds, any shape ``B``.
    step
        Positive window in seconds (default :data:`DEFAULT_STEP`).
    loop
        The clip loops over ``[first key, last key]``: the motion arriving at the first key
        comes from the end of the previous loop, and the motion leaving the last key is the
        start of the next one.
    side
        ``"left"`` (default) or ``"right"``.

    Returns
    -------
    PoseVelocity
        ``(*B, J)``: the rate of change with respect to clip time; multiply by a playback
        speed for the rate in real time.
    """
    _, start, stop, rate = _window(clip, times, step, loop, side)
    poses = sample(clip, skeleton.rest_pose, np.stack((start, stop)))
    return _difference(poses[0], poses[1], rate)


def sample_with_velocity(
    clip: Clip | CompiledClip | SampledClip,
    skeleton: Skeleton,
    times: Any,
    *,
    step: float = DEFAULT_STEP,
    loop: bool = False,
    side: str = "left",
) -> tuple[Pose, PoseVelocity]:
    """The pose :func:`~engine.anim.sampling.sample` gives and :func:`sample_velocity`, in one sampling pass."""
    t, start, stop, rate = _window(clip, times, step, loop, side)
    poses = sample(clip, skeleton.rest_pose, np.stack((t, start, stop)))
    return poses[0], _difference(poses[1], poses[2], rate)


@dataclass(frozen=True, eq=False)
class VelocityTable:
    """A clip's velocity in every key segment, for clips whose channels are all STEP or LINEAR.

    Within a key segment of such a clip translations and scales move at a constant rate and
    slerped rotations at a constant angular velocity, so one velocity per segment is exact (STEP
    channels hold still: zero). :meth:`at` then costs a search and a gather, no sampling. Make it
    with :func:`velocity_table`.

    Attributes
    ----------
    times
        The clip's merged key times ``(M,)`` (:func:`key_times`).
    velocities
        ``(M - 1, J, 3, 3)``: per segment and joint, the linear, angular and scaling velocity.
    """

    times: FloatArray
    velocities: FloatArray

    def at(self, times: Any, *, loop: bool = False, side: str = "left") -> PoseVelocity:
        """The velocity at clip ``times`` ``(*B,)``: ``(*B, J)``, as :func:`sample_velocity` gives it."""
        if side not in {"left", "right"}:
            raise InvalidInputError(f"side must be 'left' or 'right', got {side!r}")
        t = as_array(times, "times")
        timeline = self.times
        if side == "left":
            if loop:
                t = np.where(t <= timeline[0], timeline[-1], t)
            segment = np.searchsorted(timeline, t, side="left") - 1
        else:
            if loop:
                t = np.where(t >= timeline[-1], timeline[0], t)
            segment = np.searchsorted(timeline, t, side="right") - 1
        count, joints = self.velocities.shape[:2]
        moving = (segment >= 0) & (segment < count)
        rows = self.velocities[np.clip(segment, 0, max(count - 1, 0))] if count else np.zeros((*t.shape, joints, 3, 3))
        rows = rows * moving[..., None, None, None]
        with trusted():
            return PoseVelocity(rows[..., 0, :], rows[..., 1, :], rows[..., 2, :])


def velocity_table(clip: Clip | CompiledClip | SampledClip, skeleton: Skeleton) -> VelocityTable | None:
    """The :class:`VelocityTable` of ``clip``, or ``None`` when a channel is CUBICSPLINE (not constant per segment).

    ``None`` for a compressed clip too: its rotations are normalised lerps, not constant per segment.
    """
    source = clip.clip if isinstance(clip, CompiledClip) else clip
    if not isinstance(source, Clip) or any(channel.interpolation == "CUBICSPLINE" for channel in source.channels):
        return None
    timeline = key_times(clip)
    if timeline.size < 2:  # one key (or none): the clip holds still
        return VelocityTable(timeline, np.zeros((0, skeleton.num_joints, 3, 3)))
    span = np.diff(timeline)
    # two samples inside each segment: exact for LINEAR (constant rate), zero for STEP (held)
    poses = sample(clip, skeleton.rest_pose, np.stack((timeline[:-1] + 0.25 * span, timeline[:-1] + 0.75 * span)))
    rate = 2.0 / np.where(span > 0.0, span, 1.0)
    velocity = _difference(poses[0], poses[1], rate)
    table = np.stack((velocity.linear, velocity.angular, velocity.scaling), axis=-2)
    table.flags.writeable = False
    return VelocityTable(timeline, table)
