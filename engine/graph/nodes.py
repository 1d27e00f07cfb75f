"""Blend-tree nodes bound to a character: clips, 1-D and 2-D blend spaces, additive and masked layers.

A node evaluates the pose (and, on request, its velocity) of any subset of characters ``K`` at
once from the state's clock (:class:`Clock`) and the parameters. Children whose weight is zero
for a character are not evaluated for it. Velocities travel with the poses through the tree
(:mod:`engine.anim.velocity`), so a transition can start from any tree's output *and* its
motion.

Timing: a state's **synced** clips all play at one normalised phase (``time = phase · duration``,
the phase advancing at the weighted mean of their cycle rates ``speed / duration``), so walk and
run blended at any weight put their feet down together; unsynced clips play on the state's
clock in seconds (looping or held at their end).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.anim.blendspace import GradientBand, linear_weights
from engine.anim.clip import Clip
from engine.anim.pose import Pose
from engine.anim.sampling import CompiledClip
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity, additive_velocity, blend_velocity
from engine.graph import _jobs
from engine.graph.parameters import Parameters
from engine.math._checks import FloatArray, IntArray, trusted


@dataclass
class Clock:
    """One state's timing for the characters evaluated: arrays ``(K,)`` and the state's speed."""

    phase: FloatArray
    """Normalised time in ``[0, 1]`` (``[0, 1)`` when the state loops)."""
    elapsed: FloatArray
    """Seconds since the state was entered."""
    rate: FloatArray
    """Phase per second (``d phase / dt``)."""
    speed: float
    """The state's playback speed."""

    def take(self, index: IntArray) -> Clock:
        """The clock of a subset (positions into ``K``)."""
        return Clock(self.phase[index], self.elapsed[index], self.rate[index], self.speed)


class Evaluator(Protocol):
    """What a node needs to evaluate a sub-machine (a :class:`~engine.graph.runtime.MachineRuntime`)."""

    def evaluate(self, characters: IntArray, velocity: bool, side: str) -> tuple[Pose, PoseVelocity | None]:
        """Output pose ``(K, J)`` of the characters (and its velocity)."""
        ...


@dataclass
class Context:
    """What every node of one evaluation shares."""

    parameters: Parameters
    skeleton: Skeleton
    machines: Mapping[str, Evaluator]
    velocity: bool
    """Evaluate velocities too."""
    side: str
    """``"left"``: the motion arriving now; ``"right"``: the motion leaving now (a state just entered)."""


Result = tuple[Pose, PoseVelocity | None]
Leaves = list[tuple["ClipNode", FloatArray]]


class Node:
    """Base of the bound nodes."""

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:
        """The clips timing the state, each with its weight in the output ``(K,)``."""
        raise NotImplementedError

    def evaluate(self, context: Context, characters: IntArray, clock: Clock) -> Result:
        """Pose ``(K, J)`` of the characters (velocity too when ``context.velocity``)."""
        raise NotImplementedError


class ClipNode(Node):
    """A clip played at ``speed``; on the state's phase when ``sync``, else on its clock."""

    def __init__(self, clip: Clip, compiled: CompiledClip, speed: float, loop: bool, sync: bool) -> None:
        self.clip = clip
        self.compiled = compiled
        self.speed = speed
        self.loop = loop
        self.sync = sync
        self.duration = clip.duration

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:  # noqa: ARG002 (Node)
        """Itself, at weight 1, unless only synced clips are asked for and it is not synced."""
        if synced_only and not self.sync:
            return []
        return [(self, np.ones(characters.size))]

    def cycle_rate(self, state_speed: float) -> float:
        """Phase per second this clip alone would advance its state by."""
        return self.speed * state_speed / self.duration if self.duration > 0.0 else 0.0

    def times(self, clock: Clock) -> tuple[FloatArray, FloatArray]:
        """Clip times ``(K,)`` and their rates of change per second ``(K,)``."""
        if self.sync:
            return clock.phase * self.duration, clock.rate * self.duration
        raw = clock.elapsed * (self.speed * clock.speed)
        rate = np.full(raw.shape, self.speed * clock.speed)
        if self.duration <= 0.0:
            return np.zeros_like(raw), np.zeros_like(raw)
        if self.loop:
            return np.mod(raw, self.duration), rate
        return np.minimum(raw, self.duration), np.where(raw < self.duration, rate, 0.0)

    def evaluate(self, context: Context, characters: IntArray, clock: Clock) -> Result:  # noqa: ARG002 (Node)
        """The clip sampled at each character's time (its velocity scaled by the playback rate)."""
        times, rates = self.times(clock)
        pose = _jobs.sample_pose(self.compiled, context.skeleton, times)
        if not context.velocity:
            return pose, None
        velocity = _jobs.sample_pose_velocity(self.compiled, context.skeleton, times, self.loop, context.side)
        scale = rates[:, None, None]
        with trusted():
            return pose, PoseVelocity(velocity.linear * scale, velocity.angular * scale, velocity.scaling * scale)


