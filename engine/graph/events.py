"""What a graph tells its game: marker crossings in its states (:meth:`GraphRuntime.on_marker`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.math._checks import FloatArray, IntArray


@dataclass(frozen=True)
class GraphMarkerEvent:
    """One crossing of a clip marker in a graph state by some characters.

    Attributes
    ----------
    machine, state
        Where the clip plays (machine name, state name).
    clip, marker, time
        The clip's name, the marker's name and its time in the clip, seconds.
    characters, weights
        The characters ``(K,)`` that crossed it and the clip's layer weight for each ``(K,)``.
    """

    machine: str
    state: str
    clip: str
    marker: str
    time: float
    characters: IntArray
    weights: FloatArray


def deliver(callback: Callable[[GraphMarkerEvent], Any], machine: str, state: str, clip: str) -> Any:
    """A player marker callback that calls ``callback`` with the graph's event (machine, state and clip named)."""

    def call(marker: str, time: float, characters: IntArray, weights: FloatArray) -> None:
        callback(GraphMarkerEvent(machine, state, clip, marker, time, characters, weights))

    return call
