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

Root motion: a graph bound with a root-motion joint (``bind_graph(..., root_motion=...)``) plays
every clip in place — the root's planar translation and yaw taken out at sampling
(:func:`~engine.anim.rootmotion.remove_planar`), before anything is blended or inertialized, so
a transition between two clips never sees the distance a clip has walked — while the root's
velocity keeps its planar part, turned into the clip's own heading: blended and inertialized
like every other velocity, it is the travel the game applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.anim.blendspace import GradientBand, linear_weights
from engine.anim.clip import Clip
from engine.anim.pose import Pose
from engine.anim.rootmotion import remove_planar, yaw_from_quat
from engine.anim.sampling import CompiledClip
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity, VelocityTable, additive_velocity, blend_velocity
from engine.graph import _jobs
from engine.graph.parameters import Parameters
from engine.math._checks import FloatArray, IntArray, trusted
from engine.math.quat import quat_rotate


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


def write(out: Pose | None, pose: Pose) -> Pose:
    """``pose`` copied into ``out`` (returned), or ``pose`` itself when there is no ``out``."""
    if out is None:
        return pose
    out.translations[...] = pose.translations
    out.rotations[...] = pose.rotations
    out.scales[...] = pose.scales
    return out


class Node:
    """Base of the bound nodes."""

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:
        """The clips timing the state, each with its weight in the output ``(K,)``."""
        raise NotImplementedError

    def evaluate(self, context: Context, characters: IntArray, clock: Clock, out: Pose | None = None) -> Result:
        """Pose ``(K, J)`` of the characters (velocity too when ``context.velocity``).

        With ``out`` (a pose ``(K, J)`` of any memory layout) the pose is written there.
        """
        raise NotImplementedError


class ClipNode(Node):
    """A clip played at ``speed``; on the state's phase when ``sync``, else on its clock.

    With a ``root`` joint the clip plays in place (see the module docstring).
    """

    def __init__(
        self,
        clip: Clip,
        compiled: CompiledClip,
        table: VelocityTable | None,
        speed: float,
        loop: bool,
        sync: bool,
        root: int | None = None,
    ) -> None:
        self.clip = clip
        self.root = root
        self.compiled = compiled
        self.table = table  # per-segment velocities (None for cubic channels: sampled instead)
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

    def evaluate(
        self,
        context: Context,
        characters: IntArray,  # noqa: ARG002 (the Node interface)
        clock: Clock,
        out: Pose | None = None,
    ) -> Result:
        """The clip sampled at each character's time (its velocity scaled by the playback rate)."""
        times, rates = self.times(clock)
        if not context.velocity:
            return self._in_place(_jobs.sample_pose(self.compiled, context.skeleton, times, out), None), None
        if self.table is not None:
            pose = _jobs.sample_pose(self.compiled, context.skeleton, times, out)
            velocity = self.table.at(times, loop=self.loop, side=context.side)
        else:
            pose, velocity = _jobs.sample_pose_velocity(self.compiled, context.skeleton, times, self.loop, context.side)
        scale = rates[:, None, None]
        with trusted():
            scaled = PoseVelocity(velocity.linear * scale, velocity.angular * scale, velocity.scaling * scale)
        return self._in_place(pose if self.table is not None else write(out, pose), scaled), scaled

    def _in_place(self, pose: Pose, velocity: PoseVelocity | None) -> Pose:
        """``pose`` with the root's planar motion taken out (in place); its velocity turned into the clip's heading."""
        root = self.root
        if root is None:
            return pose
        translations, rotations = pose.translations[:, root], pose.rotations[:, root]
        if velocity is not None:  # world-space planar velocity → the root's own heading (the game's frame)
            half = -0.5 * yaw_from_quat(rotations)
            heading = np.zeros(rotations.shape)
            heading[:, 1], heading[:, 3] = np.sin(half), np.cos(half)
            velocity.linear[:, root] = quat_rotate(heading, velocity.linear[:, root])
            velocity.angular[:, root] = quat_rotate(heading, velocity.angular[:, root])
        pose.translations[:, root], pose.rotations[:, root] = remove_planar(translations, rotations)
        return pose


