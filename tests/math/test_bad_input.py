"""Bad input raises a typed error naming the argument and what was expected vs received."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from engine.errors import DegenerateInputError, InvalidInputError, OssaError
from engine.math import (
    affine_inverse,
    any_perpendicular,
    axis_angle_from_quat,
    check_unit,
    dq_blend,
    dq_multiply,
    dq_normalize,
    dq_transform_points,
    euler_from_quat,
    gl_pack,
    matrix_from_quat,
    matrix_from_trs,
    perspective,
    quat_from_axis_angle,
    quat_from_euler,
    quat_from_matrix,
    quat_from_rotvec,
    quat_from_yaw_pitch_roll,
    quat_inverse,
    quat_log,
    quat_multiply,
    quat_normalize,
    quat_pow,
    quat_rotate,
    quat_slerp,
    quat_squad,
    rotvec_from_quat,
    safe_normalize,
    squad_control_points,
    transform_points,
    trs_from_matrix,
    trusted,
    unflip,
    validating,
    vec_cross,
    vec_normalize,
)

Q = np.array([0.0, 0.0, 0.0, 1.0])
V = np.array([1.0, 2.0, 3.0])
M4 = np.eye(4)
DQ = np.array([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])
NAN_Q = np.array([0.0, np.nan, 0.0, 1.0])


def test_errors_are_ossa_errors_and_value_errors() -> None:
    assert issubclass(DegenerateInputError, InvalidInputError)
    assert issubclass(InvalidInputError, OssaError)
    assert issubclass(InvalidInputError, ValueError)


WRONG_SHAPES: list[tuple[Callable[..., Any], tuple[Any, ...], str]] = [
    (quat_multiply, (np.zeros(3), Q), r"a must have shape \(\.\.\., 4\), got \(3,\)"),
    (quat_multiply, (Q, np.zeros((2, 5))), r"b must have shape \(\.\.\., 4\), got \(2, 5\)"),
    (quat_normalize, (np.float64(1.0),), r"q must have shape \(\.\.\., 4\), got \(\)"),
    (quat_rotate, (Q, np.zeros(4)), r"v must have shape \(\.\.\., 3\), got \(4,\)"),
    (quat_from_axis_angle, (np.zeros(4), 1.0), r"axis must have shape \(\.\.\., 3\), got \(4,\)"),
    (quat_from_rotvec, (np.zeros((3, 2)),), r"rotvec must have shape \(\.\.\., 3\), got \(3, 2\)"),
    (matrix_from_quat, (np.zeros((4, 3)),), r"q must have shape \(\.\.\., 4\), got \(4, 3\)"),
    (quat_from_matrix, (np.zeros((3, 4)),), r"m must have shape \(\.\.\., 3, 3\) or \(\.\.\., 4, 4\), got \(3, 4\)"),
    (quat_from_euler, (np.zeros(2), "XYZ"), r"angles must have shape \(\.\.\., 3\), got \(2,\)"),
    (quat_slerp, (np.zeros(3), Q, 0.5), r"a must have shape \(\.\.\., 4\), got \(3,\)"),
    (squad_control_points, (np.zeros((5, 3)),), r"keys must have shape \(\.\.\., 4\), got \(5, 3\)"),
    (matrix_from_trs, (V, Q, np.ones(2)), r"scale must have shape \(\.\.\., 3\), got \(2,\)"),
    (matrix_from_trs, (V, np.ones(3), V), r"rotation must have shape \(\.\.\., 4\), got \(3,\)"),
    (trs_from_matrix, (np.eye(3),), r"m must have shape \(\.\.\., 4, 4\), got \(3, 3\)"),
    (affine_inverse, (np.eye(3),), r"m must have shape \(\.\.\., 4, 4\), got \(3, 3\)"),
    (transform_points, (M4, np.zeros(4)), r"points must have shape \(\.\.\., 3\), got \(4,\)"),
    (gl_pack, (np.eye(3),), r"m must have shape \(\.\.\., 4, 4\), got \(3, 3\)"),
    (dq_multiply, (Q, DQ), r"a must have shape \(\.\.\., 8\), got \(4,\)"),
    (dq_blend, (np.zeros((2, 4)), [0.5, 0.5]), r"dqs must have shape \(\.\.\., 8\), got \(2, 4\)"),
    (
        dq_blend,
        (np.stack([DQ, DQ]), [1.0]),
        r"weights must have shape \(\.\.\., N\) for dqs of shape \(\.\.\., N, 8\), got weights \(1,\) and dqs \(2, 8\)",
    ),
    (
        dq_blend,
        (DQ, 1.0),
        r"weights must have shape \(\.\.\., N\) for dqs of shape \(\.\.\., N, 8\), got weights \(\) and dqs \(8,\)",
    ),
    (dq_transform_points, (DQ, np.zeros(2)), r"points must have shape \(\.\.\., 3\), got \(2,\)"),
    (vec_cross, (np.zeros(2), V), r"a must have shape \(\.\.\., 3\), got \(2,\)"),
]


@pytest.mark.parametrize(("function", "args", "message"), WRONG_SHAPES, ids=lambda x: getattr(x, "__name__", ""))
def test_wrong_shapes_raise(function: Callable[..., Any], args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        function(*args)


def test_shapes_are_checked_even_when_trusted() -> None:
    with trusted(), pytest.raises(InvalidInputError, match=r"v must have shape \(\.\.\., 3\), got \(2,\)"):
        quat_rotate(Q, np.zeros(2))


NOT_FINITE: list[tuple[Callable[..., Any], tuple[Any, ...], str]] = [
    (quat_normalize, (NAN_Q,), r"q must be finite, got nan at index \(1,\)"),
    (quat_multiply, (Q, [[0, 0, 0, 1.0], [np.inf, 0, 0, 1]]), r"b must be finite, got inf at index \(1, 0\)"),
    (quat_from_axis_angle, (V, np.nan), r"angle must be finite, got nan at index \(\)"),
    (quat_slerp, (Q, Q, -np.inf), r"t must be finite, got -inf at index \(\)"),
    (quat_pow, (Q, np.nan), r"exponent must be finite, got nan"),
    (quat_from_matrix, (np.full((4, 4), np.nan),), r"m must be finite, got nan at index \(0, 0\)"),
    (matrix_from_trs, ([0.0, np.inf, 0.0], Q, V), r"translation must be finite, got inf at index \(1,\)"),
    (quat_from_yaw_pitch_roll, (0.0, np.nan, 0.0), r"pitch must be finite, got nan"),
    (gl_pack, (np.full((4, 4), np.inf),), r"m must be finite, got inf"),
    (dq_normalize, (np.full(8, np.nan),), r"dq must be finite, got nan at index \(0,\)"),
]


@pytest.mark.parametrize(("function", "args", "message"), NOT_FINITE, ids=lambda x: getattr(x, "__name__", ""))
def test_nan_and_inf_raise(function: Callable[..., Any], args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        function(*args)


def test_trusted_skips_the_finiteness_scan_and_restores_it() -> None:
    assert validating()
    with trusted():
        assert not validating()
        assert np.isnan(quat_multiply(Q, NAN_Q)).any()
    assert validating()
    with pytest.raises(InvalidInputError, match="b must be finite"):
        quat_multiply(Q, NAN_Q)


def test_non_numeric_input_raises() -> None:
    with pytest.raises(InvalidInputError, match=r"q must be numeric, got str"):
        quat_normalize("quaternion")
    with pytest.raises(InvalidInputError, match=r"m must be numeric, got list"):
        quat_from_matrix([["a", "b", "c"]] * 3)


ZERO = np.zeros(4)
DEGENERATE: list[tuple[Callable[..., Any], tuple[Any, ...], str]] = [
    (quat_normalize, (ZERO,), r"q must be a non-zero quaternion, got norm 0"),
    (quat_inverse, ([[0, 0, 0, 1.0], [0, 0, 0, 0]],), r"q must be a non-zero quaternion, got norm 0 at index \(1,\)"),
    (axis_angle_from_quat, (ZERO,), r"q must be a non-zero quaternion"),
    (rotvec_from_quat, (ZERO,), r"q must be a non-zero quaternion"),
    (quat_log, (ZERO,), r"q must be a non-zero quaternion"),
    (euler_from_quat, (ZERO, "XYZ"), r"q must be a non-zero quaternion"),
    (quat_from_axis_angle, (np.zeros(3), 1.0), r"axis must be a non-zero axis, got norm 0"),
    (
        quat_from_axis_angle,
        ([[0, 1, 0], [0, 0, 1e-13]], 1.0),
        r"axis must be a non-zero axis, got norm 1e-13 at index \(1,\)",
    ),
    (vec_normalize, (np.zeros(3),), r"v must be a non-zero vector, got norm 0"),
    (any_perpendicular, (np.zeros((2, 3)),), r"v must be a non-zero vector, got norm 0 at index \(0,\)"),
    (dq_normalize, (np.zeros(8),), r"dq must be a non-zero dual quaternion \(real part\), got norm 0"),
    (
        dq_blend,
        (np.stack([DQ, DQ]), [0.0, 0.0]),
        r"weighted sum of dqs must be a non-zero dual quaternion \(real part\)",
    ),
    (trs_from_matrix, (np.diag([1.0, 0.0, 1.0, 1.0]),), r"m has a zero-length basis column: scale 0"),
    (affine_inverse, (np.diag([1.0, 1.0, 0.0, 1.0]),), r"m is singular \(its 3×3 part has determinant 0\)"),
    (check_unit, (2 * Q, "rest"), r"rest must hold unit quaternions, got \|q\|² off by 3"),
]


@pytest.mark.parametrize(("function", "args", "message"), DEGENERATE, ids=lambda x: getattr(x, "__name__", ""))
def test_degenerate_input_raises(function: Callable[..., Any], args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(DegenerateInputError, match=message):
        function(*args)


def test_safe_normalize_does_not_raise_on_zero() -> None:
    np.testing.assert_array_equal(safe_normalize(np.zeros(3), [0.0, 0.0, 1.0]), [0.0, 0.0, 1.0])


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ((0.0, 1.0, 0.1, 10.0), "fov_y=0.0"),
        ((np.pi, 1.0, 0.1, 10.0), "fov_y=3.14"),
        ((1.0, 0.0, 0.1, 10.0), "aspect=0.0"),
        ((1.0, 1.0, 0.0, 10.0), "near=0.0"),
        ((1.0, 1.0, 10.0, 10.0), "near=10.0, far=10.0"),
        ((np.nan, 1.0, 0.1, 10.0), "fov_y=nan"),
    ],
)
def test_perspective_rejects_bad_frusta(args: tuple[float, float, float, float], shown: str) -> None:
    with pytest.raises(
        DegenerateInputError, match=r"perspective needs 0 < fov_y < π, aspect > 0 and 0 < near < far, got .*" + shown
    ):
        perspective(*args)


@pytest.mark.parametrize(
    ("order", "message"),
    [
        (
            "XYZW",
            r"order must be 3 letters from xyz, all uppercase \(intrinsic\) or all lowercase \(extrinsic\), got 'XYZW'",
        ),
        ("XyZ", r"all uppercase \(intrinsic\) or all lowercase \(extrinsic\), got 'XyZ'"),
        (123, r"order must be 3 letters .* got 123"),
        ("XXY", r"order must name axes like 'XYZ' or 'ZXZ' \(no axis twice in a row\), got 'XXY'"),
        ("abc", r"order must name axes like 'XYZ' or 'ZXZ' .* got 'abc'"),
    ],
)
def test_bad_euler_orders_raise(order: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        quat_from_euler(np.zeros(3), order)
    with pytest.raises(InvalidInputError, match=message):
        euler_from_quat(Q, order)


def test_unflip_refuses_the_component_axis() -> None:
    with pytest.raises(InvalidInputError, match=r"axis must be a time axis, not the quaternion component axis"):
        unflip(np.tile(Q, (3, 1)), axis=-1)
    with pytest.raises(InvalidInputError, match=r"axis must be a time axis"):
        unflip(np.tile(Q, (3, 1)), axis=1)


def test_squad_validates_every_key() -> None:
    with pytest.raises(InvalidInputError, match=r"q2 must have shape \(\.\.\., 4\), got \(3,\)"):
        quat_squad(Q, np.zeros(3), Q, Q, 0.5)
    with pytest.raises(InvalidInputError, match=r"s1 must be finite, got nan"):
        quat_squad(Q, Q, NAN_Q, Q, 0.5)


def test_empty_batches_are_valid_input() -> None:
    empty_q = np.zeros((0, 4))
    assert matrix_from_quat(empty_q).shape == (0, 3, 3)
    assert quat_from_matrix(np.zeros((0, 4, 4))).shape == (0, 4)
    assert quat_rotate(empty_q, V).shape == (0, 3)
    assert quat_slerp(empty_q, Q, 0.5).shape == (0, 4)
    assert euler_from_quat(empty_q, "YXZ").shape == (0, 3)
