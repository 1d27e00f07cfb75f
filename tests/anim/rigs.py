"""Humanoid skeletons in the common naming schemes, written down from public rigs and documentation.

Each rig lists its joints as ``(name, parent, offset from the parent)`` in the scheme's own units
and axes, and the joint each body part must map to (the ground truth the tests check
:func:`engine.anim.humanoid.find_humanoid` against). Where the offsets come from:

- **CMU, cgspeed BVH conversion** (``Hips``, ``LHipJoint`` → ``LeftUpLeg`` → ``LeftLeg`` →
  ``LeftFoot`` → ``LeftToeBase``, ``LowerBack`` → ``Spine`` → ``Spine1`` → ``LeftShoulder``
  (clavicle) → ``LeftArm`` → ``LeftForeArm`` → ``LeftHand`` → ``LeftFingerBase``/``LThumb``,
  ``Neck`` → ``Neck1`` → ``Head``): hierarchy and offsets, in CMU units (inches / 0.45), copied
  from the cgspeed file quoted in ``vrm-c/UniVRM:Assets/VRM/UniHumanoid/Editor/Tests/BvhLoaderTests.cs``
  (``bvh_cgspeed``; the conversions are at sites.google.com/a/cgspeed.com/cgspeed/motion-capture).
  Left and right offsets differ slightly, as in the file.
- **Biovision** (``LeftCollar`` → ``LeftShoulder`` (upper arm) → ``LeftElbow`` → ``LeftWrist``,
  ``LeftHip`` → ``LeftKnee`` → ``LeftAnkle``): ``louise.bvh`` of ``wspr/bvh-matlab``, centimetres,
  as quoted in the same UniVRM test file (``bvh_louise``).
- **mocapdata.com** (Biovision names, ``Chest``/``Chest2``, arms hanging down): inches, from the
  same UniVRM file (``mocapdata_com_hierarchy``).
- **Mixamo** (``mixamorig:Hips``, ``Spine``/``Spine1``/``Spine2``, ``LeftShoulder`` (clavicle) →
  ``LeftArm`` → ``LeftForeArm`` → ``LeftHand`` → ``LeftHandIndex1..4``…, ``LeftUpLeg`` →
  ``LeftLeg`` → ``LeftFoot`` → ``LeftToeBase`` → ``LeftToe_End``, ``HeadTop_End``): joint list of
  Mixamo rigs as recorded in ``home-gamejam/stick-game:docs/rigs.md``; offsets (centimetres) from
  the Mixamo-named ``bvh_mocap`` hierarchy of the UniVRM test file, its ``Spine1`` split in two.
- **Unreal Engine 4 mannequin** (``root`` → ``pelvis`` → ``spine_01..03`` → ``clavicle_l`` →
  ``upperarm_l`` → ``lowerarm_l`` → ``hand_l``, twist bones ``upperarm_twist_01_l`` beside the
  chain, ``thigh_l`` → ``calf_l`` → ``foot_l`` → ``ball_l``, ``ik_foot_root``/``ik_hand_root``
  branches under ``root``): bone names of Epic's SK_Mannequin skeleton; Z up, centimetres,
  offsets rounded to typical mannequin proportions.
- **Blender Rigify** metarig and deform bones (``spine`` … ``spine.006``, ``shoulder.L`` →
  ``upper_arm.L`` → ``forearm.L`` → ``hand.L``, ``thigh.L`` → ``shin.L`` → ``foot.L`` →
  ``toe.L``, leaf ``pelvis.L``/``breast.L``; the ``DEF-`` chain with ``.001`` segments): bone list
  of ``home-gamejam/stick-game:docs/rigs.md`` and Rigify's human metarig; Z up, metres.
- **VRM humanoid** bone names (``hips``, ``spine``, ``chest``, ``upperChest``, ``neck``,
  ``head``, ``leftShoulder`` → ``leftUpperArm`` → ``leftLowerArm`` → ``leftHand``,
  ``leftUpperLeg`` → ``leftLowerLeg`` → ``leftFoot`` → ``leftToes``) from the VRM specification
  (``vrm-c/vrm-specification``, humanoid bones), and VRoid Studio's node names for them
  (``J_Bip_C_Hips``, ``J_Bip_L_UpperArm``…); Y up, facing +Z, metres.
- **Daz Genesis** (``hip`` → ``pelvis`` → ``lThighBend`` → ``lThighTwist`` → ``lShin`` →
  ``lFoot`` → ``lMetatarsals`` → ``lToe``; ``abdomenLower`` … ``chestUpper`` → ``lCollar`` →
  ``lShldrBend`` → ``lShldrTwist`` → ``lForearmBend`` → ``lForearmTwist`` → ``lHand``; the legs hang
  from ``pelvis``, the spine from ``hip``): Daz Studio's Genesis 8 figure; centimetres.
- **three.js's RobotExpressive** (Tomás Laulhé's Quaternius-style IK rig, CC0): ``Bone`` (the
  root, on the ground) → ``Body`` (the pelvis the clips move) → ``Hips`` → ``Abdomen`` →
  ``Torso`` → ``Neck`` → ``Head`` and ``Shoulder.L`` → ``UpperArm.L`` → ``LowerArm.L`` →
  ``Palm1.L``/``Palm2.L``; the legs ``UpperLeg.L`` → ``LowerLeg.L`` → ``LowerLeg.L_end`` hang from
  ``Body`` beside ``Hips``, and the **feet hang under the root** (``Bone`` → ``Foot.L`` →
  ``Foot.L_end``) with the knees' pole targets (``Bone`` → ``PoleTarget.L``): the structure and
  names as three.js-based projects list them (``captureMotionRig`` of a RobotExpressive motion
  compiler names ``RobotArmature``, ``Bone``, ``Body``, ``Neck``, ``Head``, ``UpperArmL``,
  ``LowerArmL``, ``Palm2L``, ``UpperLegL``, ``LowerLegL``, ``LowerLegL_end``, ``FootL``, its
  IK handles use ``LowerLegL_end`` as the foot's effector and ``FootL`` as the driven bone; a
  Quaternius rig's notes measure "``Root`` → ``Foot.L`` → ``Foot.L_end``: the foot is its own
  top-level bone" and "``Hips`` is a sibling of ``UpperLeg``"; three.js drops the dots). Offsets
  in the file's units: a robot about 4.5 units tall, Y up, facing +Z.
- **Blender ``_L``/``_R`` game rig with two-joint limbs** (``Thigh_L`` → ``Shin_L``, no foot;
  ``UpperArm_L`` → ``Forearm_L``, no hand): the low-poly style the issue reports refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton

Joint = tuple[str, str | None, tuple[float, float, float]]


@dataclass(frozen=True)
class Rig:
    """A scheme's skeleton, its up axis and the joint name expected for each role."""

    name: str
    skeleton: Skeleton
    up: tuple[float, float, float]
    expected: dict[str, str]
    unit: float  # metres per unit of the offsets


