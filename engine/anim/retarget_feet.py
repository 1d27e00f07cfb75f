"""The feet of a retarget: ground contact, and detached feet placed on the legs.

**Ground contact**: the target's feet are as far off the ground as the source's. Legs of other
proportions put the feet at other heights than the scaled source's, and feet of other shapes
stand their ankles and toes at other heights (KayKit's ankle stands 15 cm over its sole, a mocap
performer's 8 cm) and reach further (CesiumMan's toes end 13 cm under and ahead of its toe joint).
So each leg's **clearance** is measured, per frame, as the least, over the leg's contact points,
of a point's height above the floor (``y = 0`` of model space, where mocap takes and glTF
characters put it) less its **standing height**. A leg's contact points are its foot joint and
every joint below it (toes, toe tips, end sites) and, given the target's mesh, the lowest
vertices that follow them (:func:`sole_points`: heel and toe-tip corners of the sole). Each frame
the target's hips move along up by the amount that gives the target's legs the source's
clearances, scaled by the leg-length ratio; between the legs a soft minimum of the source
clearances picks the supporting leg (so the lift moves smoothly when the support changes legs),
and in double support the hips come down as far as the leg that needs it most. Legs of other
proportions cannot follow the source's directions and both reach the ground (KayKit's thighs are
1.6 shins long, a performer's 1.1): so each leg near the ground then gets the rest of its
clearance by two-bone IK on hip, knee and ankle (:func:`plant_feet`: the foot keeps its
orientation, the knee keeps its side, or bends towards the toes from straight: towards the
hips' front for a leg without a toes joint, as RobotExpressive's), fully within
:data:`PLANT_REACH` / 2 leg lengths of the ground, fading out by :data:`PLANT_REACH`; a foot in the
air keeps the source's directions, unless they would take it deeper under the floor than the
source's (a swinging foot on KayKit's wide hips). A leg that would have to fold further than
:data:`KNEE_FOLD` degrees (a kneel, the foot behind on its toes) keeps the source's directions.

A rest pose that stands on the model origin (a glTF character: its lowest contact point at most
:data:`STANDING_REACH` leg lengths above it) gives the standing heights, its points' rest heights;
one that does not (a BVH skeleton hanging from hips at the origin) is taken to stand on its
lowest contact point, at the floor.

**Wide hips** (:func:`level_hips`): hips wider for their legs than the source's (KayKit's are 0.9
of its leg wide, a performer's 0.25) turn a pelvis roll into a larger height difference between
the hip joints, which the legs would have to bend away; the target's hips roll by the angle that
gives their hip joints the source's height difference for their legs, the spine and legs keeping
their directions.

**Detached feet** (:attr:`engine.anim.humanoid.Humanoid.detached`): an IK rig's foot bones outside
the legs (RobotExpressive's ``Foot.L`` under ``Bone``) are placed each frame where the leg's foot
joint is, turned with it, as if they were its children (the rest offset between them kept).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from engine.anim.humanoid import Humanoid
from engine.anim.ik import apply_corrections, two_bone_ik
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.math import affine_inverse, quat_from_axis_angle, quat_from_matrix, quat_multiply, quat_rotate
from engine.math._checks import FloatArray, IntArray

__all__ = [
    "GROUND_ROLES",
    "GROUND_SOFTNESS",
    "GROUPS",
    "GROUP_ROLES",
    "KNEE_BENT",
    "KNEE_FOLD",
    "PLANT_REACH",
    "SOLE_DIRECTIONS",
    "SOLE_LAYER",
    "STANDING_REACH",
    "ContactPoints",
    "DetachedFeet",
    "FootContact",
    "ground_lift",
    "leg_length",
    "leg_span",
    "level_hips",
    "mesh_points",
    "place_detached",
    "plan_contact",
    "plan_detached",
    "plant_feet",
    "rotations_of",
]

#: Roles whose joints touch the ground (``ground_feet``); the rest-pose correction leaves them unturned.
GROUND_ROLES = ("foot_l", "foot_r", "toes_l", "toes_r")
#: Width of the soft minimum choosing the supporting foot, as a fraction of the target's leg length.
GROUND_SOFTNESS = 0.02
#: Leg lengths above the model origin (or a fifth of it below) within which a rest pose's lowest
#: contact point stands on the origin: then the rest heights are the standing heights.
STANDING_REACH = 0.25
#: Leg lengths above a foot's lowest rest vertex within which its vertices are the sole.
SOLE_LAYER = 0.03
#: Horizontal directions in which the sole's outermost vertex is a contact point (heel, toe tip, sides).
SOLE_DIRECTIONS = 8
#: Leg lengths of scaled source clearance by which a foot's IK planting has faded out.
PLANT_REACH = 0.1
#: Degrees of knee bend from straight beyond which planting fades out (by :data:`KNEE_FOLD` + 20°).
KNEE_FOLD = 140.0
#: Leg lengths the knee stands off the hip-ankle line when its bend shows which way it points.
KNEE_BENT = 0.05


def leg_length(body: Humanoid, positions: FloatArray, up: FloatArray) -> float:
    """Height of a humanoid's hips above the lowest joint of its legs in the rest pose."""
    legs = [j for role, j in body.roles.items() if role.startswith(("upper_leg", "lower_leg", "foot", "toes"))]
    return float(positions[body.roles["hips"]] @ up - np.min(positions[legs] @ up))


