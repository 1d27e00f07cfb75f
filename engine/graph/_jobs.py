"""The graph runtime's only calls into the pose jobs of :mod:`engine.anim` (sample, blend, additive, model).

Kept in one place so that signature changes of those jobs are one edit here: every pose the
graph makes or combines goes through these functions.
"""

from __future__ import annotations

from typing import Any

from engine.anim.additive import additive_pose, apply_additive
from engine.anim.blending import blend
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.sampling import CompiledClip, sample
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity, VelocityTable, sample_with_velocity, velocity_table
from engine.math._checks import FloatArray


def sample_pose(clip: CompiledClip, skeleton: Skeleton, times: FloatArray, out: Pose | None = None) -> Pose:
    """``clip``'s local pose at ``times`` ``(K,)``: ``(K, J)`` (written into ``out`` when given)."""
    return sample(clip, skeleton.rest_pose, times, out=out)


def sample_pose_velocity(
    clip: CompiledClip, skeleton: Skeleton, times: FloatArray, loop: bool, side: str
) -> tuple[Pose, PoseVelocity]:
    """``clip``'s pose and velocity per second of clip time at ``times`` ``(K,)``, one sampling pass."""
    return sample_with_velocity(clip, skeleton, times, loop=loop, side=side)


def velocity_lookup(clip: CompiledClip, skeleton: Skeleton) -> VelocityTable | None:
    """``clip``'s per-segment velocity table (``None`` when it has cubic channels)."""
    return velocity_table(clip, skeleton)


def blend_layers(layers: Pose, weights: FloatArray, masks: Any, skeleton: Skeleton, out: Pose | None = None) -> Pose:
    """Blend stacked layers ``(N, K, J)`` with weights ``(N, K)`` and optional masks ``(N, J)``.

    The graph's weights sum to 1 at every joint, so the rest pose never fills in.
    """
    return blend(skeleton.rest_pose, layers, weights, masks, out=out)


def add_pose(base: Pose, pose: Pose, reference: Pose, weight: FloatArray, mask: Any) -> tuple[Pose, Pose]:
    """``base`` plus ``pose``'s difference from ``reference`` at ``weight`` ``(K,)``; returns (result, delta)."""
    delta = additive_pose(pose, reference)
    return apply_additive(base, delta, weight, mask), delta


def model_matrices(skeleton: Skeleton, pose: Pose, out: FloatArray | None = None) -> FloatArray:
    """Model-space matrices ``(C, J, 4, 4)`` of the local pose."""
    return model_from_pose(skeleton, pose, out=out)
