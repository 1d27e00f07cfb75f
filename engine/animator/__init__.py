"""Playback for game code: actions with time, speed, weight, fades and loops, over C characters.

Modules: :mod:`~engine.animator.animator` (the :class:`Animator`), :mod:`~engine.animator.action`
(:class:`Action`), :mod:`~engine.animator.table` (the typed state table),
:mod:`~engine.animator.sync` (:class:`SyncGroup`, :class:`BlendSpace1D`),
:mod:`~engine.animator.markers` (:class:`MarkerEvent`).

An :class:`Animator` is a controller of a :class:`~engine.player.Player`: ``C`` characters that
share one skeleton, each with its own time, speed and weight in every action. Its state lives in
arrays shaped ``(actions, C)``, so a frame has no Python loop over characters (it loops over
actions and sync groups only). Each action plays one layer of the player, which owns the clip
times, samples, blends, moves the root, fires the markers and composes the matrices (on the
compiled kernels from 16 characters up when numba is installed; see the player).

A frame is staged (ozz-animation's sample → blend → IK → local-to-model → skinning):

1. :meth:`Animator.advance` ``(dt)``: the player's frame begins; fades, warps, sync groups and
   loop modes give each action's effective weight and clip travel (:meth:`Animator.control`);
   the player wraps the times, takes the exact root travel, fires marker callbacks, then
   samples, blends and adds the additive layers into :attr:`Animator.pose_buffer`.
2. Post-blend stages (:attr:`Animator.stages`, or the game's own code): IK, procedural look-at,
   anything that reads the model matrices (:meth:`Animator.update_model`) and corrects the local
   pose in place (:meth:`Animator.apply_corrections`, :meth:`Animator.pose_changed`).
3. :meth:`Animator.finalize`: model matrices (the whole skeleton once, or only the subtrees a
   stage changed) and the skinning palette.

:meth:`Animator.update` ``(dt)`` is the three in a row. The game reads:

- ``palette_buffer`` / ``palette``: skinning matrices ``(C, J, 4, 4)`` (``model @ inverse_bind``);
- ``model_buffer`` / ``model``: model-space joint matrices ``(C, J, 4, 4)``;
- ``pose_buffer`` / ``local_pose``: the local pose ``(C, J)``;
- ``root_motion``: the root's planar travel of this frame (:class:`RootMotion`), when the
  animator was built with ``root_motion=joint``.

``local_pose``, ``model`` and ``palette`` are read-only C-ordered copies made on access.

Semantics follow three.js's ``AnimationAction``: every method returns the action it was called
on, so calls chain; weights are multiplied by a fade factor that ``fade_in``/``fade_out``
animate linearly in the player's time; ``crossfade_to(other, d, warp=True)`` also ramps the
two speeds so that their cycle lengths meet (the time-scale "warp"). Methods take an optional
``characters`` selection (an index, a slice, an index array or a boolean mask; ``None`` = all).

Weights: the override actions are blended per joint with their effective weights normalised;
when a joint's total weight is below ``rest_threshold`` (default 1, as in three.js, and the same
default as :func:`~engine.anim.blending.blend`'s) the rest pose makes up the difference, so a
lone action fading in or out blends from or to the rest pose. Per-joint masks weight an action
per joint (an upper-body layer); the other layers keep their weight on those joints unless they
get the complementary mask, or the layer is an override of the player
(:meth:`~engine.player.Player.add_override`).

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
from engine.animator.sync import BlendSpace1D, SyncGroup
from engine.player import RootMotion

__all__ = ["Action", "Animator", "BlendSpace1D", "Loop", "MarkerEvent", "RootMotion", "SyncGroup"]
