"""Unit dual quaternions against the 4×4 rigid matrices they stand for."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from engine.math import (
    dq_blend,
    dq_from_matrix,
    dq_from_rotation_translation,
    dq_multiply,
    dq_normalize,
    dq_transform_points,
    matrix_from_dq,
    matrix_from_trs,
    quat_from_axis_angle,
    quat_multiply,
    rotation_translation_from_dq,
    transform_points,
)
from tests.helpers import assert_quat_allclose
from tests.strategies import unit_quaternions, vectors

Y = np.array([0.0, 1.0, 0.0])


def random_rigid(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True), rng.normal(scale=3.0, size=(n, 3))


def rigid_matrix(q: np.ndarray, t: np.ndarray) -> np.ndarray:
    return matrix_from_trs(t, q, np.ones(3))


def test_from_rotation_translation_closed_form() -> None:
    """Translation only: real = identity, dual = (t/2, 0)."""
    dq = dq_from_rotation_translation([0.0, 0.0, 0.0, 1.0], [2.0, -4.0, 6.0])
    np.testing.assert_array_equal(dq, [0.0, 0.0, 0.0, 1.0, 1.0, -2.0, 3.0, 0.0])


@given(unit_quaternions(), vectors())
def test_matrix_of_dq_is_the_rigid_matrix(q: np.ndarray, t: np.ndarray) -> None:
    dq = dq_from_rotation_translation(q, t)
    np.testing.assert_allclose(matrix_from_dq(dq), rigid_matrix(q, t), atol=1e-13)
    q2, t2 = rotation_translation_from_dq(dq)
    np.testing.assert_allclose(q2, q, atol=0)
    np.testing.assert_allclose(t2, t, atol=1e-13)


@given(unit_quaternions(), vectors(), unit_quaternions(), vectors())
def test_dq_product_matches_matrix_composition(qa: np.ndarray, ta: np.ndarray, qb: np.ndarray, tb: np.ndarray) -> None:
    a, b = dq_from_rotation_translation(qa, ta), dq_from_rotation_translation(qb, tb)
    np.testing.assert_allclose(
        matrix_from_dq(dq_multiply(a, b)), rigid_matrix(qa, ta) @ rigid_matrix(qb, tb), atol=1e-12
    )


def test_dq_multiply_batch_and_real_part(rng: np.random.Generator) -> None:
    (qa, ta), (qb, tb) = random_rigid(rng, 40), random_rigid(rng, 40)
    a, b = dq_from_rotation_translation(qa, ta), dq_from_rotation_translation(qb, tb)
    ab = dq_multiply(a, b)
    np.testing.assert_allclose(ab[:, :4], quat_multiply(qa, qb), atol=1e-15)
    np.testing.assert_allclose(matrix_from_dq(ab), rigid_matrix(qa, ta) @ rigid_matrix(qb, tb), atol=1e-12)


def test_transform_points_matches_matrix(rng: np.random.Generator) -> None:
    q, t = random_rigid(rng, 50)
    p = rng.normal(size=(50, 3))
    dq = dq_from_rotation_translation(q, t)
    np.testing.assert_allclose(dq_transform_points(dq, p), transform_points(rigid_matrix(q, t), p), atol=1e-12)


def test_from_matrix_round_trip(rng: np.random.Generator) -> None:
    q, t = random_rigid(rng, 50)
    m = rigid_matrix(q, t)
    np.testing.assert_allclose(matrix_from_dq(dq_from_matrix(m)), m, atol=1e-12)


def test_normalize_restores_unit_constraints(rng: np.random.Generator) -> None:
    q, t = random_rigid(rng, 30)
    dq = dq_from_rotation_translation(q, t)
    scaled = dq * rng.uniform(0.2, 5.0, (30, 1))
    n = dq_normalize(scaled)
    np.testing.assert_allclose(np.linalg.norm(n[:, :4], axis=-1), 1.0, atol=1e-15)
    np.testing.assert_allclose(np.sum(n[:, :4] * n[:, 4:], axis=-1), 0.0, atol=1e-14)
    np.testing.assert_allclose(n, dq, atol=1e-13)


def test_normalize_projects_out_a_non_rigid_dual_part() -> None:
    dq = np.array([0.0, 0.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.5])  # dual has a component along real
    np.testing.assert_allclose(dq_normalize(dq), [0.0, 0.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0], atol=1e-15)


def test_blend_of_one_transform_is_itself(rng: np.random.Generator) -> None:
    q, t = random_rigid(rng, 10)
    dq = dq_from_rotation_translation(q, t)
    np.testing.assert_allclose(dq_blend(dq[:, None, :], np.ones((10, 1))), dq, atol=1e-14)


def test_blend_halfway_about_one_axis() -> None:
    """Two rotations about Y with zero translation: the equal-weight blend is the middle rotation."""
    dqs = dq_from_rotation_translation(quat_from_axis_angle(Y, np.array([0.2, 1.0])), np.zeros(3))
    blended = dq_blend(dqs, [0.5, 0.5])
    assert_quat_allclose(blended[:4], quat_from_axis_angle(Y, 0.6), atol=1e-15)
    np.testing.assert_allclose(blended[4:], 0.0, atol=1e-15)


def test_blend_aligns_hemispheres() -> None:
    """``-dq`` is the same rigid transform; a blend must not care which sign arrives."""
    dqs = dq_from_rotation_translation(quat_from_axis_angle(Y, np.array([0.2, 1.0])), [[1.0, 0, 0], [0, 0, 2.0]])
    weights = np.array([0.3, 0.7])
    expected = dq_blend(dqs, weights)
    flipped = dq_blend(dqs * np.array([[1.0], [-1.0]]), weights)
    np.testing.assert_allclose(flipped, expected, atol=1e-15)
    flipped_first = dq_blend(dqs * np.array([[-1.0], [1.0]]), weights)
    np.testing.assert_allclose(matrix_from_dq(flipped_first), matrix_from_dq(expected), atol=1e-14)


def test_blend_is_rigid_and_between_its_inputs(rng: np.random.Generator) -> None:
    """Per-vertex skinning shape: (V, N, 8) with (V, N) weights gives V rigid transforms."""
    q, t = random_rigid(rng, 3)
    dqs = np.broadcast_to(dq_from_rotation_translation(q, t), (20, 3, 8))
    weights = rng.dirichlet(np.ones(3), size=20)
    m = matrix_from_dq(dq_blend(dqs, weights))
    assert m.shape == (20, 4, 4)
    np.testing.assert_allclose(
        m[:, :3, :3] @ np.swapaxes(m[:, :3, :3], -1, -2), np.broadcast_to(np.eye(3), (20, 3, 3)), atol=1e-13
    )
    np.testing.assert_allclose(np.linalg.det(m[:, :3, :3]), 1.0, atol=1e-13)
    corner = dq_blend(dqs, np.broadcast_to([1.0, 0.0, 0.0], (20, 3)))
    np.testing.assert_allclose(
        matrix_from_dq(corner), np.broadcast_to(rigid_matrix(q[0], t[0]), (20, 4, 4)), atol=1e-13
    )
