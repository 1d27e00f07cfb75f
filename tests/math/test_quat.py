"""Quaternion algebra, conversions and rotation of vectors, checked against scipy's Rotation.

scipy stores quaternions scalar-last ``(x, y, z, w)`` like Ossa, and ``r1 * r2`` applies ``r2``
first, which is the Hamilton product ``quat_multiply(r1, r2)``; the two layouts need no mapping.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.errors import DegenerateInputError
from engine.math import (
    axis_angle_from_quat,
    check_unit,
    matrix_from_quat,
    quat_angle,
    quat_canonical,
    quat_conjugate,
    quat_difference,
    quat_dot,
    quat_from_axis_angle,
    quat_from_matrix,
    quat_from_rotvec,
    quat_identity,
    quat_inverse,
    quat_multiply,
    quat_negate,
    quat_norm,
    quat_normalize,
    quat_rotate,
    quat_rotate_sandwich,
    rotvec_from_quat,
)
from tests.helpers import assert_quat_allclose
from tests.strategies import quaternions, unit_quaternions, unit_vectors, vectors

S = np.sqrt(0.5)
X, Y, Z = np.eye(3)
#: 90° about X, Y, Z and what each does to the other two axes (right-handed, active).
QUARTER_TURNS = [
    (X, [S, 0, 0, S], {"y": Z, "z": -Y}),
    (Y, [0, S, 0, S], {"z": X, "x": -Z}),
    (Z, [0, 0, S, S], {"x": Y, "y": -X}),
]
AXES = {"x": X, "y": Y, "z": Z}


def random_quats(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


# --- algebra ------------------------------------------------------------------------------------


def test_identity_shape_and_value() -> None:
    q = quat_identity((2, 3))
    assert q.shape == (2, 3, 4)
    np.testing.assert_array_equal(q[1, 2], [0, 0, 0, 1])


def test_hamilton_unit_products() -> None:
    i, j, k, one = np.eye(4)
    np.testing.assert_array_equal(quat_multiply(i, j), k)
    np.testing.assert_array_equal(quat_multiply(j, k), i)
    np.testing.assert_array_equal(quat_multiply(k, i), j)
    np.testing.assert_array_equal(quat_multiply(j, i), -k)
    for unit in (i, j, k):
        np.testing.assert_array_equal(quat_multiply(unit, unit), -one)
    np.testing.assert_array_equal(quat_multiply(quat_multiply(i, j), k), -one)


def test_multiply_matches_scipy_composition(rng: np.random.Generator) -> None:
    a, b = random_quats(rng, 300), random_quats(rng, 300)
    expected = (Rotation.from_quat(a) * Rotation.from_quat(b)).as_quat()
    assert_quat_allclose(quat_multiply(a, b), expected, atol=1e-12)


def test_multiply_broadcasts_like_numpy(rng: np.random.Generator) -> None:
    a, b = random_quats(rng, 5)[:, None, :], random_quats(rng, 3)[None, :, :]
    out = quat_multiply(a, b)
    assert out.shape == (5, 3, 4)
    np.testing.assert_allclose(out[4, 2], quat_multiply(a[4, 0], b[0, 2]), atol=1e-15)


def test_multiply_is_not_commutative() -> None:
    a = quat_from_axis_angle(X, 0.5 * np.pi)
    b = quat_from_axis_angle(Y, 0.5 * np.pi)
    assert not np.allclose(quat_multiply(a, b), quat_multiply(b, a))


def test_composition_a_then_b_is_b_times_a() -> None:
    """docs/conventions.md: "a then b" is ``b * a``: rotate x by 90° about z (→ y), then about x (→ z)."""
    a = quat_from_axis_angle(Z, 0.5 * np.pi)
    b = quat_from_axis_angle(X, 0.5 * np.pi)
    np.testing.assert_allclose(quat_rotate(quat_multiply(b, a), X), Z, atol=1e-15)


@given(unit_quaternions(), unit_quaternions(), unit_quaternions())
def test_multiply_is_associative(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> None:
    left = quat_multiply(quat_multiply(a, b), c)
    right = quat_multiply(a, quat_multiply(b, c))
    np.testing.assert_allclose(left, right, atol=1e-14)


@given(unit_quaternions(), unit_quaternions())
def test_product_of_unit_quaternions_stays_unit(a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_allclose(quat_norm(quat_multiply(a, b)), 1.0, atol=1e-14)


@given(quaternions())
def test_inverse_of_any_nonzero_quaternion(q: np.ndarray) -> None:
    np.testing.assert_allclose(quat_multiply(q, quat_inverse(q)), [0, 0, 0, 1], atol=1e-13)
    np.testing.assert_allclose(quat_multiply(quat_inverse(q), q), [0, 0, 0, 1], atol=1e-13)


def test_inverse_and_conjugate_match_scipy_inv(rng: np.random.Generator) -> None:
    q = random_quats(rng, 50)
    expected = Rotation.from_quat(q).inv().as_quat()
    assert_quat_allclose(quat_inverse(q), expected, atol=1e-14)
    assert_quat_allclose(quat_conjugate(q), expected, atol=1e-14)


def test_conjugate_negates_the_vector_part() -> None:
    np.testing.assert_array_equal(quat_conjugate([1.0, -2.0, 3.0, 4.0]), [-1.0, 2.0, -3.0, 4.0])


@given(quaternions())
def test_normalize_gives_unit_length_and_keeps_direction(q: np.ndarray) -> None:
    n = quat_normalize(q)
    np.testing.assert_allclose(quat_norm(n), 1.0, atol=1e-15)
    np.testing.assert_allclose(n * np.linalg.norm(q), q, atol=1e-12)


def test_norm_closed_form() -> None:
    np.testing.assert_allclose(quat_norm([[1.0, 2.0, 2.0, 4.0], [0, 0, 0, 0]]), [5.0, 0.0])


@given(unit_quaternions(), vectors())
def test_q_and_minus_q_are_the_same_rotation(q: np.ndarray, v: np.ndarray) -> None:
    minus = quat_negate(q)
    np.testing.assert_array_equal(minus, -q)
    np.testing.assert_allclose(quat_rotate(minus, v), quat_rotate(q, v), atol=1e-12)
    np.testing.assert_allclose(matrix_from_quat(minus), matrix_from_quat(q), atol=1e-15)
    np.testing.assert_allclose(quat_angle(q, minus), 0.0, atol=1e-7)


@given(unit_quaternions())
def test_canonical_has_nonnegative_w_and_same_rotation(q: np.ndarray) -> None:
    c = quat_canonical(q)
    assert c[3] >= 0
    assert_quat_allclose(c, q, atol=0)


def test_canonical_breaks_w_zero_ties_on_x_then_y_then_z() -> None:
    q = np.array([[-1.0, 0, 0, 0], [0, -S, S, 0], [0, 0, -1.0, 0], [1.0, 0, 0, 0]])
    expected = np.array([[1.0, 0, 0, 0], [0, S, -S, 0], [0, 0, 1.0, 0], [1.0, 0, 0, 0]])
    np.testing.assert_array_equal(quat_canonical(q), expected)
    np.testing.assert_array_equal(quat_canonical(quat_negate(q)), expected)


def test_dot_broadcasts() -> None:
    d = quat_dot(np.eye(4), [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(d, [1.0, 2.0, 3.0, 4.0])


def test_angle_closed_form_quarter_and_half_turns() -> None:
    identity = quat_identity()
    for axis, quarter, _ in QUARTER_TURNS:
        np.testing.assert_allclose(quat_angle(identity, quarter), 0.5 * np.pi, atol=1e-15)
        np.testing.assert_allclose(quat_angle(identity, quat_from_axis_angle(axis, np.pi)), np.pi, atol=1e-15)
        np.testing.assert_allclose(quat_angle(quarter, quat_from_axis_angle(axis, -0.5 * np.pi)), np.pi, atol=1e-15)


def test_angle_matches_scipy_and_ignores_sign(rng: np.random.Generator) -> None:
    a, b = random_quats(rng, 200), random_quats(rng, 200)
    expected = (Rotation.from_quat(a).inv() * Rotation.from_quat(b)).magnitude()
    np.testing.assert_allclose(quat_angle(a, b), expected, atol=1e-12)
    np.testing.assert_allclose(quat_angle(a, -b), expected, atol=1e-12)


def test_angle_is_accurate_for_tiny_rotations() -> None:
    """``acos(|dot|)`` loses everything below ~1e-8 rad; the atan2 form keeps full precision."""
    for angle in (1e-5, 1e-9, 1e-13):
        np.testing.assert_allclose(quat_angle(quat_identity(), quat_from_axis_angle(Y, angle)), angle, rtol=1e-9)


def test_difference_takes_a_to_b(rng: np.random.Generator) -> None:
    a, b = random_quats(rng, 100), random_quats(rng, 100)
    d = quat_difference(a, b)
    np.testing.assert_allclose(quat_multiply(a, d), b, atol=1e-14)
    expected = (Rotation.from_quat(a).inv() * Rotation.from_quat(b)).as_quat()
    assert_quat_allclose(d, expected, atol=1e-14)


# --- axis-angle and rotation vectors -------------------------------------------------------------


@pytest.mark.parametrize(("axis", "quarter", "images"), QUARTER_TURNS, ids="xyz")
def test_quarter_turn_about_each_axis(axis: np.ndarray, quarter: list[float], images: dict) -> None:
    q = quat_from_axis_angle(axis, 0.5 * np.pi)
    np.testing.assert_allclose(q, quarter, atol=1e-15)
    for name, image in images.items():
        np.testing.assert_allclose(quat_rotate(q, AXES[name]), image, atol=1e-15)
        np.testing.assert_allclose(matrix_from_quat(q) @ AXES[name], image, atol=1e-15)
    np.testing.assert_allclose(quat_rotate(q, axis), axis, atol=1e-15)


@pytest.mark.parametrize("axis", [X, Y, Z, np.array([1.0, 1, 1]) / np.sqrt(3)], ids=["x", "y", "z", "diag"])
def test_half_turn_has_zero_w_and_reverses_perpendiculars(axis: np.ndarray) -> None:
    q = quat_from_axis_angle(axis, np.pi)
    np.testing.assert_allclose(q, [*axis, 0.0], atol=1e-15)
    perpendicular = np.cross(axis, [0.3, -0.2, 0.9])
    np.testing.assert_allclose(quat_rotate(q, perpendicular), -perpendicular, atol=1e-15)


def test_from_axis_angle_matches_scipy_and_normalises_axis(rng: np.random.Generator) -> None:
    axis = rng.normal(size=(100, 3)) * 3.0
    angle = rng.uniform(-4 * np.pi, 4 * np.pi, 100)
    unit = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
    expected = Rotation.from_rotvec(unit * angle[:, None]).as_quat()
    assert_quat_allclose(quat_from_axis_angle(axis, angle), expected, atol=1e-13)


def test_from_axis_angle_broadcasts_one_axis_over_many_angles() -> None:
    q = quat_from_axis_angle(Z, np.linspace(0, np.pi, 5))
    assert q.shape == (5, 4)
    np.testing.assert_allclose(q[:, 2] ** 2 + q[:, 3] ** 2, 1.0)


def test_axis_angle_of_identity_is_documented_x_axis_and_zero() -> None:
    axis, angle = axis_angle_from_quat(quat_identity((2,)))
    np.testing.assert_array_equal(axis, [X, X])
    np.testing.assert_array_equal(angle, [0.0, 0.0])


@given(unit_vectors(), st.floats(1e-6, np.pi))
def test_axis_angle_round_trip(axis: np.ndarray, angle: float) -> None:
    got_axis, got_angle = axis_angle_from_quat(quat_from_axis_angle(axis, angle))
    np.testing.assert_allclose(got_angle, angle, atol=1e-12)
    np.testing.assert_allclose(got_axis, axis, atol=1e-9 / np.sin(0.5 * angle))


def test_axis_angle_of_minus_q_is_the_same(rng: np.random.Generator) -> None:
    q = random_quats(rng, 50)
    axis, angle = axis_angle_from_quat(q)
    axis_m, angle_m = axis_angle_from_quat(-q)
    np.testing.assert_allclose(angle_m, angle, atol=1e-15)
    np.testing.assert_allclose(axis_m, axis, atol=1e-15)
    assert np.all((angle >= 0) & (angle <= np.pi))
    np.testing.assert_allclose(axis * angle[:, None], Rotation.from_quat(q).as_rotvec(), atol=1e-12)


def test_rotvec_matches_scipy_both_ways(rng: np.random.Generator) -> None:
    rotvec = rng.normal(size=(200, 3)) * rng.choice([1e-12, 1e-6, 1e-3, 1.0, 2.0], size=(200, 1))
    assert_quat_allclose(quat_from_rotvec(rotvec), Rotation.from_rotvec(rotvec).as_quat(), atol=1e-15)
    q = random_quats(rng, 200)
    np.testing.assert_allclose(rotvec_from_quat(q), Rotation.from_quat(q).as_rotvec(), atol=1e-12)


@pytest.mark.parametrize("angle", [0.0, 1e-15, 1e-9, 0.9e-4, 1.1e-4, 1e-2])
def test_rotvec_is_exact_near_zero(angle: float) -> None:
    """The Taylor branch and the closed form agree across the series threshold (no jump)."""
    axis = np.array([2.0, -1.0, 2.0]) / 3.0
    q = quat_from_rotvec(axis * angle)
    np.testing.assert_allclose(q, [*(axis * np.sin(0.5 * angle)), np.cos(0.5 * angle)], rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(rotvec_from_quat(q), axis * angle, rtol=1e-12, atol=1e-300)


@given(vectors(max_norm=1.8))
def test_rotvec_round_trip(rotvec: np.ndarray) -> None:
    np.testing.assert_allclose(rotvec_from_quat(quat_from_rotvec(rotvec)), rotvec, atol=1e-12)


# --- rotating vectors ----------------------------------------------------------------------------


def test_rotate_fast_and_sandwich_match_scipy_apply(rng: np.random.Generator) -> None:
    q, v = random_quats(rng, 200), rng.normal(size=(200, 3)) * 5
    expected = Rotation.from_quat(q).apply(v)
    np.testing.assert_allclose(quat_rotate(q, v), expected, atol=1e-12)
    np.testing.assert_allclose(quat_rotate_sandwich(q, v), expected, atol=1e-12)


def test_rotate_broadcasts_one_rotation_over_many_vectors(rng: np.random.Generator) -> None:
    q, v = random_quats(rng, 1)[0], rng.normal(size=(4, 7, 3))
    out = quat_rotate(q, v)
    assert out.shape == (4, 7, 3)
    np.testing.assert_allclose(out, v @ matrix_from_quat(q).T, atol=1e-13)


@given(quaternions(), vectors())
def test_sandwich_is_valid_for_non_unit_quaternions(q: np.ndarray, v: np.ndarray) -> None:
    np.testing.assert_allclose(quat_rotate_sandwich(q, v), quat_rotate(quat_normalize(q), v), atol=1e-11)


@given(unit_quaternions(), vectors())
def test_rotation_preserves_length(q: np.ndarray, v: np.ndarray) -> None:
    np.testing.assert_allclose(np.linalg.norm(quat_rotate(q, v)), np.linalg.norm(v), atol=1e-12)


# --- matrices --------------------------------------------------------------------------------------


def test_matrix_from_quat_matches_scipy(rng: np.random.Generator) -> None:
    q = random_quats(rng, 200).reshape(10, 20, 4)
    m = matrix_from_quat(q)
    assert m.shape == (10, 20, 3, 3)
    np.testing.assert_allclose(m, Rotation.from_quat(q.reshape(-1, 4)).as_matrix().reshape(10, 20, 3, 3), atol=1e-14)


@given(unit_quaternions())
def test_matrix_is_a_proper_rotation(q: np.ndarray) -> None:
    m = matrix_from_quat(q)
    np.testing.assert_allclose(m @ m.T, np.eye(3), atol=1e-14)
    np.testing.assert_allclose(np.linalg.det(m), 1.0, atol=1e-14)


def test_quat_from_matrix_matches_scipy(rng: np.random.Generator) -> None:
    m = Rotation.from_quat(random_quats(rng, 300)).as_matrix()
    q = quat_from_matrix(m)
    assert_quat_allclose(q, Rotation.from_matrix(m).as_quat(), atol=1e-14)
    assert np.all(q[:, 3] >= 0)


def test_quat_from_matrix_accepts_affine_4x4(rng: np.random.Generator) -> None:
    q = random_quats(rng, 10)
    m = np.tile(np.eye(4), (10, 1, 1))
    m[:, :3, :3] = matrix_from_quat(q)
    m[:, :3, 3] = rng.normal(size=(10, 3))
    assert_quat_allclose(quat_from_matrix(m), q, atol=1e-14)


@pytest.mark.parametrize("angle", [0.0, 1e-12, 1e-7, np.pi - 1e-7, np.pi - 1e-12, np.pi])
def test_quat_from_matrix_is_stable_near_0_and_180_degrees(rng: np.random.Generator, angle: float) -> None:
    axis = rng.normal(size=(50, 3))
    axis /= np.linalg.norm(axis, axis=-1, keepdims=True)
    q = quat_from_axis_angle(axis, angle)
    got = quat_from_matrix(matrix_from_quat(q))
    assert_quat_allclose(got, q, atol=1e-14)
    np.testing.assert_allclose(quat_norm(got), 1.0, atol=1e-15)


@given(unit_quaternions())
def test_matrix_round_trip(q: np.ndarray) -> None:
    assert_quat_allclose(quat_from_matrix(matrix_from_quat(q)), q, atol=1e-14)


def test_check_unit_accepts_unit_and_rejects_scaled(rng: np.random.Generator) -> None:
    q = random_quats(rng, 5)
    np.testing.assert_array_equal(check_unit(q), q)
    with pytest.raises(DegenerateInputError, match=r"rot must hold unit quaternions, got \|q\|² off by 0\.21"):
        check_unit(q * 1.1, "rot")


@pytest.mark.parametrize("block", [7, 64])
def test_blocked_kernels_match_scipy_with_broadcasting(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    """Large batches run block by block (``engine.math._blocks``); a small block exercises that path."""
    monkeypatch.setattr("engine.math._blocks.BLOCK", block)
    q = random_quats(rng, 30).reshape(5, 6, 4)
    v = rng.normal(size=(5, 6, 3))
    scipy_rotation = Rotation.from_quat(q.reshape(-1, 4))
    expected_matrix = scipy_rotation.as_matrix().reshape(5, 6, 3, 3)
    np.testing.assert_allclose(matrix_from_quat(q), expected_matrix, atol=1e-14)
    expected_rotated = scipy_rotation.apply(v.reshape(-1, 3)).reshape(5, 6, 3)
    np.testing.assert_allclose(quat_rotate(q, v), expected_rotated, atol=1e-13)
    np.testing.assert_allclose(
        quat_rotate(q[:, :1], v), np.einsum("aij,abj->abi", expected_matrix[:, 0], v), atol=1e-13
    )
    np.testing.assert_allclose(quat_rotate(q[0, 0], v), v @ expected_matrix[0, 0].T, atol=1e-13)
    affine = np.zeros((5, 6, 4, 4))
    affine[..., :3, :3] = expected_matrix
    affine[..., 3, 3] = 1.0
    assert_quat_allclose(quat_from_matrix(affine), q, atol=1e-14)
    assert np.all(quat_from_matrix(affine)[..., 3] >= 0)
