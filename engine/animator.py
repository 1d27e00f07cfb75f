"""Playback for game code: actions with time, speed, weight, fades and loops, over C characters.

An :class:`Animator` drives ``C`` characters that share one skeleton; each character has its
own clock and its own time, speed and weight in every action. Its state lives in arrays shaped
``(actions, C)``, so :meth:`Animator.update` has no Python loop over characters (it loops over
actions, sync groups and marker names only). The math is in :mod:`engine.anim`: ``update``
samples each weighted clip (:func:`~engine.anim.sampling.sample`), blends the override layers
(:func:`~engine.anim.blending.blend`), adds the additive ones
(:func:`~engine.anim.additive.apply_additive`), composes model matrices
(:func:`~engine.anim.local_to_model.model_from_pose`) and the skinning palette
(:func:`~engine.anim.skinning.skinning_palette`).

Semantics follow three.js's ``AnimationAction``: every method returns the action it was called
on, so calls chain; weights are multiplied by a fade factor that ``fade_in``/``fade_out``
animate linearly in the animator's time; ``crossfade_to(other, d, warp=True)`` also ramps the
two speeds so that their cycle lengths meet (the time-scale "warp"). Methods take an optional
``characters`` selection (an index, a slice, an index array or a boolean mask; ``None`` = all).

After ``update(dt)`` the game reads:

- ``local_pose``: the blended local :class:`~engine.anim.pose.Pose` ``(C, J)``;
- ``model``: model-space joint matrices ``(C, J, 4, 4)``;
- ``palette``: skinning matrices ``(C, J, 4, 4)`` (``model @ inverse_bind``);
- ``root_motion``: the root's planar travel of this update (:class:`RootMotion`), when the
  animator was built with ``root_motion=joint``.

Weights: the override actions are blended per joint with their effective weights normalised;
when a joint's total weight is below ``rest_threshold`` (default 1, as in three.js) the rest
pose makes up the difference, so a lone action fading in or out blends from or to the rest
pose. Per-joint masks weight an action per joint (an upper-body layer); the other layers keep
their weight on those joints unless they get the complementary mask.

Examples
--------
>>> import numpy as np
>>> from engine.animator import Animator, Loop
>>> from engine.procedural.mannequin import build_mannequin
>>> mannequin = build_mannequin()
>>> animator = Animator(mannequin.skeleton, num_characters=3, root_motion="root")
>>> walk = animator.action(mannequin.clips["walk"]).play()
>>> run = animator.action(mannequin.clips["run"])
>>> steps = []
>>> _ = walk.on_marker("left_foot_down", lambda event: steps.append(event.characters.tolist()))
>>> animator.update(0.5)
>>> animator.palette.shape, np.round(walk.time, 3).tolist()
((3, 25, 4, 4), [0.5, 0.5, 0.5])
>>> _ = walk.crossfade_to(run, 0.25, warp=True, characters=[2])   # only character 2 starts running
>>> for _ in range(11):
...     animator.update(1 / 20)
>>> np.round(run.effective_weight, 2).tolist(), steps
([0.0, 0.0, 1.0], [[0, 1, 2], [0, 1]])
>>> np.round(animator.root_motion.translation[:, 2], 3).tolist()   # metres forward this frame
[0.06, 0.06, 0.15]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.additive import additive_clip, apply_additive, restrict_clip
from engine.anim.blending import blend
from engine.anim.clip import Clip
from engine.anim.events import Loop, clip_time, marker_crossings, wrap_raw
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.rootmotion import Planar, planar_from_root, remove_planar, root_motion_delta
from engine.anim.sampling import CompiledClip, compile_clip, sample
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skinning_palette
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, trusted

BoolArray = npt.NDArray[np.bool_]

__all__ = ["Action", "Animator", "BlendSpace1D", "Loop", "MarkerEvent", "RootMotion", "SyncGroup"]

#: Per-action, per-character state, one row per action: name → (dtype, default value).
_FIELDS: dict[str, tuple[type, float]] = {
    "raw": (np.float64, 0.0),  # raw time (engine.anim.events): clip time after the loop mode
    "speed": (np.float64, 1.0),  # playback speed; negative plays backwards
    "weight": (np.float64, 1.0),  # user weight
    "fade": (np.float64, 1.0),  # fade factor; the effective weight is weight · fade while enabled
    "fade_from": (np.float64, 1.0),
    "fade_to": (np.float64, 1.0),
    "fade_start": (np.float64, 0.0),  # on the character's clock
    "fade_duration": (np.float64, 0.0),
    "warp_from": (np.float64, 1.0),  # speeds at the start and end of a warp
    "warp_to": (np.float64, 1.0),
    "warp_start": (np.float64, 0.0),
    "warp_duration": (np.float64, 0.0),
    "effective": (np.float64, 0.0),  # effective weight of the last update
    "fading": (np.bool_, False),
    "warping": (np.bool_, False),
    "enabled": (np.bool_, False),
    "paused": (np.bool_, False),
    "fresh": (np.bool_, True),  # the next update counts markers at its start time too
    "finished": (np.bool_, False),
}


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


@dataclass(frozen=True)
class RootMotion:
    """The root's planar travel during the last update, per character.

    ``translation`` ``(C, 3)`` is ``(x, 0, z)`` in the character's frame at the start of the
    update and ``yaw`` ``(C,)`` the turn about +Y in radians: move the character by its current
    heading applied to ``translation``, then add ``yaw`` to its heading.
    """

    translation: FloatArray
    yaw: FloatArray


@dataclass(frozen=True, eq=False)
class _RootTrack:
    """The root joint's channels of one clip, as a one-joint clip, and its end transforms."""

    compiled: CompiledClip
    skeleton: Skeleton
    first: Planar
    last: Planar

    def planar(self, times: FloatArray) -> Planar:
        pose = sample(self.compiled, self.skeleton, times)
        return planar_from_root(pose.translations[..., 0, :], pose.rotations[..., 0, :])


