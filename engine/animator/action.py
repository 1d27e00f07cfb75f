"""One clip's playback on every character of an animator: the chainable :class:`Action` API.

An action is a view of one row of the animator's :class:`~engine.animator.table.ActionTable`
(speed, weight, fades, warps, flags) and of its layer in the animator's
:class:`~engine.player.Player` (the clip time, mask, loop mode); its methods write them for the
selected characters and return the action, so calls chain (three.js's ``AnimationAction``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.anim.clip import Clip, SampledClip
from engine.anim.events import Loop, clip_time
from engine.animator.markers import MarkerEvent
from engine.animator.table import ActionTable, Ramp
from engine.errors import InvalidInputError
from engine.math._checks import BoolArray, FloatArray, IntArray, as_array
from engine.player import Player

if TYPE_CHECKING:
    from engine.animator.animator import Animator


class Action:
    """Playback of one clip on the characters of an :class:`~engine.animator.Animator` (make it with ``action``).

    Its state is per character; every method takes ``characters`` (``None`` = all) and returns
    the action, so calls chain: ``animator.action(clip).set_loop(Loop.ONCE).fade_in(0.2)``.
    """

    def __init__(self, animator: Animator, row: int) -> None:
        self.animator = animator
        """The animator the action belongs to."""
        self.row = row
        """The action's row in the animator's table."""

    def __repr__(self) -> str:
        kind = "additive " if self.additive else ""
        return f"Action({kind}{self.clip.name!r}, {self.loop.name}, {self.animator.num_characters} characters)"

    # --- what it plays ----------------------------------------------------------------------------

    @property
    def _table(self) -> ActionTable:
        return self.animator.table

    @property
    def _player(self) -> Player:
        return self.animator.player

    @property
    def layer(self) -> int:
        """The player layer the action plays."""
        return int(self._table.rows[self.row])

    @property
    def clip(self) -> Clip | SampledClip:
        """The clip played (for additive actions: the delta clip made from the source)."""
        return self._player.layer(self.layer).clip

    @property
    def additive(self) -> bool:
        """Whether the action is added on top of the blended pose instead of blended into it."""
        return self._player.layer(self.layer).additive

    @property
    def loop(self) -> Loop:
        """Loop mode (:class:`~engine.anim.events.Loop`); set it with :meth:`set_loop`."""
        return self._player.layer(self.layer).loop

    @property
    def duration(self) -> float:
        """Clip duration in seconds."""
        return self._player.layer(self.layer).duration

    @property
    def mask(self) -> FloatArray | None:
        """Per-joint weights ``(J,)``, or ``None`` for every joint 1; set with :meth:`set_mask`."""
        return self._player.layer(self.layer).mask

    # --- per-character state ----------------------------------------------------------------------

    def _select(self, characters: Any) -> IntArray:
        return self._player.select(characters)

    @property
    def time(self) -> FloatArray:
        """Clip time per character ``(C,)``, seconds, in ``[0, duration]`` (a copy)."""
        return clip_time(self._player.raw_times[self.layer], self.duration, self.loop)

    @property
    def speed(self) -> FloatArray:
        """Playback speed per character ``(C,)``; negative plays backwards (a copy)."""
        return self._table.speed[self.row].copy()

    @property
    def weight(self) -> FloatArray:
        """User weight per character ``(C,)``, before fades (a copy; set with :meth:`set_weight`)."""
        return self._table.weight[self.row].copy()

    @property
    def effective_weight(self) -> FloatArray:
        """Weight used by the last frame: ``weight · fade`` where enabled, else 0 ``(C,)`` (a copy)."""
        return self._table.effective[self.row].copy()

    @property
    def enabled(self) -> BoolArray:
        """Whether the action is playing (possibly paused) per character ``(C,)``."""
        return self._table.enabled[self.row].copy()

    @property
    def paused(self) -> BoolArray:
        """Whether the action's time is frozen per character ``(C,)``."""
        return self._table.paused[self.row].copy()

    @property
    def finished(self) -> BoolArray:
        """Whether a :attr:`Loop.ONCE` action reached its end (its start, backwards) ``(C,)``."""
        return self._table.finished[self.row].copy()

    def _start_raw(self, index: IntArray) -> FloatArray:
        backwards = self._table.speed[self.row, index] < 0.0
        return np.where(backwards, self.duration, 0.0)

    # --- playback -------------------------------------------------------------------------------

    def play(self, characters: Any = None) -> Action:
        """Start or resume playing from the current time (0 for a new action).

        :meth:`stop` and :meth:`reset` rewind to the start, or to the end when ``speed < 0``.
        """
        index = self._select(characters)
        table, row = self._table, self.row
        starting = index[~table.enabled[row, index]]
        if starting.size:  # a marker at the time it starts from fires on the next frame
            self._player.set_time(self.layer, self._player.raw_times[self.layer, starting], starting)
        table.enabled[row, index] = True
        table.paused[row, index] = False
        return self

    def stop(self, characters: Any = None) -> Action:
        """Stop, rewind to the start and drop any fade or warp in progress."""
        index = self._select(characters)
        self._table.enabled[self.row, index] = False
        return self._rewind(index)

    def reset(self, characters: Any = None) -> Action:
        """Play from the start again: enabled, unpaused, unfinished, no fade or warp."""
        index = self._select(characters)
        self._table.enabled[self.row, index] = True
        return self._rewind(index)

    def _rewind(self, index: IntArray) -> Action:
        table, row = self._table, self.row
        table.paused[row, index] = False
        table.finished[row, index] = False
        self._player.set_time(self.layer, self._start_raw(index), index)
        table.fade[row, index] = 1.0
        table.fading.active[row, index] = False
        table.warping.active[row, index] = False
        return self

    def pause(self, characters: Any = None) -> Action:
        """Freeze the time (the pose and weight stay); :meth:`resume` or :meth:`play` continue."""
        self._table.paused[self.row, self._select(characters)] = True
        return self

    def resume(self, characters: Any = None) -> Action:
        """Unfreeze the time after :meth:`pause`."""
        self._table.paused[self.row, self._select(characters)] = False
        return self

    def set_time(self, time: Any, characters: Any = None) -> Action:
        """Jump to clip time ``time`` (scalar or per selected character), clamped to the clip.

        A jump crosses no markers; a marker exactly at ``time`` fires on the next update.
        """
        index = self._select(characters)
        self._player.set_time(self.layer, np.clip(as_array(time, "time"), 0.0, self.duration), index)
        self._table.finished[self.row, index] = False
        return self

    def set_speed(self, speed: Any, characters: Any = None) -> Action:
        """Set the playback speed (1 = real time, negative = backwards); cancels a warp."""
        index = self._select(characters)
        self._table.speed[self.row, index] = as_array(speed, "speed")
        self._table.warping.active[self.row, index] = False
        return self

    def set_loop(self, loop: Loop) -> Action:
        """Set the loop mode for all characters (:class:`~engine.anim.events.Loop`)."""
        if self.animator.sync_group_of(self) is not None and loop != Loop.REPEAT:
            raise InvalidInputError(f"{self!r} is in a sync group, which needs Loop.REPEAT, got {Loop(loop).name}")
        self._player.set_loop(self.layer, Loop(loop))  # continues from the same clip time
        return self

    def set_mask(self, mask: Any) -> Action:
        """Weight the action per joint: ``(J,)`` non-negative (e.g. ``subtree_mask``), or ``None``."""
        self._player.set_mask(self.layer, mask)
        return self

    def set_weight(self, weight: Any, characters: Any = None) -> Action:
        """Set the user weight (scalar or per selected character, ``>= 0``) and stop any fade.

        The effective weight (:attr:`effective_weight`) is that weight from now on, where enabled.
        """
        index = self._select(characters)
        w = as_array(weight, "weight")
        if np.any(w < 0.0):
            raise InvalidInputError(f"weight must be non-negative, got {float(w.min())}")
        table, row = self._table, self.row
        table.weight[row, index] = w
        table.fade[row, index] = 1.0
        table.fading.active[row, index] = False
        table.effective[row, index] = np.where(table.enabled[row, index], w, 0.0)
        return self

    # --- fades and warps --------------------------------------------------------------------

    def fade_in(self, duration: float, characters: Any = None) -> Action:
        """Play and raise the fade factor linearly to 1 over ``duration`` seconds.

        The fade starts from the current factor of a playing action (no pop when interrupting
        a fade-out), from 0 for a stopped one.
        """
        index = self._select(characters)
        table, row = self._table, self.row
        current = np.where(table.enabled[row, index], table.fade[row, index], 0.0)
        self.play(index)
        table.fade[row, index] = current
        self._schedule(table.fading, index, current, 1.0, duration)
        return self

    def fade_out(self, duration: float, characters: Any = None) -> Action:
        """Lower the fade factor linearly to 0 over ``duration`` seconds, then stop."""
        index = self._select(characters)
        self._schedule(self._table.fading, index, self._table.fade[self.row, index], 0.0, duration)
        return self

    def warp(self, start_speed: Any, end_speed: Any, duration: float, characters: Any = None) -> Action:
        """Ramp the speed linearly from ``start_speed`` to ``end_speed`` over ``duration``; keep the end speed.

        The clip time advances by the exact integral of the ramp, so a warp plays the same at
        any frame rate.
        """
        index = self._select(characters)
        start, end = as_array(start_speed, "start_speed"), as_array(end_speed, "end_speed")
        self._schedule(self._table.warping, index, start, end, duration)
        return self

    def _schedule(self, ramp: Ramp, index: IntArray, start: Any, end: Any, duration: float) -> None:
        if not (np.isfinite(duration) and duration >= 0.0):
            raise InvalidInputError(f"duration must be a finite number of seconds >= 0, got {duration}")
        ramp.schedule(self.row, index, start, end, self._player.clock, duration)

    def crossfade_to(self, other: Action, duration: float, warp: bool = False, characters: Any = None) -> Action:
        """Fade this action out and ``other`` in over ``duration`` seconds.

        With ``warp`` the speeds ramp linearly too (three.js's time-scale warp) so that the two
        cycles keep equal periods: with speeds ``s``, ``s_other`` and durations ``D``,
        ``D_other``, this action goes from ``s`` to ``D · s_other / D_other`` (ending at
        ``other``'s period) while ``other`` goes from ``D_other · s / D`` (this one's period) to
        ``s_other``.
        """
        if other.animator is not self.animator:
            raise InvalidInputError("crossfade_to needs an action of the same animator")
        index = self._select(characters)
        self.fade_out(duration, index)
        other.fade_in(duration, index)
        if warp and self.duration > 0.0 and other.duration > 0.0:
            mine, theirs = self._table.speed[self.row, index], self._table.speed[other.row, index]
            self.warp(mine, self.duration * theirs / other.duration, duration, index)
            other.warp(other.duration * mine / self.duration, theirs, duration, index)
        return self

    def crossfade_from(self, other: Action, duration: float, warp: bool = False, characters: Any = None) -> Action:
        """``other.crossfade_to(self, ...)``, returning this (incoming) action."""
        other.crossfade_to(self, duration, warp, characters)
        return self

    # --- events -----------------------------------------------------------------------------

    def on_marker(self, name: str, callback: Callable[[MarkerEvent], Any]) -> Action:
        """Call ``callback(event)`` each time characters cross marker ``name`` (:class:`MarkerEvent`).

        Fires for characters where the action is enabled, unpaused and weighted, once per
        crossing: a ``dt`` spanning two loops calls it twice. Markers come from ``clip.markers``.
        """

        def deliver(marker: str, time: float, characters: IntArray, weights: FloatArray) -> None:
            callback(MarkerEvent(self, marker, time, characters, weights))

        self._player.on_marker(self.layer, name, deliver)
        return self
