"""4×4 affine matrices: TRS both ways, affine inverse, transforms, perspective, GL packing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from scipy.spatial.transform import Rotation

from engine.math import (
    affine_inverse,
    gl_pack,
    matrix_from_quat,
    matrix_from_trs,
    perspective,
    quat_from_axis_angle,
    transform_points,
    transform_vectors,
    trs_from_matrix,
)
from tests.helpers import assert_quat_allclose
from tests.strategies import scales, unit_quaternions, vectors


def random_quats(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def reference_trs(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``T @ R @ S`` multiplied out from three separate 4×4 matrices (scipy for R)."""
    translate, rotate, scale = np.eye(4), np.eye(4), np.diag([*s, 1.0])
    translate[:3, 3] = t
    rotate[:3, :3] = Rotation.from_quat(q).as_matrix()
    return translate @ rotate @ scale


def test_matrix_from_trs_is_t_times_r_times_s(rng: np.random.Generator) -> None:
    t, q, s = rng.normal(size=(20, 3)), random_quats(rng, 20), rng.uniform(0.2, 3, (20, 3))
    expected = np.stack([reference_trs(t[i], q[i], s[i]) for i in range(20)])
    np.testing.assert_allclose(matrix_from_trs(t, q, s), expected, atol=1e-14)


def test_matrix_from_trs_closed_form() -> None:
    """Scale x by 2, turn 90° about z, move by (1, 2, 3): the point (1, 0, 0) lands at (1, 4, 3)."""
    m = matrix_from_trs([1.0, 2.0, 3.0], quat_from_axis_angle([0, 0, 1], 0.5 * np.pi), [2.0, 1.0, 1.0])
    np.testing.assert_allclose(m @ [1.0, 0.0, 0.0, 1.0], [1.0, 4.0, 3.0, 1.0], atol=1e-15)
    np.testing.assert_array_equal(m[3], [0.0, 0.0, 0.0, 1.0])


def test_matrix_from_trs_broadcasts(rng: np.random.Generator) -> None:
    m = matrix_from_trs(np.zeros(3), random_quats(rng, 5)[:, None], np.ones((1, 2, 3)))
    assert m.shape == (5, 2, 4, 4)


