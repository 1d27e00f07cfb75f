"""Compose local joint transforms parent-to-child into model space."""

from __future__ import annotations

from typing import Any

from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array


def local_to_model(skeleton: Skeleton, local: Any) -> FloatArray:
    """Model-space matrices ``(..., J, 4, 4)`` from local matrices ``(..., J, 4, 4)``.

    ``model[j] = model[parents[j]] @ local[j]``; roots keep their local matrix. One numpy
    operation per depth level of the skeleton, over every character at once.
    """
    local = as_array(local, "local", (4, 4))
    if local.ndim < 3 or local.shape[-3] != skeleton.num_joints:
        raise SkeletonMismatchError(
            f"local must have shape (..., {skeleton.num_joints}, 4, 4) for this skeleton, got {local.shape}"
        )
    model = local.copy()
    for joints in skeleton.levels[1:]:
        parents = skeleton.parents[joints]
        model[..., joints, :, :] = model[..., parents, :, :] @ local[..., joints, :, :]
    return model


def model_from_pose(skeleton: Skeleton, pose: Pose) -> FloatArray:
    """Model-space matrices ``(..., J, 4, 4)`` straight from a local pose ``(..., J, ...)``.

    Same result as ``local_to_model(skeleton, pose.matrices())``.
    """
    if not isinstance(pose, Pose):
        raise InvalidInputError(f"pose must be a Pose, got {type(pose).__name__}")
    if pose.num_joints != skeleton.num_joints:
        raise SkeletonMismatchError(
            f"pose has {pose.num_joints} joints but the skeleton has {skeleton.num_joints} (pose shape {pose.shape})"
        )
    return local_to_model(skeleton, pose.matrices())
