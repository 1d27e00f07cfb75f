"""Joint names: which side and which body part a name says, in any common naming scheme.

:func:`parse_joint_name` splits a name into words at case changes, digits and punctuation, drops
namespaces (``mixamorig:``), rig prefixes (``DEF-``, ``Bip01``, ``b_``, ``J_Bip_``, ``CC_Base_``),
side words (``Left``, ``l``, ``.L``, ``_r``) and numbers, and looks what remains up in one
vocabulary covering CMU/BVH, Mixamo, Blender/Rigify, Unreal, VRM, Daz and 3ds Max names. A word
that means different bones in different schemes (``shoulder``, ``leg``) lists every part it can
mean; :mod:`engine.anim.humanoid` resolves it by the chain the joint sits in. Twist, roll, end and
helper joints (``upperarm_twist_01_l``, ``LeftToe_End``) name no part.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Arm parts from the chest outwards.
ARM_PARTS = ("clavicle", "upper_arm", "lower_arm", "hand")
#: Leg parts from the hips downwards.
LEG_PARTS = ("upper_leg", "lower_leg", "foot", "toes")
#: Each limb part as a person says it.
PART_NAMES = {
    "clavicle": "clavicle",
    "upper_arm": "upper arm",
    "lower_arm": "forearm",
    "hand": "hand",
    "upper_leg": "thigh",
    "lower_leg": "shin",
    "foot": "foot",
    "toes": "toes",
}


_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_LEFT, _RIGHT = frozenset({"l", "left"}), frozenset({"r", "right"})
#: Leading words that only say which rig or tool made the joint.
_PREFIXES = frozenset({"def", "org", "mch", "b", "c", "j", "bip", "cc", "base", "bone", "jnt", "joint", "sk", "rig"})
#: Words that mark the joint at the end of a chain (a BVH End Site, Blender's ``_end`` leaves).
_ENDS = frozenset({"end", "nub", "tip", "top", "site"})
#: Words that make a joint a helper rather than a body part.
_HELPERS = _ENDS | {"twist", "roll", "share", "helper", "ik", "fk", "pole", "target", "offset"}
#: Limb vocabulary: the words left after prefixes, sides and numbers, joined → candidate parts, preferred first.
_LIMB_WORDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("clavicle", "clav", "collar", "collarbone"), ("clavicle",)),
    "shoulder": ("clavicle", "upper_arm"),
    **dict.fromkeys(("upperarm", "uparm", "arm", "humerus", "shldr", "shldrbend"), ("upper_arm",)),
    **dict.fromkeys(("forearm", "lowerarm", "lowarm", "elbow", "radius", "ulna", "forearmbend"), ("lower_arm",)),
    **dict.fromkeys(("hand", "wrist"), ("hand",)),
    **dict.fromkeys(("thigh", "upleg", "upperleg", "femur", "hip", "thighbend"), ("upper_leg",)),
    "leg": ("lower_leg", "upper_leg"),
    **dict.fromkeys(("shin", "calf", "lowerleg", "lowleg", "knee", "tibia", "shank"), ("lower_leg",)),
    **dict.fromkeys(("foot", "ankle"), ("foot",)),
    **dict.fromkeys(("toe", "toes", "toebase", "ball"), ("toes",)),
}
#: Centre vocabulary (names of joints without a side).
_CENTRE_WORDS: dict[str, str] = {
    **dict.fromkeys(("hips", "hip", "pelvis"), "hips"),
    **dict.fromkeys(("neck", "necklower", "neckupper"), "neck"),
    "head": "head",
}


@dataclass(frozen=True)
class JointName:
    """What a joint's name says, from :func:`parse_joint_name`.

    Attributes
    ----------
    side
        ``"l"``, ``"r"`` or ``None``.
    core
        The words that name the body part, lower case, joined (``"upperarm"`` for
        ``mixamorig:LeftUpperArm``), ``""`` for a helper joint.
    parts
        Limb parts the core can mean (:data:`ARM_PARTS`/:data:`LEG_PARTS`), preferred first.
    centre
        ``"hips"``, ``"neck"`` or ``"head"`` for an unsided centre joint named so, else ``None``.
    helper
        Whether a word marks a twist, roll, end or helper joint.
    end
        Whether a word marks the end joint of a chain (``_End``, ``_end``, ``Nub``, ``Tip``).
    """

    side: str | None
    core: str
    parts: tuple[str, ...]
    centre: str | None
    helper: bool
    end: bool


def parse_joint_name(name: str) -> JointName:
    """Read the side and the body part from a joint name (see the module docstring).

    Examples
    --------
    >>> parse_joint_name("mixamorig:LeftForeArm")
    JointName(side='l', core='forearm', parts=('lower_arm',), centre=None, helper=False, end=False)
    >>> parse_joint_name("DEF-upper_arm.R.001").parts, parse_joint_name("upperarm_twist_01_l").helper
    (('upper_arm',), True)
    >>> parse_joint_name("Bip01 L Clavicle").side, parse_joint_name("LeftShoulder").parts
    ('l', ('clavicle', 'upper_arm'))
    """
    words = [w.lower() for w in _WORDS.findall(name.rsplit(":", 1)[-1]) if not w.isdigit()]
    sides = {"l" for w in words if w in _LEFT} | {"r" for w in words if w in _RIGHT}
    side = sides.pop() if len(sides) == 1 else None
    words = [w for w in words if w not in _LEFT | _RIGHT]
    while len(words) > 1 and words[0] in _PREFIXES:
        words = words[1:]
    helper = any(w in _HELPERS for w in words)
    end = any(w in _ENDS for w in words)
    core = "" if helper else "".join(words)
    parts = _LIMB_WORDS.get(core, ()) if side is not None else ()
    centre = _CENTRE_WORDS.get(core) if side is None else None
    return JointName(side, core, parts, centre, helper, end)


def name_side(name: str) -> str | None:
    """``"l"`` or ``"r"`` when a word of ``name`` marks a side, else ``None``.

    >>> [name_side(n) for n in ("lThigh", "upper_arm_l", "Bip01 R Foot", "thigh.L", "Head", "leftright")]
    ['l', 'l', 'r', 'l', None, None]
    """
    return parse_joint_name(name).side
