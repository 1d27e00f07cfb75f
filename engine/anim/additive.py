"""Additive layers: poses and clips stored as differences from a reference, applied on top.

A delta (additive) pose holds, per joint,

- rotation ``Δr = r · ref_r⁻¹``, applied *after* the base rotation, in the joint's parent
  space: ``r' = Δr_w · base_r`` (Hamilton product, ``docs/conventions.md``) with
  ``Δr_w = slerp(identity, Δr, w)``;
- translation ``Δt = t - ref_t``, applied as ``t' = base_t + w · Δt``;
- scale ``Δs = s / ref_s`` (multiplicative: scales compose by multiplying), applied as
  ``s' = base_s · (1 + w · (Δs - 1))``, a lerp of the factor from 1 to ``Δs`` that is exact at
  ``w = 0`` and ``w = 1`` and, unlike ``Δs ** w``, stays defined for mirrored (negative) scales.

With ``w = 1`` and ``base = ref`` the original pose comes back exactly, and the additive pose
of the reference itself is the identity ``(0, (0, 0, 0, 1), 1)``.

An additive *clip* (:func:`additive_clip`) stores those deltas in its keys. Sample it with the
identity as its rest pose (``sample(delta_clip, Pose.identity(J), t)``) instead of the
character's rest pose, so that joints the clip does not animate come out as the identity delta.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import DegenerateInputError, InvalidInputError, SkeletonMismatchError
from engine.math import kernels
from engine.math._checks import FloatArray, as_array, trusted
from engine.math.quat import quat_conjugate, quat_identity, quat_multiply, quat_normalize

#: Tolerance under which a constant delta counts as the identity in :func:`additive_clip`
#: (joints without channels then need no constant channel).
IDENTITY_TOLERANCE = 1e-12


def _check_scale(scales: FloatArray, name: str) -> None:
    if np.any(np.abs(scales) < 1e-12):
        raise DegenerateInputError(f"{name} has a zero scale component: a multiplicative delta is undefined there")


def additive_pose(pose: Pose, reference: Pose) -> Pose:
    """The delta pose that turns ``reference`` into ``pose`` (see the module docstring).

    Parameters
    ----------
    pose
        Pose ``(..., J)``.
    reference
        Reference pose broadcastable to ``(..., J)``, e.g. a clip's first frame or the rest pose.

    Returns
    -------
    Pose
        ``(Δt, Δr, Δs) = (t - ref_t, r · ref_r⁻¹, s / ref_s)``, rotations unit.

    Raises
    ------
    SkeletonMismatchError
        ``pose`` and ``reference`` have different joint counts.
    DegenerateInputError
        A zero scale component in ``reference``.
    """
    if pose.num_joints != reference.num_joints:
        raise SkeletonMismatchError(
            f"pose has {pose.num_joints} joints but reference has {reference.num_joints}: different skeletons"
        )
    _check_scale(reference.scales, "reference")
    rotation = quat_multiply(pose.rotations, quat_conjugate(quat_normalize(reference.rotations)))
    return Pose(pose.translations - reference.translations, quat_normalize(rotation), pose.scales / reference.scales)


def apply_additive(base: Pose, delta: Pose, weight: Any = 1.0, mask: Any = None) -> Pose:
    """``base`` with the delta pose ``delta`` added at ``weight`` (see the module docstring).

    Parameters
    ----------
    base
        Pose ``(..., J)``: the result of the override layers.
    delta
        Delta pose broadcastable to ``(..., J)``, from :func:`additive_pose` or a sampled
        :func:`additive_clip`.
    weight
        Scalar, or one weight per character shaped like the batch axes ``(...)``; finite and
        non-negative (values above 1 exaggerate the delta, as ``slerp`` extrapolates).
    mask
        Optional per-joint weights ``(J,)`` multiplying ``weight`` (:func:`~engine.anim.blending.subtree_mask`),
        or per character and joint, shaped like ``base`` ``(..., J)``.

    Returns
    -------
    Pose
        ``(base_t + w Δt, slerp(1, Δr, w) · base_r, base_s · (1 + w (Δs - 1)))``.

    Raises
    ------
    InvalidInputError
        Negative or NaN weights, or a mask of the wrong shape.
    SkeletonMismatchError
        ``base``, ``delta`` or the mask with different joint counts.
    """
    if base.num_joints != delta.num_joints:
        raise SkeletonMismatchError(
            f"base has {base.num_joints} joints but delta has {delta.num_joints}: different skeletons"
        )
    w = as_array(weight, "weight")
    if np.any(w < 0.0):
        raise InvalidInputError(f"weight must be non-negative, got {float(w.min())}")
    w = w[..., None]  # (..., 1) over joints
    if mask is not None:
        per_joint = as_array(mask, "mask")
        if per_joint.ndim != 1 and per_joint.shape != base.shape:
            raise InvalidInputError(f"mask must have shape (J,) or {base.shape}, got {per_joint.shape}")
        if per_joint.shape[-1] != base.num_joints:
            raise SkeletonMismatchError(f"mask has {per_joint.shape[-1]} joints but the poses have {base.num_joints}")
        if np.any(per_joint < 0.0):
            raise InvalidInputError(f"mask must be non-negative, got {float(per_joint.min())}")
        w = w * per_joint
    batch = np.broadcast_shapes(base.shape, delta.shape, w.shape)
    t, r, s = (np.broadcast_to(a, (*batch, a.shape[-1])).copy() for a in base.arrays())
    delta_t, delta_r, delta_s = delta.arrays()
    with trusted():  # unit and finite by construction
        return Pose(*add_into((t, r, s), (delta_t, delta_r, delta_s), w, axis=-1))


def add_into(
    base: tuple[FloatArray, FloatArray, FloatArray],
    delta: tuple[FloatArray, FloatArray, FloatArray],
    weight: FloatArray,
    *,
    axis: int,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The additive formula of the module docstring, in place in ``base``: the one copy of it.

    ``base`` and ``delta`` are ``(translations, rotations, scales)`` with the components on
    ``axis`` — ``-1`` for poses ``(..., J, k)``, ``0`` for :class:`~engine.anim.layout.PoseBuffer`
    rows ``(k, J, B)`` — and ``weight`` broadcasts against one component (``(..., J)`` or
    ``(J, B)``). Unchecked: the inputs were validated by the caller. Returns ``base``.
    """
    t, r, s = base
    delta_t, delta_r, delta_s = (np.moveaxis(a, axis, -1) for a in delta)
    partial = kernels.power(delta_r, weight)  # slerp(identity, Δr, w) along the shortest arc
    kernels.mul_into(np.moveaxis(r, axis, 0), np.moveaxis(partial, -1, 0), np.moveaxis(r, axis, 0))
    w = np.expand_dims(weight, axis)
    t += w * np.moveaxis(delta_t, -1, axis)
    s *= 1.0 + w * (np.moveaxis(delta_s, -1, axis) - 1.0)
    return t, r, s


