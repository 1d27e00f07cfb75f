"""Compiled starts of inertialized and spring transitions (numba): the offsets' decays, packed.

:func:`start_offsets` is :func:`~engine.anim.inertialization.pose_offsets` (translation and scale
differences; the rotation vector ``φ = 2 log(q_s q_t⁻¹)`` and its rate ``J_l(φ)⁻¹ (ω_s - R ω_t)``),
then :func:`~engine.anim.inertialization.quintic_decay` or
:func:`~engine.anim.inertialization.spring_decay` and :func:`~engine.backend.stage.pack`, written
straight into the player's packed decays (field-major per character, ``(C, F, n)``).

A character's columns are computed a step at a time over all of them, each step's results in
separate scratch rows (one array each: LLVM vectorises a loop that writes rows it can tell apart),
the branches as selects; libm's ``atan2``, ``sin`` and ``cos`` in loops of their own, only where
the angle is not small; every field row of the packed decays is written by a loop of its own.
The same operations in the same order as the scalar kernel this replaced: the same numbers to the
bit; the numpy reference agrees to rounding (``tests/player/test_offset_kernels.py``).

Self-contained but for the constants of :mod:`engine.backend._offset_kernels` (numba compiles
them in: :mod:`engine.backend.kernel_cache` keys this module's cache by that module too). Inputs
are trusted (the callers check them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, prange

from engine.backend import _offset_kernels, kernel_cache
from engine.backend._offset_kernels import OFFSET_NOISE, SERIES_ANGLE, SERIES_THRESHOLD, SPRING_RATE, STEEPEST
from engine.backend._threads import parallel_blocks


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _differences(k: int, first: int, stop: int, joints: Any, positions: Any, speeds: Any, rows: Any) -> None:
    """Offsets ``x`` (rows 0-2) and rates ``v`` (rows 3-5) of translation or scale columns: source minus target."""
    (position_s, position_t), (speed_s, speed_t) = positions, speeds
    x0, x1, x2, v0, v1, v2 = rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]
    for i in range(first, stop):
        j = joints[i]
        x0[i] = position_s[k, j, 0] - position_t[k, j, 0]
        x1[i] = position_s[k, j, 1] - position_t[k, j, 1]
        x2[i] = position_s[k, j, 2] - position_t[k, j, 2]
        v0[i] = speed_s[k, j, 0] - speed_t[k, j, 0]
        v1[i] = speed_s[k, j, 1] - speed_t[k, j, 1]
        v2[i] = speed_s[k, j, 2] - speed_t[k, j, 2]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _rotations(k: int, first: int, stop: int, joints: Any, source: Any, target: Any, rows: Any) -> None:
    """``φ = 2 log(q_s q_t*)`` (rows 0-2) and ``J_l(φ)⁻¹ (ω_s - R(q_s q_t*) ω_t)`` (rows 3-5) of rotation columns.

    The loops run over views of those columns from 0 (a loop from a variable start does not vectorise).
    """
    x0, x1, x2 = rows[0][first:stop], rows[1][first:stop], rows[2][first:stop]
    v0, v1, v2 = rows[3][first:stop], rows[4][first:stop], rows[5][first:stop]
    dx, dy, dz, dw = rows[6][first:stop], rows[7][first:stop], rows[8][first:stop], rows[9][first:stop]
    sin_half, scale = rows[10][first:stop], rows[11][first:stop]
    theta, inverse = rows[12][first:stop], rows[13][first:stop]
    qs, qt, ws, wt, turned = source[1], target[1], source[4], target[4], joints[first:stop]
    for i in range(turned.size):  # gathers: the product and ω_s - R ω_t with it as it is (v + w·t + u × t, t = 2 u × v)
        j = turned[i]
        ax, ay, az, aw = qs[k, j, 0], qs[k, j, 1], qs[k, j, 2], qs[k, j, 3]
        bx, by, bz, bw = -qt[k, j, 0], -qt[k, j, 1], -qt[k, j, 2], qt[k, j, 3]
        px = aw * bx + ax * bw + ay * bz - az * by
        py = aw * by - ax * bz + ay * bw + az * bx
        pz = aw * bz + ax * by - ay * bx + az * bw
        pw = aw * bw - ax * bx - ay * by - az * bz
        tx = 2.0 * (py * wt[k, j, 2] - pz * wt[k, j, 1])
        ty = 2.0 * (pz * wt[k, j, 0] - px * wt[k, j, 2])
        tz = 2.0 * (px * wt[k, j, 1] - py * wt[k, j, 0])
        v0[i] = ws[k, j, 0] - (wt[k, j, 0] + pw * tx + (py * tz - pz * ty))
        v1[i] = ws[k, j, 1] - (wt[k, j, 1] + pw * ty + (pz * tx - px * tz))
        v2[i] = ws[k, j, 2] - (wt[k, j, 2] + pw * tz + (px * ty - py * tx))
        dx[i], dy[i], dz[i], dw[i] = px, py, pz, pw
    for i in range(turned.size):  # normalised, canonical (w >= 0, ties on x, y, z)
        n = math.sqrt(dx[i] * dx[i] + dy[i] * dy[i] + dz[i] * dz[i] + dw[i] * dw[i])
        ux, uy, uz, uw = dx[i] / n, dy[i] / n, dz[i] / n, dw[i] / n
        key = uw if uw != 0.0 else (ux if ux != 0.0 else (uy if uy != 0.0 else uz))
        sign = -1.0 if key < 0.0 else 1.0
        ux, uy, uz, uw = sign * ux, sign * uy, sign * uz, sign * uw
        dx[i], dy[i], dz[i], dw[i] = ux, uy, uz, uw
        s = math.sqrt(ux * ux + uy * uy + uz * uz)
        sin_half[i] = s
        scale[i] = 1.0 + s**2 / 6.0
    for i in range(turned.size):  # libm where the angle is not small
        if not sin_half[i] < SERIES_THRESHOLD:
            scale[i] = math.atan2(sin_half[i], dw[i]) / sin_half[i]
    for i in range(turned.size):
        px, py, pz = 2.0 * (dx[i] * scale[i]), 2.0 * (dy[i] * scale[i]), 2.0 * (dz[i] * scale[i])
        x0[i], x1[i], x2[i] = px, py, pz
        theta_sq = px * px + py * py + pz * pz
        theta[i] = math.sqrt(theta_sq)
        inverse[i] = 1.0 / 12.0 + theta_sq / 720.0
    for i in range(turned.size):  # c = (1 - (θ/2) cot(θ/2)) / θ², libm where the angle is not small
        if not theta[i] < SERIES_ANGLE:
            half = 0.5 * theta[i]
            inverse[i] = (1.0 - half * math.cos(half) / math.sin(half)) / (theta[i] * theta[i])
    for i in range(turned.size):  # φ̇ = ω - ½ φ × ω + c φ × (φ × ω)
        px, py, pz, ox, oy, oz = x0[i], x1[i], x2[i], v0[i], v1[i], v2[i]
        cx, cy, cz = py * oz - pz * oy, pz * ox - px * oz, px * oy - py * ox
        v0[i] = ox - 0.5 * cx + inverse[i] * (py * cz - pz * cy)
        v1[i] = oy - 0.5 * cy + inverse[i] * (pz * cx - px * cz)
        v2[i] = oz - 0.5 * cz + inverse[i] * (px * cy - py * cx)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _quintics(total: float, out: Any, at: Any, rows: Any) -> None:
    """Bollo's quintic decays of the offsets ``x`` moving at ``v`` (rows 0-5) within ``total`` seconds, into ``out``.

    ``out`` ``(F, n)``: the character's packed rows. The scratch rows 6-15 hold the axis,
    size, along, drift, end and acceleration per column.
    """
    x0, x1, x2, v0, v1, v2 = rows[0], rows[1], rows[2], rows[3], rows[4], rows[5]
    a0, a1, a2, size, along, r0, r1, r2, end, acceleration = rows[6:16]
    for i in range(x0.size):
        length = math.sqrt(x0[i] * x0[i] + x1[i] * x1[i] + x2[i] * x2[i])
        speed = math.sqrt(v0[i] * v0[i] + v1[i] * v1[i] + v2[i] * v2[i])
        length = 0.0 if length <= OFFSET_NOISE * speed * total else length  # rounding noise is no offset
        if length > 0.0:
            e0, e1, e2 = x0[i] / length, x1[i] / length, x2[i] / length
        elif speed > 0.0:
            e0, e1, e2 = v0[i] / speed, v1[i] / speed, v2[i] / speed
        else:
            e0, e1, e2 = 1.0, 0.0, 0.0
        a0[i], a1[i], a2[i], size[i] = e0, e1, e2, length
        closing = v0[i] * e0 + v1[i] * e1 + v2[i] * e2
        along[i] = closing
        d0, d1, d2 = v0[i] - closing * e0, v1[i] - closing * e1, v2[i] - closing * e2
        still = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2) <= 1e-12 * speed
        r0[i], r1[i], r2[i] = (0.0, 0.0, 0.0) if still else (d0, d1, d2)
    for i in range(x0.size):
        closing, length = along[i], size[i]
        stop = -STEEPEST * length / closing if closing < 0.0 and STEEPEST * length < -closing * total else total
        end[i] = stop
        safe = stop if stop > 0.0 else 1.0
        pushed = max(0.0, -8.0 * closing * stop - 20.0 * length) / (safe * safe)
        acceleration[i] = pushed if stop > 0.0 else 0.0
    for e, axis in enumerate((a0, a1, a2)):  # each field row written by a loop of its own
        row = out[at[0] + e]
        for i in range(x0.size):
            row[i] = axis[i]
    for field, values in ((1, size), (2, along), (3, acceleration), (4, end)):
        row = out[at[field]]
        for i in range(x0.size):
            row[i] = values[i]
    for e, drift in enumerate((r0, r1, r2)):
        row, sweep = out[at[5] + e], out[at[11] + e]
        for i in range(x0.size):
            row[i] = drift[i]
        for i in range(x0.size):
            sweep[i] = drift[i] * total if total > 0.0 else 0.0
    row = out[at[6]]
    for i in range(x0.size):
        row[i] = total
    row = out[at[7]]
    for i in range(x0.size):
        row[i] = 1.0 / end[i] if end[i] > 0.0 else 0.0
    row = out[at[8]]
    for i in range(x0.size):
        row[i] = 3.0 * size[i] + along[i] * end[i] if end[i] > 0.0 else 0.0
    row = out[at[9]]
    for i in range(x0.size):
        bend = acceleration[i] * end[i] * end[i]
        row[i] = 6.0 * size[i] + 3.0 * (along[i] * end[i]) + 0.5 * bend if end[i] > 0.0 else 0.0
    row = out[at[10]]
    for i in range(x0.size):
        row[i] = 1.0 / total if total > 0.0 else 0.0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _springs(half_life: float, out: Any, at: Any, rows: Any) -> None:
    """A critically damped spring's decays of the offsets and rates (rows 0-5) into ``out`` ``(F, n)``."""
    for e in range(3):
        row, offset = out[at[0] + e], rows[e]
        for i in range(offset.size):
            row[i] = offset[i]
        row, rate = out[at[1] + e], rows[3 + e]
        for i in range(rate.size):
            row[i] = rate[i]
    row = out[at[2]]
    for i in range(row.size):
        row[i] = SPRING_RATE / half_life


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _starts(first: int, stop: int, arguments: Any, rows: Any) -> None:
    """:func:`start_offsets` for the members ``first <= k < stop`` (its ``arguments``), with the scratch ``rows``."""
    quintic, members, source, target, columns, lengths, packed, at = arguments
    joints, bounds = columns
    for k in range(first, stop):
        _differences(k, bounds[0], bounds[1], joints, (source[0], target[0]), (source[3], target[3]), rows)
        _rotations(k, bounds[1], bounds[2], joints, source, target, rows)
        _differences(k, bounds[2], bounds[3], joints, (source[2], target[2]), (source[5], target[5]), rows)
        if quintic:
            _quintics(lengths[k], packed[members[k]], at, rows)
        else:
            _springs(lengths[k], packed[members[k]], at, rows)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _scratch(n: int) -> Any:
    """The sixteen separate scratch rows of ``n`` columns a block of starts uses (rows 0-5: ``x``, ``v``)."""
    return (
        np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
        np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n),
    )  # fmt: skip


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def start_offsets(
    quintic: bool, members: Any, source: Any, target: Any, columns: Any, lengths: Any, packed: Any, at: Any
) -> None:
    """Decays of the offsets of ``source`` from ``target`` into ``packed[members[k]]`` (every column).

    ``source``, ``target`` = translations, rotations, scales, linear, angular and scaling
    velocities ``(K, J, 3|4)``; ``columns`` = (joints ``(n,)``, the first column of the
    rotations, of the scales and ``n`` ``(4,)``: the paths' columns follow one another from 0);
    ``lengths`` ``(K,)``: the quintic's duration or the spring's half-life; ``packed`` ``(C, F,
    n)`` (field-major); ``at``: the rows of the layout's fields in its order
    (:data:`~engine.backend.stage.QUINTIC_LAYOUT`, :data:`~engine.backend.stage.SPRING_LAYOUT`).
    """
    rows = _scratch(columns[0].size)
    _starts(0, members.size, (quintic, members, source, target, columns, lengths, packed, at), rows)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def start_offsets_parallel(
    blocks: int,
    quintic: bool,
    members: Any,
    source: Any,
    target: Any,
    joints: Any,
    bounds: Any,
    lengths: Any,
    packed: Any,
    at: Any,
) -> None:
    """:func:`start_offsets` over ``blocks`` contiguous blocks of the members in parallel (the same numbers).

    ``columns`` comes as its two arrays (a parallel loop's body takes no tuple of tuples).
    """
    count = members.size
    for b in prange(blocks):
        first, stop = b * count // blocks, (b + 1) * count // blocks
        arguments = (quintic, members, source, target, (joints, bounds), lengths, packed, at)
        _starts(first, stop, arguments, _scratch(joints.size))


def start_offsets_on(
    threads: int,
    quintic: bool,
    members: Any,
    source: Any,
    target: Any,
    columns: Any,
    lengths: Any,
    packed: Any,
    at: Any,
) -> None:
    """:func:`start_offsets` on ``threads`` threads (at most one block of members each), serial for one."""
    blocks = parallel_blocks(threads, members.size)
    if blocks <= 1:
        start_offsets(quintic, members, source, target, columns, lengths, packed, at)
        return
    joints, bounds = columns
    start_offsets_parallel(blocks, quintic, members, source, target, joints, bounds, lengths, packed, at)


# the kernels compile in the constants of the offsets' module: their cache follows that module too
kernel_cache.follow(start_offsets, __file__, (_offset_kernels,))
