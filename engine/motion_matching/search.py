"""The search: for every character at once, the database frame nearest its query.

The cost of frame ``i`` for a character with normalised query ``q`` is ``‖x_i − q‖²`` (``x`` the
database's :attr:`~engine.motion_matching.database.Database.normalized` rows), plus ``bias`` for
every frame but the character's *continuing* frame (the one it would play next without a
switch), which therefore wins unless another beats it by more than ``bias``. With ``near`` ``n``
frames, the continuing frame's neighbours in its range (``n`` frames either side) are no result
either: a switch jumps at least that far (Unreal's pose jump threshold), so a character does not
keep jumping back a few frames to replay the same bit of motion. Only searchable
frames compete (not the last ``end_margin`` of a range), and of those only the ones the tag
filters let through: ``include`` (a frame needs at least one of these tags) and ``exclude``
(a frame may have none of these). The continuing frame obeys the same rules.

Methods (one result, different speed): ``"brute"`` compares every frame, ``"boxes"`` skips
blocks of 64 and 16 frames by their bounds, ``"kdtree"`` descends a k-d tree over PCA-rotated
features (:mod:`engine.motion_matching.structures`). They run compiled with numba
(:mod:`engine.motion_matching._kernels`, imported on the first search) on the ``numba`` backend;
the ``numpy`` backend compares every frame with array operations whatever the method (its
result is the same). The backend follows ``OSSA_BACKEND`` as :mod:`engine.backend.select`
describes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.backend.select import compiled_module, default_threads, resolve
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray, as_array
from engine.motion_matching.database import Database
from engine.motion_matching.structures import Blocks, Groups, KdTree, build_kdtree, make_blocks, make_groups

METHODS = ("brute", "boxes", "kdtree")
#: Floats a chunk of the numpy backend's distance array may hold.
_CHUNK = 1 << 21


@dataclass(frozen=True)
class SearchResult:
    """What :func:`search` found, per character.

    Attributes
    ----------
    frames
        ``(...)`` database frame indices, ``-1`` where the filters allow no frame.
    costs
        ``(...)`` their squared distances to the query (without the bias), ``inf`` where ``-1``.
    """

    frames: IntArray
    costs: FloatArray


@dataclass(frozen=True, eq=False)
class SearchIndex:
    """The searchable frames of a database packed for the kernels (built once per database).

    Attributes
    ----------
    frames
        ``(M,)`` the database frame of each row.
    columns
        ``(D,)`` the feature columns in the order the kernels sum them: widest spread first, so
        that a block's distances pass the best so far (and the block is abandoned) after as few
        columns as possible.
    points
        ``(M, D)`` the rows' normalised features, columns in that order.
    tags
        ``(M,)`` their tag bits.
    blocks, groups
        :class:`~engine.motion_matching.structures.Blocks` and
        :class:`~engine.motion_matching.structures.Groups` of consecutive rows.
    """

    frames: IntArray
    columns: IntArray
    points: FloatArray
    tags: np.ndarray
    blocks: Blocks
    groups: Groups
    _tree: list[KdTree]

    def tree(self) -> KdTree:
        """The k-d tree over the rows (built on first use)."""
        if not self._tree:
            self._tree.append(build_kdtree(self.points, self.tags))
        return self._tree[0]


def search_index(database: Database) -> SearchIndex:
    """The :class:`SearchIndex` of ``database`` (cached on it)."""
    found = database._cache.get("search_index")
    if found is None:
        frames = np.nonzero(database.searchable)[0]
        if frames.size == 0:
            raise InvalidInputError("the database has no searchable frame (every range is within its end margin)")
        columns = np.argsort(-database.normalized[frames].var(axis=0), kind="stable")
        points = np.ascontiguousarray(database.normalized[frames][:, columns])
        tags = np.ascontiguousarray(database.frame_tags[frames])
        blocks = make_blocks(points, tags, np.arange(frames.size))
        found = SearchIndex(frames, columns, points, tags, blocks, make_groups(points, tags, blocks), [])
        database._cache["search_index"] = found
    index: SearchIndex = found
    return index


def _masks(database: Database, value: Any, count: int, name: str) -> np.ndarray:
    """Tag filter ``value`` (tag names, or uint64 bit sets ``()``/``(C,)``) as ``(C,)`` uint64."""
    if value is None:
        return np.zeros(count, dtype=np.uint64)
    if isinstance(value, (np.ndarray, np.integer)):
        bits = np.asarray(value)
        if bits.dtype != np.uint64 or bits.shape not in ((), (count,)):
            raise InvalidInputError(
                f"{name} bit sets must be uint64 shaped () or ({count},), got {bits.dtype} {bits.shape}"
            )
        return np.broadcast_to(bits, (count,)).copy()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{name} must be a list of tag names or uint64 bit sets, got {value!r}")
    return np.full(count, database.tag_mask(value), dtype=np.uint64)


def _per_character(value: Any, batch: tuple[int, ...], name: str, *, integer: bool, default: float) -> np.ndarray:
    """``value`` (a number, or one per character ``batch``) as a flat ``(C,)`` array; ``None``: ``default``."""
    if value is None:
        value = default
    given = np.asarray(value) if integer else as_array(value, name)
    if (integer and not np.issubdtype(given.dtype, np.integer)) or given.shape not in ((), batch):
        kind = "integer frames" if integer else "a number"
        raise InvalidInputError(f"{name} must be {kind} or shaped {batch}, got {given.dtype} of shape {given.shape}")
    return np.broadcast_to(given, batch).reshape(-1)


def _tagged(database: Database, frames: IntArray, include: np.ndarray, exclude: np.ndarray) -> np.ndarray:
    bits = database.frame_tags[frames]
    return ((include == 0) | ((bits & include) != 0)) & ((bits & exclude) == 0)


def _allowed(database: Database, frames: IntArray, include: np.ndarray, exclude: np.ndarray) -> np.ndarray:
    return database.searchable[frames] & _tagged(database, frames, include, exclude)


def _costs(points: FloatArray, queries: FloatArray) -> FloatArray:
    """``‖points − query‖²`` ``(C, M)`` in chunks of characters."""
    out = np.empty((queries.shape[0], points.shape[0]))
    step = max(1, _CHUNK // max(points.size, 1))
    for c in range(0, queries.shape[0], step):
        diff = points[None, :, :] - queries[c : c + step, None, :]
        out[c : c + step] = np.einsum("cmd,cmd->cm", diff, diff)
    return out


def search(
    database: Database,
    queries: Any,
    *,
    current: Any = None,
    bias: Any = 0.0,
    include: Any = None,
    exclude: Any = None,
    method: str = "boxes",
    backend: str | None = None,
    threads: int | None = None,
    near: Any = 0,
    play_on: Any = False,
) -> SearchResult:
    """The best frame for each normalised query (module docstring).

    Parameters
    ----------
    database
        The database.
    queries
        ``(..., D)`` normalised feature vectors (:meth:`~engine.motion_matching.database.Database.normalize`).
    current
        ``(...)`` each character's continuing frame, ``-1`` for none; default none.
    bias
        Cost ``>= 0`` every frame but the continuing one pays: scalar or ``(...)``.
    include, exclude
        Tag filters: tag names for every character, or uint64 bit sets (``Database.tag_mask``) ``()`` or ``(C,)``.
    method
        ``"brute"``, ``"boxes"`` (default) or ``"kdtree"``.
    backend
        ``"numba"`` or ``"numpy"``; default the active one (:mod:`engine.backend.select`).
    threads
        Threads of the compiled search (default ``OSSA_THREADS``, else every CPU).
    near
        Frames ``>= 0``, scalar or ``(...)``: the continuing frame's neighbours within this many
        frames in its range are never a result (module docstring); 0 (default): none left out.
    play_on
        Bool, scalar or ``(...)``: the continuing frame competes even inside its range's end
        margin (the character can play on there until its next search); it is never a result
        for another character. Default ``False``: a continuing frame in the margin must be left.
    """
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {METHODS}, got {method!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1):
        raise InvalidInputError(f"threads must be a positive integer or None, got {threads!r}")
    q = as_array(queries, "queries", (database.layout.width,))
    batch = q.shape[:-1]
    q = np.ascontiguousarray(q.reshape(-1, database.layout.width))
    count = q.shape[0]
    continuing = _per_character(current, batch, "current", integer=True, default=-1)
    if np.any((continuing < -1) | (continuing >= database.num_frames)):
        raise InvalidInputError(f"current frames must be -1 or in [0, {database.num_frames})")
    bias_values = _per_character(bias, batch, "bias", integer=False, default=0.0)
    if np.any(bias_values < 0):
        raise InvalidInputError(f"bias must be >= 0, got {float(bias_values.min())}")
    window = _per_character(near, batch, "near", integer=True, default=0)
    if np.any(window < 0):
        raise InvalidInputError(f"near must be a whole number of frames >= 0, got {int(window.min())}")
    include_bits = _masks(database, include, count, "include")
    exclude_bits = _masks(database, exclude, count, "exclude")
    has = continuing >= 0
    frames_now = np.where(has, continuing, 0)
    on = np.asarray(play_on)
    if on.dtype != np.bool_ or on.shape not in ((), batch):
        raise InvalidInputError(f"play_on must be booleans, one or shaped {batch}, got {on.dtype} {on.shape}")
    on = np.broadcast_to(on, batch).reshape(-1)
    valid = has & _tagged(database, frames_now, include_bits, exclude_bits) & (database.searchable[frames_now] | on)
    diff = database.normalized[frames_now] - q
    threshold = np.where(valid, np.einsum("cd,cd->c", diff, diff) - bias_values, np.inf)
    index = search_index(database)
    skipped = _neighbours(database, continuing, window)
    if resolve(backend) == "numpy":
        costs = _costs(database.normalized[index.frames], q)
        allowed = _allowed(database, index.frames[None, :], include_bits[:, None], exclude_bits[:, None])
        inside = (index.frames[None, :] >= skipped[:, :1]) & (index.frames[None, :] < skipped[:, 1:])
        costs = np.where(allowed & ~inside, costs, np.inf)
        best = np.argmin(costs, axis=1)
        better = costs[np.arange(count), best] < threshold
        chosen = np.where(better, index.frames[best], np.where(valid, continuing, -1))
    else:
        rows = np.searchsorted(index.frames, skipped).astype(np.float64)  # the skipped frames as index rows
        limits, masks = (threshold, rows), (include_bits, exclude_bits)
        chosen = _compiled(index, np.ascontiguousarray(q[:, index.columns]), limits, masks, method, threads)
        chosen = np.where(chosen >= 0, chosen, np.where(valid, continuing, -1))
    picked = np.maximum(chosen, 0)
    diff = database.normalized[picked] - q
    costs = np.where(chosen >= 0, np.einsum("cd,cd->c", diff, diff), np.inf)
    return SearchResult(chosen.reshape(batch), costs.reshape(batch))


def _neighbours(database: Database, continuing: IntArray, window: IntArray) -> IntArray:
    """``(C, 2)`` the frames ``[start, stop)`` left out: ``window`` frames about ``continuing``, in its range."""
    out = np.zeros((continuing.size, 2), dtype=np.intp)
    some = (continuing >= 0) & (window > 0)
    if some.any():
        frames, reach = continuing[some], window[some]
        ranges = database.frame_range(frames)
        out[some, 0] = np.maximum(frames - reach, database.range_starts[ranges])
        out[some, 1] = np.minimum(frames + reach + 1, database.range_stops[ranges])
    return out


def _compiled(
    index: SearchIndex,
    queries: FloatArray,
    limits: tuple[FloatArray, FloatArray],
    masks: tuple[np.ndarray, np.ndarray],
    method: str,
    threads: int | None,
) -> IntArray:
    """The kernels' answer as database frames (``-1``: nothing beat the threshold); ``queries`` in index columns.

    ``limits`` = each character's threshold ``(C,)`` and the index rows ``[start, stop)`` it skips ``(C, 2)``;
    ``masks`` = its include and exclude tag bits ``(C,)`` each.
    """
    k = kernels_module()
    threshold, skipped = limits
    state = np.concatenate((threshold[:, None], np.full((threshold.size, 1), -1.0), skipped), axis=-1)
    masks_array = np.ascontiguousarray(np.stack(masks, axis=-1))
    b, g = index.blocks, index.groups
    blocks = (b.points, b.tags, b.rows, b.bits)
    groups = (g.lo, g.hi, g.bits, g.block_lo, g.block_hi)
    if method == "kdtree":
        tree = index.tree()
        leaves = tree.blocks
        nodes = (tree.lo, tree.hi, tree.bits, tree.children, tree.leaves, leaves.points, leaves.tags, leaves.rows)
        rotated = tree.rotate(queries)
        kind = k.TREE
    else:
        empty = np.zeros((1, 1))
        nodes = (
            empty,
            empty,
            b.bits[:1],
            np.zeros((1, 2), dtype=np.int64),
            np.zeros(1, dtype=np.int64),
            b.points[:1],
            b.tags[:1],
            b.rows[:1],
        )
        rotated = queries
        kind = k.BOXES if method == "boxes" else k.BRUTE
    threads = default_threads() if threads is None else threads
    k.run(kind, blocks, groups, nodes, queries, rotated, masks_array, state, threads)
    found = state[:, 1].astype(np.intp)
    return np.where(found >= 0, index.frames[np.maximum(found, 0)], -1)


def kernels_module() -> Any:
    """:mod:`engine.motion_matching._kernels` (:func:`~engine.backend.select.compiled_module`)."""
    return compiled_module("engine.motion_matching._kernels")
