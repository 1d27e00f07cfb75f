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

from engine.graph.machine import Switch
from engine.math._checks import FloatArray, IntArray
from engine.player import LayerState, Player


@dataclass(frozen=True)
class _Pending:
    """One machine start's switches: ``rows`` ``(K,)`` at ``delay`` ``(K,)`` seconds into the update."""

    rows: IntArray
    delay: FloatArray
    before: LayerState
    after: LayerState
    how: Switch

    def without(self, leaving: np.ndarray) -> _Pending | None:
        """These switches but those where ``leaving`` ``(K,)`` is true (``None`` when none is left)."""
        keep = np.flatnonzero(~leaving)
        if not keep.size:
            return None
        kind, durations, half_lives = self.how
        return _Pending(
            self.rows[keep],
            self.delay[keep],
            self.before.take(keep),
            self.after.take(keep),
            (kind, durations[keep], half_lives[keep]),
        )


class PendingSwitches:
    """The switches of ``count`` characters started and not yet handed to the player (module docstring)."""

    def __init__(self, count: int) -> None:
        self._entries: list[_Pending] = []
        self._delay = np.full(count, np.nan)  # each character's pending switch's instant (NaN: none)

    def add(
        self, player: Player, rows: IntArray, delay: FloatArray, before: LayerState, after: LayerState, how: Switch
    ) -> None:
        """Keep the switch ``how`` of ``rows`` at ``delay`` from the output at ``before`` to the layers ``after``.

        A character with a switch kept at the same instant switches once, from that switch's
        ``before``; one kept at another instant (started before) has it handed to ``player`` first.
        """
        kept = self._delay[rows]
        if not np.isnan(kept).all():
            other = ~np.isnan(kept) & (kept != delay)
            if other.any():
                self.flush(player, rows[other])
            chained = kept == delay
            if chained.any():
                before = self._chained(rows, chained, before)
        self._entries.append(_Pending(rows, delay, before, after, how))
        self._delay[rows] = delay

    def drop(self, rows: IntArray) -> None:
        """Forget the switches of ``rows`` not handed over yet (their stage stopped at once)."""
        if not np.isnan(self._delay[rows]).all():
            self._take(rows)

    def flush(self, player: Player, rows: IntArray | None = None) -> None:
        """Hand the switches of ``rows`` (``None``: all) to ``player``: one :meth:`~Player.switch_between` per kind."""
        if rows is None:
            taken, self._entries = self._entries, []
            self._delay[:] = np.nan
        else:
            taken = self._take(rows)
        for kind in dict.fromkeys(entry.how[0] for entry in taken):  # in the order first started
            entry = _joined([entry for entry in taken if entry.how[0] == kind])
            player.switch_between(entry.rows, entry.before, entry.after, kind, entry.how[1], half_life=entry.how[2])

    def _chained(self, rows: IntArray, chained: np.ndarray, before: LayerState) -> LayerState:
        """``before`` with the kept ``before`` of the ``chained`` rows, whose kept switches are taken out."""
        arrays = [np.array(field) for field in before.arrays()]  # writable copies
        column = np.full(self._delay.size, -1, dtype=np.intp)
        column[rows] = np.arange(rows.size)
        for entry in self._take(rows[chained]):
            for array, kept in zip(arrays, entry.before.arrays(), strict=True):
                array[..., column[entry.rows]] = kept
        return LayerState(*arrays)

    def _take(self, rows: IntArray) -> list[_Pending]:
        """Take the kept switches of ``rows`` out: each entry's part for them."""
        leaving = np.zeros(self._delay.size, dtype=bool)
        leaving[rows] = True
        taken: list[_Pending] = []
        left: list[_Pending] = []
        for entry in self._entries:
            mine = leaving[entry.rows]
            if mine.any():
                part = entry.without(~mine)
                assert part is not None
                taken.append(part)
                rest = entry.without(mine)
                if rest is not None:
                    left.append(rest)
            else:
                left.append(entry)
        self._entries = left
        self._delay[rows] = np.nan
        return taken


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
    )
