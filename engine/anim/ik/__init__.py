"""Inverse kinematics on batched model-space poses: two-bone, aim/look-at, CCD and FABRIK; foot locking.

Every solver reads the **model-space** matrices of the current pose (an array ``(..., J, 4, 4)``
or a :class:`~engine.anim.layout.MatrixBuffer`), takes targets in model space, and returns an
:class:`IKResult`: unit quaternions to multiply onto the joints' **local** rotations on the
right (``local * correction``), root-most joint first, and a ``reached`` flag per character.
:func:`apply_corrections` (or ``result.apply(pose)``) writes them into a pose, in place with
``out=``. All solvers are batched over leading axes (characters); the iterative ones loop over
iterations and chain links only.

In a frame, IK is a post-blend stage of the animator's staged frame
(:class:`~engine.animator.Animator`): the model matrices are composed once, each correction
goes into the animator's pose in place, and only the corrected subtrees are recomposed::

    animator.advance(dt)                         # blended local pose
    model = animator.update_model()              # local → model, once
    for hip, knee, ankle, target, pole in legs:  # solved on the same matrices
        animator.apply_corrections(two_bone_ik(skeleton, model, hip, knee, ankle, target, pole))
    model = animator.update_model()              # the two legs' subtrees only
    animator.apply_corrections(aim_ik(skeleton, model, ["neck", "head"], look_target, forward=[0, 0, 1]))
    animator.finalize()                          # the neck's subtree, then the palette

Without an animator, the same with the jobs: ``model_from_pose(skeleton, pose, out=model,
from_joint=hip)`` after ``apply_corrections(pose, result, out=pose)``.
"""

from engine.anim.ik._core import IKResult, apply_corrections
from engine.anim.ik.aim import aim_ik
from engine.anim.ik.chain import ccd_ik, fabrik_ik
from engine.anim.ik.foot_lock import FootLock
from engine.anim.ik.two_bone import two_bone_ik

__all__ = ["FootLock", "IKResult", "aim_ik", "apply_corrections", "ccd_ik", "fabrik_ik", "two_bone_ik"]
