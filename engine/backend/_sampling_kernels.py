"""The frame kernels' sampling helpers (numba): the segment search from a cursor, a root played in place.

Inlined into :mod:`engine.backend._kernels` and :mod:`engine.backend._transition_kernels` (whose
disk caches follow this file). Inputs are trusted.
"""

from __future__ import annotations

import math
from typing import Any

from numba import njit


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def find_segment(timeline: Any, first: Any, count: Any, t: Any, k: Any) -> Any:
    """Largest ``m`` in ``[0, count)`` with ``timeline[first + m] <= t``, else 0; the walk starts at ``k``.

    Equals ``max(searchsorted(timeline[first:first + count], t, "right") - 1, 0)``. A few steps
    from the previous frame's segment (ozz's sampling context), a binary search for longer jumps.
    """
    if k < 0:
        k = 0
    elif k >= count:
        k = count - 1
    if timeline[first + k] <= t:
        for _ in range(4):
            if k + 1 < count and timeline[first + k + 1] <= t:
                k += 1
            else:
                return k
        return bisect(timeline, first, k, count, t)
    for _ in range(4):
        k -= 1
        if k < 0:
            return 0
        if timeline[first + k] <= t:
            return k
    return max(bisect(timeline, first, -1, k, t), 0)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def bisect(timeline: Any, first: Any, low: Any, high: Any, t: Any) -> Any:
    """Binary search: the largest ``m`` in ``[low, high)`` with ``timeline[first + m] <= t``.

    Given ``timeline[first + low] <= t`` (or ``low`` = -1) and ``timeline[first + high] > t`` (or
    ``high`` past the clip's last key).
    """
    while high - low > 1:
        middle = (low + high) >> 1
        if timeline[first + middle] <= t:
            low = middle
        else:
            high = middle
    return low


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def in_place(work: Any, pose: Any, at: Any, up: Any) -> None:
    """Joint ``at`` of the pose rows ``pose..pose + 9`` of ``work`` in place about unit ``up``: height and swing kept.

    ``q ← (-s·u, c) · q`` with ``(s, c) = (sin, cos)(yaw / 2)``, ``yaw = 2·atan2(q⃗·u, q_w)`` in
    ``(-π, π]``, and ``t ← (t·u) u`` (:func:`~engine.anim.rootmotion.remove_planar`).
    """
    ux, uy, uz = up[0], up[1], up[2]
    x, y, z, w = work[pose + 3, at], work[pose + 4, at], work[pose + 5, at], work[pose + 6, at]
    yaw = 2.0 * math.atan2(x * ux + y * uy + z * uz, w)
    if yaw > math.pi:
        yaw -= 2.0 * math.pi
    elif yaw <= -math.pi:
        yaw += 2.0 * math.pi
    s, c = math.sin(0.5 * yaw), math.cos(0.5 * yaw)
    work[pose + 3, at] = c * x - s * w * ux - s * (uy * z - uz * y)
    work[pose + 4, at] = c * y - s * w * uy - s * (uz * x - ux * z)
    work[pose + 5, at] = c * z - s * w * uz - s * (ux * y - uy * x)
    work[pose + 6, at] = c * w + s * (ux * x + uy * y + uz * z)
    height = work[pose, at] * ux + work[pose + 1, at] * uy + work[pose + 2, at] * uz
    work[pose, at], work[pose + 1, at], work[pose + 2, at] = height * ux, height * uy, height * uz
