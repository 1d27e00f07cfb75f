"""Tests of engine.anim.inertialization: Bollo's quintic against numpy.polynomial, the spring against an ODE
solver, and transitions between real clips checked by finite differences at 240 Hz."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial import Polynomial
from scipy.integrate import solve_ivp
from scipy.spatial.transform import Rotation

from engine.anim import Pose, sample
from engine.anim.clip_velocity import sample_velocity
from engine.anim.inertialization import (
    SPRING_RATE,
    dead_blend,
    extrapolate,
    offset_pose,
    offset_velocity,
    pose_offsets,
    quintic_decay,
    quintic_offset,
    quintic_rates,
    smoothstep,
    spring_decay,
    spring_offset,
    spring_rates,
)
from engine.anim.velocity import PoseVelocity, pose_velocity
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.procedural.mannequin import build_mannequin
from tests import strategies
from tests.helpers import assert_quat_allclose

HZ = 240.0


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def bollo_polynomial(x0: float, v0: float, a0: float, t1: float) -> Polynomial:
    """The quintic with x, x', x'' = (x0, v0, a0) at 0 and (0, 0, 0) at t1, solved as a 6×6 system."""
    rows = []
    for t in (0.0, t1):
        rows.append([t**k for k in range(6)])
        rows.append([k * t ** (k - 1) if k >= 1 else 0.0 for k in range(6)])
        rows.append([k * (k - 1) * t ** (k - 2) if k >= 2 else 0.0 for k in range(6)])
    values = [x0, v0, a0, 0.0, 0.0, 0.0]
    order = [0, 1, 2, 3, 4, 5]
    return Polynomial(np.linalg.solve(np.array(rows)[order], np.array(values)))


# (x0, v0, T) → t1 = min(T, -5 x0 / v0) for v0 < 0, else T; a0 = max(0, (-8 v0 t1 - 20 x0) / t1²)
T1_CASES = [
    (1.0, -2.0, 0.5, 0.5, 0.0),  # bound 2.5 s > T; (8 - 20) / 0.25 < 0: a0 clamped to 0
    (1.0, -4.0, 1.0, 1.0, 12.0),  # bound 1.25 s > T; a0 = 32 - 20
    (1.0, -20.0, 0.5, 0.25, 320.0),  # the bound cuts the duration: -5·1/-20 = 0.25; a0 = (40 - 20) / 0.0625
    (0.1, -10.0, 1.0, 0.05, 800.0),  # t1 = 0.05; a0 = (4 - 2) / 0.0025
    (1.0, 0.0, 0.3, 0.3, 0.0),  # at rest: T, a0 clamped to 0
    (1.0, 3.0, 0.4, 0.4, 0.0),  # moving away: T, a0 clamped to 0
    (2.0, -8.0, 1.0, 1.0, 24.0),  # -5·2/-8 = 1.25 > 1; a0 = 64 - 40
]


def expected_t1_a0(x0, v0, T):
    t1 = min(T, -5.0 * x0 / v0) if v0 < 0 else T
    return t1, max(0.0, (-8.0 * v0 * t1 - 20.0 * x0) / t1**2)


@pytest.mark.parametrize(("x0", "v0", "T", "t1", "a0"), T1_CASES)
def test_end_time_and_acceleration_table(x0, v0, T, t1, a0):
    decay = quintic_decay([[0.0, 0.0, x0]], [[0.0, 0.0, v0]], T)
    assert decay.end[0] == pytest.approx(t1, rel=1e-12)
    assert decay.acceleration[0] == pytest.approx(a0, rel=1e-12, abs=1e-12)
    assert expected_t1_a0(x0, v0, T) == pytest.approx((t1, a0))


