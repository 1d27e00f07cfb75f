"""Humanoid detection on the common naming schemes (tests/anim/rigs.py), their variants and real assets.

The ground truth is each scheme's documented meaning of its joint names, written down in
``rigs.py`` with where it comes from. Variants check what must not matter: child order, rig
orientation and size, joint frames, helper joints, and that mirroring the rig mirrors the answer.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton
from engine.anim.humanoid import ROLES, SIDES, find_humanoid, name_side, parse_joint_name
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.io import load_character
from engine.io.bvh import load_bvh
from engine.procedural.mannequin import build_skeleton
from tests.anim.rigs import all_rigs, body_axes, build, reframed, rest_positions, rig

RIG_NAMES = [r.name for r in all_rigs()]


def found_names(body, skeleton: Skeleton) -> dict[str, str]:
    return {role: skeleton.names[j] for role, j in body.roles.items()}


# --- every scheme, by name -------------------------------------------------------------------------


@pytest.mark.parametrize("name", RIG_NAMES)
def test_each_scheme_maps_every_part_to_its_documented_joint(name: str) -> None:
    r = rig(name)
    body = find_humanoid(r.skeleton, r.up)
    assert found_names(body, r.skeleton) == r.expected
    assert set(body.reasons) == set(body.roles)


@pytest.mark.parametrize(
    ("scheme", "joint", "part"),
    [
        ("cmu", "LeftShoulder", "clavicle_l"),  # cgspeed: the shoulder is the clavicle, LeftArm the upper arm
        ("cmu", "LeftArm", "upper_arm_l"),
        ("biovision", "LeftShoulder", "upper_arm_l"),  # Biovision: the collar is the clavicle
        ("biovision", "LeftCollar", "clavicle_l"),
        ("mixamo", "mixamorig:LeftShoulder", "clavicle_l"),
        ("vrm", "leftShoulder", "clavicle_l"),
        ("rigify", "shoulder.L", "clavicle_l"),
        ("unreal", "clavicle_l", "clavicle_l"),
        ("genesis", "lCollar", "clavicle_l"),
        ("genesis", "lShldrBend", "upper_arm_l"),  # Daz: "Shldr" is the upper arm, its twist bone no part
        ("mixamo", "mixamorig:LeftLeg", "lower_leg_l"),  # "leg" below "UpLeg" is the shin
        ("cmu", "LeftLeg", "lower_leg_l"),
    ],
)
def test_shoulder_collar_and_leg_mean_what_their_scheme_says(scheme: str, joint: str, part: str) -> None:
    r = rig(scheme)
    body = find_humanoid(r.skeleton, r.up)
    assert body.roles[part] == r.skeleton.index(joint)


def test_the_same_word_resolves_by_the_chain_it_sits_in() -> None:
    """``LeftLeg`` above ``LeftShin`` is the thigh; ``Shoulder`` with no upper arm below is the upper arm."""
    legs = [
        ("Hips", None, (0, 1.0, 0)),
        ("Spine", "Hips", (0, 0.5, 0)),
        ("Head", "Spine", (0, 0.3, 0)),
        *[
            row
            for side, x in (("Left", 1), ("Right", -1))
            for row in [
                (f"{side}Leg", "Hips", (0.1 * x, -0.05, 0)),
                (f"{side}Shin", f"{side}Leg", (0, -0.45, 0)),
                (f"{side}Foot", f"{side}Shin", (0, -0.45, 0)),
                (f"{side}Toe", f"{side}Foot", (0, -0.05, 0.1)),
                (f"{side}Shoulder", "Spine", (0.18 * x, 0.0, 0)),
                (f"{side}Elbow", f"{side}Shoulder", (0.28 * x, 0, 0)),
                (f"{side}Wrist", f"{side}Elbow", (0.25 * x, 0, 0)),
            ]
        ],
    ]
    skeleton = build(legs)
    names = found_names(find_humanoid(skeleton), skeleton)
    assert (names["upper_leg_l"], names["lower_leg_l"], names["foot_l"]) == ("LeftLeg", "LeftShin", "LeftFoot")
    assert (names["upper_arm_r"], names["lower_arm_r"], names["hand_r"]) == (
        "RightShoulder",
        "RightElbow",
        "RightWrist",
    )
    assert "clavicle_l" not in names
    body = find_humanoid(skeleton)
    assert "no thigh joint above it" in body.reasons["upper_leg_l"]
    assert "no upper-arm joint below it" in body.reasons["upper_arm_l"]


@pytest.mark.parametrize(
    ("name", "side", "parts"),
    [
        ("mixamorig:LeftForeArm", "l", ("lower_arm",)),
        ("DEF-upper_arm.R.001", "r", ("upper_arm",)),
        ("Bip01 L Clavicle", "l", ("clavicle",)),
        ("J_Bip_R_UpperLeg", "r", ("upper_leg",)),
        ("CC_Base_L_Upperarm", "l", ("upper_arm",)),
        ("b_LeftUpperArm_09", "l", ("upper_arm",)),
        ("thigh.L", "l", ("upper_leg",)),
        ("calf_r", "r", ("lower_leg",)),
        ("LeftShoulder", "l", ("clavicle", "upper_arm")),
        ("lShldrBend", "l", ("upper_arm",)),
        ("RightLeg", "r", ("lower_leg", "upper_leg")),
        ("upperarm_twist_01_l", "l", ()),
        ("LeftToe_End", "l", ()),
        ("LHipJoint", "l", ()),
        ("lButtock", "l", ()),
        ("mixamorig:LeftHandIndex1", "l", ()),
        ("Head", None, ()),
        ("node16", None, ()),
        ("leftright", None, ()),
        ("UpperLeg.L", "l", ("upper_leg",)),
        ("LowerLeg.L_end", "l", ()),
        ("PoleTarget.R", "r", ()),
    ],
)
def test_parse_joint_name(name: str, side: str | None, parts: tuple[str, ...]) -> None:
    parsed = parse_joint_name(name)
    assert (parsed.side, parsed.parts) == (side, parts)
    assert name_side(name) == side


@pytest.mark.parametrize(
    ("name", "end"),
    [("LeftToe_End", True), ("LowerLeg.L_end", True), ("b_Tail_Nub", True), ("upperarm_twist_01_l", False),
     ("PoleTarget.L", False), ("Head", False)],
)  # fmt: skip
def test_end_joints_are_told_from_other_helpers(name: str, end: bool) -> None:
    parsed = parse_joint_name(name)
    assert parsed.helper == (name != "Head")
    assert parsed.end == end


# --- variants that must not change the answer ---------------------------------------------------------


def rebuilt(skeleton: Skeleton, order: list[int] | None = None, names: list[str] | None = None) -> Skeleton:
    """``skeleton`` with joints listed in ``order`` (parents first) and optionally renamed."""
    order = order if order is not None else list(range(skeleton.num_joints))
    new = {old: k for k, old in enumerate(order)}
    return Skeleton(
        [(names or list(skeleton.names))[j] for j in order],
        [new[int(skeleton.parents[j])] if skeleton.parents[j] >= 0 else -1 for j in order],
        skeleton.rest_translations[order],
        skeleton.rest_rotations[order],
    )


def shuffled_order(skeleton: Skeleton, rng: np.random.Generator) -> list[int]:
    """A depth-first order visiting children in a random order."""
    children: list[list[int]] = [[] for _ in range(skeleton.num_joints)]
    for j, p in enumerate(skeleton.parents):
        if p >= 0:
            children[int(p)].append(j)
    order: list[int] = []
    stack = [int(r) for r in skeleton.levels[0]]
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(rng.permutation(children[j]).tolist())
    return order


@given(seed=st.integers(0, 2**32 - 1), which=st.sampled_from(RIG_NAMES))
def test_child_order_orientation_size_and_joint_frames_do_not_matter(seed: int, which: str) -> None:
    rng = np.random.default_rng(seed)
    r = rig(which)
    turn = Rotation.random(random_state=rng)
    moved = reframed(rebuilt(r.skeleton, shuffled_order(r.skeleton, rng)), turn, float(rng.uniform(0.01, 100)), rng)
    body = find_humanoid(moved, turn.apply(r.up))
    assert found_names(body, moved) == r.expected


def from_rows(names: list[str], parents: list[int], offsets: list[np.ndarray]) -> Skeleton:
    """A skeleton from rows in any order (parents anywhere), relisted parents first."""
    depths = []
    for j in range(len(names)):
        d, k = 0, j
        while parents[k] >= 0:
            k, d = parents[k], d + 1
        depths.append(d)
    order = sorted(range(len(names)), key=lambda j: (depths[j], j))
    new = {old: k for k, old in enumerate(order)}
    return Skeleton(
        [names[j] for j in order],
        [new[parents[j]] if parents[j] >= 0 else -1 for j in order],
        np.array([offsets[j] for j in order]),
    )


@given(seed=st.integers(0, 2**32 - 1), which=st.sampled_from(RIG_NAMES))
def test_helper_joints_take_no_part(seed: int, which: str) -> None:
    """Twist leaves beside limb joints, twist joints inside the chains and end leaves are ignored."""
    rng = np.random.default_rng(seed)
    r = rig(which)
    skeleton = r.skeleton
    names, parents = list(skeleton.names), [int(p) for p in skeleton.parents]
    offsets = [np.array(t) for t in skeleton.rest_translations]
    limb_roles = [role for role in r.expected if role[:-2] in ("upper_arm", "lower_arm", "upper_leg", "lower_leg")]
    for role in rng.choice(limb_roles, size=min(4, len(limb_roles)), replace=False):
        j = skeleton.index(r.expected[role])
        chain_child = (
            next(
                c
                for c in range(len(names))
                if parents[c] == j and (c in [skeleton.index(n) for n in r.expected.values()])
            )
            if any(parents[c] == j and names[c] in r.expected.values() for c in range(len(names)))
            else None
        )
        if chain_child is None:
            continue
        if rng.random() < 0.5:  # a twist leaf beside the chain
            names.append(f"{names[j]}_twist")
            parents.append(j)
            offsets.append(0.5 * offsets[chain_child])
        else:  # a twist joint inside the chain, halfway along the bone
            names.append(f"{names[j]}_roll")
            parents.append(j)
            offsets.append(0.5 * offsets[chain_child])
            parents[chain_child] = len(names) - 1
            offsets[chain_child] = 0.5 * offsets[chain_child]
    leaves = [j for j in range(skeleton.num_joints) if j not in parents]
    for leaf in rng.choice(leaves, size=min(5, len(leaves)), replace=False):
        names.append(f"{names[leaf]}_Nub")
        parents.append(int(leaf))
        offsets.append(0.2 * offsets[leaf])
    augmented = from_rows(names, parents, offsets)
    found = found_names(find_humanoid(augmented, r.up), augmented)
    assert {role: found.get(role) for role in r.expected} == r.expected
    # a limb that ended without a hand or foot may take the added end joint as one
    assert all(found[role].endswith("_Nub") for role in set(found) - set(r.expected))


@pytest.mark.parametrize("which", RIG_NAMES)
def test_mirroring_the_rig_and_its_names_mirrors_the_answer(which: str) -> None:
    """Symmetric by construction: left and right go through one code path, so a mirror image swaps them exactly.

    The mirror image reflects every joint across the body's sagittal plane and swaps the side
    words of the names (``LeftArm`` ↔ ``RightArm``): the joint that was the left upper arm is now
    the right one.
    """
    r = rig(which)
    original = find_humanoid(r.skeleton, r.up).roles
    _, left, _ = body_axes(r)
    mirror = np.eye(3) - 2 * np.outer(left, left)
    other_side = {r.expected[role]: r.expected[role[:-1] + ("r" if role[-1] == "l" else "l")]
                  for role in r.expected if role.endswith(("_l", "_r"))}  # fmt: skip
    names = [other_side.get(n, n) for n in r.skeleton.names]
    mirrored = Skeleton(names, r.skeleton.parents, r.skeleton.rest_translations @ mirror.T)
    roles = find_humanoid(mirrored, r.up).roles
    for role, joint in original.items():
        swapped = role[:-1] + ("r" if role[-1] == "l" else "l") if role.endswith(("_l", "_r")) else role
        assert roles[swapped] == joint, role


@pytest.mark.parametrize("which", ["cmu", "mixamo", "unreal", "rigify", "vrm", "biovision", "mocapdata"])
def test_without_names_the_hierarchy_and_rest_pose_find_the_same_parts(which: str) -> None:
    """Names replaced by meaningless ones: geometry decides (one joint per bone, no twist joints in the chains).

    Where the neck chain ends in an end joint (``Head_End``, ``HeadTop_End``) only its name shows
    it is no head, so the head is checked on the rigs without one.
    """
    r = rig(which)
    anonymous = rebuilt(r.skeleton, names=[f"n{k:03d}" for k in range(r.skeleton.num_joints)])
    body = find_humanoid(anonymous, r.up)
    got = {role: r.skeleton.names[j] for role, j in body.roles.items()}
    ends_in_end_joint = r.skeleton.names[-1] != r.expected["head"] and any(
        n.endswith(("_End", "Top_End")) and "Head" in n for n in r.skeleton.names
    )
    expected = {k: v for k, v in r.expected.items() if not (ends_in_end_joint and k == "head")}
    assert {k: got.get(k) for k in expected} == expected
    assert "from geometry" in " ".join(body.notes)


def test_mirrored_geometry_without_names_swaps_the_sides() -> None:
    r = rig("mixamo")
    anonymous = rebuilt(r.skeleton, names=[f"n{k:03d}" for k in range(r.skeleton.num_joints)])
    flipped = Skeleton(anonymous.names, anonymous.parents, anonymous.rest_translations * [-1.0, 1.0, 1.0])
    left = find_humanoid(anonymous).roles
    right = find_humanoid(flipped).roles
    for part in ("hand", "foot", "upper_arm", "toes"):
        assert right[f"{part}_l"] == left[f"{part}_r"]


def test_t_pose_arms_at_slightly_different_heights_are_still_mirror_arms() -> None:
    """CMU 16_01's arms: horizontal, their tips 0.27 units apart in height against a 1.06-unit drop.

    The tips must end at about one height *relative to how far the limbs reach* (12 units
    sideways), not to how far they drop: a T-pose arm hardly drops at all.
    """
    r = rig("cmu")
    translations = np.array(r.skeleton.rest_translations)
    translations[r.skeleton.index("RightArm"), 1] += 0.3  # the right arm 0.3 units higher, as in 16_01
    skeleton = Skeleton(r.skeleton.names, r.skeleton.parents, translations)
    assert found_names(find_humanoid(skeleton), skeleton) == r.expected


def test_the_toes_are_where_the_foot_meets_the_ground() -> None:
    """Without names, Daz's foot chain ``lFoot → lMetatarsals → lToe``: the toes are the lowest joint, ``lToe``."""
    r = rig("genesis")
    bare = without(r.skeleton, [n for n in r.skeleton.names if "Twist" in n])  # one joint per bone
    anonymous = rebuilt(bare, names=[f"n{k:03d}" for k in range(bare.num_joints)])
    body = find_humanoid(anonymous)
    assert bare.names[body.roles["toes_l"]] == "lToe"
    assert bare.names[body.roles["foot_r"]] == "rFoot"
    assert body.reasons["toes_l"] == "geometry: the lowest joint after the foot, where the foot meets the ground"