def _ramp_area(elapsed: FloatArray, duration: FloatArray) -> FloatArray:
    """``∫₀^elapsed clip(τ / duration, 0, 1) dτ``: the area under a 0 → 1 ramp of ``duration`` seconds.

    ``τ²/(2·duration)`` during the ramp, then ``elapsed - duration/2``; a zero-length ramp is
    a step (``max(elapsed, 0)``).
    """
    inside = np.clip(elapsed, 0.0, duration)
    safe = np.where(duration > 0.0, duration, 1.0)
    return np.where(duration > 0.0, inside * inside / (2.0 * safe), 0.0) + np.maximum(elapsed - duration, 0.0)


class Action:
    """Playback of one clip on the characters of an :class:`Animator` (make it with ``action``).

    Its state is per character; every method takes ``characters`` (``None`` = all) and returns
    the action, so calls chain: ``animator.action(clip).set_loop(Loop.ONCE).fade_in(0.2)``.
    """

    def __init__(self, animator: Animator, row: int, clip: Clip, *, additive: bool) -> None:
        self._animator = animator
        self._row = row
        self.clip = clip
        """The clip played (for additive actions: the delta clip made from the source)."""
        self.additive = additive
        """Whether the action is added on top of the blended pose instead of blended into it."""
        self._mask: FloatArray | None = None
        self.loop = Loop.REPEAT
        """Loop mode (:class:`~engine.anim.events.Loop`); set it with :meth:`set_loop`."""
        self.duration = clip.duration
        """Clip duration in seconds."""
        self._compiled = compile_clip(clip)
        self._joints: IntArray | None = None  # additive actions: the joints their delta moves
        self._delta_skeleton: Skeleton | None = None
        markers = clip.markers or {}
        for name, times in markers.items():
            if any(not 0.0 <= t <= self.duration for t in times):
                raise InvalidInputError(
                    f"marker {name!r} of clip {clip.name!r} has times {times} outside the clip [0, {self.duration}]"
                )
        self._marker_names = [name for name, times in markers.items() for _ in times]
        self._marker_times = np.array([t for times in markers.values() for t in times], dtype=np.float64)
        self._callbacks: dict[str, list[Callable[[MarkerEvent], Any]]] = {}
        self._root: _RootTrack | None = None

    def __repr__(self) -> str:
        kind = "additive " if self.additive else ""
        return f"Action({kind}{self.clip.name!r}, {self.loop.name}, {self._animator.num_characters} characters)"

    # --- per-character state ----------------------------------------------------------------

    def _get(self, name: str) -> np.ndarray:
        return self._animator._state[name][self._row]

    def _select(self, characters: Any) -> IntArray:
        return self._animator._select(characters)

    @property
    def time(self) -> FloatArray:
        """Clip time per character ``(C,)``, seconds, in ``[0, duration]`` (a copy)."""
        return clip_time(self._get("raw"), self.duration, self.loop)

    @property
    def speed(self) -> FloatArray:
        """Playback speed per character ``(C,)``; negative plays backwards (a copy)."""
        return self._get("speed").copy()

    @property
    def weight(self) -> FloatArray:
        """User weight per character ``(C,)`` (before fades; a copy)."""
        return self._get("weight").copy()

    @property
    def effective_weight(self) -> FloatArray:
        """Weight used by the last update: ``weight · fade`` where enabled, else 0 ``(C,)``."""
        return self._get("effective").copy()

    @property
    def enabled(self) -> BoolArray:
        """Whether the action is playing (possibly paused) per character ``(C,)``."""
        return self._get("enabled").copy()

    @property
    def paused(self) -> BoolArray:
        """Whether the action's time is frozen per character ``(C,)``."""
        return self._get("paused").copy()

    @property
    def finished(self) -> BoolArray:
        """Whether a :attr:`Loop.ONCE` action reached its end (its start, backwards) ``(C,)``."""
        return self._get("finished").copy()

    @property
    def mask(self) -> FloatArray | None:
        """Per-joint weights ``(J,)``, or ``None`` for every joint 1; set with :meth:`set_mask`."""
        return self._mask

    def _start_raw(self, index: IntArray) -> FloatArray:
        backwards = self._get("speed")[index] < 0.0
        return np.where(backwards, self.duration, 0.0)

    # --- playback -------------------------------------------------------------------------------

    def play(self, characters: Any = None) -> Action:
        """Start or resume playing from the current time (0 for a new action).

        :meth:`stop` and :meth:`reset` rewind to the start, or to the end when ``speed < 0``.
        """
        index = self._select(characters)
        enabled = self._get("enabled")
        self._get("fresh")[index] |= ~enabled[index]
        enabled[index] = True
        self._get("paused")[index] = False
        return self

    def stop(self, characters: Any = None) -> Action:
        """Stop, rewind to the start and drop any fade or warp in progress."""
        index = self._select(characters)
        self._get("enabled")[index] = False
        return self._rewind(index)

    def reset(self, characters: Any = None) -> Action:
        """Play from the start again: enabled, unpaused, unfinished, no fade or warp."""
        index = self._select(characters)
        self._get("enabled")[index] = True
        return self._rewind(index)

    def _rewind(self, index: IntArray) -> Action:
        self._get("paused")[index] = False
        self._get("finished")[index] = False
        self._get("fresh")[index] = True
        self._get("raw")[index] = self._start_raw(index)
        self._get("fade")[index] = 1.0
        self._get("fading")[index] = False
        self._get("warping")[index] = False
        return self

    def pause(self, characters: Any = None) -> Action:
        """Freeze the time (the pose and weight stay); :meth:`resume` or :meth:`play` continue."""
        self._get("paused")[self._select(characters)] = True
        return self

    def resume(self, characters: Any = None) -> Action:
        """Unfreeze the time after :meth:`pause`."""
        self._get("paused")[self._select(characters)] = False
        return self

    def set_time(self, time: Any, characters: Any = None) -> Action:
        """Jump to clip time ``time`` (scalar or per selected character), clamped to the clip.

        A jump crosses no markers; a marker exactly at ``time`` fires on the next update.
        """
        index = self._select(characters)
        t = np.clip(as_array(time, "time"), 0.0, self.duration)
        self._get("raw")[index] = t
        self._get("fresh")[index] = True
        self._get("finished")[index] = False
        return self

    def set_speed(self, speed: Any, characters: Any = None) -> Action:
        """Set the playback speed (1 = real time, negative = backwards); cancels a warp."""
        index = self._select(characters)
        self._get("speed")[index] = as_array(speed, "speed")
        self._get("warping")[index] = False
        return self

    def set_loop(self, loop: Loop) -> Action:
        """Set the loop mode for all characters (:class:`~engine.anim.events.Loop`)."""
        if self._animator._sync_of(self) is not None and loop != Loop.REPEAT:
            raise InvalidInputError(f"{self!r} is in a sync group, which needs Loop.REPEAT, got {Loop(loop).name}")
        raw = self._get("raw")
        raw[:] = clip_time(raw, self.duration, self.loop)  # continue from the same clip time
        self.loop = Loop(loop)
        self._animator._loops[self._row] = self.loop
        return self

    def set_mask(self, mask: Any) -> Action:
        """Weight the action per joint: ``(J,)`` non-negative (e.g. ``subtree_mask``), or ``None``."""
        self._mask = self._animator._check_mask(mask)
        if self.additive:
            self._animator._compact_additive(self)
        return self

    def set_effective_weight(self, weight: Any, characters: Any = None) -> Action:
        """Set the weight (scalar or per selected character, ``>= 0``) and stop any fade."""
        index = self._select(characters)
        w = as_array(weight, "weight")
        if np.any(w < 0.0):
            raise InvalidInputError(f"weight must be non-negative, got {float(w.min())}")
        self._get("weight")[index] = w
        self._get("fade")[index] = 1.0
        self._get("fading")[index] = False
        self._get("effective")[index] = np.where(self._get("enabled")[index], w, 0.0)
        return self

    # --- fades and warps --------------------------------------------------------------------

    def _schedule(self, prefix: str, index: IntArray, start: Any, end: Any, duration: float) -> None:
        if not (np.isfinite(duration) and duration >= 0.0):
            raise InvalidInputError(f"duration must be a finite number of seconds >= 0, got {duration}")
        self._get(f"{prefix}_from")[index] = start
        self._get(f"{prefix}_to")[index] = end
        self._get(f"{prefix}_start")[index] = self._animator.clock[index]
        self._get(f"{prefix}_duration")[index] = duration
        self._get("fading" if prefix == "fade" else "warping")[index] = True

    def fade_in(self, duration: float, characters: Any = None) -> Action:
        """Play and raise the fade factor linearly to 1 over ``duration`` seconds.

        The fade starts from the current factor of a playing action (no pop when interrupting
        a fade-out), from 0 for a stopped one.
        """
        index = self._select(characters)
        current = np.where(self._get("enabled")[index], self._get("fade")[index], 0.0)
        self.play(index)
        self._get("fade")[index] = current
        self._schedule("fade", index, current, 1.0, duration)
        return self

    def fade_out(self, duration: float, characters: Any = None) -> Action:
        """Lower the fade factor linearly to 0 over ``duration`` seconds, then stop."""
        index = self._select(characters)
        self._schedule("fade", index, self._get("fade")[index], 0.0, duration)
        return self

    def warp(self, start_speed: Any, end_speed: Any, duration: float, characters: Any = None) -> Action:
        """Ramp the speed linearly from ``start_speed`` to ``end_speed`` over ``duration``; keep the end speed."""
        index = self._select(characters)
        self._schedule("warp", index, as_array(start_speed, "start_speed"), as_array(end_speed, "end_speed"), duration)
        return self

    def crossfade_to(self, other: Action, duration: float, warp: bool = False, characters: Any = None) -> Action:
        """Fade this action out and ``other`` in over ``duration`` seconds.

        With ``warp`` the speeds ramp linearly too (three.js's time-scale warp) so that the two
        cycles keep equal periods: with speeds ``s``, ``s_other`` and durations ``D``,
        ``D_other``, this action goes from ``s`` to ``D · s_other / D_other`` (ending at
        ``other``'s period) while ``other`` goes from ``D_other · s / D`` (this one's period) to
        ``s_other``.
        """
        if other._animator is not self._animator:
            raise InvalidInputError("crossfade_to needs an action of the same animator")
        index = self._select(characters)
        self.fade_out(duration, index)
        other.fade_in(duration, index)
        if warp and self.duration > 0.0 and other.duration > 0.0:
            mine, theirs = self._get("speed")[index], other._get("speed")[index]
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
        if name not in (self.clip.markers or {}):
            raise InvalidInputError(
                f"clip {self.clip.name!r} has no marker {name!r}; it has {sorted(self.clip.markers or {})}"
            )
        self._callbacks.setdefault(name, []).append(callback)
        return self


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
            if action._animator is not animator:
                raise InvalidInputError(f"{action!r} belongs to another animator")
            if not action.duration > 0.0:
                raise InvalidInputError(f"{action!r} has duration {action.duration}: no cycle to synchronise")
            if animator._sync_of(action) is not None:
                raise InvalidInputError(f"{action!r} is already in a sync group")
        self.actions = tuple(actions)
        self.rows = np.array([a._row for a in actions], dtype=np.intp)
        self.durations = np.array([a.duration for a in actions])
        for action in actions:
            action.set_loop(Loop.REPEAT)
        leader = actions[0]
        self.phase = leader._get("raw") / leader.duration % 1.0
        """Normalised phase per character ``(C,)`` in ``[0, 1)``."""
        for action in actions[1:]:
            action._get("raw")[:] = self.phase * action.duration

    def advance(self, rate_per_action: FloatArray, weights: FloatArray) -> FloatArray:
        """Phase step ``(C,)`` of one update from the members' rates and weights ``(n, C)``."""
        total = weights.sum(axis=0)
        weighted = (weights * rate_per_action).sum(axis=0) / np.where(total > 0.0, total, 1.0)
        return np.where(total > 0.0, weighted, rate_per_action.mean(axis=0))


