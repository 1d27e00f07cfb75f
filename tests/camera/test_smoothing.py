"""Exponential smoothing, exact springs, and the frame-rate independence experiment (seed 002's naive form)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from engine.camera import (
    SPRING_HALF_LIFE_FACTOR,
    half_life_from_stiffness,
    smooth_position,
    smooth_position_naive,
    smooth_rotation,
    smooth_rotation_naive,
    smoothing_alpha,
    spring_position,
    spring_rotation,
    spring_stiffness_from_half_life,
    stiffness_from_half_life,
)
from engine.math import (
    quat_angle,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_yaw_pitch_roll,
    quat_identity,
    quat_multiply,
    quat_slerp,
    rotvec_from_quat,
)
from tests.helpers import assert_quat_allclose
from tests.strategies import unit_quaternions, vectors

frame_times = st.lists(st.floats(1e-4, 0.1), min_size=1, max_size=40)
half_lives = st.floats(0.01, 2.0)

# --- the frame-rate independence experiment ----------------------------------------------------------

HALF_LIFE = 0.15
FPS = (30, 60, 144)
COMMON_TIMES = 12  # every 1/6 s is a frame boundary at 30, 60 and 144 FPS
A = quat_from_yaw_pitch_roll(1.2, 0.4, 0.0)
B = quat_from_yaw_pitch_roll(-0.8, -0.2, 0.0)


def step_target(t: float) -> np.ndarray:
    """A cut-scene-like target: jumps to A at 0 s, to B at 1 s (both frame boundaries at every rate)."""
    return A if t < 1.0 else B


def moving_target(t: float) -> np.ndarray:
    """A continuously moving target, sampled at the middle of each frame."""
    return quat_from_yaw_pitch_roll(1.5 * t, 0.3 * np.sin(2.0 * t), 0.0)


def simulate(method: str, fps: int, target) -> np.ndarray:
    """Orientations at t = 1/6, 2/6, ..., 2 s of a camera starting at identity."""
    q, omega, dt = quat_identity(), np.zeros(3), 1.0 / fps
    out = []
    for frame in range(2 * fps):
        goal = target((frame + 0.5) * dt)
        if method == "exponential":
            q = smooth_rotation(q, goal, dt, half_life=HALF_LIFE)
        elif method == "spring":
            q, omega = spring_rotation(q, omega, goal, dt, half_life=HALF_LIFE)
        else:
            q = smooth_rotation_naive(q, goal, dt, smooth_factor=np.log(2.0) / HALF_LIFE)
        if (frame + 1) % (fps // 6) == 0:
            out.append(q)
    assert len(out) == COMMON_TIMES
    return np.array(out)


def spread_across_frame_rates(method: str, target) -> float:
    """Largest angle (rad) between any two frame rates' orientations at any common wall time."""
    runs = [simulate(method, fps, target) for fps in FPS]
    return max(float(quat_angle(a, b).max()) for a in runs for b in runs)


@pytest.mark.parametrize(
    ("target", "exact_bound", "naive_floor"), [(step_target, 1e-12, 0.02), (moving_target, 2e-3, 0.01)]
)
def test_frame_rate_independence_exponential_and_spring_vs_naive(target, exact_bound, naive_floor):
    spread = {method: spread_across_frame_rates(method, target) for method in ("exponential", "spring", "naive")}
    print(f"\n{target.__name__}: max angle between 30/60/144 FPS at common wall times, half-life {HALF_LIFE} s")
    for method, value in spread.items():
        print(f"  {method:12s} {value:.3e} rad ({np.degrees(value):.4f}°)")
    assert spread["exponential"] < exact_bound
    assert spread["spring"] < exact_bound
    assert spread["naive"] > naive_floor
    assert spread["naive"] > 10 * max(spread["exponential"], spread["spring"])


def test_naive_form_converges_faster_at_lower_frame_rates():
    remaining = [float(quat_angle(simulate("naive", fps, step_target)[5], A)) for fps in FPS]  # at t = 1 s
    assert remaining[0] < remaining[1] < remaining[2]  # 30 FPS closest: (1 - s·dt)ⁿ < exp(-s·n·dt)


# --- exponential smoothing ---------------------------------------------------------------------------


