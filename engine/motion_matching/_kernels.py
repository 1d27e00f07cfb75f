"""Compiled search kernels (numba): the only module of :mod:`engine.motion_matching` that imports numba.

One character at a time, the nearest searchable frame to its query whose squared distance is
below the character's threshold (the continuing frame's cost minus the bias, or infinity):

- ``BRUTE``: every frame, each distance summed column by column and abandoned once it reaches
  the best so far (Holden's early-out);
- ``BOXES``: the frames in blocks of 64 and of 16 (consecutive in the index), each block with
  its per-column bounds; a block whose lower bound ``Σ (q − clamp(q, lo, hi))²`` reaches the
  best so far is skipped whole (Holden's bounding boxes), then frames as ``BRUTE``;
- ``TREE``: a k-d tree (:mod:`engine.motion_matching.kdtree`) over PCA-rotated features, its
  nodes' bounds in the rotated space (distances are the same there), visited nearest child first.

Blocks and nodes also carry the OR and AND of their frames' tag bits, so a tag filter skips a
block none of whose frames it allows. Frames are always compared in the original space, with
the same arithmetic in every method, so every method returns the same frame; a bound prunes only
when it exceeds the best by more than a relative ``1e-12`` (rounding of the rotation).

Everything compiled lives in this one module (numba's cache follows one file); every kernel is
``nogil`` and cached on disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import config, get_num_threads, njit, prange, set_num_threads

BRUTE, BOXES, TREE = 0, 1, 2
#: Relative slack of a bound before it prunes (rounding of the PCA rotation).
SLACK = 1e-12


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _allowed(bits: Any, include: Any, exclude: Any) -> Any:
    return (include == 0 or (bits & include) != 0) and (bits & exclude) == 0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _block_open(bits_or: Any, bits_and: Any, include: Any, exclude: Any) -> Any:
    return (include == 0 or (bits_or & include) != 0) and (bits_and & exclude) == 0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _bound(q: Any, lo: Any, hi: Any, best: Any) -> Any:
    """Lower bound of the squared distance from ``q`` to the box ``[lo, hi]``, abandoned at ``best``."""
    total = 0.0
    for d in range(q.size):
        v = q[d]
        if v < lo[d]:
            e = lo[d] - v
            total += e * e
        elif v > hi[d]:
            e = v - hi[d]
            total += e * e
        if total > best:
            break
    return total


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _scan(points: Any, tags: Any, first: Any, stop: Any, q: Any, include: Any, exclude: Any, state: Any) -> None:
    """Frames ``[first, stop)`` against ``q``; ``state`` = (best cost, best index) updated in place."""
    dims = q.size
    for i in range(first, stop):
        if not _allowed(tags[i], include, exclude):
            continue
        best = state[0]
        total = 0.0
        row = points[i]
        for d in range(dims):
            e = row[d] - q[d]
            total += e * e
            if total >= best:
                break
        if total < best:
            state[0] = total
            state[1] = i


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _search_one(
    method: Any,
    points: Any,
    tags: Any,
    boxes: Any,
    tree: Any,
    query: Any,
    rotated: Any,
    include: Any,
    exclude: Any,
    state: Any,
) -> None:
    """One character's search; ``state`` enters as (threshold, -1) and leaves as (cost, index or -1)."""
    count = points.shape[0]
    if method == BRUTE:
        _scan(points, tags, 0, count, query, include, exclude, state)
        return
    if method == BOXES:
        large_lo, large_hi, large_bits, small_lo, small_hi, small_bits, large, small = boxes
        blocks = large_lo.shape[0]
        bounds = np.empty(blocks)
        for b in range(blocks):
            open_ = _block_open(large_bits[b, 0], large_bits[b, 1], include, exclude)
            bounds[b] = _bound(query, large_lo[b], large_hi[b], state[0]) if open_ else np.inf
        for b in np.argsort(bounds):  # nearest blocks first: the first bound past the best ends the search
            if bounds[b] >= state[0] * (1.0 + SLACK):
                break
            for s in range(b * (large // small), min((b + 1) * (large // small), small_lo.shape[0])):
                if not _block_open(small_bits[s, 0], small_bits[s, 1], include, exclude):
                    continue
                if _bound(query, small_lo[s], small_hi[s], state[0]) >= state[0] * (1.0 + SLACK):
                    continue
                _scan(points, tags, s * small, min((s + 1) * small, count), query, include, exclude, state)
        return
    lo, hi, bits, children, spans = tree
    stack = np.empty(128, dtype=np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if not _block_open(bits[node, 0], bits[node, 1], include, exclude):
            continue
        if _bound(rotated, lo[node], hi[node], state[0]) >= state[0] * (1.0 + SLACK):
            continue
        left, right = children[node, 0], children[node, 1]
        if left < 0:
            _scan(points, tags, spans[node, 0], spans[node, 1], query, include, exclude, state)
            continue
        near_left = _bound(rotated, lo[left], hi[left], np.inf) <= _bound(rotated, lo[right], hi[right], np.inf)
        stack[top] = right if near_left else left  # the farther child waits below the nearer one
        stack[top + 1] = left if near_left else right
        top += 2


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def search_serial(
    method: Any, points: Any, tags: Any, boxes: Any, tree: Any, queries: Any, rotated: Any, masks: Any, state: Any
) -> None:
    """:func:`_search_one` for every character; ``masks`` ``(C, 2)`` uint64 include/exclude, ``state`` ``(C, 2)``."""
    for c in range(queries.shape[0]):
        _search_one(method, points, tags, boxes, tree, queries[c], rotated[c], masks[c, 0], masks[c, 1], state[c])


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def search_parallel(
    method: Any, points: Any, tags: Any, boxes: Any, tree: Any, queries: Any, rotated: Any, masks: Any, state: Any
) -> None:
    """:func:`search_serial` with the characters in parallel."""
    for c in prange(queries.shape[0]):
        _search_one(method, points, tags, boxes, tree, queries[c], rotated[c], masks[c, 0], masks[c, 1], state[c])


def run(
    method: int,
    points: Any,
    tags: Any,
    boxes: Any,
    tree: Any,
    queries: Any,
    rotated: Any,
    masks: Any,
    state: Any,
    threads: int,
) -> None:
    """The serial driver, or the parallel one on ``threads`` threads."""
    threads = min(threads, int(config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    if threads <= 1:
        search_serial(method, points, tags, boxes, tree, queries, rotated, masks, state)
        return
    if get_num_threads() != threads:
        set_num_threads(threads)
    search_parallel(method, points, tags, boxes, tree, queries, rotated, masks, state)
