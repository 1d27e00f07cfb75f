"""A plain state machine's frame on the compiled kernels (:mod:`engine.graph._machine_kernels`, ``_leaf_kernels``).

A machine whose states play no sub-machine steps on the kernels on the numba backend: each round
of :meth:`Machine.step <engine.graph.machine.Machine.step>` (choose a transition per character,
advance the clocks to its instant, end finished transitions) is one kernel call over the
characters still checking (:class:`CompiledStep`); starting the chosen transitions stays with the
machine (it captures the player's output). A graph of one such machine without overrides, whose
states play a clip or a blend space of clips, also writes its leaves' weights and times into the
player's layers as it moves them, computes its states' phase rates, a switch's entry with its
layer states and its 2-D blend spaces' weights on kernels (:class:`CompiledLayers`,
:class:`_GradientFactors`). The numbers are the numpy path's, bit for bit
(``tests/graph/test_compiled_machine.py``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.anim.blendspace import GradientBand
from engine.graph.binding import BoundGraph
from engine.graph.clocks import LeafClocks
from engine.graph.flat import TreeBlend, TreeClip
from engine.graph.transitions import SPRING, SYNCED
from engine.math._checks import BoolArray, FloatArray, IntArray
from engine.player.compose import kernel_blocks
from engine.player.transitions import SPRING_SETTLE

if TYPE_CHECKING:
    from engine.graph.machine import Machine
    from engine.graph.parameters import Parameters

#: The leaves' times, rates, weights, weight rates and leaving ``(N, K)`` of ``K`` characters (``layer_state``).
Leaves = tuple[FloatArray, FloatArray, FloatArray, FloatArray, BoolArray]
#: Condition kinds and comparison operators as the kernels take them.
CONDITION_KINDS = {"float": 0, "bool": 1, "trigger": 2}
OPERATORS = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5, "set": 4}  # a trigger's "set": unread


def _blends() -> ModuleType:
    """:mod:`engine.graph._blend_kernels`, imported on first use."""
    return _loaded("engine.graph._blend_kernels")


def _kernels() -> ModuleType:
    """:mod:`engine.graph._machine_kernels`, imported on first use (numba: the player's backend is numba)."""
    return _loaded("engine.graph._machine_kernels")


def _leaf_kernels() -> ModuleType:
    """:mod:`engine.graph._leaf_kernels`, imported on first use."""
    return _loaded("engine.graph._leaf_kernels")


def _loaded(name: str) -> ModuleType:
    """Module ``name``, imported the first time (a dozen asks a frame: the import machinery once)."""
    return sys.modules.get(name) or importlib.import_module(name)


class CompiledStep:
    """One plain machine's transition table as arrays, and its rounds on the kernels."""

    def __init__(self, machine: Machine) -> None:
        table = machine.table
        starts = np.cumsum([0, *(len(found) for found in table.candidates)])
        flat = [condition for found in table.conditions for condition in found]
        self.machine = machine
        self.table = (
            machine.loops.astype(bool),
            starts.astype(np.intp),
            np.array([k for found in table.candidates for k in found], dtype=np.intp),
            table.exit_time,
            (
                np.cumsum([0, *(len(found) for found in table.conditions)]).astype(np.intp),
                np.array([CONDITION_KINDS[c.kind] for c in flat], dtype=np.intp),
                np.array([c.row for c in flat], dtype=np.intp),
                np.array([OPERATORS[c.op] for c in flat], dtype=np.intp),
                np.array([float(c.value) for c in flat], dtype=np.float64),
            ),
            SPRING,
            SPRING_SETTLE,
            SYNCED,
        )
        self.entries = (
            table.kind,
            table.target,
            table.duration,
            table.half_life,
            table.interruptible,
            np.ascontiguousarray(machine.consumes),
        )
        """Per transition: kind, target, duration, half-life, interruptible, consumed triggers (:meth:`enter`)."""
        self.fresh: Callable[[IntArray], object] | None = None
        """Makes the kept phase rates of some characters' states fresh in one kernel (:class:`CompiledLayers`'), or
        ``None``: the stale ones found on a kernel, computed by the machine (``Machine.rates``)."""
        self.switching: Callable[[tuple[Any, ...], IntArray], tuple[Leaves, Leaves]] | None = None
        """Enters (:meth:`entry`'s arguments) with the leaves' state of the switching characters just before and
        after, on one kernel (:meth:`CompiledLayers.switch_states`), or ``None``: :meth:`enter` alone."""

    @classmethod
    def of(cls, machine: Machine) -> CompiledStep | None:
        """The compiled step of ``machine``, or ``None`` when a state plays a sub-machine."""
        return cls(machine) if bool(machine.plain.all()) else None

    def _machine(self) -> tuple[np.ndarray, ...]:
        """The machine's per-character arrays as the kernels take them (state … source elapsed)."""
        m = self.machine
        return (
            m.state,
            m.phase,
            m.elapsed,
            m.kind,
            m.transition,
            m.progress,
            m.duration,
            m.half_life,
            m.locked,
            m.source,
            m.source_phase,
            m.source_elapsed,
        )

    def _arrays(self) -> tuple[np.ndarray, ...]:
        """:meth:`_machine`'s arrays and both slots' phase and elapsed (a round's)."""
        current, previous = self.machine.current, self.machine.previous
        return (*self._machine(), current.phase, current.elapsed, previous.phase, previous.elapsed)

    def fresh_rates(self, rows: IntArray) -> FloatArray:
        """The machine's kept phase rates ``(S, C)``, fresh for the current and source states of ``rows``."""
        machine = self.machine
        rates, rate_stamps = machine.rate_cache()
        if self.fresh is not None:
            self.fresh(rows)
            return rates
        states, characters = np.empty(2 * rows.size, dtype=np.intp), np.empty(2 * rows.size, dtype=np.intp)
        stale = _kernels().stale_rates(
            rows, machine.state, machine.source, rate_stamps, machine.parameters.stamps, states, characters
        )
        if stale:
            machine.rates(states[:stale], characters[:stale])
        return rates

    def entry(self, rows: IntArray, chosen: IntArray, phase: FloatArray, keep: BoolArray) -> tuple[Any, ...]:
        """:func:`~engine.graph._machine_kernels.enter_states`' arguments for ``Machine._enter``'s writes."""
        m = self.machine
        slots = (m.current.arrays(), m.previous.arrays())
        return (rows, chosen, phase, keep, self.entries, self._machine(), slots, m.parameters.triggers)

    def enter(self, rows: IntArray, chosen: IntArray, phase: FloatArray, keep: BoolArray) -> None:
        """``Machine._enter`` on the kernel (:func:`~engine.graph._machine_kernels.enter_states`): the same writes."""
        _kernels().enter_states(*self.entry(rows, chosen, phase, keep))

    def round(
        self, rows: IntArray, frame: tuple[FloatArray, FloatArray], choosing: bool
    ) -> tuple[IntArray, BoolArray, IntArray]:
        """One round for ``rows`` (:func:`~engine.graph._machine_kernels.step_round`): chosen, pause, ended.

        ``frame``: the seconds remaining and spent ``(C,)``.
        """
        machine = self.machine
        parameters = machine.parameters
        rates = self.fresh_rates(rows)
        chosen = np.empty(rows.size, dtype=np.intp)
        pause = np.empty(rows.size, dtype=bool)
        done = np.empty(rows.size, dtype=np.intp)
        count = _kernels().step_round(
            rows,
            rates,
            choosing,
            self._arrays(),
            self.table,
            (parameters.floats, parameters.bools, parameters.triggers),
            frame,
            chosen,
            pause,
            done,
        )
        return chosen, pause, done[:count]

    def step(self, dt: FloatArray, active: BoolArray, spent: FloatArray) -> None:
        """``Machine.step`` of ``dt`` ``(C,)`` for the ``active`` characters (``spent`` ``(C,)``: seconds so far)."""
        machine = self.machine
        frame = (np.array(dt, dtype=np.float64), spent)
        rows = np.flatnonzero(active)
        for _ in range(len(machine.bound.states) + 2):  # rounds of chained transitions
            if not rows.size:
                return
            chosen, pause, done = self.round(rows, frame, True)
            if done.size:
                machine.hooks.stop_stage(machine.name, done)
            starting = chosen >= 0
            if starting.any():
                machine.start(rows[starting], chosen[starting])
            rows = rows[pause]
        if rows.size:
            self.round(rows, frame, False)


class CompiledLayers:
    """A one-machine graph's leaves' weights and times on the kernels (``GraphRuntime._write_layers``).

    For graphs of one plain machine without overrides whose states play a clip or a blend space
    of clips: each leaf's weight in its state's tree is kept per character (``factors``,
    refreshed where the parameters changed), so a frame's weights and times are one kernel call,
    and so are the states' phase rates (:meth:`fresh_rates`, the compiled step's).
    """

    def __init__(self, graph: BoundGraph, machine: Machine, step: CompiledStep, threads: int = 1) -> None:
        count, states = machine.count, machine.bound.states
        self.machine = machine
        self.step = step
        self.threads = threads  # the write's blocks of characters in parallel (the player's threads)
        step.fresh = self.fresh_rates
        step.switching = self.switch_states
        self.factors = np.ones((count, len(graph.leaves)))
        self.blends = {
            s: (state.tree, state.tree.clips)
            for s, state in enumerate(states)
            if isinstance(state.tree, TreeBlend) and state.tree.clips is not None
        }
        self.stamps = np.full((len(states), count), -1, dtype=np.int64)  # the factors' parameter stamps
        self.gradients = {
            s: _GradientFactors(tree, machine.parameters)
            for s, (tree, _) in self.blends.items()
            if _GradientFactors.takes(tree)
        }
        """The blend states whose 2-D space's weights are refreshed on the kernels (:class:`_GradientFactors`)."""
        self._refreshed = -1  # the parameters' changes when every factor was last refreshed

        clocks = LeafClocks.of(graph, machine.name)  # every leaf of the graph, in order: its only machine
        self.leaves = tuple(
            np.ascontiguousarray(column[:, 0])
            for column in (
                clocks.state,
                clocks.duration,
                clocks.speed,
                clocks.state_speed,
                clocks.rate,
                clocks.sync,
                clocks.loop,
            )
        )
        timing = [
            [leaf for leaf, _ in state.tree.timing(machine.parameters, np.zeros(0, np.intp), state.synced)]
            for state in states
        ]
        self.timing = (
            np.cumsum([0, *(len(found) for found in timing)]).astype(np.intp),
            np.array([leaf.index for found in timing for leaf in found], dtype=np.intp),
            np.array(
                [leaf.cycle_rate(state.speed) for state, found in zip(states, timing, strict=True) for leaf in found]
            ),
        )

    @classmethod
    def of(cls, graph: BoundGraph, machines: dict[str, Machine], threads: int = 1) -> CompiledLayers | None:
        """The compiled layers of a runtime's machines (writing on ``threads``), or ``None`` where numpy is needed."""
        root = machines["root"]
        step = root.compiled
        if len(machines) != 1 or step is None or graph.overrides:
            return None
        for state in root.bound.states:
            tree = state.tree
            if not isinstance(tree, TreeClip) and not (isinstance(tree, TreeBlend) and tree.clips is not None):
                return None
        return cls(graph, root, step, threads)

    def _refresh_factors(self) -> None:
        """Every blend state's weights of the characters whose parameters changed since they were kept.

        All of them at once, in or out of the state: one blend-space evaluation a frame, not one per use.
        """
        parameters = self.machine.parameters
        if parameters.changes == self._refreshed:  # no float set since: every factor is fresh
            return
        for s, (tree, clips) in self.blends.items():  # loop over the blend-space states
            gradient = self.gradients.get(s)
            if gradient is not None:
                gradient.refresh(self.factors, clips, self.stamps[s])
                continue
            stale = np.flatnonzero(self.stamps[s] != parameters.stamps)
            if stale.size:
                self.factors[stale[:, None], clips] = tree.blend_weights(parameters, stale)
                self.stamps[s, stale] = parameters.stamps[stale]
        self._refreshed = parameters.changes

    def fresh_rates(self, rows: IntArray) -> None:
        """The machine's kept phase rates of ``rows``' current and source states made fresh (``Machine.rates``)."""
        self._refresh_factors()
        m = self.machine
        rates, rate_stamps = m.rate_cache()
        _kernels().timing_rates(
            rows, (m.state, m.source), self.factors, self.timing, m.parameters.stamps, rates, rate_stamps
        )

    def write_advance(self, entries: tuple[Any, ...], table: tuple[Any, ...], out: tuple[Any, ...]) -> None:
        """The leaves' weights and times written into the player's layers and moved (``Player.advance_with``'s write).

        One kernel (:func:`~engine.graph._leaf_kernels.write_advance`), on the player's threads.
        """
        m = self.machine
        self._refresh_factors()
        machine = self._clocks()
        current, previous = m.current.arrays(), m.previous.arrays()
        blocks = kernel_blocks(self.threads, entries[1].size)
        if blocks > 1:
            _leaf_kernels().write_advance_parallel(
                blocks, machine, current, previous, self.leaves, self.factors, entries, table, out
            )
        else:
            _leaf_kernels().write_advance(machine, (current, previous), self.leaves, self.factors, entries, table, out)

    def _clocks(self) -> tuple[np.ndarray, ...]:
        """The machine's arrays the leaves' kernels read (state, phase … source elapsed: ``write_advance``')."""
        m = self.machine
        return (m.state, m.phase, m.elapsed, m.kind, m.progress, m.duration, m.source, m.source_phase, m.source_elapsed)

    def _state_out(self, count: int) -> Leaves:
        """:meth:`layer_state`'s arrays for ``count`` characters, zeros."""
        shape = (len(self.leaves[0]), count)
        return (np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape, dtype=bool))

    def layer_state(self, rows: IntArray) -> Leaves:
        """The leaves' times, rates, weights, weight rates and leaving ``(N, K)`` of ``rows`` now (``layer_state``)."""
        rates = self.step.fresh_rates(rows)
        self._refresh_factors()
        out = self._state_out(rows.size)
        _kernels().layer_state(rows, self._clocks(), self.leaves, self.factors, rates, SYNCED, out)
        return out

    def switch_states(self, entry: tuple[Any, ...], members: IntArray) -> tuple[Leaves, Leaves]:
        """:meth:`CompiledStep.enter` of ``entry`` with :meth:`layer_state` of ``members`` just before and after.

        One kernel (:func:`~engine.graph._machine_kernels.switch_states`): the same numbers.
        """
        self._refresh_factors()
        m = self.machine
        rates, rate_stamps = m.rate_cache()
        layers = (
            self._clocks(),
            self.leaves,
            self.factors,
            self.timing,
            m.parameters.stamps,
            rates,
            rate_stamps,
            SYNCED,
        )
        before, after = self._state_out(members.size), self._state_out(members.size)
        _kernels().switch_states(entry, members, layers, before, after)
        return before, after


