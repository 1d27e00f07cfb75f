"""UpdateSchedule (animation LOD): who is due when, and the "no pop" guarantees of engine.backend.lod."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from engine.backend import FrameState, UpdateSchedule, evaluate_frame
from engine.errors import InvalidInputError


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_rates_stagger_characters_evenly(backend):
    schedule = UpdateSchedule(400).set_rates(np.repeat([1, 2, 4, 3], 100))
    np.testing.assert_array_equal(schedule.due(backend=backend), np.arange(400))  # first frame: everyone
    schedule.advance()
    counts = np.zeros(400, dtype=int)
    for _ in range(12):  # a common multiple of 1, 2, 3 and 4
        due = schedule.due(backend=backend)
        np.testing.assert_array_equal(due, np.flatnonzero((np.arange(400) + schedule.frame) % schedule.rates == 0))
        assert np.all(np.diff(due) > 0)
        counts[due] += 1
        # per frame: all 100 at rate 1, half of rate 2, a quarter of rate 4, a third of rate 3
        assert abs(due.size - (175 + 100 / 3)) <= 1
        schedule.advance()
    np.testing.assert_array_equal(counts, np.repeat([12, 6, 3, 4], 100))


def test_rates_by_distance():
    schedule = UpdateSchedule(6).set_rates_by_distance([0.0, 9.99, 10.0, 29.0, 30.0, 1e6])
    np.testing.assert_array_equal(schedule.rates, [1, 1, 2, 2, 4, 4])
    schedule.set_rates_by_distance(np.array([5.0, 50, 500, 5, 50, 500]), limits=(20.0, 100.0), rates=(1, 3, 8))
    np.testing.assert_array_equal(schedule.rates, [1, 3, 8, 1, 3, 8])


def test_due_allocates_nothing():
    schedule = UpdateSchedule(10_000).set_rates(np.tile([1, 2, 4, 4], 2500))
    schedule.due(backend="numba")
    tracemalloc.start()
    for _ in range(8):
        schedule.advance().due(backend="numba")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2_000  # the 10,000-entry index buffers would be 80 kB


def test_bad_rates_raise():
    schedule = UpdateSchedule(4)
    with pytest.raises(InvalidInputError, match="rates must be positive integers"):
        schedule.set_rates([1, 0, 2, 4])
    with pytest.raises(InvalidInputError, match="rates must be positive integers"):
        schedule.set_rates([1.5, 1, 1, 1])
    with pytest.raises(InvalidInputError, match=r"distances must have shape \(4,\)"):
        schedule.set_rates_by_distance([1.0, 2.0])
    with pytest.raises(InvalidInputError, match="need ascending limits"):
        schedule.set_rates_by_distance([1.0] * 4, limits=(30.0, 10.0))
    with pytest.raises(InvalidInputError, match="characters must be at least 1"):
        UpdateSchedule(0)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_no_pop_when_rates_change(backend, mannequin_bank, rng):
    """A crowd under LOD with rates changing at random, against the same crowd at full rate.

    Checked every frame, for every character: its palette is bit-identical to the full-rate
    palette of the frame it was last updated on (an update shows the exact pose of the current
    time: LOD never moves time), and that frame is less than its current rate ago (never staler
    than its rate allows, also right after a rate change).
    """
    count, layers = 48, 2
    lod, full = FrameState(mannequin_bank, layers, count), FrameState(mannequin_bank, layers, count)
    for state in (lod, full):
        state.play(0, "walk").play(1, "run")
    schedule = UpdateSchedule(count).set_rates(rng.choice([1, 2, 4], count))
    shown, exact = lod.new_palette(), full.new_palette()
    times = rng.uniform(0.0, 1.0, (layers, count))
    weights = np.full((layers, count), 0.5)
    history = {}
    last_update = np.full(count, -1)
    for frame in range(60):
        times += 1.0 / 60.0  # every clock advances every frame, updated or not
        if frame % 7 == 3:  # distances change: some characters switch rate
            movers = rng.choice(count, 10, replace=False)
            schedule.set_rates(rng.choice([1, 2, 4], 10), movers)
        due = schedule.due(backend=backend)
        evaluate_frame(lod, times, weights, out=shown, characters=due, backend=backend)
        evaluate_frame(full, times, weights, out=exact, backend=backend)
        history[frame] = exact.copy()
        last_update[due] = frame
        assert np.all(frame - last_update < schedule.rates), "a character is staler than its rate"
        for c in range(count):
            np.testing.assert_array_equal(shown[c], history[last_update[c]][c])
        schedule.advance()


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_lowering_the_rate_updates_the_stale_ones_at_once(backend):
    schedule = UpdateSchedule(8).set_rates(np.full(8, 4))
    schedule.due(backend=backend)
    for _ in range(3):
        schedule.advance().due(backend=backend)
    # last updates so far: frame 0 for characters 0 and 4, 3 for 1 and 5, 2 for 2 and 6, 1 for 3 and 7
    schedule.advance().set_rates(np.full(8, 2))
    np.testing.assert_array_equal(schedule.due(backend=backend), [0, 2, 3, 4, 6, 7])
