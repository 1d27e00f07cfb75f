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

import numpy as np

from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity
from engine.errors import SkeletonMismatchError
from engine.math import matrix_from_quat, quat_multiply, trusted
from engine.math._checks import FloatArray


def _cross_matrix(w: FloatArray) -> FloatArray:
    """``[w]×`` ``(..., 3, 3)`` of vectors ``(..., 3)``."""
    x, y, z = np.moveaxis(w, -1, 0)
    zero = np.zeros_like(x)
    return np.stack((zero, -z, y, z, zero, -x, -y, x, zero), axis=-1).reshape((*w.shape[:-1], 3, 3))


def model_velocities(
    skeleton: Skeleton, pose: Pose, velocity: PoseVelocity, model: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """Model-space positions and linear velocities of every joint of ``pose`` moving at ``velocity``.

    Parameters
    ----------
    skeleton
        The joint hierarchy.
    pose
        Local pose ``(..., J)``.
    velocity
        Its time derivative ``(..., J)`` (as :func:`~engine.anim.velocity.sample_velocity` gives).
    model
        ``model_from_pose(skeleton, pose)`` ``(..., J, 4, 4)`` when the caller has it already.

    Returns
    -------
    positions, velocities
        ``(..., J, 3)`` each: model-space joint positions (m) and their rates (m/s).
    """
    count = skeleton.num_joints
    if pose.num_joints != count or velocity.linear.shape != pose.translations.shape:
        raise SkeletonMismatchError(
            f"pose {pose.shape} and velocity {velocity.linear.shape[:-1]} must both have the skeleton's "
            f"{count} joints and one shape"
        )
    if model is None:
        model = model_from_pose(skeleton, pose)
    with trusted():
        rotation = matrix_from_quat(pose.rotations)  # (..., J, 3, 3)
    local = rotation * pose.scales[..., None, :]  # R · diag(s)
    local_rate = _cross_matrix(velocity.angular) @ local + rotation * velocity.scaling[..., None, :]
    linear = model[..., :3, :3]
    linear_rate = np.empty_like(local_rate)
    rates = np.empty_like(velocity.linear)
    roots = skeleton.levels[0]
    linear_rate[..., roots, :, :] = local_rate[..., roots, :, :]
    rates[..., roots, :] = velocity.linear[..., roots, :]
    for level in skeleton.plan:  # parents before children
        joints, parents = level.joints, level.parents
        parent_linear = linear[..., parents, :, :]
        parent_rate = linear_rate[..., parents, :, :]
        linear_rate[..., joints, :, :] = (
            parent_rate @ local[..., joints, :, :] + parent_linear @ local_rate[..., joints, :, :]
        )
        rates[..., joints, :] = (
            rates[..., parents, :]
            + (parent_rate @ pose.translations[..., joints, :, None])[..., 0]
            + (parent_linear @ velocity.linear[..., joints, :, None])[..., 0]
        )
    return model[..., :3, 3].copy(), rates


def model_rotations(skeleton: Skeleton, rotations: FloatArray) -> FloatArray:
    """Model-space rotations ``(..., J, 4)`` from local ones ``(..., J, 4)``: products down the hierarchy.

    The rotation part of the model matrices when every scale is uniform and positive.
    """
    model = rotations.copy()
    with trusted():
        for level in skeleton.plan:
            model[..., level.joints, :] = quat_multiply(model[..., level.parents, :], model[..., level.joints, :])
    return model
