"""The search structures over a database's searchable frames: blocks, groups of blocks, a k-d tree.

All of them bound sets of frames by per-column intervals, so a search can skip a set whose
nearest possible point is already farther than the best frame found
(:mod:`engine.motion_matching._kernels`):

- **blocks**: consecutive frames of the index, :data:`SMALL_BLOCK` at a time, stored
  column-major ``(blocks, D, SMALL_BLOCK)`` so a block's distances are summed side by side; the
  last block is padded with ``+inf`` frames (row ``-1``) that never win;
- **groups** (Holden's large boxes): :data:`LARGE_BLOCK` frames, four blocks, with their bounds
  column-major ``(D, groups)``. Motion is continuous, so neighbouring frames are close and both
  kinds of boxes are small;
- **k-d tree**: the features rotated onto their principal axes (PCA: the eigenvectors of their
  covariance, largest variance first; a rotation keeps every distance), then split at the median
  of the axis of widest spread until a node holds :data:`LEAF_SIZE` frames or fewer; each node
  keeps its frames' bounds in the rotated space, and each leaf is a block of its own.

Every block, group and node also keeps the OR and the AND of its frames' tag bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.math._checks import FloatArray, IntArray

SMALL_BLOCK = 16
LARGE_BLOCK = 64
LEAF_SIZE = SMALL_BLOCK


def _tag_bounds(tags: np.ndarray, starts: IntArray) -> np.ndarray:
    """``(n, 2)``: OR and AND of ``tags`` over the segments beginning at ``starts``."""
    return np.ascontiguousarray(
        np.stack((np.bitwise_or.reduceat(tags, starts), np.bitwise_and.reduceat(tags, starts)), axis=-1)
    )


@dataclass(frozen=True, eq=False)
class Blocks:
    """Frames in blocks of :data:`SMALL_BLOCK` (module docstring).

    Attributes
    ----------
    points
        ``(S, D, SMALL_BLOCK)`` features, column-major per block, ``+inf`` padding.
    tags
        ``(S, SMALL_BLOCK)`` tag bits.
    rows
        ``(S, SMALL_BLOCK)`` each frame's row in the points the blocks were made from, ``-1`` padding.
    bits
        ``(S, 2)`` OR and AND of each block's tag bits.
    lo, hi
        ``(S, D)`` each block's bounds.
    """

    points: FloatArray
    tags: np.ndarray
    rows: np.ndarray
    bits: np.ndarray
    lo: FloatArray
    hi: FloatArray


def make_blocks(points: FloatArray, tags: np.ndarray, rows: IntArray) -> Blocks:
    """``points`` ``(M, D)`` (rows ``rows`` ``(M,)`` of some index) in consecutive blocks of :data:`SMALL_BLOCK`."""
    count, width = points.shape
    blocks = -(-count // SMALL_BLOCK)
    padded = np.full((blocks * SMALL_BLOCK, width), np.inf)
    padded[:count] = points
    padded_tags = np.zeros(blocks * SMALL_BLOCK, dtype=np.uint64)
    padded_tags[:count] = tags
    padded_rows = np.full(blocks * SMALL_BLOCK, -1, dtype=np.int64)
    padded_rows[:count] = rows
    starts = np.arange(0, count, SMALL_BLOCK)
    return Blocks(
        np.ascontiguousarray(padded.reshape(blocks, SMALL_BLOCK, width).transpose(0, 2, 1)),
        padded_tags.reshape(blocks, SMALL_BLOCK),
        padded_rows.reshape(blocks, SMALL_BLOCK),
        _tag_bounds(tags, starts),
        np.minimum.reduceat(points, starts, axis=0),
        np.maximum.reduceat(points, starts, axis=0),
    )


@dataclass(frozen=True, eq=False)
class Groups:
    """Bounds of :data:`LARGE_BLOCK` consecutive frames and of their blocks, column-major.

    Attributes
    ----------
    lo, hi
        ``(D, G)`` each group's bounds.
    bits
        ``(G, 2)`` OR and AND of each group's tag bits.
    block_lo, block_hi
        ``(G, D, 4)`` the bounds of the group's four blocks side by side (``+inf`` for a block past
        the last one: no frame there).
    """

    lo: FloatArray
    hi: FloatArray
    bits: np.ndarray
    block_lo: FloatArray
    block_hi: FloatArray


def make_groups(points: FloatArray, tags: np.ndarray, blocks: Blocks) -> Groups:
    """The groups of ``points`` ``(M, D)``, four of ``blocks`` (made from the same rows) to a group."""
    starts = np.arange(0, points.shape[0], LARGE_BLOCK)
    per_group = LARGE_BLOCK // SMALL_BLOCK
    count = starts.size * per_group
    block_lo = np.full((count, points.shape[1]), np.inf)
    block_hi = np.full((count, points.shape[1]), np.inf)
    block_lo[: blocks.lo.shape[0]] = blocks.lo
    block_hi[: blocks.hi.shape[0]] = blocks.hi
    return Groups(
        np.ascontiguousarray(np.minimum.reduceat(points, starts, axis=0).T),
        np.ascontiguousarray(np.maximum.reduceat(points, starts, axis=0).T),
        _tag_bounds(tags, starts),
        np.ascontiguousarray(block_lo.reshape(starts.size, per_group, -1).transpose(0, 2, 1)),
        np.ascontiguousarray(block_hi.reshape(starts.size, per_group, -1).transpose(0, 2, 1)),
    )


@dataclass(frozen=True, eq=False)
class KdTree:
    """A k-d tree over PCA-rotated points (module docstring).

    Attributes
    ----------
    mean, axes
        ``(D,)`` and ``(D, D)``: rotated = ``(x − mean) @ axes``.
    lo, hi
        ``(K, D)`` each node's bounds in the rotated space.
    bits
        ``(K, 2)`` uint64 OR and AND of each node's tag bits.
    children
        ``(K, 2)`` left and right child (``-1`` at a leaf).
    leaves
        ``(K,)`` a leaf's block in ``blocks``, ``-1`` for an inner node.
    blocks
        The leaves' frames (:class:`Blocks`, one block per leaf, unrotated), rows of the points
        the tree was built from.
    """

    mean: FloatArray
    axes: FloatArray
    lo: FloatArray
    hi: FloatArray
    bits: np.ndarray
    children: np.ndarray
    leaves: np.ndarray
    blocks: Blocks

    def rotate(self, x: FloatArray) -> FloatArray:
        """Points ``(..., D)`` in the tree's rotated space."""
        return np.ascontiguousarray((x - self.mean) @ self.axes)