def build(joints: Sequence[Joint]) -> Skeleton:
    """A skeleton from ``(name, parent name, offset)`` rows, parents first, identity rest rotations."""
    names = [j[0] for j in joints]
    parents = [-1 if p is None else names.index(p) for _, p, _ in joints]
    return Skeleton(names, parents, np.array([j[2] for j in joints], dtype=np.float64))


def mirrored(joints: Sequence[Joint], rename: Callable[[str], str], axis: int = 0) -> list[Joint]:
    """The right side of ``joints`` (left-side rows): names through ``rename``, ``axis`` negated."""
    out = []
    for name, parent, offset in joints:
        flipped = list(offset)
        flipped[axis] = -flipped[axis]
        out.append((rename(name), rename(parent) if parent else parent, (flipped[0], flipped[1], flipped[2])))
    return out


def expected_roles(left: dict[str, str], rename: Callable[[str], str], centre: dict[str, str]) -> dict[str, str]:
    roles = dict(centre)
    for part, name in left.items():
        roles[f"{part}_l"] = name
        roles[f"{part}_r"] = rename(name)
    return roles


# --- CMU cgspeed (real offsets, CMU units) ----------------------------------------------------------

CMU_JOINTS: list[Joint] = [
    ("Hips", None, (0, 0, 0)),
    ("LHipJoint", "Hips", (0, 0, 0)),
    ("LeftUpLeg", "LHipJoint", (1.64549, -1.70879, 0.84566)),
    ("LeftLeg", "LeftUpLeg", (2.24963, -6.18082, 0)),
    ("LeftFoot", "LeftLeg", (2.71775, -7.46697, 0)),
    ("LeftToeBase", "LeftFoot", (0.18768, -0.51564, 2.24737)),
    ("LeftToeBase_End", "LeftToeBase", (0, 0, 1.15935)),
    ("RHipJoint", "Hips", (0, 0, 0)),
    ("RightUpLeg", "RHipJoint", (-1.58830, -1.70879, 0.84566)),
    ("RightLeg", "RightUpLeg", (-2.25006, -6.18201, 0)),
    ("RightFoot", "RightLeg", (-2.72829, -7.49593, 0)),
    ("RightToeBase", "RightFoot", (-0.21541, -0.59185, 2.10643)),
    ("RightToeBase_End", "RightToeBase", (0, 0, 1.09838)),
    ("LowerBack", "Hips", (0, 0, 0)),
    ("Spine", "LowerBack", (0.03142, 2.10496, -0.11038)),
    ("Spine1", "Spine", (-0.01863, 2.10897, -0.06956)),
    ("Neck", "Spine1", (0, 0, 0)),
    ("Neck1", "Neck", (-0.02267, 1.73238, 0.00451)),
    ("Head", "Neck1", (-0.05808, 1.54724, -0.61749)),
    ("Head_End", "Head", (-0.01396, 1.71468, -0.21082)),
    ("LeftShoulder", "Spine1", (0, 0, 0)),
    ("LeftArm", "LeftShoulder", (3.44898, 0.50298, 0.21920)),
    ("LeftForeArm", "LeftArm", (5.41917, 0, 0)),
    ("LeftHand", "LeftForeArm", (2.44373, 0, 0)),
    ("LeftFingerBase", "LeftHand", (0, 0, 0)),
    ("LeftHandIndex1", "LeftFingerBase", (0.72750, 0, 0)),
    ("LeftHandIndex1_End", "LeftHandIndex1", (0.58653, 0, 0)),
    ("LThumb", "LeftHand", (0, 0, 0)),
    ("LThumb_End", "LThumb", (0.59549, 0, 0.59549)),
    ("RightShoulder", "Spine1", (0, 0, 0)),
    ("RightArm", "RightShoulder", (-3.23015, 0.55830, 0.31051)),
    ("RightForeArm", "RightArm", (-5.58976, -0.00010, 0.00014)),
    ("RightHand", "RightForeArm", (-2.48060, 0, 0)),
    ("RightFingerBase", "RightHand", (0, 0, 0)),
    ("RightHandIndex1", "RightFingerBase", (-0.81601, 0, 0)),
    ("RightHandIndex1_End", "RightHandIndex1", (-0.65789, 0, 0)),
    ("RThumb", "RightHand", (0, 0, 0)),
    ("RThumb_End", "RThumb", (-0.66793, 0, 0.66793)),
]
CMU_EXPECTED = {
    "hips": "Hips",
    "chest": "Spine1",
    "neck": "Neck",
    "head": "Head",
    **{f"{p}_{s}": f"{side}{n}" for s, side in (("l", "Left"), ("r", "Right")) for p, n in [
        ("clavicle", "Shoulder"), ("upper_arm", "Arm"), ("lower_arm", "ForeArm"), ("hand", "Hand"),
        ("upper_leg", "UpLeg"), ("lower_leg", "Leg"), ("foot", "Foot"), ("toes", "ToeBase"),
    ]},
}  # fmt: skip
CMU_UNIT = 0.0254 / 0.45


# --- Biovision louise.bvh (cm) and mocapdata.com (inches, arms down) -------------------------------


def _biovision_side(name: str) -> str:
    return name.replace("Left", "Right")


