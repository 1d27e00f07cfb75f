"""Two-bone IK: checked by rebuilding the corrected pose with the test's own forward kinematics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton, local_to_model
from engine.anim.ik import apply_corrections, two_bone_ik
from engine.errors import DegenerateInputError, InvalidInputError, SkeletonMismatchError
from tests.anim.ik_reference import bone_lengths, forward_kinematics, leg_skeleton, perturbed_pose, positions
from tests.helpers import assert_quat_allclose

HIP, KNEE, ANKLE = "hip", "knee", "ankle"


def straight_leg(thigh: float = 0.5, shin: float = 0.5) -> Skeleton:
    """Identity rest rotations, bones along −Y: hip at the origin, knee hinge about local X."""
    return Skeleton(["hip", "knee", "ankle"], [-1, 0, 1], rest_translations=[[0, 0, 0], [0, -thigh, 0], [0, -shin, 0]])


def solve_and_rebuild(skeleton, pose, target, pole, **kwargs):
    model = local_to_model(skeleton, pose.matrices())
    result = two_bone_ik(skeleton, model, HIP, KNEE, ANKLE, target, pole, **kwargs)
    solved = result.apply(pose)
    return result, positions(skeleton, pose), positions(skeleton, solved), solved


def chain_points(skeleton, points):
    return (points[..., skeleton.index(j), :] for j in (HIP, KNEE, ANKLE))


def knee_offset_from_axis(start, knee, target):
    """Component of start→knee perpendicular to start→target."""
    axis = (target - start) / np.linalg.norm(target - start, axis=-1, keepdims=True)
    offset = knee - start
    return offset - np.sum(offset * axis, axis=-1, keepdims=True) * axis


@pytest.mark.parametrize("twist_joint", [False, True], ids=["direct", "with_twist_joint"])
def test_reaches_reachable_targets_with_lengths_and_pole_plane(rng, twist_joint):
    skeleton = leg_skeleton(rng, twist_joint=twist_joint)
    pose = perturbed_pose(skeleton, rng, characters=12, max_angle=0.8)
    before = positions(skeleton, pose)
    a, b, c = chain_points(skeleton, before)
    l1, l2 = np.linalg.norm(b - a, axis=-1), np.linalg.norm(c - b, axis=-1)
    direction = rng.normal(size=(12, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    distance = np.abs(l1 - l2) + rng.uniform(0.05, 0.95, size=12) * (l1 + l2 - np.abs(l1 - l2))
    target = a + direction * distance[:, None]
    pole = rng.normal(size=(12, 3))

    result, before, after, _ = solve_and_rebuild(skeleton, pose, target, pole)

    a2, b2, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2, target, atol=1e-9)
    np.testing.assert_allclose(a2, a, atol=1e-12)
    np.testing.assert_allclose(bone_lengths(skeleton, after), bone_lengths(skeleton, before), rtol=1e-9)
    assert result.reached.all()
    # The knee lies in the half-plane spanned by start→target and the pole's perpendicular part.
    axis = direction
    pole_side = pole - np.sum(pole * axis, axis=-1, keepdims=True) * axis
    normal = np.cross(axis, pole_side)
    knee = b2 - a2
    np.testing.assert_allclose(np.sum(knee * normal, axis=-1), 0.0, atol=1e-9)
    assert np.all(np.sum(knee * pole_side, axis=-1) > 0.0)
    np.testing.assert_array_equal(result.joints, [skeleton.index(HIP), skeleton.index(KNEE)])


def test_unreachable_target_straightens_the_chain_towards_it(rng):
    skeleton = leg_skeleton(rng)
    pose = perturbed_pose(skeleton, rng, characters=6, max_angle=0.6)
    a, b, c = chain_points(skeleton, positions(skeleton, pose))
    reach = np.linalg.norm(b - a, axis=-1) + np.linalg.norm(c - b, axis=-1)
    direction = rng.normal(size=(6, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    target = a + direction * (reach * rng.uniform(1.05, 3.0, size=6))[:, None]

    result, _, after, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, 0, 1])

    a2, b2, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2, a + direction * reach[:, None], atol=1e-9)
    np.testing.assert_allclose(np.cross(b2 - a2, direction), 0.0, atol=1e-9)
    assert np.all(np.sum((b2 - a2) * direction, axis=-1) > 0)
    assert not result.reached.any()


def test_target_too_close_folds_the_chain_along_the_ray():
    skeleton = straight_leg(0.6, 0.4)
    pose = skeleton.rest_pose.copy()
    pose.rotations[1] = Rotation.from_euler("x", 0.3).as_quat()  # bent: the hinge is X
    target = np.array([0.0, -0.1, 0.05])
    result, _, after, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, 0, 1])
    a2, _, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2, a2 + 0.2 * target / np.linalg.norm(target), atol=1e-9)
    assert not result.reached


def test_fully_extended_target_is_reached_straight():
    skeleton = straight_leg()
    pose = skeleton.rest_pose.copy()
    pose.rotations[1] = Rotation.from_euler("x", 0.5).as_quat()
    target = np.array([0.6, -0.8, 0.0])  # exactly l1 + l2 = 1 away
    result, _, after, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, 0, 1])
    _, b2, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2, target, atol=1e-9)
    np.testing.assert_allclose(b2, 0.5 * target, atol=1e-6)
    assert result.reached


def test_aligned_joints_and_target_bends_towards_the_pole():
    """ozz's AlignedJointsAndTarget: a straight chain and a target on its own line."""
    skeleton = straight_leg()
    pose = skeleton.rest_pose.copy()
    target = np.array([0.0, -0.6, 0.0])
    result, _, after, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, 0, 1])
    _, b2, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2, target, atol=1e-12)
    np.testing.assert_allclose(b2, [0.0, -0.3, 0.4], atol=1e-12)
    assert result.reached