@given(st.floats(0.0, 10.0), st.floats(0.0, 100.0))
def test_alpha_is_one_minus_exp(dt, stiffness):
    assert smoothing_alpha(dt, stiffness=stiffness) == pytest.approx(1.0 - np.exp(-stiffness * dt), abs=1e-15)


@given(half_lives)
def test_half_life_conversions(half_life):
    assert smoothing_alpha(half_life, half_life=half_life) == pytest.approx(0.5, abs=1e-14)
    assert half_life_from_stiffness(stiffness_from_half_life(half_life)) == pytest.approx(half_life, rel=1e-14)


@given(unit_quaternions(), unit_quaternions(), frame_times, half_lives)
def test_remaining_angle_decays_as_exp_of_wall_time_for_any_frames(start, goal, dts, half_life):
    q = start
    for dt in dts:
        q = smooth_rotation(q, goal, dt, half_life=half_life)
    expected = float(quat_angle(start, goal)) * 0.5 ** (sum(dts) / half_life)
    assert float(quat_angle(q, goal)) == pytest.approx(expected, abs=1e-9)


@given(vectors(), vectors(), frame_times, half_lives)
def test_remaining_distance_decays_as_exp_of_wall_time(start, goal, dts, half_life):
    x = start
    for dt in dts:
        x = smooth_position(x, goal, dt, half_life=half_life)
    np.testing.assert_allclose(x - goal, (start - goal) * 0.5 ** (sum(dts) / half_life), atol=1e-9)


@given(unit_quaternions(), unit_quaternions(), st.floats(0.0, 0.2), st.floats(0.0, 20.0))
def test_naive_baseline_is_the_seed_formula(current, target, dt, factor):
    assert_quat_allclose(
        smooth_rotation_naive(current, target, dt, factor), quat_slerp(current, target, min(factor * dt, 1.0))
    )
    expected = current[:3] + min(factor * dt, 1.0) * (target[:3] - current[:3])
    np.testing.assert_allclose(smooth_position_naive(current[:3], target[:3], dt, factor), expected, atol=1e-12)


def test_exponential_smoothing_batches_over_cameras():
    rng = np.random.default_rng(4)
    current = Rotation.random(6, random_state=1).as_quat()
    target = Rotation.random(6, random_state=2).as_quat()
    dt = rng.uniform(0.0, 0.1, 6)
    batched = smooth_rotation(current, target, dt, stiffness=8.0)
    for i in range(6):
        assert_quat_allclose(batched[i], smooth_rotation(current[i], target[i], dt[i], stiffness=8.0))
    assert (np.sum(batched * current, axis=-1) >= 0).all()


# --- critically damped springs -----------------------------------------------------------------------


def test_spring_half_life_factor_solves_its_equation():
    x = SPRING_HALF_LIFE_FACTOR
    assert (1.0 + x) * np.exp(-x) == pytest.approx(0.5, abs=1e-15)
    assert spring_stiffness_from_half_life(2.0) == pytest.approx(x / 2.0)


def reference_spring(x0: np.ndarray, v0: np.ndarray, target: np.ndarray, omega: float, t: float):
    """Numerical integration of x'' = -2ω x' - ω² (x - target) with tight tolerances (scipy)."""

    def rhs(_, y):
        x, v = y[:3], y[3:]
        return np.concatenate((v, -2 * omega * v - omega**2 * (x - target)))

    sol = solve_ivp(rhs, (0.0, t), np.concatenate((x0, v0)), rtol=1e-11, atol=1e-12, method="DOP853")
    return sol.y[:3, -1], sol.y[3:, -1]


@given(vectors(), vectors(), vectors(), st.floats(0.1, 20.0), st.floats(0.0, 1.0))
def test_spring_position_matches_numerical_integration(x0, v0, target, omega, dt):
    x, v = spring_position(x0, v0, target, dt, stiffness=omega)
    x_ref, v_ref = reference_spring(x0, v0, target, omega, dt)
    np.testing.assert_allclose(x, x_ref, atol=1e-7)
    np.testing.assert_allclose(v, v_ref, atol=1e-6)


@given(vectors(), vectors(), vectors(), half_lives, frame_times)
def test_spring_steps_compose_exactly(x0, v0, target, half_life, dts):
    x, v = x0, v0
    for dt in dts:
        x, v = spring_position(x, v, target, dt, half_life=half_life)
    x_one, v_one = spring_position(x0, v0, target, sum(dts), half_life=half_life)
    np.testing.assert_allclose(x, x_one, atol=1e-9)
    np.testing.assert_allclose(v, v_one, atol=1e-8)


