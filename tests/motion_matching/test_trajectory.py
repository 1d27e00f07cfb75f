"""The desired trajectory (springs) at any frame rate, and the query built from a pose and a trajectory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from engine.anim.clip_velocity import sample_with_velocity
from engine.anim.pose import Pose
from engine.anim.velocity import PoseVelocity
from engine.camera.spring import spring_rotation, spring_stiffness_from_half_life
from engine.errors import InvalidInputError
from engine.motion_matching import Trajectory, advance_trajectory, horizon_times, predict_trajectory, query_features
from engine.motion_matching import search as run_search

HALF_LIFE = 0.27


def _moving(count: int, rng: np.random.Generator) -> Trajectory:
    return Trajectory(
        rng.normal(size=(count, 3)) * [1, 0, 1],
        rng.normal(size=(count, 3)) * [1, 0, 1],
        rng.normal(size=(count, 3)) * [1, 0, 1],
        rng.uniform(-3, 3, count),
        rng.normal(size=count),
    )


def _ode(state: Trajectory, desired: np.ndarray, seconds: float) -> np.ndarray:
    """Positions after ``seconds`` by integrating x' = v, v' = a, a' = −2ω a − ω² (v − v_desired) numerically."""
    omega = float(spring_stiffness_from_half_life(HALF_LIFE))

    def rates(_: float, y: np.ndarray) -> np.ndarray:
        _, v, a = y.reshape(3, -1, 3)
        return np.concatenate((v, a, -2 * omega * a - omega**2 * (v - desired))).ravel()

    y0 = np.concatenate((state.positions, state.velocities, state.accelerations)).ravel()
    solution = solve_ivp(rates, (0.0, seconds), y0, rtol=1e-11, atol=1e-12)
    return solution.y[:, -1].reshape(3, -1, 3)[0]


def test_positions_are_the_velocity_springs_exact_integral(rng) -> None:
    state = _moving(5, rng)
    desired = rng.normal(size=(5, 3)) * [1, 0, 1]
    for seconds in (0.0, 1e-6, 0.1, 1.0, 4.0):
        after = advance_trajectory(state, desired, np.zeros(5), seconds, velocity_half_life=HALF_LIFE)
        np.testing.assert_allclose(after.positions, _ode(state, desired, seconds), atol=1e-8)


@settings(derandomize=True, max_examples=12, deadline=None)
@given(st.sampled_from([30.0, 60.0, 144.0, 0.0]), st.integers(0, 2**32 - 1))
def test_any_frame_rate_or_random_steps_reach_the_same_state(fps, seed) -> None:
    """Held requests: 1 s in steps of 1/30, 1/60, 1/144 s or random dt equals one step of 1 s."""
    rng = np.random.default_rng(seed)
    state = _moving(3, rng)
    desired, yaw = rng.normal(size=(3, 3)) * [1, 0, 1], rng.uniform(-3, 3, 3)
    steps = np.full(int(fps), 1.0 / fps) if fps else np.diff(np.sort(np.r_[0.0, rng.uniform(0, 1, 40), 1.0]))
    stepped = state
    for dt in steps:
        stepped = advance_trajectory(stepped, desired, yaw, dt)
    once = advance_trajectory(state, desired, yaw, 1.0)
    np.testing.assert_allclose(stepped.positions, once.positions, atol=1e-10)
    np.testing.assert_allclose(stepped.velocities, once.velocities, atol=1e-10)
    np.testing.assert_allclose(stepped.accelerations, once.accelerations, atol=1e-10)
    np.testing.assert_allclose(stepped.yaws, once.yaws, atol=1e-10)
    np.testing.assert_allclose(stepped.yaw_rates, once.yaw_rates, atol=1e-10)


def test_the_prediction_is_where_advancing_would_go(rng) -> None:
    state = _moving(4, rng)
    desired, yaw = rng.normal(size=(4, 3)) * [1, 0, 1], rng.uniform(-3, 3, 4)
    times = np.array([1 / 3, 2 / 3, 1.0])
    positions, yaws = predict_trajectory(state, desired, yaw, times)
    assert positions.shape == (4, 3, 3)
    assert yaws.shape == (4, 3)
    for k, t in enumerate(times):
        later = advance_trajectory(state, desired, yaw, t)
        np.testing.assert_allclose(positions[:, k], later.positions, atol=1e-12)
        np.testing.assert_allclose(yaws[:, k], later.yaws, atol=1e-12)


def test_steady_motion_goes_straight_and_a_turn_settles() -> None:
    state = Trajectory(np.zeros((1, 3)), np.array([[0.0, 0.0, 1.5]]), np.zeros((1, 3)), np.zeros(1), np.zeros(1))
    positions, _ = predict_trajectory(state, [0.0, 0.0, 1.5], 0.0, [0.5, 1.0])
    np.testing.assert_allclose(positions[0], [[0.0, 0.0, 0.75], [0.0, 0.0, 1.5]], atol=1e-14)
    _, turned = predict_trajectory(state, [0.0, 0.0, 1.5], np.pi / 2, [HALF_LIFE, 20.0])
    np.testing.assert_allclose(turned[0], [np.pi / 4, np.pi / 2], atol=1e-9)  # half-way after one half-life