@given(vectors(), unit_quaternions(), scales())
def test_trs_round_trip(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> None:
    t2, q2, s2 = trs_from_matrix(matrix_from_trs(t, q, s))
    np.testing.assert_allclose(t2, t, atol=1e-14)
    assert_quat_allclose(q2, q, atol=1e-12)
    np.testing.assert_allclose(s2, s, rtol=1e-13)


@given(vectors(), unit_quaternions(), scales(mirror=True))
def test_trs_round_trip_of_mirrored_matrices(t: np.ndarray, q: np.ndarray, s: np.ndarray) -> None:
    """A mirror is carried by a negative x scale; the matrix comes back exactly."""
    m = matrix_from_trs(t, q, s)
    t2, q2, s2 = trs_from_matrix(m)
    np.testing.assert_allclose(matrix_from_trs(t2, q2, s2), m, atol=1e-12)
    np.testing.assert_allclose(np.abs(s2), np.abs(s), rtol=1e-13)
    assert (s2[0] < 0) == (np.prod(s) < 0)
    assert np.all(s2[1:] > 0)
    np.testing.assert_allclose(np.linalg.det(matrix_from_quat(q2)), 1.0, atol=1e-13)


def test_trs_from_matrix_batch(rng: np.random.Generator) -> None:
    t, q, s = rng.normal(size=(4, 3, 3)), random_quats(rng, 12).reshape(4, 3, 4), rng.uniform(0.5, 2, (4, 3, 3))
    t2, q2, s2 = trs_from_matrix(matrix_from_trs(t, q, s))
    assert (t2.shape, q2.shape, s2.shape) == ((4, 3, 3), (4, 3, 4), (4, 3, 3))
    np.testing.assert_allclose(s2, s, rtol=1e-13)


def test_affine_inverse_matches_numpy_inv(rng: np.random.Generator) -> None:
    m = matrix_from_trs(rng.normal(size=(30, 3)), random_quats(rng, 30), rng.uniform(-3, 3, (30, 3)))
    m[:, :3, :3] += rng.normal(scale=0.3, size=(30, 3, 3))  # shear too: any affine matrix
    np.testing.assert_allclose(affine_inverse(m), np.linalg.inv(m), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(affine_inverse(m) @ m, np.broadcast_to(np.eye(4), m.shape), atol=1e-11)


def test_transform_points_and_vectors_match_homogeneous_product(rng: np.random.Generator) -> None:
    m = matrix_from_trs(rng.normal(size=(10, 3)), random_quats(rng, 10), rng.uniform(0.5, 2, (10, 3)))
    p = rng.normal(size=(10, 3))
    homogeneous = np.einsum("nij,nj->ni", m, np.concatenate((p, np.ones((10, 1))), axis=-1))
    np.testing.assert_allclose(transform_points(m, p), homogeneous[:, :3], atol=1e-14)
    direction = np.einsum("nij,nj->ni", m, np.concatenate((p, np.zeros((10, 1))), axis=-1))
    np.testing.assert_allclose(transform_vectors(m, p), direction[:, :3], atol=1e-14)


def test_transform_points_broadcasts_one_matrix_over_many_points(rng: np.random.Generator) -> None:
    m = matrix_from_trs([1.0, 0, 0], random_quats(rng, 1)[0], [1.0, 1, 1])
    p = rng.normal(size=(6, 5, 3))
    np.testing.assert_allclose(transform_points(m, p), p @ m[:3, :3].T + m[:3, 3], atol=1e-14)


def glu_perspective(fovy_degrees: float, aspect: float, z_near: float, z_far: float) -> np.ndarray:
    """The matrix printed on the gluPerspective manual page, f = cotangent(fovy / 2)."""
    f = 1.0 / np.tan(np.radians(fovy_degrees) / 2.0)
    return np.array(
        [
            [f / aspect, 0, 0, 0],
            [0, f, 0, 0],
            [0, 0, (z_far + z_near) / (z_near - z_far), 2 * z_far * z_near / (z_near - z_far)],
            [0, 0, -1, 0],
        ]
    )


@pytest.mark.parametrize(("fovy", "aspect", "near", "far"), [(60.0, 16 / 9, 0.1, 100.0), (90.0, 1.0, 1.0, 2.0)])
def test_perspective_is_glu_perspective(fovy: float, aspect: float, near: float, far: float) -> None:
    m = perspective(np.radians(fovy), aspect, near, far)
    np.testing.assert_allclose(m, glu_perspective(fovy, aspect, near, far), rtol=1e-14)
    for z, ndc in ((-near, -1.0), (-far, 1.0)):
        clip = m @ [0.0, 0.0, z, 1.0]
        np.testing.assert_allclose(clip[2] / clip[3], ndc, atol=1e-12)
    top = m @ [0.0, near * np.tan(np.radians(fovy) / 2), -near, 1.0]
    np.testing.assert_allclose(top[1] / top[3], 1.0, atol=1e-12)


def test_gl_pack_is_column_major_float32(rng: np.random.Generator) -> None:
    m = matrix_from_trs(rng.normal(size=(3, 3)), random_quats(rng, 3), rng.uniform(0.5, 2, (3, 3)))
    packed = gl_pack(m)
    assert packed.dtype == np.float32
    assert packed.flags.c_contiguous
    assert packed.shape == (3, 4, 4)
    flat = packed.reshape(3, 16)
    np.testing.assert_array_equal(flat[:, 12:15], m[:, :3, 3].astype(np.float32))  # translation is the 4th column
    np.testing.assert_array_equal(flat[:, 3::4], np.tile(np.float32([0, 0, 0, 1]), (3, 1)))  # the bottom row
    np.testing.assert_array_equal(flat[1], m[1].ravel(order="F").astype(np.float32))
