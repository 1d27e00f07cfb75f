"""Retargeting: rest-relative model-space rotations, leg-length scaling, round trips, mapping, errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim import Pose, Skeleton, model_from_pose, sample
from engine.anim.humanoid import find_humanoid, name_side
from engine.anim.ik import two_bone_ik
from engine.anim.retarget import (
    GROUND_SOFTNESS,
    explain_joint_map,
    plan_retarget,
    propose_joint_map,
    retarget_clip,
    retarget_pose,
)
from engine.anim.retarget_feet import plant_feet
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.io import load_character
from engine.io.bvh import load_bvh
from engine.math import quat_rotate
from engine.procedural.mannequin import build_skeleton
from tests.anim.rigs import rig as scheme_rig
from tests.helpers import assert_quat_allclose

FRAMES = np.array([0, 45, 130, 260, 333, 470, 591])


@pytest.fixture(scope="module")
def pirouette(shared_assets: Path):
    return load_bvh(shared_assets / "pirouette_bvh" / "pirouette.bvh")


@pytest.fixture(scope="module")
def source_pose(pirouette) -> Pose:
    return sample(pirouette.clip, pirouette.skeleton.rest_pose, FRAMES * pirouette.frame_time)


def rest_model(skeleton: Skeleton) -> tuple[Rotation, np.ndarray]:
    model = model_from_pose(skeleton, skeleton.rest_pose)
    return Rotation.from_matrix(model[:, :3, :3]), model[:, :3, 3]


def reoriented_copy(
    skeleton: Skeleton, factor: float, rng: np.random.Generator, turn: Rotation | None = None
) -> Skeleton:
    """Same joints and names, every joint frame turned at random, bones ``factor`` longer, the whole
    rig turned by ``turn``: model rest rotations ``turn · G_j · X_j``, positions ``turn · factor · P_j``.
    """
    turn = turn or Rotation.identity()
    rotations, positions = rest_model(skeleton)
    frames = Rotation.random(skeleton.num_joints, random_state=rng)
    new_rot = [turn * rotations[j] * frames[j] for j in range(skeleton.num_joints)]
    new_pos = turn.apply(factor * positions)
    local_t, local_r = [], []
    for j, p in enumerate(skeleton.parents):
        if p < 0:
            local_r.append(new_rot[j].as_quat())
            local_t.append(new_pos[j])
        else:
            local_r.append((new_rot[p].inv() * new_rot[j]).as_quat())
            local_t.append(new_rot[p].inv().apply(new_pos[j] - new_pos[p]))
    return Skeleton(skeleton.names, skeleton.parents, np.array(local_t), np.array(local_r))


def model_rotations(skeleton: Skeleton, pose: Pose) -> tuple[Rotation, np.ndarray]:
    model = model_from_pose(skeleton, pose)
    flat = model.reshape(-1, 4, 4)
    return Rotation.from_matrix(flat[:, :3, :3]), model[..., :3, 3]


# --- onto a copy of the source with other joint frames and longer bones ---------------------------


@pytest.mark.assets
@pytest.mark.parametrize("align_bones", [True, False])
def test_copy_gets_the_same_model_space_changes_and_scaled_positions(
    pirouette, source_pose: Pose, rng: np.random.Generator, align_bones: bool
) -> None:
    source = pirouette.skeleton
    target = reoriented_copy(source, 1.3, rng)
    joint_map = propose_joint_map(source, target)
    assert joint_map == {n: n for n in source.names}
    plan = plan_retarget(source, target, joint_map, align_bones=align_bones)
    assert plan.root_scale == pytest.approx(1.3)
    assert_quat_allclose(plan.alignment, [0, 0, 0, 1], atol=1e-9)
    out = retarget_pose(plan, source_pose)

    src_rest, _ = rest_model(source)
    tgt_rest, _ = rest_model(target)
    src_rot, src_pos = model_rotations(source, source_pose)
    tgt_rot, tgt_pos = model_rotations(target, out)
    joints = source.num_joints
    src_change = src_rot * Rotation.concatenate([src_rest.inv()] * len(FRAMES))
    tgt_change = tgt_rot * Rotation.concatenate([tgt_rest.inv()] * len(FRAMES))
    assert_quat_allclose(tgt_change.as_quat(), src_change.as_quat(), atol=1e-9)
    np.testing.assert_allclose(tgt_pos, 1.3 * src_pos, atol=1e-9)
    feet = [source.index("lFoot"), source.index("rFoot")]
    np.testing.assert_allclose(tgt_pos[:, feet, 1], 1.3 * src_pos[:, feet, 1], atol=1e-9)
    assert out.rotations.shape == (len(FRAMES), joints, 4)


@pytest.mark.assets
def test_round_trip_returns_the_source(pirouette, source_pose: Pose, rng: np.random.Generator) -> None:
    source = pirouette.skeleton
    target = reoriented_copy(source, 0.7, rng, Rotation.from_euler("XY", [-90, 35], degrees=True))
    up = Rotation.from_euler("XY", [-90, 35], degrees=True).apply([0, 1, 0])
    there = plan_retarget(source, target, propose_joint_map(source, target, target_up=up), target_up=up)
    back = plan_retarget(target, source, {t: s for s, t in there.joint_map.items()}, source_up=up)
    again = retarget_pose(back, retarget_pose(there, source_pose))
    assert_quat_allclose(again.rotations, source_pose.rotations, atol=1e-9)
    np.testing.assert_allclose(again.translations, source_pose.translations, atol=1e-9)


@pytest.mark.assets
def test_alignment_of_a_turned_z_up_copy_is_found(pirouette, source_pose: Pose, rng: np.random.Generator) -> None:
    source = pirouette.skeleton
    turn = Rotation.from_euler("XZ", [90, -90], degrees=True)  # +Y up becomes +Z up, facing turned
    target = reoriented_copy(source, 1.0, rng, turn)
    up = turn.apply([0, 1, 0])
    plan = plan_retarget(source, target, propose_joint_map(source, target, target_up=up), target_up=up)
    assert_quat_allclose(plan.alignment, turn.as_quat(), atol=1e-9)
    _, src_pos = model_rotations(source, source_pose)
    _, tgt_pos = model_rotations(target, retarget_pose(plan, source_pose))
    np.testing.assert_allclose(tgt_pos, turn.apply(src_pos.reshape(-1, 3)).reshape(src_pos.shape), atol=1e-9)


# --- onto a different humanoid: the project's mannequin --------------------------------------------


@pytest.fixture(scope="module")
def mannequin() -> Skeleton:
    return build_skeleton()


@pytest.mark.assets
def test_proposed_map_onto_the_mannequin(pirouette, mannequin: Skeleton) -> None:
    joint_map = propose_joint_map(pirouette.skeleton, mannequin)
    expected = {
        "hip": "hips",
        "chest": "upper_chest",
        "neck": "neck",
        "head": "head",
        "lCollar": "clavicle_l",
        "lShldr": "upper_arm_l",
        "lForeArm": "lower_arm_l",
        "lHand": "hand_l",
        "rShldr": "upper_arm_r",
        "rThigh": "upper_leg_r",
        "rShin": "lower_leg_r",
        "rFoot": "foot_r",
        "lFoot_End": "toes_l",
    }
    assert expected.items() <= joint_map.items()
    assert joint_map["abdomen"] in ("spine", "chest")
    assert "lButtock" not in joint_map


@pytest.mark.assets
def test_bones_follow_the_source_directions_on_a_differently_posed_rig(
    pirouette, source_pose: Pose, mannequin: Skeleton
) -> None:
    source = pirouette.skeleton
    joint_map = propose_joint_map(source, mannequin)
    plan = plan_retarget(source, mannequin, joint_map, ground_feet=False)  # planted feet bend the legs
    _, src_pos = model_rotations(source, source_pose)
    _, tgt_pos = model_rotations(mannequin, retarget_pose(plan, source_pose))
    for parent, child in [("lShldr", "lForeArm"), ("rForeArm", "rHand"), ("lThigh", "lShin"), ("rShin", "rFoot")]:
        s, c = source.index(parent), source.index(child)
        t, tc = mannequin.index(joint_map[parent]), mannequin.index(joint_map[child])
        src_dir = src_pos[:, c] - src_pos[:, s]
        tgt_dir = tgt_pos[:, tc] - tgt_pos[:, t]
        cos = np.sum(src_dir * tgt_dir, -1) / np.linalg.norm(src_dir, axis=-1) / np.linalg.norm(tgt_dir, axis=-1)
        np.testing.assert_allclose(cos, 1.0, atol=1e-12)
        lengths = np.linalg.norm(tgt_dir, axis=-1)  # the target keeps its own bone lengths
        np.testing.assert_allclose(lengths, np.linalg.norm(mannequin.rest_translations[tc]), rtol=1e-12)


@pytest.mark.assets
def test_unmapped_target_joints_keep_their_rest_local_pose(pirouette, source_pose: Pose, mannequin: Skeleton) -> None:
    joint_map = propose_joint_map(pirouette.skeleton, mannequin)
    plan = plan_retarget(pirouette.skeleton, mannequin, joint_map)
    out = retarget_pose(plan, source_pose)
    unmapped = [j for j, n in enumerate(mannequin.names) if n not in joint_map.values()]
    assert [mannequin.names[j] for j in unmapped] == ["root", "spine", "fingers_l", "fingers_r"]
    assert_quat_allclose(out.rotations[:, unmapped], np.broadcast_to(mannequin.rest_rotations[unmapped], (7, 4, 4)))
    moved = [j for j in range(mannequin.num_joints) if mannequin.names[j] not in ("hips", "root")]
    np.testing.assert_array_equal(
        out.translations[:, moved], np.broadcast_to(mannequin.rest_translations[moved], (7, len(moved), 3))
    )


@pytest.mark.assets
def test_pose_batches_of_any_shape(pirouette, source_pose: Pose, mannequin: Skeleton) -> None:
    plan = plan_retarget(pirouette.skeleton, mannequin, propose_joint_map(pirouette.skeleton, mannequin))
    flat = retarget_pose(plan, source_pose[1:7])
    grid = retarget_pose(
        plan,
        Pose(
            *(
                a[1:7].reshape(2, 3, *a.shape[1:])
                for a in (source_pose.translations, source_pose.rotations, source_pose.scales)
            )
        ),
    )
    np.testing.assert_allclose(grid.rotations.reshape(flat.rotations.shape), flat.rotations, atol=1e-15)
    np.testing.assert_allclose(grid.translations.reshape(flat.translations.shape), flat.translations, atol=1e-15)
    single = retarget_pose(plan, source_pose[3])
    np.testing.assert_allclose(single.rotations, flat.rotations[2], atol=1e-15)


@pytest.mark.assets
def test_retarget_clip_keys_match_retarget_pose(pirouette, mannequin: Skeleton) -> None:
    plan = plan_retarget(pirouette.skeleton, mannequin, propose_joint_map(pirouette.skeleton, mannequin))
    clip = retarget_clip(plan, pirouette.clip.with_markers({"spin": (1.0,)}), name="pirouette_on_mannequin")
    assert clip.name == "pirouette_on_mannequin"
    assert clip.num_targets == mannequin.num_joints
    assert clip.duration == pytest.approx(pirouette.clip.duration)
    assert clip.markers == {"spin": (1.0,)}
    assert plan.travel_root == mannequin.index("root") != plan.target_root
    assert len(clip.channels) == len(plan.target_joints) + 2  # rotations; hips and root translations
    times = FRAMES * pirouette.frame_time
    expected = retarget_pose(plan, sample(pirouette.clip, pirouette.skeleton.rest_pose, times))
    got = sample(clip, mannequin.rest_pose, times)
    assert_quat_allclose(got.rotations, expected.rotations, atol=1e-9)
    np.testing.assert_allclose(got.translations, expected.translations, atol=1e-9)
    rotations = clip.channel(mannequin.index("upper_arm_l"), "rotation")
    assert rotations is not None
    assert np.all(np.sum(rotations.values[1:] * rotations.values[:-1], axis=-1) > 0)  # unflipped


# --- the travel on the target's root joint; detached feet ---------------------------------------------


def hips_as_root(skeleton: Skeleton) -> Skeleton:
    """``skeleton`` (a root joint above ``hips``) without the root: the hips are the root, same rest model pose."""
    rest = model_from_pose(skeleton, skeleton.rest_pose)
    keep = [j for j in range(skeleton.num_joints) if skeleton.parents[j] >= 0]
    new = {old: k for k, old in enumerate(keep)}
    parents = [new[int(skeleton.parents[j])] if skeleton.parents[int(skeleton.parents[j])] >= 0 else -1 for j in keep]
    translations = np.array(skeleton.rest_translations)[keep]
    rotations = np.array(skeleton.rest_rotations)[keep]
    for k, j in enumerate(keep):
        if parents[k] < 0:
            translations[k] = rest[j, :3, 3]
            rotations[k] = Rotation.from_matrix(rest[j, :3, :3]).as_quat()
    return Skeleton([skeleton.names[j] for j in keep], parents, translations, rotations)


@pytest.mark.assets
@pytest.mark.parametrize("turn", [Rotation.identity(), Rotation.from_rotvec([np.pi / 2, 0.0, 0.0])])
def test_the_root_joint_carries_the_ground_travel(pirouette, source_pose: Pose, turn: Rotation) -> None:
    """The mannequin's ``root`` takes the hips' ground position; every joint ends where it would without a root.

    The reference is the mannequin without its ``root`` (the hips its root joint): every joint's
    model position and rotation must agree. ``root`` moves across up only (none along up, no turn),
    also when the whole rig is turned so that its model space is Z-up (``turn``).
    """
    rng = np.random.default_rng(7)
    mannequin = reoriented_copy(build_skeleton(), 1.0, rng, turn)
    bare = hips_as_root(mannequin)
    up = turn.apply([0.0, 1.0, 0.0])
    planned = [
        plan_retarget(pirouette.skeleton, skeleton, propose_joint_map(pirouette.skeleton, skeleton, target_up=up),
                      target_up=up)
        for skeleton in (mannequin, bare)
    ]  # fmt: skip
    with_root, without = (retarget_pose(plan, source_pose) for plan in planned)
    assert planned[0].travel_root == mannequin.index("root")
    assert planned[1].travel_root == bare.index("hips")
    a, b = model_from_pose(mannequin, with_root), model_from_pose(bare, without)
    index = [mannequin.index(name) for name in bare.names]
    np.testing.assert_allclose(a[:, index], b, atol=1e-12)
    root = mannequin.index("root")
    travel = with_root.translations[:, root] - mannequin.rest_translations[root]
    np.testing.assert_allclose(travel @ up, 0.0, atol=1e-12)  # across up only
    assert np.ptp(np.linalg.norm(travel, axis=-1)) > 0.1  # it does travel
    assert_quat_allclose(with_root.rotations[:, root], np.broadcast_to(mannequin.rest_rotations[root], (7, 4)))
    hips = a[:, mannequin.index("hips"), :3, 3] - a[:, root, :3, 3]
    np.testing.assert_allclose(hips - (hips @ up)[:, None] * up, 0.0, atol=1e-12)  # the root is under the hips


def test_detached_feet_are_placed_on_the_legs() -> None:
    """RobotExpressive's ``Foot.L`` under ``Bone`` goes where the leg's ``LowerLeg.L_end`` goes, turned with it."""
    source = scheme_rig("cmu")
    robot = scheme_rig("robot_expressive").skeleton
    pose = source.skeleton.rest_pose.broadcast_to((5,)).copy()
    knee = source.skeleton.index("LeftLeg")
    pose.rotations[:, knee] = Rotation.from_rotvec(np.outer(np.linspace(0.2, 1.2, 5), [1.0, 0.0, 0.0])).as_quat()
    ground = -rest_model(source.skeleton)[1][:, 1].min()  # the rig's hips are at its origin: stand it up
    pose.translations[:, 0] += np.outer(np.arange(5.0), [0.5, 0.0, 2.0]) + np.array([0.0, ground, 0.0])  # walking
    plan = plan_retarget(source.skeleton, robot, propose_joint_map(source.skeleton, robot))
    assert [robot.names[j] for j in plan.detached.joints] == ["Foot.L", "Foot.R"]
    assert [robot.names[j] for j in plan.detached.anchors] == ["LowerLeg.L_end", "LowerLeg.R_end"]
    assert robot.names[plan.travel_root] == "Bone"
    out = model_from_pose(robot, retarget_pose(plan, pose))
    rest = model_from_pose(robot, robot.rest_pose)
    for foot, end in (("Foot.L", "LowerLeg.L_end"), ("Foot.R", "LowerLeg.R_end")):
        f, e = robot.index(foot), robot.index(end)
        offset = np.linalg.inv(rest[e]) @ rest[f]
        np.testing.assert_allclose(out[:, f], out[:, e] @ offset, atol=1e-12)
    travel = out[-1, plan.travel_root, :3, 3] - out[0, plan.travel_root, :3, 3]
    np.testing.assert_allclose(travel, plan.root_scale * quat_rotate(plan.alignment, [2.0, 0.0, 8.0]), atol=1e-12)
    moved = out[:, robot.index("Foot.L"), :3, 3]
    assert np.linalg.norm(moved[-1] - moved[0]) > 0.5 * np.linalg.norm(travel)  # not welded where the rest pose was


# --- real characters: CesiumMan (no joint names, Z-up) and the Fox (a quadruped) ------------------


def character(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CesiumMan's clip moves a node above the skeleton
        return load_character(path, textures=False)


@pytest.mark.assets
def test_cesium_man_parts_are_found_without_names(pirouette, source_pose: Pose, shared_assets: Path) -> None:
    man = character(shared_assets / "khronos" / "cesium_man.gltf")
    up = np.linalg.inv(man.root_transform[:3, :3]) @ [0.0, 1.0, 0.0]  # its joints live in Z-up space
    body = find_humanoid(man.skeleton, up)
    names = {role: man.skeleton.names[j] for role, j in body.roles.items()}
    # node 7's leg is on the -Z side in the world; the man faces +X there, so that is his left
    assert names["hips"] == "node2"
    assert (names["upper_leg_l"], names["foot_l"], names["toes_l"]) == ("node7", "node9", "node10")
    assert (names["upper_arm_r"], names["hand_r"]) == ("node13", "node15")
    assert names["head"] == "node20"
    joint_map = propose_joint_map(pirouette.skeleton, man.skeleton, target_up=up)
    plan = plan_retarget(pirouette.skeleton, man.skeleton, joint_map, target_up=up)
    world_alignment = Rotation.from_matrix(man.root_transform[:3, :3]) * Rotation.from_quat(plan.alignment)
    np.testing.assert_allclose(world_alignment.apply([[0, 1, 0], [0, 0, 1]]), [[0, 1, 0], [1, 0, 0]], atol=1e-3)
    out = retarget_pose(plan, source_pose)
    assert np.isfinite(out.rotations).all()


@pytest.mark.assets
def test_the_fox_is_refused_with_a_reason(pirouette, shared_assets: Path) -> None:
    fox = character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb").skeleton
    reason = r"the spine \('b_Hip_01' → 'b_Spine02_03'\) is 68° from up \[0.0, 1.0, 0.0\].*not upright"
    with pytest.raises(SkeletonMismatchError, match=reason):
        find_humanoid(fox)
    with pytest.raises(SkeletonMismatchError, match="cannot propose a joint map.*" + reason):
        propose_joint_map(pirouette.skeleton, fox)
    with pytest.raises(SkeletonMismatchError, match="cannot propose a joint map.*" + reason):
        propose_joint_map(fox, pirouette.skeleton)
    assert propose_joint_map(fox, fox) == {n: n for n in fox.names}  # same rig: equal names map


# --- mapping helpers and bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "side"),
    [
        ("lThigh", "l"),
        ("rForeArm", "r"),
        ("LeftUpLeg", "l"),
        ("mixamorig:RightHand", "r"),
        ("upper_arm_l", "l"),
        ("Bip01 R Foot", "r"),
        ("thigh.L", "l"),
        ("b_LeftUpperArm_09", "l"),
        ("node16", None),
        ("leftright", None),
        ("Head", None),
    ],
)
def test_name_side(name: str, side: str | None) -> None:
    assert name_side(name) == side


def test_mannequin_maps_onto_itself_by_parts_and_names(mannequin: Skeleton) -> None:
    assert propose_joint_map(mannequin, mannequin) == {n: n for n in mannequin.names}


def test_not_upright_when_up_is_wrong(mannequin: Skeleton) -> None:
    with pytest.raises(
        SkeletonMismatchError, match=r"legs 'upper_leg_l' and 'upper_leg_r' do not reach below 'hips'.*not upright"
    ):
        find_humanoid(mannequin, up=(0, 0, 1))


def test_a_chain_is_not_a_humanoid() -> None:
    chain = Skeleton(["a", "b", "c"], [-1, 0, 1], [[0, 0, 0], [0, 1, 0], [0, 1, 0]])
    with pytest.raises(SkeletonMismatchError, match="no joint where a spine and two legs meet"):
        find_humanoid(chain)


def test_unnamed_rig_without_toes_cannot_tell_left_from_right(mannequin: Skeleton) -> None:
    keep = [j for j, n in enumerate(mannequin.names) if not n.startswith("toes")]
    names = [f"j{k}" for k in range(len(keep))]
    parents = [keep.index(mannequin.parents[j]) if mannequin.parents[j] >= 0 else -1 for j in keep]
    bare = Skeleton(names, parents, mannequin.rest_translations[keep])
    with pytest.raises(SkeletonMismatchError, match="cannot tell left from right"):
        find_humanoid(bare)


@pytest.mark.parametrize(
    ("joint_map", "options", "error", "message"),
    [
        ({}, {}, InvalidInputError, "non-empty mapping"),
        (
            {"hips": "pelvis"},
            {},
            SkeletonMismatchError,
            "joint_map names joints that do not exist: target joints 'pelvis'$",
        ),
        ({"hips": "hips", "spine": "hips"}, {}, SkeletonMismatchError, "sends both 'hips' and 'spine'"),
        (
            {"hips": "upper_leg_l", "upper_leg_l": "hips"},
            {},
            SkeletonMismatchError,
            "breaks the hierarchy: 'hips' → 'upper_leg_l': the nearest mapped ancestor of 'hips' is none but",
        ),
        ({"upper_leg_l": "upper_leg_l", "upper_leg_r": "upper_leg_r"}, {}, SkeletonMismatchError, "got 2"),
        ({"hips": "hips"}, {"root_scale": -1.0}, InvalidInputError, "root_scale must be a positive number"),
        ({"hips": "hips"}, {"root_scale": 1.0, "alignment": [0, 0, 0, 2]}, InvalidInputError, "alignment"),
        ({"hips": "hips"}, {"root_scale": 1.0, "target_up": [0, 0, 0]}, InvalidInputError, "target_up"),
    ],
)
def test_plan_rejects_bad_maps_and_options(
    mannequin: Skeleton, joint_map: dict, options: dict, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        plan_retarget(mannequin, mannequin, joint_map, **options)


def test_leg_length_of_a_rig_with_nothing_below_the_root_is_not_guessed() -> None:
    chain = Skeleton(["a", "b", "c"], [-1, 0, 1], [[0, 0, 0], [0, 1, 0], [0, 1, 0]])
    with pytest.raises(InvalidInputError, match="cannot measure the leg length: no mapped joint lies below 'a'"):
        plan_retarget(chain, chain, {"a": "a", "b": "b"})
    assert plan_retarget(chain, chain, {"a": "a", "b": "b"}, source_up=(0, -1, 0), target_up=(0, -1, 0)).root_scale == 1


def test_pose_of_another_skeleton_is_rejected(mannequin: Skeleton) -> None:
    plan = plan_retarget(mannequin, mannequin, {n: n for n in mannequin.names})
    wrong = Pose(np.zeros((3, 3)), np.tile([0.0, 0, 0, 1], (3, 1)), np.ones((3, 3)))
    with pytest.raises(SkeletonMismatchError, match="3 joints but the skeleton has 25"):
        retarget_pose(plan, wrong)


def test_identity_map_on_the_same_skeleton_is_the_identity(mannequin: Skeleton, rng: np.random.Generator) -> None:
    plan = plan_retarget(mannequin, mannequin, {n: n for n in mannequin.names})
    pose = mannequin.rest_pose.broadcast_to((4,))
    pose.rotations[:] = Rotation.random(4 * 25, random_state=rng).as_quat().reshape(4, 25, 4)
    pose.translations[:, 0] += rng.normal(size=(4, 3))  # the root carries the translation
    out = retarget_pose(plan, pose)
    assert_quat_allclose(out.rotations, pose.rotations, atol=1e-12)
    np.testing.assert_allclose(out.translations, pose.translations, atol=1e-12)


# --- errors in the caller's words, '#' names, the report --------------------------------------------


def test_errors_name_the_map_as_the_caller_calls_it(mannequin: Skeleton) -> None:
    with pytest.raises(SkeletonMismatchError, match=r"^--map m\.json sends both 'hips' and 'spine' to target joint"):
        plan_retarget(mannequin, mannequin, {"hips": "hips", "spine": "hips"}, map_name="--map m.json")
    with pytest.raises(InvalidInputError, match=r"^--map m\.json must be a non-empty mapping"):
        plan_retarget(mannequin, mannequin, {}, map_name="--map m.json")


def test_repeated_names_are_hinted() -> None:
    """The glTF reader names repeated nodes ``Torso#10``; a map naming ``Torso`` is told so."""
    names = ["hips", "Torso#10", "Torso#12", "head"]
    target = Skeleton(names, [-1, 0, 1, 2], [[0, 1, 0], [0, 0.2, 0], [0, 0.2, 0], [0, 0.2, 0]])
    source = Skeleton(["hips", "spine", "chest", "head"], [-1, 0, 1, 2], target.rest_translations)
    expected = (
        r"joint_map names joints that do not exist: target joints 'Torso' \(several joints share that name and are "
        r"called \['Torso#10', 'Torso#12'\] here: the glTF reader adds '#' and the node index to repeats\)$"
    )
    with pytest.raises(SkeletonMismatchError, match=expected):
        plan_retarget(source, target, {"hips": "hips", "spine": "Torso"}, root_scale=1.0)
    with pytest.raises(SkeletonMismatchError, match=r"source joints 'heda' \(did you mean 'head'\?\)$"):
        plan_retarget(source, target, {"hips": "hips", "heda": "head"}, root_scale=1.0)


