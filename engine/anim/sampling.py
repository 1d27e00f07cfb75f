"""Sample clips at given times with the glTF 2.0 interpolation rules.

Every channel is evaluated exactly as the glTF specification says:

- ``STEP``: the value of the last key at or before ``t``;
- ``LINEAR``: linear interpolation for translation and scale, spherical linear interpolation
  along the shortest arc for rotations;
- ``CUBICSPLINE``: the cubic Hermite spline of the specification, tangents scaled by the key
  interval ``t[k+1] - t[k]``; rotation outputs are normalised;
- before the first key and after the last key the value clamps to that key's value; a channel
  with a single key is constant.

Times are used as given: looping and playback speed belong to the caller (the animator).

Speed comes from :func:`compile_clip`, done once per clip. It merges the key times of all
channels into one timeline and re-expresses every channel on it. Re-keying is exact: a step
holds, a lerp is linear on any sub-interval, a slerp arc restricted to a sub-interval is a
slerp arc, and a cubic restricted to a sub-interval is a cubic. Sampling is then one
``searchsorted`` for all joints and characters, one gather per group of channels (same path and
interpolation) and a few multiply-adds.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, trusted

#: Order of the three pose paths.
PATHS = ("translation", "rotation", "scale")


@dataclass(frozen=True, eq=False)
class _Group:
    """Channels sharing one path and one evaluation kind, re-keyed on the clip's timeline.

    ``kind`` is ``"poly"`` (a polynomial in the segment parameter ``u`` of degree
    ``coefficients.shape[1] - 1``: 0 for STEP, 1 for LINEAR, 3 for CUBICSPLINE) or ``"slerp"``
    (``cos(u·angle)·start + sin(u·angle)·direction``). Arrays are indexed by segment first:
    ``coefficients`` ``(M, degree+1, N, w)``; for slerp ``(M, 2, N, 4)`` holding ``start``
    and ``direction`` (unit, orthogonal to ``start``) and ``angles`` ``(M, N, 1)``.
    """

    path: str
    kind: str
    targets: IntArray
    coefficients: FloatArray
    angles: FloatArray | None
    normalize: bool


@dataclass(frozen=True, eq=False)
class CompiledClip:
    """A clip re-keyed on one merged timeline, ready for fast sampling.

    Build it with :func:`compile_clip` (:func:`sample` does so once per clip and remembers it).

    Attributes
    ----------
    clip
        The source clip.
    timeline
        ``(M,)`` strictly increasing merged key times. Segment ``m < M-1`` spans
        ``[timeline[m], timeline[m+1])``; segment ``M-1`` holds the values from the last key on
        (times before the first key use segment 0 at ``u = 0``).
    inverse_intervals
        ``(M,)`` ``1 / (timeline[m+1] - timeline[m])``, and 0 for the last, constant segment.
    groups
        Channels grouped by path and evaluation kind.
    static
        For each path, the target indices no channel animates (they take the rest values).
    """

    clip: Clip
    timeline: FloatArray
    inverse_intervals: FloatArray
    groups: tuple[_Group, ...]
    static: dict[str, IntArray]

    @property
    def num_targets(self) -> int:
        """Size of the target index space (joints, or nodes)."""
        return self.clip.num_targets


def _slerp_frame(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Angle ``(..., 1)`` and unit direction ``(..., 4)`` of the shortest arc from ``a`` to ``b``.

    The arc is ``cos(u·angle)·a + sin(u·angle)·direction``; ``angle = 2·atan2(|b-a|, |b+a|)`` is
    accurate for tiny and large angles alike, and a zero angle gets a zero direction.
    """
    b = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0, -b, b)
    angle = 2.0 * np.arctan2(np.linalg.norm(b - a, axis=-1), np.linalg.norm(b + a, axis=-1))[..., None]
    sine = np.sin(angle)
    safe = np.where(sine > 0, sine, 1.0)
    direction = np.where(sine > 0, (b - np.cos(angle) * a) / safe, 0.0)
    return angle, direction


