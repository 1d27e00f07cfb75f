"""Model-space joint velocities of a local pose moving with a :class:`~engine.anim.velocity.PoseVelocity`.

Forward kinematics of the derivative, one numpy operation per depth level. With ``M_j = [A_j | p_j]``
the model matrix of joint ``j`` (``A`` its 3×3 linear part) and ``T·R·S`` its local transform,

    p_j = p_p + A_p t_j                 ṗ_j = ṗ_p + Ȧ_p t_j + A_p ṫ_j
    A_j = A_p R_j S_j                   Ȧ_j = Ȧ_p R_j S_j + A_p ([ω_j]× R_j S_j + R_j diag(ṡ_j))

for a joint below parent ``p`` (roots: ``p_j = t_j``, ``A_j = R_j S_j``), where ``ω_j`` is the
local angular velocity in the parent's space (``q̇ = ½ ω q``, :mod:`engine.anim.velocity`). Exact
for any scales, shear included.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity
from engine.backend.select import compiled_module, resolve
from engine.errors import SkeletonMismatchError
from engine.math import matrix_from_quat, quat_multiply, trusted
from engine.math._checks import FloatArray, IntArray


def _cross_matrix(w: FloatArray) -> FloatArray:
    """``[w]×`` ``(..., 3, 3)`` of vectors ``(..., 3)``."""
    x, y, z = np.moveaxis(w, -1, 0)
    zero = np.zeros_like(x)
    return np.stack((zero, -z, y, z, zero, -x, -y, x, zero), axis=-1).reshape((*w.shape[:-1], 3, 3))


@dataclass(frozen=True)
class _Chains:
    """The joints asked for and all their ancestors: ``closure`` (ascending), as a skeleton of their own.

    ``wanted`` holds the positions in ``closure`` of the joints asked for.
    """

    closure: IntArray
    skeleton: Skeleton
    wanted: IntArray


@functools.lru_cache(maxsize=64)
def _chains(skeleton: Skeleton, joints: tuple[int, ...]) -> _Chains:
    keep = np.zeros(skeleton.num_joints, dtype=bool)
    for joint in joints:
        j = joint
        while j >= 0 and not keep[j]:
            keep[j] = True
            j = int(skeleton.parents[j])
    closure = np.flatnonzero(keep)
    where = np.full(skeleton.num_joints, -1)
    where[closure] = np.arange(closure.size)
    parents = np.where(skeleton.parents[closure] >= 0, where[skeleton.parents[closure]], -1)
    chains = Skeleton(
        [skeleton.names[j] for j in closure],
        parents,
        skeleton.rest_translations[closure],
        skeleton.rest_rotations[closure],
        skeleton.rest_scales[closure],
    )
    return _Chains(closure, chains, where[list(joints)])


def model_velocities(
    skeleton: Skeleton,
    pose: Pose,
    velocity: PoseVelocity,
    joints: Sequence[int] | None = None,
    *,
    backend: str | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Model-space positions and linear velocities of joints of ``pose`` moving at ``velocity``.

    Parameters
    ----------
    skeleton
        The joint hierarchy.
    pose
        Local pose ``(..., J)``.
    velocity
        Its time derivative ``(..., J)`` (as :func:`~engine.anim.clip_velocity.sample_velocity` gives).
    joints
        The joints wanted (``K`` indices), default all; only they and their ancestors are composed.
    backend
        ``"numba"`` (the compiled :func:`engine.motion_matching._kernels.model_velocities`) or
        ``"numpy"`` (this module's recursion, one numpy operation per depth level); default the
        active one (:mod:`engine.backend.select`). They agree to rounding.

    Returns
    -------
    positions, velocities
        ``(..., K, 3)`` each: model-space joint positions (m) and their rates (m/s).
    """
    count = skeleton.num_joints
    if pose.num_joints != count or velocity.linear.shape != pose.translations.shape:
        raise SkeletonMismatchError(
            f"pose {pose.shape} and velocity {velocity.linear.shape[:-1]} must both have the skeleton's "
            f"{count} joints and one shape"
        )
    chosen = tuple(range(count)) if joints is None else tuple(int(j) for j in joints)
    if any(not 0 <= j < count for j in chosen):
        raise SkeletonMismatchError(f"joints {list(chosen)} must be indices below {count}")
    chains = _chains(skeleton, chosen)
    kept = chains.closure
    with trusted():
        part = PoseVelocity(
            velocity.linear[..., kept, :], velocity.angular[..., kept, :], velocity.scaling[..., kept, :]
        )
    if resolve(backend) == "numba":
        positions, rates = _compiled(chains.skeleton.parents, pose.joints(kept), part)
    else:
        positions, rates = _velocities(chains.skeleton, pose.joints(kept), part)
    return positions[..., chains.wanted, :], rates[..., chains.wanted, :]


