"""Clip markers crossed during a frame, delivered as :class:`MarkerEvent` callbacks.

The counting is :func:`engine.anim.events.marker_crossings` (exact under every loop mode and
direction); this module turns the counts of one frame into one callback per crossing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.anim.events import marker_crossings
from engine.animator.table import ActionTable, BoolArray
from engine.math._checks import FloatArray, IntArray

if TYPE_CHECKING:
    from engine.animator.action import Action


@dataclass(frozen=True)
class MarkerEvent:
    """One crossing of a clip marker by some characters (one event per crossing).

    Attributes
    ----------
    action
        The action whose clip holds the marker.
    marker
        The marker's name.
    time
        The marker's time in the clip, seconds.
    characters
        Indices ``(K,)`` of the characters that crossed it.
    weights
        Their effective weights in the action ``(K,)`` (to skip, e.g., footsteps of a clip
        that is fading out).
    """

    action: Action
    marker: str
    time: float
    characters: IntArray
    weights: FloatArray


def fire_markers(
    actions: Sequence[Action], table: ActionTable, start: FloatArray, end: FloatArray, running: BoolArray
) -> None:
    """Call every action's marker callbacks for the crossings of one frame.

    ``start`` and ``end`` ``(A, C)`` are the raw times before and after the frame (``end``
    unwrapped); only characters where the action ran and is weighted count.
    """
    for action in actions:  # loop over actions with callbacks, then over marker times
        if not action._callbacks:
            continue
        row = action._row
        eligible = running[row] & (table.effective[row] > 0.0)
        if not eligible.any():
            continue
        counts = marker_crossings(
            start[row], end[row], action._marker_times, action.duration, action.loop, include_start=table.fresh[row]
        )
        counts = counts * eligible[:, None]
        for m, name in enumerate(action._marker_names):
            callbacks = action._callbacks.get(name)
            if not callbacks:
                continue
            for crossing in range(1, int(counts[:, m].max(initial=0)) + 1):  # one call per crossing
                characters = np.nonzero(counts[:, m] >= crossing)[0]
                weights = table.effective[row][characters]
                event = MarkerEvent(action, name, float(action._marker_times[m]), characters, weights)
                for callback in callbacks:
                    callback(event)
