"""Clip markers crossed during a frame, one callback per crossing (exact under every loop mode and direction).

The counting is :func:`engine.anim.events.marker_crossings`; :class:`Markers` keeps each layer's
callbacks and turns one frame's counts into calls ``callback(marker, time, characters, weights)``:
the marker's name and clip time, the characters ``(K,)`` that crossed it and their weights in the
layer ``(K,)``. Controllers wrap them in their own event objects (the Animator's
:class:`~engine.animator.MarkerEvent`, the graph's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.anim.events import marker_crossings
from engine.errors import InvalidInputError
from engine.math._checks import BoolArray, FloatArray, IntArray
from engine.player.layers import Layer

MarkerCallback = Callable[[str, float, IntArray, FloatArray], Any]
"""``callback(marker, time, characters, weights)``."""


class Markers:
    """Each layer's marker callbacks, by marker name (module docstring)."""

    def __init__(self) -> None:
        self._callbacks: dict[int, dict[str, list[MarkerCallback]]] = {}

    def add(self, row: int, layer: Layer, name: str, callback: MarkerCallback) -> None:
        """Call ``callback`` each time a character crosses marker ``name`` of layer ``row``."""
        if name not in (layer.source.markers or {}):
            raise InvalidInputError(
                f"clip {layer.source.name!r} has no marker {name!r}; it has {sorted(layer.source.markers or {})}"
            )
        self._callbacks.setdefault(row, {}).setdefault(name, []).append(callback)

    def fire(
        self,
        rows: IntArray,
        layers: list[Layer],
        characters: IntArray,
        moved: tuple[FloatArray, FloatArray],
        running: BoolArray,
        fresh: BoolArray,
        weights: FloatArray,
    ) -> None:
        """The callbacks of layers ``rows`` for one frame that moved the raw times of ``characters`` ``(K,)``.

        ``moved`` = the raw times before and after (unwrapped); they, ``running``, ``fresh`` and
        ``weights`` are ``(n, K)``, one row per entry of ``rows``: a layer that ran with weight
        fires its markers.
        """
        if not self._callbacks:
            return
        eligible = running & (weights > 0.0)
        start, end = moved
        for k, row in enumerate(rows.tolist()):  # loop over the layers with callbacks, then marker times
            callbacks = self._callbacks.get(row)
            if not callbacks or not eligible[k].any():
                continue
            layer = layers[row]
            counts = marker_crossings(
                start[k], end[k], layer.marker_times, layer.duration, layer.loop, include_start=fresh[k]
            )
            counts = counts * eligible[k][:, None]
            for m, name in enumerate(layer.marker_names):
                named = callbacks.get(name)
                if not named:
                    continue
                for crossing in range(1, int(counts[:, m].max(initial=0)) + 1):  # one call per crossing
                    crossed = np.nonzero(counts[:, m] >= crossing)[0]
                    for callback in named:
                        callback(name, float(layer.marker_times[m]), characters[crossed], weights[k][crossed])
