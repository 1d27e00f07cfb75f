"""Humanoid detection: which joints of a skeleton are the hips, spine, chest, neck, head, arms and legs.

:func:`find_humanoid` reads a skeleton's hierarchy, joint names and rest pose and returns a
:class:`Humanoid`: one joint per role (:data:`ROLES`), the spine and neck chains, and, for every
role, the reason it was chosen (:meth:`Humanoid.report` prints them for ``ossa retarget``).

How it decides
--------------
1. **Topology.** The hips are the shallowest joint with a *mirror pair* of children (two limbs of
   two or more joints with the same subtree shape, standing below it: each within
   :data:`UPRIGHT_DEGREES` of down) and a larger third child, the spine. The chest is the first
   joint along the spine with another mirror pair (the arms); the neck is its remaining child that
   reaches highest (or holds a joint named ``head``). Helper joints (twist, roll, end, IK pole
   and target joints) do not count in the shapes compared. A pair that does not stand (an IK
   rig's feet lying beside its root bone, RobotExpressive's ``Foot.L``/``Foot.R`` under ``Bone``)
   is no pair of legs: the search goes on below.
2. **Limb parts, per limb, by name** (:func:`~engine.anim.joint_names.parse_joint_name`: side
   words, rig prefixes and numbers dropped, one vocabulary for CMU/BVH, Mixamo, Blender/Rigify,
   Unreal, VRM, Daz and 3ds Max names). Words that mean different bones in different schemes are
   resolved by the chain they sit in, never by guessing a scheme: ``shoulder`` is the clavicle
   when a joint below it is named as the upper arm (CMU cgspeed ``LeftShoulder → LeftArm``,
   Mixamo, VRM ``leftShoulder → leftUpperArm``, Rigify) and the upper arm otherwise (Biovision
   ``LeftCollar → LeftShoulder → LeftElbow``); ``leg`` is the shin below a thigh (``LeftUpLeg →
   LeftLeg``) and the thigh above a shin (``LeftLeg → LeftShin``). Twist, roll, end and helper
   joints (``upperarm_twist_01_l``, ``LeftToe_End``) take no part.
3. **Limb parts by geometry**, when the names of either limb of a pair say nothing. Joints at the
   same rest position along a chain are one *station* (CMU's zero-length ``LeftShoulder``,
   ``LeftFingerBase``); a part is the first joint of its station. Legs: the thigh and shin are the
   two consecutive stations with the longest summed bone length. Arms: the upper arm is the first
   station at least :data:`~engine.anim.humanoid_limbs.SHOULDER_WIDTH_FACTOR` × the hip joints'
   distance from the body's vertical midline (a clavicle starts at the sternum, an upper arm at
   the shoulder); a station before it is the clavicle. The next stations are forearm and hand
   (shin and foot); the toes are the lowest joint after the foot, where it meets the ground.
4. **Left and right**, symmetric by construction: both limbs of a pair go through the same code
   (geometric choices are made once for the pair, from both limbs' numbers), and only at the end
   one comparison names one limb left: by the side words of their names, else by geometry (toes
   point forward; the character's left is ``up × forward``).
5. **Detached feet.** An IK rig may hang its feet outside the legs' chains (RobotExpressive's
   ``Foot.L`` is a child of the root bone, positioned by the animation at the end of the shin). A
   joint named as a side's foot, outside that leg's chain, at the leg's foot joint (or the shin's
   end) in the rest pose is :attr:`Humanoid.detached`: it stands for the foot, and a retarget
   places it on the leg's foot every frame.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.anim.humanoid_limbs import LimbChoice, RigTree, left_of, limb_pair, not_humanoid, rest_positions
from engine.anim.joint_names import ARM_PARTS, LEG_PARTS, PART_NAMES, JointName, name_side, parse_joint_name
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import vec_normalize
from engine.math._checks import FloatArray, IntArray, as_array

__all__ = [
    "ARM_PARTS",
    "LEG_PARTS",
    "ROLES",
    "SIDES",
    "UP",
    "UPRIGHT_DEGREES",
    "Humanoid",
    "JointName",
    "Limb",
    "find_humanoid",
    "name_side",
    "parse_joint_name",
    "rest_positions",
    "unit_vector",
]

#: The model-space up axis assumed when none is given (docs/conventions.md: +Y up).
UP = (0.0, 1.0, 0.0)
#: The two sides, the character's own left and right.
SIDES = ("l", "r")
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
#: A detached foot stands within this fraction of the leg's length of the leg's foot joint.
DETACHED_FOOT_DISTANCE = 0.1


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
    detached
        ``"foot_l"``/``"foot_r"`` → a joint outside the leg's chain that stands for the foot
        (module docstring, point 5); it follows ``roles`` of the same name (or the shin, when the
        chain has no foot joint): :meth:`anchor` says which.
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
    detached: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def arm(self, side: str) -> Limb:
        """The arm on ``side`` (``"l"`` or ``"r"``)."""
        return self._limb("arm", ARM_PARTS, side)

    def leg(self, side: str) -> Limb:
        """The leg on ``side`` (``"l"`` or ``"r"``): thigh, shin, then foot and toes when found."""
        return self._limb("leg", LEG_PARTS, side)

    def head_chain(self) -> tuple[int, ...]:
        """``neck joints…, head`` (for look-at): the joints from above the chest to the head."""
        return (*self.neck, self.roles["head"])

    def anchor(self, role: str) -> int:
        """The joint of the leg's chain that the detached ``role`` (``"foot_l"``/``"foot_r"``) stands on."""
        side = role[-1]
        return self.roles.get(role, self.roles[f"lower_leg_{side}"])

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
        raise not_humanoid(skeleton, f"the declared humanoid roles {unknown} are not roles of {list(ROLES)}")
    missing = [role for role in DECLARED_REQUIRED if role not in declared]
    if missing:
        raise not_humanoid(skeleton, f"the declared humanoid roles lack {missing}")
    roles = {role: skeleton.index(name) for role, name in declared.items()}

    def below(upper: str, lower: str) -> IntArray:
        try:
            return skeleton.chain(roles[upper], roles[lower])
        except SkeletonMismatchError:
            problem = f"the declared {lower} {declared[lower]!r} is not below the declared {upper} {declared[upper]!r}"
            raise not_humanoid(skeleton, problem) from None

    spine = tuple(int(j) for j in below("hips", "chest")[1:-1])
    neck = tuple(int(j) for j in below("chest", "head")[1:-1])
    if "neck" in roles and roles["neck"] not in neck:
        raise not_humanoid(skeleton, f"the declared neck {declared['neck']!r} is not between the chest and the head")
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


