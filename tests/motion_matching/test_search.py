"""The search against a plain numpy brute force, on random and real queries, every method and backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidInputError
from engine.motion_matching import search
from engine.motion_matching.search import search_index
from engine.motion_matching.structures import LEAF_SIZE
from tests.motion_matching.conftest import random_database

METHODS = ("brute", "boxes", "kdtree")
RUNS = [("numpy", "brute", 1)] + [("numba", m, t) for m in METHODS for t in (1, 2)]


def oracle(db, queries, current=None, bias=0.0, include=0, exclude=0, near=0) -> tuple[np.ndarray, np.ndarray]:
    """Every frame's cost ``(C, N)`` (inf where not allowed) the plain way, and its argmin (-1 if all inf).

    ``near``: frames of the continuing frame's range (a frame-by-frame lookup) within that many
    frames of it, itself aside, are not allowed.
    """
    costs = ((db.normalized[None, :, :] - queries[:, None, :]) ** 2).sum(axis=-1)
    if current is not None:
        owner = np.array([next(r for r in range(db.num_ranges) if f < db.range_stops[r]) for f in range(db.num_frames)])
        for c, f in enumerate(current):
            reach = int(np.broadcast_to(near, len(current))[c])
            if f >= 0 and reach > 0:
                same = owner == owner[f]
                offset = np.abs(np.arange(db.num_frames) - f)
                costs[c, same & (offset <= reach) & (offset > 0)] = np.inf
    if current is not None:
        costs = costs + np.asarray(bias).reshape(-1, 1) * (np.arange(db.num_frames)[None, :] != current[:, None])
    tags = db.frame_tags[None, :]
    include, exclude = np.asarray(include, np.uint64).reshape(-1, 1), np.asarray(exclude, np.uint64).reshape(-1, 1)
    allowed = db.searchable[None, :] & ((include == 0) | ((tags & include) != 0)) & ((tags & exclude) == 0)
    costs = np.where(allowed, costs, np.inf)
    best = np.argmin(costs, axis=1)
    return costs, np.where(np.isfinite(costs[np.arange(len(best)), best]), best, -1)


def assert_same(result, costs: np.ndarray, expected: np.ndarray, queries: np.ndarray, db) -> None:
    """The same frames as the oracle (up to exact ties), with their plain squared distances."""
    rows = np.arange(len(expected))
    assert np.array_equal(result.frames == -1, expected == -1)
    found = result.frames >= 0
    chosen = costs[rows[found], result.frames[found]]
    best = costs[rows[found], expected[found]]
    np.testing.assert_allclose(chosen, best, rtol=1e-12, atol=1e-12)  # a minimiser of the oracle's cost
    runner_up = np.sort(costs[found], axis=1)[:, 1] if costs.shape[1] > 1 else np.full(found.sum(), np.inf)
    clear = runner_up - best > 1e-9 * (1.0 + best)
    assert np.array_equal(result.frames[found][clear], expected[found][clear])
    distances = ((db.normalized[result.frames[found]] - queries[found]) ** 2).sum(axis=-1)
    np.testing.assert_allclose(result.costs[found], distances, rtol=1e-13)
    assert np.all(np.isinf(result.costs[~found]))


@pytest.mark.parametrize(("backend", "method", "threads"), RUNS)
def test_random_queries_equal_brute_force(rng, backend, method, threads) -> None:
    db = random_database(rng, 700, ranges=5, tags=4)
    queries = db.normalized[rng.integers(0, db.num_frames, 64)] + rng.normal(0.0, 0.5, (64, db.layout.width))
    result = search(db, queries, method=method, backend=backend, threads=threads)
    costs, expected = oracle(db, queries)
    assert_same(result, costs, expected, queries, db)


@settings(derandomize=True, max_examples=20, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(40, 400),
    st.floats(0.0, 3.0),
    st.sampled_from(RUNS),
)
def test_continuing_frame_bias_and_tag_filters_equal_brute_force(seed, frames, bias, run) -> None:
    backend, method, threads = run
    rng = np.random.default_rng(seed)
    db = random_database(rng, frames, ranges=3, tags=3, end_margin=int(rng.integers(0, 4)))
    count = 24
    queries = rng.normal(0.0, 1.5, (count, db.layout.width))
    current = rng.integers(-1, db.num_frames, count)
    include = rng.integers(0, 8, count).astype(np.uint64)
    exclude = rng.integers(0, 8, count).astype(np.uint64) & ~include
    result = search(
        db,
        queries,
        current=current,
        bias=bias,
        include=include,
        exclude=exclude,
        method=method,
        backend=backend,
        threads=threads,
    )
    costs, expected = oracle(db, queries, current, np.full(count, bias), include, exclude)
    assert_same(result, costs, expected, queries, db)


@settings(derandomize=True, max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 40), st.sampled_from(RUNS))
def test_the_continuing_frames_neighbours_are_left_out_as_brute_force_says(seed, near, run) -> None:
    backend, method, threads = run
    rng = np.random.default_rng(seed)
    db = random_database(rng, 400, ranges=4, end_margin=int(rng.integers(0, 4)))
    count = 24
    current = rng.integers(-1, db.num_frames, count)
    queries = db.normalized[np.clip(current + rng.integers(-3, 4, count), 0, db.num_frames - 1)]
    reach = np.where(rng.random(count) < 0.5, near, rng.integers(0, 60, count))
    result = search(
        db, queries, current=current, bias=0.01, near=reach, method=method, backend=backend, threads=threads
    )
    costs, expected = oracle(db, queries, current, np.full(count, 0.01), near=reach)
    assert_same(result, costs, expected, queries, db)
    moved = (result.frames >= 0) & (result.frames != current) & (current >= 0)
    same = db.frame_range(np.maximum(result.frames, 0)) == db.frame_range(np.maximum(current, 0))
    assert np.all(np.abs(result.frames - current)[moved & same] > reach[moved & same])


@pytest.mark.assets
@pytest.mark.parametrize(("backend", "method", "threads"), RUNS)
def test_real_queries_on_the_cmu_database_equal_brute_force(cmu_database, rng, backend, method, threads) -> None:
    """Queries as a controller makes them: a frame's pose columns, a trajectory bent away from its own."""
    db = cmu_database
    frames = rng.choice(np.flatnonzero(db.searchable), 96)
    raw = db.features[frames].copy()
    trajectory = db.layout.group("trajectory_positions").columns
    raw[:, trajectory] += rng.normal(0.0, 0.3, (96, trajectory.stop - trajectory.start))
    queries = db.normalize(raw)
    current = np.minimum(frames + 1, db.num_frames - 1)
    walk = db.tag_mask(["walk"])
    result = search(
        db, queries, current=current, bias=0.05, include=["walk"], method=method, backend=backend, threads=threads
    )
    costs, expected = oracle(db, queries, current, np.full(96, 0.05), walk)
    assert_same(result, costs, expected, queries, db)
    assert np.all(db.frame_tags[result.frames] & walk)


