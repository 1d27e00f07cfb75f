"""Mirroring motion left for right: which joint is whose mirror, and the mirrored pose, exactly.

**The joint map** (:func:`mirror_joints`): a joint whose name holds a side marker (``Left``/``Right``,
``left``/``right``, ``L``/``R``, ``l``/``r``) pairs with the joint named the same with the other
marker (``LeftHandIndex1`` ↔ ``RightHandIndex1``, ``lThigh`` ↔ ``rThigh``, ``upper_arm_l`` ↔
``upper_arm_r``, ``lhand`` ↔ ``rhand``); other joints are their own mirror. Limbs that
:func:`~engine.anim.humanoid.find_humanoid` finds but names do not pair (an unnamed rig) are
paired by hierarchy: the two limbs' subtrees joint by joint, and the joints above them up to
where they meet. The map must swap every left role of the humanoid for its right one, be its own
inverse, and keep the hierarchy (the mirror of a joint's parent is the parent of its mirror),
else :class:`~engine.errors.SkeletonMismatchError` names the joint.

**The pose** (:func:`mirror_pose`): the motion reflected through the plane of the skeleton's
rest midline, ``S = I − 2nnᵀ`` with ``n`` the rest left axis (through the model origin), with
joint ``j``'s motion played by its mirror ``m``. Model-space positions are exactly reflected,
``p'_m = S p_j``, and each joint's rotation change from rest is reflected, ``R'_m = S R_j
R⁰_jᵀ S R⁰_m`` (``R⁰`` the rest model rotations), so a rig whose left and right joint frames
differ (most glTF rigs) mirrors as well as one with identity rest rotations (BVH). In local
terms, with the proper rotations ``P_j = −R⁰_jᵀ S R⁰_m`` (``P = π`` about ``n`` above a root):

    q'_m = P_{parent(j)}⁻¹ · q_j · P_j          t'_m = −P_{parent(j)}⁻¹ t_j          s'_m = s_j

Scales are copied, which is exact for uniform scales.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from engine.anim.humanoid import ARM_PARTS, LEG_PARTS, SIDES, Humanoid, find_humanoid
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import SkeletonMismatchError
from engine.math import matrix_from_quat, quat_conjugate, quat_from_matrix, quat_multiply, quat_rotate, trusted
from engine.math._checks import FloatArray, IntArray, readonly_copy
from engine.motion_matching.kinematics import model_rotations

#: Side markers (left, right); each is tried at every place it occurs in a name.
_MARKERS = (("Left", "Right"), ("left", "right"), ("LEFT", "RIGHT"), ("L", "R"), ("l", "r"))
_SWAPS = {**dict(_MARKERS), **{right: left for left, right in _MARKERS}}
_MARKER = re.compile("|".join(sorted(map(re.escape, _SWAPS), key=len, reverse=True)))


def _named_pairs(skeleton: Skeleton) -> dict[int, int]:
    """Joint → mirror joint, for joints whose name with one side marker swapped names another joint."""
    index = {name: j for j, name in enumerate(skeleton.names)}
    pairs: dict[int, int] = {}
    for j, name in enumerate(skeleton.names):
        found = {
            index[swapped]
            for match in _MARKER.finditer(name)
            if (swapped := name[: match.start()] + _SWAPS[match.group()] + name[match.end() :]) in index
        }
        found.discard(j)
        if len(found) == 1:
            pairs[j] = found.pop()
    return {j: m for j, m in pairs.items() if pairs.get(m) == j}


def _limb_pairs(skeleton: Skeleton, body: Humanoid, kind: str) -> dict[int, int]:
    """Both limbs of ``kind`` paired by hierarchy: subtrees in index order, then the chains above them."""
    starts = [(body.arm(s) if kind == "arm" else body.leg(s)).path[0] for s in SIDES]
    subtrees = [skeleton.subtree(s) for s in starts]
    if subtrees[0].size != subtrees[1].size:
        return {}
    pairs = {int(a): int(b) for a, b in zip(*subtrees, strict=True)}
    a, b = (int(skeleton.parents[s]) for s in starts)
    while a != b and a >= 0 and b >= 0:  # up to the joint both limbs hang from
        pairs[a] = b
        a, b = int(skeleton.parents[a]), int(skeleton.parents[b])
    return {**pairs, **{v: k for k, v in pairs.items()}}


def mirror_joints(skeleton: Skeleton, body: Humanoid | None = None) -> IntArray:
    """``(J,)`` the mirror of each joint (see the module docstring); ``body`` defaults to ``find_humanoid``."""
    body = find_humanoid(skeleton) if body is None else body
    mirror = np.arange(skeleton.num_joints)
    for j, m in _named_pairs(skeleton).items():
        mirror[j] = m
    for kind in ("arm", "leg"):
        parts = ARM_PARTS if kind == "arm" else LEG_PARTS
        roles = [r for r in body.roles if r.endswith("_l") and r[:-2] in parts]
        if all(mirror[body.roles[r]] == body.roles.get(r[:-2] + "_r", -1) for r in roles):
            continue
        for j, m in _limb_pairs(skeleton, body, kind).items():
            mirror[j] = m
    names = skeleton.names
    for role, j in body.roles.items():
        if role.endswith("_l") and mirror[j] != body.roles.get(role[:-2] + "_r"):
            raise SkeletonMismatchError(
                f"cannot mirror this skeleton: the left {role[:-2]} {names[j]!r} has no mirror on the right "
                f"(found {names[mirror[j]]!r})"
            )
    for j in range(skeleton.num_joints):
        parent, m = int(skeleton.parents[j]), int(mirror[j])
        if mirror[m] != j:
            raise SkeletonMismatchError(f"cannot mirror this skeleton: {names[j]!r} ↔ {names[m]!r} is not mutual")
        mirrored_parent = -1 if parent < 0 else int(mirror[parent])
        if int(skeleton.parents[m]) != mirrored_parent:
            raise SkeletonMismatchError(
                f"cannot mirror this skeleton: the mirror of {names[j]!r} is {names[m]!r}, whose parent is not "
                f"the mirror of {names[j]!r}'s parent"
            )
    return readonly_copy(mirror)


@dataclass(frozen=True, eq=False)
class MirrorPlan:
    """Everything :func:`mirror_pose` needs for one skeleton; build with :func:`plan_mirror`.

    Attributes
    ----------
    skeleton
        The skeleton mirrored.
    joints
        ``(J,)`` each joint's mirror (:func:`mirror_joints`).
    normal
        ``(3,)`` the mirror plane's unit normal (the rest left axis), through the model origin.
    """

    skeleton: Skeleton
    joints: IntArray
    normal: FloatArray
    _inner: FloatArray  # (J, 4): P_j
    _outer: FloatArray  # (J, 4): P_{parent(j)}⁻¹ (P of the reflection itself above a root)


def plan_mirror(skeleton: Skeleton, normal: FloatArray, body: Humanoid | None = None) -> MirrorPlan:
    """Precompute the mirror of ``skeleton`` through the plane with unit ``normal`` ``(3,)`` at the origin."""
    joints = mirror_joints(skeleton, body)
    reflection = np.eye(3) - 2.0 * np.outer(normal, normal)
    with trusted():
        rest = model_rotations(skeleton, skeleton.rest_rotations)
        basis = matrix_from_quat(rest)
        proper = -np.swapaxes(basis, -1, -2) @ reflection @ basis[joints]  # P_j = −R⁰_jᵀ S R⁰_m
        inner = quat_from_matrix(proper)
        half_turn = np.append(normal, 0.0)  # π about n: the proper part of −S
        parents = skeleton.parents
        outer = quat_conjugate(np.where((parents >= 0)[:, None], inner[np.maximum(parents, 0)], half_turn))
    return MirrorPlan(skeleton, joints, readonly_copy(normal), readonly_copy(inner), readonly_copy(outer))


def mirror_pose(plan: MirrorPlan, pose: Pose) -> Pose:
    """The mirror image of a local pose ``(..., J)`` of ``plan.skeleton`` (module docstring)."""
    if pose.num_joints != plan.skeleton.num_joints:
        raise SkeletonMismatchError(
            f"pose has {pose.num_joints} joints but the mirrored skeleton has {plan.skeleton.num_joints}"
        )
    with trusted():  # each joint's motion transformed by its own constants ...
        rotations = quat_multiply(quat_multiply(plan._outer, pose.rotations), plan._inner)
        translations = -quat_rotate(plan._outer, pose.translations)
    mirror = plan.joints  # ... then played by its mirror: out[m] = f(in[mirror[m]]) (an involution)
    return Pose(translations[..., mirror, :], rotations[..., mirror, :], pose.scales[..., mirror, :].copy())
