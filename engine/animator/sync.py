"""Phase-locked gaits and 1-D blend spaces over an animator's actions.

A :class:`SyncGroup` keeps its actions at one normalised phase per character; the animator's
frame advances the phase (:meth:`SyncGroup.advance`, at :func:`engine.player.sync.synced_rate`,
the rule every controller syncs by) and locks the members' times to it. A :class:`BlendSpace1D`
maps one parameter (e.g. speed) to the weights of actions placed on a line
(:func:`engine.anim.blendspace.linear_weights`), usually synchronised by a group.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.anim.blendspace import linear_weights
from engine.anim.events import Loop
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array
from engine.player.sync import synced_rate

if TYPE_CHECKING:
    from engine.animator.action import Action
    from engine.animator.animator import Animator


class SyncGroup:
    """Actions kept at one normalised phase ``time / duration`` per character (gait cycles).

    The group's phase advances at the weighted mean of the members' cycle rates
    ``speed / duration`` (weighted by effective weight; an unweighted mean when all are 0), so
    walk (1 s) and run (0.7 s) blended 50/50 step together at a period between the two, with
    their feet down at the same moments. Members loop (:attr:`Loop.REPEAT`).
    """

    def __init__(self, animator: Animator, actions: Sequence[Action]) -> None:
        if len(actions) < 2:
            raise InvalidInputError(f"a sync group needs at least 2 actions, got {len(actions)}")
        for action in actions:
            if action.animator is not animator:
                raise InvalidInputError(f"{action!r} belongs to another animator")
            if not action.duration > 0.0:
                raise InvalidInputError(f"{action!r} has duration {action.duration}: no cycle to synchronise")
            if animator.sync_group_of(action) is not None:
                raise InvalidInputError(f"{action!r} is already in a sync group")
        self.actions = tuple(actions)
        self.rows = np.array([a.row for a in actions], dtype=np.intp)
        self.layers = np.array([a.layer for a in actions], dtype=np.intp)
        self.durations = np.array([a.duration for a in actions])
        for action in actions:
            action.set_loop(Loop.REPEAT)
        leader = actions[0]
        self.phase = leader.time / leader.duration % 1.0
        """Normalised phase per character ``(C,)`` in ``[0, 1)``."""
        self._player = animator.player
        self.lock()

    def advance(self, travel: FloatArray, weights: FloatArray, start: FloatArray, end: FloatArray) -> None:
        """Advance the phase by one frame and write the members' unwrapped end times into ``end``.

        ``travel`` ``(A, C)`` is the clip time each action would move on its own this frame,
        ``weights`` ``(A, C)`` the effective weights, ``start`` ``(A, C)`` the raw times before the
        frame; ``end`` ``(A, C)`` receives the members' rows.
        """
        rows = self.rows
        step = synced_rate(weights[rows], travel[rows] / self.durations[:, None])  # phase per frame
        end[rows] = start[rows] + step * self.durations[:, None]
        self.phase = (self.phase + step) % 1.0

    def lock(self) -> None:
        """Set the members' raw times exactly to the group phase (no drift, no travel)."""
        self._player.set_time(self.layers, self.phase * self.durations[:, None], fresh=False)


class BlendSpace1D:
    """A 1-D blend space: a parameter (e.g. speed) mapped to weights of actions placed on a line.

    Between two neighbouring points the weights go linearly from one to the other; beyond the
    ends the end action has weight 1. Members are played and (by default) phase-locked in a
    :class:`SyncGroup`; ``sync`` may name a subset (e.g. walk and run, not idle).

    Examples
    --------
    >>> from engine.animator import Animator
    >>> from engine.procedural.mannequin import build_mannequin
    >>> mannequin = build_mannequin()
    >>> animator = Animator(mannequin.skeleton, num_characters=2)
    >>> idle, walk, run = (animator.action(mannequin.clips[n]) for n in ("idle", "walk", "run"))
    >>> space = animator.blend_space_1d([(0.0, idle), (1.2, walk), (3.0, run)], sync=[walk, run])
    >>> space.set_parameter([0.6, 2.1]).weights.round(2).tolist()
    [[0.5, 0.0], [0.5, 0.5], [0.0, 0.5]]
    """

    def __init__(self, animator: Animator, points: Sequence[tuple[float, Action]], sync: bool | Sequence[Action]):
        if not points:
            raise InvalidInputError("a blend space needs at least one (position, action) point")
        positions = as_array([p for p, _ in points], "positions")
        if np.any(np.diff(positions) <= 0.0):
            raise InvalidInputError(f"blend space positions must be strictly increasing, got {positions.tolist()}")
        self.positions = positions
        self.actions = tuple(a for _, a in points)
        members = list(self.actions) if sync is True else list(sync or [])
        self.sync = animator.sync_group(*members) if len(members) >= 2 else None
        self.weights = np.zeros((len(self.actions), animator.num_characters))
        """Weights ``(P, C)`` last set by :meth:`set_parameter`."""
        self._animator = animator
        for action in self.actions:
            action.play()

    def set_parameter(self, value: Any, characters: Any = None, *, weight: Any = 1.0) -> BlendSpace1D:
        """Set the parameter (scalar or per selected character) and the members' weights.

        The members' weights are written with :meth:`Action.set_weight` and sum to ``weight``
        (scalar or per selected character): ramp it to fade the whole space in or out.
        """
        index = self._animator.player.select(characters)
        v = np.broadcast_to(as_array(value, "value"), index.shape)
        scale = np.broadcast_to(as_array(weight, "weight"), index.shape)
        weights = linear_weights(self.positions, v).T * scale  # (P, K)
        self.weights[:, index] = weights
        for action, w in zip(self.actions, weights, strict=True):  # loop over points
            action.set_weight(w, index)
        return self