def test_an_ik_rig_with_feet_under_the_root() -> None:
    """RobotExpressive: ``Bone``'s ``Foot.L``/``Foot.R`` lie beside it (no legs); ``Body`` has the legs.

    The legs end at ``LowerLeg.L_end`` (the ankle, the foot role); the ``Foot.L`` bone outside the
    leg is its detached foot, which a retarget places there.
    """
    r = rig("robot_expressive")
    body = find_humanoid(r.skeleton)
    assert found_names(body, r.skeleton) == r.expected
    assert {role: r.skeleton.names[j] for role, j in body.detached.items()} == {"foot_l": "Foot.L", "foot_r": "Foot.R"}
    assert body.anchor("foot_l") == r.skeleton.index("LowerLeg.L_end")
    assert (
        "note: detached foot_l: 'Foot.L' is named a foot and stands at the leg's end outside it (under 'Bone'): "
        "it follows 'LowerLeg.L_end'" in body.report().splitlines()
    )
    assert [r.skeleton.names[j] for j in body.leg("r").joints] == ["UpperLeg.R", "LowerLeg.R", "LowerLeg.R_end"]


def test_feet_lying_beside_the_root_are_no_legs() -> None:
    """IK feet with toes under the root are a mirror pair that does not stand: the search goes on to ``Body``.

    Without ``Body``'s legs the pair is all there is, and the error says why it is no pair of legs.
    """
    r = rig("robot_expressive")
    names = [*r.skeleton.names, "Toes.L", "Toes.R"]
    parents = [*(int(p) for p in r.skeleton.parents), r.skeleton.index("Foot.L"), r.skeleton.index("Foot.R")]
    offsets = [*r.skeleton.rest_translations, np.array([0.0, -0.45, 0.3]), np.array([0.0, -0.45, 0.3])]
    toed = from_rows(names, parents, offsets)  # toes just below the root
    assert found_names(find_humanoid(toed), toed) == r.expected
    legless = without(toed, [n for n in toed.names if n.startswith(("UpperLeg", "LowerLeg"))])
    with pytest.raises(SkeletonMismatchError, match=r"^not a humanoid skeleton \(32 joints\): the leg ending at "
                       r"'Toes.L' is 84° from down: not a standing leg$"):  # fmt: skip
        find_humanoid(legless)