def _rekey(channel: Channel, timeline: FloatArray) -> tuple[str, FloatArray, FloatArray | None]:
    """Re-express one channel on ``timeline``: (kind, coefficients ``(M, n, w)``, angles ``(M, 1)``)."""
    times = channel.times
    values = channel.values
    rotation = channel.path == "rotation"
    count = times.size
    start, end = timeline, np.append(timeline[1:], timeline[-1])
    # Key interval holding each merged segment: times[k] <= start < end <= times[k+1].
    k = np.searchsorted(times, start, side="right") - 1
    before = k < 0
    after = k >= count - 1
    inside = ~(before | after)
    k_lo = np.clip(k, 0, count - 1)
    k_hi = np.clip(k + 1, 0, count - 1)
    span = np.where(inside, times[k_hi] - times[k_lo], 1.0)
    u0 = np.where(inside, (start - times[k_lo]) / span, 0.0)[:, None]
    u1 = np.where(inside, (end - times[k_lo]) / span, 0.0)[:, None]
    frozen = np.where(before, 0, np.where(after, count - 1, k_lo))  # key whose value holds

    if channel.interpolation == "CUBICSPLINE":
        v = values[:, 1]
        hold = v[frozen]
        p0 = v[k_lo]
        m0 = span[:, None] * values[k_lo, 2]
        p1 = v[k_hi]
        m1 = span[:, None] * values[k_hi, 0]
        c0, c1 = p0, m0
        c2 = -3.0 * p0 - 2.0 * m0 + 3.0 * p1 - m1
        c3 = 2.0 * p0 + m0 - 2.0 * p1 + m1
        h = u1 - u0
        # Taylor expansion of c0 + c1 s + c2 s² + c3 s³ at s = u0, in the sub-parameter u = (s - u0) / h.
        d0 = c0 + u0 * (c1 + u0 * (c2 + u0 * c3))
        d1 = h * (c1 + u0 * (2.0 * c2 + 3.0 * u0 * c3))
        d2 = h * h * (c2 + 3.0 * u0 * c3)
        d3 = h * h * h * c3
        where = inside[:, None]
        coeffs = np.stack(
            (np.where(where, d0, hold), np.where(where, d1, 0.0), np.where(where, d2, 0.0), np.where(where, d3, 0.0)),
            axis=1,
        )
        return "poly", coeffs, None

    if rotation:
        values = values / np.linalg.norm(values, axis=-1, keepdims=True)
    if channel.interpolation == "STEP" or count == 1:
        return "poly", values[frozen][:, None], None
    a, b = values[k_lo], values[k_hi]
    if not rotation:
        va = a + u0 * (b - a)
        vb = a + u1 * (b - a)
        coeffs = np.stack((np.where(inside[:, None], va, values[frozen]), np.where(inside[:, None], vb - va, 0.0)), 1)
        return "poly", coeffs, None
    angle, direction = _slerp_frame(a, b)
    # Sub-arc of the key arc from u0 to u1: rotate the (a, direction) frame by u0·angle.
    cos0, sin0 = np.cos(u0 * angle), np.sin(u0 * angle)
    sub_start = cos0 * a + sin0 * direction
    sub_direction = cos0 * direction - sin0 * a
    sub_angle = (u1 - u0) * angle
    held = values[frozen]
    coeffs = np.stack(
        (np.where(inside[:, None], sub_start, held), np.where(inside[:, None], sub_direction, 0.0)), axis=1
    )
    return "slerp", coeffs, np.where(inside[:, None], sub_angle, 0.0)


