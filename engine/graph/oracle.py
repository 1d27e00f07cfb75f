"""The recursive evaluator of nested blend trees: the reference the flat layers are tested against.

:class:`Oracle` evaluates a graph's states the way the document reads — every motion of a tree
blended at its own level, from the definition's motions and the character's clips by name,
independently of the flat compilation (:mod:`engine.graph.flat`) and of the player:

- a clip sampled at its time (``phase · duration`` when synced, else the state's seconds times
  its speed, looped or held), its root in place with a root-motion joint;
- a blend space: its children blended with the blend-space weights (:func:`~engine.anim.blending.blend`);
- an additive motion: its pose's difference from the reference added to the base
  (:func:`~engine.anim.additive.apply_additive`);
- a layer: ``blend(base, base, layer)`` with weights ``(1, 1 - w, w)`` and masks ``(1 - m, m, m)``;
- a sub-machine: its current state (or its live crossfade) evaluated the same way.

:meth:`Oracle.pose` reads the machines' clocks of a :class:`~engine.graph.runtime.GraphRuntime`
and gives what the runtime's layers should show before the transition stage: a live crossfade
is the nested blend of its source's and its target's trees. It is slow (one blend per tree node)
and only for tests and measurements.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from engine.anim.additive import additive_pose, apply_additive
from engine.anim.blending import blend, subtree_mask
from engine.anim.blendspace import GradientBand, linear_weights
from engine.anim.clip import Clip
from engine.anim.pose import Pose
from engine.anim.rootmotion import remove_planar
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.graph.definition import (
    AdditiveMotion,
    Blend1DMotion,
    Blend2DMotion,
    ClipMotion,
    GraphDefinition,
    LayerMotion,
    Machine,
    MachineMotion,
    Motion,
)
from engine.graph.parameters import Parameters
from engine.math._checks import FloatArray, IntArray

if TYPE_CHECKING:
    from engine.graph.runtime import GraphRuntime


class Oracle:
    """Nested evaluation of ``definition``'s trees on a character (module docstring).

    Parameters
    ----------
    definition, skeleton, clips, root_motion
        As given to :func:`~engine.graph.binding.bind_graph` (``root_motion`` as an index).
    """

    def __init__(
        self, definition: GraphDefinition, skeleton: Skeleton, clips: Mapping[str, Clip], root_motion: int | None
    ) -> None:
        self.definition, self.skeleton, self.clips, self.root = definition, skeleton, clips, root_motion
        self.masks = {
            name: subtree_mask(skeleton, list(mask.joints), mask.weight, exclude=list(mask.exclude))
            for name, mask in definition.masks.items()
        }

    def pose(self, runtime: GraphRuntime, characters: IntArray) -> Pose:
        """What ``runtime``'s layers should show for ``characters`` ``(K,)`` now, before the transition stage."""
        return self.machine_pose(runtime, "root", characters)

    def machine_pose(self, runtime: GraphRuntime, name: str, rows: IntArray) -> Pose:
        """Machine ``name``'s output for ``rows``: its state, or its live crossfade blended nested."""
        machine = runtime.machines[name]
        definition = self.definition.root if name == "root" else self.definition.machines[name]
        states = list(definition.states)
        target = self._states(
            runtime, definition, states, machine.state[rows], machine.phase[rows], machine.elapsed[rows], rows
        )
        live = (machine.source[rows] >= 0) & (machine.kind[rows] != 0)
        if not live.any():
            return target
        picked = np.flatnonzero(live)
        source = self._states(
            runtime,
            definition,
            states,
            machine.source[rows[picked]],
            machine.source_phase[rows[picked]],
            machine.source_elapsed[rows[picked]],
            rows[picked],
        )
        alpha = np.clip(machine.progress[rows[picked]] / machine.duration[rows[picked]], 0.0, 1.0)
        mixed = blend(self.skeleton.rest_pose, [source, target[picked]], np.stack((1.0 - alpha, alpha)))
        for mine, theirs in zip(target.arrays(), mixed.arrays(), strict=True):
            mine[picked] = theirs
        return target

    def _states(
        self,
        runtime: GraphRuntime,
        definition: Machine,
        states: list[str],
        indices: IntArray,
        phase: FloatArray,
        elapsed: FloatArray,
        rows: IntArray,
    ) -> Pose:
        pose = self.skeleton.rest_pose.broadcast_to((rows.size,)).copy()
        for s in np.unique(indices):  # loop over the states played
            picked = np.flatnonzero(indices == s)
            state = definition.states[states[s]]
            part = self.motion(runtime, state.motion, state.speed, rows[picked], phase[picked], elapsed[picked])
            for mine, theirs in zip(pose.arrays(), part.arrays(), strict=True):
                mine[picked] = theirs
        return pose

    def motion(
        self,
        runtime: GraphRuntime,
        motion: Motion,
        speed: float,
        rows: IntArray,
        phase: FloatArray,
        elapsed: FloatArray,
    ) -> Pose:
        """The pose ``(K, J)`` of ``motion`` in a state of ``speed`` at its clock, for ``rows``."""
        parameters: Parameters = runtime.parameters
        rest = self.skeleton.rest_pose
        if isinstance(motion, ClipMotion):
            return self._clip(motion, speed, phase, elapsed)
        if isinstance(motion, (Blend1DMotion, Blend2DMotion)):
            children = [self.motion(runtime, child, speed, rows, phase, elapsed) for child in motion.children]
            if isinstance(motion, Blend1DMotion):
                weights = linear_weights(np.array(motion.positions), parameters.float_values(motion.parameter)[rows])
            else:
                values = np.stack([parameters.float_values(p)[rows] for p in motion.parameters], axis=-1)
                weights = GradientBand(np.array(motion.positions), motion.mode).weights(values)
            return blend(rest, children, weights.T)
        if isinstance(motion, AdditiveMotion):
            base = self.motion(runtime, motion.base, speed, rows, phase, elapsed)
            added = self.motion(runtime, motion.additive, speed, rows, phase, elapsed)
            reference = rest
            if motion.reference == "first_frame":
                assert isinstance(motion.additive, ClipMotion)
                reference = sample(self.clips[motion.additive.clip], rest, np.zeros(1))[0]
            weight = _weight(motion.weight, parameters, rows, np.inf)
            mask = None if motion.mask is None else self.masks[motion.mask]
            return apply_additive(base, additive_pose(added, reference), weight, mask)
        if isinstance(motion, LayerMotion):
            base = self.motion(runtime, motion.base, speed, rows, phase, elapsed)
            layer = self.motion(runtime, motion.layer, speed, rows, phase, elapsed)
            w = _weight(motion.weight, parameters, rows, 1.0)
            m = self.masks[motion.mask]
            return blend(rest, [base, base, layer], np.stack((np.ones_like(w), 1.0 - w, w)), np.stack((1.0 - m, m, m)))
        assert isinstance(motion, MachineMotion)
        return self.machine_pose(runtime, motion.machine, rows)

    def _clip(self, motion: ClipMotion, state_speed: float, phase: FloatArray, elapsed: FloatArray) -> Pose:
        clip = self.clips[motion.clip]
        duration = clip.duration
        if motion.sync:
            times = phase * duration
        else:
            raw = elapsed * motion.speed * state_speed
            times = np.mod(raw, duration) if motion.loop and duration > 0.0 else np.minimum(raw, duration)
        pose = sample(clip, self.skeleton.rest_pose, times)
        if self.root is not None:
            root = self.root
            pose.translations[:, root], pose.rotations[:, root] = remove_planar(
                pose.translations[:, root], pose.rotations[:, root]
            )
        return pose


def _weight(weight: float | str, parameters: Parameters, rows: IntArray, high: float) -> FloatArray:
    if isinstance(weight, str):
        return np.clip(parameters.float_values(weight)[rows], 0.0, high)
    return np.full(rows.size, float(weight))
