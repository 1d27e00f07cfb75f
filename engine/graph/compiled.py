"""A plain state machine's frame on the compiled kernels (:mod:`engine.graph._machine_kernels`).

A machine whose states play no sub-machine steps on the kernels on the numba backend: each round
of :meth:`Machine.step <engine.graph.machine.Machine.step>` (choose a transition per character,
advance the clocks to its instant, end finished transitions) is one kernel call over the
characters still checking; starting the chosen transitions stays with the machine (it captures
the player's output). The numbers are the numpy path's, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from engine.backend.select import compiled_module
from engine.graph.transitions import SPRING
from engine.math._checks import BoolArray, FloatArray, IntArray
from engine.player.transitions import SPRING_SETTLE

if TYPE_CHECKING:
    from engine.graph.machine import Machine

Rates = Callable[[IntArray], tuple[FloatArray, FloatArray, BoolArray]]
"""The own phase rates of the current and source states of some characters, and whether each is synced."""
#: Condition kinds and comparison operators as the kernels take them.
CONDITION_KINDS = {"float": 0, "bool": 1, "trigger": 2}
OPERATORS = {"<": 0, "<=": 1, ">": 2, ">=": 3, "==": 4, "!=": 5, "set": 4}


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
        )

    @classmethod
    def of(cls, machine: Machine) -> CompiledStep | None:
        """The compiled step of ``machine``, or ``None`` when a state plays a sub-machine."""
        return cls(machine) if bool(machine.plain.all()) else None

    def _arrays(self) -> tuple[np.ndarray, ...]:
        m = self.machine
        current, previous = m.current, m.previous
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
            current.phase,
            current.elapsed,
            previous.phase,
            previous.elapsed,
        )

    def round(
        self, rows: IntArray, frame: tuple[FloatArray, FloatArray], rates: Rates, choosing: bool
    ) -> tuple[IntArray, BoolArray, IntArray]:
        """One round for ``rows`` (:func:`~engine.graph._machine_kernels.step_round`): chosen, pause, ended.

        ``frame``: the seconds remaining and spent ``(C,)``; ``rates``: the machine's own phase
        rates of the current and source states of some characters (``Machine._rates_pair``).
        """
        parameters = self.machine.parameters
        chosen = np.empty(rows.size, dtype=np.intp)
        pause = np.empty(rows.size, dtype=bool)
        done = np.empty(rows.size, dtype=np.intp)
        count = compiled_module("engine.graph._machine_kernels").step_round(
            rows,
            rates(rows),
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

    def step(self, dt: FloatArray, active: BoolArray, spent: FloatArray, rates: Rates) -> None:
        """``Machine.step`` of ``dt`` ``(C,)`` for the ``active`` characters (``spent`` ``(C,)``: seconds so far)."""
        machine = self.machine
        frame = (np.array(dt, dtype=np.float64), spent)
        rows = np.flatnonzero(active)
        for _ in range(len(machine.bound.states) + 2):  # rounds of chained transitions
            if not rows.size:
                return
            chosen, pause, done = self.round(rows, frame, rates, True)
            if done.size:
                machine.hooks.stop_stage(machine.name, done)
            starting = chosen >= 0
            if starting.any():
                machine.start(rows[starting], chosen[starting])
            rows = rows[pause]
        if rows.size:
            self.round(rows, frame, rates, False)