@pytest.mark.assets
def test_explain_joint_map_says_which_part_and_why(pirouette, mannequin: Skeleton) -> None:
    joint_map = propose_joint_map(pirouette.skeleton, mannequin)
    lines = explain_joint_map(pirouette.skeleton, mannequin, joint_map).splitlines()
    line = next(line for line in lines if line.startswith("lShldr → upper_arm_l"))
    assert "upper_arm_l: source name: 'lShldr' = upper arm; target name: 'upper_arm_l' = upper arm" in line
    assert any(line.startswith("abdomen → ") and "of the way from hips to chest" in line for line in lines)
    fewer = {s: t for s, t in joint_map.items() if not t.startswith("toes")}
    assert "found in both but not mapped: toes_l, toes_r" in explain_joint_map(pirouette.skeleton, mannequin, fewer)
    fox = Skeleton(["a", "b"], [-1, 0], [[0, 0, 0], [0, 1, 0]])
    assert explain_joint_map(fox, fox, {"a": "a", "b": "b"}) == (
        "2 joints mapped by name (the source is not a humanoid skeleton (2 joints): no joint where a spine and two "
        "legs meet (no joint has three limbs of two or more joints))"
    )


# --- ground contact --------------------------------------------------------------------------------


def target_leg(plan) -> float:
    """Rest height of the target's hips above its lowest leg joint."""
    rest = model_from_pose(plan.target, plan.target.rest_pose)[:, 1, 3]
    return float(rest[plan.target.index("hips")] - rest.min())


