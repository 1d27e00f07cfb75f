"""Compiled search and query kernels (numba): the only module of :mod:`engine.motion_matching` that imports numba.

One character at a time, the nearest allowed frame to its query whose squared distance is below
the character's threshold (the continuing frame's cost minus the bias, or infinity). Frames are
stored in *blocks* of ``B`` (:data:`~engine.motion_matching.structures.SMALL_BLOCK`) laid out
column-major, ``(blocks, D, B)``: a block's ``B`` distances are summed together, one column at a
time (SIMD across frames), and the block is abandoned as soon as all ``B`` partial sums have
reached the best cost so far (checked every :data:`CHECK_EVERY` columns). Padding frames are
``+inf`` and never win.

- ``BRUTE``: every block;
- ``BOXES``: Holden's bounding boxes: the blocks grouped by 4 (64 frames) with per-column
  bounds; every group's lower bound ``Σ (q − clamp(q, lo, hi))²`` first (vectorised over the
  groups), then the groups nearest first, each block of a group only if its own bound is below
  the best, and the search ends at the first group whose bound is not;
- ``TREE``: a k-d tree (:mod:`engine.motion_matching.structures`) over PCA-rotated features, its
  nodes' bounds in the rotated space (a rotation keeps distances), visited nearest child first,
  its leaves blocks of their own.

Blocks and nodes also carry the OR and AND of their frames' tag bits, so a tag filter skips a
block none of whose frames it allows. Frames are always compared in the original space, with
the same arithmetic in every method (each distance summed column by column, in the index's
column order), so every method returns the same frame; a bound prunes only when it exceeds the
best by more than a relative :data:`SLACK` (rounding of the rotation).

The queries' pose part has a kernel too: :func:`model_velocities`, the forward kinematics of a
pose and its velocity (:mod:`engine.motion_matching.kinematics`, character by character).

Everything compiled lives in this one module (numba's cache follows one file); every kernel is
``nogil`` and cached on disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import config, get_num_threads, njit, prange, set_num_threads

from engine.motion_matching.structures import LARGE_BLOCK, SMALL_BLOCK

BRUTE, BOXES, TREE = 0, 1, 2
#: Relative slack of a bound before it prunes (rounding of the PCA rotation).
SLACK = 1e-12
#: Columns summed between two checks of a block's early out.
CHECK_EVERY = 8
#: Blocks in a group.
PER_GROUP = LARGE_BLOCK // SMALL_BLOCK


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _open(bits_or: Any, bits_and: Any, include: Any, exclude: Any) -> Any:
    """Whether a block with these OR/AND tag bits may hold an allowed frame (a frame: OR = AND = its bits)."""
    return (include == 0 or (bits_or & include) != 0) and (bits_and & exclude) == 0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _bound(q: Any, lo: Any, hi: Any, best: Any) -> Any:
    """Lower bound of the squared distance from ``q`` to the box ``[lo, hi]``, abandoned past ``best``."""
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
def _block(block: Any, tags: Any, rows: Any, q: Any, include: Any, exclude: Any, acc: Any, state: Any) -> None:
    """One block ``(D, B)`` against ``q``; ``state`` = (best cost, best row, skipped rows' start, stop), updated."""
    width = SMALL_BLOCK  # a constant: the loops over the block's frames compile to SIMD
    for i in range(width):
        acc[i] = 0.0
    dims = q.size
    for d in range(dims):
        qd = q[d]
        column = block[d]
        for i in range(width):
            e = column[i] - qd
            acc[i] += e * e
        if (d + 1) % CHECK_EVERY == 0 and d + 1 < dims:
            smallest = acc[0]
            for i in range(1, width):
                smallest = min(smallest, acc[i])
            if smallest >= state[0]:
                return
    for i in range(width):
        outside = rows[i] < state[2] or rows[i] >= state[3]
        if acc[i] < state[0] and outside and _open(tags[i], tags[i], include, exclude):
            state[0] = acc[i]
            state[1] = rows[i]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _search_boxes(blocks: Any, boxes: Any, query: Any, include: Any, exclude: Any, acc: Any, state: Any) -> None:
    """Holden's boxes: the groups nearest first, their blocks by their own bounds (module docstring)."""
    points, tags, rows, bits = blocks
    group_lo, group_hi, group_bits, block_lo, block_hi = boxes  # (D, G), (D, G), (G, 2), (G, D, 4) twice
    groups = group_lo.shape[1]
    bounds = np.zeros(groups)
    for d in range(query.size):  # every group's bound at once: SIMD across groups
        v = query[d]
        lo, hi = group_lo[d], group_hi[d]
        for g in range(groups):
            e = max(lo[g] - v, 0.0, v - hi[g])
            bounds[g] += e * e
    for g in range(groups):
        if not _open(group_bits[g, 0], group_bits[g, 1], include, exclude):
            bounds[g] = np.inf
    near = np.empty(PER_GROUP)
    while True:  # nearest group first (a selection, not a sort: a search visits a few groups of many)
        g = 0
        for k in range(1, groups):
            if bounds[k] < bounds[g]:
                g = k
        if bounds[g] >= state[0] * (1.0 + SLACK):  # the nearest left cannot beat the best: done
            return
        bounds[g] = np.inf
        near[:] = 0.0
        for d in range(query.size):  # the group's four block bounds side by side
            v = query[d]
            lo, hi = block_lo[g, d], block_hi[g, d]
            for k in range(PER_GROUP):
                e = max(lo[k] - v, 0.0, v - hi[k])
                near[k] += e * e
        for k in range(PER_GROUP):
            s = g * PER_GROUP + k
            if near[k] < state[0] * (1.0 + SLACK) and _open(bits[s, 0], bits[s, 1], include, exclude):
                _block(points[s], tags[s], rows[s], query, include, exclude, acc, state)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _node_bound(tree: Any, node: Any, rotated: Any, include: Any, exclude: Any, reach: Any) -> Any:
    """The lower bound of a tree node (``inf`` when the tag filters allow none of its frames)."""
    lo, hi, bits = tree[0], tree[1], tree[2]
    if not _open(bits[node, 0], bits[node, 1], include, exclude):
        return np.inf
    return _bound(rotated, lo[node], hi[node], reach)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _search_tree(tree: Any, query: Any, rotated: Any, include: Any, exclude: Any, acc: Any, state: Any) -> None:
    """The k-d tree, depth first, the nearer child first; a node is pushed with its bound, computed once."""
    children, leaves, leaf_points, leaf_tags, leaf_rows = tree[3], tree[4], tree[5], tree[6], tree[7]
    stack = np.empty(128, dtype=np.int64)
    below = np.empty(128)  # each stacked node's bound
    stack[0], below[0], top = 0, 0.0, 1
    while top > 0:
        top -= 1
        node = stack[top]
        if below[top] >= state[0] * (1.0 + SLACK):  # the best improved since it was pushed
            continue
        leaf = leaves[node]
        if leaf >= 0:
            _block(leaf_points[leaf], leaf_tags[leaf], leaf_rows[leaf], query, include, exclude, acc, state)
            continue
        reach = state[0] * (1.0 + SLACK)
        near, far = children[node, 0], children[node, 1]
        near_bound = _node_bound(tree, near, rotated, include, exclude, reach)
        far_bound = _node_bound(tree, far, rotated, include, exclude, reach)
        if far_bound < near_bound:
            near, far, near_bound, far_bound = far, near, far_bound, near_bound
        if far_bound < reach:  # the farther child waits below the nearer one
            stack[top], below[top] = far, far_bound
            top += 1
        if near_bound < reach:
            stack[top], below[top] = near, near_bound
            top += 1


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _search_one(
    method: Any, blocks: Any, boxes: Any, tree: Any, query: Any, rotated: Any, include: Any, exclude: Any, state: Any
) -> None:
    """One character's search; ``state`` enters as (threshold, -1, skip start, stop), leaves as (cost, row or -1, ...).

    Rows in ``[skip start, skip stop)`` are never a result (the continuing frame's neighbours).
    """
    acc = np.empty(SMALL_BLOCK)
    if method == BOXES:
        _search_boxes(blocks, boxes, query, include, exclude, acc, state)
    elif method == TREE:
        _search_tree(tree, query, rotated, include, exclude, acc, state)
    else:
        points, tags, rows, bits = blocks
        for s in range(points.shape[0]):
            if _open(bits[s, 0], bits[s, 1], include, exclude):
                _block(points[s], tags[s], rows[s], query, include, exclude, acc, state)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def search_serial(
    method: Any, blocks: Any, boxes: Any, tree: Any, queries: Any, rotated: Any, masks: Any, state: Any
) -> None:
    """:func:`_search_one` for every character; ``masks`` ``(C, 2)`` uint64 include/exclude, ``state`` ``(C, 4)``."""
    for c in range(queries.shape[0]):
        _search_one(method, blocks, boxes, tree, queries[c], rotated[c], masks[c, 0], masks[c, 1], state[c])


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def search_parallel(
    method: Any, blocks: Any, boxes: Any, tree: Any, queries: Any, rotated: Any, masks: Any, state: Any
) -> None:
    """:func:`search_serial` with the characters in parallel."""
    for c in prange(queries.shape[0]):
        _search_one(method, blocks, boxes, tree, queries[c], rotated[c], masks[c, 0], masks[c, 1], state[c])


def run(
    method: int, blocks: Any, boxes: Any, tree: Any, queries: Any, rotated: Any, masks: Any, state: Any, threads: int
) -> None:
    """The serial driver, or the parallel one on ``threads`` threads."""
    threads = min(threads, int(config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    if threads <= 1:
        search_serial(method, blocks, boxes, tree, queries, rotated, masks, state)
        return
    if get_num_threads() != threads:
        set_num_threads(threads)
    search_parallel(method, blocks, boxes, tree, queries, rotated, masks, state)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def model_velocities(parents: Any, pose: Any, velocity: Any, positions: Any, rates: Any) -> None:
    """Model-space positions and velocities ``(K, n, 3)`` of local poses moving at their velocities.

    ``parents`` ``(n,)`` (each before its children); ``pose`` = rotations ``(K, n, 4)``,
    translations, scales ``(K, n, 3)``; ``velocity`` = linear, angular, scaling ``(K, n, 3)``.
    The recursion of :mod:`engine.motion_matching.kinematics`: ``A_j = A_p R_j S_j``,
    ``Ȧ_j = Ȧ_p R_j S_j + A_p ([ω_j]× R_j S_j + R_j diag(ṡ_j))``, ``p_j = p_p + A_p t_j``,
    ``ṗ_j = ṗ_p + Ȧ_p t_j + A_p ṫ_j``.
    """
    rotations, translations, scales = pose
    linear, angular, scaling = velocity
    joints = parents.size
    frame, frame_rate = np.empty((joints, 3, 3)), np.empty((joints, 3, 3))
    turn, local, local_rate = np.empty((3, 3)), np.empty((3, 3)), np.empty((3, 3))
    for c in range(rotations.shape[0]):
        for j in range(joints):
            x, y, z, w = rotations[c, j, 0], rotations[c, j, 1], rotations[c, j, 2], rotations[c, j, 3]
            turn[0, 0], turn[1, 1] = 1.0 - 2.0 * (y * y + z * z), 1.0 - 2.0 * (x * x + z * z)
            turn[2, 2] = 1.0 - 2.0 * (x * x + y * y)
            turn[0, 1], turn[1, 0] = 2.0 * (x * y - z * w), 2.0 * (x * y + z * w)
            turn[0, 2], turn[2, 0] = 2.0 * (x * z + y * w), 2.0 * (x * z - y * w)
            turn[1, 2], turn[2, 1] = 2.0 * (y * z - x * w), 2.0 * (y * z + x * w)
            wx, wy, wz = angular[c, j, 0], angular[c, j, 1], angular[c, j, 2]
            for k in range(3):
                for i in range(3):
                    local[i, k] = turn[i, k] * scales[c, j, k]
                l0, l1, l2 = local[0, k], local[1, k], local[2, k]
                local_rate[0, k] = (wy * l2 - wz * l1) + turn[0, k] * scaling[c, j, k]
                local_rate[1, k] = (wz * l0 - wx * l2) + turn[1, k] * scaling[c, j, k]
                local_rate[2, k] = (wx * l1 - wy * l0) + turn[2, k] * scaling[c, j, k]
            p = parents[j]
            if p < 0:
                frame[j], frame_rate[j] = local, local_rate
                positions[c, j], rates[c, j] = translations[c, j], linear[c, j]
                continue
            for i in range(3):
                position, rate = positions[c, p, i], rates[c, p, i]
                for k in range(3):
                    a, da = frame[p, i, k], frame_rate[p, i, k]
                    position += a * translations[c, j, k]
                    rate += da * translations[c, j, k] + a * linear[c, j, k]
                    total, total_rate = 0.0, 0.0
                    for m in range(3):
                        total += frame[p, i, m] * local[m, k]
                        total_rate += frame_rate[p, i, m] * local[m, k] + frame[p, i, m] * local_rate[m, k]
                    frame[j, i, k], frame_rate[j, i, k] = total, total_rate
                positions[c, j, i], rates[c, j, i] = position, rate
