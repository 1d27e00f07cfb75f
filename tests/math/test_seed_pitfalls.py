"""One test per pitfall in the seed articles' code (``../shared/seeds/README.md``).

Each test is written so that the seed's version of the function would fail it. The camera
pitfalls (``cross(up, forward)`` look-at, frame-rate dependent smoothing, cone nudging) are tested
with the camera code, not here.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import DegenerateInputError
from engine.math import (
    dq_blend,
    dq_from_rotation_translation,
    matrix_from_dq,
    matrix_from_quat,
    quat_angle,
    quat_from_axis_angle,
    quat_from_euler,
    quat_from_matrix,
    quat_from_yaw_pitch_roll,
    quat_identity,
    quat_inverse,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    quat_slerp,
    yaw_pitch_roll_from_quat,
)
from tests.helpers import assert_quat_allclose

X, Y, Z = np.eye(3)
S = np.sqrt(0.5)


def test_seed000_mul_is_the_hamilton_product_not_swapped() -> None:
    """Seed 000's ``Mul(q1, q2)`` returns ``q2 * q1`` so that rotations compose left to right.

    Ossa's product is Hamilton's (``i * j = k``), matching matrices for column vectors:
    ``matrix(a * b) = matrix(a) @ matrix(b)``, so ``b`` acts first.
    """
    i, j, k, _ = np.eye(4)
    np.testing.assert_array_equal(quat_multiply(i, j), k)
    a = quat_from_axis_angle(Z, 0.5 * np.pi)
    b = quat_from_axis_angle(X, 0.5 * np.pi)
    np.testing.assert_allclose(
        matrix_from_quat(quat_multiply(a, b)), matrix_from_quat(a) @ matrix_from_quat(b), atol=1e-15
    )
    # b first (x stays x), then a (x → y); the swapped product would give x → z.
    np.testing.assert_allclose(quat_rotate(quat_multiply(a, b), X), Y, atol=1e-15)


def test_seed000_normalize_of_a_zero_quaternion_raises() -> None:
    """Seed 000's ``Normalize`` never guards zero length (and reads an undefined ``q``).

    Ossa raises instead of returning NaN or a silent identity, and names where the zero is.
    """
    q = np.array([[0.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    with pytest.raises(DegenerateInputError, match=r"q must be a non-zero quaternion, got norm 0 at index \(1,\)"):
        quat_normalize(q)
    np.testing.assert_array_equal(quat_normalize(q[:1]), [[0.0, 0.0, 0.0, 1.0]])


def test_seed000_inverse_of_a_non_unit_quaternion() -> None:
    """Seed 000's ``Inverse`` divides the conjugate by ``|q|``, not ``|q|²``: wrong unless ``|q| = 1``."""
    q = 3.0 * quat_from_axis_angle([1.0, 2.0, 2.0], 0.8)
    np.testing.assert_allclose(quat_multiply(q, quat_inverse(q)), [0.0, 0.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(quat_inverse([0.0, 0.0, 0.0, 2.0]), [0.0, 0.0, 0.0, 0.5])


def test_seed000_euler_extraction_at_pitch_minus_90_degrees() -> None:
    """Seed 000 tests ``sp == 1.0f`` only: pitch −90° (``sp = −1``) falls into the general branch."""
    for yaw, roll in ((0.3, 0.2), (-1.0, 2.5), (0.0, 0.0)):
        q = quat_from_yaw_pitch_roll(yaw, -0.5 * np.pi, roll)
        ypr = yaw_pitch_roll_from_quat(q)
        assert np.all(np.isfinite(ypr))
        np.testing.assert_allclose(ypr[1], -0.5 * np.pi, atol=1e-7)
        assert ypr[2] == 0.0
        assert_quat_allclose(quat_from_euler(ypr, "YXZ"), q, atol=1e-12)


def test_seed000_euler_extraction_at_sin_pitch_one_plus_minus_epsilon() -> None:
    """``sp`` rounded past 1 makes ``asin`` NaN, and ``sp`` just under 1 misses the exact test.

    For intrinsic YXZ, ``sin(pitch) = 2(wx − yz)``. A plain 90° pitch already rounds that to
    ``1 + 2.2e-16``; slightly non-unit inputs and pitches a hair under 90° cover ``1 − ε``.
    """
    pitches = 0.5 * np.pi + np.array([0.0, -1e-15, -1e-12, -1e-9, -5e-8, 1e-12])
    q = quat_from_yaw_pitch_roll(0.4, pitches, -0.3)
    q = np.concatenate((q, q * (1.0 + 4e-16), q * (1.0 - 4e-16)))
    sp = 2.0 * (q[:, 3] * q[:, 0] - q[:, 1] * q[:, 2])
    assert np.any(sp > 1.0)  # both sides of 1 are exercised
    assert np.any(sp < 1.0)
    with np.errstate(invalid="ignore"):
        assert np.any(np.isnan(np.arcsin(sp)))  # the seed's asin would give NaN here
    ypr = yaw_pitch_roll_from_quat(q)
    assert np.all(np.isfinite(ypr))
    assert np.all(np.abs(ypr[:, 1]) <= 0.5 * np.pi)
    np.testing.assert_allclose(ypr[:, 1], 0.5 * np.pi, atol=1e-7)
    np.testing.assert_array_equal(ypr[:, 2], 0.0)  # all within the 1e-7 lock tolerance
    np.testing.assert_allclose(ypr[:, 0], 0.4 - (-0.3), atol=1e-7)
    assert_quat_allclose(quat_from_euler(ypr, "YXZ"), quat_normalize(q), atol=1e-7)


def test_seed001_matrix_formula_is_not_transposed() -> None:
    """Seed 001: an odd number of convention flips gives the transpose of the right matrix.

    Ossa: active rotation, column vectors, right-handed. 90° about +Z maps +X to +Y with ``R @ v``.
    """
    q = quat_from_axis_angle(Z, 0.5 * np.pi)
    expected = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(matrix_from_quat(q), expected, atol=1e-15)
    np.testing.assert_allclose(matrix_from_quat(q) @ X, Y, atol=1e-15)
    assert_quat_allclose(quat_from_matrix(expected), [0.0, 0.0, S, S], atol=1e-15)
    general = quat_from_axis_angle([1.0, -2.0, 0.5], 1.1)
    v = np.array([0.3, 0.7, -1.9])
    np.testing.assert_allclose(matrix_from_quat(general) @ v, quat_rotate(general, v), atol=1e-15)


def test_seed001_matrix_to_quaternion_near_0_and_180_degrees() -> None:
    """Seed 001: near 180° ``w`` is tiny and the trace formula divides by it; near 0° ``|xyz|`` is.

    Shepperd's branch on the largest diagonal term keeps full precision (a single-formula method
    gives NaN at exactly 180° and loses ~8 digits at 180° − 1e-9).
    """
    axis = np.array([0.48, -0.6, 0.64])
    angles = np.array([np.pi, np.pi - 1e-9, np.pi - 1e-6, 0.0, 1e-9, 1e-6])
    q = quat_from_axis_angle(axis, angles)
    got = quat_from_matrix(matrix_from_quat(q))
    assert np.all(np.isfinite(got))
    assert_quat_allclose(got, q, atol=2e-16 * 8)


def test_seed002_slerp_of_nearly_equal_keys_does_not_return_q1() -> None:
    """Seed 002's slerp returns ``q1`` whenever ``|cos| >= 0.999``, whatever ``t``.

    Rotations up to ~5° apart satisfy that test; they must still interpolate.
    """
    a = quat_from_axis_angle([0.2, 1.0, -0.4], 0.9)
    t = np.array([0.25, 0.5, 0.75, 1.0])
    for angle in (0.08, 0.01, 1e-5, 1e-8):
        b = quat_multiply(a, quat_from_axis_angle(Y, angle))
        assert abs(np.dot(a, b)) >= 0.999
        np.testing.assert_allclose(quat_angle(a, quat_slerp(a, b, t)), angle * t, rtol=1e-6)


def test_seed002_slerp_flips_the_sign_before_the_nearly_equal_test() -> None:
    """Seed 002 tests ``|cos|`` before flipping: ``b ≈ −a`` must still take the short arc."""
    a = quat_from_axis_angle(X, 0.5)
    b = -quat_multiply(a, quat_from_axis_angle(Y, 0.01))
    assert np.dot(a, b) < -0.999
    assert_quat_allclose(quat_slerp(a, b, 0.5), quat_multiply(a, quat_from_axis_angle(Y, 0.005)), atol=1e-15)


def test_seed002_slerp_does_not_clamp_t() -> None:
    """Seed 002 clamps ``t`` to [0, 1]; Ossa extrapolates at constant angular speed."""
    a = quat_identity()
    b = quat_from_axis_angle(Z, 0.4)
    t = np.array([-0.5, 1.5, 3.0])
    assert_quat_allclose(quat_slerp(a, b, t), quat_from_axis_angle(Z, 0.4 * t), atol=1e-15)


def test_seed002_blend_aligns_hemispheres_before_summing() -> None:
    """Seed 002: a weighted sum of quaternions explodes unless every input is flipped next to a reference.

    Dual-quaternion blending is that sum; ``-dq`` is the same transform and must blend the same.
    """
    dqs = dq_from_rotation_translation(
        quat_from_axis_angle(Y, np.array([0.1, 0.3])), [[0.0, 1.0, 0.0], [0.0, 2.0, 0.0]]
    )
    weights = np.array([0.5, 0.5])
    expected = dq_from_rotation_translation(quat_from_axis_angle(Y, 0.2), [0.0, 1.5, 0.0])
    np.testing.assert_allclose(matrix_from_dq(dq_blend(dqs, weights)), matrix_from_dq(expected), atol=1e-14)
    opposite = dqs * np.array([[1.0], [-1.0]])
    np.testing.assert_allclose(matrix_from_dq(dq_blend(opposite, weights)), matrix_from_dq(expected), atol=1e-14)