def test_grounding_lifts_the_supporting_foot_as_the_source_lifts_it() -> None:
    """Legs of other proportions (shins 40 % shorter, feet 60 % longer), the source on one leg or on both.

    Both stand on the model origin, so each foot joint's rest height is where it stands; the
    target's supporting joint is as far above that as the source's, scaled by the leg ratio.
    """
    source = scheme_rig("vrm").skeleton  # Y up, facing +Z, left +X, identity rest rotations
    count = 12
    lift = np.linspace(0.0, 1.2, count)  # right thigh forward, knee bent twice as much, left leg bent a little
    rotations = np.tile([0.0, 0.0, 0.0, 1.0], (count, source.num_joints, 1))
    rotations[:, source.index("rightUpperLeg")] = Rotation.from_rotvec(np.outer(-lift, [1, 0, 0])).as_quat()
    rotations[:, source.index("rightLowerLeg")] = Rotation.from_rotvec(np.outer(2 * lift, [1, 0, 0])).as_quat()
    rotations[:, source.index("leftUpperLeg")] = Rotation.from_rotvec(np.outer(-0.3 * lift, [1, 0, 0])).as_quat()
    rotations[:, source.index("leftLowerLeg")] = Rotation.from_rotvec(np.outer(0.6 * lift, [1, 0, 0])).as_quat()
    translations = np.broadcast_to(source.rest_translations, (count, source.num_joints, 3)).copy()
    pose = Pose(translations, rotations, np.ones_like(translations))
    offsets = np.array(source.rest_translations)
    for side in ("left", "right"):
        offsets[source.index(f"{side}LowerLeg")] *= 0.6
        offsets[source.index(f"{side}Foot")] *= 1.6
    offsets[source.index("hips")] += [0.0, 0.41 * (0.6 + 1.6 - 2.0), 0.0]  # standing on the origin
    target = Skeleton(source.names, source.parents, offsets)
    joint_map = {n: n for n in source.names}
    grounded = plan_retarget(source, target, joint_map)
    floating = plan_retarget(source, target, joint_map, ground_feet=False)
    assert [target.names[j] for j in grounded.target_feet] == ["leftFoot", "rightFoot", "leftToes", "rightToes"]
    assert floating.target_feet.size == 0
    legs = np.array([[source.index(n) for n in (f"{side}Foot", f"{side}Toes")] for side in ("left", "right")])
    source_rest = model_from_pose(source, source.rest_pose)[:, 1, 3]
    target_rest = model_from_pose(target, target.rest_pose)[:, 1, 3]
    source_heights = grounded.root_scale * (model_from_pose(source, pose)[..., 1, 3] - source_rest)  # (T, J)
    frames = np.arange(count)
    per_leg = source_heights[:, legs]  # (T, leg, ankle/toes)
    lower_leg = np.argmin(per_leg.min(axis=2), axis=1)
    support = legs[lower_leg, np.argmin(per_leg[frames, lower_leg], axis=1)]  # the source's lowest joint
    errors = {}
    for name, plan in (("grounded", grounded), ("floating", floating)):
        target_heights = model_from_pose(target, retarget_pose(plan, pose))[..., 1, 3] - target_rest
        errors[name] = np.abs(target_heights[frames, support] - source_heights[frames, support])
    # one leg clearly lower (the other 8 softness widths higher, weight e⁻⁸): its lowest joint lands exactly
    single = np.abs(np.diff(per_leg.min(axis=2), axis=1))[:, 0] > 8 * GROUND_SOFTNESS * target_leg(grounded)
    assert single.sum() >= 4
    assert errors["grounded"][single].max() < 1e-3 * errors["floating"][single].max()
    # both feet down: the lift shares the legs' mismatch between them
    assert errors["grounded"].max() < errors["floating"].max()


