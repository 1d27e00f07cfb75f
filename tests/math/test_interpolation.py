"""slerp, nlerp, log, exp, pow, squad and unflip, against scipy's Slerp and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from engine.math import (
    quat_angle,
    quat_conjugate,
    quat_exp,
    quat_from_axis_angle,
    quat_from_rotvec,
    quat_identity,
    quat_inverse,
    quat_log,
    quat_multiply,
    quat_nlerp,
    quat_norm,
    quat_pow,
    quat_slerp,
    quat_squad,
    squad_control_points,
    unflip,
)
from tests.helpers import assert_quat_allclose
from tests.strategies import unit_quaternion_arrays, unit_quaternions, unit_vectors

Y = np.array([0.0, 1.0, 0.0])


def random_quats(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def smooth_keys(rng: np.random.Generator, k: int) -> np.ndarray:
    """``k`` keys of a smooth random motion (steps well under 90°), signs randomly flipped."""
    rotvecs = np.cumsum(rng.normal(scale=0.4, size=(k, 3)), axis=0)
    return quat_from_rotvec(rotvecs) * rng.choice([-1.0, 1.0], size=(k, 1))


# --- slerp ------------------------------------------------------------------------------------------


def test_slerp_matches_scipy_slerp(rng: np.random.Generator) -> None:
    a, b = random_quats(rng, 100), random_quats(rng, 100)
    t = rng.uniform(0, 1, 100)
    expected = np.stack([Slerp([0.0, 1.0], Rotation.from_quat([a[i], b[i]]))(t[i]).as_quat() for i in range(100)])
    assert_quat_allclose(quat_slerp(a, b, t), expected, atol=1e-12)


def test_slerp_closed_form_about_one_axis() -> None:
    a = quat_from_axis_angle(Y, 0.2)
    b = quat_from_axis_angle(Y, 1.4)
    t = np.array([-0.5, 0.0, 0.25, 1.0, 2.0])
    assert_quat_allclose(quat_slerp(a, b, t), quat_from_axis_angle(Y, 0.2 + 1.2 * t), atol=1e-15)


@given(unit_quaternions(), unit_quaternions())
def test_slerp_endpoints(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(quat_slerp(a, b, 0.0), a, atol=1e-14)
    assert_quat_allclose(quat_slerp(a, b, 1.0), b, atol=1e-13)


@given(unit_quaternions(), unit_quaternions())
def test_slerp_has_constant_angular_speed_including_extrapolation(a: np.ndarray, b: np.ndarray) -> None:
    theta = quat_angle(a, b)
    assume(theta > 1e-3)
    t = np.linspace(-0.4, 1.4, 10)
    t = t[np.abs(t) * theta <= np.pi - 1e-3]
    q = quat_slerp(a, b, t)
    np.testing.assert_allclose(quat_angle(a, q), np.abs(t) * theta, atol=1e-9)
    np.testing.assert_allclose(quat_angle(q[:-1], q[1:]), np.diff(t) * theta, atol=1e-9)


@given(unit_quaternions(), unit_quaternions(), st.floats(-1.0, 2.0))
def test_slerp_is_a_times_the_power_of_the_difference(a: np.ndarray, b: np.ndarray, t: float) -> None:
    """``slerp(a, b, t) = a (a⁻¹ b)^t`` along the shortest arc, for t inside and outside [0, 1].

    At exactly 180° apart (``a · b = 0``) both arcs are shortest and the two may pick either.
    """
    assume(abs(np.dot(a, b)) > 1e-9)
    delta = Rotation.from_quat(a).inv() * Rotation.from_quat(b)
    expected = (Rotation.from_quat(a) * Rotation.from_rotvec(delta.as_rotvec() * t)).as_quat()
    assert_quat_allclose(quat_slerp(a, b, t), expected, atol=1e-11)


@given(unit_quaternions(), unit_quaternions())
def test_slerp_takes_the_shortest_arc(a: np.ndarray, b: np.ndarray) -> None:
    assume(abs(np.dot(a, b)) > 1e-9)  # at exactly 180° apart both arcs are shortest
    t = np.linspace(0, 1, 5)
    assert_quat_allclose(quat_slerp(a, -b, t), quat_slerp(a, b, t), atol=1e-12)
    assert np.all(quat_angle(a, quat_slerp(a, b, t)) <= quat_angle(a, b) + 1e-12)


def test_slerp_broadcasts_t_over_pairs(rng: np.random.Generator) -> None:
    a, b = random_quats(rng, 3), random_quats(rng, 3)
    t = np.linspace(0, 1, 4)[:, None]
    q = quat_slerp(a, b, t)
    assert q.shape == (4, 3, 4)
    assert_quat_allclose(q[2, 1], quat_slerp(a[1], b[1], t[2, 0]), atol=1e-15)


@pytest.mark.parametrize("angle", [1e-10, 1e-7, 1e-4])
def test_slerp_of_nearly_equal_keys_still_moves_with_t(angle: float) -> None:
    """Below and above the nlerp threshold the result is the exact fraction of the tiny arc."""
    a = quat_from_axis_angle([1.0, 2.0, 3.0], 0.7)
    b = quat_multiply(a, quat_from_axis_angle(Y, angle))
    t = np.array([0.0, 0.3, 0.5, 1.0, 1.5])
    q = quat_slerp(a, b, t)
    np.testing.assert_allclose(quat_angle(a, q), angle * t, rtol=1e-6, atol=1e-16)
    np.testing.assert_allclose(quat_norm(q), 1.0, atol=1e-15)


# --- nlerp ------------------------------------------------------------------------------------------


@given(unit_quaternions(), unit_quaternions())
def test_nlerp_endpoints_midpoint_and_unit_norm(a: np.ndarray, b: np.ndarray) -> None:
    q = quat_nlerp(a, b, np.array([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(q[0], a, atol=1e-15)
    assert_quat_allclose(q[2], b, atol=1e-15)
    assert_quat_allclose(q[1], quat_slerp(a, b, 0.5), atol=1e-12)
    np.testing.assert_allclose(quat_norm(q), 1.0, atol=1e-15)


def test_nlerp_is_not_constant_speed_but_monotonic() -> None:
    a, b = quat_identity(), quat_from_axis_angle(Y, 2.5)
    t = np.linspace(0, 1, 9)
    angles = quat_angle(a, quat_nlerp(a, b, t))
    assert np.all(np.diff(angles) > 0)
    assert not np.allclose(angles, 2.5 * t, atol=1e-3)


def test_nlerp_takes_the_shortest_arc() -> None:
    a, b = quat_identity(), quat_from_axis_angle(Y, 0.5)
    assert_quat_allclose(quat_nlerp(a, -b, 0.5), quat_from_axis_angle(Y, 0.25), atol=1e-15)


# --- log, exp, pow ----------------------------------------------------------------------------------


def test_log_exp_closed_form() -> None:
    q = quat_from_axis_angle([0.0, 0.0, 1.0], 0.5 * np.pi)
    np.testing.assert_allclose(quat_log(q), [0.0, 0.0, 0.25 * np.pi], atol=1e-15)
    np.testing.assert_allclose(quat_exp([0.0, 0.0, 0.25 * np.pi]), q, atol=1e-15)
    np.testing.assert_array_equal(quat_log(quat_identity()), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(quat_exp([0.0, 0.0, 0.0]), [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(quat_exp([0.0, 0.5 * np.pi, 0.0]), [0.0, 1.0, 0.0, 0.0], atol=1e-15)


def test_log_is_half_the_scipy_rotation_vector(rng: np.random.Generator) -> None:
    q = random_quats(rng, 200)
    np.testing.assert_allclose(quat_log(q), 0.5 * Rotation.from_quat(q).as_rotvec(), atol=1e-12)
    np.testing.assert_allclose(quat_log(-q), quat_log(q), atol=1e-15)


@given(unit_quaternions())
def test_exp_inverts_log(q: np.ndarray) -> None:
    assert_quat_allclose(quat_exp(quat_log(q)), q, atol=1e-14)


@pytest.mark.parametrize("half_angle", [1e-14, 1e-8, 0.99e-4, 1.01e-4, 1e-2])
def test_log_exp_series_branch_is_seamless(half_angle: float) -> None:
    axis = np.array([2.0, -1.0, 2.0]) / 3.0
    q = np.array([*(axis * np.sin(half_angle)), np.cos(half_angle)])
    np.testing.assert_allclose(quat_log(q), axis * half_angle, rtol=1e-12)
    np.testing.assert_allclose(quat_exp(axis * half_angle), q, rtol=1e-15)


@given(unit_quaternions(), st.floats(-3.0, 3.0))
def test_pow_matches_scaled_rotation_vector(q: np.ndarray, exponent: float) -> None:
    expected = Rotation.from_rotvec(Rotation.from_quat(q).as_rotvec() * exponent).as_quat()
    assert_quat_allclose(quat_pow(q, exponent), expected, atol=1e-12)


@given(unit_quaternions())
def test_pow_integer_and_half_powers(q: np.ndarray) -> None:
    assert_quat_allclose(quat_pow(q, 0.0), quat_identity(), atol=0)
    assert_quat_allclose(quat_pow(q, 1.0), q, atol=1e-14)
    assert_quat_allclose(quat_pow(q, 2.0), quat_multiply(q, q), atol=1e-13)
    assert_quat_allclose(quat_pow(q, -1.0), quat_inverse(q), atol=1e-14)
    half = quat_pow(q, 0.5)
    assert_quat_allclose(quat_multiply(half, half), q, atol=1e-14)


def test_pow_broadcasts_exponents(rng: np.random.Generator) -> None:
    q = random_quats(rng, 3)
    out = quat_pow(q, np.array([0.0, 1.0])[:, None])
    assert out.shape == (2, 3, 4)
    assert_quat_allclose(out[1], q, atol=1e-14)


# --- squad ------------------------------------------------------------------------------------------


def squad_curve(keys: np.ndarray, controls: np.ndarray, segment: int, t: np.ndarray) -> np.ndarray:
    return quat_squad(keys[segment], keys[segment + 1], controls[segment], controls[segment + 1], t)


@given(unit_quaternion_arrays(max_batch=5).filter(lambda k: len(k) >= 2))
def test_squad_passes_through_its_keys(keys: np.ndarray) -> None:
    keys = unflip(keys, axis=0)
    controls = squad_control_points(keys, axis=0)
    for i in range(len(keys) - 1):
        assert_quat_allclose(squad_curve(keys, controls, i, 0.0), keys[i], atol=1e-12)
        assert_quat_allclose(squad_curve(keys, controls, i, 1.0), keys[i + 1], atol=1e-12)


def angular_velocity(q0: np.ndarray, q1: np.ndarray, h: float) -> np.ndarray:
    """World-frame angular velocity of the step ``q0 → q1`` over ``h``: ``2 log(q1 q0*) / h``."""
    return 2.0 * quat_log(quat_multiply(q1, quat_conjugate(q0))) / h


def test_squad_is_c1_across_interior_keys(rng: np.random.Generator) -> None:
    keys = smooth_keys(rng, 6)
    controls = squad_control_points(keys, axis=0)
    keys = unflip(keys, axis=0)
    h = 1e-6
    for i in range(1, 5):
        left = angular_velocity(squad_curve(keys, controls, i - 1, 1.0 - h), keys[i], h)
        right = angular_velocity(keys[i], squad_curve(keys, controls, i, h), h)
        np.testing.assert_allclose(left, right, atol=1e-4 * (1.0 + np.linalg.norm(right)))
        # the plain slerp chain through the same keys has a corner there: the check can fail
        corner_left = angular_velocity(quat_slerp(keys[i - 1], keys[i], 1.0 - h), keys[i], h)
        corner_right = angular_velocity(keys[i], quat_slerp(keys[i], keys[i + 1], h), h)
        assert np.linalg.norm(corner_left - corner_right) > 1e-2


def test_squad_of_keys_on_one_great_circle_is_slerp() -> None:
    """Evenly spaced keys about one axis: the tangents cancel, ``s_i = q_i``, squad = slerp."""
    keys = quat_from_axis_angle(Y, np.array([0.0, 0.4, 0.8, 1.2]))
    controls = squad_control_points(keys, axis=0)
    np.testing.assert_allclose(controls[1:3], keys[1:3], atol=1e-15)
    t = np.linspace(0, 1, 7)
    assert_quat_allclose(squad_curve(keys, controls, 1, t), quat_from_axis_angle(Y, 0.4 + 0.4 * t), atol=1e-15)


def test_squad_control_points_of_constant_keys_are_the_keys() -> None:
    keys = np.tile(quat_from_axis_angle([1.0, 1.0, 0.0], 0.3), (3, 1))
    np.testing.assert_allclose(squad_control_points(keys, axis=0), keys, atol=1e-15)


def test_squad_control_points_time_axis_argument(rng: np.random.Generator) -> None:
    keys = np.stack([smooth_keys(rng, 5) for _ in range(3)])  # (3 tracks, 5 keys, 4)
    default = squad_control_points(keys)  # axis=-2: the keys axis
    moved = squad_control_points(np.moveaxis(keys, 1, 0), axis=0)
    assert default.shape == (3, 5, 4)
    np.testing.assert_allclose(np.moveaxis(moved, 0, 1), default, atol=1e-15)
    np.testing.assert_allclose(default[1], squad_control_points(keys[1], axis=0), atol=1e-15)


def test_squad_control_points_ignore_key_signs(rng: np.random.Generator) -> None:
    keys = smooth_keys(rng, 5)
    controls = squad_control_points(keys, axis=0)
    flipped = squad_control_points(keys * np.array([[1.0], [-1.0], [-1.0], [1.0], [-1.0]]), axis=0)
    assert_quat_allclose(flipped, controls, atol=1e-14)


# --- unflip -----------------------------------------------------------------------------------------


def test_unflip_makes_signs_continuous(rng: np.random.Generator) -> None:
    keys = smooth_keys(rng, 50)
    out = unflip(keys, axis=0)
    assert np.all(np.sum(out[1:] * out[:-1], axis=-1) >= 0)
    np.testing.assert_array_equal(out[0], keys[0])
    np.testing.assert_array_equal(np.abs(out), np.abs(keys))


def test_unflip_along_a_middle_axis(rng: np.random.Generator) -> None:
    keys = np.stack([smooth_keys(rng, 20) for _ in range(4)], axis=1)  # (time, track, 4)
    out = unflip(keys, axis=0)
    for track in range(4):
        np.testing.assert_array_equal(out[:, track], unflip(keys[:, track], axis=0))
    np.testing.assert_array_equal(unflip(np.swapaxes(keys, 0, 1), axis=-2), np.swapaxes(out, 0, 1))


def test_unflip_of_a_single_key_is_a_copy() -> None:
    q = np.array([[0.0, 0.0, 0.0, -1.0]])
    out = unflip(q, axis=0)
    np.testing.assert_array_equal(out, q)
    assert out is not q


@given(unit_quaternions(), unit_vectors())
def test_unflip_keeps_a_sign_flipped_turn_continuous(q: np.ndarray, axis: np.ndarray) -> None:
    steps = quat_multiply(q, quat_from_axis_angle(axis, np.linspace(0, 6 * np.pi, 40)))
    out = unflip(steps * np.where(np.arange(40) % 3 == 0, -1.0, 1.0)[:, None], axis=0)
    np.testing.assert_allclose(out, steps * np.sign(np.dot(out[0], steps[0])), atol=1e-15)
