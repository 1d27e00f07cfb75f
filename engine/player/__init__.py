"""One player, many controllers: every character's layers sampled, blended and posed in one frame.

A :class:`Player` owns, for ``C`` characters sharing a skeleton, every **layer**'s clip time and
weight (and mask, additive flag, overrides), and is the only code that samples, blends, moves the
root (exact keyed deltas over loops), fires markers, mixes morph weights, runs the transition
stage, composes local→model and writes palettes — on the compiled kernels of
:mod:`engine.backend` where numba is installed, the numpy jobs of :mod:`engine.anim` as the
reference (both agree to 1e-12). **Controllers** decide the times and weights and nothing else:
the :class:`~engine.animator.Animator` (actions, fades, warps, sync groups, 1-D blend spaces),
the graph (:class:`~engine.graph.GraphRuntime`: states, transitions, blend trees flattened into
layers), the demo's crowd.

A frame is a straight line (ozz-animation's sample → blend → IK → local-to-model → skinning)::

    player.begin_frame(dt)                 the clock moves
    controller.control()                   each controller: weights, then times (advance_layers:
                                           wraps, exact root travel, markers)
    player.pose(characters)                sample + blend (+ in-place root), additive layers,
                                           the transition stage  ──▶ pose_buffer, root_motion,
                                           morph_weights
    player.run_stages()                    IK and the like: update_model(), edit, pose_changed()
    player.finalize(records)               model matrices (whole skeleton once, then only the
                                           edited subtrees) and the palette ──▶ palette_buffer,
                                           and the upload records (model=False: the records
                                           only, the matrices composed when asked)
    player.end_frame(characters, records)  the last three in one call, the same numbers: without
                                           stages or additive layers, on the kernels, a character
                                           with no transition is posed and composed in one pass

Modules: :mod:`~engine.player.player` (the frame), :mod:`~engine.player.controls` (what
controllers write), :mod:`~engine.player.layers` (the layer table),
:mod:`~engine.player.compose` (model matrices, palette, the compiled state),
:mod:`~engine.player.switching` (captures and switches),
:mod:`~engine.player.evaluate` (the numpy passes), :mod:`~engine.player.capture` (the output
with its velocity), :mod:`~engine.player.transitions` (the transition stage),
:mod:`~engine.player.root` (root motion), :mod:`~engine.player.markers`,
:mod:`~engine.player.morph`, :mod:`~engine.player.sync` (phase-locked rates).
"""

from engine.anim.events import Loop
from engine.player.capture import LayerState
from engine.player.morph import MorphTargets
from engine.player.player import Player
from engine.player.root import RootMotion
from engine.player.transitions import Capture

__all__ = ["Capture", "LayerState", "Loop", "MorphTargets", "Player", "RootMotion"]