def test_a_foot_of_another_shape_stands_on_the_ground_where_the_source_stands() -> None:
    """An ankle standing high over a short foot (KayKit's 15 cm, the source's 8 cm): the toes stay on the floor.

    Each foot joint counts from the height it stands at, not from the source joint's height scaled:
    scaled, the target's toes would stand at the source toes' 3 cm and float.
    """
    source = scheme_rig("vrm").skeleton  # ankle 8 cm, toes 3 cm over the floor
    offsets = np.array(source.rest_translations)
    for side in ("left", "right"):
        offsets[source.index(f"{side}Foot")] += [0.0, 0.07, 0.0]  # the ankle at 15 cm
        offsets[source.index(f"{side}Toes")] += [0.0, -0.1, 0.0]  # the toes on the floor
    target = Skeleton(source.names, source.parents, offsets)
    plan = plan_retarget(source, target, {n: n for n in source.names})
    count = 6
    rotations = np.tile([0.0, 0.0, 0.0, 1.0], (count, source.num_joints, 1))
    bend = np.concatenate(([0.0], np.linspace(0.6, 1.0, count - 1)))  # the right leg lifts, the left stands
    rotations[:, source.index("rightUpperLeg")] = Rotation.from_rotvec(np.outer(-bend, [1, 0, 0])).as_quat()
    rotations[:, source.index("rightLowerLeg")] = Rotation.from_rotvec(np.outer(2 * bend, [1, 0, 0])).as_quat()
    translations = np.broadcast_to(source.rest_translations, (count, source.num_joints, 3)).copy()
    pose = Pose(translations, rotations, np.ones_like(translations))
    heights = model_from_pose(target, retarget_pose(plan, pose))[..., 1, 3]
    np.testing.assert_allclose(heights[:, target.index("leftToes")], 0.0, atol=1e-3)  # the soft minimum: < 1 mm
    np.testing.assert_allclose(heights[0, target.index("rightToes")], 0.0, atol=1e-9)
    assert (heights[1:, target.index("rightToes")] > 0.05).all()


