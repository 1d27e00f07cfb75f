"""Playback for game code: actions with time, speed, weight, fades and loops, over C characters.

Modules: :mod:`~engine.animator.animator` (the :class:`Animator` and its staged frame),
:mod:`~engine.animator.action` (:class:`Action`), :mod:`~engine.animator.table` (the typed state
table), :mod:`~engine.animator.sync` (:class:`SyncGroup`, :class:`BlendSpace1D`),
:mod:`~engine.animator.root_motion` (:class:`RootMotion`), :mod:`~engine.animator.markers`
(:class:`MarkerEvent`).

An :class:`Animator` drives ``C`` characters that share one skeleton; each character has its
own clock and its own time, speed and weight in every action. Its state lives in arrays shaped
``(actions, C)``, so a frame has no Python loop over characters (it loops over actions, sync
groups and marker names only).

A frame is staged (ozz-animation's sample → blend → IK → local-to-model → skinning):

1. :meth:`Animator.advance` ``(dt)``: clocks, fades, warps, loop modes; samples each weighted
   clip (:func:`~engine.anim.sampling.sample`), blends the override layers
   (:func:`~engine.anim.blending.blend`), adds the additive ones
   (:func:`~engine.anim.additive.apply_additive`) into :attr:`Animator.pose_buffer`; root motion;
   marker callbacks.
2. Post-blend stages (:attr:`Animator.stages`, or the game's own code): IK, procedural look-at,
   anything that reads the model matrices (:meth:`Animator.update_model`) and corrects the local
   pose in place (:meth:`Animator.apply_corrections`, :meth:`Animator.pose_changed`).
3. :meth:`Animator.finalize`: model matrices
   (:func:`~engine.anim.local_to_model.model_from_pose`: the whole skeleton once, or only the
   subtrees a stage changed) and the skinning palette
   (:func:`~engine.anim.skinning.skinning_palette`).

On the fused path (``Animator(..., backend="numba")``, or ``backend=None`` from 16 characters
up with numba installed; see :class:`Animator`) the sampling and blend of step 1 and the
whole-skeleton composition (model matrices and palette) are two compiled calls of
:mod:`engine.backend` over the same buffers; everything else (additive layers, the root of root
motion, a stage's corrected subtrees) runs the same numpy code, and the results agree to 1e-12.

:meth:`Animator.update` ``(dt)`` is the three in a row. The results stay in the animator's
batch-innermost buffers (:mod:`engine.anim.layout`); the game reads:

- ``palette_buffer`` / ``palette``: skinning matrices ``(C, J, 4, 4)`` (``model @ inverse_bind``);
- ``model_buffer`` / ``model``: model-space joint matrices ``(C, J, 4, 4)``;
- ``pose_buffer`` / ``local_pose``: the local pose ``(C, J)``;
- ``root_motion``: the root's planar travel of this frame (:class:`RootMotion`), when the
  animator was built with ``root_motion=joint``.

``local_pose``, ``model`` and ``palette`` are read-only C-ordered copies made on access.

Semantics follow three.js's ``AnimationAction``: every method returns the action it was called
on, so calls chain; weights are multiplied by a fade factor that ``fade_in``/``fade_out``
animate linearly in the animator's time; ``crossfade_to(other, d, warp=True)`` also ramps the
two speeds so that their cycle lengths meet (the time-scale "warp"). Methods take an optional
``characters`` selection (an index, a slice, an index array or a boolean mask; ``None`` = all).

After ``update(dt)`` the game reads:

- ``local_pose``: the blended local :class:`~engine.anim.pose.Pose` ``(C, J)``;
- ``model``: model-space joint matrices ``(C, J, 4, 4)``;
- ``palette``: skinning matrices ``(C, J, 4, 4)`` (``model @ inverse_bind``);
- ``root_motion``: the root's planar travel of this update (:class:`RootMotion`), when the
  animator was built with ``root_motion=joint``.

Weights: the override actions are blended per joint with their effective weights normalised;
when a joint's total weight is below ``rest_threshold`` (default 1, as in three.js, and the same
default as :func:`~engine.anim.blending.blend`'s) the rest
pose makes up the difference, so a lone action fading in or out blends from or to the rest
pose. Per-joint masks weight an action per joint (an upper-body layer); the other layers keep
their weight on those joints unless they get the complementary mask.

Examples
--------
>>> import numpy as np
>>> from engine.animator import Animator, Loop
>>> from engine.procedural.mannequin import build_mannequin
>>> mannequin = build_mannequin()
>>> animator = Animator(mannequin.skeleton, num_characters=3, root_motion="root")
>>> walk = animator.action(mannequin.clips["walk"]).play()
>>> run = animator.action(mannequin.clips["run"])
>>> steps = []
>>> _ = walk.on_marker("left_foot_down", lambda event: steps.append(event.characters.tolist()))
>>> animator.update(0.5)
>>> animator.palette.shape, np.round(walk.time, 3).tolist()
((3, 25, 4, 4), [0.5, 0.5, 0.5])
>>> _ = walk.crossfade_to(run, 0.25, warp=True, characters=[2])   # only character 2 starts running
>>> for _ in range(11):
...     animator.update(1 / 20)
>>> np.round(run.effective_weight, 2).tolist(), steps
([0.0, 0.0, 1.0], [[0, 1, 2], [0, 1]])
>>> np.round(animator.root_motion.translation[:, 2], 3).tolist()   # metres forward this frame
[0.06, 0.06, 0.15]
"""

from engine.anim.events import Loop
from engine.animator.action import Action
from engine.animator.animator import Animator
from engine.animator.markers import MarkerEvent
from engine.animator.root_motion import RootMotion
from engine.animator.sync import BlendSpace1D, SyncGroup

__all__ = ["Action", "Animator", "BlendSpace1D", "Loop", "MarkerEvent", "RootMotion", "SyncGroup"]