LOUISE_LEFT: list[Joint] = [
    ("LeftCollar", "Chest", (0, 23.115997, 0)),
    ("LeftShoulder", "LeftCollar", (18.666668, 0, 0)),
    ("LeftElbow", "LeftShoulder", (25.298601, 0, 0)),
    ("LeftWrist", "LeftElbow", (27.056377, 0, 0)),
    ("LeftWrist_End", "LeftWrist", (0, -14.000002, 0)),
    ("LeftHip", "Hips", (11.2, 0, 0)),
    ("LeftKnee", "LeftHip", (0, -43.871983, 0)),
    ("LeftAnkle", "LeftKnee", (0, -44.488350, 0)),
    ("LeftAnkle_End", "LeftAnkle", (0, -4.666667, 15.866669)),
]
LOUISE_JOINTS: list[Joint] = [
    ("Hips", None, (0, 0, 0)),
    ("Chest", "Hips", (0, 30.833075, 0)),
    ("Neck", "Chest", (0, 23.115997, 0)),
    ("Head", "Neck", (0, 10.266666, 0)),
    ("Head_End", "Head", (0, 15.866669, 0)),
    *LOUISE_LEFT,
    *mirrored(LOUISE_LEFT, _biovision_side),
]
BIOVISION_LEFT_ROLES = {
    "clavicle": "LeftCollar",
    "upper_arm": "LeftShoulder",
    "lower_arm": "LeftElbow",
    "hand": "LeftWrist",
    "upper_leg": "LeftHip",
    "lower_leg": "LeftKnee",
    "foot": "LeftAnkle",
    "toes": "LeftAnkle_End",
}

MOCAPDATA_LEFT: list[Joint] = [
    ("LeftHip", "Hips", (3.43, 0, 0)),
    ("LeftKnee", "LeftHip", (0, -18.47, 0)),
    ("LeftAnkle", "LeftKnee", (0, -17.95, 0)),
    ("LeftAnkle_End", "LeftAnkle", (0, -3.12, 0)),
    ("LeftCollar", "Chest2", (1.06, 4.19, 1.76)),
    ("LeftShoulder", "LeftCollar", (5.81, 0, 0)),
    ("LeftElbow", "LeftShoulder", (0, -12.08, 0)),
    ("LeftWrist", "LeftElbow", (0, -9.82, 0)),
    ("LeftWrist_End", "LeftWrist", (0, -7.37, 0)),
]
MOCAPDATA_JOINTS: list[Joint] = [
    ("Hips", None, (17.1116, 39.7036, -3.684)),
    ("Chest", "Hips", (0, 4.57, 0)),
    ("Chest2", "Chest", (0, 6.57, 0)),
    ("Neck", "Chest2", (0, 4.05, 0)),
    ("Head", "Neck", (0, 5.19, 0)),
    ("Head_End", "Head", (0, 4.14001, 0)),
    *MOCAPDATA_LEFT,
    *mirrored(MOCAPDATA_LEFT, _biovision_side),
]


# --- Mixamo (cm) -------------------------------------------------------------------------------------


def _mixamo_side(name: str) -> str:
    return name.replace("Left", "Right")


MIXAMO_LEFT: list[Joint] = [
    ("mixamorig:LeftShoulder", "mixamorig:Spine2", (3.663486, 6.37, -0.490481)),
    ("mixamorig:LeftArm", "mixamorig:LeftShoulder", (14.246625, 0, 0)),
    ("mixamorig:LeftForeArm", "mixamorig:LeftArm", (25.567986, 0, 0)),
    ("mixamorig:LeftHand", "mixamorig:LeftForeArm", (29.965693, 0, 0)),
    *[
        row
        for finger, spread in (("Thumb", 3.0), ("Index", 1.5), ("Middle", 0.0), ("Pinky", -2.0))
        for row in [
            (f"mixamorig:LeftHand{finger}1", "mixamorig:LeftHand", (3.0 + abs(spread), 0.0, spread)),
            (f"mixamorig:LeftHand{finger}2", f"mixamorig:LeftHand{finger}1", (3.5, 0, 0)),
            (f"mixamorig:LeftHand{finger}3", f"mixamorig:LeftHand{finger}2", (2.5, 0, 0)),
            (f"mixamorig:LeftHand{finger}4", f"mixamorig:LeftHand{finger}3", (2.0, 0, 0)),
        ]
    ],
    ("mixamorig:LeftUpLeg", "mixamorig:Hips", (9.157949, 0, 0)),
    ("mixamorig:LeftLeg", "mixamorig:LeftUpLeg", (0, -40.189121, 0)),
    ("mixamorig:LeftFoot", "mixamorig:LeftLeg", (0, -39.816978, 0)),
    ("mixamorig:LeftToeBase", "mixamorig:LeftFoot", (0, -5.952667, 13.736924)),
    ("mixamorig:LeftToe_End", "mixamorig:LeftToeBase", (0, 0, 3.663180)),
]
MIXAMO_JOINTS: list[Joint] = [
    ("mixamorig:Hips", None, (0, 98.0, 0)),
    ("mixamorig:Spine", "mixamorig:Hips", (0, 7.509519, 0)),
    ("mixamorig:Spine1", "mixamorig:Spine", (0, 9.2, 0)),
    ("mixamorig:Spine2", "mixamorig:Spine1", (0, 9.193364, 0)),
    ("mixamorig:Neck", "mixamorig:Spine2", (0, 20.224955, 0)),
    ("mixamorig:Head", "mixamorig:Neck", (0, 14.194822, 1.831590)),
    ("mixamorig:HeadTop_End", "mixamorig:Head", (0, 18.315899, 0)),
    *MIXAMO_LEFT,
    *mirrored(MIXAMO_LEFT, _mixamo_side),
]
MIXAMO_LEFT_ROLES = {
    "clavicle": "mixamorig:LeftShoulder",
    "upper_arm": "mixamorig:LeftArm",
    "lower_arm": "mixamorig:LeftForeArm",
    "hand": "mixamorig:LeftHand",
    "upper_leg": "mixamorig:LeftUpLeg",
    "lower_leg": "mixamorig:LeftLeg",
    "foot": "mixamorig:LeftFoot",
    "toes": "mixamorig:LeftToeBase",
}


