"""Euler angles both ways, all 12 axis sequences, intrinsic and extrinsic, against scipy.

Ossa uses scipy's letters (uppercase intrinsic, lowercase extrinsic), so each order maps to scipy
unchanged; seed 000's yaw (about Y), pitch (about X), roll (about Z) is scipy's intrinsic ``"YXZ"``.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.math import (
    euler_from_quat,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_euler,
    quat_from_yaw_pitch_roll,
    quat_multiply,
    quat_rotate,
    yaw_pitch_roll_from_quat,
)
from tests.helpers import assert_quat_allclose
from tests.strategies import unit_quaternions, vectors

TAIT_BRYAN = ["".join(p) for p in itertools.permutations("xyz")]
PROPER = [a + b + a for a in "xyz" for b in "xyz" if a != b]
ORDERS = [o for base in TAIT_BRYAN + PROPER for o in (base, base.upper())]
X, Y, Z = np.eye(3)


def random_angles(rng: np.random.Generator, n: int, order: str) -> np.ndarray:
    """Angles inside scipy's canonical ranges, away from gimbal lock."""
    angles = rng.uniform(-np.pi, np.pi, (n, 3))
    if order[0].lower() == order[2].lower():
        angles[:, 1] = rng.uniform(0.05, np.pi - 0.05, n)
    else:
        angles[:, 1] = rng.uniform(-0.5 * np.pi + 0.05, 0.5 * np.pi - 0.05, n)
    return angles


def wrap(angles: np.ndarray) -> np.ndarray:
    """Angles mapped to ``[-π, π)``."""
    return (np.asarray(angles) + np.pi) % (2 * np.pi) - np.pi


def test_there_are_24_orders() -> None:
    assert len(set(ORDERS)) == 24


@pytest.mark.parametrize("order", ORDERS)
def test_quat_from_euler_matches_scipy(rng: np.random.Generator, order: str) -> None:
    angles = rng.uniform(-2 * np.pi, 2 * np.pi, (40, 3))
    assert_quat_allclose(quat_from_euler(angles, order), Rotation.from_euler(order, angles).as_quat(), atol=1e-14)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_from_quat_matches_scipy(rng: np.random.Generator, order: str) -> None:
    angles = random_angles(rng, 40, order)
    q = Rotation.from_euler(order, angles).as_quat()
    np.testing.assert_allclose(euler_from_quat(q, order), Rotation.from_quat(q).as_euler(order), atol=1e-12)
    np.testing.assert_allclose(euler_from_quat(q, order), angles, atol=1e-12)


def check_round_trip(q: np.ndarray, order: str) -> None:
    """Angles in range, and back to the same rotation (within the gimbal-lock tolerance)."""
    angles = euler_from_quat(q, order)
    assert np.all(np.abs(angles) <= np.pi)
    if order[0].lower() == order[2].lower():
        assert np.all((angles[..., 1] >= 0.0) & (angles[..., 1] <= np.pi))
    else:
        assert np.all(np.abs(angles[..., 1]) <= 0.5 * np.pi)
    assert_quat_allclose(quat_from_euler(angles, order), q, atol=1e-7)


@pytest.mark.parametrize("order", ORDERS)
def test_euler_round_trip_batch_with_locks(rng: np.random.Generator, order: str) -> None:
    """Random rotations of both signs, plus rotations at and within 1e-9 rad of gimbal lock."""
    q = rng.normal(size=(300, 4))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    lock = 0.5 * np.pi if order[0].lower() != order[2].lower() else np.pi
    near = rng.uniform(-np.pi, np.pi, (40, 3))
    near[:, 1] = rng.choice([lock, -lock, 0.0, lock - 1e-9, 1e-9], size=40)
    check_round_trip(np.concatenate((q, quat_from_euler(near, order))), order)


@given(st.sampled_from(ORDERS), unit_quaternions())
def test_euler_round_trip_any_rotation(order: str, q: np.ndarray) -> None:
    check_round_trip(q, order)


@pytest.mark.parametrize("order", ["XYZ", "zyx"])
def test_intrinsic_is_extrinsic_reversed(rng: np.random.Generator, order: str) -> None:
    angles = rng.uniform(-np.pi, np.pi, (20, 3))
    reversed_order = order[::-1].swapcase()
    np.testing.assert_allclose(quat_from_euler(angles, order), quat_from_euler(angles[:, ::-1], reversed_order))


def test_intrinsic_yxz_is_the_product_of_elementary_rotations() -> None:
    yaw, pitch, roll = 0.3, -0.7, 1.1
    expected = quat_multiply(
        quat_multiply(quat_from_axis_angle(Y, yaw), quat_from_axis_angle(X, pitch)), quat_from_axis_angle(Z, roll)
    )
    np.testing.assert_allclose(quat_from_euler([yaw, pitch, roll], "YXZ"), expected, atol=1e-15)


# --- seed 000: yaw / pitch / roll -----------------------------------------------------------------


def test_yaw_pitch_roll_is_scipy_intrinsic_yxz(rng: np.random.Generator) -> None:
    ypr = random_angles(rng, 50, "YXZ")
    q = quat_from_yaw_pitch_roll(ypr[:, 0], ypr[:, 1], ypr[:, 2])
    assert_quat_allclose(q, Rotation.from_euler("YXZ", ypr).as_quat(), atol=1e-14)
    np.testing.assert_allclose(yaw_pitch_roll_from_quat(q), ypr, atol=1e-12)


