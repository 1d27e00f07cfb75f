"""Compiled 2-D blend-space weights (numba): :class:`~engine.anim.blendspace.GradientBand` for a graph's factors.

The same arithmetic, in the same order, as the numpy reference
(:meth:`GradientBand.weights <engine.anim.blendspace.GradientBand.weights>`): for each value and
sample ``i`` the influence ``min_j (1 - (p_ip · p_ij) / |p_ij|²)`` over the partners ``j`` (a
sample does not limit itself), clamped at 0; the influences normalised by their sum, added in
numpy's pairwise order; the nearest sample where none is positive. The directional mode's speeds
and angles come from numpy (:meth:`GradientBand.polar
<engine.anim.blendspace.GradientBand.polar>`: its ``hypot`` and ``arctan2`` round differently
from libm's), so the weights are numpy's bit for bit (``tests/graph/test_blend_kernels.py``).

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


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def gradient_weights(values: Any, points: Any, tables: Any, polar: Any, out: Any) -> None:
    """The weights ``(K, P)`` of ``values`` ``(K, 2)`` over the samples ``points`` ``(P, 2)`` into ``out``.

    ``tables`` = ``GradientBand.tables`` (``p_ij``'s components, ``|p_ij|²``, the samples' speeds
    and the pairs' mean speeds); ``polar`` = the values' speeds ``(K,)`` and angle terms ``(P, K)``
    from ``GradientBand.polar`` for the directional mode, or empty arrays ``(0,)``, ``(0, 0)``
    for the Cartesian one. ``P <= MOST_SAMPLES``.
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
            lowest = math.inf
            for j in range(count):
                if directional:
                    first, second = (size[k] - speeds[i]) / average[j, i], angle[i, k]
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