def test_a_continuing_frame_in_the_end_margin_plays_on_only_when_asked(rng) -> None:
    db = random_database(rng, 90, ranges=3, end_margin=5)
    margin = np.flatnonzero(~db.searchable)[:6]  # frames inside end margins
    queries = db.normalized[margin]  # each frame's own features: it costs 0
    for backend, method, threads in RUNS:
        kw = {"method": method, "backend": backend, "threads": threads, "bias": 0.5}
        played = search(db, queries, current=margin, play_on=True, **kw)
        np.testing.assert_array_equal(played.frames, margin)
        np.testing.assert_array_equal(played.costs, np.zeros(margin.size))
        left = search(db, queries, current=margin, play_on=np.arange(margin.size) % 2 == 0, **kw)
        np.testing.assert_array_equal(left.frames[::2], margin[::2])
        assert np.all(db.searchable[left.frames[1::2]])  # a continuing frame in the margin must be left


def test_the_bias_boundary_to_the_last_bit() -> None:
    """Another frame wins only when its cost plus the bias is below the continuing frame's: checked at nextafter."""
    rng = np.random.default_rng(1)
    db = random_database(rng, 60, ranges=1, end_margin=0, integers=True)  # exact costs
    query = db.normalized[10] + 0.0  # frame 10 costs 0
    cost_current = float(((db.normalized[20] - query) ** 2).sum())
    assert cost_current > 0
    assert cost_current == round(cost_current)
    for backend, method, threads in RUNS:
        kw = {"current": np.array([20]), "method": method, "backend": backend, "threads": threads}
        at = search(db, query[None], bias=cost_current, **kw)  # threshold exactly 0: nothing is below it
        below = search(db, query[None], bias=np.nextafter(cost_current, 0.0), **kw)
        assert at.frames[0] == 20, (backend, method)
        assert below.frames[0] == 10, (backend, method)


