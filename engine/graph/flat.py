"""Blend trees compiled once, at bind time, into flat layers: which leaf clips weigh how much, per character.

Every clip of every state's tree is a :class:`Leaf`, one layer of the player; a tree node is a
weight program over its leaves (ozz-animation's blending job takes layers, weights and joint
masks; a tree decides those numbers). Per character, a node multiplies the weights reaching it:

- :class:`TreeClip`: its leaf gets the weight;
- :class:`TreeBlend` (1-D and 2-D blend spaces): each child its blend-space weight
  (:mod:`engine.anim.blendspace`), recomputed only for characters whose parameters changed;
- :class:`TreeAdditive`: the base as it is, the additive leaves (player additive layers) times the
  node's weight, their masks times the node's mask;
- :class:`TreeLayer`: the base as it is, the layer's leaves times the weight ``w`` and the mask
  ``m``, and an **override** (:class:`Override`) of the base's leaves with weight ``w`` and mask
  ``m`` — the player weighs each base leaf ``1 - w·m_j`` of itself at joint ``j``, exactly the
  per-joint weights the nested blend ``blend(base, layer, 1 - w·m, w·m)`` gives it;
- :class:`TreeMachine`: the sub-machine's current states, times the weight.

The flat blend is one normalised weighted sum where the nested one normalises at every level, so
rotations differ where a nested blend's children disagree (a blend of blends): by rounding for a
single blend space, by the nested renormalisation otherwise — see ``tests/graph/test_flat.py`` for
the measured differences to the recursive evaluator (:mod:`engine.graph.oracle`). An additive
motion that is itself a blend adds each leaf's delta at its weight, where the nested tree adds
the delta of the blend.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from engine.anim.blendspace import GradientBand, linear_weights
from engine.anim.clip import Clip, SampledClip
from engine.anim.pose import Pose
from engine.graph.parameters import Parameters
from engine.math._checks import FloatArray, IntArray


@dataclass(frozen=True, eq=False)
class Leaf:
    """One clip of a state's tree, played by one player layer (``index``: its place among the graph's leaves).

    ``mask`` is the product of the masks on its path (``None``: every joint 1); ``additive``
    leaves are added as deltas against ``reference``; ``duration`` is the clip's, seconds.
    """

    index: int
    clip: Clip | SampledClip
    speed: float
    loop: bool
    sync: bool
    additive: bool
    reference: Pose | None
    mask: FloatArray | None
    machine: str
    state: int
    duration: float

    def cycle_rate(self, state_speed: float) -> float:
        """Phase per second this clip alone would advance its state by."""
        return self.speed * state_speed / self.duration if self.duration > 0.0 else 0.0

    def raw(self, phase: FloatArray, elapsed: FloatArray, state_speed: float) -> FloatArray:
        """Unwrapped clip times ``(K,)`` at the state's ``phase`` and ``elapsed`` seconds."""
        if self.sync:
            return phase * self.duration
        return elapsed * (self.speed * state_speed)

    def times(
        self, phase: FloatArray, elapsed: FloatArray, rate: FloatArray, state_speed: float
    ) -> tuple[FloatArray, FloatArray]:
        """Clip times ``(K,)`` (looped or held) and their rates per second, at the state's clock."""
        if self.sync:
            return phase * self.duration, rate * self.duration
        if self.duration <= 0.0:
            return np.zeros_like(elapsed), np.zeros_like(elapsed)
        raw = self.raw(phase, elapsed, state_speed)
        speed = np.full(raw.shape, self.speed * state_speed)
        if self.loop:
            return np.mod(raw, self.duration), speed
        return np.minimum(raw, self.duration), np.where(raw < self.duration, speed, 0.0)


@dataclass(frozen=True)
class Override:
    """An override of the leaves ``[start, stop)`` by ``mask`` ``(J,)`` (one per contiguous range of a layer's base)."""

    start: int
    stop: int
    mask: FloatArray


class Weights:
    """What one evaluation writes for ``C`` characters: leaf weights and rates, override weights.

    ``weights``, ``rates`` ``(N, C)``; ``overrides`` ``(G, C)``.
    """

    def __init__(self, leaves: int, overrides: int, characters: int) -> None:
        self.weights = np.zeros((leaves, characters))
        self.rates = np.zeros((leaves, characters))
        self.overrides = np.zeros((overrides, characters))

    def clear(self) -> None:
        """Every weight 0."""
        self.weights[:] = 0.0
        self.rates[:] = 0.0
        self.overrides[:] = 0.0