class BlendSpace1D:
    """A 1-D blend space: a parameter (e.g. speed) mapped to weights of actions placed on a line.

    Between two neighbouring points the weights go linearly from one to the other; beyond the
    ends the end action has weight 1. Members are played and (by default) phase-locked in a
    :class:`SyncGroup`; ``sync`` may name a subset (e.g. walk and run, not idle).

    Examples
    --------
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

        The members' weights are written with :meth:`Action.set_effective_weight` and sum to
        ``weight`` (scalar or per selected character): ramp it to fade the whole space in or out.
        """
        index = self._animator._select(characters)
        v = np.broadcast_to(as_array(value, "value"), index.shape)
        scale = np.broadcast_to(as_array(weight, "weight"), index.shape)
        count = len(self.actions)
        weights = np.zeros((count, index.size))
        if count == 1:
            weights[0] = 1.0
        else:
            lo = np.clip(np.searchsorted(self.positions, v, side="right") - 1, 0, count - 2)
            t = np.clip((v - self.positions[lo]) / (self.positions[lo + 1] - self.positions[lo]), 0.0, 1.0)
            columns = np.arange(index.size)
            weights[lo, columns] = 1.0 - t
            weights[lo + 1, columns] += t
        weights *= scale
        self.weights[:, index] = weights
        for action, w in zip(self.actions, weights, strict=True):  # loop over points
            action.set_effective_weight(w, index)
        return self