class LayerBuffer:
    """Reusable stacked layers ``(N, K, J)`` stored batch-innermost, the layout ``blend`` reads fastest.

    One per node, valid until the node's next evaluation (the graph runtime is single-threaded).
    The memory holds finite numbers from the start (zeros) and keeps earlier poses afterwards, so a
    layer needs writing only where its weight is positive: ``blend`` multiplies the rest by 0.
    """

    def __init__(self) -> None:
        self.storage: tuple[FloatArray, FloatArray, FloatArray] | None = None

    def take(self, layers: int, count: int, joints: int) -> tuple[Pose, list[Pose]]:
        """The stack ``(N, K, J)`` and its ``N`` slots ``(K, J)``, holding finite leftovers."""
        storage = self.storage
        if storage is None or storage[0].shape[0] < layers or storage[0].shape[3] < count:
            rows = max(layers, 0 if storage is None else storage[0].shape[0])
            capacity = max(count, 0 if storage is None else storage[0].shape[3])
            storage = tuple(np.zeros((rows, width, joints, capacity)) for width in (3, 4, 3))  # type: ignore[assignment]
            self.storage = storage
        assert storage is not None
        t, r, s = (a[:layers, :, :, :count].transpose(0, 3, 2, 1) for a in storage)
        with trusted():
            return Pose(t, r, s), [Pose(t[n], r[n], s[n]) for n in range(layers)]


class BlendNode(Node):
    """Children blended with weights from the parameters (a 1-D or 2-D blend space)."""

    children: tuple[Node, ...]

    def __init__(self) -> None:
        self._blocks = LayerBuffer()  # every weighted child's poses, one block per child

    def compute_weights(self, parameters: Parameters, characters: IntArray) -> FloatArray:
        """Child weights ``(K, P)`` computed from the parameters."""
        raise NotImplementedError

    def weights(self, parameters: Parameters, characters: IntArray) -> FloatArray:
        """Child weights ``(K, P)``, non-negative, summing to 1 (cached for all characters per parameter version)."""
        if parameters.num_characters == 0:
            return self.compute_weights(parameters, characters)
        found = parameters.cache.get(id(self))
        if found is None or found[0] != parameters.version:
            everyone = np.arange(parameters.num_characters)
            found = (parameters.version, self.compute_weights(parameters, everyone))
            parameters.cache[id(self)] = found
        return found[1][characters]

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:
        """The children's leaves, weighted by the children's weights."""
        weights = self.weights(parameters, characters)
        found = []
        for p, child in enumerate(self.children):  # loop over children
            found += [(leaf, w * weights[:, p]) for leaf, w in child.leaves(parameters, characters, synced_only)]
        return found

    def evaluate(self, context: Context, characters: IntArray, clock: Clock, out: Pose | None = None) -> Result:
        """The weighted children blended, each evaluated only for the characters it weighs on.

        Each weighted child writes its characters' poses into one contiguous block of a shared
        buffer (no scatter); the layers are then gathered from it compacted: layer ``k`` holds each
        character's ``k``-th weighted child, so the blend runs over as many layers as the most
        children any character mixes (two or three in a 2-D space of nine clips), not over all.
        """
        weights = self.weights(context.parameters, characters)
        count, joints = characters.size, context.skeleton.num_joints
        weighted = weights > 0.0
        layers = int(weighted.sum(axis=1).max())
        children = np.nonzero(weighted.any(axis=0))[0]
        if children.size == 1:  # one child for everyone
            return self.children[children[0]].evaluate(context, characters, clock, out)
        rank = np.cumsum(weighted, axis=1) - 1  # the layer of each weighted child of each character
        slot_weights = np.zeros((layers, count))
        source = np.zeros((layers, count), dtype=np.intp)  # where in the blocks each layer entry is
        total = int(weighted.sum())
        blocks = self._blocks.take(1, total, joints)[1][0]
        speeds = [np.empty((total, joints, 3)) for _ in range(3)] if context.velocity else None
        start = 0
        for p in children:  # loop over weighted children
            rows: IntArray = np.nonzero(weighted[:, p])[0]
            block = slice(start, start + rows.size)
            places = rank[rows, p]
            slot_weights[places, rows] = weights[rows, p]
            source[places, rows] = np.arange(block.start, block.stop)
            target = Pose(blocks.translations[block], blocks.rotations[block], blocks.scales[block])
            _, velocity = self.children[p].evaluate(context, characters[rows], clock.take(rows), target)
            if speeds is not None and velocity is not None:
                for array, values in zip(speeds, (velocity.linear, velocity.angular, velocity.scaling), strict=True):
                    array[block] = values
            start = block.stop
        with trusted():
            # (width, J, layers, K) gathers, seen as stacked poses (layers, K, J, width): batch-innermost
            stacked = Pose(
                *(
                    np.take(array.transpose(2, 1, 0), source, axis=-1).transpose(2, 3, 1, 0)
                    for array in (blocks.translations, blocks.rotations, blocks.scales)
                )
            )
        pose = _jobs.blend_layers(stacked, slot_weights, None, context.skeleton, out)
        if speeds is None:
            return pose, None
        with trusted():
            return pose, blend_velocity(stacked, PoseVelocity(*(array[source] for array in speeds)), slot_weights)