class Machines(Protocol):
    """How a :class:`TreeMachine` reaches its sub-machine's states (the runtime's machines)."""

    def weigh_machine(self, name: str, rows: IntArray, factor: FloatArray, rate: FloatArray, out: Weights) -> None:
        """Add the weights of machine ``name``'s current states for ``rows``, times ``factor`` (and its ``rate``)."""
        ...


class Tree(ABC):
    """Base of the flat trees (module docstring)."""

    @abstractmethod
    def weigh(
        self,
        parameters: Parameters,
        machines: Machines,
        rows: IntArray,
        factor: FloatArray,
        rate: FloatArray,
        out: Weights,
    ) -> None:
        """Add each leaf's weight times ``factor`` ``(K,)`` (and the product's rate) for characters ``rows``."""

    @abstractmethod
    def timing(self, parameters: Parameters, rows: IntArray, synced_only: bool) -> list[tuple[Leaf, FloatArray]]:
        """The leaves timing the state (the bases only), each with its weight ``(K,)``."""


class TreeClip(Tree):
    """A leaf."""

    def __init__(self, leaf: Leaf) -> None:
        self.leaf = leaf

    def weigh(
        self,
        parameters: Parameters,  # noqa: ARG002 (the Tree interface)
        machines: Machines,  # noqa: ARG002
        rows: IntArray,
        factor: FloatArray,
        rate: FloatArray,
        out: Weights,
    ) -> None:
        """The leaf's weight is the factor."""
        out.weights[self.leaf.index, rows] += factor
        out.rates[self.leaf.index, rows] += rate

    def timing(self, parameters: Parameters, rows: IntArray, synced_only: bool) -> list[tuple[Leaf, FloatArray]]:  # noqa: ARG002 (Tree)
        """Itself, at weight 1, unless only synced clips are asked for and it is not synced."""
        return [] if synced_only and not self.leaf.sync else [(self.leaf, np.ones(rows.size))]


class TreeBlend(Tree):
    """A 1-D (``positions (P,)``) or 2-D (a :class:`~engine.anim.blendspace.GradientBand`) blend space."""

    def __init__(
        self, parameters: tuple[str, ...], space: FloatArray | GradientBand, children: tuple[Tree, ...]
    ) -> None:
        self.parameters = parameters
        self.space = space
        self.children = children
        self._cache: dict[int, tuple[FloatArray, FloatArray]] = {}  # per Parameters (by id): weights, stamps
        clips = [child.leaf.index for child in children if isinstance(child, TreeClip)]
        self.clips = np.array(clips, dtype=np.intp) if len(clips) == len(children) else None
        """The children's leaf indices when every child is a clip, else ``None``."""

    def blend_weights(self, parameters: Parameters, rows: IntArray) -> FloatArray:
        """Child weights ``(K, P)`` of ``rows``, non-negative, summing to 1 (recomputed where parameters changed)."""
        found = self._cache.get(id(parameters))
        if found is None or found[0].shape[0] != parameters.num_characters:
            found = (np.zeros((parameters.num_characters, len(self.children))), np.full(parameters.num_characters, -1))
            self._cache[id(parameters)] = found
        weights, stamps = found
        stale = rows[stamps[rows] != parameters.stamps[rows]]
        if stale.size:
            values = self.values(parameters, stale)
            if isinstance(self.space, GradientBand):
                weights[stale] = self.space.weights(values)
            else:
                weights[stale] = linear_weights(self.space, values[:, 0])
            stamps[stale] = parameters.stamps[stale]
        return weights[rows]

    def values(self, parameters: Parameters, rows: IntArray) -> FloatArray:
        """The blend space's parameter values ``(K, D)`` of ``rows`` (``D`` = 1 or 2)."""
        return np.stack([parameters.float_values(name)[rows] for name in self.parameters], axis=-1)

    def weigh(
        self,
        parameters: Parameters,
        machines: Machines,
        rows: IntArray,
        factor: FloatArray,
        rate: FloatArray,
        out: Weights,
    ) -> None:
        """Each child weighted by its blend-space weight (only where it is positive)."""
        weights = self.blend_weights(parameters, rows)
        if self.clips is not None:  # every child a clip: all at once (a zero weight adds nothing)
            block = np.ix_(self.clips, rows)
            out.weights[block] += (weights * factor[:, None]).T
            out.rates[block] += (weights * rate[:, None]).T
            return
        for p, child in enumerate(self.children):  # loop over children
            picked = np.flatnonzero(weights[:, p] > 0.0)
            if picked.size:
                w = weights[picked, p]
                child.weigh(parameters, machines, rows[picked], factor[picked] * w, rate[picked] * w, out)

    def timing(self, parameters: Parameters, rows: IntArray, synced_only: bool) -> list[tuple[Leaf, FloatArray]]:
        """The children's timing leaves, weighted by the children's weights."""
        weights = self.blend_weights(parameters, rows)
        found = []
        for p, child in enumerate(self.children):  # loop over children
            found += [(leaf, w * weights[:, p]) for leaf, w in child.timing(parameters, rows, synced_only)]
        return found