def test_aligned_joints_target_and_pole_has_no_nan():
    skeleton = straight_leg()
    pose = skeleton.rest_pose.copy()
    target = np.array([0.0, -0.6, 0.0])
    result, _, after, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, -1, 0])
    assert np.isfinite(result.corrections).all()
    a2, b2, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2, target, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(b2 - a2), 0.5, atol=1e-12)
    assert result.reached


def test_target_aligned_with_pole_keeps_the_knee_side(rng):
    skeleton = leg_skeleton(rng)
    pose = perturbed_pose(skeleton, rng, characters=8, max_angle=0.6)
    a, b, c = chain_points(skeleton, positions(skeleton, pose))
    target = a + 0.8 * (c - a)
    side_before = knee_offset_from_axis(a, b, target)
    result, _, after, _ = solve_and_rebuild(skeleton, pose, target, pole=target - a)
    a2, b2, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2, target, atol=1e-9)
    side_after = knee_offset_from_axis(a2, b2, target)
    cosine = np.sum(side_before * side_after, axis=-1) / np.linalg.norm(side_before, axis=-1)
    np.testing.assert_allclose(cosine, np.linalg.norm(side_after, axis=-1), rtol=1e-9)
    assert result.reached.all()


@pytest.mark.parametrize(("thigh", "shin"), [(0.6, 0.4), (0.5, 0.5)])
def test_target_on_the_start_joint_folds_along_the_previous_direction(thigh, shin):
    skeleton = straight_leg(thigh, shin)
    pose = skeleton.rest_pose.copy()
    pose.rotations[1] = Rotation.from_euler("x", 0.4).as_quat()
    a, _, c = chain_points(skeleton, positions(skeleton, pose))
    result, _, after, _ = solve_and_rebuild(skeleton, pose, a, pole=[0, 0, 1])
    assert np.isfinite(result.corrections).all()
    _, _, c2 = chain_points(skeleton, after)
    expected = a + abs(thigh - shin) * (c - a) / np.linalg.norm(c - a)
    np.testing.assert_allclose(c2, expected, atol=1e-9)
    assert bool(result.reached) == (thigh == shin)