def leg_span(body: Humanoid, positions: FloatArray) -> float | None:
    """The rest length of a humanoid's legs, hip to knee to ankle (both sides' mean); ``None`` without those joints.

    What the stride scales by: the legs swing through the source's directions, so the feet land
    this much further apart (a hip height would count KayKit's hips, 11 cm below its thighs).
    """
    spans = []
    for side in "lr":
        chain = [body.roles.get(f"{part}_{side}") for part in ("upper_leg", "lower_leg", "foot")]
        if any(j is None for j in chain):
            return None
        spans.append(sum(float(np.linalg.norm(positions[b] - positions[a])) for a, b in itertools.pairwise(chain)))
    return sum(spans) / 2.0


#: The contact groups: both feet (kept on the ground), both hands (kept out of it).
GROUPS = ("foot_l", "foot_r", "hand_l", "hand_r")
#: The roles whose joints (and every joint below them) make each group.
GROUP_ROLES = {
    "foot_l": ("foot_l", "toes_l"),
    "foot_r": ("foot_r", "toes_r"),
    "hand_l": ("hand_l",),
    "hand_r": ("hand_r",),
}


def _group_joints(body: Humanoid, group: str) -> list[int]:
    """The joints of ``group``'s roles and every joint below them (toe tips, fingers, end sites)."""
    skeleton = body.skeleton
    tops = {body.roles[r] for r in GROUP_ROLES[group] if r in body.roles}
    inside = np.zeros(skeleton.num_joints, dtype=bool)
    for j, parent in enumerate(skeleton.parents):  # parents precede children
        inside[j] = j in tops or (parent >= 0 and bool(inside[parent]))
    return np.nonzero(inside)[0].tolist()


def _directions(up: FloatArray, count: int) -> FloatArray:
    """``(count, 3)`` unit directions evenly round ``up``."""
    across = np.linalg.svd(np.eye(3) - np.outer(up, up))[0][:, :2]  # two unit axes perpendicular to up
    angles = np.linspace(0.0, 2.0 * np.pi, count, endpoint=False)
    return np.cos(angles)[:, None] * across[:, 0] + np.sin(angles)[:, None] * across[:, 1]