def _weight_of(weight: float | str, parameters: Parameters, rows: IntArray, high: float) -> FloatArray:
    if isinstance(weight, str):
        return np.clip(parameters.float_values(weight)[rows], 0.0, high)
    return np.full(rows.size, float(weight))


class TreeAdditive(Tree):
    """``additive`` added to ``base`` at ``weight`` (a number or a float parameter)."""

    def __init__(self, base: Tree, additive: Tree, weight: float | str) -> None:
        self.base, self.additive, self.weight = base, additive, weight

    def weigh(
        self,
        parameters: Parameters,
        machines: Machines,
        rows: IntArray,
        factor: FloatArray,
        rate: FloatArray,
        out: Weights,
    ) -> None:
        """The base at ``factor``; the additive leaves at ``factor · weight``."""
        self.base.weigh(parameters, machines, rows, factor, rate, out)
        w = _weight_of(self.weight, parameters, rows, np.inf)
        self.additive.weigh(parameters, machines, rows, factor * w, rate * w, out)

    def timing(self, parameters: Parameters, rows: IntArray, synced_only: bool) -> list[tuple[Leaf, FloatArray]]:
        """The base's: the additive motion does not time the state."""
        return self.base.timing(parameters, rows, synced_only)


class TreeLayer(Tree):
    """``layer`` over ``base`` by ``weight`` and a mask: the layer's leaves and the overrides of the base's."""

    def __init__(self, base: Tree, layer: Tree, weight: float | str, overrides: tuple[int, ...]) -> None:
        self.base, self.layer, self.weight, self.overrides = base, layer, weight, overrides

    def weigh(
        self,
        parameters: Parameters,
        machines: Machines,
        rows: IntArray,
        factor: FloatArray,
        rate: FloatArray,
        out: Weights,
    ) -> None:
        """The base at ``factor`` (covered by ``weight``), the layer's leaves at ``factor · weight``."""
        w = _weight_of(self.weight, parameters, rows, 1.0)
        self.base.weigh(parameters, machines, rows, factor, rate, out)
        self.layer.weigh(parameters, machines, rows, factor * w, rate * w, out)
        for override in self.overrides:
            out.overrides[override, rows] = w

    def timing(self, parameters: Parameters, rows: IntArray, synced_only: bool) -> list[tuple[Leaf, FloatArray]]:
        """The base's: the layer does not time the state."""
        return self.base.timing(parameters, rows, synced_only)


class TreeMachine(Tree):
    """The output of a sub-machine (it keeps its own state and clocks per character)."""

    def __init__(self, machine: str) -> None:
        self.machine = machine

    def weigh(
        self,
        parameters: Parameters,  # noqa: ARG002 (the Tree interface)
        machines: Machines,
        rows: IntArray,
        factor: FloatArray,
        rate: FloatArray,
        out: Weights,
    ) -> None:
        """The sub-machine's states at ``factor``."""
        machines.weigh_machine(self.machine, rows, factor, rate, out)

    def timing(self, parameters: Parameters, rows: IntArray, synced_only: bool) -> list[tuple[Leaf, FloatArray]]:  # noqa: ARG002 (Tree)
        """None: a sub-machine keeps its own clocks."""
        return []
