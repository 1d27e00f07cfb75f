"""The animator's playback state: one typed table of arrays, one row per action, one column per character.

Every per-character quantity of every action is a named field shaped ``(A, C)``; each action's
clip time lives in its player layer (``rows``: the layer of each action). Fades and warps are the
same thing, a linear ramp of one value over the player's clock, so both are a :class:`Ramp`.
Nothing here knows about clips or poses: an :class:`~engine.animator.action.Action` is a view of
one row, the frame (:mod:`engine.animator.animator`) advances whole columns at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.math._checks import BoolArray, FloatArray, IntArray


def _grown(array: np.ndarray, value: float | bool) -> np.ndarray:
    """``array`` ``(A, ...)`` with one more row filled with ``value``."""
    return np.concatenate((array, np.full((1, *array.shape[1:]), value, dtype=array.dtype)))


@dataclass
class Ramp:
    """Linear ramps of a value over the animator clock, one per action and character ``(A, C)``.

    While ``active``, the value goes from ``start_value`` at clock ``start_time`` to ``end_value``
    at ``start_time + duration`` and then holds (a zero duration jumps at once).
    """

    start_value: FloatArray
    end_value: FloatArray
    start_time: FloatArray
    duration: FloatArray
    active: BoolArray

    @classmethod
    def empty(cls, characters: int) -> Ramp:
        """A ramp table with no rows."""
        zeros = np.zeros((0, characters))
        return cls(zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(), np.zeros((0, characters), dtype=bool))

    def grow(self) -> None:
        """Append one inactive row."""
        self.start_value = _grown(self.start_value, 1.0)
        self.end_value = _grown(self.end_value, 1.0)
        self.start_time = _grown(self.start_time, 0.0)
        self.duration = _grown(self.duration, 0.0)
        self.active = _grown(self.active, False)

    def schedule(self, row: int, index: IntArray, start: Any, end: Any, clock: FloatArray, duration: float) -> None:
        """Start ramping ``row``'s value for characters ``index`` from ``start`` to ``end`` now."""
        self.start_value[row, index] = start
        self.end_value[row, index] = end
        self.start_time[row, index] = clock[index]
        self.duration[row, index] = duration
        self.active[row, index] = True

    def progress(self, clock: FloatArray) -> FloatArray:
        """How far along each ramp is at ``clock`` ``(C,)``: ``(A, C)`` in ``[0, 1]``."""
        elapsed = clock - self.start_time
        done = np.ones_like(elapsed)
        return np.clip(np.divide(elapsed, self.duration, out=done, where=self.duration > 0.0), 0.0, 1.0)

    def value(self, progress: FloatArray) -> FloatArray:
        """The ramped value at ``progress`` ``(A, C)``."""
        return self.start_value + progress * (self.end_value - self.start_value)

    def integral(self, begin: FloatArray, seconds: FloatArray) -> FloatArray:
        """``∫ value dτ`` over ``[begin, begin + seconds]`` on the clock, exactly (the ramp is linear)."""
        low, high = begin - self.start_time, begin + seconds - self.start_time
        area = _ramp_area(high, self.duration) - _ramp_area(low, self.duration)
        return self.start_value * seconds + (self.end_value - self.start_value) * area


def _ramp_area(elapsed: FloatArray, duration: FloatArray) -> FloatArray:
    """``∫₀^elapsed clip(τ / duration, 0, 1) dτ``: the area under a 0 → 1 ramp of ``duration`` seconds.

    ``τ²/(2·duration)`` during the ramp, then ``elapsed - duration/2``; a zero-length ramp is a
    step (``max(elapsed, 0)``).
    """
    inside = np.clip(elapsed, 0.0, duration)
    safe = np.where(duration > 0.0, duration, 1.0)
    return np.where(duration > 0.0, inside * inside / (2.0 * safe), 0.0) + np.maximum(elapsed - duration, 0.0)


@dataclass
class ActionTable:
    """Per-action, per-character playback state (module docstring). Rows are added by :meth:`grow`.

    Attributes
    ----------
    rows
        ``(A,)`` the player layer of each action.
    speed
        Playback speed; negative plays backwards. A warp ramps it (:attr:`warping`).
    weight
        The user's weight, before fades.
    fade
        Fade factor; the effective weight is ``weight · fade`` while enabled. :attr:`fading` ramps it.
    effective
        Effective weight of the last frame.
    enabled, paused, finished
        Playing (possibly paused); time frozen; a :attr:`Loop.ONCE` action reached its end.
    fading, warping
        The ramps of the fade factor and of the speed.
    """

    rows: IntArray
    speed: FloatArray
    weight: FloatArray
    fade: FloatArray
    effective: FloatArray
    enabled: BoolArray
    paused: BoolArray
    finished: BoolArray
    fading: Ramp
    warping: Ramp

    @classmethod
    def empty(cls, characters: int) -> ActionTable:
        """A table for ``characters`` characters and no actions."""

        def floats() -> FloatArray:
            return np.zeros((0, characters))

        def flags() -> BoolArray:
            return np.zeros((0, characters), dtype=bool)

        return cls(
            rows=np.zeros(0, dtype=np.intp),
            speed=floats(),
            weight=floats(),
            fade=floats(),
            effective=floats(),
            enabled=flags(),
            paused=flags(),
            finished=flags(),
            fading=Ramp.empty(characters),
            warping=Ramp.empty(characters),
        )

    def grow(self, layer: int) -> int:
        """Append a stopped action playing player layer ``layer`` at speed, weight and fade 1; return its row."""
        row = self.rows.shape[0]
        self.rows = np.append(self.rows, int(layer))
        self.speed = _grown(self.speed, 1.0)
        self.weight = _grown(self.weight, 1.0)
        self.fade = _grown(self.fade, 1.0)
        self.effective = _grown(self.effective, 0.0)
        self.enabled = _grown(self.enabled, False)
        self.paused = _grown(self.paused, False)
        self.finished = _grown(self.finished, False)
        self.fading.grow()
        self.warping.grow()
        return row