# --- Unreal Engine 4 mannequin (cm, Z up, facing +Y: the character's left is -X) -------------------


def _unreal_side(name: str) -> str:
    return re.sub(r"_l$", "_r", name)


UNREAL_LEFT: list[Joint] = [
    ("clavicle_l", "spine_03", (-4.0, 2.0, 16.0)),
    ("upperarm_l", "clavicle_l", (-15.0, 0.0, -2.0)),
    ("upperarm_twist_01_l", "upperarm_l", (-15.0, 0.0, 0.0)),
    ("lowerarm_l", "upperarm_l", (-30.0, 0.0, 0.0)),
    ("lowerarm_twist_01_l", "lowerarm_l", (-13.0, 0.0, 0.0)),
    ("hand_l", "lowerarm_l", (-26.0, 0.0, 0.0)),
    ("index_01_l", "hand_l", (-11.0, 2.0, 0.0)),
    ("index_02_l", "index_01_l", (-4.0, 0.0, 0.0)),
    ("index_03_l", "index_02_l", (-3.0, 0.0, 0.0)),
    ("thumb_01_l", "hand_l", (-4.0, 3.0, -1.0)),
    ("thumb_02_l", "thumb_01_l", (-4.0, 1.0, 0.0)),
    ("thumb_03_l", "thumb_02_l", (-3.0, 0.0, 0.0)),
    ("thigh_l", "pelvis", (-9.0, 0.0, -2.0)),
    ("thigh_twist_01_l", "thigh_l", (0.0, 0.0, -22.0)),
    ("calf_l", "thigh_l", (0.0, 0.0, -44.0)),
    ("calf_twist_01_l", "calf_l", (0.0, 0.0, -20.0)),
    ("foot_l", "calf_l", (0.0, 0.0, -41.0)),
    ("ball_l", "foot_l", (0.0, 12.0, -6.0)),
]
UNREAL_JOINTS: list[Joint] = [
    ("root", None, (0.0, 0.0, 0.0)),
    ("pelvis", "root", (0.0, 0.0, 97.0)),
    ("spine_01", "pelvis", (0.0, 0.0, 10.0)),
    ("spine_02", "spine_01", (0.0, 0.0, 15.0)),
    ("spine_03", "spine_02", (0.0, 0.0, 15.0)),
    ("neck_01", "spine_03", (0.0, 1.0, 22.0)),
    ("head", "neck_01", (0.0, 1.0, 9.5)),
    *UNREAL_LEFT,
    *mirrored(UNREAL_LEFT, _unreal_side),
    ("ik_foot_root", "root", (0.0, 0.0, 0.0)),
    ("ik_foot_l", "ik_foot_root", (-13.0, 0.0, 8.0)),
    ("ik_foot_r", "ik_foot_root", (13.0, 0.0, 8.0)),
    ("ik_hand_root", "root", (0.0, 0.0, 0.0)),
    ("ik_hand_gun", "ik_hand_root", (-50.0, 0.0, 120.0)),
    ("ik_hand_l", "ik_hand_gun", (0.0, 5.0, 0.0)),
    ("ik_hand_r", "ik_hand_gun", (100.0, 5.0, 0.0)),
]
UNREAL_LEFT_ROLES = {
    "clavicle": "clavicle_l",
    "upper_arm": "upperarm_l",
    "lower_arm": "lowerarm_l",
    "hand": "hand_l",
    "upper_leg": "thigh_l",
    "lower_leg": "calf_l",
    "foot": "foot_l",
    "toes": "ball_l",
}


# --- Blender Rigify: metarig and DEF bones (metres, Z up, facing -Y: left is +X) -------------------


def _dot_side(name: str) -> str:
    return name.replace(".L", ".R")


RIGIFY_LEFT: list[Joint] = [
    ("pelvis.L", "spine", (0.06, -0.03, 0.02)),
    ("thigh.L", "spine", (0.09, 0.0, -0.04)),
    ("shin.L", "thigh.L", (0.0, -0.01, -0.43)),
    ("foot.L", "shin.L", (0.0, 0.02, -0.42)),
    ("toe.L", "foot.L", (0.0, -0.13, -0.06)),
    ("heel.02.L", "foot.L", (0.03, 0.04, -0.07)),
    ("breast.L", "spine.003", (0.1, -0.1, -0.05)),
    ("shoulder.L", "spine.003", (0.02, -0.01, 0.11)),
    ("upper_arm.L", "shoulder.L", (0.16, 0.02, -0.02)),
    ("forearm.L", "upper_arm.L", (0.28, 0.01, 0.0)),
    ("hand.L", "forearm.L", (0.26, 0.0, 0.0)),
    ("f_index.01.L", "hand.L", (0.09, -0.02, 0.0)),
    ("f_index.02.L", "f_index.01.L", (0.04, 0.0, 0.0)),
    ("thumb.01.L", "hand.L", (0.03, -0.03, -0.01)),
    ("thumb.02.L", "thumb.01.L", (0.04, -0.01, 0.0)),
]
RIGIFY_JOINTS: list[Joint] = [
    ("spine", None, (0.0, 0.0, 1.0)),
    ("spine.001", "spine", (0.0, 0.01, 0.12)),
    ("spine.002", "spine.001", (0.0, 0.0, 0.13)),
    ("spine.003", "spine.002", (0.0, -0.01, 0.14)),
    ("spine.004", "spine.003", (0.0, 0.01, 0.17)),
    ("spine.005", "spine.004", (0.0, -0.01, 0.05)),
    ("spine.006", "spine.005", (0.0, 0.0, 0.05)),
    *RIGIFY_LEFT,
    *mirrored(RIGIFY_LEFT, _dot_side),
]
RIGIFY_LEFT_ROLES = {
    "clavicle": "shoulder.L",
    "upper_arm": "upper_arm.L",
    "lower_arm": "forearm.L",
    "hand": "hand.L",
    "upper_leg": "thigh.L",
    "lower_leg": "shin.L",
    "foot": "foot.L",
    "toes": "toe.L",
}

