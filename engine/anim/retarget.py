"""Retargeting: play one skeleton's motion on another with different proportions and joint frames.

Three steps, split as ozz splits offline from runtime work:

1. **Map joints.** A ``joint_map`` ``{source name: target name}`` says which target joint follows
   which source joint. :func:`propose_joint_map` proposes one (an ordinary dict the user may edit)
   by finding the humanoid body parts of both skeletons from their hierarchy and rest pose, then
   adding joints whose normalised names are equal. A skeleton that is not an upright biped (the
   Fox: four legs and a tail) raises :class:`~engine.errors.SkeletonMismatchError` saying what was
   found, rather than proposing a map that would mangle the pose.
2. **Plan** (:func:`plan_retarget`, once per skeleton pair): validate the map (names exist, one
   target per source, ancestors map to ancestors), then precompute everything the per-frame
   step needs: the rotation taking source model axes to target model axes, the root scale
   (leg-length ratio) and per joint a constant quaternion.
3. **Transfer** (:func:`retarget_pose` per batch of frames or characters, :func:`retarget_clip`
   for a whole clip). Each mapped target joint receives the source joint's rotation **change from
   its rest pose, in model space**:

   ``G_t = C · (G_s · R_s⁻¹) · C⁻¹ · A_t · R_t``

   with ``G`` model-space rotations, ``R`` rest model-space rotations, ``C`` the source-to-target
   axis alignment and ``A_t`` an optional rest-pose correction (below). Because only the change
   from rest travels, the joints' own frames (how each rig orients its bones) do not matter and
   bone lengths stay the target's. The root's model-space position is scaled about the model
   origin by the leg-length ratio (both origins are taken to be on the ground under the character,
   as mocap takes and glTF characters place them). Unmapped target joints keep their rest local
   rotation (they follow their parent).

Rest-pose correction (``align_bones=True``): when the two rest poses differ (a T-pose mocap
skeleton, an A-pose character), each mapped joint with exactly one mapped child is first turned,
along the shortest arc, so that its bone points where the source bone points in the source's rest
pose. Skeletons whose rest shapes agree get ``A_t = identity``.

The rotation composition assumes uniform joint scales (rest scales are copied to the output).

Examples
--------
>>> import numpy as np
>>> from engine.anim import Skeleton
>>> legs = [(0, 1, 0), (0.1, 0, 0), (0, -0.45, 0), (0, -0.45, 0), (-0.1, 0, 0), (0, -0.45, 0), (0, -0.45, 0)]
>>> names = ["hips", "l_thigh", "l_shin", "l_foot", "r_thigh", "r_shin", "r_foot"]
>>> small = Skeleton(names, [-1, 0, 1, 2, 0, 4, 5], np.array(legs))
>>> big = Skeleton(names, [-1, 0, 1, 2, 0, 4, 5], 2 * np.array(legs))
>>> plan = plan_retarget(small, big, {n: n for n in names})
>>> plan.root_scale
2.0
>>> pose = small.rest_pose
>>> retarget_pose(plan, pose).translations[0]  # the hips, twice as high
array([0., 2., 0.])
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.local_to_model import local_to_model, model_from_pose
from engine.anim.pose import Pose
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, trusted
from engine.math.mat import affine_inverse, transform_points
from engine.math.quat import (
    check_unit,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_matrix,
    quat_identity,
    quat_multiply,
    quat_rotate,
    unflip,
)
from engine.math.vec import any_perpendicular, vec_cross, vec_normalize

UP = (0.0, 1.0, 0.0)

#: Body parts :func:`find_humanoid` looks for (``_l``/``_r``: the character's own left/right).
ROLES = (
    "hips",
    "chest",
    "neck",
    "head",
    *(f"{part}_{side}" for side in "lr" for part in ("clavicle", "upper_arm", "lower_arm", "hand")),
    *(f"{part}_{side}" for side in "lr" for part in ("upper_leg", "lower_leg", "foot", "toes")),
)

#: Largest angle between the hips→chest direction and up (or hips→foot and down) of a humanoid.
UPRIGHT_DEGREES = 45.0


@dataclass(frozen=True)
class Humanoid:
    """Body parts found in a skeleton by :func:`find_humanoid`.

    Attributes
    ----------
    roles
        Role name (from :data:`ROLES`) → joint index; roles a skeleton lacks (a clavicle, toes,
        a neck) are absent.
    spine
        Joints strictly between the hips and the chest, bottom-up.
    spine_heights
        For each of ``spine``, its height between hips (0) and chest (1) along up.
    """

    roles: dict[str, int]
    spine: tuple[int, ...]
    spine_heights: tuple[float, ...]


def _unit(vector: Any, name: str) -> FloatArray:
    v = as_array(vector, name, (3,))
    if v.shape != (3,):
        raise InvalidInputError(f"{name} must be one 3-vector, got shape {v.shape}")
    return vec_normalize(v, name)


def _rest_model(skeleton: Skeleton) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Rest model matrices ``(J, 4, 4)``, rotations ``(J, 4)`` and positions ``(J, 3)``."""
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    return model, _rotations_of(model), model[:, :3, 3].copy()


