"""Compiled clocks (numba): a frame's layer times wrapped by each loop mode, and the LOD schedule's due characters.

The arithmetic of the player's numpy path (``Player.advance_layers`` with
:func:`engine.anim.events.wrap_raw`), one layer entry at a time, the same numbers (on blocks of
characters in parallel: :func:`advance_layers_on`); and
:meth:`engine.backend.lod.UpdateSchedule.due`'s rule without an allocation. Self-contained
on purpose, like :mod:`engine.backend._kernels`: numba's disk cache notices changes to a cached
function's own file only. Inputs are trusted (the player's).
"""

from __future__ import annotations

import math
from typing import Any

from numba import njit, prange

from engine.backend._threads import parallel_blocks

#: :class:`engine.anim.events.Loop`'s codes.
ONCE, REPEAT, PING_PONG = 0, 1, 2


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def advance_layers(
    index: Any, characters: Any, ends: Any, running: Any, layers: Any, step: Any, table: Any, writes: Any, out: Any
) -> None:
    """Move the layers ``index`` ``(n,)`` of ``characters`` ``(K,)`` to the raw times ``ends`` ``(n, K)``.

    (``Player.advance_layers``.) ``running`` ``(n, K)``: where the layer ran (its fresh flag is
    consumed); ``layers`` = each entry's clip duration and loop code ``(n,)``; ``step`` ``(C,)``
    the frame's seconds; ``table`` = the layers' raw times, rates, fresh flags and weights ``(L,
    C)``, updated in place. ``writes`` = (weights, jump times, where to jump, exact times ``(n,
    K)``, each empty ``(0, 0)`` when not given): first the weights set and the jumps made (fresh),
    last the exact times put where running. Out ``(n, K)``: the raw times before, the end times as
    clamped (a layer that plays once stops at its ends), the whole loops crossed
    (:func:`~engine.anim.events.wrap_raw`), the raw times reached and the fresh flags before.
    """
    _advance(0, characters.size, index, characters, ends, running, layers, step, table, writes, out)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def advance_layers_parallel(
    blocks: int,
    index: Any,
    characters: Any,
    ends: Any,
    running: Any,
    layers: Any,
    step: Any,
    table: Any,
    writes: Any,
    out: Any,
) -> None:
    """:func:`advance_layers` over ``blocks`` contiguous blocks of the characters in parallel (the same numbers)."""
    count = characters.size
    for b in prange(blocks):
        first, stop = b * count // blocks, (b + 1) * count // blocks
        _advance(first, stop, index, characters, ends, running, layers, step, table, writes, out)


def advance_layers_on(threads: int, *arguments: Any) -> None:
    """:func:`advance_layers` on ``threads`` threads (at most one block of characters each), serial for one."""
    blocks = parallel_blocks(threads, arguments[1].size)
    if blocks <= 1:
        advance_layers(*arguments)
    else:
        advance_layers_parallel(blocks, *arguments)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _advance(
    begin: int,
    finish: int,
    index: Any,
    characters: Any,
    ends: Any,
    running: Any,
    layers: Any,
    step: Any,
    table: Any,
    writes: Any,
    out: Any,
) -> None:
    """:func:`advance_layers` for the characters ``begin <= k < finish``."""
    durations, loops = layers
    raw_table, rates, fresh, weight_table = table
    weights, jump, jumped, exact = writes
    starts, stops, wraps, reached, was_fresh = out
    for r in range(index.size):  # each layer over the block's characters
        row, layer = index[r], (durations[r], loops[r])
        for k in range(begin, finish):
            c = characters[k]
            if weights.size:
                weight_table[row, c] = weights[r, k]
            jumps = (jumped.size > 0 and jumped[r, k], jump[r, k] if jumped.size else 0.0)
            puts = (exact.size > 0, exact[r, k] if exact.size else 0.0)
            cell = raw_table[row, c], fresh[row, c], rates[row, c]
            moved = move_layer(layer, cell, (ends[r, k], running[r, k]), step[c], (jumps, puts))
            starts[r, k], stops[r, k], wraps[r, k], reached[r, k], was_fresh[r, k] = moved[:5]
            raw_table[row, c], fresh[row, c], rates[row, c] = moved[5:]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def move_layer(layer: Any, cell: Any, end: Any, seconds: float, writes: Any) -> Any:
    """One layer of one character moved to the raw time ``end[0]`` this frame: an entry of :func:`advance_layers`.

    ``layer`` = the clip's duration and loop code; ``cell`` = the layer's raw time, fresh flag and
    rate now; ``end`` = the unwrapped raw time and whether the layer ran; ``seconds`` the
    character's frame step; ``writes`` = (whether to jump, the raw time to jump to: the layer
    starts from there, fresh), (whether to put the layer at an exact time where it ran, that raw
    time). Returns ``advance_layers``' five outputs (the raw time before, the end time as clamped,
    the loops crossed, the raw time reached, the fresh flag before), then the cell's new raw time,
    fresh flag and rate. Scalars only (no array is bound per entry: no reference counts in a
    loop); inlined by controllers' kernels that decide an entry as they move it
    (:mod:`engine.player.kernels`).
    """
    (duration, mode), (raw, fresh, rate), (stop, running), ((jumps, jump), (puts, exact)) = layer, cell, end, writes
    period = 2.0 * duration if mode == PING_PONG else duration
    safe = period if period > 0.0 else 1.0
    if jumps:
        raw, fresh = jump, True
    was_fresh = fresh
    if mode == ONCE:
        stop = min(max(stop, 0.0), duration)
    turns = 0.0 if mode == ONCE or period <= 0.0 else math.floor(stop / safe)
    wrapped = stop if mode == ONCE else stop - turns * safe  # a layer played once: clamped above
    if mode != ONCE and period > 0.0 and wrapped >= safe:  # an ulp below a multiple: the next loop's start
        wrapped -= safe
        turns += 1.0
    reached = max(wrapped, 0.0) if period > 0.0 else 0.0
    if seconds > 0.0:
        rate = (stop - raw) / seconds
    after = reached
    if running:
        fresh = False
        if puts:
            after = exact
    return raw, stop, turns, reached, was_fresh, after, fresh, rate


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def select_due(rates: Any, last: Any, frame: Any, out: Any) -> Any:
    """Indices ``c`` due on ``frame`` into ``out`` (see engine.backend.lod); sets their ``last``; returns how many."""
    count = 0
    for c in range(rates.size):
        if (c + frame) % rates[c] == 0 or frame - last[c] >= rates[c]:
            out[count] = c
            last[c] = frame
            count += 1
    return count
