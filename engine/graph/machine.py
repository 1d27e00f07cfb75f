"""One machine of a graph running on ``C`` characters: states, clocks, transitions, per character arrays.

One update of ``dt`` seconds (:meth:`Machine.step`), per machine:

1. **choose** a transition for each character: the any-state transitions first, then the
   current state's, in document order; the first whose conditions hold wins. A transition
   without exit time fires at the start of the update; one with an exit time fires at the
   instant within the update at which the state's normalised time crosses it (or, in a state
   that plays once, any time after) — predicted with the rate the phase really advances at (in
   a synced transition the shared, blended rate, integrated exactly). A character in an
   uninterruptible transition chooses none until it ends, then chooses at that instant;
2. **advance** every clock to that instant, **start** the chosen transitions there, then advance
   the rest of ``dt`` — so a transition starts at the same time whatever the frame rate.

Starting a transition that is not a live crossfade asks the runtime (:class:`Hooks`) to capture
the output (pose and velocity) before and after the switch; the player's transition stage
(:mod:`engine.player.transitions`) takes it from there. A crossfade (and a synced one) is
weights: the live source state keeps playing at ``1 - α``, the target at ``α``
(:meth:`Machine.state_weights`); a synced target starts at the source's phase, matched through
clip markers (:func:`~engine.graph.transitions.marker_phase`), and both advance at one blended
phase rate. A transition of duration 0 cuts. Triggers stay set until a transition that tests
them fires; it consumes them for the characters that took it.

For the player the machine also keeps, per character and frame, what each played state's clips
did: whether the state was entered this frame (its layers jump to the entry time) and how far
its phase and clock travelled (the layers' exact travel, :meth:`Machine.slots`).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from engine.graph.binding import BoundGraph, BoundState
from engine.graph.clocks import Slot
from engine.graph.compiled import CompiledStep, Leaves
from engine.graph.parameters import Parameters
from engine.graph.transitions import FROZEN, NONE, SPRING, STAGE_KINDS, SYNCED, marker_phase
from engine.math._checks import BoolArray, FloatArray, IntArray
from engine.player import LayerState
from engine.player.sync import synced_rate
from engine.player.transitions import SPRING_SETTLE

#: A stage transition of ``K`` characters: its kind's name, their durations and half-lives ``(K,)``.
Switch = tuple[str, FloatArray, FloatArray]


class Hooks(Protocol):
    """What a machine asks of its runtime when a transition starts (:class:`~engine.graph.runtime.GraphRuntime`)."""

    def layer_state(self, rows: IntArray, delay: FloatArray, leaves: Leaves | None = None) -> LayerState:
        """The layers of ``rows`` at ``delay`` seconds into the frame (``leaves``: the graph's, if computed)."""
        ...

    def switch(
        self, machine: str, rows: IntArray, delay: FloatArray, before: LayerState, after: LayerState, how: Switch
    ) -> None:
        """Start the stage transition ``how`` of ``rows``: from the output at ``before`` to the layers ``after``."""
        ...

    def stop_stage(self, machine: str, rows: IntArray) -> None:
        """End the stage's transition of ``rows`` when ``machine`` started it."""
        ...


def present(indices: IntArray, count: int) -> IntArray:
    """The distinct values of ``indices`` (each in ``[0, count)``), ascending: a count, not a sort (``np.unique``)."""
    return np.flatnonzero(np.bincount(indices, minlength=count))


def alpha_integral(done: FloatArray, total: FloatArray, seconds: FloatArray) -> FloatArray:
    """``∫ α`` over ``seconds`` of a crossfade ``done`` seconds in of ``total``: ``α = min((done + t)/total, 1)``."""
    ramp = np.clip(total - done, 0.0, seconds)
    safe = np.where(total > 0.0, total, 1.0)
    return np.where(total > 0.0, (done * ramp + 0.5 * ramp * ramp) / safe, 0.0) + (seconds - ramp)


class Machine:
    """One machine's per-character state (module docstring); made by :class:`~engine.graph.runtime.GraphRuntime`.

    Attributes
    ----------
    state, phase, elapsed
        ``(C,)`` the current state, its normalised time, seconds since it was entered.
    kind, transition, progress, duration, half_life, locked
        ``(C,)`` the transition in progress (kind code, index), seconds into it, its length,
        half-life, and whether it is uninterruptible.
    source, source_phase, source_elapsed
        ``(C,)`` the live source state of a crossfade (-1: none) and its clock.
    current, previous
        :class:`Slot` s of the current and the live source state for the player.
    consumes
        ``(T, G)`` the trigger rows each transition consumes when it fires.
    """

    def __init__(
        self, graph: BoundGraph, name: str, parameters: Parameters, machines: dict[str, Machine], hooks: Hooks
    ) -> None:
        self.graph = graph
        self.name = name
        self.bound = graph.machines[name]
        self.table = self.bound.transitions
        self.parameters = parameters
        self.machines = machines  # every machine of the runtime, by name (shared)
        self.hooks = hooks
        count = parameters.num_characters
        self.count = count
        self.state: IntArray = np.full(count, self.bound.start, dtype=np.intp)
        self.phase: FloatArray = np.zeros(count)
        self.elapsed: FloatArray = np.zeros(count)
        self.kind: IntArray = np.zeros(count, dtype=np.intp)
        self.transition: IntArray = np.full(count, -1, dtype=np.intp)
        self.progress: FloatArray = np.zeros(count)
        self.duration: FloatArray = np.zeros(count)
        self.half_life: FloatArray = np.ones(count)
        self.locked: BoolArray = np.zeros(count, dtype=bool)
        self.source: IntArray = np.full(count, -1, dtype=np.intp)
        self.source_phase: FloatArray = np.zeros(count)
        self.source_elapsed: FloatArray = np.zeros(count)
        self.current = Slot.empty(count)
        self.previous = Slot.empty(count)
        self.current.entered[:] = True  # the start state's layers start at time 0
        self._spent = np.zeros(count)
        self.loops = np.array([s.loops for s in self.bound.states])
        self.speeds = np.array([s.speed for s in self.bound.states])
        self.plain = np.array([s.machine is None for s in self.bound.states])
        self._rates = np.zeros((len(self.bound.states), count))  # own phase rates per state and character
        self._rate_stamps = np.full((len(self.bound.states), count), -1, dtype=np.int64)  # their parameter stamps
        self.compiled: CompiledStep | None = None
        """The machine's rounds on the kernels (the runtime sets it on the numba backend; ``None``: numpy)."""
        self.consumes = np.zeros((len(self.table.triggers), parameters.triggers.shape[0]), dtype=bool)
        for transition, rows in enumerate(self.table.triggers):  # the triggers each transition consumes
            self.consumes[transition, list(rows)] = True

    # --- clocks --------------------------------------------------------------------------------------

    def rates(self, states: IntArray, characters: IntArray) -> FloatArray:
        """Phase rate ``(K,)`` of each character's state ``states[k]`` on its own, with the current parameters.

        A rate depends on the state and the character's float parameters only: it is kept per
        (state, character) and computed again where the character's :attr:`Parameters.stamps` changed.
        """
        stamps = self.parameters.stamps[characters]
        stale = self._rate_stamps[states, characters] != stamps
        if stale.any():
            for s in present(states[stale], len(self.bound.states)):  # loop over states
                rows = characters[stale & (states == s)]
                state = self.bound.states[s]
                leaves = state.tree.timing(self.parameters, rows, state.synced)
                if leaves:
                    weights = np.stack([w for _, w in leaves])
                    cycles = np.array([leaf.cycle_rate(state.speed) for leaf, _ in leaves])[:, None]
                    self._rates[s, rows] = synced_rate(weights, cycles)
                self._rate_stamps[s, rows] = self.parameters.stamps[rows]
        return self._rates[states, characters]

    def _rates_pair(self, rows: IntArray) -> tuple[FloatArray, FloatArray, BoolArray]:
        """Own rates of the current and source states of ``rows``, and which are in a live synced transition."""
        rate = self.rates(self.state[rows], rows)
        synced = (self.source[rows] >= 0) & (self.kind[rows] == SYNCED)
        source_rate = np.zeros(rows.size)
        live = self.source[rows] >= 0
        if live.any():
            source_rate[live] = self.rates(self.source[rows[live]], rows[live])
        return rate, source_rate, synced

    def phase_rate(self, rows: IntArray, *, source: bool) -> FloatArray:
        """The rate ``(K,)`` the current (or live source) state's phase advances at now (synced: the shared rate)."""
        rate, source_rate, synced = self._rates_pair(rows)
        duration = np.where(self.duration[rows] > 0.0, self.duration[rows], 1.0)
        alpha = np.clip(self.progress[rows] / duration, 0.0, 1.0)
        shared = source_rate + alpha * (rate - source_rate)
        own = source_rate if source else rate
        return np.where(synced, shared, own)

    def _phase_travel(
        self, rows: IntArray, seconds: FloatArray, rate: FloatArray, source_rate: FloatArray, synced: BoolArray
    ) -> tuple[FloatArray, FloatArray]:
        """Phase travel of the current and the source state over ``seconds`` (synced: the blended rate, exactly)."""
        travel, source_travel = rate * seconds, source_rate * seconds
        if synced.any():
            mixed = alpha_integral(self.progress[rows], self.duration[rows], seconds)
            shared = source_rate * seconds + (rate - source_rate) * mixed
            travel, source_travel = np.where(synced, shared, travel), np.where(synced, shared, source_travel)
        return travel, source_travel

    def _time_to(
        self, rows: IntArray, gap: FloatArray, rate: FloatArray, source_rate: FloatArray, synced: BoolArray
    ) -> FloatArray:
        """Seconds until the current state's phase has moved by ``gap`` ``(K,)`` (inf when it does not move)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            plain = np.where(rate > 0.0, gap / np.where(rate > 0.0, rate, 1.0), np.inf)
        if not synced.any():
            return plain
        done, total = self.progress[rows], self.duration[rows]
        safe = np.where(total > 0.0, total, 1.0)
        ramp = np.maximum(total - done, 0.0)  # seconds the blend still ramps
        delta = rate - source_rate
        a, b = 0.5 * delta / safe, source_rate + delta * done / safe  # travel(τ) = a τ² + b τ while ramping
        root = b * b + 4.0 * a * gap
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = np.where(root >= 0.0, 2.0 * gap / (b + np.sqrt(np.maximum(root, 0.0))), np.inf)
            reached = a * ramp * ramp + b * ramp  # the travel when the ramp ends
            after = ramp + np.where(rate > 0.0, (gap - reached) / np.where(rate > 0.0, rate, 1.0), np.inf)
        moving = np.where(gap <= reached, inside, after)
        return np.where(synced, np.where(np.isfinite(moving) & (moving >= 0.0), moving, np.inf), plain)

    def _move_phase(self, phase: FloatArray, travel: FloatArray, states: IntArray) -> FloatArray:
        moved = phase + travel
        return np.where(self.loops[states], np.mod(moved, 1.0), np.minimum(moved, 1.0))

    def advance(self, step: FloatArray, moving: BoolArray) -> None:
        """Move every clock of the ``moving`` characters by ``step`` seconds ``(C,)``; end finished transitions."""
        moving = moving & (step > 0.0)
        if not moving.any():
            return
        rows = np.flatnonzero(moving)
        dt = step[rows]
        rate, source_rate, synced = self._rates_pair(rows)
        travel, source_travel = self._phase_travel(rows, dt, rate, source_rate, synced)
        live = self.source[rows] >= 0
        if live.any():
            live_rows = rows[live]
            self.source_phase[live_rows] = self._move_phase(
                self.source_phase[live_rows], source_travel[live], self.source[live_rows]
            )
            self.source_elapsed[live_rows] += dt[live]
            self.previous.phase[live_rows] += source_travel[live]
            self.previous.elapsed[live_rows] += dt[live]
        self.phase[rows] = self._move_phase(self.phase[rows], travel, self.state[rows])
        self.elapsed[rows] += dt
        self.current.phase[rows] += travel
        self.current.elapsed[rows] += dt
        busy = self.kind[rows] != NONE
        if busy.any():
            busy_rows = rows[busy]
            self.progress[busy_rows] += dt[busy]
            done = busy_rows[self.progress[busy_rows] >= self._ends(busy_rows)]
            if done.size:
                self._clear(done)
                self.hooks.stop_stage(self.name, done)
        for index, state in enumerate(self.bound.states):  # sub-machines run while their state is current
            if state.machine is not None:
                inside = moving & (self.state == index)
                if inside.any():
                    self.machines[state.machine].step(step, inside, self._frame_delay(step))

    def _ends(self, rows: IntArray) -> FloatArray:
        return np.where(self.kind[rows] == SPRING, SPRING_SETTLE * self.half_life[rows], self.duration[rows])

    def rate_cache(self) -> tuple[FloatArray, IntArray]:
        """The own phase rates ``(S, C)`` kept per state and character, and their parameter stamps (:meth:`rates`)."""
        return self._rates, self._rate_stamps

    def _frame_delay(self, step: FloatArray) -> FloatArray:  # noqa: ARG002 (the step's start is what counts)
        """Seconds of the frame spent before the current step (a sub-machine's captures happen after them)."""
        return self._spent.copy()

    # --- one update ----------------------------------------------------------------------------------

    def begin(self) -> None:
        """A new frame: nothing entered yet, no travel."""
        self.current.clear()
        self.previous.clear()
        self._spent[:] = 0.0

    def reset(self, characters: IntArray) -> None:
        """Put the characters in the start state, at time 0, with no transition."""
        self.state[characters] = self.bound.start
        self.phase[characters] = 0.0
        self.elapsed[characters] = 0.0
        self.current.entered[characters] = True
        self.current.entry[characters] = 0.0
        self.current.phase[characters] = 0.0
        self.current.elapsed[characters] = 0.0
        self._clear(characters)
        start = self.bound.states[self.bound.start]
        if start.machine is not None:
            self.machines[start.machine].reset(characters)

    def _clear(self, characters: IntArray) -> None:
        self.kind[characters] = NONE
        self.transition[characters] = -1
        self.source[characters] = -1
        self.locked[characters] = False

    def step(self, dt: FloatArray, active: BoolArray, offset: FloatArray | None = None) -> None:
        """Choose, advance and start transitions for the ``active`` characters over ``dt`` ``(C,)``.

        A character that starts a transition (or whose uninterruptible one ends) part-way through
        ``dt`` checks the transitions of its state at that instant, with the time left (so a chain
        of transitions happens at the same times whatever the frame rate), up to once per state of
        the machine and once more per update. ``offset`` ``(C,)``: seconds of the frame spent
        before this step (a sub-machine stepped within its parent's step).
        """
        self._spent[:] = 0.0 if offset is None else offset
        if self.compiled is not None:
            self.compiled.step(dt, active, self._spent)
            return
        remaining = dt.copy()
        checking = active.copy()
        for _ in range(len(self.bound.states) + 2):  # rounds of chained transitions
            chosen, delay, event = self.choose(remaining, checking)
            pause = event | (chosen >= 0)
            part = np.where(pause, delay, remaining)
            self.advance(part, checking)
            self._spent += np.where(checking, part, 0.0)
            remaining = np.where(pause, remaining - delay, 0.0)
            starting = chosen >= 0
            if starting.any():
                rows = np.flatnonzero(starting)
                self.start(rows, chosen[rows])
            if not pause.any():
                return
            checking = pause
        self.advance(remaining, checking)

    def choose(self, dt: FloatArray, active: BoolArray) -> tuple[IntArray, FloatArray, BoolArray]:
        """The transition each character takes (-1: none), its delay into ``dt``, and unlock events ``(C,)``.

        An unlock event is an uninterruptible transition that ends within ``dt``: the character
        stops there (delay) and chooses again at that instant.
        """
        chosen = np.full(self.count, -1, dtype=np.intp)
        delay = np.zeros(self.count)
        event = np.zeros(self.count, dtype=bool)
        held = np.flatnonzero(active & self.locked)
        if held.size:
            until = self._ends(held) - self.progress[held]
            ends = until < dt[held]
            event[held[ends]] = True
            delay[held[ends]] = np.maximum(until[ends], 0.0)
        free = active & ~self.locked
        table = self.table
        for s in present(self.state[free], len(self.bound.states)):  # loop over states
            candidates = table.candidates[s]
            if not candidates:
                continue
            rows = np.flatnonzero(free & (self.state == s))
            open_rows = np.ones(rows.size, dtype=bool)
            rates = None
            for transition in candidates:  # in priority order
                fire = open_rows & table.holds(transition, self.parameters, rows)
                wait = np.zeros(rows.size)
                exit_time = float(table.exit_time[transition])
                if not math.isnan(exit_time):
                    if rates is None:
                        rates = self._rates_pair(rows)
                    crosses, wait = self._exit_crossing(exit_time, rows, dt[rows], bool(self.loops[s]), *rates)
                    fire &= crosses
                chosen[rows[fire]] = transition
                delay[rows[fire]] = wait[fire]
                open_rows &= ~fire
                if not open_rows.any():
                    break
        return chosen, delay, event

    def _exit_crossing(
        self,
        exit_time: float,
        rows: IntArray,
        dt: FloatArray,
        loops: bool,
        rate: FloatArray,
        source_rate: FloatArray,
        synced: BoolArray,
    ) -> tuple[BoolArray, FloatArray]:
        """Whether the phase crosses ``exit_time`` within ``dt`` and after how many seconds."""
        phase = self.phase[rows]
        if loops:
            gap = np.mod(exit_time - phase, 1.0)
            gap = np.where(gap > 0.0, gap, 1.0)  # exactly there now: the next crossing is a cycle away
            wait = self._time_to(rows, gap, rate, source_rate, synced)
            return wait <= dt, np.minimum(wait, dt)
        past = phase >= exit_time
        wait = np.where(past, 0.0, self._time_to(rows, np.maximum(exit_time - phase, 0.0), rate, source_rate, synced))
        return past | (wait <= dt), np.where(past, 0.0, np.minimum(wait, dt))

    def start(self, rows: IntArray, chosen: IntArray) -> None:
        """Start transition ``chosen[k]`` for character ``rows[k]`` now (see the module docstring)."""
        table = self.table
        kinds, targets, lengths = table.kind[chosen], table.target[chosen], table.duration[chosen]
        instant = lengths == 0.0
        live = (self.kind[rows] == NONE) & self.plain[self.state[rows]] & (self.state[rows] != targets)
        keep = live & (kinds <= SYNCED) & ~instant  # a live crossfade: the source plays on
        staged = ~instant & ~keep  # the stage kinds (STAGE_KINDS: every kind after SYNCED) and frozen crossfades
        members, delay = rows[staged], self._spent[rows[staged]]
        phase = table.offset[chosen]
        synced = kinds == SYNCED
        for index in np.unique(chosen[synced]) if synced.any() else ():  # loop over the synced transitions taken
            picked = np.flatnonzero(chosen == index)
            phase[picked] = self._synced_phase(
                self.state[rows[picked]], self.phase[rows[picked]], int(targets[picked[0]]), rows[picked]
            )
        switching = self._enter_switching(rows, chosen, phase, keep, members, delay)
        if instant.any():
            self.hooks.stop_stage(self.name, rows[instant])
        if switching is None:
            return
        before, after = switching
        codes = np.where(kinds[staged] <= SYNCED, FROZEN, kinds[staged])  # a crossfade not live: a frozen snapshot
        for code in present(codes, max(STAGE_KINDS) + 1):  # loop over the stage kinds started
            picked = np.flatnonzero(codes == code)
            alone = picked.size == codes.size  # one kind: the layer states as they are
            how = (STAGE_KINDS[int(code)], self.duration[members[picked]], self.half_life[members[picked]])
            states = (before, after) if alone else (before.take(picked), after.take(picked))
            self.hooks.switch(self.name, members[picked], delay[picked], *states, how)

    def _enter_switching(
        self, rows: IntArray, chosen: IntArray, phase: FloatArray, keep: BoolArray, members: IntArray, delay: FloatArray
    ) -> tuple[LayerState, LayerState] | None:
        """Enter the transitions' targets and capture the layer states of the switching ``members`` before and after.

        On one kernel where the compiled step has it (:attr:`CompiledStep.switching`), else the
        runtime's layer states around :meth:`_enter` or its kernel. ``None``: no member.
        """
        compiled = self.compiled
        if compiled is not None and compiled.switching is not None and members.size:
            mine = compiled.switching(compiled.entry(rows, chosen, phase, keep), members)
            return self.hooks.layer_state(members, delay, mine[0]), self.hooks.layer_state(members, delay, mine[1])
        before = self.hooks.layer_state(members, delay) if members.size else None
        if compiled is not None:  # a plain machine: no sub-machine to start over
            compiled.enter(rows, chosen, phase, keep)
        else:
            self._enter(rows, chosen, phase, keep)
        return None if before is None else (before, self.hooks.layer_state(members, delay))

    def _enter(self, rows: IntArray, chosen: IntArray, phase: FloatArray, keep: BoolArray) -> None:
        """Characters ``rows`` enter the targets of transitions ``chosen`` at their ``phase`` ``(K,)``.

        ``keep``: where the source plays on (a live crossfade: it moves to :attr:`previous`).
        Consumes the transitions' triggers, starts sub-machines over; a transition of duration 0
        cuts (none in progress after it). The numpy reference of
        :meth:`CompiledStep.enter <engine.graph.compiled.CompiledStep.enter>`.
        """
        table = self.table
        targets, lengths = table.target[chosen], table.duration[chosen]
        self.parameters.triggers[:, rows] &= ~self.consumes[chosen].T
        old_state, old_phase, old_elapsed = self.state[rows], self.phase[rows], self.elapsed[rows]
        if keep.any():
            self.previous.copy_from(self.current, rows[keep])  # the live source plays on
        self.state[rows], self.phase[rows], self.elapsed[rows] = targets, phase, 0.0
        self.current.entered[rows], self.current.entry[rows] = True, phase
        self.current.phase[rows], self.current.elapsed[rows] = 0.0, 0.0
        nested = ~self.plain[targets]
        for target in np.unique(targets[nested]) if nested.any() else ():  # sub-machines start over
            self.machines[self.bound.states[target].machine].reset(rows[targets == target])
        going = lengths != 0.0
        self._clear(rows[~going])
        moving, taken = rows[going], chosen[going]
        self.kind[moving] = table.kind[taken]
        self.transition[moving] = taken
        self.progress[moving] = 0.0
        self.duration[moving] = lengths[going]
        self.half_life[moving] = table.half_life[taken]
        self.locked[moving] = ~table.interruptible[taken]
        self.source[moving] = np.where(keep[going], old_state[going], -1)
        self.source_phase[moving], self.source_elapsed[moving] = old_phase[going], old_elapsed[going]

    def _synced_phase(self, states: IntArray, phases: FloatArray, target: int, members: IntArray) -> FloatArray:
        """The target's starting phase: the source's, moved through shared clip markers when there are some.

        A state without timing clips of its own (a sub-machine state) has no markers: the source's phase.
        """
        result = phases.copy()
        target_clips, target_index = _dominant(self.bound.states[target], self.parameters, members)
        for s in np.unique(states):  # loop over source states
            rows = np.flatnonzero(states == s)
            source_clips, source_index = _dominant(self.bound.states[s], self.parameters, members[rows])
            for a in np.unique(source_index):  # loop over the source's dominant clips
                for b in np.unique(target_index[rows]):  # and the target's
                    pick = rows[(source_index == a) & (target_index[rows] == b)]
                    if pick.size and a >= 0 and b >= 0:
                        result[pick] = marker_phase(source_clips[a], target_clips[b], phases[pick])
        return result

    # --- weights -------------------------------------------------------------------------------------

    def state_weights(self, rows: IntArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Weights and rates ``(K,)`` of the current and the live source state of ``rows``.

        A live crossfade weighs the target ``α = progress / duration`` and the source ``1 - α``;
        everything else (the stage's transitions included) weighs the current state 1.
        """
        live = (self.source[rows] >= 0) & (self.kind[rows] != NONE)
        duration = np.where(self.duration[rows] > 0.0, self.duration[rows], 1.0)
        alpha = np.where(live, np.clip(self.progress[rows] / duration, 0.0, 1.0), 1.0)
        slope = np.where(live & (alpha < 1.0), 1.0 / duration, 0.0)
        return alpha, slope, 1.0 - alpha, -slope


def _dominant(state: BoundState, parameters: Parameters, rows: IntArray) -> tuple[list, IntArray]:
    """The state's timing clips and, per character, the index of the heaviest one."""
    leaves = state.tree.timing(parameters, rows, state.synced)
    if not leaves:
        return [], np.full(rows.size, -1, dtype=np.intp)
    weights = np.stack([w for _, w in leaves])
    return [leaf.clip for leaf, _ in leaves], np.argmax(weights, axis=0)