def test_the_rest_pose_correction_leaves_the_feet_as_they_stand() -> None:
    """A foot bone sloping 23° in the source, 9° in the target: the source's rest plays as the target's rest feet.

    Turning the target's foot onto the source's slope (as the arms are turned from an A-pose to a
    T-pose) would tip it onto its toes: both rest poses stand on flat feet.
    """
    source = scheme_rig("vrm").skeleton
    offsets = np.array(source.rest_translations)
    for side in ("left", "right"):
        offsets[source.index(f"{side}Toes")] = [0.0, -0.02, 0.12]
    target = Skeleton(source.names, source.parents, offsets)
    plan = plan_retarget(source, target, {n: n for n in source.names})
    posed = model_from_pose(target, retarget_pose(plan, source.rest_pose))
    rest = model_from_pose(target, target.rest_pose)
    for joint in ("leftFoot", "rightFoot", "leftToes", "rightToes"):
        j = target.index(joint)
        np.testing.assert_allclose(posed[j, :3, :3], rest[j, :3, :3], atol=1e-9, err_msg=joint)


def long_stride(source: Skeleton) -> Pose:
    """The VRM rig's pose ``(1, J)`` in a long stride on flat feet: hips 12 cm lower, each ankle where it stands."""
    pose = source.rest_pose.broadcast_to((1,)).copy()
    pose.translations[0, 0, 1] -= 0.12
    for side, x, z in (("left", 0.08, -0.3), ("right", -0.08, 0.3)):
        model = model_from_pose(source, pose)
        joints = [source.index(f"{side}{part}") for part in ("UpperLeg", "LowerLeg", "Foot")]
        ik = two_bone_ik(source, model, *joints, [x, 0.08, z], [0.0, 0.0, 1.0], keep_end_rotation=True)
        pose = ik.apply(pose)
    return pose