class _GradientFactors:
    """A 2-D blend space's factors refreshed on the kernels: numpy's weights bit for bit.

    The stale characters, their values and the directional mode's cross and dot products come from
    one kernel (:func:`~engine.graph._blend_kernels.stale_turns`), the speeds and angles from
    numpy's ``hypot`` and ``arctan2`` (as ``GradientBand.polar``), the weights and their storing from
    another (:func:`~engine.graph._blend_kernels.store_weights`).
    """

    def __init__(self, tree: TreeBlend, parameters: Parameters) -> None:
        space = tree.space
        assert isinstance(space, GradientBand)
        count, samples = parameters.num_characters, space.points.shape[0]
        self.parameters = parameters
        self.points = space.points
        self.tables = space.tables
        self.rows = np.array([parameters.index[name][1] for name in tree.parameters], dtype=np.intp)
        directional = space.mode == "directional"
        self.cartesian = (np.zeros(0), np.zeros((0, 0)))  # no speeds, no angles: the Cartesian mode's polar
        self.out = (
            np.empty(count, dtype=np.intp),
            np.empty((count, 2)),
            np.empty(samples * count if directional else 0),
            np.empty(samples * count if directional else 0),
        )

    @staticmethod
    def takes(tree: TreeBlend) -> bool:
        """Whether the kernels weigh ``tree``'s space: a 2-D one of at most ``MOST_SAMPLES`` samples."""
        space = tree.space
        return isinstance(space, GradientBand) and space.points.shape[0] <= _blends().MOST_SAMPLES

    def refresh(self, factors: FloatArray, clips: IntArray, kept: IntArray) -> None:
        """The factors ``(C, N)`` of the space's ``clips`` where ``kept`` ``(C,)`` is not the characters' stamp."""
        stamps = self.parameters.stamps
        rows, values, cross, dot = self.out
        count = _blends().stale_turns(kept, stamps, self.parameters.floats, self.rows, self.points, self.out)
        if not count:
            return
        found = values[:count]
        polar = self.cartesian
        if cross.size:  # directional: GradientBand.polar's speeds and angles, numpy's
            shape = (self.points.shape[0], count)
            size = shape[0] * count
            angles = np.arctan2(cross[:size].reshape(shape), dot[:size].reshape(shape))
            polar = (np.hypot(found[:, 0], found[:, 1]), angles)
        _blends().store_weights(found, self.points, self.tables, polar, rows[:count], (factors, clips, kept, stamps))
