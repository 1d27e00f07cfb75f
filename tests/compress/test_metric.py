"""The error bound: the largest singular value from above, tight for rotations, and the shell radii."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton
from engine.anim.mesh import MeshData
from engine.compress.metric import largest_singular_value, shell_error, shell_radii
from engine.errors import InvalidInputError, SkeletonMismatchError

matrices = hnp.arrays(np.float64, (3, 3), elements=st.floats(-10, 10, allow_subnormal=False))


@given(matrices, st.integers(-8, 2))
def test_the_bound_is_never_below_the_largest_singular_value_and_tight(m: np.ndarray, exponent: int) -> None:
    m = m * 10.0**exponent
    exact = np.linalg.svd(m, compute_uv=False)[0]
    bound = float(largest_singular_value(m))
    assert bound >= exact * (1 - 1e-15)
    assert bound <= exact * (1 + 2e-4) + 1e-300


@pytest.mark.parametrize("angle", [1e-8, 1e-5, 1e-2, 0.5, 3.0])
def test_a_rotation_about_the_joint_moves_the_shell_by_its_chord(angle: float) -> None:
    turn = Rotation.from_rotvec([0.3, -0.2, 0.9 / np.linalg.norm([0.3, -0.2, 0.9]) * angle]).as_matrix()
    axes = Rotation.from_rotvec([0.4, 0.1, -0.2]).as_matrix()
    reference = (axes[None], np.zeros((1, 3)))
    other = ((turn @ axes)[None], np.zeros((1, 3)))
    theta = Rotation.from_matrix(turn).magnitude()
    error = shell_error(reference, other, np.array([0.03]))
    assert error[0] == pytest.approx(2 * 0.03 * np.sin(theta / 2), rel=2e-4)
    assert error[0] >= 2 * 0.03 * np.sin(theta / 2)


def test_translation_and_scale_errors_add_to_the_bound() -> None:
    reference = (np.eye(3)[None], np.zeros((1, 3)))
    assert shell_error(reference, (np.eye(3)[None], np.array([[3e-5, 4e-5, 0.0]])), np.array([1.0]))[
        0
    ] == pytest.approx(5e-5)
    scaled = shell_error(reference, ((1.001 * np.eye(3))[None], np.zeros((1, 3))), np.array([0.5]))
    assert scaled[0] == pytest.approx(0.5e-3, rel=2e-4)


def test_largest_singular_value_of_zero_and_bad_shapes() -> None:
    assert largest_singular_value(np.zeros((4, 3, 3))).tolist() == [0.0] * 4
    with pytest.raises(InvalidInputError, match=r"matrices must have shape \(\.\.\., 3, 3\), got \(4, 4\)"):
        largest_singular_value(np.eye(4))


def test_shell_radii_from_a_mesh_and_effectors() -> None:
    skeleton = Skeleton(
        ["root", "arm"],
        [-1, 0],
        [[0, 0, 0], [1, 0, 0]],
        inverse_bind_matrices=[
            np.eye(4),
            np.linalg.inv(np.array([[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])),
        ],
    )
    positions = np.array([[1.0, 0.2, 0.0], [1.5, 0.0, 0.0], [0.0, 0.01, 0.0]])
    joints = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    weights = np.array([[1.0, 0, 0, 0], [0.5, 0.5, 0, 0], [1.0, 0, 0, 0]])
    mesh = MeshData(positions=positions, normals=np.tile([0, 1.0, 0], (3, 1)), joints=joints, weights=weights)
    radii = shell_radii(skeleton, 0.03, meshes=[mesh])
    # arm: farthest of (0, 0.2, 0) and (0.5, 0, 0) in its bind space; root: 1.5 from the second vertex (weight 0.5)
    np.testing.assert_allclose(radii, [1.5, 0.5])
    assert shell_radii(skeleton, 0.03, effectors={"arm": 0.2}).tolist() == [0.03, 0.2]
    assert not radii.flags.writeable


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"shell": 0.0}, InvalidInputError, "shell radius must be a positive number of metres, got 0.0"),
        ({"shell": float("inf")}, InvalidInputError, "shell radius must be a positive number"),
        ({"effectors": {"arm": -1.0}}, InvalidInputError, "effector 'arm' radius must be a positive number"),
        ({"effectors": {"leg": 0.1}}, SkeletonMismatchError, "no joint named 'leg'"),
    ],
)
def test_bad_shells_are_refused(kwargs: dict, error: type, match: str) -> None:
    skeleton = Skeleton(["root", "arm"], [-1, 0])
    with pytest.raises(error, match=match):
        shell_radii(skeleton, **kwargs)


def test_a_mesh_of_another_skeleton_is_refused() -> None:
    skeleton = Skeleton(["root"], [-1])
    mesh = MeshData(
        positions=np.zeros((1, 3)),
        normals=np.array([[0, 1.0, 0]]),
        joints=np.array([[3, 0, 0, 0]]),
        weights=np.array([[1.0, 0, 0, 0]]),
    )
    with pytest.raises(
        SkeletonMismatchError, match="meshes\\[0\\] is skinned to joint 3 but the skeleton has 1 joints"
    ):
        shell_radii(skeleton, meshes=[mesh])