def test_legs_of_other_proportions_both_stand_where_the_source_stands() -> None:
    """Thighs 0.8 and shins 1.25 times the source's, the source in a long stride on both flat feet: both stand.

    The source's directions on the target's legs would put one foot under the floor and the other
    over it; the leg IK bends them (the knees a few degrees) until both reach it, and leaves the
    feet as they are turned.
    """
    source = scheme_rig("vrm").skeleton  # ankles 8 cm and toes 3 cm over the floor
    offsets = np.array(source.rest_translations)
    for side in ("left", "right"):
        offsets[source.index(f"{side}LowerLeg")] *= 0.8
        offsets[source.index(f"{side}Foot")] *= 1.25
    offsets[source.index("hips")] += [0.0, 0.41 * 0.05, 0.0]  # standing on the origin
    target = Skeleton(source.names, source.parents, offsets)
    plan = plan_retarget(source, target, {n: n for n in source.names})
    pose = long_stride(source)
    toes = [source.index(n) for n in ("leftToes", "rightToes")]
    np.testing.assert_allclose(model_from_pose(source, pose)[0, toes, 1, 3], 0.03, atol=1e-6)
    heights = model_from_pose(target, retarget_pose(plan, pose))[0, toes, 1, 3]
    np.testing.assert_allclose(heights, 0.03, atol=1e-4)