def principal_axes(points: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Mean ``(D,)`` and the covariance's eigenvectors as columns ``(D, D)``, largest variance first."""
    mean = points.mean(axis=0)
    centred = points - mean
    variances, vectors = np.linalg.eigh(centred.T @ centred)
    return mean, vectors[:, np.argsort(variances)[::-1]]


def build_kdtree(points: FloatArray, tags: np.ndarray) -> KdTree:
    """A :class:`KdTree` over ``points`` ``(M, D)`` with tag bits ``(M,)``."""
    mean, axes = principal_axes(points)
    rotated = (points - mean) @ axes
    nodes: list[tuple[IntArray, int, int]] = []  # (rows, left, right)
    pending: list[tuple[IntArray, int, int]] = [(np.arange(points.shape[0]), -1, 0)]  # (rows, parent, side)
    links: dict[int, list[int]] = {}
    while pending:  # build time only: one split per node, depth first
        rows, parent, side = pending.pop()
        node = len(nodes)
        nodes.append((rows, -1, -1))
        links[node] = [-1, -1]
        if parent >= 0:
            links[parent][side] = node
        if rows.size <= LEAF_SIZE:
            continue
        axis = int(np.argmax(np.ptp(rotated[rows], axis=0)))  # identical points still split, in halves
        middle = rows.size // 2
        ranked = rows[np.argpartition(rotated[rows, axis], middle)]
        pending.append((ranked[middle:], node, 1))
        pending.append((ranked[:middle], node, 0))
    leaf_nodes = [k for k in range(len(nodes)) if links[k][0] < 0]
    leaves = np.full(len(nodes), -1, dtype=np.int64)
    leaves[leaf_nodes] = np.arange(len(leaf_nodes))
    blocks = _leaf_blocks(points, tags, [nodes[k][0] for k in leaf_nodes])
    return KdTree(
        mean,
        axes,
        np.array([rotated[rows].min(axis=0) for rows, _, _ in nodes]),
        np.array([rotated[rows].max(axis=0) for rows, _, _ in nodes]),
        np.array(
            [(np.bitwise_or.reduce(tags[rows]), np.bitwise_and.reduce(tags[rows])) for rows, _, _ in nodes],
            dtype=np.uint64,
        ),
        np.array([links[k] for k in range(len(nodes))], dtype=np.int64),
        leaves,
        blocks,
    )


def _leaf_blocks(points: FloatArray, tags: np.ndarray, leaves: list[IntArray]) -> Blocks:
    """One :data:`SMALL_BLOCK` block per leaf (each holds at most that many rows), padded."""
    width = points.shape[1]
    count = len(leaves)
    block_points = np.full((count, SMALL_BLOCK, width), np.inf)
    block_tags = np.zeros((count, SMALL_BLOCK), dtype=np.uint64)
    block_rows = np.full((count, SMALL_BLOCK), -1, dtype=np.int64)
    for k, rows in enumerate(leaves):
        block_points[k, : rows.size] = points[rows]
        block_tags[k, : rows.size] = tags[rows]
        block_rows[k, : rows.size] = rows
    bits = np.array([(np.bitwise_or.reduce(tags[r]), np.bitwise_and.reduce(tags[r])) for r in leaves], dtype=np.uint64)
    return Blocks(
        np.ascontiguousarray(block_points.transpose(0, 2, 1)),
        block_tags,
        block_rows,
        bits,
        np.array([points[r].min(axis=0) for r in leaves]),
        np.array([points[r].max(axis=0) for r in leaves]),
    )
