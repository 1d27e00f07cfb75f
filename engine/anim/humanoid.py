"""Humanoid detection: which joints of a skeleton are the hips, spine, chest, neck, head, arms and legs.

:func:`find_humanoid` reads a skeleton's hierarchy, joint names and rest pose and returns a
:class:`Humanoid`: one joint per role (:data:`ROLES`), the spine and neck chains, and, for every
role, the reason it was chosen (:meth:`Humanoid.report` prints them for ``ossa retarget``).

How it decides
--------------
1. **Topology.** The hips are the shallowest joint with a *mirror pair* of children (two limbs of
   two or more joints with the same subtree shape, reaching below it) and a larger third child,
   the spine. The chest is the first joint along the spine with another mirror pair (the arms);
   the neck is its remaining child that reaches highest (or holds a joint named ``head``).
2. **Limb parts, per limb, by name** (:func:`parse_joint_name`). Names are split into words at
   case changes, digits and punctuation; namespaces (``mixamorig:``), rig prefixes (``DEF-``,
   ``Bip01``, ``b_``, ``J_Bip_``, ``CC_Base_``), side words (``Left``, ``l``, ``.L``, ``_r``) and
   numbers are dropped, and what remains is looked up in one vocabulary covering CMU/BVH, Mixamo,
   Blender/Rigify, Unreal, VRM, Daz and 3ds Max names. Words that mean different bones in
   different schemes are resolved by the chain they sit in, never by guessing a scheme:
   ``shoulder`` is the clavicle when a joint below it is named as the upper arm (CMU cgspeed
   ``LeftShoulder → LeftArm``, Mixamo, VRM ``leftShoulder → leftUpperArm``, Rigify) and the upper
   arm otherwise (Biovision ``LeftCollar → LeftShoulder → LeftElbow``); ``leg`` is the shin below
   a thigh (``LeftUpLeg → LeftLeg``) and the thigh above a shin (``LeftLeg → LeftShin``).
   Twist, roll, end and helper joints (``upperarm_twist_01_l``, ``LeftToe_End``) take no part.
3. **Limb parts by geometry**, when the names of either limb of a pair say nothing. Joints at the
   same rest position along a chain are one *station* (CMU's zero-length ``LeftShoulder``,
   ``LeftFingerBase``); a part is the first joint of its station. Legs: the thigh and shin are the
   two consecutive stations with the longest summed bone length. Arms: the upper arm is the first
   station at least :data:`SHOULDER_WIDTH_FACTOR` × the hip joints' distance from the body's
   vertical midline (a clavicle starts at the sternum, an upper arm at the shoulder); a station
   before it is the clavicle. The next stations are forearm and hand (shin, foot, toes).
4. **Left and right**, symmetric by construction: both limbs of a pair go through the same code
   (geometric choices are made once for the pair, from both limbs' numbers), and only at the end
   one comparison names one limb left: by the side words of their names, else by geometry (toes
   point forward; the character's left is ``up × forward``).

Limbs have two to four parts: an arm is upper arm and forearm, plus hand and clavicle when the
chain has them; a leg is thigh and shin, plus foot and toes.

Examples
--------
>>> from engine.procedural.mannequin import build_skeleton
>>> body = find_humanoid(build_skeleton())
>>> body.leg("l").joints, body.head_chain()
((17, 18, 19, 20), (5, 6))
>>> print(body.report().splitlines()[5])
upper_arm_l  upper_arm_l  name: 'upper_arm_l' = upper arm
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.anim.local_to_model import local_to_model
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import vec_cross, vec_normalize
from engine.math._checks import FloatArray, IntArray, as_array

#: The model-space up axis assumed when none is given (docs/conventions.md: +Y up).
UP = (0.0, 1.0, 0.0)
#: The two sides, the character's own left and right.
SIDES = ("l", "r")
#: Arm parts from the chest outwards.
ARM_PARTS = ("clavicle", "upper_arm", "lower_arm", "hand")
#: Leg parts from the hips downwards.
LEG_PARTS = ("upper_leg", "lower_leg", "foot", "toes")
#: Every role :func:`find_humanoid` fills (sided roles end in ``_l``/``_r``).
ROLES = (
    "hips",
    "chest",
    "neck",
    "head",
    *(f"{part}_{side}" for side in SIDES for part in ARM_PARTS),
    *(f"{part}_{side}" for side in SIDES for part in LEG_PARTS),
)
#: Largest angle between the hips→chest direction and up (or hips→foot and down) of a humanoid.
UPRIGHT_DEGREES = 45.0
#: An arm station this many hip-joint distances (or more) from the midline is the shoulder.
SHOULDER_WIDTH_FACTOR = 0.75
#: How many joints the chains of two mirror limbs may differ by (helper joints on one side only).
MIRROR_SLACK = 2

_PART_NAMES = {
    "clavicle": "clavicle",
    "upper_arm": "upper arm",
    "lower_arm": "forearm",
    "hand": "hand",
    "upper_leg": "thigh",
    "lower_leg": "shin",
    "foot": "foot",
    "toes": "toes",
}

# --------------------------------------------------------------------------------------------
# names

_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_LEFT, _RIGHT = frozenset({"l", "left"}), frozenset({"r", "right"})
#: Leading words that only say which rig or tool made the joint.
_PREFIXES = frozenset({"def", "org", "mch", "b", "c", "j", "bip", "cc", "base", "bone", "jnt", "joint", "sk", "rig"})
#: Words that make a joint a helper rather than a body part.
_HELPERS = frozenset(
    {"twist", "roll", "end", "nub", "tip", "top", "site", "share", "helper", "ik", "fk", "pole", "target", "offset"}
)
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
    """

    side: str | None
    core: str
    parts: tuple[str, ...]
    centre: str | None
    helper: bool