def toeless(skeleton: Skeleton, thigh: float = 1.0, shin: float = 1.0) -> Skeleton:
    """``skeleton`` without its toes joints (legs that end at the ankle, as RobotExpressive's), its bones scaled."""
    kept = [j for j, name in enumerate(skeleton.names) if not name.endswith("Toes")]
    offsets = np.array(skeleton.rest_translations)
    for side in ("left", "right"):
        offsets[skeleton.index(f"{side}LowerLeg")] *= thigh
        offsets[skeleton.index(f"{side}Foot")] *= shin
    parents = [kept.index(skeleton.parents[j]) if skeleton.parents[j] >= 0 else -1 for j in kept]
    return Skeleton([skeleton.names[j] for j in kept], parents, offsets[kept])


def test_legs_without_toe_joints_are_planted_too() -> None:
    """The stride above onto legs of other proportions that end at the ankle: both ankles stand as at rest."""
    source = scheme_rig("vrm").skeleton
    target = toeless(source, 0.8, 1.25)
    plan = plan_retarget(source, target, {n: n for n in target.names})
    assert plan.contact is not None
    assert plan.contact.chains is not None
    pose = long_stride(source)
    ankles = [target.index(f"{side}Foot") for side in ("left", "right")]
    rest = model_from_pose(target, target.rest_pose)[ankles, 1, 3]
    posed = model_from_pose(target, retarget_pose(plan, pose))[0, ankles, 1, 3]
    np.testing.assert_allclose(posed, rest, atol=1e-4)


def test_a_straight_leg_without_toes_bends_its_knee_to_the_front() -> None:
    """Straight legs 2 cm too long for the ground: planted, each knee comes forward (+Z, the character's front).

    With a toes joint a straight knee bends towards the toes; without one, towards the front of
    the hips (their left × up).
    """
    source = scheme_rig("vrm").skeleton
    target = toeless(source)
    plan = plan_retarget(source, target, {n: n for n in target.names})
    assert plan.contact is not None
    pose = target.rest_pose.broadcast_to((1,)).copy()
    pose.translations[0, 0, 1] -= 0.02  # both ankles 2 cm under where they stand
    plant_feet(plan.contact, plan.root_scale, model_from_pose(source, source.rest_pose)[None], target, pose)
    rest, posed = model_from_pose(target, target.rest_pose), model_from_pose(target, pose)[0]
    for side in ("left", "right"):
        hip, knee, ankle = (target.index(f"{side}{part}") for part in ("UpperLeg", "LowerLeg", "Foot"))
        assert posed[ankle, 1, 3] == pytest.approx(rest[ankle, 1, 3], abs=1e-9)
        line = posed[ankle, :3, 3] - posed[hip, :3, 3]
        out = posed[knee, :3, 3] - posed[hip, :3, 3]
        out -= (out @ line) / (line @ line) * line
        assert out[2] > 1e-3, (side, out)
        assert abs(out[0]) < 1e-9, (side, out)