def test_zero_length_bone_chain_aims_the_remaining_bone(rng):
    """ozz's ZeroLengthBoneChain: the knee sits on the hip."""
    skeleton = straight_leg(0.0, 0.5)
    pose = skeleton.rest_pose.copy()
    direction = rng.normal(size=(5, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    target = direction * np.array([0.5, 0.5, 0.2, 0.9, 0.0])[:, None]
    result, _, after, _ = solve_and_rebuild(skeleton, pose.broadcast_to((5,)), target, pole=[0, 0, 1])
    assert np.isfinite(result.corrections).all()
    _, _, c2 = chain_points(skeleton, after)
    np.testing.assert_allclose(c2[:4], 0.5 * direction[:4], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(c2, axis=-1), 0.5, atol=1e-12)
    np.testing.assert_array_equal(result.reached, [True, True, False, False, False])


def test_zero_length_chain_gives_identity():
    skeleton = straight_leg(0.0, 0.0)
    pose = skeleton.rest_pose.broadcast_to((2,))
    model = local_to_model(skeleton, pose.matrices())
    result = two_bone_ik(skeleton, model, HIP, KNEE, ANKLE, [[0, 0, 0], [1, 2, 3]], pole=[0, 0, 1], twist=0.7)
    assert_quat_allclose(result.corrections, [0, 0, 0, 1])
    np.testing.assert_array_equal(result.reached, [True, False])


def test_weight_zero_gives_input_pose_and_one_the_solved_pose(rng):
    skeleton = leg_skeleton(rng)
    pose = perturbed_pose(skeleton, rng, characters=4, max_angle=0.6)
    model = local_to_model(skeleton, pose.matrices())
    a = model[:, skeleton.index(HIP), :3, 3]
    target = a + np.array([0.2, -0.5, 0.3])
    solved = two_bone_ik(skeleton, model, HIP, KNEE, ANKLE, target, [0, 0, 1])
    weights = np.array([0.0, 1.0, 0.5, 0.25])
    blended = two_bone_ik(skeleton, model, HIP, KNEE, ANKLE, target, [0, 0, 1], weight=weights)
    assert_quat_allclose(blended.corrections[0], [0, 0, 0, 1], atol=0)
    np.testing.assert_array_equal(blended.corrections[1], solved.corrections[1])
    np.testing.assert_allclose(positions(skeleton, blended.apply(pose))[0], positions(skeleton, pose)[0], atol=1e-12)
    for k in (2, 3):  # partial weights turn each joint by that fraction of its solved angle
        full = Rotation.from_quat(solved.corrections[k]).magnitude()
        np.testing.assert_allclose(Rotation.from_quat(blended.corrections[k]).magnitude(), weights[k] * full)
    np.testing.assert_array_equal(blended.reached, solved.reached)


def test_twist_rolls_the_knee_about_the_start_to_target_axis():
    skeleton = straight_leg()
    pose = skeleton.rest_pose.copy()
    pose.rotations[1] = Rotation.from_euler("x", 0.5).as_quat()
    target = np.array([0.0, -0.7, 0.0])
    _, _, plain, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, 0, 1])
    _, _, rolled, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, 0, 1], twist=np.pi / 2)
    expected = Rotation.from_rotvec([0, -np.pi / 2, 0]).apply(plain[1])  # right hand about −Y
    np.testing.assert_allclose(rolled[1], expected, atol=1e-12)
    np.testing.assert_allclose(rolled[2], target, atol=1e-12)


def test_soften_eases_the_reach_near_full_extension():
    skeleton = straight_leg()
    pose = skeleton.rest_pose.copy()
    pose.rotations[1] = Rotation.from_euler("x", 0.5).as_quat()
    distances = np.array([0.5, 0.85, 0.95, 1.0, 1.5])
    target = distances[:, None] * np.array([0.0, -1.0, 0.0])
    result, _, after, _ = solve_and_rebuild(skeleton, pose.broadcast_to((5,)), target, pole=[0, 0, 1], soften=0.8)
    span = 0.2
    eased = np.where(distances > 0.8, 0.8 + span * (1 - np.exp(-(distances - 0.8) / span)), distances)
    np.testing.assert_allclose(after[:, 2], eased[:, None] * [0.0, -1.0, 0.0], atol=1e-12)
    np.testing.assert_array_equal(result.reached, [True, False, False, False, False])
    assert np.all(np.diff(np.linalg.norm(after[:, 2], axis=-1)) > 0)
    assert np.all(np.linalg.norm(after[:, 2], axis=-1) < 1.0)


def test_mid_axis_turns_the_knee_only_about_its_hinge():
    skeleton = straight_leg()
    pose = skeleton.rest_pose.copy()
    pose.rotations[1] = Rotation.from_euler("x", 0.3).as_quat()
    target = np.array([0.3, -0.6, 0.2])
    result, _, after, _ = solve_and_rebuild(skeleton, pose, target, pole=[0, 0, 1], mid_axis=[1, 0, 0])
    np.testing.assert_allclose(after[2], target, atol=1e-12)
    rotvec = Rotation.from_quat(result.corrections[1]).as_rotvec()
    np.testing.assert_allclose(rotvec[1:], 0.0, atol=1e-12)
    assert result.reached


