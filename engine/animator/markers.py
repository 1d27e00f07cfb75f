"""The animator's marker events: one :class:`MarkerEvent` per crossing of a clip marker.

The counting is the player's (:mod:`engine.player.markers`, exact under every loop mode and
direction); an action's :meth:`~engine.animator.Action.on_marker` wraps each crossing in an event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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