class Animator:
    """Plays clips on ``num_characters`` characters sharing ``skeleton`` (see the module docstring).

    Parameters
    ----------
    skeleton
        The characters' skeleton; every clip must target its ``J`` joints.
    num_characters
        ``C``, the number of characters driven together.
    root_motion
        Name or index of the joint whose horizontal translation and yaw become
        :attr:`root_motion` deltas (that joint then plays in place), or ``None``.
    rest_threshold
        Total weight per joint below which the rest pose fills in (see
        :func:`~engine.anim.blending.blend`); default 1.

    Attributes
    ----------
    clock
        Each character's animator time ``(C,)``, seconds (fades and warps run on it).
    local_pose, model, palette
        Outputs of the last :meth:`update`: :class:`~engine.anim.pose.Pose` ``(C, J)``, model
        matrices ``(C, J, 4, 4)`` and skinning palette ``(C, J, 4, 4)``. The local pose's arrays
        and the matrices are written in place by every update (no allocation per frame): copy them
        to keep them. Their memory is batch-innermost (see :mod:`engine.anim.local_to_model`).
    root_motion
        :class:`RootMotion` of the last update (zeros without a root-motion joint).
    """

    def __init__(
        self,
        skeleton: Skeleton,
        num_characters: int = 1,
        *,
        root_motion: str | int | None = None,
        rest_threshold: float = 1.0,
    ) -> None:
        if int(num_characters) < 1:
            raise InvalidInputError(f"num_characters must be at least 1, got {num_characters}")
        if not rest_threshold > 0.0:
            raise InvalidInputError(f"rest_threshold must be positive, got {rest_threshold}")
        self.skeleton = skeleton
        self.num_characters = int(num_characters)
        self.rest_threshold = float(rest_threshold)
        self.root_joint = None if root_motion is None else self._joint_index(root_motion)
        self.clock = np.zeros(self.num_characters)
        self._actions: list[Action] = []
        self._by_clip: dict[tuple[int, bool], tuple[Clip, Action]] = {}
        self._loops = np.zeros(0, dtype=np.intp)
        self._durations = np.zeros(0)
        self._state: dict[str, np.ndarray] = {
            name: np.zeros((0, self.num_characters), dtype=dtype) for name, (dtype, _) in _FIELDS.items()
        }
        self._groups: list[SyncGroup] = []
        self._slots: list[Pose] = []
        self._buffers: tuple[FloatArray, FloatArray, FloatArray] | None = None
        self._all = np.arange(self.num_characters)
        joints, count = skeleton.num_joints, self.num_characters
        with trusted():  # filled with the rest pose just below
            self.local_pose = Pose(*(np.empty((k, joints, count)).transpose(2, 1, 0) for k in (3, 4, 3)))
        self.local_pose.translations[:] = skeleton.rest_translations
        self.local_pose.rotations[:] = skeleton.rest_rotations
        self.local_pose.scales[:] = skeleton.rest_scales
        self.model = model_from_pose(skeleton, self.local_pose)
        self.palette = skinning_palette(skeleton, self.model)
        self.root_motion = RootMotion(np.zeros((self.num_characters, 3)), np.zeros(self.num_characters))

    def __repr__(self) -> str:
        return f"Animator({self.num_characters} characters, {len(self._actions)} actions, {self.skeleton!r})"

    @property
    def actions(self) -> tuple[Action, ...]:
        """Every action made so far, in creation (= additive layering) order."""
        return tuple(self._actions)

    def _joint_index(self, joint: str | int) -> int:
        if isinstance(joint, str):
            return self.skeleton.index(joint)
        if not 0 <= int(joint) < self.skeleton.num_joints:
            raise SkeletonMismatchError(f"joint index {joint} is out of range for {self.skeleton.num_joints} joints")
        return int(joint)

    def _select(self, characters: Any) -> IntArray:
        if characters is None:
            return self._all
        try:
            return np.atleast_1d(self._all[characters])
        except (IndexError, TypeError) as exc:
            raise InvalidInputError(
                f"characters must index {self.num_characters} characters (int, slice, indices or mask), "
                f"got {characters!r}: {exc}"
            ) from None

    def _sync_of(self, action: Action) -> SyncGroup | None:
        return next((g for g in self._groups if action in g.actions), None)

    # --- building ---------------------------------------------------------------------------

    def action(
        self,
        clip: Clip,
        *,
        additive: bool = False,
        reference: Pose | None = None,
        mask: Any = None,
    ) -> Action:
        """The action playing ``clip`` (made on first call, the same object afterwards).

        Parameters
        ----------
        clip
            A clip of this animator's skeleton.
        additive
            Add the clip on top of the blended pose as a delta against ``reference`` (``None``:
            the clip's first frame, see :func:`~engine.anim.additive.additive_clip`) instead of
            blending it in.
        reference
            Reference pose ``(J,)`` of an additive action.
        mask
            Per-joint weights ``(J,)`` (:func:`~engine.anim.blending.subtree_mask`).

        Raises
        ------
        SkeletonMismatchError
            A clip or mask for a different number of joints.
        """
        key = (id(clip), additive)
        if key in self._by_clip:
            return self._by_clip[key][1]
        joints = self.skeleton.num_joints
        if clip.num_targets != joints:
            raise SkeletonMismatchError(
                f"clip {clip.name!r} targets {clip.num_targets} joints but the animator's skeleton has {joints}"
            )
        weights = self._check_mask(mask)
        played = additive_clip(clip, self.skeleton, reference) if additive else clip
        action = Action(self, len(self._actions), played, additive=additive)
        action.set_mask(weights)
        if self.root_joint is not None and not additive:
            action._root = self._root_track(played)
        for name, (dtype, default) in _FIELDS.items():
            row: np.ndarray = np.full((1, self.num_characters), default, dtype=dtype)
            self._state[name] = np.concatenate((self._state[name], row))
        self._loops = np.append(self._loops, int(action.loop))
        self._durations = np.append(self._durations, action.duration)
        self._actions.append(action)
        self._by_clip[key] = (clip, action)  # holding the clip keeps its id unique
        self._slots = []  # layer buffers are re-made for the new action count
        return action

    def _check_mask(self, mask: Any) -> FloatArray | None:
        if mask is None:
            return None
        joints = self.skeleton.num_joints
        weights = as_array(mask, "mask")
        if weights.shape != (joints,):
            raise SkeletonMismatchError(f"mask must have shape ({joints},) for this skeleton, got {weights.shape}")
        if np.any(weights < 0.0):
            raise InvalidInputError(f"mask must be non-negative, got {float(weights.min())}")
        return weights

    def _compact_additive(self, action: Action) -> None:
        """Sample an additive clip only on the joints it moves: elsewhere its delta is the identity."""
        moved = {c.target for c in action.clip.channels}
        if action.mask is not None:
            moved &= set(np.nonzero(action.mask)[0].tolist())
        joints = np.array(sorted(moved), dtype=np.intp)
        action._joints = joints
        action._delta_skeleton = Skeleton([self.skeleton.names[j] for j in joints], np.full(joints.size, -1))
        action._compiled = compile_clip(restrict_clip(action.clip, joints))

    def _root_track(self, clip: Clip) -> _RootTrack:
        root = self.root_joint
        assert root is not None
        one = Skeleton(
            [self.skeleton.names[root]],
            [-1],
            self.skeleton.rest_translations[root : root + 1],
            self.skeleton.rest_rotations[root : root + 1],
            self.skeleton.rest_scales[root : root + 1],
        )
        compiled = compile_clip(restrict_clip(clip, [root]))
        ends = sample(compiled, one, np.array([0.0, clip.duration]))
        planar = planar_from_root(ends.translations[:, 0], ends.rotations[:, 0])
        first = Planar(planar.yaw[0], planar.w[0])
        last = Planar(planar.yaw[1], planar.w[1])
        return _RootTrack(compiled, one, first, last)

    def sync_group(self, *actions: Action) -> SyncGroup:
        """Phase-lock ``actions`` (:class:`SyncGroup`); their phase starts at the first one's."""
        group = SyncGroup(self, actions)
        self._groups.append(group)
        return group

    def blend_space_1d(
        self, points: Sequence[tuple[float, Action]], *, sync: bool | Sequence[Action] = True
    ) -> BlendSpace1D:
        """A :class:`BlendSpace1D` over ``(position, action)`` points, strictly increasing."""
        return BlendSpace1D(self, points, sync)

    # --- the frame ----------------------------------------------------------------------------

    def update(self, dt: Any) -> None:
        """Advance every action by ``dt`` seconds (scalar or ``(C,)``, ``>= 0``) and pose the characters.

        Order: clocks, fades and warps (evaluated at the new clock), effective weights, times
        (sync groups, loop modes), sampling of weighted actions, blend, additive layers, model
        matrices, palette, then marker callbacks.
        """
        step = np.broadcast_to(as_array(dt, "dt"), (self.num_characters,))
        if np.any(step < 0.0):
            raise InvalidInputError(f"dt must be >= 0 seconds (play backwards with a negative speed), got {dt}")
        with trusted():
            previous = self.clock
            self.clock = previous + step
            state = self._state
            playing = self._advance_fades(state, previous, step)
            running = state["enabled"] & ~state["paused"]
            travel = self._advance_warps(state, previous, playing)
            speed = state["speed"] * running  # the speed at the end of the step: its direction
            start = state["raw"].copy()
            end = start + travel
            self._advance_groups(state, travel, end)
            loops_arr = self._loops[:, None]
            durations = self._durations[:, None]
            once = loops_arr == Loop.ONCE
            end = np.where(once, np.clip(end, 0.0, durations), end)
            at_end = np.where(speed > 0.0, end >= durations, end <= 0.0)
            state["finished"] = np.where(once & (speed != 0.0), at_end, state["finished"])  # speed 0: unchanged
            state["raw"], wraps = wrap_raw(end, durations, loops_arr)
            for group in self._groups:  # lock members exactly to the group phase (no drift)
                state["raw"][group.rows] = group.phase * group.durations[:, None]
            times = clip_time(state["raw"], durations, loops_arr)
            self._pose(state, times, start, wraps)
            self._fire_markers(state, start, end, running)
            state["fresh"] &= ~running

    def _advance_fades(self, state: dict[str, np.ndarray], previous: FloatArray, step: FloatArray) -> FloatArray:
        """Fade factors and effective weights at the new clock; the seconds ``(A, C)`` each action plays this step.

        An action plays the whole step when enabled and unpaused; one whose fade-out ends during
        the step plays until that moment, then stops.
        """
        playing = np.where(state["enabled"] & ~state["paused"], step, 0.0)
        fading = state["fading"]
        if fading.any():
            duration = state["fade_duration"]
            elapsed = self.clock - state["fade_start"]
            progress = np.clip(np.divide(elapsed, duration, out=np.ones_like(elapsed), where=duration > 0.0), 0.0, 1.0)
            value = state["fade_from"] + progress * (state["fade_to"] - state["fade_from"])
            state["fade"] = np.where(fading, value, state["fade"])
            done = fading & (progress >= 1.0)
            faded_out = done & (state["fade_to"] <= 0.0)
            until_end = np.clip(state["fade_start"] + duration - previous, 0.0, step)
            playing = np.where(faded_out, np.minimum(playing, until_end), playing)
            state["enabled"] &= ~faded_out  # a finished fade-out stops the action
            state["fade"] = np.where(faded_out, 1.0, state["fade"])
            state["fading"] = fading & ~done
        state["effective"] = np.where(state["enabled"], state["weight"] * state["fade"], 0.0)
        return playing

    def _advance_warps(self, state: dict[str, np.ndarray], previous: FloatArray, playing: FloatArray) -> FloatArray:
        """Speeds at the new clock; the clip seconds ``(A, C)`` each action moves while it plays this step.

        A warp ramps the speed linearly in time, so the distance is the exact integral of the
        ramp over the seconds played (``∫ v dτ``), not the end speed times ``dt``: the same at
        any frame rate.
        """
        speed = state["speed"]
        warping = state["warping"]
        if not warping.any():
            return speed * playing
        duration = state["warp_duration"]
        low, high = previous - state["warp_start"], previous + playing - state["warp_start"]
        ramp_part = _ramp_area(high, duration) - _ramp_area(low, duration)  # ∫ progress dτ over the step
        ramped = state["warp_from"] * playing + (state["warp_to"] - state["warp_from"]) * ramp_part
        travel = np.where(warping, ramped, speed * playing)
        elapsed = self.clock - state["warp_start"]
        progress = np.clip(np.divide(elapsed, duration, out=np.ones_like(elapsed), where=duration > 0.0), 0.0, 1.0)
        value = state["warp_from"] + progress * (state["warp_to"] - state["warp_from"])
        state["speed"] = np.where(warping, value, speed)
        state["warping"] = warping & (progress < 1.0)
        return travel

    def _advance_groups(self, state: dict[str, np.ndarray], travel: FloatArray, end: FloatArray) -> None:
        for group in self._groups:  # loop over sync groups
            phase_step = group.advance(travel[group.rows] / group.durations[:, None], state["effective"][group.rows])
            end[group.rows] = state["raw"][group.rows] + phase_step * group.durations[:, None]
            group.phase = (group.phase + phase_step) % 1.0

    def _layer_slots(self) -> list[Pose]:
        if not self._slots:
            # Batch-innermost storage (actions, k, J, C), as sample() and blend() prefer it.
            layers, joints, count = len(self._actions), self.skeleton.num_joints, self.num_characters
            t, r, s = (np.empty((layers, k, joints, count)).transpose(0, 3, 2, 1) for k in (3, 4, 3))
            self._buffers = (t, r, s)
            with trusted():
                self._slots = [Pose(t[k], r[k], s[k]) for k in range(layers)]
        return self._slots

    def _pose(self, state: dict[str, np.ndarray], times: FloatArray, start: FloatArray, wraps: FloatArray) -> None:
        slots = self._layer_slots()
        effective = state["effective"]
        active = [a for a in self._actions if not a.additive and effective[a._row].any()]
        root = self.root_joint
        motion = Planar(np.zeros(self.num_characters), np.zeros(self.num_characters, dtype=np.complex128))
        root_weight = np.zeros(self.num_characters)
        for k, action in enumerate(active):  # loop over weighted layers
            pose = sample(action._compiled, self.skeleton, times[action._row], out=slots[k])
            if root is not None and action._root is not None:
                delta = self._root_delta(action, start[action._row], times[action._row], wraps[action._row])
                w = effective[action._row] * (1.0 if action.mask is None else action.mask[root])
                motion = Planar(motion.yaw + w * delta.yaw, motion.w + w * delta.w)
                root_weight += w
                pose.translations[:, root], pose.rotations[:, root] = remove_planar(
                    pose.translations[:, root], pose.rotations[:, root]
                )
        if active:
            assert self._buffers is not None
            n = len(active)
            rows = [a._row for a in active]
            masks = None
            if any(a.mask is not None for a in active):
                masks = np.stack([np.ones(self.skeleton.num_joints) if a.mask is None else a.mask for a in active])
            stacked = Pose(self._buffers[0][:n], self._buffers[1][:n], self._buffers[2][:n])
            local = blend(
                stacked, effective[rows], masks, rest=self.skeleton, threshold=self.rest_threshold, out=self.local_pose
            )
        else:
            local = self.local_pose
            local.translations[:] = self.skeleton.rest_translations
            local.rotations[:] = self.skeleton.rest_rotations
            local.scales[:] = self.skeleton.rest_scales
        for action in self._actions:  # additive layers, in creation order
            if action.additive and action._joints is not None and action._joints.size and effective[action._row].any():
                joints, skeleton = action._joints, action._delta_skeleton
                assert skeleton is not None
                delta_pose = sample(action._compiled, skeleton, times[action._row])
                moved = apply_additive(
                    local[:, joints],
                    delta_pose,
                    effective[action._row],
                    None if action.mask is None else action.mask[joints],
                )
                local.translations[:, joints] = moved.translations
                local.rotations[:, joints] = moved.rotations
                local.scales[:, joints] = moved.scales
        norm = np.maximum(root_weight, self.rest_threshold)
        self.root_motion = RootMotion(Planar(motion.yaw / norm, motion.w / norm).translation, motion.yaw / norm)
        model_from_pose(self.skeleton, local, out=self.model)
        skinning_palette(self.skeleton, self.model, out=self.palette)

    def _root_delta(self, action: Action, start: FloatArray, times: FloatArray, wraps: FloatArray) -> Planar:
        track = action._root
        assert track is not None
        begin_time = clip_time(start, action.duration, action.loop)
        both = track.planar(np.concatenate((begin_time, times)))
        count = self.num_characters
        begin = Planar(both.yaw[:count], both.w[:count])
        finish = Planar(both.yaw[count:], both.w[count:])
        loops = wraps if action.loop == Loop.REPEAT else 0.0
        delta = root_motion_delta(begin, finish, track.first, track.last, loops)
        yaw = (delta.yaw + np.pi) % (2.0 * np.pi) - np.pi
        return Planar(yaw, delta.w)

    def _fire_markers(
        self, state: dict[str, np.ndarray], start: FloatArray, end: FloatArray, running: np.ndarray
    ) -> None:
        for action in self._actions:  # loop over actions with callbacks, then over marker times
            if not action._callbacks:
                continue
            row = action._row
            eligible = running[row] & (state["effective"][row] > 0.0)
            if not eligible.any():
                continue
            counts = marker_crossings(
                start[row],
                end[row],
                action._marker_times,
                action.duration,
                action.loop,
                include_start=state["fresh"][row],
            )
            counts = counts * eligible[:, None]
            for m, name in enumerate(action._marker_names):
                callbacks = action._callbacks.get(name)
                if not callbacks:
                    continue
                for crossing in range(1, int(counts[:, m].max(initial=0)) + 1):  # one call per crossing
                    characters = np.nonzero(counts[:, m] >= crossing)[0]
                    event = MarkerEvent(
                        action, name, float(action._marker_times[m]), characters, state["effective"][row][characters]
                    )
                    for callback in callbacks:
                        callback(event)