CMU_TAKES = ["02_01", "02_02", "02_03", "07_01", "07_06", "08_01", "09_01", "09_12", "131_02", "16_01", "16_11",
             "16_15", "16_31", "35_01"]  # fmt: skip
"""Every take of ``../shared/assets/cmu_locomotion_bvh`` (three conversions; 16_01's T-pose arms differ in height)."""


@pytest.mark.assets
@pytest.mark.parametrize("take", CMU_TAKES)
def test_every_cmu_take_is_a_humanoid(take: str, shared_assets: Path) -> None:
    skeleton = load_bvh(shared_assets / "cmu_locomotion_bvh" / f"{take}.bvh", scale=1.0).skeleton
    names = found_names(find_humanoid(skeleton), skeleton)
    assert names["hips"] in ("Hips", "hip")
    assert names["foot_l"] in ("LeftFoot", "lFoot", "LeftAnkle")
    assert names["upper_arm_r"] in ("RightArm", "rShldr", "RightShoulder")


# --- the API the programs use -------------------------------------------------------------------------


def test_limbs_and_head_chain_by_role() -> None:
    mannequin = build_skeleton()
    body = find_humanoid(mannequin)
    leg = body.leg("l")
    assert [mannequin.names[j] for j in leg.joints] == ["upper_leg_l", "lower_leg_l", "foot_l", "toes_l"]
    assert leg.parts["foot"] == mannequin.index("foot_l")
    assert leg.side == "l"
    assert leg.kind == "leg"
    arm = body.arm("r")
    assert [mannequin.names[j] for j in arm.joints] == ["clavicle_r", "upper_arm_r", "lower_arm_r", "hand_r"]
    assert [mannequin.names[j] for j in body.head_chain()] == ["neck", "head"]
    assert [mannequin.names[j] for j in body.spine] == ["spine", "chest"]
    with pytest.raises(InvalidInputError, match="side must be 'l' or 'r', got 'left'"):
        body.leg("left")


