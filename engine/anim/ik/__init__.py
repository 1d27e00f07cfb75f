"""Inverse kinematics on batched model-space poses: two-bone, aim/look-at, CCD and FABRIK.

Every solver reads the **model-space** matrices of the current pose (``local_to_model`` of the
pose you are about to correct), takes targets in model space, and returns an
:class:`IKResult`: unit quaternions to multiply onto the joints' **local** rotations on the
right (``local * correction``), root-most joint first, and a ``reached`` flag per character.
:func:`apply_corrections` (or ``result.apply(pose)``) writes them into a
:class:`~engine.anim.pose.Pose`. All solvers are batched over leading axes (characters);
the iterative ones loop over iterations and chain links only.

A frame's pipeline with IK::

    model = local_to_model(skeleton, pose.matrices())
    pose = two_bone_ik(skeleton, model, "hip", "knee", "ankle", foot_targets, pole).apply(pose)
    model = local_to_model(skeleton, pose.matrices())
    pose = aim_ik(skeleton, model, ["neck", "head"], look_targets, forward=[0, 0, 1]).apply(pose)
"""

from engine.anim.ik._core import IKResult, apply_corrections
from engine.anim.ik.aim import aim_ik
from engine.anim.ik.chain import ccd_ik, fabrik_ik
from engine.anim.ik.two_bone import two_bone_ik

__all__ = ["IKResult", "aim_ik", "apply_corrections", "ccd_ik", "fabrik_ik", "two_bone_ik"]