RIGIFY_DEF_LEFT: list[Joint] = [
    ("DEF-pelvis.L", "DEF-spine", (0.06, -0.03, 0.02)),
    ("DEF-thigh.L", "DEF-spine", (0.09, 0.0, -0.04)),
    ("DEF-thigh.L.001", "DEF-thigh.L", (0.0, -0.005, -0.215)),
    ("DEF-shin.L", "DEF-thigh.L.001", (0.0, -0.005, -0.215)),
    ("DEF-shin.L.001", "DEF-shin.L", (0.0, 0.01, -0.21)),
    ("DEF-foot.L", "DEF-shin.L.001", (0.0, 0.01, -0.21)),
    ("DEF-toe.L", "DEF-foot.L", (0.0, -0.13, -0.06)),
    ("DEF-breast.L", "DEF-spine.003", (0.1, -0.1, -0.05)),
    ("DEF-shoulder.L", "DEF-spine.003", (0.02, -0.01, 0.11)),
    ("DEF-upper_arm.L", "DEF-shoulder.L", (0.16, 0.02, -0.02)),
    ("DEF-upper_arm.L.001", "DEF-upper_arm.L", (0.14, 0.005, 0.0)),
    ("DEF-forearm.L", "DEF-upper_arm.L.001", (0.14, 0.005, 0.0)),
    ("DEF-forearm.L.001", "DEF-forearm.L", (0.13, 0.0, 0.0)),
    ("DEF-hand.L", "DEF-forearm.L.001", (0.13, 0.0, 0.0)),
]
RIGIFY_DEF_JOINTS: list[Joint] = [
    ("DEF-spine", None, (0.0, 0.0, 1.0)),
    ("DEF-spine.001", "DEF-spine", (0.0, 0.01, 0.12)),
    ("DEF-spine.002", "DEF-spine.001", (0.0, 0.0, 0.13)),
    ("DEF-spine.003", "DEF-spine.002", (0.0, -0.01, 0.14)),
    ("DEF-spine.004", "DEF-spine.003", (0.0, 0.01, 0.17)),
    ("DEF-spine.005", "DEF-spine.004", (0.0, -0.01, 0.05)),
    ("DEF-spine.006", "DEF-spine.005", (0.0, 0.0, 0.05)),
    *RIGIFY_DEF_LEFT,
    *mirrored(RIGIFY_DEF_LEFT, _dot_side),
]


# --- VRM humanoid names and VRoid node names (metres, Y up, facing +Z: left is +X) ------------------

VRM_LEFT: list[Joint] = [
    ("leftShoulder", "upperChest", (0.02, 0.09, -0.01)),
    ("leftUpperArm", "leftShoulder", (0.08, 0.0, 0.0)),
    ("leftLowerArm", "leftUpperArm", (0.24, 0.0, 0.0)),
    ("leftHand", "leftLowerArm", (0.23, 0.0, 0.0)),
    ("leftIndexProximal", "leftHand", (0.08, 0.0, 0.02)),
    ("leftIndexIntermediate", "leftIndexProximal", (0.03, 0.0, 0.0)),
    ("leftIndexDistal", "leftIndexIntermediate", (0.02, 0.0, 0.0)),
    ("leftThumbMetacarpal", "leftHand", (0.02, -0.01, 0.03)),
    ("leftThumbProximal", "leftThumbMetacarpal", (0.03, 0.0, 0.01)),
    ("leftUpperLeg", "hips", (0.08, -0.05, 0.0)),
    ("leftLowerLeg", "leftUpperLeg", (0.0, -0.41, 0.0)),
    ("leftFoot", "leftLowerLeg", (0.0, -0.41, -0.01)),
    ("leftToes", "leftFoot", (0.0, -0.05, 0.12)),
]
VRM_JOINTS: list[Joint] = [
    ("hips", None, (0.0, 0.95, 0.0)),
    ("spine", "hips", (0.0, 0.08, 0.0)),
    ("chest", "spine", (0.0, 0.12, 0.0)),
    ("upperChest", "chest", (0.0, 0.12, 0.0)),
    ("neck", "upperChest", (0.0, 0.13, 0.0)),
    ("head", "neck", (0.0, 0.08, 0.0)),
    *VRM_LEFT,
    *mirrored(VRM_LEFT, lambda n: n.replace("left", "right")),
]
VRM_LEFT_ROLES = {
    "clavicle": "leftShoulder",
    "upper_arm": "leftUpperArm",
    "lower_arm": "leftLowerArm",
    "hand": "leftHand",
    "upper_leg": "leftUpperLeg",
    "lower_leg": "leftLowerLeg",
    "foot": "leftFoot",
    "toes": "leftToes",
}
VROID_NAMES = {
    "hips": "J_Bip_C_Hips",
    "spine": "J_Bip_C_Spine",
    "chest": "J_Bip_C_Chest",
    "upperChest": "J_Bip_C_UpperChest",
    "neck": "J_Bip_C_Neck",
    "head": "J_Bip_C_Head",
    **{
        f"{side}{part}": f"J_Bip_{side[0].upper()}_{vroid}"
        for side in ("left", "right")
        for part, vroid in (
            ("Shoulder", "Shoulder"),
            ("UpperArm", "UpperArm"),
            ("LowerArm", "LowerArm"),
            ("Hand", "Hand"),
            ("IndexProximal", "Index1"),
            ("IndexIntermediate", "Index2"),
            ("IndexDistal", "Index3"),
            ("ThumbMetacarpal", "Thumb1"),
            ("ThumbProximal", "Thumb2"),
            ("UpperLeg", "UpperLeg"),
            ("LowerLeg", "LowerLeg"),
            ("Foot", "Foot"),
            ("Toes", "ToeBase"),
        )
    },
}


# --- Daz Genesis 8 (cm): legs under `pelvis`, spine under `hip` ------------------------------------


def _daz_side(name: str) -> str:
    return re.sub(r"^l", "r", name)