def compile_clip(clip: Clip) -> CompiledClip:
    """Re-key every channel of ``clip`` on one merged timeline (see the module docstring).

    Costs ``O(M · channels)`` memory where ``M`` is the number of distinct key times in the clip.
    Rotation keys are normalised first (glTF requires unit quaternions; this removes rounding).
    """
    timeline = np.unique(np.concatenate([c.times for c in clip.channels])) if clip.channels else np.zeros(1)
    groups: list[_Group] = []
    buckets: dict[tuple[str, str, int], list[tuple[int, FloatArray, FloatArray | None]]] = {}
    for channel in clip.channels:
        kind, coeffs, angles = _rekey(channel, timeline)
        key = (channel.path, kind, coeffs.shape[1])
        buckets.setdefault(key, []).append((channel.target, coeffs, angles))
    for (path, kind, _), members in sorted(buckets.items()):
        order = sorted(members, key=lambda m: m[0])
        targets = np.array([m[0] for m in order], dtype=np.intp)
        coefficients = np.stack([m[1] for m in order], axis=2)
        angles = np.stack([m[2] for m in order], axis=1) if kind == "slerp" else None  # type: ignore[misc]
        normalize = path == "rotation" and kind == "poly" and coefficients.shape[1] > 1
        for array in (targets, coefficients, angles):
            if array is not None:
                array.flags.writeable = False
        groups.append(_Group(path, kind, targets, coefficients, angles, normalize))
    animated = {path: set() for path in PATHS}  # type: dict[str, set[int]]
    for channel in clip.channels:
        animated[channel.path].add(channel.target)
    static = {
        path: np.array([j for j in range(clip.num_targets) if j not in animated[path]], dtype=np.intp) for path in PATHS
    }
    timeline.flags.writeable = False
    inverse = np.append(1.0 / np.diff(timeline), 0.0)
    inverse.flags.writeable = False
    return CompiledClip(clip, timeline, inverse, tuple(groups), static)


_COMPILED: weakref.WeakKeyDictionary[Clip, CompiledClip] = weakref.WeakKeyDictionary()


def compiled(clip: Clip | CompiledClip) -> CompiledClip:
    """The compiled form of ``clip``, built on first use and kept as long as the clip lives."""
    if isinstance(clip, CompiledClip):
        return clip
    if not isinstance(clip, Clip):
        raise InvalidInputError(f"clip must be a Clip or CompiledClip, got {type(clip).__name__}")
    found = _COMPILED.get(clip)
    if found is None:
        found = _COMPILED[clip] = compile_clip(clip)
    return found


def _check_times(times: Any) -> FloatArray:
    times = as_array(times, "times")
    if not np.isfinite(times).all():
        bad = np.argwhere(~np.isfinite(times.reshape(-1)))[0, 0]
        raise InvalidInputError(f"times must be finite seconds, got {times.reshape(-1)[bad]} at flat index {bad}")
    return times


def _segments(compiled_clip: CompiledClip, times: FloatArray) -> tuple[IntArray, FloatArray]:
    """Segment index ``(*B,)`` and segment parameter ``u`` clamped to ``[0, 1]`` ``(*B,)``."""
    timeline = compiled_clip.timeline
    index = np.searchsorted(timeline, times, side="right") - 1
    index = np.maximum(index, 0)
    u = (times - timeline[index]) * compiled_clip.inverse_intervals[index]
    return index, np.clip(u, 0.0, 1.0)


