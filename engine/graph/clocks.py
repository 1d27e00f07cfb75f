"""The leaves of one machine as arrays: every leaf clip's time from its state's clock, all leaves at once.

A machine's states play their leaves (:class:`~engine.graph.flat.Leaf`) at times that follow the
state's clock: a synced leaf at ``phase · duration``, any other at ``elapsed · speed · state
speed`` (looped or held at its end). :class:`LeafClocks` holds those constants for every leaf of
one machine as ``(n, 1)`` columns, so a whole ``(n, K)`` block of leaf times is a few array
operations instead of a loop over the machine's states and their leaves. Each entry is computed
with the same operations, in the same order, as :meth:`Leaf.times <engine.graph.flat.Leaf.times>`
(the numbers are identical). :class:`Slot` is what a played state's clips did in a frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.graph.binding import BoundGraph
from engine.math._checks import BoolArray, FloatArray, IntArray


@dataclass(frozen=True)
class LeafClocks:
    """The leaves of one machine (module docstring).

    Attributes
    ----------
    index
        The leaves' indices among the graph's leaves (their player layers' order): a slice where
        they are contiguous, else ``(n,)``.
    state
        ``(n, 1)`` the state of the machine each leaf plays in.
    duration, speed, state_speed
        ``(n, 1)`` the clip's duration, the leaf's speed and its state's speed.
    rate
        ``(n, 1)`` clip seconds per second of a leaf that does not follow the phase (speed · state speed).
    sync, loop
        ``(n, 1)`` whether the leaf follows its state's phase, whether it loops.
    """

    index: slice | IntArray
    state: IntArray
    duration: FloatArray
    speed: FloatArray
    state_speed: FloatArray
    rate: FloatArray
    sync: BoolArray
    loop: BoolArray

    @classmethod
    def of(cls, graph: BoundGraph, machine: str) -> LeafClocks:
        """The leaves of ``graph``'s machine ``machine``."""
        states = graph.machines[machine].states
        leaves = [leaf for leaf in graph.leaves if leaf.machine == machine]
        index = np.array([leaf.index for leaf in leaves], dtype=np.intp)
        contiguous = index.size > 0 and bool(np.all(np.diff(index) == 1))

        def column(values: list, dtype: type) -> np.ndarray:
            return np.array(values, dtype=dtype).reshape(-1, 1)

        return cls(
            slice(int(index[0]), int(index[-1]) + 1) if contiguous else index,
            column([leaf.state for leaf in leaves], np.intp),
            column([leaf.duration for leaf in leaves], np.float64),
            column([leaf.speed for leaf in leaves], np.float64),
            column([states[leaf.state].speed for leaf in leaves], np.float64),
            column([leaf.speed * states[leaf.state].speed for leaf in leaves], np.float64),
            column([leaf.sync for leaf in leaves], bool),
            column([leaf.loop for leaf in leaves], bool),
        )

    def played(self, states: IntArray) -> BoolArray:
        """``(n, K)`` whether each leaf's state is ``states`` ``(K,)``."""
        return self.state == states

    def _either(self, synced: Callable[[], FloatArray], other: Callable[[], FloatArray]) -> FloatArray:
        """``synced()`` for the synced leaves, ``other()`` for the rest (only the one needed when all are alike)."""
        if self.sync.all():
            return synced()
        if not self.sync.any():
            return other()
        return np.where(self.sync, synced(), other())

    def raw(self, phase: FloatArray, elapsed: FloatArray) -> FloatArray:
        """Unwrapped clip times ``(n, K)`` at the states' ``phase`` and ``elapsed`` seconds ``(K,)``."""
        return self._either(lambda: phase * self.duration, lambda: elapsed * self.rate)

    def travel(self, phase: FloatArray, elapsed: FloatArray) -> FloatArray:
        """Clip seconds ``(n, K)`` travelled while the states' phase moved by ``phase`` in ``elapsed`` seconds."""
        return self._either(lambda: phase * self.duration, lambda: elapsed * self.speed * self.state_speed)

    def times(self, phase: FloatArray, elapsed: FloatArray) -> FloatArray:
        """Clip times ``(n, K)`` (looped or held) at the states' clocks ``(K,)``."""

        def other() -> FloatArray:
            raw = elapsed * self.rate
            with np.errstate(divide="ignore", invalid="ignore"):
                wrapped = np.where(self.loop, np.mod(raw, self.duration), np.minimum(raw, self.duration))
            return np.where(self.duration <= 0.0, 0.0, wrapped)

        return self._either(lambda: phase * self.duration, other)

    def rates(self, elapsed: FloatArray, rate: FloatArray) -> FloatArray:
        """Clip seconds per second ``(n, K)`` of the leaves at the states' clocks, their phases moving at ``rate``."""

        def other() -> FloatArray:
            moving = np.where(self.loop | (elapsed * self.rate < self.duration), self.rate, 0.0)
            return np.where(self.duration <= 0.0, 0.0, moving)

        return self._either(lambda: rate * self.duration, other)


def leaf_block(leaves: slice | IntArray, characters: slice | IntArray) -> Any:
    """The index of the block ``leaves`` × ``characters`` of an ``(N, C)`` array."""
    if isinstance(leaves, slice) or isinstance(characters, slice):
        return leaves, characters
    return np.ix_(leaves, characters)


@dataclass
class Slot:
    """One played state's frame per character ``(C,)``: entered this frame (at ``entry`` phase), travel so far."""

    entered: BoolArray
    entry: FloatArray
    phase: FloatArray
    elapsed: FloatArray

    @classmethod
    def empty(cls, count: int) -> Slot:
        """Nothing entered, no travel."""
        return cls(np.zeros(count, dtype=bool), np.zeros(count), np.zeros(count), np.zeros(count))

    def arrays(self) -> tuple[BoolArray, FloatArray, FloatArray, FloatArray]:
        """The fields, in order (entered, entry, phase, elapsed): as the kernels take a slot."""
        return self.entered, self.entry, self.phase, self.elapsed

    def clear(self) -> None:
        """A new frame."""
        self.entered[:] = False
        self.phase[:] = 0.0
        self.elapsed[:] = 0.0

    def copy_from(self, other: Slot, rows: IntArray) -> None:
        """Take ``other``'s entries of ``rows``."""
        for mine, theirs in zip(self.arrays(), other.arrays(), strict=True):
            mine[rows] = theirs[rows]