def _compiled(parents: IntArray, pose: Pose, velocity: PoseVelocity) -> tuple[FloatArray, FloatArray]:
    """:func:`model_velocities` of every joint of ``pose`` on the compiled kernel."""
    batch, joints = pose.shape[:-1], pose.num_joints

    def rows(values: FloatArray) -> FloatArray:
        return np.ascontiguousarray(values.reshape(-1, joints, values.shape[-1]), dtype=np.float64)

    positions = np.empty((int(np.prod(batch, dtype=np.int64)), joints, 3))
    rates = np.empty_like(positions)
    compiled_module("engine.motion_matching._kernels").model_velocities(
        np.ascontiguousarray(parents, dtype=np.int64),
        (rows(pose.rotations), rows(pose.translations), rows(pose.scales)),
        (rows(velocity.linear), rows(velocity.angular), rows(velocity.scaling)),
        positions,
        rates,
    )
    return positions.reshape((*batch, joints, 3)), rates.reshape((*batch, joints, 3))


def _velocities(skeleton: Skeleton, pose: Pose, velocity: PoseVelocity) -> tuple[FloatArray, FloatArray]:
    """:func:`model_velocities` of every joint (the module docstring's recursion, level by level)."""
    model = model_from_pose(skeleton, pose)
    with trusted():
        rotation = matrix_from_quat(pose.rotations)  # (..., J, 3, 3)
    local = rotation * pose.scales[..., None, :]  # R · diag(s)
    local_rate = _cross_matrix(velocity.angular) @ local + rotation * velocity.scaling[..., None, :]
    offsets, offset_rates = pose.translations[..., None], velocity.linear[..., None]
    linear = model[..., :3, :3]
    linear_rate = np.empty_like(local_rate)
    rates = np.empty_like(offset_rates)
    roots = skeleton.levels[0]
    linear_rate[..., roots, :, :] = local_rate[..., roots, :, :]
    rates[..., roots, :, :] = offset_rates[..., roots, :, :]
    for level in skeleton.plan:  # parents before children
        joints, parents = level.joints, level.parents
        parent_linear = linear[..., parents, :, :]
        parent_rate = linear_rate[..., parents, :, :]
        linear_rate[..., joints, :, :] = (
            parent_rate @ local[..., joints, :, :] + parent_linear @ local_rate[..., joints, :, :]
        )
        rates[..., joints, :, :] = (
            rates[..., parents, :, :]
            + parent_rate @ offsets[..., joints, :, :]
            + parent_linear @ offset_rates[..., joints, :, :]
        )
    return model[..., :3, 3].copy(), rates[..., 0]


def model_rotations(skeleton: Skeleton, rotations: FloatArray) -> FloatArray:
    """Model-space rotations ``(..., J, 4)`` from local ones ``(..., J, 4)``: products down the hierarchy.

    The rotation part of the model matrices when every scale is uniform and positive.
    """
    model = rotations.copy()
    with trusted():
        for level in skeleton.plan:
            model[..., level.joints, :] = quat_multiply(model[..., level.parents, :], model[..., level.joints, :])
    return model