def test_the_yaw_spring_is_the_camera_rotation_spring_about_one_axis(rng) -> None:
    """For turns about +Y, the spring on the yaw equals engine.camera's spring_rotation on yaw quaternions."""
    state = _moving(6, rng)
    wanted = rng.uniform(-4, 4, 6)
    after = advance_trajectory(state, np.zeros(3), wanted, 0.4, facing_half_life=0.3)
    rotation = Rotation.from_rotvec(np.outer(state.yaws, [0.0, 1.0, 0.0])).as_quat()
    target = Rotation.from_rotvec(np.outer(wanted, [0.0, 1.0, 0.0])).as_quat()
    spin = np.outer(state.yaw_rates, [0.0, 1.0, 0.0])
    q, w = spring_rotation(rotation, spin, target, 0.4, half_life=0.3)
    expected = Rotation.from_rotvec(np.outer(after.yaws, [0.0, 1.0, 0.0])).as_quat()
    np.testing.assert_allclose(np.abs(np.sum(q * expected, axis=-1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(w[:, 1], after.yaw_rates, atol=1e-10)


def test_the_facing_turns_the_short_way_round() -> None:
    state = Trajectory.at_rest(np.zeros((2, 3)), np.array([3.0, 0.0]))
    _, yaws = predict_trajectory(state, np.zeros(3), np.array([-3.0, 2 * np.pi + 0.5]), [30.0])
    np.testing.assert_allclose(yaws[:, 0], [2 * np.pi - 3.0, 0.5], atol=1e-9)  # +0.28 rad, not −6 rad; and 0.5


def test_desired_velocity_is_kept_on_the_ground() -> None:
    state = Trajectory.at_rest(np.zeros((1, 3)), np.zeros(1))
    after = advance_trajectory(state, [0.0, 5.0, 1.0], 0.0, 0.5)
    assert after.positions[0, 1] == 0.0
    assert after.velocities[0, 1] == 0.0


def test_bad_trajectory_input_is_refused() -> None:
    state = Trajectory.at_rest(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(InvalidInputError, match="desired_velocity must be"):
        advance_trajectory(state, np.zeros((3, 3)), 0.0, 0.1)
    with pytest.raises(InvalidInputError, match="dt must be one number"):
        advance_trajectory(state, np.zeros(3), 0.0, -0.1)
    with pytest.raises(InvalidInputError, match="times must be a 1-D array"):
        predict_trajectory(state, np.zeros(3), 0.0, [[0.1]])
    with pytest.raises(InvalidInputError, match="positions must be"):
        Trajectory.at_rest(np.zeros(3), np.zeros(1))
    with pytest.raises(InvalidInputError, match=r"a trajectory of 2 characters needs"):
        Trajectory(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), np.zeros(3), np.zeros(2))
    with pytest.raises(InvalidInputError, match="yaw_rates must be finite"):
        Trajectory(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), np.zeros(2), np.array([0.0, np.inf]))
    with pytest.raises(InvalidInputError, match="desired_velocity must be finite"):
        advance_trajectory(state, [np.nan, 0.0, 0.0], 0.0, 0.1)


def test_a_query_from_a_played_frame_and_its_own_future_finds_that_frame(turning_database) -> None:
    """The runtime loop's pieces end to end: sample a frame, predict nothing new (the database's own future)."""
    db = turning_database
    frames = np.array([30, 100, 250, 290])  # each with its horizons inside its range
    ranges = db.frame_range(frames)
    poses, velocities = [], []
    for frame, r in zip(frames, ranges, strict=True):
        p, v = sample_with_velocity(db.clip(int(r)), db.skeleton, db.frame_time([frame]))
        poses.append(p)
        velocities.append(v)
    pose = Pose(*(np.concatenate([getattr(p, a) for p in poses]) for a in ("translations", "rotations", "scales")))
    velocity = PoseVelocity(
        *(np.concatenate([getattr(v, a) for v in velocities]) for a in ("linear", "angular", "scaling"))
    )
    ahead = frames[:, None] + np.asarray(db.layout.horizons)[None, :]
    query = query_features(
        db,
        pose,
        velocity,
        db.root_velocities[frames],
        db.root_yaw_rates[frames],
        db.root_positions[frames],
        db.root_yaws[frames],
        db.root_positions[ahead],
        db.root_yaws[ahead],
    )
    np.testing.assert_allclose(query, db.normalized[frames], atol=1e-9)
    assert list(run_search(db, query).frames) == list(frames)
    np.testing.assert_allclose(horizon_times(db), [1 / 3, 2 / 3, 1.0])