def sample(clip: Clip | CompiledClip, skeleton: Skeleton, times: Any, *, out: Pose | None = None) -> Pose:
    """Local pose of ``skeleton`` played by ``clip`` at ``times`` (seconds, used as given).

    Parameters
    ----------
    clip
        A :class:`~engine.anim.clip.Clip` whose ``num_targets`` equals ``skeleton.num_joints``
        (joints of a skin, or all nodes of a scene hierarchy), or its :class:`CompiledClip`.
    skeleton
        Supplies the rest values of the joints that no channel animates.
    times
        A scalar, or an array of any shape ``B`` (usually ``(C,)``, one time per character).
    out
        Optional pose shaped ``(*B, J, ...)`` to write into (and return); avoids allocating.

    Returns
    -------
    Pose
        Translations ``(*B, J, 3)``, unit rotations ``(*B, J, 4)``, scales ``(*B, J, 3)``.

    Raises
    ------
    SkeletonMismatchError
        If the clip targets a different number of joints than the skeleton has.
    InvalidInputError
        If ``times`` holds NaN or infinity, or ``out`` has the wrong shape.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Channel, Clip, Skeleton
    >>> skeleton = Skeleton(["root"], [-1])
    >>> slide = Channel(0, "translation", "LINEAR", [0.0, 2.0], [[0, 0, 0], [2.0, 0, 0]])
    >>> clip = Clip("slide", [slide], num_targets=1)
    >>> sample(clip, skeleton, [-1.0, 0.5, 3.0]).translations[:, 0, 0]
    array([0. , 0.5, 2. ])
    """
    compiled_clip = compiled(clip)
    joints = skeleton.num_joints
    if compiled_clip.num_targets != joints:
        raise SkeletonMismatchError(
            f"clip {compiled_clip.clip.name!r} animates {compiled_clip.num_targets} targets but the skeleton "
            f"has {joints} joints"
        )
    times = _check_times(times)
    batch = times.shape
    if out is None:
        arrays = (np.empty((*batch, joints, 3)), np.empty((*batch, joints, 4)), np.empty((*batch, joints, 3)))
    elif isinstance(out, Pose) and out.shape == (*batch, joints):
        arrays = (out.translations, out.rotations, out.scales)
    else:
        got = out.shape if isinstance(out, Pose) else type(out).__name__
        raise InvalidInputError(
            f"out must be a Pose shaped {(*batch, joints)} (times {batch}, {joints} joints), got {got}"
        )
    outputs = dict(zip(PATHS, arrays, strict=True))
    rest = (skeleton.rest_translations, skeleton.rest_rotations, skeleton.rest_scales)
    for path, rest_values in zip(PATHS, rest, strict=True):
        static = compiled_clip.static[path]
        if static.size:
            outputs[path][..., static, :] = rest_values[static]
    index, u = _segments(compiled_clip, times)
    for group in compiled_clip.groups:
        outputs[group.path][..., group.targets, :] = _evaluate(group, index, u)
    if out is not None:
        return out
    with trusted():  # finite by construction: skip the pose's NaN scans
        return Pose(*arrays)


def _evaluate(group: _Group, index: IntArray, u: FloatArray) -> FloatArray:
    """Values ``(*B, N, w)`` of a group's channels at segments ``index`` ``(*B,)``, parameters ``u``."""
    coeffs = group.coefficients[index]
    u = u[..., None, None]
    if group.kind == "slerp":
        assert group.angles is not None
        arc = group.angles[index] * u
        return np.cos(arc) * coeffs[..., 0, :, :] + np.sin(arc) * coeffs[..., 1, :, :]
    value = coeffs[..., -1, :, :].copy()
    for d in range(coeffs.shape[-3] - 2, -1, -1):
        value *= u
        value += coeffs[..., d, :, :]
    if group.normalize:
        value /= np.linalg.norm(value, axis=-1, keepdims=True)
    return value


_COMPILED_CHANNELS: weakref.WeakKeyDictionary[Channel, CompiledClip] = weakref.WeakKeyDictionary()


def sample_channel(channel: Channel, times: Any) -> FloatArray:
    """Values of one channel at ``times`` ``(*B,)``: ``(*B, w)`` with ``w`` 3 or 4 (rotations unit).

    Same rules as :func:`sample`; used to evaluate animated nodes outside a skeleton.
    """
    if not isinstance(channel, Channel):
        raise InvalidInputError(f"channel must be a Channel, got {type(channel).__name__}")
    times = _check_times(times)
    compiled_clip = _COMPILED_CHANNELS.get(channel)
    if compiled_clip is None:
        clip = Clip(channel.path, (channel,), channel.target + 1)
        compiled_clip = _COMPILED_CHANNELS[channel] = compile_clip(clip)
    index, u = _segments(compiled_clip, times)
    return _evaluate(compiled_clip.groups[0], index, u)[..., 0, :]
