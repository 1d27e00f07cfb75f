"""Compiled transition stage on a pose buffer (numba): the offsets of inertialized and spring transitions.

:func:`apply_offsets` adds the decaying offsets (:func:`~engine.anim.inertialization.quintic_offset`,
``spring_offset``) of the characters in transition to a character-major pose in place: ``t + x``,
``exp(x) · q``, ``s + x``, the same numbers as :mod:`engine.backend._offset_kernels` computes one
column at a time (whose scalar helpers it inlines). A character's offsets are computed a field at
a time over all its columns (the player's decays are field-major, ``(C, F, n)``), one scratch row
written per loop, so that LLVM vectorises them; the scratch rows are separate arrays (their
overlap is checked at run time, not assumed).

Self-contained but for those helpers: numba's disk cache notices changes to a cached function's
own file only, so :mod:`engine.backend.kernel_cache` keys this module's by
:mod:`engine.backend._offset_kernels` too. Inputs are trusted (the callers check them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from engine.backend import _offset_kernels, kernel_cache
from engine.backend._offset_kernels import (
    INERTIALIZE,
    SERIES_HALF,
    SPRING,
    cos_series,
    half_norm,
    half_turn,
    multiply_into,
    quintic_along,
    quintic_bump,
    sinc_series,
    spring_at,
)
from engine.backend._threads import parallel_blocks


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _quintic_rows(d: Any, at: Any, t: float, total: float, rows: Any) -> None:
    """The offsets of one character's packed quintic decays ``d`` ``(F, n)``, ``t`` seconds in, into ``rows[2:5]``.

    ``total``: the transition's duration (every column's ``duration`` field: its sweep's weight is
    the character's, computed once; ``inverse_end`` is computed again from ``end``, as stored: ten
    rows of the decays read instead of thirteen). ``rows``: six scratch rows ``(n,)``; the first
    holds each column's offset along its axis here, the first two the sine and cosine of its
    half-angle in :func:`_turn_rows`.
    """
    along_row, _, x, y, z, _ = rows
    end, first, second, position = d[at[4]], d[at[8]], d[at[9]], d[at[1]]
    for i in range(along_row.size):
        inverse_end = 1.0 / end[i] if end[i] > 0.0 else 0.0
        along_row[i] = quintic_along(t, end[i], inverse_end, first[i], second[i], position[i])
    bump = quintic_bump(t, total, 1.0 / total if total > 0.0 else 0.0)
    for e, out in enumerate((x, y, z)):  # one row written per loop: each vectorises
        axis, sweep = d[at[0] + e], d[at[11] + e]
        for i in range(out.size):
            out[i] = along_row[i] * axis[i] + bump * sweep[i]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _spring_rows(d: Any, at: Any, t: float, rows: Any) -> None:
    """The offsets of one character's packed spring decays ``d`` ``(F, n)``, ``t`` seconds in, into ``rows[2:5]``."""
    for i in range(d.shape[1]):
        x, _ = spring_at(d, i, at, t)
        rows[2][i], rows[3][i], rows[4][i] = x[0], x[1], x[2]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _turn_rows(first: int, stop: int, joints: Any, q: Any, rows: Any) -> None:
    """``q[joints[i]] ← exp(x_i) q[joints[i]]`` for the columns ``first <= i < stop`` (as ``_turn``).

    The loops run over views of those columns from 0: a loop from a variable start does not
    vectorise (numba cannot tell its index is not negative, and wraps it around).
    """
    sinc_row, cos_row, x, y = rows[0][first:stop], rows[1][first:stop], rows[2][first:stop], rows[3][first:stop]
    z, norm, turned = rows[4][first:stop], rows[5][first:stop], joints[first:stop]
    for i in range(norm.size):
        norm[i] = half_norm(x[i], y[i], z[i])
    for i in range(norm.size):  # the series everywhere (vectorised), then libm where the angle is large
        sinc_row[i] = sinc_series(norm[i] * norm[i])
    for i in range(norm.size):
        cos_row[i] = cos_series(norm[i] * norm[i])
    for i in range(norm.size):
        if norm[i] >= SERIES_HALF:
            sinc_row[i], cos_row[i] = half_turn(norm[i])
    for i in range(norm.size):
        scale = sinc_row[i]
        multiply_into(q, turned[i], (0.5 * x[i]) * scale, (0.5 * y[i]) * scale, (0.5 * z[i]) * scale, cos_row[i])


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def offset_character(
    c: int, clock: Any, transitions: Any, decays: Any, pose: Any, joints: Any, bounds: Any, rows: Any
) -> bool:
    """Character ``c``'s offsets added to ``pose`` in place, as :func:`apply_offsets` adds them; whether it had any.

    ``transitions``, ``decays``, ``pose`` as :func:`apply_offsets` takes them, the columns' ``joints``
    and ``bounds`` apart; ``rows``: six scratch rows ``(n,)``. False (``pose`` untouched) when
    ``c``'s transition is of neither kind. The frame kernels call it too, between a character's
    blend and its compose (:mod:`engine.backend._kernels`).
    """
    kind, t = transitions[1][c], clock[c] - transitions[0][c]
    if kind == INERTIALIZE:
        _quintic_rows(decays[0][c], decays[2], t, transitions[2][c], rows)
    elif kind == SPRING:
        _spring_rows(decays[1][c], decays[3], t, rows)
    else:
        return False
    for out, begin, end in ((pose[0][c], bounds[0], bounds[1]), (pose[2][c], bounds[2], bounds[3])):
        for i in range(begin, end):
            j = joints[i]
            out[j, 0] += rows[2][i]
            out[j, 1] += rows[3][i]
            out[j, 2] += rows[4][i]
    _turn_rows(bounds[1], bounds[2], joints, pose[1][c], rows)
    return True


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def offset_rows(n: int) -> Any:
    """Six scratch rows ``(n,)`` for :func:`offset_character` (separate arrays: see the module docstring)."""
    return (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n))


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _offsets_on(
    first: int, stop: int, characters: Any, clock: Any, transitions: Any, decays: Any, columns: Any, pose: Any
) -> int:
    """:func:`apply_offsets` for the entries ``first <= k < stop`` (module docstring); returns how many it left."""
    joints, bounds = columns
    rows = offset_rows(joints.size)
    left = 0
    for k in range(first, stop):
        if not offset_character(characters[k], clock, transitions, decays, pose, joints, bounds, rows):
            left += 1
    return left


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def apply_offsets(characters: Any, clock: Any, transitions: Any, decays: Any, columns: Any, pose: Any) -> int:
    """The offsets of inertialized and spring transitions added to a character-major ``pose`` in place.

    ``characters`` ``(K,)`` at player ``clock`` ``(C,)``; ``transitions`` = each character's
    transition start (clock), kind (:data:`INERTIALIZE`, spring, or another: left alone and
    counted) and duration ``(C,)``; ``decays`` as for
    :func:`~engine.backend._offset_kernels.offset_captures`; ``columns`` = (joints ``(n,)``, the
    first column of the rotations, of the scales and ``n`` ``(4,)``: the paths' columns follow one
    another from 0); ``pose`` = translations ``(C, J, 3)``, rotations ``(C, J, 4)``, scales ``(C,
    J, 3)``: ``t + x``, ``exp(x) · q``, ``s + x``. Returns how many of ``characters`` are of
    neither kind.
    """
    return _offsets_on(0, characters.size, characters, clock, transitions, decays, columns, pose)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def apply_offsets_parallel(
    blocks: int,
    characters: Any,
    clock: Any,
    start: Any,
    kinds: Any,
    durations: Any,
    quintic: Any,
    spring: Any,
    at_quintic: Any,
    at_spring: Any,
    joints: Any,
    bounds: Any,
    translations: Any,
    rotations: Any,
    scales: Any,
) -> int:
    """:func:`apply_offsets` over ``blocks`` contiguous blocks of the entries in parallel (the same numbers).

    The arguments come one by one (a parallel loop's body takes no tuple of tuples).
    """
    count = characters.size
    left = np.zeros(blocks, dtype=np.int64)
    for b in prange(blocks):
        decays, columns = (quintic, spring, at_quintic, at_spring), (joints, bounds)
        pose, transitions = (translations, rotations, scales), (start, kinds, durations)
        left[b] = _offsets_on(
            b * count // blocks, (b + 1) * count // blocks, characters, clock, transitions, decays, columns, pose
        )
    return int(left.sum())


def apply_offsets_on(
    threads: int, characters: Any, clock: Any, transitions: Any, decays: Any, columns: Any, pose: Any
) -> int:
    """:func:`apply_offsets` on ``threads`` threads (at most one block of characters each), serial for one."""
    blocks = parallel_blocks(threads, characters.size)
    if blocks <= 1:
        return int(apply_offsets(characters, clock, transitions, decays, columns, pose))
    return int(apply_offsets_parallel(blocks, characters, clock, *transitions, *decays, *columns, *pose))


# the kernels inline the decays' scalar helpers: their cache follows that module too
kernel_cache.follow(apply_offsets, __file__, (_offset_kernels,))
