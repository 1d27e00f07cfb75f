"""engine.math.kernels against scipy's Rotation, in both memory layouts, and the one swing-twist clamp.

The kernels are the single copy of each formula: the public ``quat_*`` functions, the IK
solvers, ``model_from_pose`` and the camera's cone all call them. References: scipy
``Rotation`` (products, rotations, matrices, powers via rotation vectors), closed forms for the
clamp (angles measured with scipy), and the public validated functions for equality.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.camera import swing_twist_clamp as camera_swing_twist_clamp
from engine.math import kernels, quat_from_two_vectors, quat_multiply, quat_pow
from tests.helpers import assert_quat_allclose
from tests.strategies import unit_quaternion_arrays, unit_quaternions, unit_vectors


def random_unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    q = rng.normal(size=(*shape, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def test_product_rotation_and_matrix_match_scipy(rng: np.random.Generator) -> None:
    a, b = random_unit(rng, (50,)), random_unit(rng, (50,))
    v = rng.normal(size=(50, 3))
    ra, rb = Rotation.from_quat(a), Rotation.from_quat(b)
    assert_quat_allclose(kernels.mul(a, b), (ra * rb).as_quat(), atol=1e-14)
    np.testing.assert_allclose(kernels.rotate(a, v), ra.apply(v), atol=1e-14)
    np.testing.assert_allclose(kernels.rotation_matrix(a), ra.as_matrix(), atol=1e-14)
    assert_quat_allclose(kernels.from_matrix(ra.as_matrix()), a, atol=1e-14)
    assert np.all(kernels.from_matrix(ra.as_matrix())[:, 3] >= 0.0)
    np.testing.assert_allclose(kernels.cross(v, v[::-1]), np.cross(v, v[::-1]), atol=1e-15)
    np.testing.assert_allclose(kernels.left_matrix(a) @ b[..., None], kernels.mul(a, b)[..., None], atol=1e-15)


def test_component_first_kernels_serve_the_batch_innermost_layout(rng: np.random.Generator) -> None:
    """The ``*_into`` kernels take (4, J, B) buffers as they are: same numbers as the last-axis forms."""
    a, b = random_unit(rng, (3, 7)), random_unit(rng, (3, 7))  # (B, J, 4)
    out = np.empty((4, 7, 3))
    kernels.mul_into(out, a.transpose(2, 1, 0), b.transpose(2, 1, 0))
    np.testing.assert_allclose(out.transpose(2, 1, 0), kernels.mul(a, b), rtol=0, atol=1e-15)
    scale = rng.uniform(0.5, 2.0, (3, 7, 3))
    matrices = np.empty((3, 3, 7, 3))
    kernels.rotation_matrix_into(matrices, a.transpose(2, 1, 0), scale.transpose(2, 1, 0))
    expected = Rotation.from_quat(a.reshape(-1, 4)).as_matrix().reshape(3, 7, 3, 3) * scale[..., None, :]
    np.testing.assert_allclose(matrices.transpose(3, 2, 0, 1), expected, atol=1e-14)
    single = np.empty((3, 3))
    kernels.rotation_matrix_into(single, a[0, 0])  # one quaternion, 0-d components
    np.testing.assert_allclose(single, Rotation.from_quat(a[0, 0]).as_matrix(), atol=1e-15)


@given(unit_quaternion_arrays(), st.floats(-2.0, 2.0))
def test_power_is_the_scaled_rotation_vector(q: np.ndarray, t: float) -> None:
    rotvec = Rotation.from_quat(q).as_rotvec()  # angle in [0, π]: the shortest arc
    assert_quat_allclose(kernels.power(q, t), Rotation.from_rotvec(t * rotvec).as_quat(), atol=1e-12)
    assert_quat_allclose(kernels.power(-q, t), kernels.power(q, t), atol=1e-15)  # q and -q alike
    np.testing.assert_allclose(quat_pow(q, t), kernels.power(q, t), atol=1e-15)  # validation + this kernel


@given(unit_vectors(), unit_vectors())
def test_shortest_arc_turns_u_onto_v(u: np.ndarray, v: np.ndarray) -> None:
    q = quat_from_two_vectors(2.0 * u, 0.5 * v)
    np.testing.assert_allclose(Rotation.from_quat(q).apply(u), v, atol=1e-12)
    angle = np.arctan2(np.linalg.norm(np.cross(u, v)), u @ v)
    np.testing.assert_allclose(Rotation.from_quat(q).magnitude(), angle, atol=1e-12)  # the shortest one


@given(unit_quaternions(), unit_vectors(), st.floats(0.05, np.pi), st.floats(0.0, np.pi))
def test_swing_twist_clamp_limits_both_parts_and_keeps_what_is_inside(
    q: np.ndarray, axis: np.ndarray, max_swing: float, max_twist: float
) -> None:
    clamped, changed = kernels.swing_twist_clamp(q, axis, max_swing, max_twist)
    moved = Rotation.from_quat(clamped).apply(axis)  # the swing moves the axis, the twist does not
    swing_angle = np.arctan2(np.linalg.norm(np.cross(axis, moved)), axis @ moved)
    assert swing_angle <= max_swing + 1e-9
    _, twist = kernels.swing_twist(clamped, axis)
    np.testing.assert_allclose(np.abs(np.cross(twist[:3], axis)), 0.0, atol=1e-12)  # twist about the axis
    assert Rotation.from_quat(twist).magnitude() <= max_twist + 1e-9
    if not changed:
        np.testing.assert_array_equal(clamped, q)
    before = Rotation.from_quat(q).apply(axis)
    if np.arctan2(np.linalg.norm(np.cross(axis, before)), axis @ before) > max_swing + 1e-9:
        np.testing.assert_allclose(swing_angle, max_swing, atol=1e-9)  # onto the cone, not inside it


@given(unit_quaternions(), unit_quaternions(), st.floats(0.05, np.pi), st.floats(0.0, np.pi))
def test_the_camera_clamp_is_the_kernel_relative_to_its_centre(
    q: np.ndarray, centre: np.ndarray, max_swing: float, max_twist: float
) -> None:
    """One meaning: the camera's clamp is the IK joint limit's kernel in the centre's frame."""
    axis = np.array([0.0, 0.0, -1.0])
    relative, _ = kernels.swing_twist_clamp(quat_multiply(kernels.conj(centre), q), axis, max_swing, max_twist)
    expected = quat_multiply(centre, relative)
    assert_quat_allclose(camera_swing_twist_clamp(q, centre, max_swing, max_twist), expected, atol=1e-12)
