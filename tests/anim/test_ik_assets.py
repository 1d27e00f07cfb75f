"""IK on real glTF rigs (Fox, CesiumMan): non-identity rest rotations, centimetre units, key poses."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim import local_to_model
from engine.anim.ik import aim_ik, ccd_ik, fabrik_ik, two_bone_ik
from engine.io import load_character
from tests.anim.ik_reference import bone_lengths, forward_kinematics, positions

pytestmark = pytest.mark.assets


def key_poses(character, clip_name, keys):
    """The clip's own keyframe values at key indices ``keys`` (no sampling code involved)."""
    skeleton = character.skeleton
    pose = skeleton.rest_pose.broadcast_to((len(keys),))
    fields = {"translation": pose.translations, "rotation": pose.rotations, "scale": pose.scales}
    for channel in character.clips[clip_name].channels:
        assert channel.interpolation == "LINEAR"
        fields[channel.path][:, channel.target] = np.asarray(channel.values)[keys]
    pose.rotations /= np.linalg.norm(pose.rotations, axis=-1, keepdims=True)
    return pose


@pytest.fixture(scope="module")
def fox(shared_assets):
    character = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", textures=False)
    return character, key_poses(character, "Walk", np.arange(0, 18, 3))


@pytest.mark.parametrize("side", ["Left", "Right"])
def test_fox_feet_reach_raised_targets(fox, side):
    character, pose = fox
    skeleton = character.skeleton
    start, mid, end = (
        skeleton.index(_joint(skeleton, n)) for n in (f"b_{side}Leg01", f"b_{side}Leg02", f"b_{side}Foot01")
    )
    model = local_to_model(skeleton, pose.matrices())
    hip, knee, foot = (model[:, j, :3, 3] for j in (start, mid, end))
    target = foot + np.array([0.0, 4.0, 3.0])  # lift and push the paw a few centimetres
    leg = foot - hip
    pole = knee - hip - np.sum((knee - hip) * leg, -1, keepdims=True) / np.sum(leg * leg, -1, keepdims=True) * leg
    result = two_bone_ik(skeleton, model, start, mid, end, target, pole, keep_end_rotation=True)
    assert result.reached.all()
    before = forward_kinematics(skeleton, pose)
    after = forward_kinematics(skeleton, result.apply(pose))
    np.testing.assert_allclose(after[:, end, :3, 3], target, atol=1e-9)
    np.testing.assert_allclose(after[:, end, :3, :3], before[:, end, :3, :3], atol=1e-12)
    np.testing.assert_allclose(
        bone_lengths(skeleton, after[..., :3, 3]), bone_lengths(skeleton, before[..., :3, 3]), rtol=1e-9
    )
    ray = target - hip
    normal = np.cross(ray, pole)
    np.testing.assert_allclose(np.sum((after[:, mid, :3, 3] - hip) * normal, -1), 0.0, atol=1e-9)
    untouched = np.setdiff1d(np.arange(skeleton.num_joints), skeleton.subtree(start))
    np.testing.assert_allclose(after[:, untouched], before[:, untouched], atol=1e-12)


def _joint(skeleton, prefix):
    return next(n for n in skeleton.names if n.startswith(prefix + "_"))


def test_fox_head_looks_at_a_point_with_its_nose(fox, rng):
    character, pose = fox
    skeleton = character.skeleton
    chain = [_joint(skeleton, n) for n in ("b_Spine02", "b_Neck", "b_Head")]
    model = local_to_model(skeleton, pose.matrices())
    head = model[:, skeleton.index(chain[-1]), :3, 3]
    target = head + rng.normal(size=(len(head), 3)) * 30.0
    forward, up, nose = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), np.array([12.0, 3.0, 0.0])
    result = aim_ik(skeleton, model, chain, target, forward, up=up, offset=nose, chain_weights=[0.2, 0.5, 1.0])
    assert result.reached.all()
    after = forward_kinematics(skeleton, result.apply(pose))[:, skeleton.index(chain[-1])]
    origin = after[:, :3, 3] + np.einsum("cij,j->ci", after[:, :3, :3], nose)
    direction = np.einsum("cij,j->ci", after[:, :3, :3], forward)
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    offset = target - origin
    along = np.sum(offset * direction, -1)
    np.testing.assert_allclose(np.linalg.norm(offset - along[:, None] * direction, axis=-1), 0.0, atol=1e-9)
    assert np.all(along > 0)


@pytest.mark.parametrize("solve", [ccd_ik, fabrik_ik], ids=["ccd", "fabrik"])
def test_fox_spine_chain_reaches_targets_of_another_pose(fox, solve, rng):
    character, pose = fox
    skeleton = character.skeleton
    chain = [skeleton.index(_joint(skeleton, n)) for n in ("b_Hip", "b_Spine01", "b_Spine02", "b_Neck", "b_Head")]
    goal = pose.copy()
    turns = Rotation.from_rotvec(rng.normal(size=(len(pose.rotations) * 4, 3)) * 0.3)
    goal.rotations[:, chain[:-1]] = (
        (Rotation.from_quat(pose.rotations[:, chain[:-1]].reshape(-1, 4)) * turns).as_quat().reshape(-1, 4, 4)
    )
    target = positions(skeleton, goal)[:, chain[-1]]
    model = local_to_model(skeleton, pose.matrices())
    result = solve(skeleton, model, chain, target, max_iterations=500, tolerance=1e-3, max_swing=np.pi)
    assert result.reached.all()
    solved = positions(skeleton, result.apply(pose))
    assert np.all(np.linalg.norm(solved[:, chain[-1]] - target, axis=-1) <= 1e-3)
    np.testing.assert_allclose(
        bone_lengths(skeleton, solved), bone_lengths(skeleton, positions(skeleton, pose)), rtol=1e-9
    )


@pytest.mark.filterwarnings("ignore::engine.errors.OssaWarning")  # CesiumMan's skin weights, not IK's concern
def test_cesium_man_legs_with_animated_scale_keys(shared_assets):
    character = load_character(shared_assets / "khronos" / "cesium_man.gltf", textures=False)
    skeleton = character.skeleton
    pose = key_poses(character, "animation0", np.arange(0, 48, 6))
    model = local_to_model(skeleton, pose.matrices())
    for start, mid, end in ((11, 12, 13), (15, 16, 17)):
        target = model[:, end, :3, 3] + np.array([0.05, 0.0, 0.08])
        result = two_bone_ik(skeleton, model, start, mid, end, target, pole=[1.0, 0.0, 0.0])
        assert result.reached.all()
        after = positions(skeleton, result.apply(pose))
        # Scale keys differ from 1 by ~1e-7 (non-uniform), so model space is a similarity only to
        # that level: a rotation under such a parent stretches its bone by up to ~1e-7 relative.
        np.testing.assert_allclose(after[:, end], target, atol=1e-6)
        lengths_before = bone_lengths(skeleton, positions(skeleton, pose))
        np.testing.assert_allclose(bone_lengths(skeleton, after), lengths_before, rtol=1e-6)