def test_a_hand_goes_no_deeper_under_the_floor_than_the_sources() -> None:
    """Arms three times as long hanging down reach 18 cm under the floor: the body is lifted, the hands touch it.

    The source's hands hang 76 cm over the floor; the scaled source is no reason to push the
    target's through it (the programs would then stand the whole take on its fingertips).
    """
    source = scheme_rig("vrm").skeleton
    offsets = np.array(source.rest_translations)
    for side in ("left", "right"):
        for part in ("LowerArm", "Hand"):
            offsets[source.index(f"{side}{part}")] *= 3.0
    target = Skeleton(source.names, source.parents, offsets)
    pose = source.rest_pose.broadcast_to((1,)).copy()
    for side, sign in (("left", -1.0), ("right", 1.0)):  # arms down along the sides
        pose.rotations[0, source.index(f"{side}UpperArm")] = Rotation.from_rotvec([0, 0, sign * np.pi / 2]).as_quat()
    hands = [j for j, name in enumerate(source.names) if "Hand" in name or "Index" in name]
    assert model_from_pose(source, pose)[0, hands, 1, 3].min() == pytest.approx(0.76, abs=0.01)
    heights = {}
    for feet in (True, False):
        plan = plan_retarget(source, target, {n: n for n in source.names}, ground_feet=feet)
        heights[feet] = model_from_pose(target, retarget_pose(plan, pose))[0, :, 1, 3]
    assert heights[False][hands].min() == pytest.approx(-0.18, abs=0.01)  # the source's directions alone
    assert heights[True][hands].min() == pytest.approx(0.0, abs=1e-9)
    toes = [target.index(n) for n in ("leftToes", "rightToes")]
    assert (heights[True][toes] > 0.15).all()  # the feet leave the floor instead


def test_wide_hips_roll_less_so_the_feet_stay_level() -> None:
    """Hips three times as wide rolled 10°: the hip joints keep the source's height difference for their legs.

    Rolled as far as the source's, a chibi's wide hips lift one foot three times as far (KayKit's
    hips are 0.9 of its leg wide, a performer's 0.25), and the legs would bend it away.
    """
    source = scheme_rig("vrm").skeleton
    offsets = np.array(source.rest_translations)
    for side in ("left", "right"):
        offsets[source.index(f"{side}UpperLeg")] *= [3.0, 1.0, 1.0]
    target = Skeleton(source.names, source.parents, offsets)
    plan = plan_retarget(source, target, {n: n for n in source.names})
    pose = source.rest_pose.broadcast_to((1,)).copy()
    pose.rotations[0, 0] = Rotation.from_rotvec([0.0, 0.0, np.radians(10.0)]).as_quat()  # a roll about forward

    def rise(skeleton: Skeleton, posed: Pose) -> float:
        heights = model_from_pose(skeleton, posed)[0, :, 1, 3]
        return float(heights[skeleton.index("leftUpperLeg")] - heights[skeleton.index("rightUpperLeg")])

    leg = 0.92  # both: the hips 95 cm over the lowest leg joint (toes, 3 cm)
    assert rise(source, pose) / leg == pytest.approx(0.16 * np.sin(np.radians(10.0)) / leg, rel=1e-6)
    np.testing.assert_allclose(rise(target, retarget_pose(plan, pose)), rise(source, pose), atol=1e-9)
    spine = target.index("spine")
    np.testing.assert_allclose(  # the spine keeps the source's turn
        model_from_pose(target, retarget_pose(plan, pose))[0, spine, :3, :3],
        model_from_pose(source, pose)[0, spine, :3, :3],
        atol=1e-9,
    )


def test_a_swinging_foot_comes_no_deeper_under_the_floor_than_the_sources() -> None:
    """A shoe 45 cm long, the foot swinging back toes-down 14 cm over where it stands: its toes would pass 14 cm under.

    Far from the ground the leg keeps the source's directions, but no deeper than the floor.
    """
    source = scheme_rig("vrm").skeleton
    offsets = np.array(source.rest_translations)
    for side in ("left", "right"):
        offsets[source.index(f"{side}Toes")] = [0.0, -0.05, 0.45]
    target = Skeleton(source.names, source.parents, offsets)
    plan = plan_retarget(source, target, {n: n for n in source.names})
    pose = source.rest_pose.broadcast_to((1,)).copy()
    pose.translations[0, 0, 1] -= 0.05
    for side, x, y, z in (("left", 0.08, 0.08, 0.0), ("right", -0.08, 0.3, -0.2)):
        joints = [source.index(f"{side}{part}") for part in ("UpperLeg", "LowerLeg", "Foot")]
        model = model_from_pose(source, pose)
        pose = two_bone_ik(source, model, *joints, [x, y, z], [0.0, 0.0, 1.0], keep_end_rotation=True).apply(pose)
    foot = source.index("rightFoot")
    pitch = Rotation.from_quat(pose.rotations[0, foot]) * Rotation.from_rotvec([np.radians(60.0), 0.0, 0.0])
    pose.rotations[0, foot] = pitch.as_quat()  # toes down
    toes = [source.index(n) for n in ("leftToes", "rightToes")]
    np.testing.assert_allclose(model_from_pose(source, pose)[0, toes, 1, 3], [0.03, 0.171], atol=0.001)
    heights = model_from_pose(target, retarget_pose(plan, pose))[0, :, 1, 3]
    np.testing.assert_allclose(heights[toes], [0.03, 0.03], atol=1e-4)  # the swinging toes skim the floor


def test_the_stride_scales_by_the_legs_not_by_the_hips_height() -> None:
    """Legs as long as the source's under a hips joint 15 cm lower (KayKit's sits below its thighs): same travel.

    The legs swing through the source's directions, so the feet land as far apart as the source's;
    scaled by the hips' height the root would travel 16 % short and the feet would slide.
    """
    source = scheme_rig("vrm").skeleton
    offsets = np.array(source.rest_translations)
    offsets[source.index("hips")] -= [0.0, 0.15, 0.0]
    for side in ("left", "right"):
        offsets[source.index(f"{side}UpperLeg")] += [0.0, 0.15, 0.0]
    target = Skeleton(source.names, source.parents, offsets)
    plan = plan_retarget(source, target, {n: n for n in source.names})
    assert plan.root_scale == pytest.approx(1.0)
    pose = source.rest_pose.broadcast_to((2,)).copy()
    pose.translations[1, 0] += [0.0, 0.0, 1.0]  # a metre forward
    moved = model_from_pose(target, retarget_pose(plan, pose))[:, 0, :3, 3]
    np.testing.assert_allclose(moved[1] - moved[0], [0.0, 0.0, 1.0], atol=1e-9)
