"""Analytic two-bone IK (law of cosines on a hinge) for legs and arms, batched over characters."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.ik._core import (
    IKResult,
    JointRef,
    batch_shape,
    check_nonnegative,
    check_unit_axis,
    check_weight,
    choose,
    frame_rotations,
    gather_model,
    in_frame,
    parent_chain,
    signed_angle,
    weighted,
)
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array
from engine.math.kernels import conj, cross, dot, from_axis_angle, mul, norm, perpendicular, rotate, shortest_arc, unit

#: Relative size under which a length, cross product or projection counts as zero.
_RELATIVE_EPS = 1e-9


def _wrap(angle: FloatArray) -> FloatArray:
    return (angle + np.pi) % (2.0 * np.pi) - np.pi


def two_bone_ik(
    skeleton: Skeleton,
    model: Any,
    start: JointRef,
    mid: JointRef,
    end: JointRef,
    target: Any,
    pole: Any,
    *,
    mid_axis: Any | None = None,
    soften: float = 1.0,
    twist: Any = 0.0,
    weight: Any = 1.0,
    keep_end_rotation: bool = False,
    tolerance: float = 1e-6,
) -> IKResult:
    """Bend a start–mid–end chain (hip–knee–ankle) so the end joint lands on ``target``.

    The mid joint turns about its hinge axis until the start–end distance equals the start–
    target distance (law of cosines, solved exactly for any hinge direction); the start joint
    then turns the whole chain so the end lies on the start→target ray, and rolls it about that
    ray until the mid joint lies in the half-plane of the pole (rotated by ``twist``).

    Parameters
    ----------
    skeleton
        The skeleton; ``start`` must be an ancestor of ``mid`` and ``mid`` of ``end`` (joints in
        between, such as twist joints, are allowed and keep their local rotations).
    model
        ``(..., J, 4, 4)`` model-space matrices of the **current** pose, e.g.
        ``local_to_model(skeleton, pose.matrices())``. The chain joints' parents must be
        similarities (rotation and positive uniform scale, any amount: centimetre rigs are fine);
        the chain joints' own scales may be non-uniform.
    start, mid, end
        Joint indices or names.
    target
        ``(..., 3)`` model-space position for the end joint.
    pole
        ``(..., 3)`` model-space direction (not a position) towards which the mid joint bends,
        e.g. the character's forward for a knee. Only its part perpendicular to start→target
        counts. A zero vector raises :class:`~engine.errors.DegenerateInputError`.
    mid_axis
        ``(..., 3)`` hinge axis of the mid joint in its own local frame (the frame of its model
        matrix); the knee bends by a positive (right-handed) rotation about it. ``None`` takes the
        current bend, ``(mid − start) × (end − mid)``, or for a straight chain
        ``pole × (end − start)``.
    soften
        In ``[0, 1]``: beyond ``soften × (l1 + l2)`` from the start joint the reach distance is
        eased as ``da + ds·(1 − exp(−(d − da)/ds))`` (``da = soften·L``, ``ds = L − da``), so the
        chain approaches full extension smoothly and never snaps straight; 1 disables it.
    twist
        ``(...)`` radians: extra roll of the solved chain about the start→target axis (right
        hand), applied to the pole direction.
    weight
        ``(...)`` in ``[0, 1]``: each correction is ``slerp(identity, correction, weight)``; 0
        gives back the input pose, 1 the solved one.
    keep_end_rotation
        Also return a correction for the end joint that keeps its model-space orientation (a
        foot stays flat while the leg moves).
    tolerance
        Model-space distance under which the end counts as on the target (``reached``).

    Returns
    -------
    IKResult
        ``joints = (start, mid)`` or ``(start, mid, end)`` with ``keep_end_rotation``;
        ``corrections`` ``(..., 2 or 3, 4)`` in that order, each to post-multiply onto that
        joint's local rotation (``local * correction``, see :func:`apply_corrections`);
        ``reached`` ``(...)`` is True where the solved end joint (at weight 1) lies within
        ``tolerance`` of the target.

    Raises
    ------
    InvalidInputError
        Wrong shapes, NaN/inf, ``soften``/``weight`` outside ``[0, 1]``.
    DegenerateInputError
        Zero ``pole`` or zero ``mid_axis``.
    SkeletonMismatchError
        Unknown joints, or ``start``, ``mid``, ``end`` not in one parent chain.

    Notes
    -----
    Outcomes of the degenerate cases, none of which produces NaN:

    - **Unreachable target** (farther than ``l1 + l2``): the chain straightens along the
      start→target ray, knee rolled towards the pole; ``reached`` is False.
    - **Too close** (nearer than ``|l1 − l2|``): the chain folds as far as the hinge allows
      along the start→target ray; ``reached`` is False.
    - **Target on the start joint**: the ray falls back to the current start→end direction and
      the chain folds to ``|l1 − l2|`` along it; ``reached`` only when ``l1 == l2``.
    - **Zero-length bone** (``l1`` or ``l2`` = 0): the hinge has no effect; the start joint aims
      the remaining bone at the target; ``reached`` where its length equals the distance. Both
      zero: identity corrections.
    - **Pole parallel to start→target**: the knee keeps its current side (then ``twist``
      applies); if the chain is also straight, the side is the one the hinge bends towards.
    - **Straight chain** with no ``mid_axis``: the hinge is ``pole × (end − start)``, so the knee
      bends towards the pole; with the pole along the chain as well, any perpendicular.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Skeleton, local_to_model
    >>> leg = Skeleton(["hip", "knee", "ankle"], [-1, 0, 1],
    ...                rest_translations=[[0, 1, 0], [0, -0.5, 0], [0, -0.5, 0]])
    >>> pose = leg.rest_pose
    >>> model = local_to_model(leg, pose.matrices())
    >>> result = two_bone_ik(leg, model, "hip", "knee", "ankle", [0, 0.2, 0.3], pole=[0, 0, 1])
    >>> bool(result.reached)
    True
    >>> solved = local_to_model(leg, result.apply(pose).matrices())
    >>> np.round(solved[2, :3, 3], 6) + 0.0
    array([0. , 0.2, 0.3])
    """
    joints = parent_chain(skeleton, (start, mid, end), "start, mid, end", min_length=3)
    chain = gather_model(skeleton, model, joints)
    target = as_array(target, "target", (3,))
    pole = check_unit_axis(pole, "pole")
    twist = as_array(twist, "twist")
    weight = check_weight(weight, "weight")
    soften = float(soften)
    if not 0.0 <= soften <= 1.0:
        raise InvalidInputError(f"soften must lie in [0, 1], got {soften}")
    tolerance = check_nonnegative(tolerance, "tolerance")
    hinge_local = None if mid_axis is None else check_unit_axis(mid_axis, "mid_axis")
    batch = batch_shape(
        model=chain.shape[:-3],
        target=target.shape[:-1],
        pole=pole.shape[:-1],
        twist=twist.shape,
        weight=weight.shape,
        mid_axis=() if hinge_local is None else hinge_local.shape[:-1],
    )

    a, b, c = chain[..., 0, :3, 3], chain[..., 1, :3, 3], chain[..., 2, :3, 3]
    frames = frame_rotations(chain if keep_end_rotation else chain[..., :2, :, :])
    v1, v2 = b - a, c - b
    l1, l2 = norm(v1), norm(v2)
    reach = l1 + l2

    # Direction of the start→target ray (falls back to start→end, then the first bone, then +X).
    to_target = target - a
    distance = norm(to_target)
    ray, ray_ok = unit(to_target)
    for fallback in (c - a, v1):
        candidate, candidate_ok = unit(fallback)
        ray = choose(ray_ok, ray, candidate)
        ray_ok = ray_ok | candidate_ok

    # Hinge axis in model space.
    if hinge_local is None:
        hinge, hinge_ok = unit(cross(v1, v2), _RELATIVE_EPS * l1 * l2)
        from_pole, from_pole_ok = unit(cross(pole, c - a), _RELATIVE_EPS * norm(c - a))
        hinge = choose(hinge_ok, hinge, choose(from_pole_ok, from_pole, perpendicular(ray)))
    else:
        hinge = rotate(frames[..., 1, :], hinge_local)

    # Reach distance, eased near full extension.
    start_soft = soften * reach
    soft_span = reach - start_soft
    eased = start_soft + soft_span * (1.0 - np.exp(-(distance - start_soft) / np.where(soft_span > 0, soft_span, 1.0)))
    reach_distance = np.where((distance > start_soft) & (soft_span > 0), eased, distance)

    # Mid joint: turn the second bone about the hinge so |v1 + R v2| = reach_distance, i.e.
    # A + B cos φ + C sin φ = E; pick the root closest to φ = 0 (keeps the bend side).
    v2_along = dot(v2, hinge)[..., None] * hinge
    v2_across = v2 - v2_along
    coef_a = dot(v1, v2_along)
    coef_b = dot(v1, v2_across)
    coef_c = dot(v1, cross(hinge, v2_across))
    rhs = 0.5 * (reach_distance**2 - l1**2 - l2**2)
    amplitude = np.hypot(coef_b, coef_c)
    movable = amplitude > _RELATIVE_EPS * l1 * l2
    phase = np.arctan2(coef_c, coef_b)
    spread = np.arccos(np.clip((rhs - coef_a) / np.where(movable, amplitude, 1.0), -1.0, 1.0))
    plus, minus = _wrap(phase + spread), _wrap(phase - spread)
    bend = np.where(np.abs(plus) <= np.abs(minus) + _RELATIVE_EPS, plus, minus)
    mid_turn = from_axis_angle(hinge, np.where(movable, bend, 0.0))
    end_after_mid = b + rotate(mid_turn, v2)

    # Start joint: aim the end along the ray, then roll the knee into the pole half-plane.
    aim = shortest_arc(end_after_mid - a, ray, fallback=hinge)
    knee = rotate(aim, v1)
    knee_side, knee_ok = unit(knee - dot(knee, ray)[..., None] * ray, _RELATIVE_EPS * l1)
    hinge_side, hinge_side_ok = unit(cross(ray, rotate(aim, hinge)))
    knee_side = choose(knee_ok, knee_side, hinge_side)
    knee_ok = knee_ok | hinge_side_ok
    pole_side, pole_ok = unit(pole - dot(pole, ray)[..., None] * ray, _RELATIVE_EPS)
    pole_side = rotate(from_axis_angle(ray, twist), choose(pole_ok, pole_side, knee_side))
    roll = np.where(knee_ok, signed_angle(knee_side, pole_side, ray), twist)
    roll = np.where(reach > 0.0, roll, 0.0)
    start_turn = mul(from_axis_angle(ray, roll), aim)

    solved_end = a + rotate(start_turn, end_after_mid - a)
    reached = norm(solved_end - target) <= tolerance

    corrections = [in_frame(frames[..., 0, :], start_turn), in_frame(frames[..., 1, :], mid_turn)]
    if keep_end_rotation:
        end_motion = mul(start_turn, mid_turn)
        corrections.append(in_frame(frames[..., 2, :], conj(end_motion)))
    else:
        joints = joints[:2]
    stacked = np.stack([np.broadcast_to(c, (*batch, 4)) for c in corrections], axis=-2)
    return IKResult(joints, weighted(stacked, weight), np.broadcast_to(reached, batch).copy())
