"""Retargeting: play one skeleton's motion on another with different proportions and joint frames.

Three steps, split as ozz splits offline from runtime work:

1. **Map joints.** A ``joint_map`` ``{source name: target name}`` says which target joint follows
   which source joint; :func:`propose_joint_map` proposes one and :func:`explain_joint_map` says
   why (:mod:`engine.anim.joint_map`).
2. **Plan** (:func:`plan_retarget`, once per skeleton pair): validate the map (names exist, one
   target per source, ancestors map to ancestors), then precompute everything the per-frame
   step needs: the rotation taking source model axes to target model axes, the root scale
   (leg-length ratio), per joint a constant quaternion, the joint that carries the travel, the
   feet used for ground contact and the detached feet placed on the legs.
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

**Travel** (:attr:`RetargetPlan.travel_root`). A character whose hips hang below a root joint on
the ground (the mannequin's ``root``, KayKit's ``root``, RobotExpressive's ``Bone``, Unreal's
``root``) moves by that root: it receives the hips' ground position (the part of their model-space
position across up, at the root's rest height; no turn), and the hips keep the rest (their height
and sway above it). Games and the programs move such a character by its root joint, so the mocap's
floor travel must be there, not on the hips. When the hips are the skeleton's root (CesiumMan,
a BVH take) they carry it all, as before.

**Detached feet**: an IK rig's foot bones outside the legs (RobotExpressive's ``Foot.L`` under
``Bone``) are placed each frame on the leg's foot joint (:mod:`engine.anim.retarget_feet`).

Rest-pose correction (``align_bones=True``): when the two rest poses differ (a T-pose mocap
skeleton, an A-pose character), each mapped joint with exactly one mapped child is first turned,
along the shortest arc, so that its bone points where the source bone points in the source's rest
pose. Skeletons whose rest shapes agree get ``A_t = identity``. The feet of two humanoids are not
turned: both rest poses stand on them flat, and the ankle-to-ball bone of each rig slopes as its
foot is shaped (KayKit's ankle stands high over a short foot), so turning it onto the source's
would tip the target onto its toes or its heels.

Ground contact (``ground_feet=True``, humanoids): each frame the hips are moved along up so that
the target's feet are as far off the ground as the source's, each foot measured from the height
it stands at, its sole too when the target's mesh is given (:mod:`engine.anim.retarget_feet`).
Limb directions are unchanged; a foot on the ground in the source is on the ground in the target.

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

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.humanoid import UP, Humanoid, unit_vector
from engine.anim.joint_map import (
    explain_joint_map,
    humanoids,
    mapped_ancestors,
    propose_joint_map,
    resolve_joint_map,
)
from engine.anim.local_to_model import local_to_model, model_from_pose
from engine.anim.pose import Pose
from engine.anim.retarget_feet import (
    GROUND_ROLES,
    GROUND_SOFTNESS,
    DetachedFeet,
    FootContact,
    ground_lift,
    leg_length,
    leg_span,
    level_hips,
    mesh_points,
    place_detached,
    plan_contact,
    plan_detached,
    plant_feet,
    rotations_of,
)
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import (
    affine_inverse,
    check_unit,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_two_vectors,
    quat_identity,
    quat_multiply,
    quat_rotate,
    transform_points,
    trusted,
    unflip,
    vec_cross,
)
from engine.math._checks import FloatArray, IntArray, as_array

__all__ = [
    "GROUND_ROLES",
    "GROUND_SOFTNESS",
    "RetargetPlan",
    "explain_joint_map",
    "plan_retarget",
    "propose_joint_map",
    "retarget_clip",
    "retarget_pose",
]


def _rest_model(skeleton: Skeleton) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Rest model matrices ``(J, 4, 4)``, rotations ``(J, 4)`` and positions ``(J, 3)``."""
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    return model, rotations_of(model), model[:, :3, 3].copy()


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
        The mapped pair above all others (the hips, usually): its rotation and height follow the source's.
    travel_root
        The target joint that carries the travel over the ground: the root of ``target_root``'s
        tree (the mannequin's ``root``), or ``target_root`` itself when it is that root.
    contact
        The feet kept in ground contact (:class:`~engine.anim.retarget_feet.FootContact`);
        ``None`` when ``ground_feet`` is off or a skeleton is not a humanoid.
    detached
        The target joints placed on the leg's foot each frame (an IK rig's feet,
        :class:`~engine.anim.retarget_feet.DetachedFeet`).
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
    travel_root: int
    contact: FootContact | None
    detached: DetachedFeet
    _right: FloatArray
    _mapped_parents: IntArray
    _levels: tuple[tuple[IntArray, IntArray, IntArray, IntArray], ...]
    _root_parent_inverse: FloatArray
    _travel_rest: FloatArray
    _source_up: FloatArray
    _target_up: FloatArray

    @property
    def source_feet(self) -> IntArray:
        """``(F,)`` the source joints kept in ground contact (empty without :attr:`contact`)."""
        return self.contact.source_feet if self.contact is not None else np.zeros(0, dtype=np.intp)

    @property
    def target_feet(self) -> IntArray:
        """``(F,)`` the target joints kept in ground contact, same roles as :attr:`source_feet`."""
        return self.contact.target_feet if self.contact is not None else np.zeros(0, dtype=np.intp)