def test_the_end_margin_boundary() -> None:
    rng = np.random.default_rng(2)
    db = random_database(rng, 50, ranges=1, end_margin=5)
    assert db.searchable[44]
    assert not db.searchable[45]
    for backend, method, threads in RUNS:
        kw = {"method": method, "backend": backend, "threads": threads}
        assert search(db, db.normalized[[44]], **kw).frames[0] == 44
        assert search(db, db.normalized[[45]], **kw).frames[0] != 45
        kept = search(db, db.normalized[[3]], current=np.array([45]), bias=1e9, **kw)
        assert kept.frames[0] == 3  # a continuing frame in the margin is not kept, whatever the bias


def test_no_allowed_frame_gives_minus_one() -> None:
    rng = np.random.default_rng(3)
    db = random_database(rng, 40, ranges=1, tags=2)
    for backend, method, threads in RUNS:
        result = search(
            db, db.normalized[:2], include=["t0"], exclude=["t0"], method=method, backend=backend, threads=threads
        )
        assert np.all(result.frames == -1)
        assert np.all(np.isinf(result.costs))


def test_batch_shapes_follow_the_queries(rng) -> None:
    db = random_database(rng, 100)
    one = search(db, db.normalized[7])
    assert one.frames.shape == ()
    assert int(one.frames) == 7
    assert float(one.costs) == 0.0
    grid = search(db, db.normalized[:12].reshape(3, 4, -1), current=np.zeros((3, 4), dtype=int))
    assert grid.frames.shape == (3, 4)


def test_the_kdtree_bounds_every_frame_it_holds(rng) -> None:
    db = random_database(rng, 500, tags=3)
    index = search_index(db)
    tree = index.tree()
    leaf_rows = [r[r >= 0] for r in tree.blocks.rows]
    assert sorted(np.concatenate(leaf_rows)) == list(range(index.frames.size))
    assert all(0 < r.size <= LEAF_SIZE for r in leaf_rows)

    def rows_below(node: int) -> np.ndarray:
        if tree.leaves[node] >= 0:
            return leaf_rows[tree.leaves[node]]
        return np.concatenate([rows_below(int(c)) for c in tree.children[node]])

    rotated = tree.rotate(index.points)
    for node in range(len(tree.leaves)):
        rows = rows_below(node)
        assert np.all(rotated[rows] >= tree.lo[node] - 1e-12)
        assert np.all(rotated[rows] <= tree.hi[node] + 1e-12)
        assert tree.bits[node, 0] == np.bitwise_or.reduce(index.tags[rows])
        assert tree.bits[node, 1] == np.bitwise_and.reduce(index.tags[rows])
    for leaf, rows in enumerate(leaf_rows):
        np.testing.assert_array_equal(tree.blocks.points[leaf][:, : rows.size].T, index.points[rows])
        assert np.all(np.isinf(tree.blocks.points[leaf][:, rows.size :]))
    np.testing.assert_allclose(tree.axes.T @ tree.axes, np.eye(db.layout.width), atol=1e-12)