def _rotations_of(model: FloatArray) -> FloatArray:
    """Unit quaternions of the rotation part of affine matrices ``(..., 4, 4)`` (scale divided out)."""
    basis = model[..., :3, :3]
    return quat_from_matrix(basis / np.linalg.norm(basis, axis=-2, keepdims=True))


def _arc(u: FloatArray, v: FloatArray) -> FloatArray:
    """Shortest-arc unit quaternions turning directions ``u`` onto ``v`` (both ``(..., 3)``, non-zero)."""
    u = u / np.linalg.norm(u, axis=-1, keepdims=True)
    v = v / np.linalg.norm(v, axis=-1, keepdims=True)
    q = np.concatenate((vec_cross(u, v), 1.0 + np.sum(u * v, axis=-1, keepdims=True)), axis=-1)
    opposite = q[..., 3] < 1e-12
    if np.any(opposite):  # half turn: any axis perpendicular to u
        q[opposite] = np.concatenate((any_perpendicular(u[opposite]), np.zeros((int(opposite.sum()), 1))), axis=-1)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def _children(skeleton: Skeleton) -> list[list[int]]:
    children: list[list[int]] = [[] for _ in range(skeleton.num_joints)]
    for j, parent in enumerate(skeleton.parents):
        if parent >= 0:
            children[int(parent)].append(j)
    return children


def _subtree_sizes(skeleton: Skeleton) -> IntArray:
    sizes = np.ones(skeleton.num_joints, dtype=np.intp)
    for j in range(skeleton.num_joints - 1, 0, -1):  # build time: children after parents
        if skeleton.parents[j] >= 0:
            sizes[skeleton.parents[j]] += sizes[j]
    return sizes


def _main_path(start: int, children: list[list[int]], sizes: IntArray) -> list[int]:
    """``start`` and then, repeatedly, the child with the largest subtree, down to a leaf."""
    path = [start]
    while children[path[-1]]:
        path.append(max(children[path[-1]], key=lambda c: sizes[c]))
    return path


_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_side(name: str) -> str | None:
    """``"l"`` or ``"r"`` when a word of ``name`` marks a side, else ``None``.

    Words are split at case changes, digits and punctuation, so ``lThigh``, ``LeftUpLeg``,
    ``upper_arm_l``, ``Bip01 L Foot`` and ``thigh.L`` are all left.
    """
    words = {w.lower() for w in _WORDS.findall(name)}
    left, right = bool(words & {"l", "left"}), bool(words & {"r", "right"})
    return "l" if left and not right else "r" if right and not left else None


def _limb_roles(path: list[int], positions: FloatArray, arm: bool) -> dict[str, int]:
    """Upper, lower and end joints of a limb: the two consecutive longest segments of its path."""
    lengths = np.linalg.norm(np.diff(positions[path], axis=0), axis=-1)
    i = int(np.argmax(lengths[:-1] + lengths[1:]))
    if arm:
        roles = {"upper_arm": path[i], "lower_arm": path[i + 1], "hand": path[i + 2]}
        if i >= 1:
            roles["clavicle"] = path[i - 1]
        return roles
    roles = {"upper_leg": path[i], "lower_leg": path[i + 1], "foot": path[i + 2]}
    if i + 3 < len(path):
        roles["toes"] = path[i + 3]
    return roles


