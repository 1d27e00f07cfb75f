"""Playback time under loop modes, and counting marker crossings exactly, batched over characters.

Playback keeps a *raw* time per character that moves by ``speed · dt``; the clip-local time is
a function of it that depends on the loop mode (``D`` is the clip duration):

========== ======================================= =======================================
mode       raw time kept in                        clip time
========== ======================================= =======================================
once       ``[0, D]`` (clamped: stops at the ends)  ``raw``
repeat     ``[0, D)`` (wrapped)                     ``raw``
ping-pong  ``[0, 2D)`` (wrapped)                    ``D - |raw - D|`` (forwards, then back)
========== ======================================= =======================================

A marker at clip time ``m`` sits at raw times ``m + kD`` (repeat), ``±m + 2kD`` (ping-pong) or
``m`` (once). An update moving the raw time from ``a`` to ``b`` (unwrapped: ``b`` may lie many
loops away, or below ``a`` when playing backwards) crosses every such point in the half-open
interval that excludes ``a`` and includes ``b`` — so a marker exactly at a frame boundary fires
in exactly one of the two updates. The first update after ``play``/``reset`` includes ``a`` too,
so a marker at the start time fires when playback starts.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

import numpy as np

from engine.math._checks import FloatArray, IntArray


class Loop(IntEnum):
    """Loop modes of an action."""

    ONCE = 0
    """Play once and hold the last frame (the first when playing backwards)."""
    REPEAT = 1
    """Wrap around: after the end comes the start again."""
    PING_PONG = 2
    """Play forwards, then backwards, then forwards, ..."""


def _count(lo: FloatArray, hi: FloatArray, point: Any, period: float, closed_lo: Any, closed_hi: Any) -> IntArray:
    """How many of ``point + k·period`` (all integers ``k``) lie between ``lo <= hi``.

    ``closed_lo`` / ``closed_hi`` say whether each end belongs to the interval. The quotients
    give ``k`` to within one; a comparison of the positions themselves settles the last step, so
    a time a hair beyond a marker is never counted on the wrong side.
    """
    top = np.floor((hi - point) / period)
    above = point + (top + 1.0) * period
    top = np.where(np.where(closed_hi, above <= hi, above < hi), top + 1.0, top)
    at = point + top * period
    top = np.where(np.where(closed_hi, at > hi, at >= hi), top - 1.0, top)
    bottom = np.ceil((lo - point) / period)
    below = point + (bottom - 1.0) * period
    bottom = np.where(np.where(closed_lo, below >= lo, below > lo), bottom - 1.0, bottom)
    at = point + bottom * period
    bottom = np.where(np.where(closed_lo, at < lo, at <= lo), bottom + 1.0, bottom)
    return np.maximum(top - bottom + 1.0, 0.0).astype(np.intp)


def marker_crossings(
    start: Any, end: Any, markers: Any, duration: float, loop: Loop, *, include_start: Any = False
) -> IntArray:
    """Number of times each marker is crossed when the raw time moves from ``start`` to ``end``.

    Parameters
    ----------
    start
        Raw times before the update ``(C,)`` (see the module docstring).
    end
        Raw times after the update ``(C,)``, **unwrapped** (``start + speed · dt``; for
        :attr:`Loop.ONCE` clamped to ``[0, D]``).
    markers
        Marker times in clip time ``(M,)``, within ``[0, duration]``.
    duration
        Clip duration ``D``; a zero-length clip counts like :attr:`Loop.ONCE`.
    loop
        The loop mode.
    include_start
        Scalar or ``(C,)`` booleans: also count a marker exactly at ``start`` (the first update
        after ``play``/``reset``).

    Returns
    -------
    IntArray
        Crossing counts ``(C, M)``; two loops in one update count 2.

    Examples
    --------
    >>> marker_crossings([0.9], [2.2], [0.0, 0.5], 1.0, Loop.REPEAT).tolist()   # wraps twice
    [[2, 1]]
    >>> marker_crossings([0.6], [-0.6], [0.5], 1.0, Loop.REPEAT).tolist()       # backwards
    [[2]]
    """
    start = np.asarray(start, dtype=np.float64)[:, None]
    end = np.asarray(end, dtype=np.float64)[:, None]
    points = np.asarray(markers, dtype=np.float64)[None, :]
    forward = end >= start
    lo, hi = np.minimum(start, end), np.maximum(start, end)
    fresh = np.asarray(include_start, dtype=bool)
    fresh = fresh[:, None] if fresh.ndim else fresh
    closed_lo = ~forward | fresh  # the end of travel is always included, its start only when fresh
    closed_hi = forward | fresh
    if loop == Loop.ONCE or duration <= 0.0:  # a zero-length clip has nothing to loop over
        inside = np.where(closed_lo, points >= lo, points > lo) & np.where(closed_hi, points <= hi, points < hi)
        return inside.astype(np.intp)
    if loop == Loop.REPEAT:
        return _count(lo, hi, points, duration, closed_lo, closed_hi)
    period = 2.0 * duration
    there = _count(lo, hi, points, period, closed_lo, closed_hi)
    back = _count(lo, hi, period - points, period, closed_lo, closed_hi)
    turning = (points <= 0.0) | (points >= duration)  # at a turning point both sequences coincide
    return np.where(turning, there, there + back)


def clip_time(raw: FloatArray, duration: Any, loop: Any) -> FloatArray:
    """Clip-local time from raw time for each loop mode (broadcasting ``raw``, ``duration``, ``loop``)."""
    return np.where(loop == Loop.PING_PONG, duration - np.abs(raw - duration), raw)


def wrap_raw(end: FloatArray, duration: Any, loop: Any) -> tuple[FloatArray, FloatArray]:
    """Store an unwrapped raw time: ``(raw, loops)`` where ``loops`` counts whole wraps crossed.

    ``loops`` is an integer-valued float: how many periods (``D`` for repeat, ``2D`` for
    ping-pong) ``end`` lies beyond the stored range; 0 for :attr:`Loop.ONCE`, whose raw time is
    clamped to ``[0, D]`` instead. A zero duration keeps raw time 0.
    """
    period = np.where(loop == Loop.PING_PONG, 2.0 * duration, duration)
    safe = np.where(period > 0.0, period, 1.0)
    loops = np.where((loop == Loop.ONCE) | (period <= 0.0), 0.0, np.floor(end / safe))
    raw = np.where(loop == Loop.ONCE, np.clip(end, 0.0, duration), end - loops * safe)
    # Rounding can put end - loops·period onto the period itself (end an ulp below a multiple of
    # it, e.g. -1e-17 with loops = -1): that time is the start of the next loop, so the loop
    # count moves with it and raw + loops·period stays the unwrapped time.
    folded = (loop != Loop.ONCE) & (period > 0.0) & (raw >= safe)
    raw = np.where(folded, raw - safe, raw)
    loops = np.where(folded, loops + 1.0, loops)
    return np.where(period > 0.0, np.maximum(raw, 0.0), 0.0), loops