def _estimate_alignment(
    src_pos: FloatArray, tgt_pos: FloatArray, source_up: FloatArray, target_up: FloatArray
) -> FloatArray:
    """Up onto up, then the turn about up that best matches the mapped rest positions (2-D Procrustes)."""
    tilt = quat_from_two_vectors(source_up, target_up)
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
    ground_feet: bool = True,
    target_mesh: tuple[Any, Any] | None = None,
    map_name: str = "joint_map",
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
        source: for humanoids the legs' rest length, hip to knee to ankle
        (:func:`~engine.anim.retarget_feet.leg_span`; the hips' height above the lowest leg joint
        without those joints), otherwise the rest height of the root pair above the lowest mapped
        joint.
    align_bones
        Turn the target's rest bones onto the source's rest bone directions first (see the module
        docstring); ``False`` transfers the changes onto the target's own rest pose unchanged.
    ground_feet
        Keep the feet as far off the ground as the source's each frame (module docstring), when
        both skeletons are humanoids and the target's feet are mapped.
    target_mesh
        ``(vertices (V, 3), joints (V,))``: the target's skinned vertices in the rest pose, model
        space, and the joint each follows most; the soles' outer vertices join the ground contact
        (:func:`~engine.anim.retarget_feet.mesh_points`).
    map_name
        What error messages call ``joint_map`` (``ossa retarget`` says ``--map FILE``).

    Raises
    ------
    SkeletonMismatchError
        Unknown names (with the nearest existing names, and the ``#`` names the glTF reader gives
        repeated node names), two source joints on one target joint, a map that breaks the
        hierarchy, or several unrelated top pairs.
    InvalidInputError
        An empty map, a zero up vector, a non-unit ``alignment``, a non-positive ``root_scale``, or
        no mapped joint below the root to measure the leg length from.
    """
    pairs = resolve_joint_map(source, target, joint_map, map_name)
    source_up, target_up = unit_vector(source_up, "source_up"), unit_vector(target_up, "target_up")
    src_model, src_rot, src_pos = _rest_model(source)
    tgt_model, tgt_rot, tgt_pos = _rest_model(target)
    order = sorted(pairs, key=lambda s: pairs[s])
    s_idx = np.array(order, dtype=np.intp)
    t_idx = np.array([pairs[s] for s in order], dtype=np.intp)
    src_above = mapped_ancestors(source, order)
    tops = [s for s in order if src_above[s] < 0]
    if len(tops) != 1:
        raise SkeletonMismatchError(
            f"{map_name} must have one pair above all others (the hips) to carry the translation, got "
            f"{len(tops)}: {[source.names[s] for s in tops]}"
        )
    s_root, t_root = tops[0], pairs[tops[0]]
    if alignment is None:
        c = _estimate_alignment(src_pos[s_idx], tgt_pos[t_idx], source_up, target_up)
    else:
        c = check_unit(alignment, "alignment")
        if c.shape != (4,):
            raise InvalidInputError(f"alignment must be one quaternion (4,), got shape {c.shape}")
    found = humanoids(source, target, source_up, target_up)
    bodies = None if isinstance(found, SkeletonMismatchError) else found
    if root_scale is None:
        root_scale = _leg_ratio(source, pairs, s_root, (src_pos, tgt_pos), (source_up, target_up), bodies)
    if not (np.isfinite(root_scale) and root_scale > 0):
        raise InvalidInputError(f"root_scale must be a positive number, got {root_scale}")
    flat = {int(bodies[0].roles[r]) for r in GROUND_ROLES if r in bodies[0].roles} if bodies is not None else set()
    bones = _bone_alignment(source, pairs, (s_idx, t_idx), (src_pos, tgt_pos), c, flat) if align_bones else None
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
    travel_root = _tree_root(target, t_root)
    moving = set(pairs.values()) | _below(target, set(pairs.values()))
    contact = None
    if ground_feet and bodies is not None:
        mesh = mesh_points(bodies[1], tgt_model, target_up, *target_mesh) if target_mesh is not None else None
        contact = plan_contact(bodies, moving, (src_model, tgt_model), (source_up, target_up), mesh)
    detached = plan_detached(bodies[1] if bodies is not None else None, set(pairs.values()), moving, tgt_model)
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
        travel_root=travel_root,
        contact=contact,
        detached=detached,
        _right=right,
        _mapped_parents=target.parents[t_idx],
        _levels=tuple(levels),
        _root_parent_inverse=root_parent_inverse,
        _travel_rest=tgt_pos[travel_root],
        _source_up=source_up,
        _target_up=target_up,
    )


def _tree_root(skeleton: Skeleton, joint: int) -> int:
    """The root joint of the tree ``joint`` is in."""
    while skeleton.parents[joint] >= 0:
        joint = int(skeleton.parents[joint])
    return joint


def _below(skeleton: Skeleton, joints: set[int]) -> set[int]:
    """Joints with an ancestor in ``joints`` (they move with it)."""
    inside = np.zeros(skeleton.num_joints, dtype=bool)
    for j, parent in enumerate(skeleton.parents):  # parents precede children
        inside[j] = parent >= 0 and (inside[parent] or int(parent) in joints)
    return set(np.nonzero(inside)[0].tolist())


def _leg_ratio(
    source: Skeleton,
    pairs: dict[int, int],
    s_root: int,
    positions: tuple[FloatArray, FloatArray],
    ups: tuple[FloatArray, FloatArray],
    bodies: tuple[Humanoid, Humanoid] | None,
) -> float:
    """Target over source leg length.

    Humanoid leg spans (hip to knee to ankle; hips heights without them) when both are humanoids,
    else the mapped root's height above the lowest mapped joint.
    """
    if bodies is not None:
        spans = leg_span(bodies[0], positions[0]), leg_span(bodies[1], positions[1])
        if spans[0] and spans[1]:
            return spans[1] / spans[0]
        return leg_length(bodies[1], positions[1], ups[1]) / leg_length(bodies[0], positions[0], ups[0])
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
    joints: tuple[IntArray, IntArray],
    positions: tuple[FloatArray, FloatArray],
    alignment: FloatArray,
    flat: set[int],
) -> FloatArray:
    """``(M, 4)`` model-space turns of each mapped target bone onto its source bone's rest direction.

    ``joints`` are the source and target joints of the pairs, ``positions`` both rest positions;
    the source joints ``flat`` (a humanoid's feet) are not turned.
    """
    s_idx, t_idx = joints
    src_pos, tgt_pos = positions
    above = mapped_ancestors(source, list(pairs))
    only_child: dict[int, int | None] = {}
    for s in pairs:
        if above[s] >= 0:
            only_child[int(above[s])] = None if int(above[s]) in only_child else s
    turns = quat_identity((s_idx.size,))
    for k, (s, t) in enumerate(zip(s_idx, t_idx, strict=True)):  # build time, once per pair
        child = only_child.get(int(s))
        if child is None or int(s) in flat:
            continue
        source_bone = quat_rotate(alignment, src_pos[child] - src_pos[s])
        target_bone = tgt_pos[pairs[child]] - tgt_pos[t]
        if min(np.linalg.norm(source_bone), np.linalg.norm(target_bone)) > 1e-9:
            turns[k] = quat_from_two_vectors(target_bone, source_bone)
    return turns


def retarget_pose(plan: RetargetPlan, source_pose: Pose) -> Pose:
    """Target local pose ``(..., J_target)`` from a source local pose ``(..., J_source)``.

    Any leading batch shape (frames, characters, both). Mapped target joints take the source's
    model-space rotation change from rest (see the module docstring); the root pair's model-space
    position is ``root_scale · C · p_source``, moved along up to keep the feet on the ground when
    the plan has feet, its ground part carried by :attr:`RetargetPlan.travel_root`; detached feet
    are placed on their anchors; other joints keep their rest local transform.

    Raises
    ------
    SkeletonMismatchError
        If ``source_pose`` does not have the source skeleton's joint count.
    """
    model = model_from_pose(plan.source, source_pose)
    batch = model.shape[:-3]
    with trusted():
        source_rot = rotations_of(model[..., plan.source_joints, :, :])
        desired = quat_multiply(quat_multiply(plan.alignment, source_rot), plan._right)  # (..., M, 4)
        if plan.contact is not None and plan.contact.roll < 1.0 and plan.contact.hips in plan.target_joints:
            hips = int(np.searchsorted(plan.target_joints, plan.contact.hips))  # the pairs are target-ordered
            desired[..., hips, :] = level_hips(plan.contact, desired[..., hips, :])
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
        if plan.travel_root != plan.target_root:  # the ground part of the hips' position moves the root
            up = plan._target_up
            travel = root - plan._travel_rest
            travel -= (travel @ up)[..., None] * up
            translations[..., plan.travel_root, :] += travel  # a tree's root: local is model space
            root = root - travel
        translations[..., plan.target_root, :] = transform_points(plan._root_parent_inverse, root)
        scales = np.broadcast_to(target.rest_scales, (*batch, target.num_joints, 3)).copy()
        pose = Pose(translations, rotations, scales)
        if plan.contact is not None:
            lift = ground_lift(plan.contact, plan.root_scale, model, model_from_pose(target, pose))
            pose.translations[..., plan.target_root, :] += lift[..., None] * (
                plan._root_parent_inverse[:3, :3] @ plan._target_up
            )
            plant_feet(plan.contact, plan.root_scale, model, target, pose)
        if plan.detached.joints.size:
            place_detached(plan.detached, target, pose)
        return pose


def retarget_clip(plan: RetargetPlan, clip: Clip, times: Any | None = None, *, name: str | None = None) -> Clip:
    """A LINEAR clip over ``plan.target`` playing ``clip`` (a clip of ``plan.source``).

    ``clip`` is sampled at ``times`` (default: every key time of its channels), each frame is
    retargeted, and the result holds a rotation channel per mapped target joint, a translation
    channel on the root pair and on :attr:`RetargetPlan.travel_root`, and translation and
    rotation channels on the detached joints; markers are kept.
    """
    if times is None:
        if not clip.channels:
            raise InvalidInputError(f"clip {clip.name!r} has no channels: pass times to sample it at")
        times = np.unique(np.concatenate([c.times for c in clip.channels]))
    times = as_array(times, "times")
    if times.ndim != 1 or times.size == 0 or np.any(np.diff(times) < 0):
        raise InvalidInputError(f"times must be a non-empty, non-decreasing 1-D array, got shape {times.shape}")
    pose = retarget_pose(plan, sample(clip, plan.source.rest_pose, times))
    turned = np.unique(np.concatenate((plan.target_joints, plan.detached.joints)))
    moved = np.unique(np.array([plan.target_root, plan.travel_root, *plan.detached.joints], dtype=np.intp))
    rotations = unflip(pose.rotations[:, turned], axis=0)
    with trusted():
        channels = [Channel(int(t), "rotation", "LINEAR", times, rotations[:, k]) for k, t in enumerate(turned)]
        channels += [Channel(int(t), "translation", "LINEAR", times, pose.translations[:, t]) for t in moved]
    channels.sort(key=lambda c: (c.target, c.path))
    return Clip(name or clip.name, tuple(channels), plan.target.num_joints, clip.markers)