def _angle_degrees(a: FloatArray, b: FloatArray) -> float:
    cos = a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-300)
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))))


def _find_hips(tree: RigTree) -> tuple[int, int, tuple[int, int]]:
    """``(hips, spine root, (leg, leg))``.

    The legs are the shallowest mirror pair of children (:meth:`RigTree.mirror_pairs`) standing
    below their parent: each leg's end within :data:`UPRIGHT_DEGREES` of down from it. The hips
    are that parent when it has another child larger than a leg (the spine), else the parent's
    parent when that has one: Daz Genesis hangs the legs from a ``pelvis`` below the ``hip`` the
    spine starts from. When no pair stands, the first pair that reaches up (a wrong up axis) or
    lies (an IK rig's feet beside its root) says why.
    """
    skeleton = tree.skeleton
    refused: str | None = None
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
                refused = refused or (
                    f"the legs {tree.names[a]!r} and {tree.names[b]!r} do not reach below {tree.names[j]!r} along "
                    f"up {tree.up.round(3).tolist()}: not upright (is `up` the skeleton's model-space up axis?)"
                )
                continue
            ends = [tree.main_path(c)[-1] for c in (a, b)]
            tilts = [_angle_degrees(tree.positions[end] - tree.positions[hips], -tree.up) for end in ends]
            if max(tilts) > UPRIGHT_DEGREES:
                end = ends[int(np.argmax(tilts))]
                refused = refused or (
                    f"the leg ending at {tree.names[end]!r} is {max(tilts):.0f}° from down: not a standing leg"
                )
                continue
            return hips, max(spine, key=lambda c: (tree.sizes[c], tree.names[c])), (a, b)
    if refused is not None:
        raise not_humanoid(skeleton, refused)
    limbs = {j: [c for c in tree.children[j] if tree.sizes[c] >= 2] for j in range(skeleton.num_joints)}
    busiest = max(range(skeleton.num_joints), key=lambda j: (len(limbs[j]), -j), default=None)
    if busiest is None or len(limbs[busiest]) < 3:
        raise not_humanoid(
            skeleton, "no joint where a spine and two legs meet (no joint has three limbs of two or more joints)"
        )
    found = ", ".join(tree.names[c] for c in limbs[busiest])
    raise not_humanoid(
        skeleton,
        f"joint {tree.names[busiest]!r} has {len(limbs[busiest])} limbs ({found}) but no two of them are mirror "
        "images with a larger spine beside them; a biped's hips have a spine and two legs",
    )