@given(half_lives)
def test_spring_closes_half_the_gap_from_rest_in_one_half_life(half_life):
    x, _ = spring_position(np.zeros(3), np.zeros(3), [2.0, 0.0, 0.0], half_life, half_life=half_life)
    np.testing.assert_allclose(x, [1.0, 0.0, 0.0], atol=1e-12)


def test_spring_is_stable_for_huge_steps_where_euler_diverges():
    omega, dt = 50.0, 0.5  # ω·dt = 25
    x, v = spring_position([1.0, 0.0, 0.0], [0.0, 0.0, 0.0], np.zeros(3), dt, stiffness=omega)
    assert np.abs(x).max() < 1e-8
    assert np.abs(v).max() < 1e-6
    euler_x, euler_v = 1.0, 0.0  # explicit Euler of the same ODE, for contrast
    for _ in range(10):
        euler_x, euler_v = euler_x + dt * euler_v, euler_v + dt * (-2 * omega * euler_v - omega**2 * euler_x)
    assert abs(euler_x) > 1e6


def test_spring_never_overshoots_from_rest():
    x, v, xs = np.zeros(3), np.zeros(3), []
    for _ in range(200):
        x, v = spring_position(x, v, [1.0, -2.0, 0.5], 1 / 60, half_life=0.1)
        xs.append(x)
    xs = np.array(xs)
    assert (xs[:, 0] <= 1.0).all()
    assert (xs[:, 1] >= -2.0).all()
    assert (np.diff(xs[:, 0]) >= 0).all()


@given(st.floats(-3.0, 3.0), st.floats(-5.0, 5.0), st.floats(0.5, 15.0), st.floats(0.0, 0.5))
def test_spring_rotation_about_one_axis_is_the_scalar_spring(angle, rate, omega, dt):
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    target = quat_from_axis_angle([1.0, 0.0, 0.0], 0.4)
    q0 = quat_multiply(quat_from_axis_angle(axis, angle), target)
    q, w = spring_rotation(q0, rate * axis, target, dt, stiffness=omega)
    x_ref, v_ref = reference_spring(np.array([angle, 0, 0]), np.array([rate, 0, 0]), np.zeros(3), omega, dt)
    if abs(x_ref[0]) < np.pi - 1e-6:
        assert_quat_allclose(q, quat_multiply(quat_from_axis_angle(axis, x_ref[0]), target), atol=1e-7)
    np.testing.assert_allclose(w, v_ref[0] * axis, atol=1e-6)


@given(unit_quaternions(), vectors(max_norm=1.0), unit_quaternions(), half_lives, frame_times)
def test_spring_rotation_steps_compose_for_a_held_target(q0, w0, target, half_life, dts):
    # the log/exp round trip is exact while the error stays under a half turn: with |e0| <= 2 rad,
    # |ω0| <= √3 rad/s and stiffness >= 0.84/s the error never exceeds 2 + 1.2·√3/(0.84·e) < 2.95 rad
    assume(float(quat_angle(q0, target)) <= 2.0)
    q, w = q0, w0
    for dt in dts:
        q, w = spring_rotation(q, w, target, dt, half_life=half_life)
    q_one, w_one = spring_rotation(q0, w0, target, sum(dts), half_life=half_life)
    assert_quat_allclose(q, q_one, atol=1e-9)
    np.testing.assert_allclose(w, w_one, atol=1e-8)


def test_spring_rotation_velocity_is_the_world_angular_velocity():
    q, w = quat_identity(), np.array([0.5, 2.0, -1.0])
    target = quat_from_yaw_pitch_roll(0.3, 0.2, 0.1)
    for _ in range(10):
        q, w = spring_rotation(q, w, target, 0.01, stiffness=6.0)
    h = 1e-6
    q_next, _ = spring_rotation(q, w, target, h, stiffness=6.0)
    q_prev, _ = spring_rotation(q, w, target, -0.0, stiffness=6.0)
    finite_difference = rotvec_from_quat(quat_multiply(q_next, quat_conjugate(q_prev))) / h
    np.testing.assert_allclose(finite_difference, w, atol=1e-5)
    assert (np.sum(q_next * q, axis=-1) >= 0).all()
