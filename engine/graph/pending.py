"""The stage switches a graph's machines start within one update, handed to the player at its end.

A machine that starts a transition of the player's stage (:meth:`engine.player.Player.switch_between`)
knows the layers before and after the switch at that instant; the runtime keeps them here and
starts the switches together when the machines are done (:meth:`PendingSwitches.flush`), one
player call per kind. Two things happen before that:

- **A chain at one instant is one switch.** A character that switches again at the same instant
  (a transition whose conditions hold as soon as the last one started: jump → move → idle)
  switches once, from the output before the first switch to the layers after the last, with the
  last one's kind and length. Starting the first would be wasted: at its start a stage shows its
  source exactly (an inertialized offset is the whole difference, a frozen snapshot has weight
  1), so the second would start from the same output, to rounding.
- **A switch later in the update first hands over the character's earlier one**, whose stage its
  source capture reads; a stage the machine stops drops the switch it has not handed over (the
  stop would end it as it starts).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.graph.machine import Switch, present
from engine.math._checks import BoolArray, FloatArray, IntArray
from engine.player import LayerState, Player


@dataclass(frozen=True)
class _Pending:
    """One machine start's switches: ``rows`` ``(K,)`` at ``delay`` ``(K,)`` seconds into the update.

    ``kept`` ``(K,)``: which are still to be handed over (a chain or a stop takes the others out).
    """

    rows: IntArray
    delay: FloatArray
    before: LayerState
    after: LayerState
    how: Switch
    kept: BoolArray

    def part(self, index: IntArray) -> _Pending:
        """The switches ``index`` of these."""
        kind, durations, half_lives = self.how
        return _Pending(
            self.rows[index],
            self.delay[index],
            self.before.take(index),
            self.after.take(index),
            (kind, durations[index], half_lives[index]),
            self.kept[index],
        )


class PendingSwitches:
    """The switches of ``player``'s characters started and not yet handed to it (module docstring)."""

    def __init__(self, player: Player) -> None:
        count = player.num_characters
        self.player = player
        self._entries: list[_Pending] = []
        self._delay = np.full(count, np.nan)  # each character's kept switch's instant (NaN: none)
        self._entry = np.zeros(count, dtype=np.intp)  # the entry that holds it
        self._column = np.zeros(count, dtype=np.intp)  # and its column there

    def add(self, rows: IntArray, delay: FloatArray, before: LayerState, after: LayerState, how: Switch) -> None:
        """Keep the switch ``how`` of ``rows`` at ``delay`` from the output at ``before`` to the layers ``after``.

        A character with a switch kept at the same instant switches once, from that switch's
        ``before``; one kept at another instant (started before) has it handed to the player first.
        """
        kept = self._delay[rows]
        if not np.isnan(kept).all():
            other = ~np.isnan(kept) & (kept != delay)
            if other.any():
                self.flush(rows[other])
            chained = kept == delay
            if chained.any():
                before = self._chained(rows, chained, before)
        self._delay[rows], self._entry[rows], self._column[rows] = delay, len(self._entries), np.arange(rows.size)
        self._entries.append(_Pending(rows, delay, before, after, how, np.ones(rows.size, dtype=bool)))

    def drop(self, rows: IntArray) -> None:
        """Forget the switches of ``rows`` not handed over yet (their stage stopped at once)."""
        self._forget(rows[~np.isnan(self._delay[rows])])

    def flush(self, rows: IntArray | None = None) -> None:
        """Hand the switches of ``rows`` (``None``: all) to the player: one :meth:`~Player.switch_between` per kind."""
        if rows is not None:
            rows = rows[~np.isnan(self._delay[rows])]  # those with a switch kept
        if rows is None:
            parts = [entry if entry.kept.all() else entry.part(np.flatnonzero(entry.kept)) for entry in self._entries]
            self._entries = []
            self._delay[:] = np.nan
        else:
            parts = [entry.part(columns) for entry, columns, _ in self._held(rows)]
            self._forget(rows)
        parts = [part for part in parts if part.rows.size]
        for kind in dict.fromkeys(part.how[0] for part in parts):  # in the order first started
            joined = _joined([part for part in parts if part.how[0] == kind])
            self.player.switch_between(
                joined.rows, joined.before, joined.after, kind, joined.how[1], half_life=joined.how[2]
            )

    def _chained(self, rows: IntArray, chained: np.ndarray, before: LayerState) -> LayerState:
        """``before`` with the kept ``before`` of the ``chained`` rows, whose kept switches are taken out."""
        arrays = [np.array(field) for field in before.arrays()]  # writable copies
        mine, where = rows[chained], np.flatnonzero(chained)
        for entry, columns, picked in self._held(mine):
            for array, kept in zip(arrays, entry.before.arrays(), strict=True):
                array[..., where[picked]] = kept[..., columns]
        self._forget(mine)
        return LayerState(*arrays)

    def _held(self, rows: IntArray) -> list[tuple[_Pending, IntArray, BoolArray]]:
        """Each entry holding kept switches of ``rows``, with their columns there and which of ``rows`` they are."""
        if not rows.size:
            return []
        held = self._entry[rows]
        found = []
        for index in present(held, len(self._entries)).tolist():  # loop over the entries (a few in an update)
            picked = held == index
            found.append((self._entries[index], self._column[rows[picked]], picked))
        return found

    def _forget(self, rows: IntArray) -> None:
        """Take the kept switches of ``rows`` out (not handed over)."""
        for entry, columns, _ in self._held(rows):
            entry.kept[columns] = False
        self._delay[rows] = np.nan


def _joined(entries: list[_Pending]) -> _Pending:
    """Switches of one kind as one."""
    first = entries[0]
    if len(entries) == 1:
        return first
    before, after = first.before, first.after
    for entry in entries[1:]:
        before, after = before.joined(entry.before), after.joined(entry.after)
    return _Pending(
        np.concatenate([entry.rows for entry in entries]),
        np.concatenate([entry.delay for entry in entries]),
        before,
        after,
        (
            first.how[0],
            np.concatenate([entry.how[1] for entry in entries]),
            np.concatenate([entry.how[2] for entry in entries]),
        ),
        np.concatenate([entry.kept for entry in entries]),
    )