def mesh_points(
    body: Humanoid, rest: FloatArray, up: FloatArray, vertices: FloatArray, followed: IntArray
) -> dict[str, FloatArray]:
    """Per group (:data:`GROUPS`), the rest vertices that stand for its underside, and the joints they follow.

    ``rest`` are the rest model matrices, ``vertices`` ``(V, 3)`` the rest model-space vertices of
    the skinned meshes and ``followed`` ``(V,)`` the joint each follows most. A foot's sole is its
    vertices within :data:`SOLE_LAYER` leg lengths of its lowest; the outermost vertex of each
    joint's part of it in each of :data:`SOLE_DIRECTIONS` directions across up is a contact point
    (heel, ball, toe tip: the sole bends at the ball). A hand, held any way in the rest pose, gives
    the outermost vertex of each joint's part in those directions and along up and down. Returns
    ``{group: (K, 4) array of x, y, z, joint}``.
    """
    leg = leg_length(body, rest[:, :3, 3], up)
    around = _directions(up, SOLE_DIRECTIONS)
    found = {}
    for group in GROUPS:
        joints = _group_joints(body, group)
        mine = np.isin(followed, joints)
        if not mine.any():
            continue
        foot = group.startswith("foot")
        low = float((vertices[mine] @ up).min()) + SOLE_LAYER * leg if foot else np.inf
        directions = around if foot else np.concatenate([around, [up, -up]])
        chosen = []
        for joint in joints:  # each part bends with its own joint
            part = np.nonzero((followed == joint) & (vertices @ up <= low))[0]
            if part.size:
                chosen.append(part[np.argmax(vertices[part] @ directions.T, axis=0)])
        if chosen:
            picked = np.unique(np.concatenate(chosen))
            found[group] = np.column_stack([vertices[picked], followed[picked]])
    return found


@dataclass(frozen=True, eq=False)
class ContactPoints:
    """One skeleton's contact points (see the module docstring).

    Attributes
    ----------
    joints
        ``(P,)`` the joint each point moves with.
    offsets
        ``(P, 4)`` each point in its joint's rest frame (homogeneous).
    groups
        ``(P,)`` the index in :data:`GROUPS` of each point's group.
    standing
        ``(P,)`` height of each point over the floor when the skeleton stands (0 for a hand's).
    up
        ``(3,)`` the skeleton's up axis.
    """

    joints: IntArray
    offsets: FloatArray
    groups: IntArray
    standing: FloatArray
    up: FloatArray

    def clearance(self, model: FloatArray) -> FloatArray:
        """``(..., 4)`` each group's least point height over its standing height; ``inf`` for an empty group.

        ``model`` are the skeleton's model matrices ``(..., J, 4, 4)``.
        """
        points = np.einsum("...pij,pj->...pi", model[..., self.joints, :, :], self.offsets)[..., :3]
        above = points @ self.up - self.standing
        empty = np.full(above.shape[:-1], np.inf)
        return np.stack(
            [np.min(above[..., self.groups == g], axis=-1) if (self.groups == g).any() else empty for g in range(4)],
            axis=-1,
        )


def _contact_points(
    body: Humanoid, rest: FloatArray, up: FloatArray, extra: dict[str, FloatArray] | None
) -> ContactPoints:
    """The joints of each group and the ``extra`` (mesh) points, with their standing heights."""
    joints, positions, groups = [], [], []
    for g, group in enumerate(GROUPS):
        for j in _group_joints(body, group):
            joints.append(j)
            positions.append(rest[j, :3, 3])
            groups.append(g)
        for x, y, z, j in (extra or {}).get(group, np.zeros((0, 4))):
            joints.append(int(j))
            positions.append(np.array([x, y, z]))
            groups.append(g)
    where = np.array(positions, dtype=np.float64).reshape(-1, 3)
    index = np.array(joints, dtype=np.intp)
    grouped = np.array(groups, dtype=np.intp)
    offsets = np.einsum("pij,pj->pi", affine_inverse(rest[index]), np.column_stack([where, np.ones(len(where))]))
    heights = where @ up
    feet = grouped < 2
    floor = float(heights[feet].min())
    on_origin = -0.2 * STANDING_REACH <= floor / leg_length(body, rest[:, :3, 3], up) <= STANDING_REACH
    standing = np.where(feet, heights - (0.0 if on_origin else floor), 0.0)
    return ContactPoints(index, offsets, grouped, standing, up)


