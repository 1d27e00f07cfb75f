"""Model-space velocities and rotations against finite differences and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity
from engine.errors import SkeletonMismatchError
from engine.motion_matching.kinematics import model_rotations, model_velocities


def _chain_skeleton(rng: np.random.Generator, joints: int) -> Skeleton:
    parents = [-1] + [int(rng.integers(0, j)) for j in range(1, joints)]
    return Skeleton([f"j{j}" for j in range(joints)], parents, rng.normal(size=(joints, 3)))


def _advance(pose: Pose, velocity: PoseVelocity, h: float) -> Pose:
    """The pose ``h`` seconds later at constant velocity (rotations: exp(h·ω)·q)."""
    turn = Rotation.from_rotvec(h * velocity.angular.reshape(-1, 3))
    rotations = (turn * Rotation.from_quat(pose.rotations.reshape(-1, 4))).as_quat().reshape(pose.rotations.shape)
    return Pose(pose.translations + h * velocity.linear, rotations, pose.scales + h * velocity.scaling)


def _random_motion(rng: np.random.Generator, batch: tuple[int, ...], joints: int) -> tuple[Pose, PoseVelocity]:
    shape = (*batch, joints)
    pose = Pose(
        rng.normal(size=(*shape, 3)),
        Rotation.random(int(np.prod(shape)), random_state=rng).as_quat().reshape((*shape, 4)),
        rng.uniform(0.5, 2.0, size=(*shape, 3)),  # non-uniform scales: shear in model space
    )
    velocity = PoseVelocity(rng.normal(size=(*shape, 3)), rng.normal(size=(*shape, 3)), rng.normal(size=(*shape, 3)))
    return pose, velocity


@settings(derandomize=True, max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9))
def test_model_velocities_equal_central_differences(seed: int, joints: int) -> None:
    rng = np.random.default_rng(seed)
    skeleton = _chain_skeleton(rng, joints)
    pose, velocity = _random_motion(rng, (4,), joints)
    positions, rates = model_velocities(skeleton, pose, velocity)
    h = 1e-5
    ahead = model_from_pose(skeleton, _advance(pose, velocity, h))[..., :3, 3]
    behind = model_from_pose(skeleton, _advance(pose, velocity, -h))[..., :3, 3]
    np.testing.assert_allclose(positions, model_from_pose(skeleton, pose)[..., :3, 3], atol=1e-12)
    np.testing.assert_allclose(rates, (ahead - behind) / (2 * h), rtol=1e-6, atol=1e-6)


def test_model_velocities_of_a_still_pose_are_zero(rng: np.random.Generator) -> None:
    skeleton = _chain_skeleton(rng, 6)
    pose, _ = _random_motion(rng, (3,), 6)
    still = PoseVelocity(np.zeros((3, 6, 3)), np.zeros((3, 6, 3)), np.zeros((3, 6, 3)))
    assert np.all(model_velocities(skeleton, pose, still)[1] == 0.0)


def test_model_velocities_spinning_root_closed_form() -> None:
    """A root spinning at ω about +Y moves a child at offset r with ω × r."""
    skeleton = Skeleton(["root", "child"], [-1, 0], [[0.0, 0.0, 0.0], [1.0, 0.0, 2.0]])
    pose = skeleton.rest_pose
    velocity = PoseVelocity(np.zeros((2, 3)), np.array([[0.0, 3.0, 0.0], [0.0, 0.0, 0.0]]), np.zeros((2, 3)))
    _, rates = model_velocities(skeleton, pose, velocity)
    np.testing.assert_allclose(rates[1], np.cross([0.0, 3.0, 0.0], [1.0, 0.0, 2.0]), atol=1e-15)


def test_model_velocities_refuse_a_mismatched_velocity(rng: np.random.Generator) -> None:
    skeleton = _chain_skeleton(rng, 4)
    pose, velocity = _random_motion(rng, (2,), 4)
    wrong = PoseVelocity(velocity.linear[:, :3], velocity.angular[:, :3], velocity.scaling[:, :3])
    with pytest.raises(SkeletonMismatchError, match="4 joints"):
        model_velocities(skeleton, pose, wrong)


def test_model_rotations_equal_the_model_matrices(rng: np.random.Generator) -> None:
    skeleton = _chain_skeleton(rng, 8)
    pose, _ = _random_motion(rng, (5,), 8)
    pose = Pose(pose.translations, pose.rotations, np.ones_like(pose.scales))
    expected = Rotation.from_matrix(model_from_pose(skeleton, pose)[..., :3, :3].reshape(-1, 3, 3))
    found = Rotation.from_quat(model_rotations(skeleton, pose.rotations).reshape(-1, 4))
    assert np.all((found.inv() * expected).magnitude() < 1e-12)


def test_a_subset_of_joints_equals_the_whole_skeletons_rows(rng: np.random.Generator) -> None:
    skeleton = _chain_skeleton(rng, 12)
    pose, velocity = _random_motion(rng, (3,), 12)
    positions, rates = model_velocities(skeleton, pose, velocity)
    chosen = [9, 2, 11, 2]
    some_positions, some_rates = model_velocities(skeleton, pose, velocity, chosen)
    np.testing.assert_allclose(some_positions, positions[:, chosen], atol=1e-12)
    np.testing.assert_allclose(some_rates, rates[:, chosen], atol=1e-12)
    with pytest.raises(SkeletonMismatchError, match="must be indices below 12"):
        model_velocities(skeleton, pose, velocity, [12])


@settings(derandomize=True, max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12))
def test_the_compiled_model_velocities_equal_the_numpy_recursion(seed: int, joints: int) -> None:
    rng = np.random.default_rng(seed)
    skeleton = _chain_skeleton(rng, joints)
    pose, velocity = _random_motion(rng, (3, 2), joints)
    chosen = sorted(rng.choice(joints, int(rng.integers(1, joints + 1)), replace=False).tolist())
    for wanted in (None, chosen):
        positions, rates = model_velocities(skeleton, pose, velocity, wanted, backend="numpy")
        fast_positions, fast_rates = model_velocities(skeleton, pose, velocity, wanted, backend="numba")
        assert fast_positions.shape == positions.shape == (3, 2, joints if wanted is None else len(chosen), 3)
        scale = 1.0 + np.abs(positions).max() + np.abs(rates).max()
        np.testing.assert_allclose(fast_positions, positions, rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(fast_rates, rates, rtol=0, atol=1e-13 * scale)
