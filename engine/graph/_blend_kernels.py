"""Compiled 2-D blend-space weights (numba): :class:`~engine.anim.blendspace.GradientBand` for a graph's factors.

The same arithmetic, in the same order, as the numpy reference
(:meth:`GradientBand.weights <engine.anim.blendspace.GradientBand.weights>`): for each value and
sample ``i`` the influence ``min_j (1 - (p_ip · p_ij) / |p_ij|²)`` over the partners ``j`` (a
sample does not limit itself), clamped at 0; the influences normalised by their sum, added in
numpy's pairwise order; the nearest sample where none is positive. In the directional mode
(:meth:`GradientBand.polar <engine.anim.blendspace.GradientBand.polar>`) the cross and dot
products of each sample with each value are computed here (:func:`turns`), their angles and the
values' speeds by numpy's ``arctan2`` and ``hypot`` (which may round differently from libm's: on
some CPUs numpy vectorises them), so the weights are numpy's bit for bit
(``tests/graph/test_blend_kernels.py``). A graph's refresh of its kept weights is two calls: the
stale characters with their values and turns (:func:`stale_turns`), then their weights stored
(:func:`store_weights`).

Self-contained on purpose, like :mod:`engine.backend._kernels`: numba's disk cache notices changes
to a cached function's own file only. Inputs are trusted (the callers check them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

#: The most samples the kernel sums the way numpy does (numpy's pairwise blocks: 8 lanes, 128 a block).
MOST_SAMPLES = 128
#: :data:`engine.anim.blendspace.ANGLE_WEIGHT` (the kernels are self-contained; a test compares them).
ANGLE_WEIGHT = 2.0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def turns(values: Any, points: Any, cross: Any, dot: Any) -> None:
    """The cross and dot products ``(P, K)`` of every sample ``points`` ``(P, 2)`` with every value ``(K, 2)``.

    ``GradientBand.polar``'s, in its order: ``x_i v_y - y_i v_x`` and ``x_i v_x + y_i v_y``.
    """
    for i in range(points.shape[0]):
        x, y = points[i, 0], points[i, 1]
        for k in range(values.shape[0]):
            cross[i, k] = x * values[k, 1] - y * values[k, 0]
            dot[i, k] = x * values[k, 0] + y * values[k, 1]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def stale_turns(kept: Any, stamps: Any, floats: Any, parameters: Any, points: Any, out: Any) -> int:
    """The characters whose weights are stale, their values and (directional) turns; returns how many, ``K``.

    ``kept`` ``(C,)``: the parameter stamps their weights were kept at; ``stamps`` ``(C,)``: the
    characters' now; ``floats`` ``(F, C)`` the float parameters, of which rows ``parameters`` ``(2,)``
    are the space's; ``points`` ``(P, 2)``. Out = the stale characters ``(C,)``, ascending, their
    values ``(C, 2)``, and flat ``(P·C,)`` buffers for :func:`turns`' cross and dot products ``(P,
    K)`` (row-major in their first ``P·K``; empty ``(0,)`` for the Cartesian mode), each filled in
    its first ``K``.
    """
    rows, values, cross, dot = out
    count = 0
    for c in range(stamps.size):
        if kept[c] != stamps[c]:
            rows[count] = c
            values[count, 0] = floats[parameters[0], c]
            values[count, 1] = floats[parameters[1], c]
            count += 1
    if cross.size:
        shape = (points.shape[0], count)
        size = shape[0] * count
        turns(values[:count], points, cross[:size].reshape(shape), dot[:size].reshape(shape))
    return count


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def store_weights(values: Any, points: Any, tables: Any, polar: Any, rows: Any, into: Any) -> None:
    """:func:`gradient_weights` of ``values`` ``(K, 2)``, stored as the factors of the characters ``rows`` ``(K,)``.

    ``into`` = the factors ``(C, N)``, the space's leaves ``(P,)`` (its columns there), the stamps
    the factors are kept at ``(C,)`` and the characters' now ``(C,)`` (copied for ``rows``).
    """
    factors, clips, kept, stamps = into
    weights = np.empty((rows.size, points.shape[0]))
    gradient_weights(values, points, tables, polar, weights)
    for k in range(rows.size):
        c = rows[k]
        for i in range(clips.size):
            factors[c, clips[i]] = weights[k, i]
        kept[c] = stamps[c]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def gradient_weights(values: Any, points: Any, tables: Any, polar: Any, out: Any) -> None:
    """The weights ``(K, P)`` of ``values`` ``(K, 2)`` over the samples ``points`` ``(P, 2)`` into ``out``.

    ``tables`` = ``GradientBand.tables`` (``p_ij``'s components, ``|p_ij|²``, the samples' speeds
    and the pairs' mean speeds); ``polar`` = the values' speeds ``(K,)`` and the angles ``(P, K)``
    from each sample to each value (numpy's ``hypot`` and ``arctan2`` of :func:`turns`) for the
    directional mode, or empty arrays ``(0,)``, ``(0, 0)`` for the Cartesian one. ``P <=
    MOST_SAMPLES``.
    """
    pairs_x, pairs_y, lengths, speeds, average = tables
    size, angle = polar
    directional = size.size > 0
    count = points.shape[0]
    if count == 1:  # one sample: weight 1 everywhere
        out[:, 0] = 1.0
        return
    influence = np.empty(count)
    for k in range(values.shape[0]):
        vx, vy = values[k, 0], values[k, 1]
        for i in range(count):
            lowest, turn = math.inf, 0.0
            if directional:  # GradientBand.polar's angle term: 0 where either vector is the zero vector
                still = (points[i, 0] == 0.0 and points[i, 1] == 0.0) or (vx == 0.0 and vy == 0.0)
                turn = ANGLE_WEIGHT * (0.0 if still else angle[i, k])
            for j in range(count):
                if directional:
                    first, second = (size[k] - speeds[i]) / average[j, i], turn
                else:
                    first, second = vx - points[i, 0], vy - points[i, 1]
                along = first * pairs_x[j, i]
                along += second * pairs_y[j, i]
                along /= lengths[j, i]
                h = 1.0 - along
                h += math.inf if j == i else 0.0
                lowest = min(lowest, h)
            influence[i] = max(lowest, 0.0)
        total = _pairwise_sum(influence)
        if total <= 0.0:  # no positive influence (polar bands): the nearest sample
            nearest, best = 0, math.inf
            for i in range(count):
                dx, dy = vx - points[i, 0], vy - points[i, 1]
                distance = math.sqrt(dx * dx + dy * dy)
                if distance < best:
                    nearest, best = i, distance
            for i in range(count):
                influence[i] = 1.0 if i == nearest else 0.0
            total = 1.0
        for i in range(count):
            out[k, i] = influence[i] / total


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _pairwise_sum(a: Any) -> float:
    """``a.sum()`` as numpy adds up to :data:`MOST_SAMPLES` values: in order below 8, else 8 lanes then the rest."""
    n = a.size
    if n < 8:
        total = -0.0
        for i in range(n):
            total += a[i]
        return total
    r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
    i = 8
    while i < n - n % 8:
        r0, r1, r2, r3 = r0 + a[i], r1 + a[i + 1], r2 + a[i + 2], r3 + a[i + 3]
        r4, r5, r6, r7 = r4 + a[i + 4], r5 + a[i + 5], r6 + a[i + 6], r7 + a[i + 7]
        i += 8
    total = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        total += a[i]
        i += 1
    return total
