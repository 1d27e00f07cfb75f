"""Iterative IK for chains of any length: CCD and FABRIK, with optional swing/twist limits.

Both solvers keep the chain as rigid bones: every update is a rotation of one joint about its
own position, applied to the joints below it, so bone lengths never change and the result is
a set of local rotation corrections (FABRIK's positions are turned back into rotations link by
link, which places each bone exactly on FABRIK's direction).

Joint limits are relative to the skeleton's rest pose: with ``local = rest · Δ``, the swing of
``Δ`` (how far the bone axis leaves its rest direction) is at most ``max_swing`` and its twist
about the bone axis at most ``max_twist`` in either direction. The bone axis of a joint is the
direction to the next chain joint in the joint's own frame (for a zero-length bone, local +Y).
Limits are enforced on every update, and an input pose outside them is first pulled inside
(root first), so the solved pose (weight 1) always satisfies them; a weight below 1 blends
towards the input pose, which may lie outside.

Inputs are model-space matrices of the current pose and model-space targets; the returned
corrections are local, to post-multiply onto the chain joints' local rotations (see
:class:`~engine.anim.ik.IKResult`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.anim.ik._core import (
    BoolArray,
    IKResult,
    JointRef,
    batch_shape,
    check_nonnegative,
    check_weight,
    choose,
    frame_rotations,
    gather_model,
    in_frame,
    parent_chain,
    weighted,
)
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray, as_array
from engine.math.kernels import (
    IDENTITY,
    conj,
    left_matrix,
    mul,
    norm,
    normalize,
    rotate,
    rotation_matrix,
    shortest_arc,
    swing_twist_clamp,
    unit,
)

_Y_AXIS = np.array([0.0, 1.0, 0.0])


class _Limits:
    """Rest-relative swing/twist limits of the rotating joints of a chain, and their local rotations."""

    def __init__(
        self,
        local_rotations: FloatArray,
        rest: FloatArray,
        axes: FloatArray,
        max_swing: FloatArray,
        max_twist: FloatArray,
    ) -> None:
        self.local_rotations = local_rotations  # (..., N-1, 4) current local rotations, updated
        self.rest = rest  # (N-1, 4) rest local rotations
        self.axes = axes  # (..., N-1, 3) bone axes in each joint's own frame
        self.max_swing = max_swing  # (N-1,)
        self.max_twist = max_twist  # (N-1,)

    def limit(self, link: int, frame: FloatArray, rotation: FloatArray, frozen: BoolArray) -> FloatArray:
        """The part of model-space ``rotation`` of joint ``link`` (orientation ``frame``) within limits.

        Records the joint's new local rotation (unchanged where ``frozen``).
        """
        local = self.local_rotations[..., link, :].copy()
        rest = self.rest[link]
        wanted = mul(conj(rest), mul(local, in_frame(frame, rotation)))
        clamped, _ = swing_twist_clamp(wanted, self.axes[..., link, :], self.max_swing[link], self.max_twist[link])
        allowed = np.where(frozen[..., None], local, mul(rest, clamped))
        self.local_rotations[..., link, :] = allowed
        correction = mul(conj(local), allowed)
        return mul(frame, mul(correction, conj(frame)))


class _Chain:
    """Positions and model orientations of a chain being solved, turned one joint at a time.

    Layout: ``positions (..., N, 3)`` and ``frames (..., N, 4)`` in model space, current;
    ``initial (..., N, 4)`` the input frames. The local correction of link ``i`` follows from
    the frames alone: ``conj(W0_i) · W0_{i−1} · conj(W_{i−1}) · W_i`` (``W_{−1}`` = identity for
    the chain root, whose parent never moves; joints between chain joints keep their local
    rotations, so the relation holds across them).
    """

    def __init__(self, positions: FloatArray, frames: FloatArray, limits: _Limits | None) -> None:
        self.positions = positions
        self.frames = frames
        self.initial = frames.copy()
        self.limits = limits

    def corrections(self) -> FloatArray:
        """Local corrections ``(..., N − 1, 4)`` of every rotating joint."""
        parent_motion = mul(self.initial[..., :-2, :], conj(self.frames[..., :-2, :]))
        moved = np.concatenate((self.frames[..., :1, :], mul(parent_motion, self.frames[..., 1:-1, :])), axis=-2)
        return mul(conj(self.initial[..., :-1, :]), moved)

    def turn(self, link: int, rotation: FloatArray, frozen: BoolArray) -> None:
        """Rotate joint ``link`` by the model-space ``rotation`` about itself (within limits)."""
        if self.limits is not None:
            rotation = self.limits.limit(link, self.frames[..., link, :], rotation, frozen)
        elif frozen.any():
            rotation = np.where(frozen[..., None], IDENTITY, rotation)
        # Many joints turned by one rotation each: a matmul per array (rows are vectors).
        pivot = self.positions[..., link : link + 1, :]
        below = self.positions[..., link + 1 :, :] - pivot
        self.positions[..., link + 1 :, :] = pivot + below @ np.swapaxes(rotation_matrix(rotation), -1, -2)
        self.frames[..., link:, :] = self.frames[..., link:, :] @ np.swapaxes(left_matrix(rotation), -1, -2)

    def renormalize(self) -> None:
        """Remove the rounding drift of many quaternion products."""
        self.frames = normalize(self.frames)
        if self.limits is not None:
            self.limits.local_rotations = normalize(self.limits.local_rotations)


def _check_limit(value: Any | None, name: str, links: int) -> FloatArray:
    if value is None:
        return np.full(links, np.pi)
    limit = np.broadcast_to(as_array(value, name), (links,)) if np.ndim(value) == 0 else as_array(value, name)
    if limit.shape != (links,):
        raise InvalidInputError(f"{name} must have shape ({links},), one per rotating joint, got {limit.shape}")
    if np.any((limit < 0.0) | (limit > np.pi)):
        raise InvalidInputError(
            f"{name} must lie in [0, π] radians, got values in [{limit.min():.3g}, {limit.max():.3g}]"
        )
    return limit


def _setup(
    skeleton: Skeleton,
    model: Any,
    chain: Sequence[JointRef],
    target: Any,
    max_swing: Any | None,
    max_twist: Any | None,
    weight: Any,
    max_iterations: int,
    tolerance: float,
) -> tuple[IntArray, _Chain, FloatArray, FloatArray, FloatArray]:
    joints = parent_chain(skeleton, chain, "chain", min_length=2)
    links = joints.size - 1
    chain_model = gather_model(skeleton, model, joints)
    target = as_array(target, "target", (3,))
    weight = check_weight(weight, "weight")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, int | np.integer) or max_iterations < 0:
        raise InvalidInputError(f"max_iterations must be an integer >= 0, got {max_iterations!r}")
    check_nonnegative(tolerance, "tolerance")
    batch = batch_shape(model=chain_model.shape[:-3], target=target.shape[:-1], weight=weight.shape)
    positions = np.broadcast_to(chain_model[..., :3, 3], (*batch, links + 1, 3)).copy()
    frames = np.broadcast_to(frame_rotations(chain_model), (*batch, links + 1, 4)).copy()
    limits = None
    if max_swing is not None or max_twist is not None:
        swing = _check_limit(max_swing, "max_swing", links)
        twist = _check_limit(max_twist, "max_twist", links)
        parents = skeleton.parents[joints[:-1]]
        parent_model = gather_model(skeleton, model, np.maximum(parents, 0))
        parent_frames = np.where((parents >= 0)[:, None], frame_rotations(parent_model), IDENTITY)
        local_rotations = mul(conj(parent_frames), frames[..., :-1, :])
        bones = rotate(conj(frames[..., :-1, :]), positions[..., 1:, :] - positions[..., :-1, :])
        axes, axes_ok = unit(bones)
        axes = choose(axes_ok, axes, _Y_AXIS)
        limits = _Limits(local_rotations, skeleton.rest_rotations[joints[:-1]], axes, swing, twist)
    lengths = norm(positions[..., 1:, :] - positions[..., :-1, :])
    return joints, _Chain(positions, frames, limits), np.broadcast_to(target, (*batch, 3)), weight, lengths


def _solve(
    step: Callable[[_Chain, FloatArray, FloatArray, BoolArray], None],
    skeleton: Skeleton,
    model: Any,
    chain: Sequence[JointRef],
    target: Any,
    max_iterations: int,
    tolerance: float,
    max_swing: Any | None,
    max_twist: Any | None,
    weight: Any,
) -> IKResult:
    joints, state, target, weight, lengths = _setup(
        skeleton, model, chain, target, max_swing, max_twist, weight, max_iterations, tolerance
    )
    if state.limits is not None:  # bring the input pose inside the limits first
        for link in range(lengths.shape[-1]):
            state.turn(link, IDENTITY, np.zeros(target.shape[:-1], dtype=bool))
    done = norm(state.positions[..., -1, :] - target) <= tolerance
    for _ in range(max_iterations):
        if done.all():
            break
        step(state, target, lengths, done)
        state.renormalize()
        done = done | (norm(state.positions[..., -1, :] - target) <= tolerance)
    return IKResult(joints[:-1], weighted(state.corrections(), weight), done)


def _ccd_step(state: _Chain, target: FloatArray, lengths: FloatArray, frozen: BoolArray) -> None:
    """One CCD sweep: from the joint nearest the end to the root, turn the end towards the target."""
    for link in range(lengths.shape[-1] - 1, -1, -1):
        pivot = state.positions[..., link, :]
        state.turn(link, shortest_arc(state.positions[..., -1, :] - pivot, target - pivot), frozen)


def _fabrik_step(state: _Chain, target: FloatArray, lengths: FloatArray, frozen: BoolArray) -> None:
    """One FABRIK iteration: a forward reaching pass on positions, a backward pass as rotations."""
    positions = state.positions
    reaching = positions.copy()
    reaching[..., -1, :] = target
    for link in range(lengths.shape[-1] - 1, -1, -1):
        toward, ok = unit(reaching[..., link, :] - reaching[..., link + 1, :])
        current, _ = unit(positions[..., link, :] - positions[..., link + 1, :])
        reaching[..., link, :] = reaching[..., link + 1, :] + lengths[..., link, None] * choose(ok, toward, current)
    # Out of reach: the straight line towards the target is FABRIK's fixed point; go there at once.
    root = positions[..., :1, :]
    ray, _ = unit(target - root[..., 0, :])
    reach = np.concatenate((np.zeros((*lengths.shape[:-1], 1)), np.cumsum(lengths, axis=-1)), axis=-1)
    straight = root + reach[..., None] * ray[..., None, :]
    too_far = norm(target - root[..., 0, :]) >= reach[..., -1]
    reaching = np.where(too_far[..., None, None], straight, reaching)
    for link in range(lengths.shape[-1]):
        pivot = positions[..., link, :]
        state.turn(link, shortest_arc(positions[..., link + 1, :] - pivot, reaching[..., link + 1, :] - pivot), frozen)


def ccd_ik(
    skeleton: Skeleton,
    model: Any,
    chain: Sequence[JointRef],
    target: Any,
    *,
    max_iterations: int = 20,
    tolerance: float = 1e-4,
    max_swing: Any | None = None,
    max_twist: Any | None = None,
    weight: Any = 1.0,
) -> IKResult:
    """Cyclic coordinate descent: turn each joint, end to root, so the end points at the target.

    One iteration sweeps the rotating joints from the one nearest the end up to the chain's
    root; each takes the shortest rotation that puts the end joint on its joint→target ray
    (clamped to the limits). Cheap per iteration, but it converges more slowly than FABRIK
    and favours the joints nearest the end.

    Parameters
    ----------
    skeleton
        The skeleton.
    model
        ``(..., J, 4, 4)`` model-space matrices of the current pose (``local_to_model``); the
        chain joints' parents must be similarities (positive uniform scale).
    chain
        ``N >= 2`` joints root-most first, each an ancestor of the next (intermediate joints
        allowed; they keep their local rotations). The last joint is the end effector: it is
        moved, not turned.
    target
        ``(..., 3)`` model-space position for the end joint.
    max_iterations
        Upper bound on the number of iterations (sweeps over the chain).
    tolerance
        Model-space distance at which a character counts as converged: from then on it is left
        as it is (so each character's result does not depend on the others in the batch).
    max_swing, max_twist
        ``(N − 1,)`` (or one number for all) radians in ``[0, π]``, per rotating joint
        ``chain[:-1]``: rest-relative swing and twist limits (see the module docstring).
        ``None``: unlimited.
    weight
        ``(...)`` in ``[0, 1]``: each correction becomes ``slerp(identity, correction, weight)``.

    Returns
    -------
    IKResult
        ``joints = chain[:-1]``; ``corrections`` ``(..., N − 1, 4)`` to post-multiply onto each
        joint's local rotation (``local * correction``), root-most first; ``reached`` ``(...)``
        True where the end joint lies within ``tolerance`` of the target (at weight 1).

    Raises
    ------
    InvalidInputError
        Wrong shapes, NaN/inf, limits outside ``[0, π]``, weight outside ``[0, 1]``.
    SkeletonMismatchError
        Unknown joints, or a chain that is not one parent chain.

    Notes
    -----
    Zero-length bones are carried along without turning. A target out of reach leaves the
    chain stretched towards it and ``reached`` False.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Skeleton, local_to_model
    >>> bones = [[0, 0, 0], [0, 1, 0], [0, 1, 0], [0, 1, 0]]
    >>> arm = Skeleton(["a", "b", "c", "d"], [-1, 0, 1, 2], rest_translations=bones)
    >>> model = local_to_model(arm, arm.rest_pose.matrices())
    >>> result = ccd_ik(arm, model, ["a", "b", "c", "d"], [1.5, 1.5, 0.5], max_iterations=100)
    >>> bool(result.reached), result.corrections.shape
    (True, (3, 4))
    """
    return _solve(_ccd_step, skeleton, model, chain, target, max_iterations, tolerance, max_swing, max_twist, weight)


def fabrik_ik(
    skeleton: Skeleton,
    model: Any,
    chain: Sequence[JointRef],
    target: Any,
    *,
    max_iterations: int = 20,
    tolerance: float = 1e-4,
    max_swing: Any | None = None,
    max_twist: Any | None = None,
    weight: Any = 1.0,
) -> IKResult:
    """FABRIK (Aristidou & Lasenby 2011): a reaching pass from the target, then a pass back from the root.

    The reaching pass places the end on the target and each joint at its bone length from
    the next one; the backward pass is done as rotations: from the root down, each joint
    turns its bone onto the direction of the reaching pass's next position (FABRIK's step,
    with lengths kept by construction), clamped to the limits. A target out of reach
    straightens the chain towards it in one iteration.

    Parameters
    ----------
    skeleton
        The skeleton.
    model
        ``(..., J, 4, 4)`` model-space matrices of the current pose (``local_to_model``); the
        chain joints' parents must be similarities (positive uniform scale).
    chain
        ``N >= 2`` joints root-most first, each an ancestor of the next (intermediate joints
        allowed; they keep their local rotations). The last joint is the end effector: it is
        moved, not turned.
    target
        ``(..., 3)`` model-space position for the end joint.
    max_iterations
        Upper bound on the number of iterations (sweeps over the chain).
    tolerance
        Model-space distance at which a character counts as converged: from then on it is left
        as it is (so each character's result does not depend on the others in the batch).
    max_swing, max_twist
        ``(N − 1,)`` (or one number for all) radians in ``[0, π]``, per rotating joint
        ``chain[:-1]``: rest-relative swing and twist limits (see the module docstring).
        ``None``: unlimited.
    weight
        ``(...)`` in ``[0, 1]``: each correction becomes ``slerp(identity, correction, weight)``.

    Returns
    -------
    IKResult
        ``joints = chain[:-1]``; ``corrections`` ``(..., N − 1, 4)`` to post-multiply onto each
        joint's local rotation (``local * correction``), root-most first; ``reached`` ``(...)``
        True where the end joint lies within ``tolerance`` of the target (at weight 1).

    Raises
    ------
    InvalidInputError
        Wrong shapes, NaN/inf, limits outside ``[0, π]``, weight outside ``[0, 1]``.
    SkeletonMismatchError
        Unknown joints, or a chain that is not one parent chain.

    Notes
    -----
    Zero-length bones are carried along without turning. A target out of reach leaves the
    chain stretched towards it and ``reached`` False. Tight limits can stop FABRIK short of a
    target that a differently bent pose would reach: the reaching pass ignores limits, so when
    the pose it heads for bends a joint past its limit, the clamped backward pass keeps landing
    in the same place. CCD, which turns every joint towards the target within its limits,
    copes better with tightly limited chains.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Skeleton, local_to_model
    >>> bones = [[0, 0, 0], [0, 1, 0], [0, 1, 0], [0, 1, 0]]
    >>> arm = Skeleton(["a", "b", "c", "d"], [-1, 0, 1, 2], rest_translations=bones)
    >>> model = local_to_model(arm, arm.rest_pose.matrices())
    >>> result = fabrik_ik(arm, model, ["a", "b", "c", "d"], [1.5, 1.5, 0.5])
    >>> bool(result.reached), result.joints.tolist()
    (True, [0, 1, 2])
    """
    return _solve(_fabrik_step, skeleton, model, chain, target, max_iterations, tolerance, max_swing, max_twist, weight)
