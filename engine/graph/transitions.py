"""A machine's transitions as one typed table, their conditions, and synced starts through markers.

:class:`TransitionTable` holds one entry per transition (the any-state ones first, then each
state's, in document order) as arrays, and per state the candidates in priority order. The
conditions are compiled to parameter rows once (:class:`Condition`). :func:`marker_phase` is how
a ``synced`` transition picks its target's starting phase.

Kinds: a **crossfade** and a **synced** crossfade are weights (the runtime ramps the source's and
the target's layers); **frozen**, **inertialize**, **spring** and **dead_blend** are the player's
transition stage (:mod:`engine.player.transitions`), which also takes a crossfade that interrupts
another transition (from a frozen snapshot of the output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.anim.clip import Clip
from engine.graph.definition import Transition
from engine.graph.parameters import Parameters
from engine.math._checks import BoolArray, FloatArray, IntArray

#: Transition kinds as stored per character; ``NONE``: no transition in progress.
NONE, CROSSFADE, SYNCED, FROZEN, INERTIALIZE, SPRING, DEAD_BLEND = range(7)
KIND_CODES = {
    "crossfade": CROSSFADE,
    "synced": SYNCED,
    "frozen": FROZEN,
    "inertialize": INERTIALIZE,
    "spring": SPRING,
    "dead_blend": DEAD_BLEND,
}
#: The player's transition stage's kind for each graph kind (crossfades are weights: none).
STAGE_KINDS = {FROZEN: "frozen", INERTIALIZE: "inertialize", SPRING: "spring", DEAD_BLEND: "dead_blend"}


@dataclass(frozen=True)
class Condition:
    """One condition, its parameter resolved: ``kind`` (``float``, ``bool``, ``trigger``), row, ``op``, ``value``."""

    kind: str
    row: int
    op: str
    value: float

    def holds(self, parameters: Parameters, rows: IntArray) -> BoolArray:
        """Whether it holds for the characters ``rows``."""
        if self.kind == "trigger":
            return parameters.triggers[self.row, rows].copy()
        if self.kind == "bool":
            current = parameters.bools[self.row, rows]
            return (current == bool(self.value)) if self.op == "==" else (current != bool(self.value))
        values = parameters.floats[self.row, rows]
        compare = {
            "<": np.less,
            "<=": np.less_equal,
            ">": np.greater,
            ">=": np.greater_equal,
            "==": np.equal,
            "!=": np.not_equal,
        }[self.op]
        return compare(values, self.value)


@dataclass(frozen=True)
class TransitionTable:
    """Every transition of one machine (module docstring), index ``k`` in each array.

    Attributes
    ----------
    source, target
        ``(T,)`` state indices (``source`` -1: from any state).
    kind
        ``(T,)`` :data:`KIND_CODES` values.
    duration, half_life
        ``(T,)`` seconds (``half_life``: a spring's offset, a dead blend's extrapolation; 1 when unused).
    exit_time
        ``(T,)`` normalised time it may fire at, NaN for none.
    offset
        ``(T,)`` normalised time the target starts at (not for synced).
    interruptible
        ``(T,)``: later transitions may start before it ends.
    conditions, triggers
        Per transition its :class:`Condition` s and the trigger rows it consumes.
    candidates
        Per state, the transitions that may leave it, in priority order (any-state first).
    definitions
        The document's transitions.
    """

    source: IntArray
    target: IntArray
    kind: IntArray
    duration: FloatArray
    half_life: FloatArray
    exit_time: FloatArray
    offset: FloatArray
    interruptible: BoolArray
    conditions: tuple[tuple[Condition, ...], ...]
    triggers: tuple[tuple[int, ...], ...]
    candidates: tuple[tuple[int, ...], ...]
    definitions: tuple[Transition, ...]

    @classmethod
    def of(
        cls, transitions: list[tuple[int, Transition]], states: list[str], parameters: Parameters
    ) -> TransitionTable:
        """The table of ``(source index or -1, transition)`` pairs, in priority order, of a machine with ``states``."""
        rows = parameters.index
        conditions = tuple(
            tuple(Condition(rows[c.parameter][0], rows[c.parameter][1], c.op, c.value) for c in t.conditions)
            for _, t in transitions
        )
        sources = np.array([source for source, _ in transitions], dtype=np.intp)
        targets = np.array([states.index(t.target) for _, t in transitions], dtype=np.intp)
        candidates = tuple(
            tuple(k for k in range(len(transitions)) if sources[k] == -1 and targets[k] != s)
            + tuple(k for k in range(len(transitions)) if sources[k] == s)
            for s in range(len(states))
        )
        return cls(
            sources,
            targets,
            np.array([KIND_CODES[t.kind] for _, t in transitions], dtype=np.intp),
            np.array([t.duration for _, t in transitions], dtype=np.float64),
            np.array([t.half_life if t.half_life > 0.0 else 1.0 for _, t in transitions], dtype=np.float64),
            np.array([math.nan if t.exit_time is None else t.exit_time for _, t in transitions], dtype=np.float64),
            np.array([t.offset for _, t in transitions], dtype=np.float64),
            np.array([t.interruptible for _, t in transitions], dtype=bool),
            conditions,
            tuple(tuple(c.row for c in found if c.kind == "trigger") for found in conditions),
            candidates,
            tuple(t for _, t in transitions),
        )

    def holds(self, index: int, parameters: Parameters, rows: IntArray) -> BoolArray:
        """Whether every condition of transition ``index`` holds for the characters ``rows``."""
        result = np.ones(rows.size, dtype=bool)
        for condition in self.conditions[index]:  # a few conditions
            result &= condition.holds(parameters, rows)
        return result


def marker_phase(source: Clip, target: Clip, phase: FloatArray) -> FloatArray:
    """The target's phase matching ``phase`` ``(K,)`` of ``source`` through markers of the same name.

    Between two consecutive shared markers of the source, the fraction of the way from one to
    the next is kept between the same two markers of the target (cyclically). Without a shared
    marker name, or without markers, the normalised phase is kept as it is.
    """
    source_markers = source.markers or {}
    target_markers = target.markers or {}
    shared = sorted(set(source_markers) & set(target_markers))
    if not shared or source.duration <= 0.0 or target.duration <= 0.0:
        return phase
    events = sorted((t, name) for name in shared for t in source_markers[name])
    times = np.array([t for t, _ in events])
    there = np.array([target_markers[name][0] for _, name in events])
    count = times.size
    clip_time = phase * source.duration
    k = np.searchsorted(times, clip_time, side="right") - 1  # last marker at or before
    k = np.where(k < 0, count - 1, k)
    start = np.where(times[k] <= clip_time, times[k], times[k] - source.duration)
    nxt = (k + 1) % count
    stop = np.where(nxt > k, times[nxt], times[nxt] + source.duration)
    if count == 1:
        stop = start + source.duration
    fraction = np.where(stop > start, (clip_time - start) / np.where(stop > start, stop - start, 1.0), 0.0)
    begin, end = there[k], there[nxt]
    end = np.where(end > begin, end, end + target.duration)
    return np.mod(begin + fraction * (end - begin), target.duration) / target.duration
