"""Foot locking against closed forms: held where contact starts, let go with the offset halving per half-life."""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim.ik import FootLock
from engine.errors import InvalidInputError

RATES = [30.0, 60.0, 144.0]


def sliding(lock: FootLock, dt: float, seconds: float, velocity: np.ndarray, start: np.ndarray) -> list[np.ndarray]:
    """A foot on the ground sliding at ``velocity``: the targets of every step."""
    return [lock.update(dt, [start + k * dt * velocity], [0.0])[0] for k in range(round(seconds / dt) + 1)]


@pytest.mark.parametrize("fps", RATES)
def test_a_standing_foot_that_slides_is_held_where_it_was_put_down(fps: float) -> None:
    lock = FootLock((1,))
    start = np.array([0.3, 0.05, -0.2])
    targets = sliding(lock, 1.0 / fps, 0.5, np.array([0.2, 0.0, 0.1]), start)  # 22 cm/s, 11 cm in 0.5 s
    assert lock.locked[0]
    np.testing.assert_allclose(np.array(targets), np.tile(start, (len(targets), 1)), atol=1e-15)


@pytest.mark.parametrize("fps", RATES)
def test_a_lifted_foot_is_let_go_with_the_offset_halving_every_half_life(fps: float) -> None:
    dt, half_life = 1.0 / fps, 0.1
    lock = FootLock((1,), half_life=half_life)
    sliding(lock, dt, 0.25, np.array([0.24, 0.0, 0.0]), np.zeros(3))
    lifted = np.array([0.24 * 0.25, 0.2, 0.0])  # 20 cm up: contact ends this step
    target = lock.update(dt, [lifted], [0.2])[0]
    np.testing.assert_allclose(target[[0, 2]], [0.0, 0.0], atol=1e-15)  # no jump: still the lock's place
    assert target[1] == lifted[1]  # the height follows the animation
    assert not lock.locked[0]
    steps = round(half_life * fps)  # 3, 6 and 14.4 → 14 steps: compare with the exact decay of the time spent
    for _ in range(steps):
        target = lock.update(dt, [lifted], [0.2])[0]
    offset = target[0] - lifted[0]
    np.testing.assert_allclose(offset, -lifted[0] * 0.5 ** (steps * dt / half_life), rtol=1e-12)


def test_a_foot_the_body_walks_away_from_is_let_go_once_per_contact() -> None:
    dt = 1.0 / 60.0
    lock = FootLock((1,), reach=0.1, speed=0.5)
    velocity = np.array([0.3, 0.0, 0.0])
    targets = sliding(lock, dt, 0.5, velocity, np.zeros(3))  # 15 cm of drift: let go after 10 cm
    held = [k for k, t in enumerate(targets) if np.allclose(t, 0.0)]
    assert held == list(range(len(held)))
    assert 0.1 / 0.3 - 2 * dt < held[-1] * dt <= 0.1 / 0.3 + dt
    assert not lock.locked[0]  # still in contact, but not locked again until the next contact
    lock.update(dt, [np.array([0.5, 0.3, 0.0])], [0.3])  # lifted
    target = lock.update(dt, [np.array([0.5, 0.0, 0.0])], [0.0])  # put down: a new contact locks
    assert lock.locked[0]
    np.testing.assert_allclose(lock.anchors[0], target[0], atol=1e-15)


def test_a_crowd_of_feet_equals_each_foot_alone() -> None:
    rng = np.random.default_rng(5)
    steps, count = 90, 6
    feet = np.cumsum(rng.normal(0.0, 0.01, (steps, count, 2, 3)), axis=0)
    heights = np.abs(rng.normal(0.0, 0.05, (steps, count, 2)))
    crowd = FootLock((count, 2))
    alone = [FootLock((1,)) for _ in range(2 * count)]
    for k in range(steps):
        together = crowd.update(1 / 60, feet[k], heights[k]).reshape(-1, 3)
        for f, lock in enumerate(alone):
            c, side = divmod(f, 2)
            np.testing.assert_array_equal(
                lock.update(1 / 60, feet[k, c, side][None], heights[k, c, side][None])[0], together[f]
            )


def test_bad_locks_and_updates_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="half_life must be a positive number"):
        FootLock((2,), half_life=0.0)
    with pytest.raises(InvalidInputError, match="up must be a non-zero 3-vector"):
        FootLock((2,), up=(0.0, 0.0, 0.0))
    lock = FootLock((2,))
    with pytest.raises(InvalidInputError, match=r"feet must be \(2, 3\) and heights \(2,\)"):
        lock.update(1 / 60, np.zeros((3, 3)), np.zeros(3))
    with pytest.raises(InvalidInputError, match="feet must be finite"):
        lock.update(1 / 60, np.full((2, 3), np.nan), np.zeros(2))
    with pytest.raises(InvalidInputError, match="dt must be a number of seconds >= 0"):
        lock.update(-1.0, np.zeros((2, 3)), np.zeros(2))