def _stack(results: list[Result], count: int, joints: int, with_velocity: bool) -> tuple[Pose, PoseVelocity | None]:
    """Layers ``(N, K, J)`` from per-layer results already covering all ``K`` characters."""
    with trusted():
        pose = Pose(
            np.stack([r[0].translations for r in results]),
            np.stack([r[0].rotations for r in results]),
            np.stack([r[0].scales for r in results]),
        )
        if not with_velocity:
            return pose, None
        velocity = PoseVelocity(
            np.stack([r[1].linear for r in results]),  # type: ignore[union-attr]
            np.stack([r[1].angular for r in results]),  # type: ignore[union-attr]
            np.stack([r[1].scaling for r in results]),  # type: ignore[union-attr]
        )
    assert pose.shape == (len(results), count, joints)
    return pose, velocity


def _widen(result: Result, rows: IntArray, count: int, joints: int) -> Result:
    """A result for ``rows`` of ``K`` characters spread to all ``K`` (zeros elsewhere: weight 0 there)."""
    pose, velocity = result

    def grow(array: FloatArray, width: int) -> FloatArray:
        full = np.zeros((count, joints, width))
        full[rows] = array
        return full

    with trusted():
        wide = Pose(grow(pose.translations, 3), grow(pose.rotations, 4), grow(pose.scales, 3))
        if velocity is None:
            return wide, None
        return wide, PoseVelocity(grow(velocity.linear, 3), grow(velocity.angular, 3), grow(velocity.scaling, 3))


class BlendNode(Node):
    """Children blended with weights from the parameters (a 1-D or 2-D blend space)."""

    children: tuple[Node, ...]

    def weights(self, parameters: Parameters, characters: IntArray) -> FloatArray:
        """Child weights ``(K, P)``, non-negative, summing to 1."""
        raise NotImplementedError

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:
        """The children's leaves, weighted by the children's weights."""
        weights = self.weights(parameters, characters)
        found = []
        for p, child in enumerate(self.children):  # loop over children
            found += [(leaf, w * weights[:, p]) for leaf, w in child.leaves(parameters, characters, synced_only)]
        return found

    def evaluate(self, context: Context, characters: IntArray, clock: Clock) -> Result:
        """The weighted children blended (each evaluated only where its weight is positive)."""
        weights = self.weights(context.parameters, characters)
        count, joints = characters.size, context.skeleton.num_joints
        active = [p for p in range(len(self.children)) if weights[:, p].any()]
        results = []
        for p in active:  # loop over weighted children
            used = weights[:, p] > 0.0
            if used.all():
                results.append(self.children[p].evaluate(context, characters, clock))
            else:
                rows = np.nonzero(used)[0]
                part = self.children[p].evaluate(context, characters[rows], clock.take(rows))
                results.append(_widen(part, rows, count, joints))
        if len(active) == 1:  # weight 1 on one child for every character
            return results[0]
        layers, speeds = _stack(results, count, joints, context.velocity)
        layer_weights = weights[:, active].T
        pose = _jobs.blend_layers(layers, layer_weights, None, context.skeleton)
        if speeds is None:
            return pose, None
        return pose, blend_velocity(layers, speeds, layer_weights)


class Blend1DNode(BlendNode):
    """A 1-D blend space over one float parameter."""

    def __init__(self, parameter: str, positions: FloatArray, children: tuple[Node, ...]) -> None:
        self.parameter = parameter
        self.positions = positions
        self.children = children

    def weights(self, parameters: Parameters, characters: IntArray) -> FloatArray:
        """Piecewise-linear weights of the parameter (:func:`~engine.anim.blendspace.linear_weights`)."""
        return linear_weights(self.positions, parameters.float_values(self.parameter)[characters])