class Blend1DNode(BlendNode):
    """A 1-D blend space over one float parameter."""

    def __init__(self, parameter: str, positions: FloatArray, children: tuple[Node, ...]) -> None:
        super().__init__()
        self.parameter = parameter
        self.positions = positions
        self.children = children

    def compute_weights(self, parameters: Parameters, characters: IntArray) -> FloatArray:
        """Piecewise-linear weights of the parameter (:func:`~engine.anim.blendspace.linear_weights`)."""
        return linear_weights(self.positions, parameters.float_values(self.parameter)[characters])


class Blend2DNode(BlendNode):
    """A 2-D freeform blend space (gradient bands) over two float parameters."""

    def __init__(self, parameters: tuple[str, str], band: GradientBand, children: tuple[Node, ...]) -> None:
        super().__init__()
        self.parameters = parameters
        self.band = band
        self.children = children

    def compute_weights(self, parameters: Parameters, characters: IntArray) -> FloatArray:
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

    def evaluate(self, context: Context, characters: IntArray, clock: Clock, out: Pose | None = None) -> Result:
        """The base with the additive motion's difference from its reference added."""
        base, base_velocity = self.base.evaluate(context, characters, clock)
        added, added_velocity = self.additive.evaluate(context, characters, clock)
        weight = _weight_of(self.weight, context.parameters, characters, np.inf)
        pose, delta = _jobs.add_pose(base, added, self.reference, weight, self.mask)
        if base_velocity is None or added_velocity is None:
            return write(out, pose), None
        with trusted():
            delta_velocity = PoseVelocity(
                added_velocity.linear, added_velocity.angular, added_velocity.scaling / self.reference.scales
            )
        return write(out, pose), additive_velocity(base, base_velocity, delta, delta_velocity, weight, self.mask)


class LayerNode(Node):
    """``layer`` over ``base`` with per-joint weights ``weight · mask`` (``mask`` ``(J,)``)."""

    def __init__(self, base: Node, layer: Node, weight: float | str, mask: FloatArray) -> None:
        self.base = base
        self.layer = layer
        self.weight = weight
        self.mask = mask
        # base on the joints outside the mask, base and layer shared inside: per-joint sums of 1
        self.masks = np.stack((1.0 - mask, mask, mask))
        self._layers = LayerBuffer()

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:
        """The base's leaves: the layer does not time the state."""
        return self.base.leaves(parameters, characters, synced_only)

    def evaluate(self, context: Context, characters: IntArray, clock: Clock, out: Pose | None = None) -> Result:
        """Base and layer blended per joint by ``weight · mask``."""
        stacked, slots = self._layers.take(3, characters.size, context.skeleton.num_joints)
        _, base_velocity = self.base.evaluate(context, characters, clock, slots[0])
        write(slots[1], slots[0])
        _, layer_velocity = self.layer.evaluate(context, characters, clock, slots[2])
        weight = _weight_of(self.weight, context.parameters, characters, 1.0)
        weights = np.stack((np.ones_like(weight), 1.0 - weight, weight))
        pose = _jobs.blend_layers(stacked, weights, self.masks, context.skeleton, out)
        if base_velocity is None or layer_velocity is None:
            return pose, None
        speeds = [
            np.stack((getattr(v, f),) * 2 + (getattr(layer_velocity, f),))
            for v, f in ((base_velocity, "linear"), (base_velocity, "angular"), (base_velocity, "scaling"))
        ]
        with trusted():
            return pose, blend_velocity(stacked, PoseVelocity(*speeds), weights, mask=self.masks)


class MachineNode(Node):
    """The output of a sub-machine (it keeps its own state and clocks per character)."""

    def __init__(self, machine: str) -> None:
        self.machine = machine

    def leaves(self, parameters: Parameters, characters: IntArray, synced_only: bool) -> Leaves:  # noqa: ARG002 (Node)
        """None: a sub-machine keeps its own clocks."""
        return []

    def evaluate(
        self,
        context: Context,
        characters: IntArray,
        clock: Clock,  # noqa: ARG002 (the Node interface)
        out: Pose | None = None,
    ) -> Result:
        """The sub-machine's output for the characters."""
        pose, velocity = context.machines[self.machine].evaluate(characters, context.velocity, context.side)
        return write(out, pose), velocity
