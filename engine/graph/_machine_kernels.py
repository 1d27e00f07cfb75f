"""Compiled frames of a plain state machine (numba): one round of choose and advance, the leaves' states.

The same arithmetic, in the same order, as the numpy reference — :class:`~engine.graph.machine.Machine`'s
``choose``, ``_exit_crossing``, ``_time_to``, ``advance``, ``_phase_travel`` and ``_move_phase``,
``Machine._enter``, and :class:`~engine.graph.runtime.GraphRuntime`'s ``layer_state`` with
:class:`~engine.graph.clocks.LeafClocks` — one character at a time, so the numbers are the numpy
path's bit for bit (``tests/graph/test_compiled_machine.py``). The tables are built by
:mod:`engine.graph.compiled`; the leaves' write into the player's layers is in
:mod:`engine.graph._leaf_kernels`.

Self-contained on purpose, like :mod:`engine.backend._kernels`: numba's disk cache notices changes
to a cached function's own file only. Inputs are trusted (the callers check them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

#: Condition kinds and comparison codes, as :mod:`engine.graph.compiled` writes them.
FLOAT, BOOL, TRIGGER = 0, 1, 2
LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL = range(6)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _holds(transition: int, c: int, conditions: Any, floats: Any, bools: Any, triggers: Any) -> bool:
    """Whether every condition of ``transition`` holds for character ``c`` (``TransitionTable.holds``)."""
    start, kinds, rows, ops, values = conditions
    for k in range(start[transition], start[transition + 1]):
        kind, row, op, value = kinds[k], rows[k], ops[k], values[k]
        if kind == TRIGGER:
            ok = triggers[row, c]
        elif kind == BOOL:
            ok = bools[row, c] == (value != 0.0)
            if op == NOT_EQUAL:
                ok = not ok
        else:
            x = floats[row, c]
            if op == LESS:
                ok = x < value
            elif op == LESS_EQUAL:
                ok = x <= value
            elif op == GREATER:
                ok = x > value
            elif op == GREATER_EQUAL:
                ok = x >= value
            elif op == EQUAL:
                ok = x == value
            else:
                ok = x != value
        if not ok:
            return False
    return True


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _time_to(gap: float, rate: float, source_rate: float, synced: bool, done: float, total: float) -> float:
    """Seconds until the phase has moved by ``gap`` (``Machine._time_to``; inf when it does not move)."""
    plain = gap / rate if rate > 0.0 else math.inf
    if not synced:
        return plain
    safe = total if total > 0.0 else 1.0
    ramp = max(total - done, 0.0)
    delta = rate - source_rate
    a, b = 0.5 * delta / safe, source_rate + delta * done / safe
    root = b * b + 4.0 * a * gap
    inside = 2.0 * gap / (b + math.sqrt(max(root, 0.0))) if root >= 0.0 else math.inf
    reached = a * ramp * ramp + b * ramp
    after = ramp + ((gap - reached) / rate if rate > 0.0 else math.inf)
    moving = inside if gap <= reached else after
    return moving if math.isfinite(moving) and moving >= 0.0 else math.inf


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _alpha_integral(done: float, total: float, seconds: float) -> float:
    """``∫ α`` over ``seconds`` of a crossfade ``done`` seconds in of ``total`` (``machine.alpha_integral``)."""
    ramp = min(max(total - done, 0.0), seconds)
    safe = total if total > 0.0 else 1.0
    ramped = (done * ramp + 0.5 * ramp * ramp) / safe if total > 0.0 else 0.0
    return ramped + (seconds - ramp)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _moved(phase: float, travel: float, loops: bool) -> float:
    moved = phase + travel
    return moved % 1.0 if loops else min(moved, 1.0)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _choose(rows: Any, rates: Any, machine: Any, table: Any, values: Any, remaining: Any, out: Any) -> None:
    """Each character's transition, its delay and whether it unlocks, into ``out`` ``(K,)`` (``Machine.choose``).

    The transition ``rows[k]`` takes (-1: none), after how many of its remaining seconds, and
    whether an uninterruptible transition of its ends within them (it stops there).
    """
    state, phase, _, kind, _, progress, duration, half_life, locked = machine[:9]
    source = machine[9]
    loops, candidates_start, candidates, exit_times, conditions, spring, settle, synced_code = table
    floats, bools, triggers = values
    chosen, delays, events = out
    for k in range(rows.size):
        c = rows[k]
        dt = remaining[c]
        chosen[k], delays[k], events[k] = -1, 0.0, False
        if locked[c]:
            until = (settle * half_life[c] if kind[c] == spring else duration[c]) - progress[c]
            if until < dt:
                delays[k], events[k] = max(until, 0.0), True
            continue
        s = state[c]
        rate = rates[s, c]
        source_rate = rates[source[c], c] if source[c] >= 0 else 0.0
        synced = source[c] >= 0 and kind[c] == synced_code
        for n in range(candidates_start[s], candidates_start[s + 1]):  # in priority order
            transition = candidates[n]
            if not _holds(transition, c, conditions, floats, bools, triggers):
                continue
            exit_time = exit_times[transition]
            fires, wait = True, 0.0
            if math.isnan(exit_time):
                pass
            elif loops[s]:
                gap = (exit_time - phase[c]) % 1.0
                gap = gap if gap > 0.0 else 1.0  # exactly there now: the next crossing is a cycle away
                wait = _time_to(gap, rate, source_rate, synced, progress[c], duration[c])
                fires, wait = wait <= dt, min(wait, dt)
            elif phase[c] < exit_time:
                wait = _time_to(max(exit_time - phase[c], 0.0), rate, source_rate, synced, progress[c], duration[c])
                fires, wait = wait <= dt, min(wait, dt)
            if fires:
                chosen[k], delays[k] = transition, wait
                break


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _advance(rows: Any, rates: Any, machine: Any, table: Any, steps: Any, done: Any) -> int:
    """Move the clocks of the characters ``rows`` by ``steps`` ``(K,)`` seconds (``Machine.advance``).

    Transitions that end are cleared; their characters go to ``done[:count]``; returns ``count``.
    """
    state, phase, elapsed, kind, transition, progress, duration, half_life, locked = machine[:9]
    source, source_phase, source_elapsed, current_phase, current_elapsed, previous_phase, previous_elapsed = machine[9:]
    loops, spring, settle, synced_code = table[0], table[5], table[6], table[7]
    count = 0
    for k in range(rows.size):
        c, dt = rows[k], steps[k]
        if not dt > 0.0:
            continue
        rate = rates[state[c], c]
        source_rate = rates[source[c], c] if source[c] >= 0 else 0.0
        travel, source_travel = rate * dt, source_rate * dt
        if source[c] >= 0 and kind[c] == synced_code:
            shared = source_rate * dt + (rate - source_rate) * _alpha_integral(progress[c], duration[c], dt)
            travel, source_travel = shared, shared
        if source[c] >= 0:
            source_phase[c] = _moved(source_phase[c], source_travel, loops[source[c]])
            source_elapsed[c] += dt
            previous_phase[c] += source_travel
            previous_elapsed[c] += dt
        phase[c] = _moved(phase[c], travel, loops[state[c]])
        elapsed[c] += dt
        current_phase[c] += travel
        current_elapsed[c] += dt
        if kind[c] == 0:
            continue
        progress[c] += dt
        if progress[c] < (settle * half_life[c] if kind[c] == spring else duration[c]):
            continue
        kind[c], transition[c], source[c], locked[c] = 0, -1, -1, False
        done[count] = c
        count += 1
    return count


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def step_round(
    rows: Any,
    rates: Any,
    choosing: bool,
    machine: Any,
    table: Any,
    values: Any,
    frame: Any,
    chosen: Any,
    pause: Any,
    done: Any,
) -> int:
    """One round of ``Machine.step`` for the characters ``rows`` ``(K,)``; returns how many transitions ended.

    ``rates`` ``(S, C)``: each state's own phase rate per character (fresh for the current and
    source states of ``rows``: :func:`stale_rates`); ``machine`` the machine's per-character
    arrays (state, phase, elapsed, kind, transition, progress, duration, half-life, locked,
    source, source phase and elapsed, the current and previous slots' phase and elapsed);
    ``table`` = state loops, the candidates per state (start ``(S + 1,)``, transitions), exit
    times, the conditions (start ``(T + 1,)``, kinds, rows, ops, values), the spring's code and
    settle half-lives, the synced transitions' code; ``values`` = floats, bools, triggers;
    ``frame`` = the seconds remaining and spent ``(C,)``. With ``choosing`` each character
    chooses, advances to the transition's instant (or by all that remains) and its remaining and
    spent time are updated; without, it advances by all that remains (the last round). Out:
    ``chosen`` and ``pause`` ``(K,)``, the ended characters in ``done[:count]``.
    """
    remaining, spent = frame
    delays = np.zeros(rows.size)
    chosen[:] = -1
    pause[:] = False
    if choosing:
        _choose(rows, rates, machine, table, values, remaining, (chosen, delays, pause))
    steps = np.empty(rows.size)
    for k in range(rows.size):
        c = rows[k]
        pause[k] = pause[k] or chosen[k] >= 0
        steps[k] = delays[k] if pause[k] else remaining[c]
        if choosing:
            spent[c] += steps[k]
            remaining[c] = remaining[c] - delays[k] if pause[k] else 0.0
    return _advance(rows, rates, machine, table, steps, done)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def enter_states(rows: Any, chosen: Any, phase: Any, keep: Any, table: Any, machine: Any, slots: Any, out: Any) -> None:
    """The characters ``rows`` ``(K,)`` enter their transitions' targets (``Machine._enter``).

    ``chosen`` ``(K,)`` the transitions, ``phase`` ``(K,)`` the targets' starting phases, ``keep``
    ``(K,)`` where the source plays on (a live crossfade); ``table`` = each transition's kind,
    target, duration, half-life and whether it is interruptible ``(T,)``, and the trigger rows
    it consumes ``(T, G)``; ``machine`` as for :func:`step_round` without the slots, which come
    apart: ``slots`` = the current and previous slots (entered, entry, phase, elapsed); ``out``:
    the triggers ``(G, C)``, consumed. A transition of duration 0 cuts: no transition in
    progress (kind 0).
    """
    kinds, targets, lengths, half_lives, interruptible, consumes = table
    state, now, elapsed, kind, transition, progress, duration, half_life, locked, source, source_now, source_elapsed = (
        machine
    )
    current, previous = slots
    triggers = out
    for k in range(rows.size):
        c, t = rows[k], chosen[k]
        for g in range(triggers.shape[0]):
            if consumes[t, g]:
                triggers[g, c] = False
        old_state, old_phase, old_elapsed = state[c], now[c], elapsed[c]
        if keep[k]:  # the live source plays on
            previous[0][c], previous[1][c] = current[0][c], current[1][c]
            previous[2][c], previous[3][c] = current[2][c], current[3][c]
        state[c], now[c], elapsed[c] = targets[t], phase[k], 0.0
        current[0][c], current[1][c], current[2][c], current[3][c] = True, phase[k], 0.0, 0.0
        if lengths[t] == 0.0:
            kind[c], transition[c], source[c], locked[c] = 0, -1, -1, False
            continue
        kind[c], transition[c], progress[c], duration[c] = kinds[t], t, 0.0, lengths[t]
        half_life[c], locked[c] = half_lives[t], not interruptible[t]
        source[c] = old_state if keep[k] else -1
        source_now[c], source_elapsed[c] = old_phase, old_elapsed


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def stale_rates(rows: Any, state: Any, source: Any, rate_stamps: Any, stamps: Any, states: Any, characters: Any) -> int:
    """The (state, character) pairs of ``rows``' current and source states whose kept rate is stale; returns how many.

    ``rate_stamps`` ``(S, C)`` the parameter stamps the rates were computed at, ``stamps`` ``(C,)``
    the characters' now. Out: the pairs in ``states[:count]``, ``characters[:count]``.
    """
    count = 0
    for k in range(rows.size):
        c = rows[k]
        for s in (state[c], source[c]):
            if s >= 0 and rate_stamps[s, c] != stamps[c]:
                states[count], characters[count] = s, c
                count += 1
    return count


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def timing_rates(rows: Any, machine: Any, factors: Any, timing: Any, stamps: Any, rates: Any, rate_stamps: Any) -> None:
    """The kept phase rates ``(S, C)`` of ``rows``' current and source states made fresh (``Machine.rates``).

    Where a rate's stamp in ``rate_stamps`` ``(S, C)`` is not the character's parameter stamp in
    ``stamps`` ``(C,)``: the weighted mean of the state's timing clips' cycle rates
    (``synced_rate``), summed one clip after the other, and the stamp. ``machine`` = each
    character's state and source state ``(C,)`` (-1: none); ``factors`` ``(C, N)`` the leaves'
    weights in their trees; ``timing`` = the timing leaves per state (start ``(S + 1,)``,
    leaves) and their cycle rates.
    """
    state, source = machine
    start, leaves, cycles = timing
    for k in range(rows.size):
        c = rows[k]
        for s in (state[c], source[c]):
            if s < 0 or rate_stamps[s, c] == stamps[c]:
                continue
            count = start[s + 1] - start[s]
            if count:
                total = weighted = plain = 0.0
                for i in range(start[s], start[s + 1]):
                    w = factors[c, leaves[i]]
                    total = total + w
                    weighted = weighted + w * cycles[i]
                    plain = plain + cycles[i]
                rates[s, c] = weighted / total if total > 0.0 else plain / count
            rate_stamps[s, c] = stamps[c]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def layer_state(rows: Any, machine: Any, leaves: Any, factors: Any, rates: Any, synced_code: int, out: Any) -> None:
    """The leaves' state of the characters ``rows`` ``(K,)`` at the machine's clocks now (``layer_state``).

    ``machine`` = state, phase, elapsed, kind, progress, duration, source, source phase and
    elapsed ``(C,)``; ``leaves`` = each leaf's state, duration, speed, state speed, rate, whether
    it follows the phase and whether it loops ``(N,)``; ``factors`` ``(C, N)`` each leaf's weight
    in its state's tree; ``rates`` ``(S, C)`` the states' own phase rates. Out ``(N, K)``: the
    leaves' clip times and their rates per second (a synced transition's states at the shared,
    blended rate), their weights and the weights' rates (a crossfade's ramp), and whether the
    leaf's state was entered this instant.
    """
    state, phase, elapsed, kind, progress, duration, source, source_phase, source_elapsed = machine
    leaf_state, leaf_duration, _, _, leaf_rate, sync, loop = leaves
    times, time_rates, weights, weight_rates, leaving = out
    for k in range(rows.size):
        c = rows[k]
        busy = kind[c] != 0
        live = source[c] >= 0 and busy
        total = duration[c] if duration[c] > 0.0 else 1.0
        ramp = min(max(progress[c] / total, 0.0), 1.0)
        alpha = ramp if live else 1.0
        slope = 1.0 / total if live and alpha < 1.0 else 0.0
        rate = rates[state[c], c]
        source_rate = rates[source[c], c] if source[c] >= 0 else 0.0
        shared = source_rate + ramp * (rate - source_rate)
        synced = source[c] >= 0 and kind[c] == synced_code
        for i in range(leaf_state.size):
            if leaf_state[i] == state[c]:
                weight, moving, now, seconds = alpha, slope, phase[c], elapsed[c]
                phase_rate = shared if synced else rate
            elif busy and leaf_state[i] == source[c]:
                weight, moving, now, seconds = 1.0 - alpha, -slope, source_phase[c], source_elapsed[c]
                phase_rate = shared if synced else source_rate
            else:
                continue
            if weight > 0.0:
                weights[i, k] = 0.0 + factors[c, i] * (1.0 * weight)
                weight_rates[i, k] = 0.0 + factors[c, i] * (0.0 * weight + 1.0 * moving)
            if sync[i]:
                times[i, k] = now * leaf_duration[i]
                time_rates[i, k] = phase_rate * leaf_duration[i]
            else:
                raw = seconds * leaf_rate[i]
                if leaf_duration[i] <= 0.0:
                    times[i, k], time_rates[i, k] = 0.0, 0.0
                else:
                    times[i, k] = raw % leaf_duration[i] if loop[i] else min(raw, leaf_duration[i])
                    time_rates[i, k] = leaf_rate[i] if loop[i] or raw < leaf_duration[i] else 0.0
            leaving[i, k] = seconds == 0.0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def switch_states(entry: Any, members: Any, layers: Any, before: Any, after: Any) -> None:
    """:func:`enter_states` with the leaves' state of the switching ``members`` ``(M,)`` just before and after.

    ``entry`` = :func:`enter_states`' arguments; ``layers`` = the clocks, leaves and factors as
    for :func:`layer_state`, then :func:`timing_rates`' timing, parameter stamps, rates and their
    stamps, and the synced kind's code. Out: :func:`layer_state`'s ``before`` and ``after``
    (``(N, M)`` each, zeros where no leaf of a state plays). The kept rates are made fresh for
    the states before and after.
    """
    rows, chosen, phase, keep, table, machine, slots, triggers = entry
    clocks, leaves, factors, timing, stamps, rates, rate_stamps, synced_code = layers
    states = (machine[0], machine[9])  # the current and source states, as they are at each call
    timing_rates(members, states, factors, timing, stamps, rates, rate_stamps)
    layer_state(members, clocks, leaves, factors, rates, synced_code, before)
    enter_states(rows, chosen, phase, keep, table, machine, slots, triggers)
    timing_rates(members, states, factors, timing, stamps, rates, rate_stamps)
    layer_state(members, clocks, leaves, factors, rates, synced_code, after)
