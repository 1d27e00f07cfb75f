"""Runtime animation: immutable skeleton/clip data and stateless jobs over numpy arrays."""

from engine.anim.additive import additive_clip, additive_pose, apply_additive, restrict_clip
from engine.anim.blending import blend, interpolate_poses, slerp_chain, subtree_mask
from engine.anim.clip import Channel, Clip, Clips
from engine.anim.compiled_clip import CompiledClip, compile_clip
from engine.anim.ik import IKResult, aim_ik, apply_corrections, ccd_ik, fabrik_ik, two_bone_ik
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.anim.local_to_model import local_to_model, model_from_pose
from engine.anim.pose import Pose
from engine.anim.retarget import RetargetPlan, plan_retarget, propose_joint_map, retarget_clip, retarget_pose
from engine.anim.sampling import sample, sample_channel
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import joint_matrices, skin_vertices, skin_vertices_dq, skinning_palette

__all__ = [
    "Channel",
    "Clip",
    "Clips",
    "CompiledClip",
    "IKResult",
    "MatrixBuffer",
    "Pose",
    "PoseBuffer",
    "RetargetPlan",
    "Skeleton",
    "Workspace",
    "additive_clip",
    "additive_pose",
    "aim_ik",
    "apply_additive",
    "apply_corrections",
    "blend",
    "ccd_ik",
    "compile_clip",
    "fabrik_ik",
    "interpolate_poses",
    "joint_matrices",
    "local_to_model",
    "model_from_pose",
    "plan_retarget",
    "propose_joint_map",
    "restrict_clip",
    "retarget_clip",
    "retarget_pose",
    "sample",
    "sample_channel",
    "skin_vertices",
    "skin_vertices_dq",
    "skinning_palette",
    "slerp_chain",
    "subtree_mask",
    "two_bone_ik",
]