@dataclass(frozen=True, eq=False)
class FootContact:
    """What a retarget keeps in ground contact (see the module docstring).

    Attributes
    ----------
    source_feet, target_feet
        ``(F,)`` the feet and toes joints of both skeletons, same roles (what ``ossa retarget`` counts).
    source, target
        Both skeletons' :class:`ContactPoints`.
    softness
        Width of the soft minimum between the legs, target model units.
    leg
        The target's leg length (:func:`leg_length`), model units.
    chains
        ``(2, 4)`` the target's hip, knee, ankle and toes joints, left then right (:func:`plant_feet`);
        toes -1 for a leg that ends at the ankle; ``None`` when a leg lacks one of the other three.
    hips
        The target's hips joint.
    hip_line
        ``(3,)`` the target's left minus right hip joint in its hips' rest frame (:func:`level_hips`).
    roll
        The source's hip width over the target's, each for its leg length, at most 1: how much of a
        pelvis roll's height difference the target's hips keep.
    """

    source_feet: IntArray
    target_feet: IntArray
    source: ContactPoints
    target: ContactPoints
    softness: float
    leg: float
    chains: IntArray | None
    hips: int
    hip_line: FloatArray
    roll: float


def plan_contact(
    bodies: tuple[Humanoid, Humanoid],
    moving: set[int],
    rests: tuple[FloatArray, FloatArray],
    ups: tuple[FloatArray, FloatArray],
    mesh: dict[str, FloatArray] | None = None,
) -> FootContact | None:
    """The contact of two humanoids; ``None`` unless both have both feet and the target's move (``moving``).

    ``rests`` are both skeletons' rest model matrices, ``ups`` their up axes, ``mesh`` the
    target's :func:`mesh_points`.
    """
    source, target = bodies
    roles = [r for r in GROUND_ROLES if r in source.roles and r in target.roles and target.roles[r] in moving]
    if {r[-1] for r in roles} != {"l", "r"}:
        return None
    parts = [[f"{part}_{side}" for part in ("upper_leg", "lower_leg", "foot")] for side in "lr"]
    complete = all(role in target.roles for chain in parts for role in chain)
    leg = leg_length(target, rests[1][:, :3, 3], ups[1])

    def width(body: Humanoid, rest: FloatArray, up: FloatArray) -> float:
        line = rest[body.roles["upper_leg_l"], :3, 3] - rest[body.roles["upper_leg_r"], :3, 3]
        return float(np.linalg.norm(line)) / leg_length(body, rest[:, :3, 3], up)

    hips = rests[1][target.roles["hips"]]
    line = rests[1][target.roles["upper_leg_l"], :3, 3] - rests[1][target.roles["upper_leg_r"], :3, 3]
    return FootContact(
        source_feet=np.array([source.roles[r] for r in roles], dtype=np.intp),
        target_feet=np.array([target.roles[r] for r in roles], dtype=np.intp),
        source=_contact_points(source, rests[0], ups[0], None),
        target=_contact_points(target, rests[1], ups[1], mesh),
        softness=GROUND_SOFTNESS * leg,
        leg=leg,
        chains=np.array(
            [[*(target.roles[r] for r in chain), target.roles.get(f"toes_{chain[0][-1]}", -1)] for chain in parts],
            dtype=np.intp,
        )
        if complete
        else None,
        hips=int(target.roles["hips"]),
        hip_line=np.linalg.solve(hips[:3, :3], line),
        roll=min(1.0, width(source, rests[0], ups[0]) / max(width(target, rests[1], ups[1]), 1e-12)),
    )


