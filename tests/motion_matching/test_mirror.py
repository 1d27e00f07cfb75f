"""Mirroring: the joint map, exact mirror images of poses, mirrored database frames."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim.humanoid import find_humanoid, name_side
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.errors import SkeletonMismatchError
from engine.motion_matching.mirror import mirror_joints, mirror_pose, plan_mirror
from tests.helpers import assert_quat_allclose

LEFT = np.array([1.0, 0.0, 0.0])  # the mannequin's and the CMU skeletons' rest left axis
REFLECT = np.diag([-1.0, 1.0, 1.0])


def _names(skeleton: Skeleton, mirror: np.ndarray) -> set[tuple[str, str]]:
    return {(skeleton.names[j], skeleton.names[m]) for j, m in enumerate(mirror) if m > j}


def test_mannequin_joints_pair_by_their_side_suffixes(mannequin) -> None:
    pairs = _names(mannequin.skeleton, mirror_joints(mannequin.skeleton))
    parts = ("clavicle", "upper_arm", "lower_arm", "hand", "fingers", "upper_leg", "lower_leg", "foot", "toes")
    assert pairs == {(f"{p}_l", f"{p}_r") for p in parts}


@pytest.mark.assets
def test_cmu_joints_pair_in_all_three_conventions(cmu_sources) -> None:
    for source in cmu_sources:
        if source.name == "16_01":
            continue
        skeleton = source.skeleton
        mirror = mirror_joints(skeleton)
        body = find_humanoid(skeleton)
        for role, joint in body.roles.items():
            if role.endswith("_l"):
                assert mirror[joint] == body.roles[role[:-2] + "_r"], (source.name, role)
        sided = {n for n in skeleton.names if name_side(n) is not None}
        paired = {n for pair in _names(skeleton, mirror) for n in pair}
        assert sided <= paired, (source.name, sided - paired)
        assert len(paired) >= 26, source.name  # legs, arms, hands (and the Daz eyes, buttocks, fingers)


def test_an_unnamed_rig_pairs_its_limbs_by_hierarchy(mannequin) -> None:
    skeleton = mannequin.skeleton
    unnamed = Skeleton([f"j{k}" for k in range(skeleton.num_joints)], skeleton.parents, skeleton.rest_translations)
    np.testing.assert_array_equal(mirror_joints(unnamed), mirror_joints(skeleton))


def test_a_lopsided_rig_is_refused(mannequin) -> None:
    skeleton = mannequin.skeleton
    keep = [j for j, n in enumerate(skeleton.names) if n != "fingers_r"]
    parents = [keep.index(int(skeleton.parents[j])) if skeleton.parents[j] >= 0 else -1 for j in keep]
    lopsided = Skeleton([skeleton.names[j] for j in keep], parents, skeleton.rest_translations[keep])
    with pytest.raises(SkeletonMismatchError, match="cannot mirror this skeleton: the mirror of 'fingers_l'"):
        mirror_joints(lopsided)


def _reframe(skeleton: Skeleton, pose: Pose, rng: np.random.Generator) -> tuple[Skeleton, Pose]:
    """The same figure and motion with every joint's frame turned at random (as glTF rigs orient bones).

    Joint ``j``'s frame is turned by ``c_j``: ``q' = c_parent⁻¹ q c_j`` and ``t' = c_parent⁻¹ t``, so every
    model-space position stays where it was while no left/right frames are mirror images any more.
    """
    turns = Rotation.random(skeleton.num_joints, random_state=rng)
    parents = skeleton.parents
    above = Rotation.concatenate([turns[int(p)] if p >= 0 else Rotation.identity() for p in parents])

    def reframe(translations: np.ndarray, rotations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = rotations.size // (4 * skeleton.num_joints)  # frames (1 for the rest pose)
        inv = Rotation.concatenate([above.inv()] * n)
        q = Rotation.from_quat(np.array(rotations).reshape(-1, 4))
        new_q = (inv * q * Rotation.concatenate([turns] * n)).as_quat().reshape(rotations.shape)
        return inv.apply(np.array(translations).reshape(-1, 3)).reshape(translations.shape), new_q

    rest_t, rest_q = reframe(skeleton.rest_translations, skeleton.rest_rotations)
    framed = Skeleton(skeleton.names, parents, rest_t, rest_q)
    t, q = reframe(pose.translations, pose.rotations)
    return framed, Pose(t, q, pose.scales)


@pytest.mark.parametrize("frames", ["identity", "random"])
def test_mirrored_poses_are_exact_mirror_images(mannequin, turning_source, rng, frames) -> None:
    skeleton = mannequin.skeleton
    pose = sample(turning_source.clip, skeleton.rest_pose, rng.uniform(0.0, 3.0, 16))
    if frames == "random":
        skeleton, pose = _reframe(skeleton, pose, rng)
    plan = plan_mirror(skeleton, LEFT)
    mirrored = mirror_pose(plan, pose)
    model, seen = model_from_pose(skeleton, pose), model_from_pose(skeleton, mirrored)
    rest = model_from_pose(skeleton, skeleton.rest_pose)
    for j, m in enumerate(plan.joints):
        np.testing.assert_allclose(seen[:, m, :3, 3], model[:, j, :3, 3] @ REFLECT, atol=1e-12)
        change = model[:, j, :3, :3] @ rest[j, :3, :3].T  # the joint's rotation change from rest
        np.testing.assert_allclose(seen[:, m, :3, :3] @ rest[m, :3, :3].T, REFLECT @ change @ REFLECT, atol=1e-12)


def test_mirroring_twice_gives_the_pose_back(mannequin, turning_source, rng) -> None:
    pose = sample(turning_source.clip, mannequin.skeleton.rest_pose, rng.uniform(0.0, 3.0, 8))
    skeleton, pose = _reframe(mannequin.skeleton, pose, rng)
    plan = plan_mirror(skeleton, LEFT)
    twice = mirror_pose(plan, mirror_pose(plan, pose))
    np.testing.assert_allclose(twice.translations, pose.translations, atol=1e-12)
    assert_quat_allclose(twice.rotations, pose.rotations, atol=1e-12)


def test_mirror_pose_refuses_another_skeletons_pose(mannequin) -> None:
    plan = plan_mirror(mannequin.skeleton, LEFT)
    with pytest.raises(SkeletonMismatchError, match="24 joints"):
        mirror_pose(plan, Pose.identity(24))


def _swap_sides(features: np.ndarray, layout) -> np.ndarray:
    """Each pose group's left and right joints swapped and every x negated: the mirror of a feature vector."""
    out = features.copy()
    for group in layout.groups:
        block = out[:, group.columns]
        if group.name in layout.joints and len(layout.joints[group.name]) == 2:
            block[:] = np.concatenate((block[:, 3:], block[:, :3]), axis=1)
        step = 2 if group.name.startswith("trajectory_") else 3
        block[:, ::step] *= -1.0
    return out


def test_mirrored_database_frames_are_mirror_images(turning_database) -> None:
    db = turning_database
    for r in range(db.num_ranges):
        if db.range_mirrored[r]:
            continue
        m = db.range_index(db.range_names[r] + " (mirrored)")
        own = slice(db.range_starts[r], db.range_stops[r])
        other = slice(db.range_starts[m], db.range_stops[m])
        np.testing.assert_allclose(db.features[other], _swap_sides(db.features[own], db.layout), atol=1e-12)
        np.testing.assert_allclose(db.root_positions[other], db.root_positions[own] @ REFLECT, atol=1e-12)
        np.testing.assert_allclose(db.root_yaws[other], -db.root_yaws[own], atol=1e-12)