GENESIS_LEFT: list[Joint] = [
    ("lThighBend", "pelvis", (8.0, -8.0, 0.0)),
    ("lThighTwist", "lThighBend", (0.0, -20.0, 0.0)),
    ("lShin", "lThighTwist", (0.0, -23.0, 0.5)),
    ("lFoot", "lShin", (0.0, -41.0, -1.0)),
    ("lMetatarsals", "lFoot", (0.0, -4.0, 4.0)),
    ("lToe", "lMetatarsals", (0.0, -3.0, 9.0)),
    ("lCollar", "chestUpper", (3.0, 12.0, 0.0)),
    ("lShldrBend", "lCollar", (12.0, -1.0, -1.0)),
    ("lShldrTwist", "lShldrBend", (13.0, 0.0, 0.0)),
    ("lForearmBend", "lShldrTwist", (14.0, 0.0, 0.0)),
    ("lForearmTwist", "lForearmBend", (12.0, 0.0, 0.0)),
    ("lHand", "lForearmTwist", (13.0, 0.0, 0.0)),
    ("lIndex1", "lHand", (9.0, 0.0, 2.0)),
    ("lIndex2", "lIndex1", (4.0, 0.0, 0.0)),
    ("lThumb1", "lHand", (2.0, -1.0, 3.0)),
    ("lThumb2", "lThumb1", (4.0, 0.0, 1.0)),
]
GENESIS_JOINTS: list[Joint] = [
    ("hip", None, (0.0, 100.0, 0.0)),
    ("pelvis", "hip", (0.0, -1.0, 0.0)),
    ("abdomenLower", "hip", (0.0, 2.0, 0.0)),
    ("abdomenUpper", "abdomenLower", (0.0, 8.0, 0.0)),
    ("chestLower", "abdomenUpper", (0.0, 10.0, 0.0)),
    ("chestUpper", "chestLower", (0.0, 12.0, 0.0)),
    ("neckLower", "chestUpper", (0.0, 17.0, 0.0)),
    ("neckUpper", "neckLower", (0.0, 5.0, 0.0)),
    ("head", "neckUpper", (0.0, 5.0, 0.0)),
    *GENESIS_LEFT,
    *mirrored(GENESIS_LEFT, _daz_side),
]
GENESIS_LEFT_ROLES = {
    "clavicle": "lCollar",
    "upper_arm": "lShldrBend",
    "lower_arm": "lForearmBend",
    "hand": "lHand",
    "upper_leg": "lThighBend",
    "lower_leg": "lShin",
    "foot": "lFoot",
    "toes": "lToe",
}


# --- RobotExpressive's IK rig: feet under the root, legs beside the spine (file units, Y up) ------------


def _dot_l_side(name: str) -> str:
    return re.sub(r"\.L(?=$|_)", ".R", name)


ROBOT_LEFT: list[Joint] = [
    ("UpperLeg.L", "Body", (0.35, -0.1, 0.0)),
    ("LowerLeg.L", "UpperLeg.L", (0.0, -0.85, 0.08)),
    ("LowerLeg.L_end", "LowerLeg.L", (0.0, -0.85, -0.08)),
    ("Foot.L", "Bone", (0.35, 0.4, 0.0)),
    ("Foot.L_end", "Foot.L", (0.0, -0.3, 0.45)),
    ("PoleTarget.L", "Bone", (0.35, 1.3, 1.6)),
    ("PoleTarget.L_end", "PoleTarget.L", (0.0, 0.4, 0.0)),
    ("Shoulder.L", "Torso", (0.45, 0.75, 0.0)),
    ("UpperArm.L", "Shoulder.L", (0.35, -0.05, 0.0)),
    ("LowerArm.L", "UpperArm.L", (0.45, -0.45, 0.0)),
    ("Palm1.L", "LowerArm.L", (0.3, -0.3, 0.1)),
    ("Palm1.L_end", "Palm1.L", (0.05, -0.05, 0.05)),
    ("Palm2.L", "LowerArm.L", (0.35, -0.35, -0.05)),
    ("Palm2.L_end", "Palm2.L", (0.15, -0.15, -0.1)),
]
ROBOT_JOINTS: list[Joint] = [
    ("Bone", None, (0.0, 0.0, 0.0)),
    ("Body", "Bone", (0.0, 2.2, 0.0)),
    ("Hips", "Body", (0.0, 0.1, 0.0)),
    ("Abdomen", "Hips", (0.0, 0.35, 0.0)),
    ("Torso", "Abdomen", (0.0, 0.45, 0.0)),
    ("Neck", "Torso", (0.0, 0.85, 0.0)),
    ("Head", "Neck", (0.0, 0.2, 0.0)),
    ("Head_end", "Head", (0.0, 0.6, 0.0)),
    *ROBOT_LEFT,
    *mirrored(ROBOT_LEFT, _dot_l_side),
]
ROBOT_LEFT_ROLES = {
    "clavicle": "Shoulder.L",
    "upper_arm": "UpperArm.L",
    "lower_arm": "LowerArm.L",
    "hand": "Palm2.L",
    "upper_leg": "UpperLeg.L",
    "lower_leg": "LowerLeg.L",
    "foot": "LowerLeg.L_end",
}


# --- a low-poly game rig with two-joint limbs (metres, Y up, facing +Z) ---------------------------


def _underscore_side(name: str) -> str:
    return re.sub(r"_L$", "_R", name)


STUBBY_LEFT: list[Joint] = [
    ("Thigh_L", "Hips", (0.1, -0.05, 0.0)),
    ("Shin_L", "Thigh_L", (0.0, -0.4, 0.0)),
    ("UpperArm_L", "Chest", (0.18, 0.15, 0.0)),
    ("Forearm_L", "UpperArm_L", (0.28, 0.0, 0.0)),
]
STUBBY_JOINTS: list[Joint] = [
    ("Hips", None, (0.0, 0.85, 0.0)),
    ("Chest", "Hips", (0.0, 0.3, 0.0)),
    ("Head", "Chest", (0.0, 0.25, 0.0)),
    *STUBBY_LEFT,
    *mirrored(STUBBY_LEFT, _underscore_side),
]


# --- the rigs --------------------------------------------------------------------------------------


def _rig(name: str, joints: list[Joint], up: tuple[float, float, float], expected: dict[str, str], unit: float) -> Rig:
    return Rig(name, build(joints), up, expected, unit)


