"""Compiled offsets of inertialized and spring transitions (numba): their decays read back, on captures.

The same arithmetic as the numpy reference, agreeing to rounding, on the player's packed decays
(field-major per character, :class:`~engine.player.offsets.Offsets`; started by
:mod:`engine.backend._start_offset_kernels`, which takes its constants from here):

- the decays' offsets and rates (:func:`~engine.anim.inertialization.quintic_offset`,
  ``spring_offset``), one column at a time (the sine and cosine of a small half-angle as their
  series, :func:`half_turn`: to rounding), shared with :mod:`engine.backend._pose_offset_kernels`
  (the transition stage on the pose buffer);
- :func:`offset_captures`: the offsets and their rates on captured poses and velocities
  (:func:`~engine.anim.inertialization.offset_pose`, ``offset_velocity``).

Self-contained on purpose, like :mod:`engine.backend._kernels`: numba's disk cache notices changes
to a cached function's own file only. Inputs are trusted (the callers check them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, prange

from engine.backend._threads import parallel_blocks

#: As :mod:`engine.anim.inertialization`: ``t1 = min(T, -STEEPEST x0 / v0)``; offsets below
#: ``OFFSET_NOISE · |v0| · T`` are rounding noise (no offset); the spring's rate times the half-life.
STEEPEST, OFFSET_NOISE, SPRING_RATE = 5.0, 1e-12, 1.6783469900166608
#: Below these the series forms are used (:mod:`engine.math.kernels`' log, :mod:`engine.anim.velocity`):
#: the half-angle's sine of a rotation offset's start, and an angle.
SERIES_THRESHOLD, SERIES_ANGLE = 1e-4, 1e-4
#: Below this half-angle :func:`half_turn` sums Taylor series: their coefficients of ``h¹ … h⁷``, ``h = n²``.
SERIES_HALF = 0.5
_SINC_SERIES = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 8))
_COS_SERIES = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(1, 8))
#: The stage's codes of no transition, Bollo's quintic and the spring (:data:`engine.backend.stage.NONE`, …).
NONE, INERTIALIZE, SPRING = 0, 2, 3


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def offset_captures(characters: Any, at: Any, transitions: Any, decays: Any, columns: Any, capture: Any) -> int:
    """The offsets of inertialized and spring transitions, and their rates, added to captures in place.

    Capture row ``k`` is character ``characters[k]`` at player clock ``at[k]``; ``transitions`` =
    every character's transition start (clock), kind (2 quintic, 3 spring, another: the row is left
    as it is, and counted unless it is 0: none), duration, half-life ``(C,)`` and planar velocity
    offset ``(C, 3)``; ``decays`` = (quintic ``(C, Fq, n)``, spring ``(C, Fs, n)``, their layouts' field rows);
    ``columns`` = (joints ``(n,)``, the first column of the rotations, of the scales and ``n``
    ``(4,)``: the paths' columns follow one another from 0); ``capture`` = translations,
    rotations, scales, linear, angular, scaling velocities ``(K, J, 3|4)`` and the planar
    velocities ``(K, 3)``, to which each planar offset is added times its decay ``d(e)``. Returns
    how many rows in a transition were left (a blend's). The numpy reference:
    :meth:`~engine.player.offsets.Offsets.full`, then :func:`~engine.anim.inertialization.offset_pose`,
    :func:`~engine.anim.inertialization.offset_velocity` and
    :func:`~engine.player.transitions.decay_weight`.
    """
    return _offset_rows(0, characters.size, characters, at, transitions, decays, columns, capture)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def offset_captures_parallel(
    blocks: int,
    characters: Any,
    at: Any,
    transitions: Any,
    quintic: Any,
    spring: Any,
    at_quintic: Any,
    at_spring: Any,
    columns: Any,
    capture: Any,
) -> int:
    """:func:`offset_captures` over ``blocks`` contiguous blocks of the rows in parallel (the same numbers).

    The decays come one by one (a parallel loop's body takes no tuple of tuples).
    """
    count = characters.size
    left = np.zeros(blocks, dtype=np.int64)
    for b in prange(blocks):
        decays = (quintic, spring, at_quintic, at_spring)
        begin, finish = b * count // blocks, (b + 1) * count // blocks
        left[b] = _offset_rows(begin, finish, characters, at, transitions, decays, columns, capture)
    return int(left.sum())


def offset_captures_on(
    threads: int, characters: Any, at: Any, transitions: Any, decays: Any, columns: Any, capture: Any
) -> int:
    """:func:`offset_captures` on ``threads`` threads (at most one block of rows each), serial for one."""
    blocks = parallel_blocks(threads, characters.size)
    if blocks <= 1:
        return int(offset_captures(characters, at, transitions, decays, columns, capture))
    quintic, spring, at_quintic, at_spring = decays
    return int(
        offset_captures_parallel(
            blocks, characters, at, transitions, quintic, spring, at_quintic, at_spring, columns, capture
        )
    )


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _offset_rows(
    begin: int, finish: int, characters: Any, at: Any, transitions: Any, decays: Any, columns: Any, capture: Any
) -> int:
    """:func:`offset_captures` for the rows ``begin <= k < finish``; returns how many in a transition it left."""
    quintic, spring, at_quintic, at_spring = decays
    joints, bounds = columns
    translations, rotations, scales, linear, angular, scaling, planar = capture
    start, kinds, durations, half_lives, root_offsets = transitions
    left = 0
    for k in range(begin, finish):
        c = characters[k]
        kind = kinds[c]
        if kind not in (INERTIALIZE, SPRING):
            left += kind != NONE
            continue
        t = at[k] - start[c]
        weight = _quintic_weight(t, durations[c]) if kind == INERTIALIZE else _spring_weight(t, half_lives[c])
        for e in range(3):
            planar[k, e] += root_offsets[c, e] * weight
        decay = quintic[c] if kind == INERTIALIZE else spring[c]  # (F, n): one view a row, none a column
        rotation, omega = rotations[k], angular[k]
        for i in range(joints.size):
            if kind == INERTIALIZE:
                x, v = _quintic_at(decay, i, at_quintic, t)
            else:
                x, v = spring_at(decay, i, at_spring, t)
            j = joints[i]
            if i < bounds[1]:
                for e in range(3):
                    translations[k, j, e] += x[e]
                    linear[k, j, e] += v[e]
            elif i >= bounds[2]:
                for e in range(3):
                    scales[k, j, e] += x[e]
                    scaling[k, j, e] += v[e]
            else:
                _turn(rotation, omega, j, x, v)
    return left


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _quintic_weight(t: float, duration: float) -> float:
    """The quintic's root-velocity decay ``1 - 10s³ + 15s⁴ - 6s⁵``, ``s = t / T`` clipped (1 for ``T = 0``)."""
    s = min(max(t / duration, 0.0), 1.0) if duration > 0.0 else 1.0
    return 1.0 - s**3.0 * (10.0 - 15.0 * s + 6.0 * s * s)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _spring_weight(t: float, half_life: float) -> float:
    """The spring's root-velocity decay ``e^{-yt}(1 + yt)``."""
    rate = SPRING_RATE / (half_life if half_life > 0.0 else 1.0)
    t = max(t, 0.0)
    return math.exp(-rate * t) * (1.0 + rate * t)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def quintic_along(t: float, end: float, inverse_end: float, first: float, second: float, position: float) -> float:
    """A quintic decay's offset along its axis ``t`` seconds in (quintic_offset, without the sweep)."""
    s = 1.0 if t >= end else t * inverse_end
    rest = 1.0 - s
    along = first + s * second
    along *= s
    along += position
    along *= rest * rest * rest
    return along


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def quintic_bump(t: float, duration: float, inverse_duration: float) -> float:
    """The weight of a quintic decay's sweep (its drift across the axis) ``t`` seconds in."""
    s2 = 1.0 if t >= duration else t * inverse_duration
    rest2 = 1.0 - s2
    return s2 * rest2 * rest2 * rest2 * (1.0 + 3.0 * s2)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _quintic_at(d: Any, i: int, at: Any, t: float) -> Any:
    """Column ``i`` of packed quintic decays ``d`` ``(F, n)``: its offset and rate, ``t`` seconds in (quintic_rates).

    Two 3-tuples of scalars (the helpers a loop over columns inlines bind no array: numba would
    count references to it every column).
    """
    along = quintic_along(t, d[at[4], i], d[at[7], i], d[at[8], i], d[at[9], i], d[at[1], i])
    bump = quintic_bump(t, d[at[6], i], d[at[10], i])
    axis, position, velocity, acceleration, end, drift, duration = at[0], at[1], at[2], at[3], at[4], at[5], at[6]
    x = (
        along * d[axis, i] + bump * d[at[11], i],
        along * d[axis + 1, i] + bump * d[at[11] + 1, i],
        along * d[axis + 2, i] + bump * d[at[11] + 2, i],
    )
    ends, total = d[end, i], d[duration, i]
    s = min(max(t / ends, 0.0), 1.0) if ends > 0.0 else 1.0
    s2 = min(max(t / total, 0.0), 1.0) if total > 0.0 else 1.0
    x0, v0, a0 = d[position, i], d[velocity, i] * ends, d[acceleration, i] * ends * ends
    g = x0 * (1.0 + s * (3.0 + 6.0 * s)) + s * (v0 * (1.0 + 3.0 * s) + 0.5 * a0 * s)
    g1 = x0 * (3.0 + 12.0 * s) + v0 * (1.0 + 6.0 * s) + a0 * s
    u = 1.0 - s
    d1 = u * u * (u * g1 - 3.0 * g)
    inverse = 1.0 / ends if ends > 0.0 else 0.0
    u = 1.0 - s2
    b1 = u * u * (u * (1.0 + 6.0 * s2) - 3.0 * (s2 + 3.0 * s2 * s2))
    v = (
        (d1 * inverse) * d[axis, i] + b1 * d[drift, i],
        (d1 * inverse) * d[axis + 1, i] + b1 * d[drift + 1, i],
        (d1 * inverse) * d[axis + 2, i] + b1 * d[drift + 2, i],
    )
    return x, v


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def spring_at(d: Any, i: int, at: Any, t: float) -> Any:
    """Column ``i`` of packed spring decays ``d`` ``(F, n)``: offset and rate ``t`` seconds in (spring_offset, _rates).

    Two 3-tuples of scalars, as :func:`_quintic_at`.
    """
    y = d[at[2], i]
    envelope = math.exp(-y * t)
    x0, v0 = d[at[0], i], d[at[1], i]
    x1, v1 = d[at[0] + 1, i], d[at[1] + 1, i]
    x2, v2 = d[at[0] + 2, i], d[at[1] + 2, i]
    x = (envelope * (x0 + (v0 + y * x0) * t), envelope * (x1 + (v1 + y * x1) * t), envelope * (x2 + (v2 + y * x2) * t))
    v = (
        envelope * (v0 - y * (v0 + y * x0) * t),
        envelope * (v1 - y * (v1 + y * x1) * t),
        envelope * (v2 - y * (v2 + y * x2) * t),
    )
    return x, v


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def sinc_series(h: float) -> float:
    """``sin(n) / n`` as its Taylor series in ``h = n²`` (:func:`half_turn`)."""
    a1, a2, a3, a4, a5, a6, a7 = _SINC_SERIES
    return 1.0 + h * (a1 + h * (a2 + h * (a3 + h * (a4 + h * (a5 + h * (a6 + h * a7))))))


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def cos_series(h: float) -> float:
    """``cos(n)`` as its Taylor series in ``h = n²`` (:func:`half_turn`)."""
    b1, b2, b3, b4, b5, b6, b7 = _COS_SERIES
    return 1.0 + h * (b1 + h * (b2 + h * (b3 + h * (b4 + h * (b5 + h * (b6 + h * b7))))))


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def half_turn(n: float) -> Any:
    """``sin(n) / n`` and ``cos(n)`` of a half-angle ``n >= 0``: below :data:`SERIES_HALF` their Taylor series.

    To ``n¹⁴`` (the first term left out is below ``1e-18``): within an ulp or two of libm's
    (the tests compare them), without its two calls — an offset's half-angle is mostly small.
    """
    if n >= SERIES_HALF:
        return math.sin(n) / n, math.cos(n)
    return sinc_series(n * n), cos_series(n * n)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def half_norm(x: float, y: float, z: float) -> float:
    """The length of half the rotation vector ``(x, y, z)``: the half-angle of its turn."""
    hx, hy, hz = 0.5 * x, 0.5 * y, 0.5 * z
    return math.sqrt(hx * hx + hy * hy + hz * hz)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def multiply_into(q: Any, j: int, ex: float, ey: float, ez: float, ew: float) -> None:
    """``q[j] ← e q[j]`` in place, ``q`` ``(J, 4)`` (quat_multiply)."""
    qx, qy, qz, qw = q[j, 0], q[j, 1], q[j, 2], q[j, 3]
    q[j, 0] = ew * qx + ex * qw + ey * qz - ez * qy
    q[j, 1] = ew * qy - ex * qz + ey * qw + ez * qx
    q[j, 2] = ew * qz + ex * qy - ey * qx + ez * qw
    q[j, 3] = ew * qw - ex * qx - ey * qy - ez * qz


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _turn(q: Any, omega: Any, j: int, phi: Any, rate: Any) -> None:
    """``q[j] ← exp(φ) q[j]`` and ``ω[j] ← J_l(φ) φ̇ + R(exp(φ)) ω[j]`` in place (offset_pose, offset_velocity).

    ``q`` ``(J, 4)``, ``omega`` ``(J, 3)``; ``phi`` and ``rate`` (φ̇): 3-tuples.
    """
    scale, ew = half_turn(half_norm(phi[0], phi[1], phi[2]))
    ex, ey, ez = (0.5 * phi[0]) * scale, (0.5 * phi[1]) * scale, (0.5 * phi[2]) * scale
    multiply_into(q, j, ex, ey, ez, ew)
    # J_l(φ) φ̇ = φ̇ + a φ × φ̇ + b φ × (φ × φ̇), a = (1 - cos θ)/θ², b = (θ - sin θ)/θ³
    px, py, pz = phi[0], phi[1], phi[2]
    theta_sq = px * px + py * py + pz * pz
    theta = math.sqrt(theta_sq)
    if theta < SERIES_ANGLE:
        a, b = 0.5 - theta_sq / 24.0, 1.0 / 6.0 - theta_sq / 120.0
    else:
        a, b = (1.0 - math.cos(theta)) / (theta * theta), (theta - math.sin(theta)) / (theta * theta * theta)
    cx, cy, cz = py * rate[2] - pz * rate[1], pz * rate[0] - px * rate[2], px * rate[1] - py * rate[0]
    o0, o1, o2 = omega[j, 0], omega[j, 1], omega[j, 2]
    tx = 2.0 * (ey * o2 - ez * o1)
    ty = 2.0 * (ez * o0 - ex * o2)
    tz = 2.0 * (ex * o1 - ey * o0)
    wx = o0 + ew * tx + (ey * tz - ez * ty)
    wy = o1 + ew * ty + (ez * tx - ex * tz)
    wz = o2 + ew * tz + (ex * ty - ey * tx)
    omega[j, 0] = rate[0] + a * cx + b * (py * cz - pz * cy) + wx
    omega[j, 1] = rate[1] + a * cy + b * (pz * cx - px * cz) + wy
    omega[j, 2] = rate[2] + a * cz + b * (px * cy - py * cx) + wz
