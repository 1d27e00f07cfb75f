"""The search structures over a database's searchable frames: blocks of 16/64 frames and a k-d tree.

Both bound groups of frames by per-column intervals, so a search can skip a group whose nearest
possible point is already farther than the best frame found (:mod:`engine.motion_matching._kernels`):

- **blocks** (Holden's bounding boxes): consecutive frames of the index in blocks of
  :data:`SMALL_BLOCK` and :data:`LARGE_BLOCK`; motion is continuous, so neighbouring frames
  are close and their boxes small;
- **k-d tree**: the features are first rotated onto their principal axes (PCA: the eigenvectors
  of their covariance, largest variance first; a rotation keeps every distance), then split at
  the median of the axis of widest spread until a node holds :data:`LEAF_SIZE` frames or fewer.
  Each node keeps the bounds of its frames in the rotated space.

Every block and node also keeps the OR and the AND of its frames' tag bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.math._checks import FloatArray, IntArray

SMALL_BLOCK = 16
LARGE_BLOCK = 64
LEAF_SIZE = 16


@dataclass(frozen=True, eq=False)
class Blocks:
    """Per-block bounds of consecutive frames: ``lo``, ``hi`` ``(B, D)`` and tag bits ``(B, 2)`` (OR, AND)."""

    lo: FloatArray
    hi: FloatArray
    bits: np.ndarray
    size: int


def _tag_bounds(tags: np.ndarray, starts: IntArray) -> np.ndarray:
    """``(B, 2)``: OR and AND of ``tags`` over the segments beginning at ``starts``."""
    return np.stack((np.bitwise_or.reduceat(tags, starts), np.bitwise_and.reduceat(tags, starts)), axis=-1)


def make_blocks(points: FloatArray, tags: np.ndarray, size: int) -> Blocks:
    """Bounds of ``points`` ``(M, D)`` in blocks of ``size`` consecutive rows (the last may be shorter)."""
    starts = np.arange(0, points.shape[0], size)
    return Blocks(
        np.minimum.reduceat(points, starts, axis=0),
        np.maximum.reduceat(points, starts, axis=0),
        _tag_bounds(tags, starts),
        size,
    )


@dataclass(frozen=True, eq=False)
class KdTree:
    """A k-d tree over PCA-rotated points (module docstring).

    Attributes
    ----------
    mean, axes
        ``(D,)`` and ``(D, D)``: rotated = ``(x − mean) @ axes``.
    order
        ``(M,)``: the tree's frames as rows of the points it was built from, leaf by leaf.
    lo, hi
        ``(K, D)`` each node's bounds in the rotated space.
    bits
        ``(K, 2)`` uint64 OR and AND of each node's tag bits.
    children
        ``(K, 2)`` left and right child, ``-1`` for a leaf.
    spans
        ``(K, 2)`` each node's rows ``[start, stop)`` of the reordered points.
    """

    mean: FloatArray
    axes: FloatArray
    order: IntArray
    lo: FloatArray
    hi: FloatArray
    bits: np.ndarray
    children: np.ndarray
    spans: np.ndarray

    def rotate(self, x: FloatArray) -> FloatArray:
        """Points ``(..., D)`` in the tree's rotated space."""
        return np.ascontiguousarray((x - self.mean) @ self.axes)


def principal_axes(points: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Mean ``(D,)`` and the covariance's eigenvectors as columns ``(D, D)``, largest variance first."""
    mean = points.mean(axis=0)
    centred = points - mean
    variances, vectors = np.linalg.eigh(centred.T @ centred)
    return mean, vectors[:, np.argsort(variances)[::-1]]


def build_kdtree(points: FloatArray, tags: np.ndarray, leaf_size: int = LEAF_SIZE) -> KdTree:
    """A :class:`KdTree` over ``points`` ``(M, D)`` with tag bits ``(M,)``."""
    mean, axes = principal_axes(points)
    rotated = (points - mean) @ axes
    order = np.arange(points.shape[0])
    nodes: list[list[int]] = []  # [start, stop, left, right]
    pending = [(0, points.shape[0], -1, 0)]  # (start, stop, parent, side)
    while pending:  # build time only: one split per node, breadth first
        start, stop, parent, side = pending.pop()
        node = len(nodes)
        nodes.append([start, stop, -1, -1])
        if parent >= 0:
            nodes[parent][2 + side] = node
        if stop - start <= leaf_size:
            continue
        rows = order[start:stop]
        spread = np.ptp(rotated[rows], axis=0)
        axis = int(np.argmax(spread))
        if spread[axis] == 0.0:  # identical points: a leaf however many
            continue
        middle = (stop - start) // 2
        ranked = rows[np.argpartition(rotated[rows, axis], middle)]
        order[start:stop] = ranked
        pending.append((start + middle, stop, node, 1))
        pending.append((start, start + middle, node, 0))
    table = np.array(nodes, dtype=np.int64)
    spans = np.ascontiguousarray(table[:, :2])
    lo = np.array([rotated[order[a:b]].min(axis=0) for a, b in spans])
    hi = np.array([rotated[order[a:b]].max(axis=0) for a, b in spans])
    ordered_tags = tags[order]
    bits = np.array(
        [(np.bitwise_or.reduce(ordered_tags[a:b]), np.bitwise_and.reduce(ordered_tags[a:b])) for a, b in spans],
        dtype=np.uint64,
    )
    return KdTree(mean, axes, order, lo, hi, bits, np.ascontiguousarray(table[:, 2:]), spans)