def test_yaw_pitch_roll_closed_form() -> None:
    """Yaw 90° turns the +Z forward to +X; pitch 90° turns it to −Y (nose down); roll keeps it."""
    forward = Z
    np.testing.assert_allclose(quat_rotate(quat_from_yaw_pitch_roll(0.5 * np.pi, 0, 0), forward), X, atol=1e-15)
    np.testing.assert_allclose(quat_rotate(quat_from_yaw_pitch_roll(0, 0.5 * np.pi, 0), forward), -Y, atol=1e-15)
    np.testing.assert_allclose(quat_rotate(quat_from_yaw_pitch_roll(0, 0, 0.5 * np.pi), forward), Z, atol=1e-15)
    np.testing.assert_allclose(quat_rotate(quat_from_yaw_pitch_roll(0, 0, 0.5 * np.pi), X), Y, atol=1e-15)


def test_yaw_pitch_roll_broadcasts_scalars_against_arrays() -> None:
    q = quat_from_yaw_pitch_roll(np.linspace(-1, 1, 6).reshape(2, 3), 0.2, 0.0)
    assert q.shape == (2, 3, 4)
    np.testing.assert_allclose(yaw_pitch_roll_from_quat(q)[..., 0], np.linspace(-1, 1, 6).reshape(2, 3))


@given(st.floats(-np.pi, np.pi), st.floats(-1.5, 1.5), st.floats(-np.pi, np.pi), vectors())
def test_world_to_object_is_the_conjugate(yaw: float, pitch: float, roll: float, v: np.ndarray) -> None:
    to_world = quat_from_yaw_pitch_roll(yaw, pitch, roll)
    to_object = quat_from_yaw_pitch_roll(yaw, pitch, roll, object_to_world=False)
    np.testing.assert_array_equal(to_object, quat_conjugate(to_world))
    np.testing.assert_allclose(quat_rotate(to_object, quat_rotate(to_world, v)), v, atol=1e-12)
    got = yaw_pitch_roll_from_quat(to_object, object_to_world=False)
    np.testing.assert_allclose(wrap(got - [yaw, pitch, roll]), 0.0, atol=1e-9)  # π and −π are one angle


# --- gimbal lock ------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [o for o in ORDERS if o[0].lower() != o[2].lower()])
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["+90", "-90"])
def test_tait_bryan_gimbal_lock_both_signs(order: str, sign: float) -> None:
    """At ±90° the third angle is 0, the first carries the combined rotation, and nothing is NaN."""
    q = quat_from_euler([0.4, sign * 0.5 * np.pi, -0.9], order)
    angles = euler_from_quat(q, order)
    assert np.all(np.isfinite(angles))
    assert angles[2] == 0.0
    np.testing.assert_allclose(angles[1], sign * 0.5 * np.pi, atol=1e-7)
    assert_quat_allclose(quat_from_euler(angles, order), q, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # scipy warns about gimbal lock
        scipy_angles = Rotation.from_quat(q).as_euler(order)
    assert_quat_allclose(quat_from_euler(scipy_angles, order), q, atol=1e-7)


@pytest.mark.parametrize("order", [o for o in ORDERS if o[0].lower() == o[2].lower()])
@pytest.mark.parametrize("middle", [0.0, np.pi], ids=["0", "180"])
def test_proper_euler_gimbal_lock(order: str, middle: float) -> None:
    q = quat_from_euler([0.4, middle, -0.9], order)
    angles = euler_from_quat(q, order)
    assert angles[2] == 0.0
    np.testing.assert_allclose(angles[1], middle, atol=1e-7)
    assert_quat_allclose(quat_from_euler(angles, order), q, atol=1e-12)


@pytest.mark.parametrize("offset", [1e-9, 5e-8])
def test_within_tolerance_of_lock_counts_as_locked(offset: float) -> None:
    q = quat_from_yaw_pitch_roll(0.2, 0.5 * np.pi - offset, 0.3)
    ypr = yaw_pitch_roll_from_quat(q)
    assert ypr[2] == 0.0
    np.testing.assert_allclose(ypr[0], 0.2 - 0.3, atol=1e-6)
    assert_quat_allclose(quat_from_euler(ypr, "YXZ"), q, atol=1e-7)


@pytest.mark.parametrize("offset", [1e-5, 1e-3])
def test_outside_tolerance_keeps_all_three_angles(offset: float) -> None:
    ypr = np.array([0.2, -0.5 * np.pi + offset, 0.3])
    np.testing.assert_allclose(yaw_pitch_roll_from_quat(quat_from_yaw_pitch_roll(*ypr)), ypr, atol=1e-9)


def test_gimbal_tolerance_is_a_parameter() -> None:
    q = quat_from_yaw_pitch_roll(0.2, 0.5 * np.pi - 1e-4, 0.3)
    assert euler_from_quat(q, "YXZ")[2] != 0.0
    assert euler_from_quat(q, "YXZ", gimbal_tolerance=1e-3)[2] == 0.0


def test_batch_mixing_locked_and_free_rotations() -> None:
    ypr = np.array([[0.1, 0.5 * np.pi, 0.2], [0.1, 0.3, 0.2], [0.5, -0.5 * np.pi, -0.1], [-2.0, 1.0, 3.0]])
    q = quat_from_euler(ypr, "YXZ")
    got = euler_from_quat(q, "YXZ")
    np.testing.assert_allclose(got[[1, 3]], ypr[[1, 3]], atol=1e-12)
    np.testing.assert_array_equal(got[[0, 2], 2], [0.0, 0.0])
    assert_quat_allclose(quat_from_euler(got, "YXZ"), q, atol=1e-12)