def test_keep_end_rotation_keeps_the_end_joint_model_orientation(rng):
    skeleton = leg_skeleton(rng)
    pose = perturbed_pose(skeleton, rng, characters=5, max_angle=0.6)
    model = local_to_model(skeleton, pose.matrices())
    target = model[:, skeleton.index(HIP), :3, 3] + [0.1, -0.6, 0.2]
    result = two_bone_ik(skeleton, model, HIP, KNEE, ANKLE, target, [0, 0, 1], keep_end_rotation=True)
    np.testing.assert_array_equal(result.joints, [skeleton.index(j) for j in (HIP, KNEE, ANKLE)])
    ankle = skeleton.index(ANKLE)
    before = forward_kinematics(skeleton, pose)[:, ankle, :3, :3]
    after = forward_kinematics(skeleton, result.apply(pose))
    np.testing.assert_allclose(after[:, ankle, :3, :3], before, atol=1e-12)
    np.testing.assert_allclose(after[:, ankle, :3, 3], target, atol=1e-9)


def test_batch_matches_one_character_at_a_time(rng):
    skeleton = leg_skeleton(rng)
    pose = perturbed_pose(skeleton, rng, characters=6, max_angle=0.8)
    model = local_to_model(skeleton, pose.matrices())
    target = model[:, skeleton.index(HIP), :3, 3] + rng.normal(size=(6, 3)) * 0.5
    pole = rng.normal(size=(6, 3))
    twist = rng.uniform(-1, 1, size=6)
    batch = two_bone_ik(skeleton, model, HIP, KNEE, ANKLE, target, pole, twist=twist, soften=0.9)
    for c in range(6):
        one = two_bone_ik(skeleton, model[c], HIP, KNEE, ANKLE, target[c], pole[c], twist=twist[c], soften=0.9)
        np.testing.assert_allclose(batch.corrections[c], one.corrections, atol=1e-15)
        assert batch.reached[c] == one.reached


@given(
    bend=st.floats(-2.5, 2.5),
    fraction=st.floats(0.02, 0.98),
    yaw=st.floats(-np.pi, np.pi),
    pitch=st.floats(-1.5, 1.5),
    pole_angle=st.floats(-np.pi, np.pi),
)
def test_hypothesis_reachable_targets_are_reached(bend, fraction, yaw, pitch, pole_angle):
    skeleton = straight_leg(0.45, 0.4)
    pose = skeleton.rest_pose.copy()
    pose.rotations[1] = Rotation.from_euler("x", bend).as_quat()
    distance = 0.05 + fraction * 0.8
    direction = Rotation.from_euler("yx", [yaw, pitch]).apply([0.0, 0.0, 1.0])
    pole = Rotation.from_rotvec(direction * pole_angle).apply(np.cross(direction, [0.3, 0.5, 0.1]))
    result, before, after, _ = solve_and_rebuild(skeleton, pose, distance * direction, pole)
    assert result.reached
    np.testing.assert_allclose(after[2], distance * direction, atol=1e-9)
    np.testing.assert_allclose(bone_lengths(skeleton, after), bone_lengths(skeleton, before), rtol=1e-9)
    assert np.dot(after[1], pole) > 0


def test_apply_corrections_broadcasts_a_single_pose_over_characters(rng):
    skeleton = leg_skeleton(rng)
    rest = skeleton.rest_pose
    corrections = Rotation.random(6, random_state=1).as_quat().reshape(3, 2, 4)
    out = apply_corrections(rest, [2, 3], corrections)
    assert out.rotations.shape == (3, skeleton.num_joints, 4)
    expected = (
        (
            Rotation.from_quat(np.repeat(rest.rotations[None, [2, 3]], 3, 0).reshape(-1, 4))
            * Rotation.from_quat(corrections.reshape(-1, 4))
        )
        .as_quat()
        .reshape(3, 2, 4)
    )
    assert_quat_allclose(out.rotations[:, [2, 3]], expected, atol=1e-15)
    np.testing.assert_array_equal(out.rotations[:, 0], np.broadcast_to(rest.rotations[0], (3, 4)))


