"""3-vector helpers: dot, cross, norms, normalisation, angles, perpendiculars."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from engine.errors import DegenerateInputError
from engine.math import (
    angle_between,
    any_perpendicular,
    safe_normalize,
    vec_cross,
    vec_dot,
    vec_norm,
    vec_normalize,
)
from tests.strategies import nonzero_vectors

X, Y, Z = np.eye(3)


def test_cross_is_right_handed() -> None:
    np.testing.assert_array_equal(vec_cross(X, Y), Z)
    np.testing.assert_array_equal(vec_cross(Y, Z), X)
    np.testing.assert_array_equal(vec_cross(Z, X), Y)
    np.testing.assert_array_equal(vec_cross(Y, X), -Z)


def test_dot_and_norm_closed_form_and_broadcast() -> None:
    np.testing.assert_array_equal(vec_dot(np.eye(3), [1.0, 2.0, 3.0]), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(vec_norm([[3.0, 4.0, 12.0], [0.0, 0.0, 0.0]]), [13.0, 0.0])


@given(nonzero_vectors(min_norm=1e-6))
def test_normalize_gives_unit_vectors_in_the_same_direction(v: np.ndarray) -> None:
    n = vec_normalize(v)
    np.testing.assert_allclose(np.linalg.norm(n), 1.0, atol=1e-15)
    np.testing.assert_allclose(n * np.linalg.norm(v), v, atol=1e-12)


def test_normalize_names_the_argument_given() -> None:
    with pytest.raises(DegenerateInputError, match=r"forward must be a non-zero vector, got norm 0 at index \(1,\)"):
        vec_normalize([[1.0, 0, 0], [0.0, 0, 0]], name="forward")


def test_safe_normalize_uses_the_fallback_only_for_zero_vectors() -> None:
    v = np.array([[0.0, 3.0, 4.0], [0.0, 0.0, 0.0], [1e-13, 0.0, 0.0]])
    out = safe_normalize(v, fallback=[0.0, 1.0, 0.0])
    np.testing.assert_allclose(out, [[0.0, 0.6, 0.8], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]], atol=1e-15)
    per_row = safe_normalize(v, fallback=np.array([[9.0, 9, 9], [1.0, 0, 0], [0.0, 0, 1]]))
    np.testing.assert_array_equal(per_row[1:], [[1.0, 0, 0], [0.0, 0, 1]])


def test_angle_between_closed_form() -> None:
    np.testing.assert_allclose(angle_between(X, Y), 0.5 * np.pi, atol=1e-15)
    np.testing.assert_allclose(angle_between(X, -X), np.pi, atol=1e-15)
    np.testing.assert_allclose(angle_between(X, 5 * X), 0.0, atol=1e-15)
    np.testing.assert_allclose(angle_between(X, [1.0, 1.0, 0.0]), 0.25 * np.pi, atol=1e-15)


@pytest.mark.parametrize("angle", [1e-12, 1e-8, 1e-4, np.pi - 1e-8])
def test_angle_between_is_accurate_near_0_and_180(angle: float) -> None:
    v = np.array([np.cos(angle), np.sin(angle), 0.0])
    np.testing.assert_allclose(angle_between(X, v), angle, rtol=1e-12)


def test_angle_between_broadcasts(rng: np.random.Generator) -> None:
    a, b = rng.normal(size=(4, 1, 3)), rng.normal(size=(1, 5, 3))
    expected = np.arccos(np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)))
    np.testing.assert_allclose(angle_between(a, b), expected, atol=1e-12)


@given(nonzero_vectors(min_norm=1e-3))
def test_any_perpendicular_is_unit_and_perpendicular(v: np.ndarray) -> None:
    p = any_perpendicular(v)
    np.testing.assert_allclose(np.linalg.norm(p), 1.0, atol=1e-15)
    np.testing.assert_allclose(np.dot(p, v) / np.linalg.norm(v), 0.0, atol=1e-15)


def test_any_perpendicular_of_the_axes_and_a_batch() -> None:
    axes = np.array([X, Y, Z, -Y, [1.0, 1.0, 1.0]])
    p = any_perpendicular(axes)
    assert p.shape == (5, 3)
    np.testing.assert_allclose(np.sum(p * axes, axis=-1), 0.0, atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(p, axis=-1), 1.0, atol=1e-15)