def parse_joint_name(name: str) -> JointName:
    """Read the side and the body part from a joint name (see the module docstring).

    Examples
    --------
    >>> parse_joint_name("mixamorig:LeftForeArm")
    JointName(side='l', core='forearm', parts=('lower_arm',), centre=None, helper=False)
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
    core = "" if helper else "".join(words)
    parts = _LIMB_WORDS.get(core, ()) if side is not None else ()
    centre = _CENTRE_WORDS.get(core) if side is None else None
    return JointName(side, core, parts, centre, helper)


def name_side(name: str) -> str | None:
    """``"l"`` or ``"r"`` when a word of ``name`` marks a side, else ``None``.

    >>> [name_side(n) for n in ("lThigh", "upper_arm_l", "Bip01 R Foot", "thigh.L", "Head", "leftright")]
    ['l', 'l', 'r', 'l', None, None]
    """
    return parse_joint_name(name).side


# --------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True, eq=False)
class Limb:
    """One arm or leg found by :func:`find_humanoid`.

    Attributes
    ----------
    side
        ``"l"`` or ``"r"``, the character's own side.
    kind
        ``"arm"`` or ``"leg"``.
    parts
        Part (:data:`ARM_PARTS` or :data:`LEG_PARTS`) → joint index, for the parts found.
    joints
        The found parts' joints from the body outwards (an IK chain: two to four joints).
    path
        Every joint of the limb's chain from the branch off the body to its tip, helpers included.
    """

    side: str
    kind: str
    parts: Mapping[str, int]
    joints: tuple[int, ...]
    path: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class Humanoid:
    """Body parts of a skeleton, found by :func:`find_humanoid`.

    Attributes
    ----------
    skeleton
        The skeleton searched.
    roles
        Role name (from :data:`ROLES`) → joint index; roles a skeleton lacks (a clavicle, toes,
        a neck) are absent.
    spine
        Joints strictly between the hips and the chest, bottom-up.
    spine_heights
        For each of ``spine``, its height between hips (0) and chest (1) along up.
    neck
        Joints strictly between the chest and the head, bottom-up.
    reasons
        Role → why that joint was chosen (a name, a geometric rule, the hierarchy).
    notes
        Other findings worth telling (e.g. a side whose names were not used).
    """

    skeleton: Skeleton
    roles: Mapping[str, int]
    spine: tuple[int, ...]
    spine_heights: tuple[float, ...]
    neck: tuple[int, ...]
    reasons: Mapping[str, str]
    notes: tuple[str, ...]

    def arm(self, side: str) -> Limb:
        """The arm on ``side`` (``"l"`` or ``"r"``)."""
        return self._limb("arm", ARM_PARTS, side)

    def leg(self, side: str) -> Limb:
        """The leg on ``side`` (``"l"`` or ``"r"``): thigh, shin, then foot and toes when found."""
        return self._limb("leg", LEG_PARTS, side)

    def head_chain(self) -> tuple[int, ...]:
        """``neck joints…, head`` (for look-at): the joints from above the chest to the head."""
        return (*self.neck, self.roles["head"])

    def _limb(self, kind: str, parts: Sequence[str], side: str) -> Limb:
        if side not in SIDES:
            raise InvalidInputError(f"side must be 'l' or 'r', got {side!r}")
        found = {p: self.roles[f"{p}_{side}"] for p in parts if f"{p}_{side}" in self.roles}
        first = found[parts[1]] if parts[0] not in found else found[parts[0]]
        tip = found[[p for p in parts if p in found][-1]]
        path = tuple(int(j) for j in self.skeleton.chain(first, tip))
        return Limb(side, kind, MappingProxyType(found), tuple(found.values()), path)

    def report(self) -> str:
        """One line per role found: ``role  joint  reason``, in :data:`ROLES` order, then the notes."""
        names = self.skeleton.names
        found = [r for r in ROLES if r in self.roles]
        width = max(len(r) for r in found)
        joint_width = max(len(names[self.roles[r]]) for r in found)
        lines = [f"{r:<{width}}  {names[self.roles[r]]:<{joint_width}}  {self.reasons[r]}" for r in found]
        if self.spine:
            lines.append(f"{'spine':<{width}}  " + ", ".join(names[j] for j in self.spine))
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


# --------------------------------------------------------------------------------------------
# declared roles

#: Roles a declared bone map must give (VRM requires them too): the rest is optional.
DECLARED_REQUIRED = (
    "hips",
    "chest",
    "head",
    *(f"{part}_{side}" for side in SIDES for part in ("upper_arm", "lower_arm", "upper_leg", "lower_leg")),
)


def _declared(skeleton: Skeleton, up: FloatArray) -> Humanoid:
    """The :class:`Humanoid` of ``skeleton.humanoid``'s roles: the file's map wins over any guess."""
    declared = dict(skeleton.humanoid)
    unknown = sorted(set(declared) - set(ROLES))
    if unknown:
        raise _fail(skeleton, f"the declared humanoid roles {unknown} are not roles of {list(ROLES)}")
    missing = [role for role in DECLARED_REQUIRED if role not in declared]
    if missing:
        raise _fail(skeleton, f"the declared humanoid roles lack {missing}")
    roles = {role: skeleton.index(name) for role, name in declared.items()}

    def below(upper: str, lower: str) -> IntArray:
        try:
            return skeleton.chain(roles[upper], roles[lower])
        except SkeletonMismatchError:
            problem = f"the declared {lower} {declared[lower]!r} is not below the declared {upper} {declared[upper]!r}"
            raise _fail(skeleton, problem) from None

    spine = tuple(int(j) for j in below("hips", "chest")[1:-1])
    neck = tuple(int(j) for j in below("chest", "head")[1:-1])
    if "neck" in roles and roles["neck"] not in neck:
        raise _fail(skeleton, f"the declared neck {declared['neck']!r} is not between the chest and the head")
    for side in SIDES:
        for parts, top in ((ARM_PARTS, "chest"), (LEG_PARTS, "hips")):
            chain = [top, *(f"{p}_{side}" for p in parts if f"{p}_{side}" in roles)]
            for upper, lower in itertools.pairwise(chain):
                below(upper, lower)
    positions = rest_positions(skeleton)
    span = float((positions[roles["chest"]] - positions[roles["hips"]]) @ up)
    heights = tuple(float((positions[j] - positions[roles["hips"]]) @ up) / span if span else 0.0 for j in spine)
    return Humanoid(
        skeleton=skeleton,
        roles=MappingProxyType(roles),
        spine=spine,
        spine_heights=heights,
        neck=neck,
        reasons=MappingProxyType(dict.fromkeys(roles, "declared by the file (humanoid bone map)")),
        notes=("roles declared by the file's humanoid bone map; no name or geometry guessed",),
    )


# --------------------------------------------------------------------------------------------
# the search


def unit_vector(vector: Any, name: str) -> FloatArray:
    """``vector`` as one unit 3-vector; raises :class:`InvalidInputError` naming ``name`` otherwise."""
    v = as_array(vector, name, (3,))
    if v.shape != (3,):
        raise InvalidInputError(f"{name} must be one 3-vector, got shape {v.shape}")
    return vec_normalize(v, name)


def rest_positions(skeleton: Skeleton) -> FloatArray:
    """Rest model-space joint positions ``(J, 3)``."""
    return local_to_model(skeleton, skeleton.rest_pose.matrices())[:, :3, 3]


class _Tree:
    """Children, subtree shapes and rest positions of a skeleton (computed once per search)."""

    def __init__(self, skeleton: Skeleton, up: FloatArray) -> None:
        self.skeleton = skeleton
        self.names = skeleton.names
        self.up = up
        self.positions = rest_positions(skeleton)
        count = skeleton.num_joints
        self.children: list[list[int]] = [[] for _ in range(count)]
        for j, parent in enumerate(skeleton.parents):
            if parent >= 0:
                self.children[int(parent)].append(j)
        self.sizes = np.ones(count, dtype=np.intp)
        self.heights = np.ones(count, dtype=np.intp)  # joints on the longest downward path
        for j in range(count - 1, 0, -1):  # children come after parents
            parent = int(skeleton.parents[j])
            if parent >= 0:
                self.sizes[parent] += self.sizes[j]
                self.heights[parent] = max(self.heights[parent], self.heights[j] + 1)
        extent = np.ptp(self.positions, axis=0).max() if count else 0.0
        self.tolerance = 1e-6 * max(float(extent), 1e-12)
        self.parsed = [parse_joint_name(n) for n in self.names]
        self.named = np.array([bool(p.parts) for p in self.parsed], dtype=np.intp)  # limb parts named below
        for j in range(count - 1, 0, -1):
            parent = int(skeleton.parents[j])
            if parent >= 0:
                self.named[parent] += self.named[j]

    def shape(self, j: int) -> tuple[int, int]:
        return int(self.sizes[j]), int(self.heights[j])

    def main_path(self, start: int) -> list[int]:
        """``start``, then repeatedly the child below which most joints are named as limb parts.

        Ties (every child of an unnamed rig): the largest subtree, then the longer reach, then the name.
        """
        path = [start]
        while self.children[path[-1]]:
            here = self.positions[path[-1]]
            path.append(
                max(
                    self.children[path[-1]],
                    key=lambda c: (
                        self.named[c],
                        self.sizes[c],
                        self.heights[c],
                        float(np.linalg.norm(self.positions[self.main_tip(c)] - here)),
                        self.names[c],
                    ),
                )
            )
        return path

    def main_tip(self, start: int) -> int:
        joint = start
        while self.children[joint]:
            joint = max(self.children[joint], key=lambda c: (self.sizes[c], self.heights[c], self.names[c]))
        return joint

    def height(self, j: int) -> float:
        return float(self.positions[j] @ self.up)

    def mirror_pairs(self, j: int) -> list[tuple[int, int]]:
        """Pairs of children of ``j`` that look like a left and a right limb, most alike first.

        Both have two or more joints; their chains are as long within :data:`MIRROR_SLACK` joints
        and neither subtree is more than twice the other (helper or prop joints on one side only
        are allowed); their tips end at about the same height (within a quarter of the longer
        reach).
        """
        limbs = [c for c in self.children[j] if self.sizes[c] >= 2]
        pairs = []
        for a, b in itertools.combinations(limbs, 2):
            (size_a, height_a), (size_b, height_b) = self.shape(a), self.shape(b)
            if abs(height_a - height_b) > MIRROR_SLACK or max(size_a, size_b) > 2 * min(size_a, size_b):
                continue
            drops = [self.height(j) - self.height(self.main_tip(c)) for c in (a, b)]
            reach = max(abs(d) for d in drops)
            if abs(drops[0] - drops[1]) > 0.25 * reach:
                continue
            pairs.append((abs(size_a - size_b) + abs(height_a - height_b), (a, b)))
        return [pair for _, pair in sorted(pairs, key=lambda item: item[0])]

    def stations(self, path: Sequence[int]) -> list[int]:
        """Indices into ``path`` where a new rest position starts (joints at one position: one station)."""
        steps = np.linalg.norm(np.diff(self.positions[list(path)], axis=0), axis=-1)
        return [0, *(int(k) + 1 for k in np.nonzero(steps > self.tolerance)[0])]

    def lateral(self, j: int, hips: int) -> float:
        """Horizontal distance of joint ``j`` from the vertical line through the hips."""
        offset = self.positions[j] - self.positions[hips]
        return float(np.linalg.norm(offset - (offset @ self.up) * self.up))


def _fail(skeleton: Skeleton, problem: str) -> SkeletonMismatchError:
    return SkeletonMismatchError(f"not a humanoid skeleton ({skeleton.num_joints} joints): {problem}")


def _angle_degrees(a: FloatArray, b: FloatArray) -> float:
    cos = a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300)
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))


def _find_hips(tree: _Tree) -> tuple[int, int, tuple[int, int]]:
    """``(hips, spine root, (leg, leg))``.

    The legs are the shallowest mirror pair of children (:meth:`_Tree.mirror_pairs`) reaching
    below their parent; the hips are that parent when it has another child larger than a leg (the
    spine), else the parent's parent when that has one: Daz Genesis hangs the legs from a
    ``pelvis`` below the ``hip`` the spine starts from.
    """
    skeleton = tree.skeleton
    upside_down: tuple[int, int, int] | None = None
    for j in sorted(range(skeleton.num_joints), key=lambda k: (int(skeleton.depths[k]), k)):
        for a, b in tree.mirror_pairs(j):
            for hips, exclude in ((j, (a, b)), (int(skeleton.parents[j]), (j,))):
                others = [] if hips < 0 else [c for c in tree.children[hips] if c not in exclude]
                spine = [c for c in others if tree.sizes[c] > max(tree.sizes[a], tree.sizes[b])]
                if spine:
                    break
            if not spine:
                continue
            if max(tree.height(tree.main_tip(a)), tree.height(tree.main_tip(b))) >= tree.height(j):
                upside_down = upside_down or (j, a, b)
                continue
            return hips, max(spine, key=lambda c: (tree.sizes[c], tree.names[c])), (a, b)
    if upside_down is not None:
        j, a, b = upside_down
        raise _fail(
            skeleton,
            f"the legs {tree.names[a]!r} and {tree.names[b]!r} do not reach below {tree.names[j]!r} along up "
            f"{tree.up.round(3).tolist()}: not upright (is `up` the skeleton's model-space up axis?)",
        )
    limbs = {j: [c for c in tree.children[j] if tree.sizes[c] >= 2] for j in range(skeleton.num_joints)}
    busiest = max(range(skeleton.num_joints), key=lambda j: (len(limbs[j]), -j), default=None)
    if busiest is None or len(limbs[busiest]) < 3:
        raise _fail(
            skeleton, "no joint where a spine and two legs meet (no joint has three limbs of two or more joints)"
        )
    found = ", ".join(tree.names[c] for c in limbs[busiest])
    raise _fail(
        skeleton,
        f"joint {tree.names[busiest]!r} has {len(limbs[busiest])} limbs ({found}) but no two of them are mirror "
        "images with a larger spine beside them; a biped's hips have a spine and two legs",
    )


def _find_chest(tree: _Tree, spine_root: int) -> tuple[int, list[int], tuple[int, int], int]:
    """``(chest, spine path up to the chest, (arm, arm), neck branch)``."""
    path = tree.main_path(spine_root)
    for chest in path:
        pairs = [(a, b) for a, b in tree.mirror_pairs(chest)]
        if not pairs:
            continue
        # the arms: the mirror pair whose tips reach farthest from the chest
        here = tree.positions[chest]
        arms = max(
            pairs,
            key=lambda p: sum(float(np.linalg.norm(tree.positions[tree.main_tip(c)] - here)) for c in p),
        )
        rest = [c for c in tree.children[chest] if c not in arms]
        if not rest:
            continue
        named_head = [c for c in rest if any(tree.parsed[j].centre == "head" for j in tree.main_path(c))]
        neck = max(named_head or rest, key=lambda c: (tree.height(tree.main_tip(c)), tree.sizes[c], tree.names[c]))
        return chest, path[: path.index(chest)], arms, neck
    raise _fail(
        tree.skeleton,
        f"no chest: no joint along the spine from {tree.names[spine_root]!r} branches into two mirror arms and a neck",
    )


@dataclass
class _LimbChoice:
    """Parts of one limb as indices into its path, and why."""

    path: list[int]
    parts: dict[str, int]
    reasons: dict[str, str]


def _named_parts(tree: _Tree, path: Sequence[int], parts: Sequence[str]) -> dict[str, int] | None:
    """Parts of ``path`` by name: the most parts, in chain order, thigh and shin (upper arm and forearm) included."""
    essential = {"upper_arm", "lower_arm"} if parts == ARM_PARTS else {"upper_leg", "lower_leg"}
    candidates = [(k, tree.parsed[j].parts) for k, j in enumerate(path) if set(tree.parsed[j].parts) & set(parts)]
    candidates = candidates[:8]  # at most 3⁸ choices; real chains name four to six joints
    best: tuple[tuple[int, int, int], dict[str, int]] | None = None
    for choice in itertools.product(*[(None, *options) for _, options in candidates]):
        picked = [(k, part, options.index(part)) for (k, options), part in zip(candidates, choice, strict=True) if part]
        roles = [part for _, part, _ in picked]
        order = [parts.index(r) for r in roles]
        if len(set(roles)) != len(roles) or order != sorted(order) or not essential <= set(roles):
            continue
        score = (len(roles), -sum(rank for _, _, rank in picked), -sum(k for k, _, _ in picked))
        if best is None or score > best[0]:
            best = (score, {part: k for k, part, _ in picked})
    return None if best is None else best[1]


def _name_reason(tree: _Tree, joint: int, part: str) -> str:
    parsed = tree.parsed[joint]
    reason = f"name: {tree.names[joint]!r} = {_PART_NAMES[part]}"
    if len(parsed.parts) > 1:
        if parsed.core == "shoulder":
            why = "an upper-arm joint below it" if part == "clavicle" else "no upper-arm joint below it"
        else:
            why = "a thigh joint above it" if part == "lower_leg" else "no thigh joint above it"
        reason += f" ('{parsed.core}' means {_PART_NAMES[part]} here: {why})"
    return reason


def _complete(tree: _Tree, choice: _LimbChoice, kind: str) -> None:
    """Fill the parts that names or geometry left open from the stations next to the parts found.

    Outwards: the hand after the forearm; the foot after the shin, the toes after the foot. Inwards:
    the clavicle is the station before the upper arm. A filled part never passes a part already found.
    """
    stations = tree.stations(choice.path)
    outwards = ("lower_arm", "hand") if kind == "arm" else ("lower_leg", "foot", "toes")
    for inner, part in itertools.pairwise(outwards):
        if part in choice.parts or inner not in choice.parts:
            continue
        limit = min((k for k in choice.parts.values() if k > choice.parts[inner]), default=len(choice.path))
        later = [s for s in stations if choice.parts[inner] < s < limit]
        if later:
            choice.parts[part] = later[0]
            choice.reasons[part] = f"the next joint after the {_PART_NAMES[inner]}"
    if kind == "arm" and "clavicle" not in choice.parts:
        before = [s for s in stations if s < choice.parts["upper_arm"]]
        if before:
            choice.parts["clavicle"] = before[-1]
            choice.reasons["clavicle"] = "the joint between the chest and the upper arm"


def _longest_pair(lengths: Sequence[FloatArray]) -> FloatArray:
    """For each station ``i`` with a next one: bone ``i`` plus bone ``i + 1`` (0 past the end), summed over limbs."""
    return np.sum([seg + np.append(seg[1:], 0.0) for seg in lengths], axis=0)


def _geometric_parts(
    tree: _Tree, paths: tuple[list[int], list[int]], kind: str, hips: int, hip_width: float
) -> tuple[_LimbChoice, _LimbChoice]:
    """Upper and lower parts of a limb pair by geometry: one decision for both limbs when their chains match."""
    stations = [tree.stations(p) for p in paths]
    for path, st in zip(paths, stations, strict=True):
        if len(st) < 2:
            raise _fail(
                tree.skeleton,
                f"the {kind} starting at {tree.names[path[0]]!r} has all its joints at one position; a {kind} "
                "needs two (a joint and the one it bends at)",
            )
    bones = [
        np.linalg.norm(np.diff(tree.positions[[p[s] for s in st]], axis=0), axis=-1)
        for p, st in zip(paths, stations, strict=True)
    ]
    groups = [[0, 1]] if len(stations[0]) == len(stations[1]) else [[0], [1]]
    picks, reasons = [0, 0], ["", ""]
    for group in groups:
        if kind == "arm":
            threshold = SHOULDER_WIDTH_FACTOR * hip_width
            lateral = np.mean([[tree.lateral(paths[m][s], hips) for s in stations[m][:-1]] for m in group], axis=0)
            wide = np.nonzero(lateral >= threshold)[0]
        if kind == "arm" and wide.size:
            pick = int(wide[0])
            reason = (
                f"geometry: the first arm joint {lateral[pick]:.3g} from the midline, at least "
                f"{SHOULDER_WIDTH_FACTOR} × the hip joints' {hip_width:.3g}"
            )
        else:
            pick = int(np.argmax(_longest_pair([bones[m] for m in group])))
            reason = f"geometry: the two longest consecutive bones of the {kind} start here"
        for m in group:
            picks[m], reasons[m] = pick, reason
    upper, lower = ("upper_leg", "lower_leg") if kind == "leg" else ("upper_arm", "lower_arm")
    choices = [
        _LimbChoice(
            paths[m],
            {upper: stations[m][picks[m]], lower: stations[m][picks[m] + 1]},
            {upper: reasons[m], lower: f"the next joint after the {_PART_NAMES[upper]}"},
        )
        for m in range(2)
    ]
    return choices[0], choices[1]


def _limb_pair(
    tree: _Tree, branches: tuple[int, int], kind: str, hips: int, hip_width: float, notes: list[str]
) -> tuple[_LimbChoice, _LimbChoice]:
    """Parts of both limbs of a pair, the same way for both (by names when both are named)."""
    parts = LEG_PARTS if kind == "leg" else ARM_PARTS
    paths = (tree.main_path(branches[0]), tree.main_path(branches[1]))
    named = [_named_parts(tree, p, parts) for p in paths]
    if named[0] is not None and named[1] is not None:
        first, second = (
            _LimbChoice(p, dict(found), {part: _name_reason(tree, p[k], part) for part, k in found.items()})
            for p, found in ((paths[0], named[0]), (paths[1], named[1]))
        )
    else:
        if (named[0] is None) != (named[1] is None):
            lone = tree.names[paths[0 if named[0] is not None else 1][0]]
            notes.append(f"only the {kind} starting at {lone!r} is named as one: both {kind}s read by geometry")
        first, second = _geometric_parts(tree, paths, kind, hips, hip_width)
    for choice in (first, second):
        _complete(tree, choice, kind)
    common = set(first.parts) & set(second.parts)
    for choice in (first, second):
        for part in set(choice.parts) - common:
            notes.append(f"{_PART_NAMES[part]} {tree.names[choice.path[choice.parts[part]]]!r} has no mirror: unused")
            del choice.parts[part]
    return first, second


def _left_of(
    tree: _Tree, kind: str, pair: tuple[_LimbChoice, _LimbChoice], legs: tuple[_LimbChoice, _LimbChoice]
) -> tuple[int, str]:
    """Index (0 or 1) of the left limb of ``pair``, and why."""
    sides = []
    for choice in pair:
        named = [tree.parsed[choice.path[k]].side for k in choice.parts.values()]
        sides.append(next((s for s in named if s), None))
    if sorted(s or "" for s in sides) == ["l", "r"]:
        return sides.index("l"), "from the side words of their names"
    if not all("toes" in leg.parts and "foot" in leg.parts for leg in legs):
        starts = [tree.names[choice.path[0]] for choice in pair]
        raise SkeletonMismatchError(
            f"cannot tell left from right in this {tree.skeleton.num_joints}-joint skeleton: the {kind}s starting at "
            f"{starts} carry no side in their names and the feet have no toes to show which way the character "
            "faces; give the joint map by hand"
        )
    toes = np.array(
        [tree.positions[leg.path[leg.parts["toes"]]] - tree.positions[leg.path[leg.parts["foot"]]] for leg in legs]
    )
    forward = np.sum(toes - np.outer(toes @ tree.up, tree.up), axis=0)
    left_axis = vec_cross(tree.up, forward)
    scores = [float(tree.positions[c.path].mean(axis=0) @ left_axis) for c in pair]
    return int(np.argmax(scores)), "from geometry (the toes point forward; left is up × forward)"


def find_humanoid(skeleton: Skeleton, up: Any = UP) -> Humanoid:
    """Find the hips, spine, chest, neck, head, arms and legs of a biped (see the module docstring).

    Parameters
    ----------
    skeleton
        Any skeleton; its names, hierarchy and rest pose are read.
    up
        ``(3,)`` the up axis of the skeleton's model space (``+Y`` per docs/conventions.md; a
        glTF skeleton below a Z-up correction node has ``+Z``).

    A skeleton that carries its roles (:attr:`Skeleton.humanoid <engine.anim.skeleton.Skeleton.humanoid>`,
    a VRM file's humanoid bone map) gets those, whatever its joints are named; the spine and neck
    are the joints between them.

    Raises
    ------
    SkeletonMismatchError
        If the skeleton is not an upright biped, naming what was found (the Fox's hips with four
        limbs, a spine lying down), or if left cannot be told from right; for declared roles, if a
        required one is missing or they do not chain (the chest below the hips, and so on).
    """
    up = unit_vector(up, "up")
    if skeleton.humanoid:
        return _declared(skeleton, up)
    tree = _Tree(skeleton, up)
    names = tree.names
    hips, spine_root, leg_branches = _find_hips(tree)
    chest, spine_path, arm_branches, neck_branch = _find_chest(tree, spine_root)
    lean = _angle_degrees(tree.positions[chest] - tree.positions[hips], up)
    if lean > UPRIGHT_DEGREES:
        raise _fail(
            skeleton,
            f"the spine ({names[hips]!r} → {names[chest]!r}) is {lean:.0f}° from up {up.round(3).tolist()}, more "
            f"than {UPRIGHT_DEGREES:.0f}°: not upright (is `up` the skeleton's model-space up axis?)",
        )
    notes: list[str] = []
    legs = _limb_pair(tree, leg_branches, "leg", hips, 0.0, notes)
    for leg in legs:
        tip = leg.path[-1]
        tilt = _angle_degrees(tree.positions[tip] - tree.positions[hips], -up)
        if tilt > UPRIGHT_DEGREES:
            raise _fail(skeleton, f"the leg ending at {names[tip]!r} is {tilt:.0f}° from down: not a standing leg")
    hip_width = float(np.mean([tree.lateral(leg.path[leg.parts["upper_leg"]], hips) for leg in legs]))
    leg_length = float(np.mean([tree.height(hips) - tree.height(leg.path[-1]) for leg in legs]))
    arms = _limb_pair(tree, arm_branches, "arm", hips, max(hip_width, 0.05 * leg_length), notes)

    roles: dict[str, int] = {"hips": hips, "chest": chest}
    reasons: dict[str, str] = {
        "hips": f"hierarchy: the spine and two mirror legs ({names[leg_branches[0]]!r}, "
        f"{names[leg_branches[1]]!r}) meet here",
        "chest": f"hierarchy: the two mirror arms ({names[arm_branches[0]]!r}, {names[arm_branches[1]]!r}) and "
        "the neck branch off here",
    }
    for kind, pair in (("leg", legs), ("arm", arms)):
        left, why = _left_of(tree, kind, pair, legs)
        for k, choice in enumerate(pair):
            side = "l" if k == left else "r"
            for part, index in choice.parts.items():
                roles[f"{part}_{side}"] = choice.path[index]
                reasons[f"{part}_{side}"] = choice.reasons[part]
        notes.append(f"left and right {kind}s: {why}")
    neck_path = tree.main_path(neck_branch)
    named_head = [k for k, j in enumerate(neck_path) if tree.parsed[j].centre == "head"]
    branching = [k for k, j in enumerate(neck_path) if len(tree.children[j]) >= 2]
    if named_head:
        head_at = named_head[0]
        reasons["head"] = f"name: {names[neck_path[head_at]]!r} on the neck branch"
    elif branching:
        head_at = branching[0]
        reasons["head"] = "hierarchy: the first joint of the neck branch that branches (eyes, jaw)"
    else:
        head_at = max(k for k, j in enumerate(neck_path) if not tree.parsed[j].helper or k == 0)
        reasons["head"] = "hierarchy: the last joint of the neck branch"
    roles["head"] = neck_path[head_at]
    neck = tuple(neck_path[:head_at])
    if neck:
        roles["neck"] = neck[0]
        reasons["neck"] = "hierarchy: the first joint of the neck branch, below the head"
    span = tree.height(chest) - tree.height(hips)
    heights = tuple((tree.height(j) - tree.height(hips)) / span for j in spine_path)
    return Humanoid(
        skeleton=skeleton,
        roles=MappingProxyType(roles),
        spine=tuple(spine_path),
        spine_heights=heights,
        neck=neck,
        reasons=MappingProxyType(reasons),
        notes=tuple(notes),
    )
