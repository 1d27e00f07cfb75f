"""Tests of engine.anim.rootmotion against 4×4 rigid transforms built with scipy."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim.rootmotion import Planar, planar_from_root, remove_planar, root_motion_delta, yaw_from_quat
from tests.helpers import assert_quat_allclose


def matrix(yaw: float, x: float, z: float) -> np.ndarray:
    """Rigid 4×4: rotate by ``yaw`` about +Y, then translate by (x, 0, z)."""
    m = np.eye(4)
    m[:3, :3] = Rotation.from_rotvec([0.0, yaw, 0.0]).as_matrix()
    m[:3, 3] = [x, 0.0, z]
    return m


def as_matrix(p: Planar) -> np.ndarray:
    return matrix(float(p.yaw), float(p.w.imag), float(p.w.real))


def planar(yaw: float, x: float, z: float) -> Planar:
    return Planar(np.float64(yaw), np.complex128(z + 1j * x))


finite = st.floats(-5.0, 5.0)
angle = st.floats(-3.0, 3.0)


@given(angle, finite, finite, angle, finite, finite)
def test_then_and_inverse_match_matrices(y1, x1, z1, y2, x2, z2):
    a, b = planar(y1, x1, z1), planar(y2, x2, z2)
    np.testing.assert_allclose(as_matrix(a.then(b)), matrix(y1, x1, z1) @ matrix(y2, x2, z2), atol=1e-12)
    np.testing.assert_allclose(as_matrix(a.inverse()), np.linalg.inv(matrix(y1, x1, z1)), atol=1e-12)


@given(st.sampled_from([0.0, 1e-12, 0.3, -2.0, np.pi]), finite, finite, st.integers(-7, 7))
def test_power_matches_repeated_products(yaw, x, z, n):
    step = matrix(yaw, x, z)
    expected = np.linalg.matrix_power(step if n >= 0 else np.linalg.inv(step), abs(n))
    np.testing.assert_allclose(as_matrix(planar(yaw, x, z).power(n)), expected, atol=1e-9)


def test_translation_layout():
    np.testing.assert_allclose(planar(0.0, 1.0, 2.0).translation, [1.0, 0.0, 2.0])


@given(angle, st.floats(-1.5, 1.5), st.floats(-1.5, 1.5))
def test_yaw_is_the_twist_about_y(yaw, a, b):
    twist = Rotation.from_rotvec([0.0, yaw, 0.0])
    swing = Rotation.from_rotvec([a, 0.0, b])  # an axis in the XZ plane: no Y component
    q = (twist * swing).as_quat()
    np.testing.assert_allclose(yaw_from_quat(q), yaw, atol=1e-9)
    np.testing.assert_allclose(yaw_from_quat(-q), yaw, atol=1e-9)
    t, r = remove_planar(np.array([1.0, 2.0, 3.0]), q)
    np.testing.assert_allclose(t, [0.0, 2.0, 0.0])
    assert_quat_allclose(r, swing.as_quat(), atol=1e-9)


def test_planar_from_root():
    q = Rotation.from_rotvec([0.0, 0.5, 0.0]).as_quat()
    p = planar_from_root(np.array([1.0, 9.0, 2.0]), q)
    np.testing.assert_allclose(as_matrix(p), matrix(0.5, 1.0, 2.0), atol=1e-12)


def test_root_motion_delta_over_loops_composes_loop_transforms():
    """M(a)⁻¹ · (cumulative path) · M(b), checked against explicit matrix products."""
    first, last = planar(0.1, 0.0, 0.2), planar(0.6, 0.3, 1.4)
    begin, end = planar(0.3, 0.1, 0.9), planar(0.2, 0.05, 0.4)
    loop = np.linalg.inv(as_matrix(first)) @ as_matrix(last)
    for n in (-3, -1, 0, 1, 4):
        delta = root_motion_delta(begin, end, first, last, n)
        power = np.linalg.matrix_power(loop if n >= 0 else np.linalg.inv(loop), abs(n))
        expected = (
            np.linalg.inv(as_matrix(begin))
            @ as_matrix(first)
            @ power
            @ np.linalg.inv(as_matrix(first))
            @ as_matrix(end)
        )
        np.testing.assert_allclose(as_matrix(delta), expected, atol=1e-12)
