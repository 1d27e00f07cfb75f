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
        row, duration, mode = index[r], durations[r], loops[r]
        period = 2.0 * duration if mode == PING_PONG else duration
        safe = period if period > 0.0 else 1.0
        for k in range(begin, finish):
            c = characters[k]
            if weights.size:
                weight_table[row, c] = weights[r, k]
            if jumped.size and jumped[r, k]:
                raw_table[row, c] = jump[r, k]
                fresh[row, c] = True
            was_fresh[r, k] = fresh[row, c]
            stop = ends[r, k]
            if mode == ONCE:
                stop = min(max(stop, 0.0), duration)
            turns = 0.0 if mode == ONCE or period <= 0.0 else math.floor(stop / safe)
            raw = stop if mode == ONCE else stop - turns * safe  # a layer played once: clamped above
            if mode != ONCE and period > 0.0 and raw >= safe:  # an ulp below a multiple: the next loop's start
                raw -= safe
                turns += 1.0
            start = raw_table[row, c]
            starts[r, k], stops[r, k], wraps[r, k] = start, stop, turns
            raw_table[row, c] = reached[r, k] = max(raw, 0.0) if period > 0.0 else 0.0
            if step[c] > 0.0:
                rates[row, c] = (stop - start) / step[c]
            if running[r, k]:
                fresh[row, c] = False
                if exact.size:
                    raw_table[row, c] = exact[r, k]


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
