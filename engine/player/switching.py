"""Captures and switches: a player's output with its velocity, and the transitions started from it.

:class:`Switching` is the part of :class:`~engine.player.Player` that starts the transition
stage's transitions (:mod:`engine.player.transitions`): the layers' state as a capture reads it
(:meth:`Switching.layer_state`), the output and its velocity at such a state
(:meth:`Switching.capture`), and the switches between two states (:meth:`Switching.switch_between`).
The player's frame (:mod:`engine.player.player`) builds on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.anim.velocity import PoseVelocity
from engine.math._checks import FloatArray, IntArray, as_array, trusted
from engine.player.capture import LayerState, VelocityTables, capture
from engine.player.compose import CompiledLayers, player_threads
from engine.player.controls import LayerControls
from engine.player.transitions import Capture, TransitionStage


class Switching(LayerControls):
    """Captures of the output and the switches started from them (module docstring); a base of the player.

    What it reads of the player: its :attr:`clock`, :attr:`transitions`, backend, rest threshold,
    threads, compiled layers and velocity tables (set by :class:`~engine.player.Player`).
    """

    clock: FloatArray
    transitions: TransitionStage
    backend: str
    rest_threshold: float
    _threads: int | None
    _compiled: CompiledLayers
    _velocity_tables: VelocityTables

    @property
    def threads(self) -> int:
        """Threads of the compiled calls (:func:`~engine.player.compose.player_threads`), read at each call."""
        return player_threads(self._threads)

    def layer_state(self, characters: Any = None, *, leaving: bool = False) -> LayerState:
        """The layers of ``characters`` as they are, as a capture reads them (:class:`LayerState`).

        Clip times (:attr:`times`), the last frame's rates, weights and :attr:`override_weights`
        (their rates 0), ``leaving`` everywhere, at the current :attr:`clock`.
        """
        chosen = self.select(characters)
        shape = (self.num_layers, chosen.size)
        table = self._table
        times, rates, weights = self._clip_times()[:, chosen], self._rates[:, chosen], table.weights[:, chosen]
        overrides, at = table.override_weights[:, chosen], self.clock[chosen]
        return LayerState(times, rates, weights, np.zeros(shape), overrides, np.full(shape, leaving), at)

    def capture(
        self,
        characters: Any,
        times: Any = None,
        rates: Any = None,
        weights: Any = None,
        weight_rates: Any = None,
        *,
        override_weights: Any = None,
        at: Any = None,
        stage: bool = True,
        leaving: Any = False,
    ) -> Capture:
        """The output of ``characters`` ``(K,)`` and its velocity, for layers at clip ``times`` ``(L, K)``.

        Defaults: the layers as they are (:meth:`layer_state`), the transition stage at clock
        ``at`` ``(K,)`` (default :attr:`clock`) when ``stage``. A controller that switches
        mid-frame passes the times and weights of that instant. ``leaving`` (scalar or ``(L, K)``):
        where true, a layer's velocity is that of the
        motion leaving its time (a layer entered now), else of the motion arriving.
        """
        chosen = self.select(characters)
        given = (times, rates, weights, weight_rates, override_weights, leaving, at)
        now = self.layer_state(chosen).arrays() if any(value is None for value in given) else given
        state = LayerState(*(mine if value is None else value for mine, value in zip(now, given, strict=True)))
        return self._captured(chosen, state.checked(self.num_layers, self.num_overrides, chosen.size), stage=stage)

    def _captured(self, chosen: IntArray, state: LayerState, *, stage: bool) -> Capture:
        """The capture of ``chosen`` at a checked ``state`` (the transition stage at ``state.at`` when ``stage``)."""
        frame = self._compiled.captures(self.threads, self._velocity_tables) if self.backend == "numba" else None
        with trusted():
            result = capture(
                self.skeleton,
                self._table,
                *state.arrays()[:5],
                root=self.root_joint,
                threshold=self.rest_threshold,
                leaving=state.leaving,
                tables=self._velocity_tables,
                compiled=None if frame is None else (frame, chosen),
            )
            if stage:
                self.transitions.apply_captured(result, chosen, state.at, self.threads)
        return result

    def start_transition(
        self,
        characters: Any,
        kind: str,
        duration: Any,
        source: Capture,
        target: Capture,
        *,
        half_life: Any = 1.0,
        at: Any = None,
    ) -> None:
        """Start ``kind`` (``"inertialize"``, ``"spring"``, ``"dead_blend"``, ``"frozen"``) from ``source``.

        Both are :meth:`capture` s of ``characters`` at the switch (clock ``at``, default now):
        ``source`` of the output before the controller changed the layers, ``target`` of the
        new layers (``stage=False``, ``leaving=True``). See :mod:`engine.player.transitions`.
        """
        chosen = self.select(characters)
        when = self.clock[chosen] if at is None else np.broadcast_to(as_array(at, "at"), chosen.shape)
        with trusted():
            self.transitions.begin(chosen, kind, duration, half_life, source, target, when, self.threads)

    def switch_between(
        self, characters: Any, before: LayerState, after: LayerState, kind: str, duration: Any, *, half_life: Any = 1.0
    ) -> None:
        """Start ``kind`` for ``characters`` ``(K,)`` from their output at ``before`` to their layers at ``after``.

        Both are :class:`LayerState` s of the ``K`` characters (:meth:`layer_state`, or a
        controller's own of an instant within the frame): the source is the output at ``before``
        with the transition stage in progress, the target the layers at ``after``; the two are
        captured in one pass (:meth:`capture`, :meth:`start_transition`), the switch at clock
        ``before.at``.
        """
        chosen = self.select(characters)
        count, shape = chosen.size, (self.num_layers, self.num_overrides, chosen.size)
        first = before.checked(*shape)
        pair = self._captured(np.concatenate((chosen, chosen)), first.joined(after.checked(*shape)), stage=False)
        source, target = pair.take(slice(0, count)), pair.take(slice(count, 2 * count))  # views of its halves
        with trusted():
            self.transitions.apply_captured(source, chosen, first.at, self.threads)
            self.transitions.begin(chosen, kind, duration, half_life, source, target, first.at, self.threads)

    def switch(
        self, characters: Any, kind: str, duration: Any, change: Callable[[], None], *, half_life: Any = 1.0
    ) -> None:
        """Start an inertialized (or other ``kind``) switch of ``characters`` from the current output to new layers.

        ``change()`` sets the new layers (weights, times) of those characters; the switch starts
        from what the player showed just before, at the current clock (a controller between two
        frames, e.g. motion matching's jump to a new database frame).
        """
        chosen = self.select(characters)
        before = self.layer_state(chosen)
        change()
        self.switch_between(chosen, before, self.layer_state(chosen, leaving=True), kind, duration, half_life=half_life)

    def output_velocity(self, characters: Any = None) -> PoseVelocity:
        """Velocity ``(K, J)`` of the output now (the layers at their last frame's rates, weights held)."""
        return self.capture(self.select(characters)).velocity