def _find_chest(tree: RigTree, spine_root: int) -> tuple[int, list[int], tuple[int, int], int]:
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
    raise not_humanoid(
        tree.skeleton,
        f"no chest: no joint along the spine from {tree.names[spine_root]!r} branches into two mirror arms and a neck",
    )


def _detached_feet(
    tree: RigTree, legs: dict[str, LimbChoice], roles: Mapping[str, int], notes: list[str]
) -> dict[str, int]:
    """``foot_l``/``foot_r`` → a joint named as that side's foot outside the leg, standing on it (module docstring)."""
    found: dict[str, int] = {}
    for side, leg in legs.items():
        anchor = roles.get(f"foot_{side}", roles[f"lower_leg_{side}"])
        length = float(np.linalg.norm(tree.positions[roles[f"upper_leg_{side}"]] - tree.positions[anchor]))
        inside = set(leg.path) | set(tree.skeleton.subtree(leg.path[0]).tolist())
        named = [
            j
            for j, parsed in enumerate(tree.parsed)
            if parsed.side == side and "foot" in parsed.parts and j not in inside
        ]
        near = [
            j
            for j in named
            if np.linalg.norm(tree.positions[j] - tree.positions[anchor]) <= DETACHED_FOOT_DISTANCE * length
        ]
        if near and tree.parsed[anchor].parts[:1] != ("foot",):
            joint = min(near, key=lambda j: (int(tree.skeleton.depths[j]), j))
            parent = int(tree.skeleton.parents[joint])
            above = repr(tree.names[parent]) if parent >= 0 else "no parent"
            found[f"foot_{side}"] = joint
            notes.append(
                f"detached foot_{side}: {tree.names[joint]!r} is named a {PART_NAMES['foot']} and stands at the "
                f"leg's end outside it (under {above}): it follows {tree.names[anchor]!r}"
            )
    return found


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
    tree = RigTree(skeleton, up)
    names = tree.names
    hips, spine_root, leg_branches = _find_hips(tree)
    chest, spine_path, arm_branches, neck_branch = _find_chest(tree, spine_root)
    lean = _angle_degrees(tree.positions[chest] - tree.positions[hips], up)
    if lean > UPRIGHT_DEGREES:
        raise not_humanoid(
            skeleton,
            f"the spine ({names[hips]!r} → {names[chest]!r}) is {lean:.0f}° from up {up.round(3).tolist()}, more "
            f"than {UPRIGHT_DEGREES:.0f}°: not upright (is `up` the skeleton's model-space up axis?)",
        )
    notes: list[str] = []
    legs = limb_pair(tree, leg_branches, "leg", hips, 0.0, notes)
    hip_width = float(np.mean([tree.lateral(leg.path[leg.parts["upper_leg"]], hips) for leg in legs]))
    leg_length = float(np.mean([tree.height(hips) - tree.height(leg.path[-1]) for leg in legs]))
    arms = limb_pair(tree, arm_branches, "arm", hips, max(hip_width, 0.05 * leg_length), notes)

    roles: dict[str, int] = {"hips": hips, "chest": chest}
    reasons: dict[str, str] = {
        "hips": f"hierarchy: the spine and two mirror legs ({names[leg_branches[0]]!r}, "
        f"{names[leg_branches[1]]!r}) meet here",
        "chest": f"hierarchy: the two mirror arms ({names[arm_branches[0]]!r}, {names[arm_branches[1]]!r}) and "
        "the neck branch off here",
    }
    sided: dict[str, LimbChoice] = {}
    for kind, pair in (("leg", legs), ("arm", arms)):
        left, why = left_of(tree, kind, pair, legs)
        for k, choice in enumerate(pair):
            side = "l" if k == left else "r"
            if kind == "leg":
                sided[side] = choice
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
    detached = _detached_feet(tree, sided, roles, notes)
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
        detached=MappingProxyType(detached),
    )
