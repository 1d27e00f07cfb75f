"""Clips compiled for sampling: every channel re-keyed on the clip's one merged timeline.

:func:`compile_clip` merges the key times of all channels into one timeline and re-expresses every
channel on it, grouped by path and evaluation kind (:class:`CompiledClip`). Re-keying is exact: a
step holds, a lerp is linear on any sub-interval, a slerp arc restricted to a sub-interval is a
slerp arc (its frame precomputed: angle and direction), and a cubic restricted to a sub-interval
is a cubic. :mod:`engine.anim.sampling` evaluates the groups; the compiled backend packs them
(:class:`~engine.backend.ClipBank`). :func:`compiled` keeps the compiled form on its clip.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.layout import as_slice
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray

#: Order of the three pose paths.
PATHS = ("translation", "rotation", "scale")


@dataclass(frozen=True, eq=False)
class Group:
    """Channels sharing one path and one evaluation kind, re-keyed on the clip's timeline.

    ``kind`` is ``"poly"`` (a polynomial in the segment parameter ``u`` with ``terms``
    coefficients: 1 for STEP, 2 for LINEAR, 4 for CUBICSPLINE) or ``"slerp"``
    (``cos(u·angle)·start + sin(u·angle)·direction``, ``terms`` = 2 for start and direction).
    ``rows`` selects the group's coefficients in :attr:`CompiledClip.table`, laid out
    ``(terms, width, N)``; a slerp group's ``N`` angles follow in ``angle_rows``.
    ``sine_terms`` is the number of Taylor terms that give sine and cosine of every arc of the
    group to double precision.
    """

    path: str
    kind: str
    targets: slice | IntArray
    rows: slice
    terms: int
    width: int
    count: int
    normalize: bool = False
    angle_rows: slice | None = None
    sine_terms: int = 0


@dataclass(frozen=True, eq=False)
class CompiledClip:
    """A clip re-keyed on one merged timeline, ready for fast sampling.

    Build it with :func:`compile_clip`; :func:`compiled` builds it once per clip and keeps it on
    the clip (what :func:`sample` uses).

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
    table
        ``(R, M)`` every coefficient of every channel, one row per coefficient and one column per
        segment, so that one gather fetches all channels for all characters.
    groups
        Channels grouped by path and evaluation kind, each owning a block of rows.
    static
        For each path, the target indices no channel animates (they take the rest values).
    """

    clip: Clip
    timeline: FloatArray
    inverse_intervals: FloatArray
    table: FloatArray
    groups: tuple[Group, ...]
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
    buckets: dict[tuple[str, str, int, int], list[tuple[int, FloatArray, FloatArray | None]]] = {}
    for channel in clip.channels:  # one group per path, kind, terms and width (weights differ in width)
        kind, coeffs, angles = _rekey(channel, timeline)
        key = (channel.path, kind, coeffs.shape[1], coeffs.shape[2])
        buckets.setdefault(key, []).append((channel.target, coeffs, angles))
    groups: list[Group] = []
    blocks: list[FloatArray] = []
    start = 0
    for (path, kind, terms, _), members in sorted(buckets.items()):
        members.sort(key=lambda m: m[0])
        targets = np.array([m[0] for m in members], dtype=np.intp)
        coefficients = np.stack([m[1] for m in members], axis=-1)  # (M, terms, width, N)
        count, width = targets.size, coefficients.shape[2]
        blocks.append(coefficients.reshape(timeline.size, -1).T)
        rows = slice(start, start + terms * width * count)
        start = rows.stop
        if kind == "slerp":
            angles = np.stack([m[2][:, 0] for m in members], axis=-1)  # type: ignore[index]
            blocks.append(angles.T)
            angle_rows = slice(start, start + count)
            start = angle_rows.stop
            group = Group(
                path,
                kind,
                as_slice(targets),
                rows,
                terms,
                width,
                count,
                False,
                angle_rows,
                _sine_terms(float(angles.max(initial=0.0))),
            )
        else:
            group = Group(path, kind, as_slice(targets), rows, terms, width, count, path == "rotation" and terms > 1)
        groups.append(group)
    table = np.ascontiguousarray(np.concatenate(blocks)) if blocks else np.zeros((0, timeline.size))
    animated: dict[str, set[int]] = {path: set() for path in PATHS}
    for channel in clip.channels:
        animated.setdefault(channel.path, set()).add(channel.target)
    static = {
        path: np.array([j for j in range(clip.num_targets) if j not in animated[path]], dtype=np.intp) for path in PATHS
    }
    inverse = np.append(1.0 / np.diff(timeline), 0.0)
    for array in (timeline, inverse, table, *static.values()):
        array.flags.writeable = False
    return CompiledClip(clip, timeline, inverse, table, tuple(groups), static)


#: Taylor terms of sine and cosine are added while they can exceed this (below ½ ulp of 1).
_SERIES_TOLERANCE = 2.0**-56


def _sine_terms(largest: float) -> int:
    """Terms of the sine and cosine Taylor series that reach double precision on ``[0, largest]``."""
    terms = 1
    while largest ** (2 * terms) / math.factorial(2 * terms) > _SERIES_TOLERANCE:
        terms += 1
    return terms


def compiled(clip: Clip | CompiledClip) -> CompiledClip:
    """The compiled form of ``clip``, built on first use and kept on the clip; a ``CompiledClip`` as is."""
    if isinstance(clip, CompiledClip):
        return clip
    if not isinstance(clip, Clip):
        raise InvalidInputError(f"clip must be a Clip or CompiledClip, got {type(clip).__name__}")
    if clip._compiled is None:
        object.__setattr__(clip, "_compiled", compile_clip(clip))
    return clip._compiled


def compiled_channel(channel: Channel) -> CompiledClip:
    """``channel`` alone as a one-target :class:`CompiledClip`, built on first use and kept on the channel."""
    if channel._compiled is None:
        alone = Channel(0, channel.path, channel.interpolation, channel.times, channel.values)
        object.__setattr__(channel, "_compiled", compile_clip(Clip(channel.path, (alone,), 1)))
    return channel._compiled