class Blend2DNode(BlendNode):
    """A 2-D freeform blend space (gradient bands) over two float parameters."""

    def __init__(self, parameters: tuple[str, str], band: GradientBand, children: tuple[Node, ...]) -> None:
        self.parameters = parameters
        self.band = band
        self.children = children

    def weights(self, parameters: Parameters, characters: IntArray) -> FloatArray:
        """Gradient-band weights of the two parameters (:class:`~engine.anim.blendspace.GradientBand`)."""
        x = parameters.float_values(self.parameters[0])[characters]
        y = parameters.float_values(self.parameters[1])[characters]
        return self.band.weights(np.stack((x, y), axis=-1))


def _weight_of(weight: float | str, parameters: Parameters, characters: IntArray, high: float) -> FloatArray:
    if isinstance(weight, str):
        return np.clip(parameters.float_values(weight)[characters], 0.0, high)
    return np.full(characters.size, weight)


class AdditiveNode(Node):
    """``additive``'s difference from ``reference`` (a pose ``(J,)``) added to ``base``."""

    def __init__(
        self, base: Node, additive: Node, weight: float | str, mask: FloatArray | None, reference: Pose
    ) -> None:
        self.base = base
        self.additive = additive
        self.weight = weight
        self.mask = mask
        self.reference = reference

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:
        """The base's leaves: the additive motion does not time the state."""
        return self.base.leaves(parameters, characters, synced_only)

    def evaluate(self, context: Context, characters: IntArray, clock: Clock) -> Result:
        """The base with the additive motion's difference from its reference added."""
        base, base_velocity = self.base.evaluate(context, characters, clock)
        added, added_velocity = self.additive.evaluate(context, characters, clock)
        weight = _weight_of(self.weight, context.parameters, characters, np.inf)
        pose, delta = _jobs.add_pose(base, added, self.reference, weight, self.mask)
        if base_velocity is None or added_velocity is None:
            return pose, None
        with trusted():
            delta_velocity = PoseVelocity(
                added_velocity.linear, added_velocity.angular, added_velocity.scaling / self.reference.scales
            )
        return pose, additive_velocity(base, base_velocity, delta, delta_velocity, weight, self.mask)


class LayerNode(Node):
    """``layer`` over ``base`` with per-joint weights ``weight · mask`` (``mask`` ``(J,)``)."""

    def __init__(self, base: Node, layer: Node, weight: float | str, mask: FloatArray) -> None:
        self.base = base
        self.layer = layer
        self.weight = weight
        self.mask = mask
        # base on the joints outside the mask, base and layer shared inside: per-joint sums of 1
        self.masks = np.stack((1.0 - mask, mask, mask))

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:
        """The base's leaves: the layer does not time the state."""
        return self.base.leaves(parameters, characters, synced_only)

    def evaluate(self, context: Context, characters: IntArray, clock: Clock) -> Result:
        """Base and layer blended per joint by ``weight · mask``."""
        base = self.base.evaluate(context, characters, clock)
        layer = self.layer.evaluate(context, characters, clock)
        weight = _weight_of(self.weight, context.parameters, characters, 1.0)
        layers, speeds = _stack([base, base, layer], characters.size, context.skeleton.num_joints, context.velocity)
        weights = np.stack((np.ones_like(weight), 1.0 - weight, weight))
        pose = _jobs.blend_layers(layers, weights, self.masks, context.skeleton)
        if speeds is None:
            return pose, None
        return pose, blend_velocity(layers, speeds, weights, masks=self.masks)


class MachineNode(Node):
    """The output of a sub-machine (it keeps its own state and clocks per character)."""

    def __init__(self, machine: str) -> None:
        self.machine = machine

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:  # noqa: ARG002 (Node)
        """None: a sub-machine keeps its own clocks."""
        return []

    def evaluate(self, context: Context, characters: IntArray, clock: Clock) -> Result:  # noqa: ARG002 (Node)
        """The sub-machine's output for the characters."""
        return context.machines[self.machine].evaluate(characters, context.velocity, context.side)