@given(st.floats(1e-3, 2.0), st.floats(-30.0, 10.0), st.floats(0.05, 2.0), strategies.unit_vectors())
def test_quintic_matches_the_polynomial_through_its_six_conditions(x0, v0, T, axis):
    t1, a0 = expected_t1_a0(x0, v0, T)
    decay = quintic_decay(x0 * axis, v0 * axis, T)
    reference = bollo_polynomial(x0, v0, a0, t1)
    t = np.linspace(0.0, t1, 41)
    along = quintic_offset(decay, t) @ axis
    np.testing.assert_allclose(along, reference(t), atol=1e-9 * max(1.0, x0))
    speed, accel = quintic_rates(decay, t)
    np.testing.assert_allclose(speed @ axis, reference.deriv()(t), atol=1e-7 * max(1.0, abs(v0), x0 / t1))
    np.testing.assert_allclose(accel @ axis, reference.deriv(2)(t), atol=1e-6 * max(1.0, a0, x0 / t1**2))
    # the starting conditions and the end (zero, flat) conditions
    np.testing.assert_allclose(quintic_offset(decay, 0.0), x0 * axis, atol=1e-15)
    start_speed, start_accel = quintic_rates(decay, 0.0)
    np.testing.assert_allclose(start_speed, v0 * axis, atol=1e-12)
    np.testing.assert_allclose(start_accel @ axis, a0, rtol=1e-9, atol=1e-9)
    end_speed, end_accel = quintic_rates(decay, t1)
    assert quintic_offset(decay, t1) @ axis == pytest.approx(0.0, abs=1e-15)
    assert end_speed @ axis == pytest.approx(0.0, abs=1e-15)
    assert end_accel @ axis == pytest.approx(0.0, abs=1e-15)
    assert np.all(quintic_offset(decay, T) == 0.0)
    assert np.all(along >= -1e-15 * x0)  # never overshoots (to rounding): the -5 x0 / v0 bound


@given(strategies.vectors(2.0), strategies.vectors(20.0), st.one_of(st.just(0.0), st.floats(1e-3, 2.0)))
def test_any_offset_and_velocity_start_right_and_end_at_zero(offset, velocity, T):
    decay = quintic_decay(offset, velocity, T)
    np.testing.assert_allclose(quintic_offset(decay, 0.0), offset if T > 0 else 0.0, atol=1e-12)
    if T > 0:
        np.testing.assert_allclose(quintic_rates(decay, 0.0)[0], velocity, atol=1e-9)
    for after in (T, np.nextafter(T, 10.0), T + 1.0):
        assert np.all(quintic_offset(decay, after) == 0.0)
        assert np.all(quintic_rates(decay, after)[0] == 0.0)


def test_perpendicular_velocity_is_kept_and_decays():
    decay = quintic_decay([1.0, 0.0, 0.0], [0.0, 4.0, 0.0], 0.5)
    speed, _ = quintic_rates(decay, 0.0)
    np.testing.assert_allclose(speed, [0.0, 4.0, 0.0], atol=1e-15)
    t = np.linspace(0.0, 0.5, 101)
    sideways = quintic_offset(decay, t)[:, 1]
    assert np.all(sideways >= 0.0)
    assert sideways.max() > 0.05
    assert sideways[-1] == 0.0


def test_zero_offset_moving_starts_along_its_velocity():
    decay = quintic_decay([0.0, 0.0, 0.0], [0.0, 0.0, -3.0], 0.4)
    np.testing.assert_allclose(decay.axis, [0.0, 0.0, -1.0])
    np.testing.assert_allclose(quintic_rates(decay, 0.0)[0], [0.0, 0.0, -3.0], atol=1e-15)
    still = quintic_decay(np.zeros(3), np.zeros(3), 0.4)
    assert np.all(quintic_offset(still, np.linspace(0.0, 1.0, 5)) == 0.0)


