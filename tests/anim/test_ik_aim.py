"""Aim / look-at IK: the solved forward ray, checked with the test's own forward kinematics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton, local_to_model
from engine.anim.ik import aim_ik
from engine.errors import DegenerateInputError, InvalidInputError, SkeletonMismatchError
from tests.anim.ik_reference import bone_lengths, forward_kinematics, perturbed_pose, random_rotations
from tests.helpers import assert_quat_allclose


def neck_skeleton(rng: np.random.Generator) -> Skeleton:
    """``root (scale 0.01) → spine → neck → head`` plus a jaw, every joint with a random rest rotation."""
    names = ["root", "spine", "neck", "head", "jaw"]
    translations = np.array([[0, 0, 0], [0, 100, 0], [0, 40, 5], [0, 15, 2], [0, -5, 8]], dtype=float)
    scales = np.ones((5, 3))
    scales[0] = 0.01
    return Skeleton(names, [-1, 0, 1, 2, 3], translations, random_rotations(rng, (5,), np.pi), scales)


def unit_vectors(rng, count):
    v = rng.normal(size=(count, 3))
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def aim_ray(skeleton, pose, forward, offset=(0.0, 0.0, 0.0), joint="head"):
    """Model-space origin and unit direction of the aim ray of ``joint``, by reference FK."""
    model = forward_kinematics(skeleton, pose)[..., skeleton.index(joint), :, :]
    origin = np.einsum("...ij,...j->...i", model[..., :3, :3], offset) + model[..., :3, 3]
    direction = np.einsum("...ij,...j->...i", model[..., :3, :3], forward)
    return origin, direction / np.linalg.norm(direction, axis=-1, keepdims=True)


def distance_to_ray(point, origin, direction):
    along = np.sum((point - origin) * direction, axis=-1)
    return np.linalg.norm(point - origin - along[..., None] * direction, axis=-1), along


@pytest.fixture
def scene(rng):
    skeleton = neck_skeleton(rng)
    pose = perturbed_pose(skeleton, rng, characters=10, max_angle=0.7)
    return skeleton, pose, local_to_model(skeleton, pose.matrices())


def test_single_joint_points_its_forward_axis_at_the_target(scene, rng):
    skeleton, pose, model = scene
    forward = unit_vectors(rng, 1)[0]
    target = model[:, skeleton.index("head"), :3, 3] + unit_vectors(rng, 10) * rng.uniform(0.1, 3.0, (10, 1))
    result = aim_ik(skeleton, model, "head", target, forward)
    origin, direction = aim_ray(skeleton, result.apply(pose), forward)
    to_target = target - origin
    np.testing.assert_allclose(direction, to_target / np.linalg.norm(to_target, axis=-1, keepdims=True), atol=1e-12)
    assert result.reached.all()
    np.testing.assert_array_equal(result.joints, [skeleton.index("head")])


def test_offset_ray_passes_through_the_target(scene, rng):
    skeleton, pose, model = scene
    forward, offset = np.array([0.0, 0.0, 1.0]), np.array([3.0, 8.0, 9.0])  # eyes, in centimetres
    target = model[:, skeleton.index("head"), :3, 3] + unit_vectors(rng, 10) * rng.uniform(0.5, 3.0, (10, 1))
    result = aim_ik(skeleton, model, "head", target, forward, offset=offset)
    solved = result.apply(pose)
    miss, along = distance_to_ray(target, *aim_ray(skeleton, solved, forward, offset))
    np.testing.assert_allclose(miss, 0.0, atol=1e-12)
    assert np.all(along > 0)
    assert result.reached.all()
    np.testing.assert_allclose(
        bone_lengths(skeleton, forward_kinematics(skeleton, solved)[..., :3, 3]),
        bone_lengths(skeleton, forward_kinematics(skeleton, pose)[..., :3, 3]),
        rtol=1e-9,
    )


def test_up_axis_leans_towards_the_pole(scene, rng):
    skeleton, pose, model = scene
    forward, up = np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0])
    pole = unit_vectors(rng, 10)
    target = model[:, skeleton.index("head"), :3, 3] + unit_vectors(rng, 10)
    result = aim_ik(skeleton, model, ["neck", "head"], target, forward, up=up, pole=pole)
    solved = result.apply(pose)
    origin, direction = aim_ray(skeleton, solved, forward)
    _, up_axis = aim_ray(skeleton, solved, up)
    np.testing.assert_allclose(distance_to_ray(target, origin, direction)[0], 0.0, atol=1e-12)
    pole_side = pole - np.sum(pole * direction, axis=-1, keepdims=True) * direction
    np.testing.assert_allclose(np.sum(up_axis * np.cross(direction, pole_side), axis=-1), 0.0, atol=1e-12)
    assert np.all(np.sum(up_axis * pole_side, axis=-1) > 0)


@pytest.mark.parametrize("up", [None, (0.0, 1.0, 0.0)], ids=["no_up", "up"])
def test_chain_weights_give_each_joint_its_share_of_the_remaining_rotation(scene, rng, up):
    skeleton, pose, model = scene
    forward, offset = np.array([0.0, 0.0, 1.0]), np.array([1.0, 6.0, 8.0])
    target = model[:, skeleton.index("head"), :3, 3] + unit_vectors(rng, 10) * 2.0
    result = aim_ik(skeleton, model, ["neck", "head"], target, forward, up=up, offset=offset, chain_weights=[0.4, 1])
    # The neck alone, with the head's axes and offset expressed in the neck's frame.
    neck, head = model[:, skeleton.index("neck")], model[:, skeleton.index("head")]
    to_neck = np.linalg.inv(neck) @ head
    neck_forward = np.einsum("cij,j->ci", to_neck[:, :3, :3], forward)
    neck_offset = np.einsum("cij,j->ci", to_neck[:, :3, :3], offset) + to_neck[:, :3, 3]
    neck_up = None if up is None else np.einsum("cij,j->ci", to_neck[:, :3, :3], up)
    alone = aim_ik(skeleton, model, "neck", target, neck_forward, up=neck_up, offset=neck_offset)
    share = Rotation.from_rotvec(0.4 * Rotation.from_quat(alone.corrections[:, 0]).as_rotvec()).as_quat()
    assert_quat_allclose(result.corrections[:, 0], share, atol=1e-12)
    miss, along = distance_to_ray(target, *aim_ray(skeleton, result.apply(pose), forward, offset))
    np.testing.assert_allclose(miss, 0.0, atol=1e-12)
    assert np.all(along > 0)
    assert result.reached.all()


def test_default_chain_weights_are_equal_shares(scene, rng):
    skeleton, _, model = scene
    target = model[:, skeleton.index("head"), :3, 3] + unit_vectors(rng, 10)
    chain = ["spine", "neck", "head"]
    default = aim_ik(skeleton, model, chain, target, [0, 0, 1], up=[0, 1, 0])
    explicit = aim_ik(skeleton, model, chain, target, [0, 0, 1], up=[0, 1, 0], chain_weights=[1 / 3, 1 / 2, 1])
    np.testing.assert_allclose(default.corrections, explicit.corrections, atol=1e-15)
    assert default.reached.all()


def test_last_chain_weight_below_one_leaves_the_aim_partial(scene, rng):
    skeleton, _, model = scene
    target = model[:, skeleton.index("head"), :3, 3] + unit_vectors(rng, 10)
    result = aim_ik(skeleton, model, ["neck", "head"], target, [0, 0, 1], chain_weights=[0.3, 0.5])
    assert not result.reached.any()


def test_looking_along_the_pole_applies_no_roll():
    """Degenerate up/forward: the target straight above, pole = up; no roll is defined."""
    skeleton = Skeleton(["head"], [-1], rest_rotations=[Rotation.from_euler("y", 0.3).as_quat()])
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    target = [0.0, 5.0, 0.0]
    rolled = aim_ik(skeleton, model, "head", target, [0, 0, 1], up=[0, 1, 0], pole=[0, 1, 0])
    plain = aim_ik(skeleton, model, "head", target, [0, 0, 1])
    assert np.isfinite(rolled.corrections).all()
    np.testing.assert_allclose(rolled.corrections, plain.corrections, atol=1e-15)
    assert rolled.reached


def test_target_behind_turns_half_way_round_about_the_up_axis():
    skeleton = Skeleton(["turret"], [-1])
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    result = aim_ik(skeleton, model, "turret", [0.0, 0.0, -4.0], [0, 0, 1], up=[0, 1, 0])
    assert_quat_allclose(result.corrections[0], [0.0, 1.0, 0.0, 0.0], atol=1e-12)
    assert result.reached


def test_target_inside_the_offset_circle_takes_the_closest_aim():
    skeleton = Skeleton(["head"], [-1])
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    offset = np.array([0.5, 0.0, 0.0])
    result = aim_ik(skeleton, model, "head", [0.0, 0.0, 0.2], [0, 0, 1], offset=offset)
    assert np.isfinite(result.corrections).all()
    assert not result.reached
    turned = Rotation.from_quat(result.corrections[0])
    nearest = turned.apply(offset)  # the ray's closest point to the pivot now faces the target
    np.testing.assert_allclose(nearest / np.linalg.norm(nearest), [0.0, 0.0, 1.0], atol=1e-12)


def test_target_on_the_pivot_does_not_turn():
    skeleton = Skeleton(["head"], [-1], rest_translations=[[1.0, 2.0, 3.0]])
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    result = aim_ik(skeleton, model, "head", [1.0, 2.0, 3.0], [0, 0, 1], up=[0, 1, 0])
    assert_quat_allclose(result.corrections, [0, 0, 0, 1], atol=0)


def test_weight_zero_is_the_input_and_one_the_solved_pose(scene, rng):
    skeleton, _, model = scene
    target = model[:, skeleton.index("head"), :3, 3] + unit_vectors(rng, 10)
    solved = aim_ik(skeleton, model, ["neck", "head"], target, [0, 0, 1])
    weight = np.where(np.arange(10) % 2 == 0, 0.0, 1.0)
    mixed = aim_ik(skeleton, model, ["neck", "head"], target, [0, 0, 1], weight=weight)
    assert_quat_allclose(mixed.corrections[::2], [0, 0, 0, 1], atol=0)
    np.testing.assert_array_equal(mixed.corrections[1::2], solved.corrections[1::2])


@given(
    forward=st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)).filter(lambda v: np.linalg.norm(v) > 0.1),
    direction=st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)).filter(lambda v: np.linalg.norm(v) > 0.1),
    distance=st.floats(0.3, 5.0),
    twist=st.floats(-np.pi, np.pi),
)
@example(forward=(1.0, 0.0, 0.0), direction=(1.0, 0.0, 0.0), distance=0.3125, twist=-1.5)  # spread swings
@example(forward=(1.0, 0.0, 0.0), direction=(1.0, 0.0, 0.0), distance=0.34375, twist=-1.875)  # the head too close
def test_hypothesis_aim_ray_hits_the_target(forward, direction, distance, twist):
    rest = Rotation.from_rotvec([0.3, twist, -0.2]).as_quat()
    skeleton = Skeleton(["neck", "head"], [-1, 0], [[0, 1, 0], [0, 0.2, 0]], [rest, rest], [[2, 2, 2], [1, 1, 1]])
    pose = skeleton.rest_pose
    model = local_to_model(skeleton, pose.matrices())
    target = model[1, :3, 3] + distance * np.array(direction) / np.linalg.norm(direction)
    offset = np.array([0.01, 0.05, 0.02])
    result = aim_ik(skeleton, model, ["neck", "head"], target, forward, offset=offset, up=np.cross(forward, [1, 2, 3]))
    forward = np.array(forward) / np.linalg.norm(forward)
    miss, along = distance_to_ray(target, *aim_ray(skeleton, result.apply(pose), forward, offset))
    assert miss < 1e-9
    assert along > 0
    assert result.reached


@pytest.mark.parametrize(
    ("chain", "kwargs", "error", "match"),
    [
        ("head", {"target": [np.nan, 0, 0]}, InvalidInputError, "target must be finite"),
        ("head", {"forward": [0, 0, 0]}, DegenerateInputError, "forward must be a non-zero vector"),
        ("head", {"up": [0, 0, 2]}, DegenerateInputError, "up must not be parallel to forward"),
        ("head", {"up": [0, 0, -1]}, DegenerateInputError, "up must not be parallel to forward"),
        ("head", {"pole": [0, 0, 0], "up": [0, 1, 0]}, DegenerateInputError, "pole must be a non-zero vector"),
        ("head", {"offset": [0, np.inf, 0]}, InvalidInputError, "offset must be finite"),
        ("head", {"weight": 2.0}, InvalidInputError, r"weight must lie in \[0, 1\]"),
        (["neck", "head"], {"chain_weights": [1.0]}, InvalidInputError, r"chain_weights must have shape \(2,\)"),
        (["neck", "head"], {"chain_weights": [1.5, 1]}, InvalidInputError, r"chain_weights must lie in \[0, 1\]"),
        (["head", "neck"], {}, SkeletonMismatchError, r"\('head'\) is not an ancestor of joint \d \('neck'\)"),
        (["jaw", "head"], {}, SkeletonMismatchError, "one parent chain"),
        ([], {}, InvalidInputError, "chain must list at least 1 joints, got 0"),
    ],
)
def test_bad_input_raises_typed_errors(scene, chain, kwargs, error, match):
    skeleton, _, model = scene
    args = {"target": [1.0, 2.0, 3.0], "forward": [0, 0, 1]} | kwargs
    with pytest.raises(error, match=match):
        aim_ik(skeleton, model, chain, args.pop("target"), args.pop("forward"), **args)