@pytest.mark.parametrize(
    ("joints", "corrections", "error", "match"),
    [
        ([1, 1], np.tile([0, 0, 0, 1.0], (2, 1)), InvalidInputError, "joints must be distinct"),
        ([1, 99], np.tile([0, 0, 0, 1.0], (2, 1)), SkeletonMismatchError, r"joints must lie in \[0, 7\)"),
        ([1, 2], np.tile([0, 0, 0, 1.0], (3, 1)), InvalidInputError, r"corrections must have shape \(\.\.\., 2, 4\)"),
        ([[1, 2]], np.tile([0, 0, 0, 1.0], (2, 1)), InvalidInputError, "joints must be a 1-D sequence"),
        ([1, 2], np.tile([0, 0, 0, 1.0], (2, 2, 1)), InvalidInputError, r"batch shapes do not broadcast: pose \(3,\)"),
    ],
)
def test_apply_corrections_rejects_bad_input(rng, joints, corrections, error, match):
    pose = leg_skeleton(rng).rest_pose.broadcast_to((3,))
    with pytest.raises(error, match=match):
        apply_corrections(pose, joints, corrections)


@pytest.fixture
def leg_model(rng):
    skeleton = leg_skeleton(rng)
    return skeleton, local_to_model(skeleton, skeleton.rest_pose.matrices())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"target": [np.nan, 0, 0]}, InvalidInputError, "target must be finite"),
        ({"target": [0, 0]}, InvalidInputError, r"target must have shape \(\.\.\., 3\)"),
        ({"pole": [0, 0, 0]}, DegenerateInputError, "pole must be a non-zero vector"),
        ({"mid_axis": [0, 0, 0]}, DegenerateInputError, "mid_axis must be a non-zero vector"),
        ({"soften": 1.5}, InvalidInputError, r"soften must lie in \[0, 1\], got 1.5"),
        ({"weight": -0.1}, InvalidInputError, r"weight must lie in \[0, 1\]"),
        ({"tolerance": -1.0}, InvalidInputError, "tolerance must be a finite number >= 0"),
        ({"twist": [0.0, 1.0], "target": np.zeros((3, 3))}, InvalidInputError, "batch shapes do not broadcast"),
        (
            {"start": "toe"},
            SkeletonMismatchError,
            r"one parent chain, root-most first: joint \d+ \('toe'\) is not an ancestor of joint \d+ \('knee'\)",
        ),
        ({"mid": "spine"}, SkeletonMismatchError, r"\('hip'\) is not an ancestor of joint \d+ \('spine'\)"),
        ({"end": "nose"}, SkeletonMismatchError, "no joint named 'nose'"),
        ({"end": 2.0}, InvalidInputError, "must be a joint index or name, got float"),
        ({"end": 42}, SkeletonMismatchError, "= 42 is out of range"),
    ],
)
def test_bad_input_raises_typed_errors(leg_model, kwargs, error, match):
    skeleton, model = leg_model
    args = {"start": HIP, "mid": KNEE, "end": ANKLE, "target": [0.1, 0.2, 0.3], "pole": [0, 0, 1]} | kwargs
    with pytest.raises(error, match=match):
        two_bone_ik(
            skeleton,
            model,
            args.pop("start"),
            args.pop("mid"),
            args.pop("end"),
            args.pop("target"),
            args.pop("pole"),
            **args,
        )


def test_bad_model_raises(leg_model):
    skeleton, model = leg_model
    with pytest.raises(SkeletonMismatchError, match=r"model must have shape \(\.\.\., 7, 4, 4\)"):
        two_bone_ik(skeleton, model[:-1], HIP, KNEE, ANKLE, [0, 0, 0], [0, 0, 1])
    bad = model.copy()
    bad[skeleton.index(KNEE), 0, 3] = np.inf
    with pytest.raises(InvalidInputError, match="model must be finite"):
        two_bone_ik(skeleton, bad, HIP, KNEE, ANKLE, [0, 0, 0], [0, 0, 1])
    flat = model.copy()
    flat[skeleton.index(KNEE), :3, 1] = 0.0  # a zero-scale axis: no orientation
    with pytest.raises(DegenerateInputError, match="must have non-zero scale on every axis"):
        two_bone_ik(skeleton, flat, HIP, KNEE, ANKLE, [0, 0, 0], [0, 0, 1])