def restrict_clip(clip: Clip, joints: Any) -> Clip:
    """The channels of ``clip`` that animate ``joints``, renumbered ``0 … k-1`` in that order.

    Sampling the result with a ``k``-joint skeleton costs ``k`` joints instead of ``J``: the
    animator samples an additive clip only on the joints it moves (elsewhere its delta is the
    identity) and a root-motion track on the root alone. Markers are kept.

    Parameters
    ----------
    clip
        Any clip.
    joints
        Distinct target indices ``(k,)`` of ``clip``.

    Raises
    ------
    InvalidInputError
        Repeated or out-of-range joint indices.
    """
    index = np.asarray(joints, dtype=np.intp).reshape(-1)
    if np.unique(index).size != index.size or np.any((index < 0) | (index >= clip.num_targets)):
        raise InvalidInputError(
            f"joints must be distinct indices below {clip.num_targets} (clip {clip.name!r}), got {index.tolist()}"
        )
    slot = {int(j): k for k, j in enumerate(index)}
    channels = tuple(
        Channel(slot[c.target], c.path, c.interpolation, c.times, c.values) for c in clip.channels if c.target in slot
    )
    return Clip(clip.name, channels, index.size, clip.markers)


def _delta_values(channel: Channel, t: FloatArray, r: FloatArray, s: FloatArray) -> FloatArray:
    """Channel key values (and cubic tangents) turned into deltas against one joint's reference."""
    values = channel.values
    if channel.path == "rotation":
        # Right-multiplying by a unit quaternion is a linear isometry of R⁴: it commutes with lerp,
        # slerp, normalisation and the cubic Hermite basis, so keys and tangents map the same way.
        return quat_multiply(values, quat_conjugate(r))
    if channel.path == "translation":
        if channel.interpolation == "CUBICSPLINE":
            delta = values.copy()
            delta[:, 1] -= t
            return delta
        return values - t
    return values / s