@settings(max_examples=15)  # an ODE solve per example
@given(strategies.vectors(2.0), strategies.vectors(10.0), st.floats(0.02, 1.0))
def test_spring_solves_the_critically_damped_ode(offset, velocity, half_life):
    decay = spring_decay(offset, velocity, half_life)
    y = SPRING_RATE / half_life

    def ode(_t, state):
        return np.concatenate((state[3:], -2.0 * y * state[3:] - y * y * state[:3]))

    t = np.linspace(0.0, 3.0 * half_life, 13)
    solved = solve_ivp(ode, (0.0, t[-1]), np.concatenate((offset, velocity)), t_eval=t, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(spring_offset(decay, t), solved.y[:3].T, atol=1e-8)
    np.testing.assert_allclose(spring_rates(decay, t)[0], solved.y[3:].T, atol=1e-7)


def test_spring_half_life_halves_an_offset_at_rest():
    decay = spring_decay([[2.0, 0.0, -4.0]], [[0.0, 0.0, 0.0]], 0.15)
    np.testing.assert_allclose(spring_offset(decay, 0.15), [[1.0, 0.0, -2.0]], rtol=1e-14)
    assert np.exp(-SPRING_RATE) * (1 + SPRING_RATE) == pytest.approx(0.5, rel=1e-15)


def test_spring_accelerations_are_the_derivative_of_its_velocity():
    decay = spring_decay([[0.3, -0.1, 0.2]], [[-2.0, 1.0, 0.0]], 0.1)
    h = 1e-6
    for t in (0.0 + h, 0.05, 0.2):
        speed, accel = spring_rates(decay, t)
        np.testing.assert_allclose(
            accel, (spring_rates(decay, t + h)[0] - spring_rates(decay, t - h)[0]) / (2 * h), atol=1e-5
        )
        np.testing.assert_allclose(
            speed, (spring_offset(decay, t + h) - spring_offset(decay, t - h)) / (2 * h), atol=1e-6
        )


def clip_state(mannequin, name, times, side="left"):
    clip = mannequin.clips[name]
    velocity = sample_velocity(clip, mannequin.skeleton, times, loop=True, side=side)
    return sample(clip, mannequin.skeleton.rest_pose, times), velocity


def test_offsets_give_back_the_source_pose_and_velocity(mannequin):
    source, source_velocity = clip_state(mannequin, "walk", np.array([0.37, 0.81]))
    target, target_velocity = clip_state(mannequin, "jump", np.array([0.05, 0.6]))
    offsets, rates = pose_offsets(source, source_velocity, target, target_velocity)
    out = offset_pose(target, offsets)
    np.testing.assert_allclose(out.translations, source.translations, atol=1e-14)
    assert_quat_allclose(out.rotations, source.rotations, atol=1e-14)
    velocity = offset_velocity(target, target_velocity, offsets, rates)
    np.testing.assert_allclose(velocity.linear, source_velocity.linear, atol=1e-12)
    np.testing.assert_allclose(velocity.angular, source_velocity.angular, atol=1e-10)


def inertialized_run(mannequin, source_name, target_name, duration, switch=0.41, start=0.115, hz=HZ):
    """Poses at 240 Hz: the source clip up to ``switch``, then the inertialized target from ``start``.

    Both times lie a few frames inside a key segment of the 30 Hz LINEAR clips (away from kinks).
    """
    skeleton = mannequin.skeleton
    source_clip, target_clip = mannequin.clips[source_name], mannequin.clips[target_name]
    source, source_velocity = clip_state(mannequin, source_name, np.array([switch]))
    target, target_velocity = clip_state(mannequin, target_name, np.array([start]), side="right")  # leaving start
    offsets, rates = pose_offsets(source, source_velocity, target, target_velocity)
    decay = quintic_decay(offsets, rates, duration)
    before = np.arange(-12, 1) / hz  # up to and including the switch
    after = np.arange(0, round(2 * duration * hz)) / hz
    poses = [sample(source_clip, skeleton.rest_pose, switch + before)]
    now = sample(target_clip, skeleton.rest_pose, start + after)
    decays = decay[np.zeros(after.size, dtype=int)]
    poses.append(offset_pose(now, quintic_offset(decays, after[:, None, None])))
    return poses, now, after


def test_inertialization_starts_at_the_source_and_ends_exactly_at_the_target(mannequin):
    (before, out), target, after = inertialized_run(mannequin, "walk", "run", 0.3)
    np.testing.assert_allclose(out.translations[0], before.translations[-1], atol=1e-14)
    assert_quat_allclose(out.rotations[0], before.rotations[-1], atol=1e-14)
    done = after >= 0.3
    assert done.any()
    np.testing.assert_array_equal(out.translations[done], target.translations[done])
    np.testing.assert_array_equal(out.rotations[done], target.rotations[done])
    np.testing.assert_array_equal(out.scales[done], target.scales[done])


def derivative_jump(mannequin, source, target, duration, hz):
    """Largest gap between the left and right derivatives at the switch, estimated at ``hz``.

    Second-order one-sided differences on either side of the switch; every window lies inside one
    key segment of its LINEAR clip, so for a C¹ output the gap is the O(h²) truncation error.
    Rotations are compared as rotation vectors relative to the pose at the switch.
    """
    (before, out), _, _ = inertialized_run(mannequin, source, target, duration, hz=hz)
    rotations = np.concatenate((before.rotations, out.rotations[1:]))
    translations = np.concatenate((before.translations, out.translations[1:]))
    switch = before.rotations.shape[0] - 1
    at_switch = np.broadcast_to(rotations[switch], rotations.shape).reshape(-1, 4)
    relative = Rotation.from_quat(rotations.reshape(-1, 4)) * Rotation.from_quat(at_switch).inv()
    phi = relative.as_rotvec().reshape(rotations.shape[0], -1, 3)
    h = 1.0 / hz

    def gap(x):
        left = (3 * x[switch] - 4 * x[switch - 1] + x[switch - 2]) / (2 * h)
        right = (-3 * x[switch] + 4 * x[switch + 1] - x[switch + 2]) / (2 * h)
        return np.abs(right - left).max()

    return gap(phi), gap(translations)


@pytest.mark.parametrize(
    ("source", "target", "duration"), [("walk", "run", 0.3), ("run", "jump", 0.2), ("idle", "walk", 0.5)]
)
def test_first_derivative_is_continuous_at_240_hz(mannequin, source, target, duration):
    angular, linear = derivative_jump(mannequin, source, target, duration, HZ)
    # joint speeds here reach 5 rad/s; dropping the velocity perpendicular to the offset (as Bollo
    # does) or taking the target's velocity on the wrong side of a key jumps by far more
    assert angular < 0.15
    assert linear < 0.1
    # and the gap is truncation error: four times the rate shrinks it about sixteen times
    finer_angular, finer_linear = derivative_jump(mannequin, source, target, duration, 4 * HZ)
    assert finer_angular < angular / 8.0
    assert finer_linear <= max(linear / 8.0, 1e-9)


def test_dead_blend_starts_at_the_source_with_its_velocity(mannequin):
    source, source_velocity = clip_state(mannequin, "run", np.array([0.3]))
    target, target_velocity = clip_state(mannequin, "idle", np.array([0.0]))
    pose, velocity = dead_blend(source, source_velocity, target, 0.0, 0.4, 0.2, target_velocity)
    np.testing.assert_allclose(pose.translations, source.translations, atol=1e-14)
    assert_quat_allclose(pose.rotations, source.rotations, atol=1e-14)
    np.testing.assert_allclose(velocity.angular, source_velocity.angular, atol=1e-10)
    np.testing.assert_allclose(velocity.linear, source_velocity.linear, atol=1e-12)
    # the velocity returned is the derivative of the poses (target moving too)
    idle = mannequin.clips["idle"]
    h = 1e-7
    t = 0.17
    ahead = dead_blend(source, source_velocity, sample(idle, mannequin.skeleton.rest_pose, [t]), t, 0.4, 0.2)[0]
    now_target = sample(idle, mannequin.skeleton.rest_pose, [t - h])
    behind = dead_blend(source, source_velocity, now_target, t - h, 0.4, 0.2)[0]
    _, at_t = dead_blend(
        source, source_velocity, now_target, t - h, 0.4, 0.2, sample_velocity(idle, mannequin.skeleton, [t - h])
    )
    reference = pose_velocity(behind, ahead, h)
    np.testing.assert_allclose(at_t.angular, reference.angular, atol=1e-4)
    np.testing.assert_allclose(at_t.linear, reference.linear, atol=1e-5)


def test_dead_blend_reaches_the_target(mannequin):
    source, source_velocity = clip_state(mannequin, "run", np.array([0.3]))
    target, _ = clip_state(mannequin, "idle", np.array([0.4]))
    pose, velocity = dead_blend(source, source_velocity, target, 0.4, 0.4, 0.2)
    assert velocity is None
    np.testing.assert_allclose(pose.translations, target.translations, atol=1e-15)
    assert_quat_allclose(pose.rotations, target.rotations, atol=1e-15)


@given(strategies.unit_vectors(), st.floats(-10.0, 10.0), st.floats(0.0, 2.0), st.floats(0.02, 1.0))
def test_extrapolation_against_scipy(axis, speed, t, half_life):
    start = Rotation.from_rotvec([0.2, 0.5, -0.1])
    pose = Pose(np.array([[1.0, 2.0, 3.0]]), start.as_quat()[None], np.ones((1, 3)))
    velocity = PoseVelocity(np.array([[0.5, 0.0, -1.0]]), (axis * speed)[None], np.zeros((1, 3)))
    moved, moving = extrapolate(pose, velocity, t, half_life)
    rate = np.log(2.0) / half_life
    travel = (1.0 - np.exp(-rate * t)) / rate
    expected = Rotation.from_rotvec(axis * speed * travel) * start
    assert_quat_allclose(moved.rotations[0], expected.as_quat(), atol=1e-12)
    np.testing.assert_allclose(moved.translations[0], [1.0 + 0.5 * travel, 2.0, 3.0 - travel], atol=1e-12)
    np.testing.assert_allclose(moving.angular[0], axis * speed * np.exp(-rate * t), atol=1e-12)


def test_extrapolated_velocity_halves_every_half_life():
    pose = Pose(np.zeros((1, 3)), np.array([[0.0, 0.0, 0.0, 1.0]]), np.ones((1, 3)))
    velocity = PoseVelocity(np.array([[4.0, 0.0, 0.0]]), np.zeros((1, 3)), np.zeros((1, 3)))
    _, moving = extrapolate(pose, velocity, 0.6, 0.3)
    np.testing.assert_allclose(moving.linear, [[1.0, 0.0, 0.0]], rtol=1e-14)


def test_smoothstep_ends_flat():
    np.testing.assert_array_equal(smoothstep([-1.0, 0.0, 0.5, 1.0, 2.0]), [0.0, 0.0, 0.5, 1.0, 1.0])


def test_bad_input_is_named(mannequin):
    with pytest.raises(InvalidInputError, match="duration must be >= 0"):
        quintic_decay(np.zeros(3), np.zeros(3), -0.1)
    with pytest.raises(InvalidInputError, match="half_life must be > 0"):
        spring_decay(np.zeros(3), np.zeros(3), 0.0)
    with pytest.raises(InvalidInputError, match="offset and velocity"):
        quintic_decay(np.zeros((2, 3)), np.zeros((3, 3)), 0.1)
    with pytest.raises(InvalidInputError, match="elapsed must be >= 0"):
        quintic_offset(quintic_decay(np.zeros(3), np.zeros(3), 0.1), -1.0)
    with pytest.raises(InvalidInputError, match="offset must be finite"):
        quintic_decay([np.nan, 0.0, 0.0], np.zeros(3), 0.1)
    source, source_velocity = clip_state(mannequin, "run", np.array([0.3, 0.4]))
    with pytest.raises(SkeletonMismatchError, match="source is shaped"):
        pose_offsets(source, source_velocity, source[:1], source_velocity[:1])
    with pytest.raises(SkeletonMismatchError, match="offsets must be shaped"):
        offset_pose(source, np.zeros((2, 3, 3, 3)))
    with pytest.raises(InvalidInputError, match="half_life must be > 0"):
        extrapolate(source, source_velocity, 0.1, 0.0)
