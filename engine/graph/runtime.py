"""The graph runtime: one bound graph, ``C`` characters, each in its own state — a controller of a player.

A :class:`GraphRuntime` owns the graph's parameters (:class:`~engine.graph.parameters.Parameters`)
and machines (:class:`~engine.graph.machine.Machine`: states, clocks, transitions per character)
and plays every leaf clip of the bound graph on one layer of a :class:`~engine.player.Player`
(its own, or one it shares with other controllers). Each frame (:meth:`GraphRuntime.control`) it

1. steps the machines (conditions, exit times, transitions at their exact instants; a
   non-crossfade transition starts the player's transition stage from the captured output,
   handed over when the machines are done: :mod:`engine.graph.pending`);
2. weighs the leaves: the current states' flat trees (:mod:`engine.graph.flat`), a live
   crossfade's source at ``1 - α`` and target at ``α``, sub-machines inside their states, the
   layer motions' overrides;
3. writes the leaves' layer times: a state entered this frame jumps its layers to the entry time,
   then every played layer moves by its exact travel (the player wraps it, takes the root's keyed
   travel and fires the markers), and the times are locked to the states' clocks.

The player does everything else (sample, blend, additive layers, transition stage, root motion,
markers, morph weights, local→model, palette) on the compiled kernels where numba is installed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.anim.events import Loop
from engine.anim.pose import Pose
from engine.anim.velocity import PoseVelocity
from engine.errors import InvalidInputError
from engine.graph.binding import BoundGraph
from engine.graph.clocks import LeafClocks, leaf_block
from engine.graph.compiled import CompiledLayers, CompiledStep, Leaves
from engine.graph.events import GraphMarkerEvent, deliver
from engine.graph.flat import Weights
from engine.graph.machine import Machine, Switch, present
from engine.graph.parameters import Parameters
from engine.graph.pending import PendingSwitches
from engine.graph.transitions import NONE
from engine.math._checks import BoolArray, FloatArray, IntArray, trusted
from engine.player import LayerState, MorphTargets, Player
from engine.player.transitions import Capture


class GraphRuntime:
    """Runs a :class:`~engine.graph.binding.BoundGraph` on ``num_characters`` characters (module docstring).

    Parameters
    ----------
    graph
        The bound graph.
    num_characters
        ``C``.
    player
        Play on this player (its skeleton must be the graph's, its root-motion joint the
        graph's); ``None`` makes one (``backend``, ``morph`` as :class:`~engine.player.Player`).

    Examples
    --------
    >>> import numpy as np
    >>> from engine.graph import bind_graph, parse_graph
    >>> from engine.procedural.mannequin import build_mannequin
    >>> mannequin = build_mannequin()
    >>> document = {
    ...     "parameters": {"speed": {"type": "float"}},
    ...     "start": "idle",
    ...     "states": {
    ...         "idle": {"motion": {"clip": "idle"},
    ...                  "transitions": [{"to": "walk", "kind": "inertialize", "duration": 0.3,
    ...                                   "conditions": [{"parameter": "speed", "op": ">", "value": 0.5}]}]},
    ...         "walk": {"motion": {"clip": "walk"}},
    ...     },
    ... }
    >>> graph = bind_graph(parse_graph(document), mannequin.skeleton, mannequin.clips)
    >>> runtime = GraphRuntime(graph, num_characters=3)
    >>> runtime.parameters.set_float("speed", [0.0, 1.0, 1.0])
    >>> runtime.update(1 / 60)
    >>> runtime.state_names()
    ['idle', 'walk', 'walk']
    >>> runtime.model.shape
    (3, 25, 4, 4)
    """

    def __init__(
        self,
        graph: BoundGraph,
        num_characters: int = 1,
        *,
        player: Player | None = None,
        backend: str | None = None,
        morph: MorphTargets | None = None,
    ) -> None:
        if isinstance(num_characters, bool) or int(num_characters) < 1:
            raise InvalidInputError(f"num_characters must be at least 1, got {num_characters}")
        count = int(num_characters)
        if player is None:
            player = Player(graph.skeleton, count, root_motion=graph.root_motion, backend=backend, morph=morph)
        elif player.skeleton is not graph.skeleton or player.num_characters != count:
            raise InvalidInputError("player must play the graph's skeleton for num_characters characters")
        elif player.root_joint != graph.root_motion:
            raise InvalidInputError(
                f"the player's root-motion joint ({player.root_joint}) is not the graph's ({graph.root_motion})"
            )
        self.graph = graph
        self.player = player
        self.num_characters = count
        self.parameters = Parameters(graph.definition.parameters, count)
        self.machines: dict[str, Machine] = {}
        for name in graph.machines:
            self.machines[name] = Machine(graph, name, self.parameters, self.machines, self)
        if player.backend == "numba":
            for machine in self.machines.values():
                machine.compiled = CompiledStep.of(machine)
        self.root = self.machines["root"]
        self._compiled = CompiledLayers.of(graph, self.machines, player.threads) if player.backend == "numba" else None
        self._names = list(self.machines)
        self._owner = np.full(count, -1, dtype=np.intp)  # the machine that started each stage transition
        self._pending = PendingSwitches(player)  # the machines' switches within an update
        self.layers = np.array(
            [
                player.add_layer(
                    leaf.clip,
                    loop=Loop.REPEAT if leaf.loop else Loop.ONCE,
                    mask=leaf.mask,
                    additive=leaf.additive,
                    reference=leaf.reference,
                )
                for leaf in graph.leaves
            ],
            dtype=np.intp,
        )
        """The player layer of each leaf of the graph (:attr:`BoundGraph.leaves`)."""
        first = int(self.layers[0]) if self.layers.size else 0
        self._span = slice(first, first + self.layers.size)  # the graph's layers, added one after the other
        self.overrides = np.array(
            [player.add_override(range(first + c.start, first + c.stop), c.mask) for c in graph.overrides],
            dtype=np.intp,
        )
        """The player override of each of the graph's (:attr:`BoundGraph.overrides`)."""
        self._weights = Weights(len(graph.leaves), len(graph.overrides), count)
        self._clocks = [(machine, LeafClocks.of(graph, name)) for name, machine in self.machines.items()]
        self._capture_weights = Weights(len(graph.leaves), len(graph.overrides), count)
        player.begin_frame(0.0)  # the start states' pose, no transition chosen yet, no marker counted yet
        with trusted():
            self._write_layers(None, advance=False)
        player.pose()

    def __repr__(self) -> str:
        return f"GraphRuntime({self.graph.definition.name!r}, {self.num_characters} characters)"

    # --- the frame ---------------------------------------------------------------------------------

    def update(
        self, dt: Any, characters: Any = None, *, hold: bool = False, records: Any = None, model: bool = True
    ) -> None:
        """One whole frame: :meth:`advance`'s logic, then the player's :meth:`~engine.player.Player.end_frame`.

        The pose, the post-blend stages, local→model and palette; ``records`` and ``model`` as
        :meth:`engine.player.Player.finalize` takes them (a crowd that only draws: its upload
        records, ``model=False``).
        """
        self.player.begin_frame(dt)
        self.control(characters if hold else None)
        self.player.end_frame(characters, records, model=model)

    def warm_up(self, records: Any = None) -> float:
        """Compile (or load) the kernels the frames and the transitions call now, not at the first transition.

        The player's :meth:`~engine.player.Player.warm_up` (every transition kind rehearsed, put
        back after) and the graph's own kernels a switch calls (its layers' state at the switch,
        read only; a state entered, with and without the switch's states, for no character); no
        time passes, nothing changes. A program calls it once, after its first :meth:`update`,
        before it times frames. ``records`` as for :meth:`engine.player.Player.finalize`; returns
        the seconds it took.
        """
        start = time.perf_counter()
        self.player.warm_up(records)
        with trusted():
            for count in dict.fromkeys((1, min(self.num_characters, self.player.threads))):  # serial, parallel
                self.layer_state(np.arange(count), np.zeros(count))
            nobody = np.zeros(0, dtype=np.intp)
            for machine in self.machines.values():
                step, nothing = machine.compiled, (nobody, nobody, np.zeros(0), np.zeros(0, dtype=bool))
                if step is not None:
                    step.enter(*nothing)
                    if step.switching is not None:
                        step.switching(step.entry(*nothing), nobody)
        return time.perf_counter() - start

    def advance(self, dt: Any, characters: Any = None, *, hold: bool = False) -> None:
        """The graph's logic for ``dt`` seconds (scalar or ``(C,)``, ``>= 0``) and the player's pose.

        ``characters`` (an index array, ``None``: all) are posed, the others keep their last
        pose while their machines run on (animation LOD); with ``hold`` their machines hold too
        (:meth:`control`: their ``dt`` must be 0; give them the accumulated ``dt`` when posed).
        """
        self.player.begin_frame(dt)
        self.control(characters if hold else None)
        self.player.pose(characters)

    def control(self, characters: Any = None) -> None:
        """The graph's part of the player's current frame: the machines, then the leaves' weights and times.

        ``characters`` (an index, slice, index array or mask; ``None``: all): the characters whose
        machines run this frame (animation LOD for the logic). The others hold — their clocks,
        layers and transitions wait — and must have a frame step of 0: give a character its
        accumulated ``dt`` when it runs next (a transition then starts at its exact instant
        within it; parameters are read once, at its start).

        Raises
        ------
        InvalidInputError
            A character that does not run has a frame step above 0.
        """
        step = self.player.frame_step
        rows = None if characters is None else self.parameters.select(characters)
        active = np.ones(self.num_characters, dtype=bool)
        if rows is not None:
            active[:] = False
            active[rows] = True
            if np.any(step[~active] > 0.0):
                raise InvalidInputError("characters that do not run this frame must have a frame step of 0")
        with trusted():
            for machine in self.machines.values():
                machine.begin()
            try:
                self.root.step(step, active)
            finally:  # the switches started, even when a machine failed after them: as the machines hold them
                self._pending.flush()
            self._write_layers(rows)

    def _write_layers(self, rows: IntArray | None = None, *, advance: bool = True) -> None:
        """Weights, overrides and exact times of every leaf's layer for this frame (module docstring).

        ``rows``: the characters written (``None``: all; the others' layers stay as they are).
        Without ``advance`` the layers only jump to their states' times (no travel, no markers).
        """
        player = self.player
        if self._compiled is not None and advance:  # written and moved in one pass on the kernel
            player.advance_with(self._span, rows, self._compiled.write_advance)
            return
        every: slice | IntArray = slice(None) if rows is None else rows
        self._write_weights(every, rows)
        times = self._layer_times(every, player.raw_times[self._span].copy())
        end, exact, jump, running, jumped = (array[:, every] for array in times)
        if advance:  # the weights, the jumps, the travel and the exact times: one pass
            jumps = (jump, jumped) if jumped.any() else None
            player.advance_layers(self._span, end, running, rows, jump=jumps, exact=exact)
            return
        if jumped.any():
            player.set_time(self._span, jump, rows, where=jumped)
        player.set_time(self._span, exact, rows, where=running, fresh=False)

    def _write_weights(self, every: slice | IntArray, rows: IntArray | None) -> None:
        """The leaves' weights and the overrides' of the characters ``every`` into the player."""
        out = self._weights
        out.clear()
        picked = np.arange(self.num_characters)[every]
        self.weigh_machine("root", picked, np.ones(picked.size), np.zeros(picked.size), out)
        self.player.set_weights(self._span, out.weights[:, every], rows)
        if self.overrides.size:
            self.player.set_override_weights(self.overrides, out.overrides[:, every], rows)

    def _layer_times(self, every: slice | IntArray, start: FloatArray) -> tuple[np.ndarray, ...]:
        """The leaves' end, exact and entry times, running and jumped ``(N, C)`` for the characters ``every``."""
        end, exact, jump = start.copy(), start.copy(), start.copy()
        running, jumped = np.zeros(start.shape, dtype=bool), np.zeros(start.shape, dtype=bool)
        written = np.zeros(self.num_characters, dtype=bool)
        written[every] = True
        for machine, leaves in self._clocks:  # loop over machines, as current and as live source
            busy = np.flatnonzero(written & (machine.source >= 0) & (machine.kind != NONE))
            for characters, states, phase, elapsed, slot in (
                (every, machine.state[every], machine.phase[every], machine.elapsed[every], machine.current),
                (
                    busy,
                    machine.source[busy],
                    machine.source_phase[busy],
                    machine.source_elapsed[busy],
                    machine.previous,
                ),
            ):
                played = leaves.played(states)
                if not played.any():
                    continue
                block = leaf_block(leaves.index, characters)
                begin, entered = start[block], slot.entered[characters]
                if entered.any():  # states entered this frame: their layers jump to the entry time
                    entry = leaves.raw(slot.entry[characters], np.zeros(entered.size))
                    begin = np.where(entered, entry, begin)
                    jumping = played & entered
                    jump[block] = np.where(jumping, entry, jump[block])
                    jumped[block] |= jumping
                travel = leaves.travel(slot.phase[characters], slot.elapsed[characters])
                end[block] = np.where(played, begin + travel, end[block])
                exact[block] = np.where(played, leaves.times(phase, elapsed), exact[block])
                running[block] |= played
        return end, exact, jump, running, jumped

    def weigh_machine(self, name: str, rows: IntArray, factor: FloatArray, rate: FloatArray, out: Weights) -> None:
        """Add the weights of machine ``name``'s current (and live source) states for ``rows``, times ``factor``."""
        machine = self.machines[name]
        target, target_rate, source, source_rate = machine.state_weights(rows)
        for states, weight, slope in (
            (machine.state[rows], target, target_rate),
            (machine.source[rows], source, source_rate),
        ):
            played = (states >= 0) & (weight > 0.0)
            for s in present(states[played], len(machine.bound.states)):  # loop over the states played
                picked = np.flatnonzero(played & (states == s))
                tree = machine.bound.states[s].tree
                w, r = factor[picked] * weight[picked], rate[picked] * weight[picked] + factor[picked] * slope[picked]
                tree.weigh(self.parameters, self, rows[picked], w, r, out)

    # --- captures for the player's transition stage --------------------------------------------

    def layer_state(self, rows: IntArray, delay: FloatArray, leaves: Leaves | None = None) -> LayerState:
        """Every player layer's times, rates, weights and their rates of ``rows`` at the machines' clocks now.

        ``delay``: seconds into the frame (the clock the transition stage is read at). The graph's
        layers come from its machines (``leaves``: their state, when a kernel computed it); other
        controllers' layers as they are in the player.
        """
        player = self.player
        at = player.frame_start[rows] + delay
        overrides = player.override_weights[:, rows]  # a copy (an index array)
        if leaves is None:
            compiled = self._compiled
            leaves = compiled.layer_state(rows) if compiled is not None else self._leaf_state(rows, overrides)
        if self.layers.size == player.num_layers:  # every layer the graph's (in order: added one after the other)
            times, rates, weights, weight_rates, leaving = leaves
            return LayerState(times, rates, weights, weight_rates, overrides, leaving, at)
        shape = (player.num_layers, rows.size)
        times, rates, weight_rates = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        others = np.setdiff1d(np.arange(player.num_layers), self.layers)  # other controllers' layers, as they are
        times[others], rates[others] = player.times[others][:, rows], player.rates[others][:, rows]
        weights = player.weights[:, rows]
        leaving = np.zeros(times.shape, dtype=bool)
        for array, values in zip((times, rates, weights, weight_rates, leaving), leaves, strict=True):
            array[self.layers] = values
        return LayerState(times, rates, weights, weight_rates, overrides, leaving, at)

    def _leaf_state(self, rows: IntArray, overrides: FloatArray) -> Leaves:
        """The leaves' times, rates, weights, weight rates and leaving ``(N, K)`` of ``rows`` (the numpy path).

        Writes the graph's overrides' weights into ``overrides`` ``(G, K)``.
        """
        out = self._capture_weights
        out.weights[:, rows], out.rates[:, rows], out.overrides[:, rows] = 0.0, 0.0, 0.0
        self.weigh_machine("root", rows, np.ones(rows.size), np.zeros(rows.size), out)
        if self.overrides.size:
            overrides[self.overrides] = out.overrides[:, rows]
        times, rates, entered = self._leaf_times(rows)
        return times, rates, out.weights[:, rows], out.rates[:, rows], entered

    def switch(
        self, machine: str, rows: IntArray, delay: FloatArray, before: LayerState, after: LayerState, how: Switch
    ) -> None:
        """Start the player's stage transition ``how`` for ``rows`` (owned by ``machine``) at ``delay``.

        From the output at ``before`` (the layers before the switch) to the layers ``after`` it;
        handed to the player when the machines are done (:mod:`engine.graph.pending`).
        """
        self._pending.add(rows, delay, before, after, how)
        self._owner[rows] = self._names.index(machine)

    def capture_output(self, rows: IntArray, delay: FloatArray) -> Capture:
        """The output of ``rows`` at ``delay`` seconds into the frame (the transition stage included)."""
        state = self.layer_state(rows, delay)
        return self.player.capture(
            rows,
            state.times,
            state.rates,
            state.weights,
            state.weight_rates,
            override_weights=state.override_weights,
            at=state.at,
            leaving=state.leaving,
        )

    def _leaf_times(self, rows: IntArray) -> tuple[FloatArray, FloatArray, BoolArray]:
        """Clip times and rates ``(N, K)`` of every leaf for ``rows`` at the machines' clocks now.

        Also which leaves' states were entered this instant (their velocity is the motion leaving).
        """
        times = np.zeros((len(self.graph.leaves), rows.size))
        rates = np.zeros_like(times)
        entered = np.zeros(times.shape, dtype=bool)
        for machine, leaves in self._clocks:  # loop over machines, as current and as live source
            busy = machine.kind[rows] != NONE
            for played, phases, elapsed, is_source in (
                (leaves.played(machine.state[rows]), machine.phase[rows], machine.elapsed[rows], False),
                (
                    leaves.played(machine.source[rows]) & busy,
                    machine.source_phase[rows],
                    machine.source_elapsed[rows],
                    True,
                ),
            ):
                if not played.any():
                    continue
                k = leaves.index
                leaf_rates = leaves.rates(elapsed, machine.phase_rate(rows, source=is_source))
                times[k] = np.where(played, leaves.times(phases, elapsed), times[k])
                rates[k] = np.where(played, leaf_rates, rates[k])
                entered[k] = np.where(played, elapsed == 0.0, entered[k])
        return times, rates, entered

    def stop_stage(self, machine: str, rows: IntArray) -> None:
        """End the stage's transition of ``rows`` that ``machine`` started."""
        mine = rows[self._owner[rows] == self._names.index(machine)]
        if mine.size:
            self._pending.drop(mine)
            self.player.transitions.stop(mine)
            self._owner[mine] = -1

    # --- results and queries -------------------------------------------------------------------

    @property
    def local_pose(self) -> Pose:
        """The local pose ``(C, J)`` of the last frame: a read-only C-ordered copy (the player's)."""
        return self.player.local_pose

    @property
    def model(self) -> FloatArray:
        """Model-space matrices ``(C, J, 4, 4)`` of :attr:`local_pose`: a read-only copy."""
        return self.player.model

    @property
    def clock(self) -> FloatArray:
        """``(C,)`` each character's time, seconds (the player's clock; a copy)."""
        return self.player.clock.copy()

    @property
    def root_translation(self) -> FloatArray:
        """With a root-motion joint: its planar travel ``(x, 0, z)`` ``(C, 3)`` during the last frame, metres.

        In the character's frame at the start of the frame: each leaf's exact keyed travel,
        weighted like the pose, plus the decaying velocity offset of a transition in progress
        (:mod:`engine.player.transitions`); zeros without a root-motion joint. Move the
        character by its heading applied to it, then turn it by :attr:`root_yaw`.
        """
        return self.player.root_motion.translation

    @property
    def root_yaw(self) -> FloatArray:
        """With a root-motion joint: its turn about +Y ``(C,)`` during the last frame, radians."""
        return self.player.root_motion.yaw

    def output_velocity(self, characters: Any = None) -> PoseVelocity:
        """Velocity ``(K, J)`` of the output now for the selected characters (exact: clips, blends, transitions)."""
        rows = self.parameters.select(characters)
        with trusted():
            return self.capture_output(rows, self.player.frame_step[rows]).velocity

    def state_names(self, machine: str = "root") -> list[str]:
        """The current state of every character in ``machine``, by name."""
        runtime = self.machines[machine]
        return [runtime.bound.states[s].name for s in runtime.state]

    def in_transition(self, machine: str = "root") -> BoolArray:
        """Whether each character has a transition in progress in ``machine`` ``(C,)``."""
        return self.machines[machine].kind != NONE

    def reset(self, characters: Any = None) -> None:
        """Put the selected characters back in the start state at time 0 (and end their transitions)."""
        rows = self.parameters.select(characters)
        self.root.reset(rows)
        self.player.transitions.stop(rows)
        self._owner[rows] = -1

    def on_marker(self, name: str, callback: Callable[[GraphMarkerEvent], Any]) -> None:
        """Call ``callback(event)`` each time characters cross marker ``name`` of a clip playing in a state.

        Once per crossing per clip (a blend of two clips with the marker fires twice, each with
        its layer weight); only clips with weight count.

        Raises
        ------
        InvalidInputError
            No clip of the graph has a marker ``name``.
        """
        found = False
        for leaf, layer in zip(self.graph.leaves, self.layers.tolist(), strict=True):
            if name not in (leaf.clip.markers or {}):
                continue
            found = True
            state = self.graph.machines[leaf.machine].states[leaf.state].name
            self.player.on_marker(layer, name, deliver(callback, leaf.machine, state, leaf.clip.name))
        if not found:
            raise InvalidInputError(f"no clip of the graph has a marker {name!r}")