def all_rigs() -> list[Rig]:
    """Every scheme's rig with the roles it must map to."""
    y, z = (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
    return [
        _rig("cmu", CMU_JOINTS, y, CMU_EXPECTED, CMU_UNIT),
        _rig(
            "biovision",
            LOUISE_JOINTS,
            y,
            expected_roles(BIOVISION_LEFT_ROLES, _biovision_side, {"hips": "Hips", "chest": "Chest", "head": "Head",
                                                                   "neck": "Neck"}),
            0.01,
        ),
        _rig(
            "mocapdata",
            MOCAPDATA_JOINTS,
            y,
            expected_roles(BIOVISION_LEFT_ROLES, _biovision_side, {"hips": "Hips", "chest": "Chest2", "head": "Head",
                                                                   "neck": "Neck"}),
            0.0254,
        ),
        _rig(
            "mixamo",
            MIXAMO_JOINTS,
            y,
            expected_roles(MIXAMO_LEFT_ROLES, _mixamo_side, {"hips": "mixamorig:Hips", "chest": "mixamorig:Spine2",
                                                             "neck": "mixamorig:Neck", "head": "mixamorig:Head"}),
            0.01,
        ),
        _rig(
            "unreal",
            UNREAL_JOINTS,
            z,
            expected_roles(UNREAL_LEFT_ROLES, _unreal_side, {"hips": "pelvis", "chest": "spine_03", "neck": "neck_01",
                                                             "head": "head"}),
            0.01,
        ),
        _rig(
            "rigify",
            RIGIFY_JOINTS,
            z,
            expected_roles(RIGIFY_LEFT_ROLES, _dot_side, {"hips": "spine", "chest": "spine.003", "neck": "spine.004",
                                                          "head": "spine.006"}),
            1.0,
        ),
        _rig(
            "rigify_def",
            RIGIFY_DEF_JOINTS,
            z,
            expected_roles({p: f"DEF-{n}" for p, n in RIGIFY_LEFT_ROLES.items()}, _dot_side,
                           {"hips": "DEF-spine", "chest": "DEF-spine.003", "neck": "DEF-spine.004",
                            "head": "DEF-spine.006"}),
            1.0,
        ),
        _rig(
            "vrm",
            VRM_JOINTS,
            y,
            expected_roles(VRM_LEFT_ROLES, lambda n: n.replace("left", "right"),
                           {"hips": "hips", "chest": "upperChest", "neck": "neck", "head": "head"}),
            1.0,
        ),
        _rig(
            "vroid",
            [(VROID_NAMES[n], VROID_NAMES.get(p) if p else None, o) for n, p, o in VRM_JOINTS],
            y,
            {
                role: VROID_NAMES[name]
                for role, name in expected_roles(
                    VRM_LEFT_ROLES, lambda n: n.replace("left", "right"),
                    {"hips": "hips", "chest": "upperChest", "neck": "neck", "head": "head"},
                ).items()
            },
            1.0,
        ),
        _rig(
            "genesis",
            GENESIS_JOINTS,
            y,
            expected_roles(GENESIS_LEFT_ROLES, _daz_side, {"hips": "hip", "chest": "chestUpper", "neck": "neckLower",
                                                           "head": "head"}),
            0.01,
        ),
        _rig(
            "robot_expressive",
            ROBOT_JOINTS,
            y,
            expected_roles(ROBOT_LEFT_ROLES, _dot_l_side, {"hips": "Body", "chest": "Torso", "neck": "Neck",
                                                           "head": "Head"}),
            1.0,
        ),
        _rig(
            "stubby",
            STUBBY_JOINTS,
            y,
            {"hips": "Hips", "chest": "Chest", "head": "Head", "upper_leg_l": "Thigh_L", "lower_leg_l": "Shin_L",
             "upper_leg_r": "Thigh_R", "lower_leg_r": "Shin_R", "upper_arm_l": "UpperArm_L",
             "lower_arm_l": "Forearm_L", "upper_arm_r": "UpperArm_R", "lower_arm_r": "Forearm_R"},
            1.0,
        ),
    ]  # fmt: skip


def rig(name: str) -> Rig:
    """The rig called ``name`` (see :func:`all_rigs`)."""
    return next(r for r in all_rigs() if r.name == name)


# --- synthetic motion: a walk defined on body parts, played on any rig ------------------------------


def body_axes(rig: Rig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(up, left, forward)`` unit axes of the rig's model space, from its hip joints."""
    positions = rest_positions(rig.skeleton)
    up = np.asarray(rig.up, dtype=np.float64)
    hips = (
        positions[rig.skeleton.index(rig.expected["upper_leg_l"])]
        - positions[rig.skeleton.index(rig.expected["upper_leg_r"])]
    )
    left = hips - (hips @ up) * up
    left /= np.linalg.norm(left)
    return up, left, np.cross(left, up)


def rest_positions(skeleton: Skeleton) -> np.ndarray:
    """Rest model positions by an independent forward pass with scipy rotations."""
    rotations: list[Rotation] = []
    positions = np.zeros((skeleton.num_joints, 3))
    for j, parent in enumerate(skeleton.parents):
        local = Rotation.from_quat(np.array(skeleton.rest_rotations[j]))
        if parent < 0:
            rotations.append(local)
            positions[j] = skeleton.rest_translations[j]
        else:
            rotations.append(rotations[parent] * local)
            positions[j] = positions[parent] + rotations[parent].apply(np.array(skeleton.rest_translations[j]))
    return positions


def walk(rig: Rig, times: np.ndarray, *, period: float = 1.0, stride: float = 0.5) -> tuple[np.ndarray, ...]:
    """A walk on ``rig``: local ``(translations (T, J, 3), rotations (T, J, 4))`` of every joint.

    Built on the rig's body parts (``rig.expected``) as model-space turns about the rig's left
    axis: thighs swing ±30° in opposite phase, knees bend up to 45° while their leg swings
    forward, arms swing ±20° against the legs, forearms bend 20°; the hips move forward
    ``stride`` × leg length per second and bob. Joints that are no body part keep their rest
    local rotation. scipy composes everything (independent of the engine).
    """
    skeleton = rig.skeleton
    up, left, forward = body_axes(rig)
    positions = rest_positions(skeleton)
    hips = skeleton.index(rig.expected["hips"])
    leg = positions[hips] @ up - min(positions[skeleton.index(rig.expected[f"lower_leg_{s}"])] @ up for s in "lr")
    phase = 2 * np.pi * times / period
    turns: dict[str, np.ndarray] = {}  # role -> (T, 3) rotation vectors, model space, relative to rest
    for side, sign in (("l", 1.0), ("r", -1.0)):
        swing = sign * np.sin(phase)  # > 0: this leg swings forward
        turns[f"upper_leg_{side}"] = np.outer(-np.radians(30) * swing, left)
        turns[f"lower_leg_{side}"] = np.outer(np.radians(45) * np.clip(swing, 0, None) - np.radians(30) * swing, left)
        turns[f"upper_arm_{side}"] = np.outer(np.radians(20) * swing, left)
        turns[f"lower_arm_{side}"] = np.outer(np.radians(20) * swing - np.radians(20), left)
    model_turn: dict[int, Rotation] = {
        skeleton.index(rig.expected[role]): Rotation.from_rotvec(vec)
        for role, vec in turns.items()
        if role in rig.expected
    }
    rest_local = Rotation.from_quat(np.array(skeleton.rest_rotations))
    rest_model: list[Rotation] = []
    for j, parent in enumerate(skeleton.parents):
        rest_model.append(rest_local[j] if parent < 0 else rest_model[parent] * rest_local[j])
    count = len(times)
    model: list[Rotation] = []
    local = np.empty((count, skeleton.num_joints, 4))
    for j, parent in enumerate(skeleton.parents):
        if j in model_turn:
            rotation = model_turn[j] * Rotation.concatenate([rest_model[j]] * count)
        elif parent < 0:
            rotation = Rotation.concatenate([rest_local[j]] * count)
        else:
            rotation = model[parent] * Rotation.concatenate([rest_local[j]] * count)
        model.append(rotation)
        local[:, j] = (rotation if parent < 0 else model[parent].inv() * rotation).as_quat()
    translations = np.broadcast_to(skeleton.rest_translations, (count, skeleton.num_joints, 3)).copy()
    bob = 0.03 * leg * np.cos(2 * phase)
    root_offset = np.outer(stride * leg * times, forward) + np.outer(bob, up)
    if skeleton.parents[hips] >= 0:  # move the hips in their parent's (rest) frame
        root_offset = rest_model[skeleton.parents[hips]].inv().apply(root_offset)
    translations[:, hips] += root_offset
    return translations, local


def reframed(skeleton: Skeleton, turn: Rotation, factor: float, rng: np.random.Generator) -> Skeleton:
    """Same joints turned by ``turn`` (a scipy Rotation), ``factor`` larger, every joint's own frame turned at random.

    Rest model positions become ``turn · factor · p``; rigs differ this way in how they orient
    their bones, which retargeting must not care about.
    """
    positions = turn.apply(factor * rest_positions(skeleton))
    frames = Rotation.random(skeleton.num_joints, random_state=rng)
    translations, rotations = [], []
    for j, p in enumerate(skeleton.parents):
        if p < 0:
            translations.append(positions[j])
            rotations.append(frames[j].as_quat())
        else:
            translations.append(frames[p].inv().apply(positions[j] - positions[p]))
            rotations.append((frames[p].inv() * frames[j]).as_quat())
    return Skeleton(skeleton.names, skeleton.parents, np.array(translations), np.array(rotations))


def to_bvh(rig: Rig, translations: np.ndarray, rotations: np.ndarray, frame_time: float) -> str:
    """BVH text of ``rig`` playing local ``translations``/``rotations`` ``(F, J, ...)``, in the rig's units.

    Like the CMU cgspeed files: the root has six channels ``Xposition Yposition Zposition
    Zrotation Yrotation Xrotation``, other joints ``Zrotation Yrotation Xrotation`` (intrinsic
    Z-Y-X Euler angles in degrees, written by scipy); leaves named ``<parent>_End`` become End
    Sites. Rest rotations must be the identity (BVH has none).
    """
    skeleton = rig.skeleton
    children: list[list[int]] = [[] for _ in range(skeleton.num_joints)]
    for j, p in enumerate(skeleton.parents):
        if p >= 0:
            children[int(p)].append(j)
    end_sites = {j for j in range(skeleton.num_joints) if not children[j] and skeleton.names[j].endswith("_End")}
    order: list[int] = []
    lines = ["HIERARCHY"]

    def write(j: int, depth: int) -> None:
        pad = "  " * depth
        offset = " ".join(f"{v:.6f}" for v in skeleton.rest_translations[j])
        if j in end_sites:
            lines.extend([f"{pad}End Site", f"{pad}{{", f"{pad}  OFFSET {offset}", f"{pad}}}"])
            return
        order.append(j)
        lines.append(f"{pad}{'ROOT' if depth == 0 else 'JOINT'} {skeleton.names[j]}")
        lines.append(f"{pad}{{")
        lines.append(f"{pad}  OFFSET {offset}")
        position = "Xposition Yposition Zposition " if depth == 0 else ""
        lines.append(f"{pad}  CHANNELS {6 if depth == 0 else 3} {position}Zrotation Yrotation Xrotation")
        for c in children[j]:
            write(c, depth + 1)
        lines.append(f"{pad}}}")

    write(int(skeleton.levels[0][0]), 0)
    frames = len(translations)
    lines += ["MOTION", f"Frames: {frames}", f"Frame Time: {frame_time:.8f}"]
    columns = []
    for j in order:
        euler = Rotation.from_quat(rotations[:, j]).as_euler("ZYX", degrees=True)
        columns.append(np.concatenate((translations[:, j], euler), axis=1) if j == order[0] else euler)
    table = np.concatenate(columns, axis=1)
    lines += [" ".join(f"{v:.6f}" for v in row) for row in table]
    return "\n".join(lines) + "\n"
