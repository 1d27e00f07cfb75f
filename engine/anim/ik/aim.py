"""Aim / look-at IK: turn a joint (optionally spread over a chain) so a local axis points at a target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.anim.ik._core import (
    IKResult,
    JointRef,
    batch_shape,
    check_nonnegative,
    check_unit_axis,
    check_weight,
    frame_rotations,
    gather_model,
    in_frame,
    parent_chain,
    signed_angle,
    weighted,
)
from engine.anim.skeleton import Skeleton
from engine.errors import DegenerateInputError, InvalidInputError
from engine.math._checks import as_array
from engine.math.kernels import cross, dot, from_axis_angle, mul, norm, power, rotate, shortest_arc, unit

#: Sine of the angle under which ``up`` counts as parallel to ``forward``.
_PARALLEL_SINE = 1e-6
#: Relative length under which a projection onto the aim plane counts as zero.
_RELATIVE_EPS = 1e-9


def aim_ik(
    skeleton: Skeleton,
    model: Any,
    chain: JointRef | Sequence[JointRef],
    target: Any,
    forward: Any,
    *,
    up: Any | None = None,
    pole: Any = (0.0, 1.0, 0.0),
    offset: Any = (0.0, 0.0, 0.0),
    chain_weights: Any | None = None,
    weight: Any = 1.0,
    tolerance: float = 1e-6,
) -> IKResult:
    """Turn the last joint of ``chain`` (a head, a turret) so its ``forward`` axis aims at ``target``.

    The aim ray starts at ``offset`` in the last joint's frame (the eyes, a gun's muzzle) and
    runs along ``forward``; the solve makes that ray pass through the target, not just the
    joint's origin. With ``up`` the joint is also rolled about the joint→target axis so its up
    axis lies in the half-plane of ``pole`` (keeping the target on the ray). With several
    joints (neck, head) the rotation is spread root-most first: joint ``i`` takes the fraction
    ``chain_weights[i]`` of the aim rotation still needed at that point. Where that spread
    cannot reach the target (the earlier turns swing the last joint too close to it), the
    last joint aims alone, when that reaches it.

    Parameters
    ----------
    skeleton
        The skeleton.
    model
        ``(..., J, 4, 4)`` model-space matrices of the current pose (``local_to_model``); the
        chain joints' parents must be similarities (positive uniform scale).
    chain
        One joint, or joints root-most first, each an ancestor of the next (intermediate joints
        allowed); ``forward``, ``up`` and ``offset`` belong to the **last** one.
    target
        ``(..., 3)`` model-space point to aim at.
    forward
        ``(..., 3)`` aiming axis in the last joint's local frame (normalised here).
    up
        ``(..., 3)`` local axis of the last joint to roll towards ``pole``; must not be parallel
        to ``forward``. ``None`` leaves the roll to the shortest aim rotation.
    pole
        ``(..., 3)`` model-space direction the up axis should lean towards (default +Y).
    offset
        ``(..., 3)`` origin of the aim ray in the last joint's local frame, in its model matrix's
        units (scale included).
    chain_weights
        ``(N,)`` in ``[0, 1]``: the fraction of the remaining aim rotation each joint takes,
        root-most first. Default ``1 / (N − i)``: equal shares, the last joint finishing the
        aim. A last weight below 1 leaves the aim partial.
    weight
        ``(...)`` in ``[0, 1]``: each correction becomes ``slerp(identity, correction, weight)``.
    tolerance
        Model-space distance from the target to the final aim ray under which ``reached``.

    Returns
    -------
    IKResult
        ``joints`` the chain root-most first; ``corrections`` ``(..., N, 4)`` to post-multiply
        onto each joint's local rotation (``local * correction``); ``reached`` ``(...)`` True
        where the target lies on the solved aim ray (in front of its origin) within
        ``tolerance``, at weight 1.

    Raises
    ------
    InvalidInputError
        Wrong shapes, NaN/inf, weights outside ``[0, 1]``.
    DegenerateInputError
        Zero ``forward``/``up``/``pole``, or ``up`` parallel to ``forward``.
    SkeletonMismatchError
        Unknown joints, or a chain that is not one parent chain.

    Notes
    -----
    Degenerate cases and their outcomes (never NaN):

    - **Target parallel to the pole** (looking straight up with ``pole`` = up): the roll is
      undefined, so none is applied; the roll is whatever the shortest aim rotation gives.
    - **Up axis along the joint→target axis** after aiming (only with large offsets): no roll.
    - **Target behind the joint** (180° away): the half turn is about the up axis (or any
      perpendicular without ``up``), like a turret turning around.
    - **Target on a joint's pivot**: that joint does not turn.
    - **Target closer to the pivot than the aim ray passes** (inside the ray's offset circle):
      the closest aim is taken (the ray's nearest point to the pivot turned towards the
      target); ``reached`` is False.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Skeleton, local_to_model
    >>> neck = Skeleton(["neck", "head"], [-1, 0], rest_translations=[[0, 1.5, 0], [0, 0.1, 0]])
    >>> pose = neck.rest_pose
    >>> model = local_to_model(neck, pose.matrices())
    >>> result = aim_ik(neck, model, ["neck", "head"], [1.0, 1.6, 1.0], forward=[0, 0, 1], up=[0, 1, 0])
    >>> bool(result.reached)
    True
    """
    joints = parent_chain(skeleton, chain, "chain", min_length=1)
    count = joints.size
    frames_model = gather_model(skeleton, model, joints)
    target = as_array(target, "target", (3,))
    forward = check_unit_axis(forward, "forward")
    offset = as_array(offset, "offset", (3,))
    pole = check_unit_axis(pole, "pole")
    up_local = None
    if up is not None:
        up_local = check_unit_axis(up, "up")
        sine = norm(cross(up_local, forward))
        if np.any(sine < _PARALLEL_SINE):
            raise DegenerateInputError(
                f"up must not be parallel to forward (no roll is defined), got sin(angle) = {float(sine.min()):.3g}"
            )
    weight = check_weight(weight, "weight")
    tolerance = check_nonnegative(tolerance, "tolerance")
    if chain_weights is None:
        shares = 1.0 / (count - np.arange(count))
    else:
        shares = check_weight(chain_weights, "chain_weights")
        if shares.shape != (count,):
            raise InvalidInputError(f"chain_weights must have shape ({count},) for {count} joints, got {shares.shape}")
    batch = batch_shape(
        model=frames_model.shape[:-3],
        target=target.shape[:-1],
        forward=forward.shape[:-1],
        up=() if up_local is None else up_local.shape[:-1],
        pole=pole.shape[:-1],
        offset=offset.shape[:-1],
        weight=weight.shape,
    )

    pivots = np.broadcast_to(frames_model[..., :3, 3], (*batch, count, 3)).copy()
    frames = np.broadcast_to(frame_rotations(frames_model), (*batch, count, 4)).copy()
    last = frames_model[..., -1, :, :]
    origin = np.broadcast_to(np.einsum("...ij,...j->...i", last[..., :3, :3], offset) + last[..., :3, 3], (*batch, 3))
    direction = rotate(frames[..., -1, :], forward)
    up_axis = None if up_local is None else rotate(frames[..., -1, :], up_local)
    corrections = np.empty((*batch, count, 4))

    for i in range(count):  # chain links, root-most first
        pivot = pivots[..., i, :]
        to_target = target - pivot
        from_pivot = origin - pivot
        along = dot(from_pivot, direction)
        # Point of the aim ray as far from the pivot as the target: turning it onto the target
        # puts the target on the ray. No such point: the ray's nearest point (closest aim).
        discriminant = along**2 - dot(from_pivot, from_pivot) + dot(to_target, to_target)
        on_ray = from_pivot + (np.sqrt(np.maximum(discriminant, 0.0)) - along)[..., None] * direction
        turn = shortest_arc(on_ray, to_target, fallback=up_axis)
        if up_axis is not None:
            axis, axis_ok = unit(to_target)
            turned_up = rotate(turn, up_axis)
            up_side, up_ok = unit(turned_up - dot(turned_up, axis)[..., None] * axis, _RELATIVE_EPS)
            pole_side, pole_ok = unit(pole - dot(pole, axis)[..., None] * axis, _RELATIVE_EPS)
            roll = np.where(axis_ok & up_ok & pole_ok, signed_angle(up_side, pole_side, axis), 0.0)
            turn = mul(from_axis_angle(axis, roll), turn)
        if shares[i] != 1.0:
            turn = power(turn, shares[i])
        corrections[..., i, :] = in_frame(frames[..., i, :], turn)
        pivots[..., i + 1 :, :] = pivot[..., None, :] + rotate(
            turn[..., None, :], pivots[..., i + 1 :, :] - pivot[..., None, :]
        )
        frames[..., i:, :] = mul(turn[..., None, :], frames[..., i:, :])
        origin = pivot + rotate(turn, origin - pivot)
        direction = rotate(turn, direction)
        if up_axis is not None:
            up_axis = rotate(turn, up_axis)

    miss = target - origin
    ahead = dot(miss, direction)
    off_ray = norm(miss - ahead[..., None] * direction)
    reached = (ahead >= -tolerance) & (off_ray <= tolerance)
    corrections = weighted(corrections, weight)
    if shares[-1] == 1.0 and np.any(shares[:-1] > 0.0) and not reached.all():
        # The earlier joints' shares can swing the last joint so close to the target that its
        # aim ray can no longer pass through it; the last joint alone may still get there.
        alone = aim_ik(
            skeleton,
            model,
            chain,
            target,
            forward,
            up=up,
            pole=pole,
            offset=offset,
            chain_weights=np.eye(count)[-1],
            weight=weight,
            tolerance=float(tolerance),
        )
        better = ~reached & alone.reached
        corrections = np.where(better[..., None, None], alone.corrections, corrections)
        reached = reached | alone.reached
    return IKResult(joints, corrections, reached)