def find_humanoid(skeleton: Skeleton, up: Any = UP) -> Humanoid:
    """Find the hips, spine, chest, neck, head, arms and legs of a biped from its rest pose.

    The hips are the first joint where three limbs (children with two or more joints) meet: the
    spine (the largest) and two legs; the chest is the first joint along the spine with three or
    more children: the neck (pointing most along ``up``) and the two longest other branches, the
    arms. Along each limb path the two longest consecutive bones are upper arm and forearm (thigh
    and shin). Left and right come from the names (``l``/``left``/``r``/``right`` words) or, for
    unnamed rigs, from the feet: toes point forward and the left is ``up × forward``.

    Parameters
    ----------
    skeleton
        Any skeleton; its rest pose is read.
    up
        ``(3,)`` the up axis of the skeleton's model space (``+Y`` per docs/conventions.md; a
        glTF skeleton below a Z-up correction node has ``+Z``).

    Raises
    ------
    SkeletonMismatchError
        If the skeleton is not an upright biped, naming what was found (for example the Fox's hips
        with four limbs: spine, tail and two legs).
    """
    up = _unit(up, "up")
    _, _, positions = _rest_model(skeleton)
    names = skeleton.names
    children = _children(skeleton)
    sizes = _subtree_sizes(skeleton)

    def limbs(j: int) -> list[int]:
        return [c for c in children[j] if sizes[c] >= 2]

    def fail(problem: str) -> SkeletonMismatchError:
        return SkeletonMismatchError(f"not a humanoid skeleton ({skeleton.num_joints} joints): {problem}")

    hips = next((j for j in range(skeleton.num_joints) if len(limbs(j)) >= 3), None)
    if hips is None:
        raise fail("no joint where a spine and two legs meet (no joint has three limbs of two or more joints)")
    if len(limbs(hips)) != 3:
        found = ", ".join(names[c] for c in limbs(hips))
        raise fail(
            f"joint {names[hips]!r} has {len(limbs(hips))} limbs ({found}); a biped's hips have 3: a spine and two legs"
        )
    spine_root, *legs = sorted(limbs(hips), key=lambda c: -sizes[c])
    spine_path = _main_path(spine_root, children, sizes)
    chest = next((j for j in spine_path if len(children[j]) >= 3), None)
    if chest is None:
        raise fail(f"no chest: no joint along the spine from {names[spine_root]!r} branches into a neck and two arms")

    def angle(a: FloatArray, b: FloatArray) -> float:
        return float(np.degrees(np.arccos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1.0, 1.0))))

    leg_paths = [_main_path(leg, children, sizes) for leg in legs]
    lean = angle(positions[chest] - positions[hips], up)
    if lean > UPRIGHT_DEGREES:
        raise fail(
            f"the spine ({names[hips]!r} → {names[chest]!r}) is {lean:.0f}° from up {up.round(3).tolist()}, more "
            f"than {UPRIGHT_DEGREES:.0f}°: not upright (is `up` the skeleton's model-space up axis?)"
        )
    for path in leg_paths:
        if len(path) < 3:
            raise fail(
                f"the leg starting at {names[path[0]]!r} has {len(path)} joints; a leg needs 3 (hip, knee, ankle)"
            )
        tilt = angle(positions[path[-1]] - positions[hips], -up)
        if tilt > UPRIGHT_DEGREES:
            raise fail(f"the leg ending at {names[path[-1]]!r} is {tilt:.0f}° from down: not a standing leg")

    branches = children[chest]
    tips = [positions[_main_path(c, children, sizes)[-1]] - positions[chest] for c in branches]
    neck_branch = branches[int(np.argmax([t @ up / (np.linalg.norm(t) + 1e-300) for t in tips]))]
    arm_branches = sorted(
        (c for c in branches if c != neck_branch), key=lambda c: -len(_main_path(c, children, sizes))
    )[:2]
    arm_paths = [_main_path(c, children, sizes) for c in arm_branches]
    if len(arm_paths) < 2 or min(len(p) for p in arm_paths) < 3:
        raise fail(f"the chest {names[chest]!r} has no two arms of 3 or more joints (shoulder, elbow, wrist)")

    legs_roles = [_limb_roles(p, positions, arm=False) for p in leg_paths]
    arms_roles = [_limb_roles(p, positions, arm=True) for p in arm_paths]
    left_leg = _left_index(skeleton, leg_paths, positions, hips, up, legs_roles)
    left_arm = _left_index(skeleton, arm_paths, positions, hips, up, legs_roles)

    roles = {"hips": hips, "chest": chest}
    neck_path = _main_path(neck_branch, children, sizes)
    if len(neck_path) >= 2:
        roles["neck"], roles["head"] = neck_path[0], neck_path[1]
    else:
        roles["head"] = neck_path[0]
    for limbs_found, left in ((legs_roles, left_leg), (arms_roles, left_arm)):
        for k, limb in enumerate(limbs_found):
            side = "l" if k == left else "r"
            roles.update({f"{part}_{side}": j for part, j in limb.items()})
    spine = tuple(spine_path[: spine_path.index(chest)])
    span = (positions[chest] - positions[hips]) @ up
    heights = tuple(float((positions[j] - positions[hips]) @ up / span) for j in spine)
    return Humanoid(roles, spine, heights)


