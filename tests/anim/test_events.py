"""Tests of engine.anim.events: loop-mode time mapping and marker crossing counts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.anim.events import Loop, clip_time, marker_crossings, wrap_raw


def enumerated_crossings(start: float, end: float, marker: float, duration: float, loop: Loop, fresh: bool) -> int:
    """Slow oracle: list the marker's raw positions explicitly and test each against the interval."""
    if loop == Loop.ONCE:
        positions = [marker]
    elif loop == Loop.REPEAT:
        positions = [marker + k * duration for k in range(-60, 60)]
    else:
        positions = sorted({s * marker + 2 * k * duration for k in range(-60, 60) for s in (1, -1)})
    count = 0
    for p in positions:
        if end >= start:
            inside = (start <= p if fresh else start < p) and p <= end
        else:
            inside = end <= p and (p <= start if fresh else p < start)
        count += inside
    return count


@given(
    st.floats(0.0, 1.0),
    st.floats(-6.0, 6.0),
    st.sampled_from([0.0, 0.25, 0.5, 1.0, 0.8125]),
    st.sampled_from(list(Loop)),
    st.booleans(),
)
def test_crossings_match_enumeration(start_fraction, travel, marker, loop, fresh):
    duration = 1.0
    period = 2.0 if loop == Loop.PING_PONG else 1.0
    start = start_fraction * period if loop != Loop.ONCE else start_fraction
    end = start + travel
    if loop == Loop.ONCE:
        end = float(np.clip(end, 0.0, duration))
    got = marker_crossings([start], [end], [marker], duration, loop, include_start=[fresh])[0, 0]
    assert got == enumerated_crossings(start, end, marker, duration, loop, fresh)


@pytest.mark.parametrize(
    ("start", "end", "loop", "expected"),
    [
        (0.0, 0.5, Loop.REPEAT, [0, 1, 0]),  # marker at 0 excluded (not fresh), 0.5 included
        (0.5, 1.0, Loop.REPEAT, [1, 0, 1]),  # 1.0 is the next loop's 0; 0.5 was the previous frame's
        (0.9, 3.1, Loop.REPEAT, [3, 2, 2]),  # two wraps in one update (1, 2, 3 and 1.5, 2.5 and 1.9 2.9)
        (0.3, -1.3, Loop.REPEAT, [2, 1, 2]),  # backwards: 0, -1 and -0.5 and -0.1, -1.1
        (0.5, 1.5, Loop.PING_PONG, [0, 1, 2]),  # 0.9 up and down (1.1); 0.5 on the way down (1.5)
        (1.5, 2.5, Loop.PING_PONG, [1, 1, 0]),  # the turning point 2.0 ≡ clip time 0 counts once
        (0.0, 1.0, Loop.ONCE, [0, 1, 1]),
        (1.0, 1.0, Loop.ONCE, [0, 0, 0]),  # clamped at the end: nothing more
    ],
)
def test_crossing_table(start, end, loop, expected):
    markers = [0.0, 0.5, 0.9]
    assert marker_crossings([start], [end], markers, 1.0, loop)[0].tolist() == expected


def test_fresh_start_counts_a_marker_at_the_start():
    assert marker_crossings([0.0, 0.0], [0.2, 0.2], [0.0], 1.0, Loop.REPEAT, include_start=[True, False]).tolist() == [
        [1],
        [0],
    ]
    assert marker_crossings([1.0], [0.8], [1.0], 1.0, Loop.ONCE, include_start=True).tolist() == [[1]]


def test_consecutive_updates_never_double_count():
    """Chopping one travel into frames counts each crossing once, forwards and backwards.

    Dyadic steps land exactly on markers and loop ends (the boundary cases); 0.1 does not.
    """
    markers = np.array([0.0, 0.25, 0.5, 0.75])
    for loop in (Loop.REPEAT, Loop.PING_PONG):
        for step in (0.25, -0.25, 0.125, -0.375, 1.3125, 0.1):
            raw, total = 0.0, np.zeros(4, dtype=int)
            end_unwrapped = 0.0
            for _ in range(37):
                end = raw + step
                total += marker_crossings([raw], [end], markers, 1.0, loop)[0]
                raw = float(wrap_raw(np.array([end]), 1.0, loop)[0][0])
                end_unwrapped += step
            whole = marker_crossings([0.0], [end_unwrapped], markers, 1.0, loop)[0]
            assert total.tolist() == whole.tolist(), (loop, step)


def test_clip_time_and_wrap():
    raw, loops = wrap_raw(np.array([2.5, -0.25, 1.5, 3.5]), 1.0, np.array([Loop.REPEAT, Loop.REPEAT, Loop.ONCE, 2]))
    assert raw.tolist() == [0.5, 0.75, 1.0, 1.5]
    assert loops.tolist() == [2.0, -1.0, 0.0, 1.0]
    assert clip_time(np.array([0.25, 1.25, 1.75]), 1.0, Loop.PING_PONG).tolist() == [0.25, 0.75, 0.25]
    raw, loops = wrap_raw(np.array([0.7]), 0.0, Loop.REPEAT)  # a zero-length clip stays at 0
    assert raw.tolist() == [0.0]
    assert loops.tolist() == [0.0]


def _boundaries(duration: float, loop: Loop) -> list[float]:
    """Raw times where the stored range wraps or clamps, a few periods either side of 0."""
    if loop == Loop.ONCE:
        return [0.0, duration]
    period = 2.0 * duration if loop == Loop.PING_PONG else duration
    points = [k * period for k in range(-3, 4)]
    if loop == Loop.PING_PONG:
        points += [k * period + duration for k in range(-3, 3)]  # the turning points
    return points


@pytest.mark.parametrize("loop", list(Loop))
@pytest.mark.parametrize("duration", [1.0, 0.7, 1.2, 3.0, 0.1])
def test_wrap_raw_keeps_time_and_loop_count_consistent_an_ulp_around_every_boundary(loop, duration):
    """``raw + loops · period`` is the unwrapped time (to rounding), ``raw`` in range, ``loops`` whole.

    The wrap used to fold a time that rounded onto the period back to 0 without counting the
    loop: ``end = -ulp`` gave ``raw = 0`` but ``loops = -1``, a whole loop of root motion.
    """
    period = 2.0 * duration if loop == Loop.PING_PONG else duration
    ends = []
    for point in _boundaries(duration, loop):
        ends += [np.nextafter(point, -np.inf), point, np.nextafter(point, np.inf)]
        ends += [np.nextafter(np.nextafter(point, -np.inf), -np.inf), np.nextafter(np.nextafter(point, np.inf), np.inf)]
    end = np.array(ends)
    raw, loops = wrap_raw(end, duration, loop)
    assert np.all(loops == np.round(loops))
    if loop == Loop.ONCE:
        np.testing.assert_array_equal(raw, np.clip(end, 0.0, duration))
        assert not loops.any()
        return
    assert np.all((raw >= 0.0) & (raw < period))
    tolerance = 4.0 * np.finfo(float).eps * np.maximum(np.abs(end), period)
    assert np.all(np.abs(raw + loops * period - end) <= tolerance), np.abs(raw + loops * period - end).max()
