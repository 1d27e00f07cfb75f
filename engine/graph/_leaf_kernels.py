"""A one-machine graph's leaves written into the player's layers and moved there, in one pass (numba).

For each leaf and character, the kernel decides the layer's weight and times this frame
(:func:`_leaf_times`) — the arithmetic of :class:`~engine.graph.runtime.GraphRuntime`'s ``_write_layers`` with
:class:`~engine.graph.clocks.LeafClocks`, one entry at a time, bit for bit — and the player's own
layer step (:func:`engine.player.kernels.move_layer`, inlined) moves the layer: the weight set,
the jump made, the loop wrapped, the exact time put, as ``Player.advance_layers`` would with
those arrays, without them (``tests/graph/test_compiled_machine.py``). On blocks of characters in
parallel too (``tests/graph/test_threads.py``). Inputs are trusted (the callers check them).

The player's step is compiled into these kernels: :func:`engine.player.kernels.follow` keys
this module's numba cache by its module too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit, prange

from engine.player.kernels import follow, move_layer


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def write_advance(machine: Any, slots: Any, leaves: Any, factors: Any, entries: Any, table: Any, out: Any) -> None:
    """The leaves of the characters ``entries[1]`` ``(K,)`` written into their player layers and moved this frame.

    ``machine`` = state, phase, elapsed, kind, progress, duration, source, source phase and elapsed
    ``(C,)``; ``slots`` = the current and previous slots (entered, entry, phase, elapsed);
    ``leaves`` = each leaf's state, duration, speed, state speed, rate, whether it follows the phase
    and whether it loops ``(N,)``; ``factors`` ``(C, N)`` each leaf's weight in its state's tree;
    ``entries``, ``table`` and ``out`` as ``Player.advance_with`` gives them (the leaves' layers in
    order).
    """
    _write_advance(0, entries[1].size, machine, slots, leaves, factors, entries, table, out)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def write_advance_parallel(
    blocks: int,
    machine: Any,
    current: Any,
    previous: Any,
    leaves: Any,
    factors: Any,
    entries: Any,
    table: Any,
    out: Any,
) -> None:
    """:func:`write_advance` over ``blocks`` contiguous blocks of the characters in parallel (the same numbers).

    The slots come one by one (a parallel loop's body takes no tuple of tuples).
    """
    count = entries[1].size
    for b in prange(blocks):
        first, stop = b * count // blocks, (b + 1) * count // blocks
        _write_advance(first, stop, machine, (current, previous), leaves, factors, entries, table, out)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _write_advance(
    first: int, stop: int, machine: Any, slots: Any, leaves: Any, factors: Any, entries: Any, table: Any, out: Any
) -> None:
    """:func:`write_advance` for the characters ``first <= k < stop`` of ``entries[1]``."""
    index, characters, durations, loops, step = entries
    state, phase, elapsed, kind, progress, duration, source, source_phase, source_elapsed = machine
    (entered, entry, travelled, spent), (was_entered, was_entry, was_travelled, was_spent) = slots
    leaf_state, leaf_duration, speed, state_speed, leaf_rate, sync, loop = leaves
    raw_table, rates, fresh, weight_table = table
    starts, stops, wraps, reached, was_fresh, running = out
    alphas = np.empty(stop - first)  # each character's crossfade weight of its current state
    for k in range(first, stop):
        c = characters[k]
        total = duration[c] if duration[c] > 0.0 else 1.0
        live = source[c] >= 0 and kind[c] != 0
        alphas[k - first] = min(max(progress[c] / total, 0.0), 1.0) if live else 1.0
    for i in range(index.size):  # each leaf's layer over the block's characters
        row, layer = index[i], (durations[i], loops[i])
        leaf = leaf_duration[i], speed[i], state_speed[i], leaf_rate[i], sync[i], loop[i]
        for k in range(first, stop):
            c, alpha = characters[k], alphas[k - first]
            live = source[c] >= 0 and kind[c] != 0
            begin = raw_table[row, c]
            if leaf_state[i] == state[c]:
                weight, jumps = alpha, entered[c]
                clocks = (phase[c], elapsed[c], entry[c], travelled[c], spent[c])
            elif live and leaf_state[i] == source[c]:
                weight, jumps = 1.0 - alpha, was_entered[c]
                clocks = (source_phase[c], source_elapsed[c], was_entry[c], was_travelled[c], was_spent[c])
            else:  # not playing: weight 0, the layer stays where it is
                weight, jumps, clocks = -1.0, False, (0.0, 0.0, 0.0, 0.0, 0.0)
            plays = weight >= 0.0
            weight_table[row, c] = 0.0 + factors[c, i] * weight if weight > 0.0 else 0.0
            end, exact, jump = _leaf_times(leaf, clocks, jumps, begin) if plays else (begin, 0.0, 0.0)
            running[i, k] = plays
            cell = begin, fresh[row, c], rates[row, c]
            moved = move_layer(layer, cell, (end, plays), step[c], ((jumps, jump), (True, exact)))
            starts[i, k], stops[i, k], wraps[i, k], reached[i, k], was_fresh[i, k] = moved[:5]
            raw_table[row, c], fresh[row, c], rates[row, c] = moved[5:]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _leaf_times(leaf: Any, clocks: Any, jumps: bool, begin: float) -> Any:
    """A leaf's end, exact and entry times this frame: ``begin`` its layer's raw time before the frame.

    ``leaf`` = its duration, speed, state speed, rate, whether it follows the phase and whether it
    loops; ``clocks`` = its state's phase and seconds in the state now, its entry phase, and the
    phase and seconds it moved this frame; ``jumps``: the state was entered this frame (the layer
    starts from the entry time, not ``begin``).
    """
    (duration, speed, state_speed, rate, sync, loop), (now, seconds, at, moved, lasted) = leaf, clocks
    jump = 0.0
    if jumps:
        begin = at * duration if sync else 0.0 * rate
        jump = begin
    if sync:
        return begin + moved * duration, now * duration, jump
    end = begin + lasted * speed * state_speed
    raw = seconds * rate
    if duration <= 0.0:
        return end, 0.0, jump
    if loop:
        return end, raw % duration, jump
    return end, min(raw, duration), jump


# the kernels inline the player's layer step: their cache follows its module too
follow(write_advance, __file__)