def _left_index(
    skeleton: Skeleton,
    paths: list[list[int]],
    positions: FloatArray,
    hips: int,
    up: FloatArray,
    legs_roles: list[dict[str, int]],
) -> int:
    """Which of two limbs is the left one: by name, else by geometry (toes point forward)."""
    sides = [next((s for s in map(name_side, (skeleton.names[j] for j in path)) if s), None) for path in paths]
    if sorted(s or "" for s in sides) == ["l", "r"]:
        return sides.index("l")
    if not all("toes" in leg for leg in legs_roles):
        raise SkeletonMismatchError(
            f"cannot tell left from right in this {skeleton.num_joints}-joint skeleton: the limbs starting at "
            f"{[skeleton.names[p[0]] for p in paths]} carry no side in their names and the feet have no toes to "
            "show which way the character faces; pass joint_map by hand"
        )
    toes = np.array([positions[leg["toes"]] - positions[leg["foot"]] for leg in legs_roles])
    forward = np.sum(toes - np.outer(toes @ up, up), axis=0)
    left_axis = vec_cross(up, forward)
    return int(np.argmax([(positions[path].mean(axis=0) - positions[hips]) @ left_axis for path in paths]))


def _normalised(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def propose_joint_map(
    source: Skeleton, target: Skeleton, *, source_up: Any = UP, target_up: Any = UP
) -> dict[str, str]:
    """Propose ``{source joint name: target joint name}`` for :func:`plan_retarget`.

    Both skeletons are searched for humanoid body parts (:func:`find_humanoid`); parts found in
    both are paired (hips, chest, neck, head, clavicles, arms, legs, toes) and the joints between
    hips and chest are paired by their relative height. Joints whose names are equal after
    lower-casing and dropping non-alphanumerics are added when that keeps ancestors mapping to
    ancestors (fingers of two rigs of one family, a copy of a rig). If either skeleton is not a
    humanoid, a map by equal names is returned when it covers at least half of the smaller
    skeleton; otherwise the error says why.

    Raises
    ------
    SkeletonMismatchError
        If no sensible map exists (a quadruped against a humanoid, rigs sharing no names).

    Examples
    --------
    >>> from engine.procedural.mannequin import build_skeleton
    >>> mannequin = build_skeleton()
    >>> proposal = propose_joint_map(mannequin, mannequin)
    >>> proposal["upper_leg_l"], len(proposal)
    ('upper_leg_l', 25)
    """
    names = _name_pairs(source, target)
    source_up, target_up = _unit(source_up, "source_up"), _unit(target_up, "target_up")
    try:
        found = find_humanoid(source, source_up), find_humanoid(target, target_up)
    except SkeletonMismatchError as exc:
        if 2 * len(names) >= min(source.num_joints, target.num_joints):
            return {source.names[s]: target.names[t] for s, t in names.items()}
        raise SkeletonMismatchError(
            f"cannot propose a joint map from {source} to {target}: {exc}. Pass joint_map by hand to map only "
            "what corresponds"
        ) from None
    src, tgt = found
    pairs = {src.roles[r]: tgt.roles[r] for r in ROLES if r in src.roles and r in tgt.roles}
    pairs.update(_spine_pairs(src, tgt))
    for s, t in names.items():
        if s not in pairs and t not in pairs.values():
            trial = {**pairs, s: t}
            if _hierarchy_problem(source, target, trial) is None:
                pairs = trial
    return {source.names[s]: target.names[t] for s, t in sorted(pairs.items())}


def _name_pairs(source: Skeleton, target: Skeleton) -> dict[int, int]:
    """Joints with equal normalised names, when the name is unique on both sides and order agrees."""
    wanted: dict[str, list[int]] = {}
    for j, name in enumerate(target.names):
        wanted.setdefault(_normalised(name), []).append(j)
    seen: dict[str, list[int]] = {}
    for j, name in enumerate(source.names):
        seen.setdefault(_normalised(name), []).append(j)
    pairs = {s[0]: wanted[key][0] for key, s in seen.items() if len(s) == 1 and len(wanted.get(key, [])) == 1}
    return pairs if _hierarchy_problem(source, target, pairs) is None else {}


def _spine_pairs(src: Humanoid, tgt: Humanoid) -> dict[int, int]:
    """Pair intermediate spine joints by relative height, in order, each joint at most once."""
    pairs: dict[int, int] = {}
    fewer, more = (src, tgt) if len(src.spine) <= len(tgt.spine) else (tgt, src)
    start = 0
    for joint, height in zip(fewer.spine, fewer.spine_heights, strict=True):
        if start >= len(more.spine):
            break
        k = start + int(np.argmin(np.abs(np.array(more.spine_heights[start:]) - height)))
        pair = (joint, more.spine[k]) if fewer is src else (more.spine[k], joint)
        pairs[pair[0]] = pair[1]
        start = k + 1
    return pairs


def _mapped_ancestors(skeleton: Skeleton, mapped: Sequence[int]) -> IntArray:
    """For each joint, its nearest ancestor in ``mapped`` (``-1`` when none)."""
    inside = np.zeros(skeleton.num_joints, dtype=bool)
    inside[list(mapped)] = True
    nearest = np.full(skeleton.num_joints, -1, dtype=np.intp)
    for j, parent in enumerate(skeleton.parents):  # build time: parents precede children
        if parent >= 0:
            nearest[j] = parent if inside[parent] else nearest[parent]
    return nearest


def _hierarchy_problem(source: Skeleton, target: Skeleton, pairs: Mapping[int, int]) -> str | None:
    """Why ``pairs`` (source → target index) does not keep ancestors mapping to ancestors, or ``None``."""
    if not pairs:
        return None
    src_up = _mapped_ancestors(source, list(pairs))
    tgt_up = _mapped_ancestors(target, list(pairs.values()))
    for s, t in pairs.items():
        expected = pairs[int(src_up[s])] if src_up[s] >= 0 else -1
        if expected != tgt_up[t]:
            above_s = repr(source.names[src_up[s]]) if src_up[s] >= 0 else "none"
            above_t = repr(target.names[tgt_up[t]]) if tgt_up[t] >= 0 else "none"
            return (
                f"{source.names[s]!r} → {target.names[t]!r}: the nearest mapped ancestor of {source.names[s]!r} is "
                f"{above_s} but that of {target.names[t]!r} is {above_t}"
            )
    return None


@dataclass(frozen=True, eq=False)
class RetargetPlan:
    """Everything :func:`retarget_pose` needs for one (source, target) pair; build with :func:`plan_retarget`.

    Attributes
    ----------
    source, target
        The two skeletons.
    joint_map
        ``{source name: target name}`` as validated.
    source_joints, target_joints
        ``(M,)`` the mapped pairs as joint indices, target-ordered.
    alignment
        ``(4,)`` unit quaternion ``C`` taking source model axes to target model axes.
    root_scale
        Factor applied to the root's model-space position (target leg length / source leg length).
    source_root, target_root
        The mapped pair above all others (the hips, usually): it carries the translation.
    """

    source: Skeleton
    target: Skeleton
    joint_map: dict[str, str]
    source_joints: IntArray
    target_joints: IntArray
    alignment: FloatArray
    root_scale: float
    source_root: int
    target_root: int
    _right: FloatArray
    _mapped_parents: IntArray
    _levels: tuple[tuple[IntArray, IntArray, IntArray, IntArray], ...]
    _root_parent_inverse: FloatArray


def _resolve(source: Skeleton, target: Skeleton, joint_map: Mapping[str, str]) -> dict[int, int]:
    if not isinstance(joint_map, Mapping) or not joint_map:
        raise InvalidInputError(f"joint_map must be a non-empty mapping of source to target names, got {joint_map!r}")
    unknown_s = sorted(set(joint_map) - set(source.names))
    unknown_t = sorted(set(joint_map.values()) - set(target.names))
    if unknown_s or unknown_t:
        raise SkeletonMismatchError(f"joint_map names joints that do not exist: source {unknown_s}, target {unknown_t}")
    seen: dict[str, str] = {}
    for s, t in joint_map.items():
        if t in seen:
            raise SkeletonMismatchError(f"joint_map sends both {seen[t]!r} and {s!r} to target joint {t!r}")
        seen[t] = s
    pairs = {source.index(s): target.index(t) for s, t in joint_map.items()}
    problem = _hierarchy_problem(source, target, pairs)
    if problem is not None:
        raise SkeletonMismatchError(f"joint_map breaks the hierarchy: {problem}")
    return pairs


def _estimate_alignment(
    src_pos: FloatArray, tgt_pos: FloatArray, source_up: FloatArray, target_up: FloatArray
) -> FloatArray:
    """Up onto up, then the turn about up that best matches the mapped rest positions (2-D Procrustes)."""
    tilt = _arc(source_up, target_up)
    a = quat_rotate(tilt, src_pos - src_pos.mean(axis=0))
    b = tgt_pos - tgt_pos.mean(axis=0)
    a -= np.outer(a @ target_up, target_up)
    b -= np.outer(b @ target_up, target_up)
    turn = np.arctan2(np.sum(vec_cross(a, b) @ target_up), np.sum(a * b))
    return quat_multiply(quat_from_axis_angle(target_up, turn), tilt)


def plan_retarget(
    source: Skeleton,
    target: Skeleton,
    joint_map: Mapping[str, str],
    *,
    source_up: Any = UP,
    target_up: Any = UP,
    alignment: Any | None = None,
    root_scale: float | None = None,
    align_bones: bool = True,
) -> RetargetPlan:
    """Validate ``joint_map`` and precompute the transfer from ``source`` to ``target``.

    Parameters
    ----------
    source, target
        The skeletons; their rest poses are the reference the rotation changes are measured from.
    joint_map
        ``{source joint name: target joint name}``; see :func:`propose_joint_map`. Nearest mapped
        ancestors must correspond, and exactly one mapped pair must be above all others.
    source_up, target_up
        ``(3,)`` up axis of each model space (``+Y`` per docs/conventions.md).
    alignment
        ``(4,)`` unit quaternion taking source model axes to target model axes. By default: up onto
        up, then the turn about up that best lines up the mapped joints' rest positions (so a
        character facing +X receives a +Z-facing take facing +X).
    root_scale
        Factor on the root's model-space position. By default the leg-length ratio, target over
        source: for humanoids (:func:`find_humanoid`) the rest height of the hips above the lowest
        leg joint, otherwise the rest height of the root pair above the lowest mapped joint.
    align_bones
        Turn the target's rest bones onto the source's rest bone directions first (see the module
        docstring); ``False`` transfers the changes onto the target's own rest pose unchanged.

    Raises
    ------
    SkeletonMismatchError
        Unknown names, two source joints on one target joint, a map that breaks the hierarchy, or
        several unrelated top pairs.
    InvalidInputError
        An empty map, a zero up vector, a non-unit ``alignment``, a non-positive ``root_scale``, or
        no mapped joint below the root to measure the leg length from.
    """
    pairs = _resolve(source, target, joint_map)
    source_up, target_up = _unit(source_up, "source_up"), _unit(target_up, "target_up")
    _, src_rot, src_pos = _rest_model(source)
    tgt_model, tgt_rot, tgt_pos = _rest_model(target)
    order = sorted(pairs, key=lambda s: pairs[s])
    s_idx = np.array(order, dtype=np.intp)
    t_idx = np.array([pairs[s] for s in order], dtype=np.intp)
    src_above = _mapped_ancestors(source, order)
    tops = [s for s in order if src_above[s] < 0]
    if len(tops) != 1:
        raise SkeletonMismatchError(
            f"joint_map must have one pair above all others (the hips) to carry the translation, got "
            f"{len(tops)}: {[source.names[s] for s in tops]}"
        )
    s_root, t_root = tops[0], pairs[tops[0]]
    if alignment is None:
        c = _estimate_alignment(src_pos[s_idx], tgt_pos[t_idx], source_up, target_up)
    else:
        c = check_unit(alignment, "alignment")
        if c.shape != (4,):
            raise InvalidInputError(f"alignment must be one quaternion (4,), got shape {c.shape}")
    if root_scale is None:
        root_scale = _leg_ratio(source, target, pairs, s_root, (src_pos, tgt_pos), (source_up, target_up))
    if not (np.isfinite(root_scale) and root_scale > 0):
        raise InvalidInputError(f"root_scale must be a positive number, got {root_scale}")
    bones = _bone_alignment(source, pairs, s_idx, t_idx, src_pos, tgt_pos, c) if align_bones else None
    corrected = tgt_rot[t_idx] if bones is None else quat_multiply(bones, tgt_rot[t_idx])
    right = quat_multiply(quat_conjugate(src_rot[s_idx]), quat_multiply(quat_conjugate(c), corrected))
    slot = np.full(target.num_joints, -1, dtype=np.intp)
    slot[t_idx] = np.arange(t_idx.size)
    levels = []
    for joints in target.levels:
        inside = slot[joints] >= 0
        free = joints[~inside]
        levels.append((free, target.parents[free], joints[inside], slot[joints[inside]]))
    parent = int(target.parents[t_root])
    root_parent_inverse = affine_inverse(tgt_model[parent]) if parent >= 0 else np.eye(4)
    return RetargetPlan(
        source=source,
        target=target,
        joint_map={source.names[s]: target.names[pairs[s]] for s in order},
        source_joints=s_idx,
        target_joints=t_idx,
        alignment=c,
        root_scale=float(root_scale),
        source_root=s_root,
        target_root=t_root,
        _right=right,
        _mapped_parents=target.parents[t_idx],
        _levels=tuple(levels),
        _root_parent_inverse=root_parent_inverse,
    )


def _leg_length(skeleton: Skeleton, positions: FloatArray, up: FloatArray) -> float | None:
    """Height of a humanoid's hips above the lowest joint of its legs in the rest pose (``None``: no humanoid)."""
    try:
        roles = find_humanoid(skeleton, up).roles
    except SkeletonMismatchError:
        return None
    legs = [j for role, j in roles.items() if role.endswith(("leg_l", "leg_r", "foot_l", "foot_r", "toes_l", "toes_r"))]
    return float(positions[roles["hips"]] @ up - np.min(positions[legs] @ up))


def _leg_ratio(
    source: Skeleton,
    target: Skeleton,
    pairs: dict[int, int],
    s_root: int,
    positions: tuple[FloatArray, FloatArray],
    ups: tuple[FloatArray, FloatArray],
) -> float:
    """Target over source leg length.

    Humanoid hips heights when both are humanoids, else the mapped root's height above the lowest
    mapped joint.
    """
    lengths = _leg_length(source, positions[0], ups[0]), _leg_length(target, positions[1], ups[1])
    if lengths[0] is not None and lengths[1] is not None:
        return lengths[1] / lengths[0]
    mapped = np.array(list(pairs))
    depth = (positions[0][s_root] - positions[0][mapped]) @ ups[0]
    k = int(np.argmax(depth))
    if depth[k] <= 1e-9:
        raise InvalidInputError(
            f"cannot measure the leg length: no mapped joint lies below {source.names[s_root]!r} along "
            f"source_up {ups[0].round(3).tolist()}; pass root_scale"
        )
    return float((positions[1][pairs[s_root]] - positions[1][pairs[int(mapped[k])]]) @ ups[1] / depth[k])


def _bone_alignment(
    source: Skeleton,
    pairs: dict[int, int],
    s_idx: IntArray,
    t_idx: IntArray,
    src_pos: FloatArray,
    tgt_pos: FloatArray,
    alignment: FloatArray,
) -> FloatArray:
    """``(M, 4)`` model-space turns of each mapped target bone onto its source bone's rest direction."""
    above = _mapped_ancestors(source, list(pairs))
    only_child: dict[int, int | None] = {}
    for s in pairs:
        if above[s] >= 0:
            only_child[int(above[s])] = None if int(above[s]) in only_child else s
    turns = quat_identity((s_idx.size,))
    for k, (s, t) in enumerate(zip(s_idx, t_idx, strict=True)):  # build time, once per pair
        child = only_child.get(int(s))
        if child is None:
            continue
        source_bone = quat_rotate(alignment, src_pos[child] - src_pos[s])
        target_bone = tgt_pos[pairs[child]] - tgt_pos[t]
        if min(np.linalg.norm(source_bone), np.linalg.norm(target_bone)) > 1e-9:
            turns[k] = _arc(target_bone, source_bone)
    return turns


def retarget_pose(plan: RetargetPlan, source_pose: Pose) -> Pose:
    """Target local pose ``(..., J_target)`` from a source local pose ``(..., J_source)``.

    Any leading batch shape (frames, characters, both). Mapped target joints take the source's
    model-space rotation change from rest (see the module docstring); the root pair's model-space
    position is ``root_scale · C · p_source``; other joints keep their rest local transform.

    Raises
    ------
    SkeletonMismatchError
        If ``source_pose`` does not have the source skeleton's joint count.
    """
    model = model_from_pose(plan.source, source_pose)
    batch = model.shape[:-3]
    with trusted():
        source_rot = _rotations_of(model[..., plan.source_joints, :, :])
        desired = quat_multiply(quat_multiply(plan.alignment, source_rot), plan._right)  # (..., M, 4)
        target = plan.target
        world = np.empty((*batch, target.num_joints, 4))
        for depth, (free, parents, mapped, slots) in enumerate(plan._levels):  # one pass per depth level
            rest = target.rest_rotations[free]
            world[..., free, :] = rest if depth == 0 else quat_multiply(world[..., parents, :], rest)
            world[..., mapped, :] = desired[..., slots, :]
        rotations = np.broadcast_to(target.rest_rotations, (*batch, target.num_joints, 4)).copy()
        parents = plan._mapped_parents
        rotations[..., plan.target_joints, :] = np.where(
            (parents >= 0)[:, None],
            quat_multiply(quat_conjugate(world[..., np.maximum(parents, 0), :]), desired),
            desired,
        )
        translations = np.broadcast_to(target.rest_translations, (*batch, target.num_joints, 3)).copy()
        root = plan.root_scale * quat_rotate(plan.alignment, model[..., plan.source_root, :3, 3])
        translations[..., plan.target_root, :] = transform_points(plan._root_parent_inverse, root)
        scales = np.broadcast_to(target.rest_scales, (*batch, target.num_joints, 3)).copy()
        return Pose(translations, rotations, scales)


def retarget_clip(plan: RetargetPlan, clip: Clip, times: Any | None = None, *, name: str | None = None) -> Clip:
    """A LINEAR clip over ``plan.target`` playing ``clip`` (a clip of ``plan.source``).

    ``clip`` is sampled at ``times`` (default: every key time of its channels), each frame is
    retargeted, and the result holds a rotation channel per mapped target joint and a translation
    channel on the root pair; markers are kept.
    """
    if times is None:
        if not clip.channels:
            raise InvalidInputError(f"clip {clip.name!r} has no channels: pass times to sample it at")
        times = np.unique(np.concatenate([c.times for c in clip.channels]))
    times = as_array(times, "times")
    if times.ndim != 1 or times.size == 0 or np.any(np.diff(times) < 0):
        raise InvalidInputError(f"times must be a non-empty, non-decreasing 1-D array, got shape {times.shape}")
    pose = retarget_pose(plan, sample(clip, plan.source.rest_pose, times))
    rotations = unflip(pose.rotations[:, plan.target_joints], axis=0)
    with trusted():
        channels = [
            Channel(int(t), "rotation", "LINEAR", times, rotations[:, k]) for k, t in enumerate(plan.target_joints)
        ]
        channels.append(
            Channel(plan.target_root, "translation", "LINEAR", times, pose.translations[:, plan.target_root])
        )
    channels.sort(key=lambda c: (c.target, c.path))
    return Clip(name or clip.name, tuple(channels), plan.target.num_joints, clip.markers)