def test_two_joint_limbs_are_limbs() -> None:
    r = rig("stubby")
    body = find_humanoid(r.skeleton)
    assert [r.skeleton.names[j] for j in body.leg("r").joints] == ["Thigh_R", "Shin_R"]
    assert [r.skeleton.names[j] for j in body.arm("l").joints] == ["UpperArm_L", "Forearm_L"]
    assert "head" in body.roles
    assert "neck" not in body.roles
    assert body.head_chain() == (r.skeleton.index("Head"),)


def test_report_says_what_was_found_and_why() -> None:
    report = find_humanoid(rig("cmu").skeleton).report().splitlines()
    assert report[0].split()[:2] == ["hips", "Hips"]
    line = next(line for line in report if line.startswith("clavicle_l"))
    assert "'LeftShoulder'" in line
    assert "'shoulder' means clavicle here: an upper-arm joint below it" in line
    assert report[-1] == "note: left and right arms: from the side words of their names"


def test_roles_are_listed_in_one_order() -> None:
    assert ROLES[:4] == ("hips", "chest", "neck", "head")
    assert SIDES == ("l", "r")
    assert len(ROLES) == 20


# --- real assets ------------------------------------------------------------------------------------


@pytest.mark.assets
def test_pirouette_daz_names(shared_assets: Path) -> None:
    skeleton = load_bvh(shared_assets / "pirouette_bvh" / "pirouette.bvh").skeleton
    names = found_names(find_humanoid(skeleton), skeleton)
    assert names["clavicle_l"] == "lCollar"
    assert names["upper_arm_l"] == "lShldr"
    assert names["hand_r"] == "rHand"
    assert (names["upper_leg_l"], names["lower_leg_l"], names["foot_l"]) == ("lThigh", "lShin", "lFoot")
    assert names["head"] == "head"
    assert names["neck"] == "neck"