def level_hips(contact: FootContact, hips: FloatArray) -> FloatArray:
    """The target hips' model rotations ``(..., 4)`` rolled so their hip joints' height difference is the source's.

    ``hips`` are the model rotations the retarget gives the hips (the source's); the roll is about
    the horizontal line across the hip line (see the module docstring). Unchanged when
    :attr:`FootContact.roll` is 1.
    """
    if contact.roll >= 1.0:
        return hips
    up = contact.target.up
    line = quat_rotate(hips, contact.hip_line)
    length = np.linalg.norm(line, axis=-1)
    rise = np.clip((line @ up) / np.maximum(length, 1e-30), -1.0, 1.0)
    turn = np.arcsin(rise * contact.roll) - np.arcsin(rise)  # towards level: the elevation scaled
    axis = np.cross(line, up)
    size = np.linalg.norm(axis, axis=-1, keepdims=True)
    axis = np.where(size > 1e-9 * length[..., None], axis / np.maximum(size, 1e-30), 0.0)
    return quat_multiply(quat_from_axis_angle(axis, turn), hips)


def ground_lift(contact: FootContact, scale: float, source: FloatArray, target: FloatArray) -> FloatArray:
    """``(...)`` distance along up that brings the target's supporting legs to the source's clearances.

    ``source`` and ``target`` are both skeletons' model matrices ``(..., J, 4, 4)`` (the target's as
    posed before the lift); ``scale`` the leg-length ratio, target over source. Each leg's
    correction is its scaled source clearance less its own; the legs count by a soft minimum of
    the source clearances (the supporting leg), and of the supporting legs' corrections the lift is
    a soft minimum too: the hips come down as far as the leg that needs it most, and
    :func:`plant_feet` bends the other.
    """
    wanted = scale * contact.source.clearance(source)  # (..., 4)
    correction = wanted - contact.target.clearance(target)
    feet, hands = slice(0, 2), slice(2, 4)
    support = np.exp(-(wanted[..., feet] - wanted[..., feet].min(axis=-1, keepdims=True)) / contact.softness)
    support /= support.sum(axis=-1, keepdims=True)
    least = correction[..., feet].min(axis=-1)
    spread = np.exp(-(correction[..., feet] - least[..., None]) / contact.softness)
    lift = least - contact.softness * np.log(np.sum(support * spread, axis=-1))
    # a hand goes no deeper under the floor than the source's: arms longer than the legs (the scaled
    # source's) would push it through when the performer crawls, and the programs' ground with it
    under = np.minimum(wanted[..., hands], 0.0) - contact.target.clearance(target)[..., hands]
    return np.maximum(lift, np.max(np.where(np.isfinite(under), under, -np.inf), axis=-1))