def test_blocks_and_groups_bound_their_frames(rng) -> None:
    db = random_database(rng, 301, tags=3)
    index = search_index(db)
    blocks, groups = index.blocks, index.groups
    for s, rows in enumerate(blocks.rows):
        kept = rows[rows >= 0]
        np.testing.assert_array_equal(kept, np.arange(16 * s, min(16 * s + 16, index.frames.size)))
        np.testing.assert_array_equal(blocks.points[s][:, : kept.size].T, index.points[kept])
        np.testing.assert_array_equal(blocks.lo[s], index.points[kept].min(axis=0))
        assert blocks.bits[s, 1] == np.bitwise_and.reduce(index.tags[kept])
    for g in range(groups.lo.shape[1]):
        rows = np.arange(64 * g, min(64 * g + 64, index.frames.size))
        np.testing.assert_array_equal(groups.hi[:, g], index.points[rows].max(axis=0))
        assert groups.bits[g, 0] == np.bitwise_or.reduce(index.tags[rows])
        for k in range(4):  # the group's blocks side by side, +inf past the last block
            s = 4 * g + k
            expected = blocks.lo[s] if s < blocks.lo.shape[0] else np.full(db.layout.width, np.inf)
            np.testing.assert_array_equal(groups.block_lo[g, :, k], expected)


def test_bad_searches_are_refused(rng) -> None:
    db = random_database(rng, 60)
    q = db.normalized[:2]
    cases = [
        ({"queries": q[:, :5]}, "queries must have shape"),
        ({"queries": np.full_like(q, np.nan)}, "queries must be finite"),
        ({"method": "annoy"}, "method must be one of"),
        ({"backend": "cuda"}, "backend must be one of"),
        ({"current": np.array([0.5, 1.0])}, "current must be integer frames"),
        ({"current": np.array([0, 1, 2])}, r"current must be integer frames or shaped \(2,\)"),
        ({"threads": 0}, "threads must be a positive integer"),
        ({"current": np.array([0, 60])}, r"current frames must be -1 or in \[0, 60\)"),
        ({"bias": -1.0}, "bias must be >= 0"),
        ({"bias": np.ones(3)}, "bias must be a number or shaped"),
        ({"bias": np.nan}, "bias must be finite"),
        ({"include": ["sprint"]}, "no tag 'sprint'"),
        ({"include": "t0"}, "include must be a list of tag names"),
        ({"exclude": np.array([1, 2])}, "exclude bit sets must be uint64"),
        ({"near": -1}, "near must be a whole number of frames >= 0"),
        ({"near": 0.5}, "near must be integer frames"),
        ({"play_on": 1}, "play_on must be booleans"),
        ({"play_on": np.ones(3, dtype=bool)}, "play_on must be booleans"),
    ]
    for changes, message in cases:
        arguments = {"queries": q, **changes}
        with pytest.raises(InvalidInputError, match=message):
            search(db, arguments.pop("queries"), **arguments)


def test_a_batch_equals_its_characters_one_at_a_time(rng) -> None:
    db = random_database(rng, 300, tags=3)
    queries = rng.normal(0.0, 1.0, (12, db.layout.width))
    current = rng.integers(-1, db.num_frames, 12)
    include = rng.integers(0, 8, 12).astype(np.uint64)
    for backend, method, threads in RUNS:
        kw = {"method": method, "backend": backend, "threads": threads}
        batch = search(db, queries, current=current, bias=0.3, include=include, **kw)
        for c in range(12):
            alone = search(db, queries[c], current=current[c], bias=0.3, include=include[c], **kw)
            assert int(alone.frames) == batch.frames[c]
            assert float(alone.costs) == batch.costs[c]