def additive_clip(clip: Clip, skeleton: Skeleton, reference: Pose | None = None) -> Clip:
    """An additive version of ``clip``: every key stored as a delta against a reference pose.

    Sampled with the identity rest pose, ``sample(result, Pose.identity(J), t)`` equals
    ``additive_pose(sample(clip, skeleton.rest_pose, t), reference)`` at every time ``t``: the delta maps
    are linear in the key values, so step, linear, slerp and cubic-spline interpolation all
    commute with them.

    Parameters
    ----------
    clip
        The source clip, bound to ``skeleton``.
    skeleton
        Its skeleton; joints without a channel take their rest value.
    reference
        Reference pose ``(J,)``. ``None`` takes the clip's first frame: each channel's first key
        (the clip's pose at its start time), so the result starts at the identity.

    Returns
    -------
    Clip
        Same name (suffixed ``"/additive"``), key times and markers. Joints without channels
        get a one-key constant channel when the reference differs from their rest value.

    Raises
    ------
    SkeletonMismatchError
        The clip, skeleton and reference disagree on the joint count.
    DegenerateInputError
        A zero scale in the reference.
    """
    joints = skeleton.num_joints
    if clip.num_targets != joints:
        raise SkeletonMismatchError(
            f"clip {clip.name!r} targets {clip.num_targets} joints but the skeleton has {joints}"
        )
    if reference is None:
        ref_t = skeleton.rest_translations.copy()
        ref_r = skeleton.rest_rotations.copy()
        ref_s = skeleton.rest_scales.copy()
        first = {"translation": ref_t, "rotation": ref_r, "scale": ref_s}
        for channel in clip.channels:  # build time: one pass over channels
            key = channel.values[0, 1] if channel.interpolation == "CUBICSPLINE" else channel.values[0]
            first[channel.path][channel.target] = key
        ref_r = quat_normalize(ref_r)
    else:
        if reference.shape != (joints,):
            raise SkeletonMismatchError(
                f"reference must be one pose of {joints} joints, shape ({joints},), got {reference.shape}"
            )
        ref_t, ref_r, ref_s = reference.translations, quat_normalize(reference.rotations), reference.scales
    _check_scale(ref_s, "reference")
    channels = [
        Channel(
            c.target,
            c.path,
            c.interpolation,
            c.times,
            _delta_values(c, ref_t[c.target], ref_r[c.target], ref_s[c.target]),
        )
        for c in clip.channels
    ]
    animated = {(c.target, c.path) for c in clip.channels}
    rest = additive_pose(skeleton.rest_pose, Pose(ref_t, ref_r, ref_s))
    identity = {"translation": np.zeros(3), "rotation": quat_identity(), "scale": np.ones(3)}
    for path, values in (("translation", rest.translations), ("rotation", rest.rotations), ("scale", rest.scales)):
        for joint in range(joints):  # build time only
            if (joint, path) in animated:
                continue
            value = values[joint]
            if path == "rotation":
                value = value if value[3] >= 0.0 else -value
            if np.max(np.abs(value - identity[path])) > IDENTITY_TOLERANCE:
                channels.append(Channel(joint, path, "STEP", np.zeros(1), value[None]))
    return Clip(f"{clip.name}/additive", tuple(channels), joints, clip.markers)