def plant_feet(contact: FootContact, scale: float, source: FloatArray, skeleton: Skeleton, pose: Pose) -> None:
    """Bend each target leg near the ground so its clearance is the scaled source's, in ``pose`` in place.

    ``source`` are the source's model matrices ``(..., J, 4, 4)``, ``pose`` the target's after the
    lift (see the module docstring). Nothing without :attr:`FootContact.chains`.
    """
    if contact.chains is None:
        return
    wanted = scale * contact.source.clearance(source)[..., :2]
    model = model_from_pose(skeleton, pose)
    have = contact.target.clearance(model)[..., :2]
    near = np.clip(2.0 - 2.0 * wanted / (PLANT_REACH * contact.leg), 0.0, 1.0)
    # near the ground the foot gets the source's clearance; anywhere it comes no deeper under the
    # floor than the source's (a swinging foot on wide hips would go through it)
    move = np.maximum(near * (wanted - have), np.minimum(wanted, 0.0) - have)
    up = contact.target.up
    for side, (hip, knee, ankle, toes) in enumerate(contact.chains):
        at = model[..., :3, 3][..., [hip, knee, ankle], :]
        bend = at[..., 1, :] - 0.5 * (at[..., 0, :] + at[..., 2, :])  # where the knee points
        clear = np.linalg.norm(bend, axis=-1, keepdims=True) > KNEE_BENT * contact.leg
        ahead = model[..., toes, :3, 3] - at[..., 2, :] if toes >= 0 else _front(contact, model)
        pole = np.where(clear, bend, ahead)  # a straight knee bends towards the toes, or the front without them
        target = at[..., 2, :] + move[..., side, None] * up
        thigh, shin = (
            np.linalg.norm(at[..., 1, :] - at[..., 0, :], axis=-1),
            np.linalg.norm(at[..., 2, :] - at[..., 1, :], axis=-1),
        )
        reach = np.linalg.norm(target - at[..., 0, :], axis=-1)
        inner = np.clip((thigh**2 + shin**2 - reach**2) / np.maximum(2.0 * thigh * shin, 1e-30), -1.0, 1.0)
        fold = 180.0 - np.degrees(np.arccos(inner))  # the knee's bend from straight once solved
        weight = np.clip((KNEE_FOLD + 20.0 - fold) / 20.0, 0.0, 1.0)
        weight = np.where(
            np.abs(move[..., side]) > 1e-9 * contact.leg, weight, 0.0
        )  # a leg already there is left alone
        solved = two_bone_ik(skeleton, model, hip, knee, ankle, target, pole, weight=weight, keep_end_rotation=True)
        apply_corrections(pose, solved, out=pose)
        model = model_from_pose(skeleton, pose)


def _front(contact: FootContact, model: FloatArray) -> FloatArray:
    """``(..., 3)`` the target hips' front in model space (their left × up), ``model`` its model matrices."""
    return np.cross(quat_rotate(rotations_of(model[..., contact.hips, :, :]), contact.hip_line), contact.target.up)


def rotations_of(model: FloatArray) -> FloatArray:
    """Unit quaternions of the rotation part of affine matrices ``(..., 4, 4)`` (scale divided out)."""
    basis = model[..., :3, :3]
    return quat_from_matrix(basis / np.linalg.norm(basis, axis=-2, keepdims=True))


@dataclass(frozen=True, eq=False)
class DetachedFeet:
    """The target's detached feet a retarget places (see the module docstring).

    Attributes
    ----------
    joints, anchors
        ``(D,)`` the detached joints and the leg joints they are placed on.
    offsets
        ``(D, 4, 4)`` each joint's rest model matrix in its anchor's rest frame.
    """

    joints: IntArray
    anchors: IntArray
    offsets: FloatArray


def plan_detached(body: Humanoid | None, mapped: set[int], moving: set[int], rest: FloatArray) -> DetachedFeet:
    """The detached feet of ``body`` (none for ``None``) not ``mapped`` and on a ``moving`` joint.

    ``rest`` are the target's rest model matrices.
    """
    found = []
    if body is not None:
        found = [
            (joint, body.anchor(role))
            for role, joint in body.detached.items()
            if joint not in mapped and body.anchor(role) in moving
        ]
    return DetachedFeet(
        joints=np.array([d for d, _ in found], dtype=np.intp),
        anchors=np.array([a for _, a in found], dtype=np.intp),
        offsets=np.array([affine_inverse(rest[a]) @ rest[d] for d, a in found], dtype=np.float64).reshape(-1, 4, 4),
    )


def place_detached(feet: DetachedFeet, skeleton: Skeleton, pose: Pose) -> None:
    """Put each detached joint where its anchor is, turned with it (rest offset kept), in ``pose`` in place."""
    placed = model_from_pose(skeleton, pose)
    wanted = placed[..., feet.anchors, :, :] @ feet.offsets  # (..., D, 4, 4)
    parents = skeleton.parents[feet.joints]
    above = np.where((parents >= 0)[:, None, None], placed[..., np.maximum(parents, 0), :, :], np.eye(4))
    local = affine_inverse(above) @ wanted
    pose.translations[..., feet.joints, :] = local[..., :3, 3]
    pose.rotations[..., feet.joints, :] = rotations_of(local)