@pytest.mark.assets
def test_cesium_man_without_names(shared_assets: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        man = load_character(shared_assets / "khronos" / "cesium_man.gltf", textures=False)
    up = np.linalg.inv(man.root_transform[:3, :3]) @ [0.0, 1.0, 0.0]
    names = found_names(find_humanoid(man.skeleton, up), man.skeleton)
    assert (names["upper_arm_l"], names["lower_arm_l"], names["hand_l"]) == ("node16", "node17", "node18")
    assert (names["upper_leg_r"], names["toes_r"]) == ("node3", "node6")


# --- not humanoids --------------------------------------------------------------------------------------


def test_a_chain_is_not_a_humanoid() -> None:
    chain = Skeleton(["a", "b", "c"], [-1, 0, 1], [[0, 0, 0], [0, 1, 0], [0, 1, 0]])
    with pytest.raises(SkeletonMismatchError, match=r"^not a humanoid skeleton \(3 joints\): no joint where a spine"):
        find_humanoid(chain)


def test_legs_without_a_spine_are_not_a_humanoid() -> None:
    tripod = Skeleton(
        ["root", "a", "a2", "b", "b2", "c", "c2"],
        [-1, 0, 1, 0, 3, 0, 5],
        [[0, 1, 0], [0.1, -0.5, 0], [0, -0.5, 0], [-0.1, -0.5, 0], [0, -0.5, 0], [0, -0.5, 0.1], [0, -0.5, 0]],
    )
    with pytest.raises(SkeletonMismatchError, match=r"'root' has 3 limbs .* but no two of them are mirror images"):
        find_humanoid(tripod)


def test_arms_without_a_neck_branch_are_no_chest() -> None:
    skeleton = rig("stubby").skeleton
    headless = rebuilt_subset(skeleton, [j for j, n in enumerate(skeleton.names) if n != "Head"])
    with pytest.raises(SkeletonMismatchError, match="no chest: no joint along the spine from 'Chest' branches"):
        find_humanoid(headless)


def without(skeleton: Skeleton, names: list[str]) -> Skeleton:
    """``skeleton`` without the joints ``names``: their children hang from their parents, offsets added."""
    parents = [int(p) for p in skeleton.parents]
    offsets = np.array(skeleton.rest_translations)
    gone = {skeleton.index(n) for n in names}
    for j in range(skeleton.num_joints):  # parents first: a chain of removed joints folds into one offset
        while parents[j] in gone:
            offsets[j] += offsets[parents[j]]
            parents[j] = parents[parents[j]]
    keep = [j for j in range(skeleton.num_joints) if j not in gone]
    new = {old: k for k, old in enumerate(keep)}
    return Skeleton(
        [skeleton.names[j] for j in keep], [new[parents[j]] if parents[j] >= 0 else -1 for j in keep], offsets[keep]
    )


def rebuilt_subset(skeleton: Skeleton, keep: list[int]) -> Skeleton:
    new = {old: k for k, old in enumerate(keep)}
    return Skeleton(
        [skeleton.names[j] for j in keep],
        [new[int(skeleton.parents[j])] if skeleton.parents[j] >= 0 else -1 for j in keep],
        skeleton.rest_translations[keep],
    )


def test_not_upright_when_up_is_wrong() -> None:
    with pytest.raises(SkeletonMismatchError, match=r"legs 'upper_leg_l' and 'upper_leg_r' do not reach below"):
        find_humanoid(build_skeleton(), up=(0, 0, 1))


def test_a_lying_spine_is_not_upright() -> None:
    r = rig("vrm")
    lying = Skeleton(r.skeleton.names, r.skeleton.parents, r.skeleton.rest_translations)
    positions = rest_positions(lying)
    assert positions[lying.index("head")][1] > 1.0
    turn = Rotation.from_euler("x", 60, degrees=True)  # legs still reach down along +Y, the spine leans 60°
    spine = lying.subtree("spine")
    translations = np.array(lying.rest_translations)
    translations[spine[0]] = turn.apply(translations[spine[0]])
    for j in spine[1:]:
        translations[j] = turn.apply(translations[j])
    with pytest.raises(SkeletonMismatchError, match=r"the spine \('hips' → 'upperChest'\) is 60° from up"):
        find_humanoid(Skeleton(lying.names, lying.parents, translations))


@pytest.mark.assets
def test_the_fox_is_refused_with_a_reason(shared_assets: Path) -> None:
    fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", textures=False).skeleton
    with pytest.raises(SkeletonMismatchError, match=r"spine \('b_Hip_01' → 'b_Spine02_03'\) is 68° from up"):
        find_humanoid(fox)


def test_unnamed_rig_without_toes_cannot_tell_left_from_right() -> None:
    mannequin = build_skeleton()
    keep = [j for j, n in enumerate(mannequin.names) if not n.startswith("toes")]
    bare = rebuilt_subset(mannequin, keep)
    bare = rebuilt(bare, names=[f"j{k}" for k in range(bare.num_joints)])
    with pytest.raises(SkeletonMismatchError, match=r"cannot tell left from right in this 23-joint skeleton: the legs"):
        find_humanoid(bare)


@pytest.mark.parametrize("up", [[0, 0, 0], [np.nan, 1, 0], [[0, 1, 0]]])
def test_bad_up(up) -> None:
    with pytest.raises(InvalidInputError, match="up"):
        find_humanoid(build_skeleton(), up)


def scheme_pairs() -> list[tuple[str, str]]:
    """Every (structure, naming scheme) pair whose scheme names every part the structure has."""
    rigs = {r.name: r for r in all_rigs() if "clavicle_l" in r.expected}
    return [(a, b) for a in rigs for b in rigs if set(rigs[a].expected) <= set(rigs[b].expected)]


@pytest.mark.parametrize(("structure", "names"), scheme_pairs())
def test_one_schemes_names_on_another_schemes_skeleton(structure: str, names: str) -> None:
    """Renamed joints: the body parts of one rig named as another scheme names them are found by those names.

    Every pair of schemes (a random draw of them missed the two that failed). Joints that are no
    body part get meaningless names (end joints keep their ``_End``/``_end``), so the names alone
    must carry the answer; the joints are also listed in a shuffled depth-first order.
    """
    shape, scheme = rig(structure), rig(names)
    index = {shape.skeleton.index(joint): role for role, joint in shape.expected.items()}
    renamed = [
        scheme.expected[index[j]] if j in index else f"x{j:03d}" + ("_End" if name.lower().endswith("_end") else "")
        for j, name in enumerate(shape.skeleton.names)
    ]
    order = shuffled_order(shape.skeleton, np.random.default_rng(len(structure) * 31 + len(names)))
    skeleton = rebuilt(shape.skeleton, order, renamed)
    assert found_names(find_humanoid(skeleton, shape.up), skeleton) == {r: scheme.expected[r] for r in shape.expected}
