"""The motion-matching controller: characters moved by searching a database, one more controller of the player.

:class:`MatchingController` drives ``C`` characters of one :class:`~engine.player.Player` from a
:class:`~engine.motion_matching.database.Database`. It decides clip times and nothing else: the
player samples, blends, runs the transition stage and composes. Every character plays the
database's :meth:`~engine.motion_matching.database.Database.timeline` (one layer for everyone,
weight 1), somewhere in one range. Each frame (:meth:`~MatchingController.control`, after
:meth:`~engine.player.Player.begin_frame`):

1. **the simulation**: each character's desired root follows the request (desired velocity and
   facing) through the critically damped springs of
   :func:`~engine.motion_matching.trajectory.advance_trajectory`, kept within
   ``clamp_distance`` and ``clamp_angle`` of the character;
2. **the clock**: the layer time moves on by ``dt``, held at the range's last frame
   (:meth:`~engine.player.Player.advance_layers`);
3. **the root**: the character's root moves by the database's root track over that time, plus
   the switch's decaying root-velocity offset, then toward the simulation
   (:mod:`engine.motion_matching.motion`);
4. **the search**, for the characters that are due: every ``interval`` seconds (staggered over
   the crowd), at once when the request moved by more than ``sharp_speed`` or ``sharp_turn``
   since the character's last search, and when its frame is no longer searchable (near a
   range's end) and the range would end before its next scheduled search. The query is the
   current pose and velocity — the player's output (:meth:`~engine.player.Player.capture`,
   transition included) or, with ``pose_from="database"``, the features of the frame playing
   (Holden's shortcut) — and the trajectory the springs predict, seen from the character's root
   (:func:`~engine.motion_matching.trajectory.query_features`); one batched
   :func:`~engine.motion_matching.search.search` for all of them, with the continuing frame
   (the one playing now) favoured by ``bias``;
5. **the switch**: a character whose best frame is another one jumps there through the
   player's transition stage (``"spring"``: Holden's inertializer, half-life 0.1 s; or
   ``"inertialize"``, Bollo's quintic over ``duration``), from the output it shows with its
   velocity (a switch during a switch starts from what the first one shows), its root velocity
   inertialized alike (:meth:`~engine.player.Player.start_transition`).

:meth:`~MatchingController.update` runs a whole frame (``begin_frame``, ``control``, ``pose``, the
stages, ``finalize``). The player's root-motion joint must be ``None``: the controller places
the root (:attr:`~MatchingController.positions`, :attr:`~MatchingController.yaws`; world =
``T(position) · R_y(yaw) ·`` the player's model space).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from engine.anim.events import Loop
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, trusted
from engine.motion_matching.controller_types import POSE_SOURCES, SWITCH_KINDS, ControllerOptions, SearchRecord
from engine.motion_matching.database import Database
from engine.motion_matching.features import feature_vectors, pose_features, trajectory_features
from engine.motion_matching.motion import (
    adjust_roots,
    clamp_simulation,
    move_roots,
    track_travel,
    track_velocity,
)
from engine.motion_matching.search import search
from engine.motion_matching.trajectory import (
    Trajectory,
    advance_trajectory,
    horizon_times,
    predict_trajectory,
    wrapped_angle,
)
from engine.player import Capture, Player

__all__ = ["POSE_SOURCES", "SWITCH_KINDS", "TIMER_TOLERANCE", "ControllerOptions", "MatchingController", "SearchRecord"]

#: A search timer within this many seconds of 0 is due (``k`` steps of ``interval / k`` add up to it in rounding).
TIMER_TOLERANCE = 1e-9


class MatchingController:
    """Characters of one player moved by motion matching over ``database`` (see the module docstring).

    Parameters
    ----------
    database
        The database searched and played.
    num_characters
        ``C`` (ignored when ``player`` is given: its characters).
    player
        The player to drive (its skeleton the database's joints, no root-motion joint; other
        controllers may share it), or ``None``: a new one.
    positions, yaws
        ``(C, 3)`` and ``(C,)`` the characters' roots at the start (default: the origin, facing ``+Z``).
    options
        :class:`ControllerOptions`.
    threads
        Threads of the compiled search (default: the player's, :attr:`engine.player.Player.threads`).

    Attributes
    ----------
    player
        The :class:`~engine.player.Player`.
    layer
        The player layer playing the timeline.
    positions, yaws
        ``(C, 3)`` and ``(C,)`` each root in the world (do not write: :meth:`place`).
    trajectory
        The simulation (:class:`~engine.motion_matching.trajectory.Trajectory`).
    ranges
        ``(C,)`` the range each character plays.
    costs
        ``(C,)`` the cost of each character's last search (``inf`` before one found a frame).
    searches, switches
        ``(C,)`` how many searches and switches each character made.
    last
        :class:`SearchRecord` of the last frame.
    """

    def __init__(
        self,
        database: Database,
        num_characters: int = 1,
        *,
        player: Player | None = None,
        positions: Any = None,
        yaws: Any = None,
        options: ControllerOptions | None = None,
        threads: int | None = None,
    ) -> None:
        if not isinstance(database, Database):
            raise InvalidInputError(f"database must be a motion-matching Database, got {type(database).__name__}")
        self.database = database
        self.options = options or ControllerOptions()
        if player is None:
            player = Player(database.skeleton, num_characters)
        _check_player(player, database)
        self.player = player
        self.threads = player.threads if threads is None else threads
        count = player.num_characters
        self.layer = player.add_layer(database.timeline(), loop=Loop.ONCE)
        player.set_weights(self.layer, 1.0)
        self.positions = np.zeros((count, 3)) if positions is None else _shaped(positions, (count, 3), "positions")
        self.yaws = np.zeros(count) if yaws is None else _shaped(yaws, (count,), "yaws")
        self.positions[:, 1] = 0.0
        self.trajectory = Trajectory.at_rest(self.positions, self.yaws)
        self.request_velocity = np.zeros((count, 3))
        self.request_yaw = self.yaws.copy()
        self._searched_velocity = np.zeros((count, 3))
        self._searched_yaw = self.yaws.copy()
        self._timers = self.options.interval * (np.arange(count) + 1.0) / count
        self.ranges = np.zeros(count, dtype=np.intp)
        self.costs = np.full(count, np.inf)
        self.searches = np.zeros(count, dtype=np.int64)
        self.switches = np.zeros(count, dtype=np.int64)
        self.last = SearchRecord()
        horizons = horizon_times(database)
        self._horizons = horizons
        self._pose_width = min(g.start for g in database.layout.groups if g.name.startswith("trajectory_"))
        self._start(np.arange(count))

    # --- queries -------------------------------------------------------------------------------

    @property
    def num_characters(self) -> int:
        """``C``."""
        return self.player.num_characters

    @property
    def frame_positions(self) -> FloatArray:
        """``(C,)`` each character's position in the database, in frames (fractional: between two frames)."""
        return self.player.raw_times[self.layer] * self.database.fps

    @property
    def frames(self) -> IntArray:
        """``(C,)`` the frame each character plays now (the nearest to its time, within its range)."""
        db = self.database
        nearest = np.rint(self.frame_positions).astype(np.intp)
        return np.clip(nearest, db.range_starts[self.ranges], db.range_stops[self.ranges] - 1)

    def desired_trajectory(self, characters: Any = None) -> tuple[FloatArray, FloatArray]:
        """Where the simulation goes if the request holds: world positions ``(K, H, 3)`` and yaws ``(K, H)``."""
        chosen = self.player.select(characters)
        state = _take(self.trajectory, chosen)
        return predict_trajectory(
            state,
            self.request_velocity[chosen],
            self.request_yaw[chosen],
            self._horizons,
            velocity_half_life=self.options.velocity_half_life,
            facing_half_life=self.options.facing_half_life,
        )

    def matched_trajectory(self, characters: Any = None) -> FloatArray:
        """Where the frames playing go: world ``(K, H, 3)`` root positions at the horizons, from each root.

        The trajectory columns of the playing frames' raw features (the database's own future),
        placed at the characters' roots: what the animation will do if nothing switches.
        """
        chosen = self.player.select(characters)
        group = self.database.layout.group("trajectory_positions")
        local = self.database.features[self.frames[chosen], group.start : group.stop].reshape(chosen.size, -1, 2)
        yaws = self.yaws[chosen][:, None]
        c, s = np.cos(yaws), np.sin(yaws)
        x, z = local[..., 0], local[..., 1]
        world = np.stack((c * x + s * z, np.zeros_like(x), -s * x + c * z), axis=-1)
        return self.positions[chosen][:, None, :] + world

    def place(self, characters: Any, positions: Any, yaws: Any) -> None:
        """Put ``characters``' roots (and their simulations) at ``positions`` ``(K, 3)`` facing ``yaws`` ``(K,)``."""
        chosen = self.player.select(characters)
        where = _shaped(positions, (chosen.size, 3), "positions")
        facing = _shaped(yaws, (chosen.size,), "yaws")
        self.positions[chosen] = where * [1.0, 0.0, 1.0]
        self.yaws[chosen] = facing
        state = self.trajectory
        moved = state.positions.copy()
        moved[chosen] = self.positions[chosen]
        turned = state.yaws.copy()
        turned[chosen] = facing
        self.trajectory = replace(state, positions=moved, yaws=turned)

    # --- the frame -----------------------------------------------------------------------------

    def update(self, dt: float, desired_velocity: Any, desired_yaw: Any) -> None:
        """A whole frame of ``dt`` seconds: begin it, :meth:`control`, then the player's ``end_frame``."""
        player = self.player
        player.begin_frame(dt)
        self.control(desired_velocity, desired_yaw)
        player.end_frame()

    def control(self, desired_velocity: Any, desired_yaw: Any) -> None:
        """Decide the frame (module docstring, steps 1-5), after the player's ``begin_frame``.

        Parameters
        ----------
        desired_velocity
            ``(C, 3)`` or ``(3,)`` the velocity asked for, world axes (its ``y`` is ignored).
        desired_yaw
            ``(C,)`` or scalar: the facing asked for, radians about ``+Y`` (``0`` faces ``+Z``).
        """
        player = self.player
        steps = player.frame_step
        dt = float(steps[0])
        if np.any(steps != dt):
            raise InvalidInputError("a motion-matching controller needs one dt for all its characters this frame")
        count = self.num_characters
        velocity = as_array(desired_velocity, "desired_velocity", (3,))
        yaw = as_array(desired_yaw, "desired_yaw")
        if velocity.shape not in ((3,), (count, 3)) or yaw.shape not in ((), (count,)):
            raise InvalidInputError(
                f"desired_velocity must be (3,) or ({count}, 3) and desired_yaw () or ({count},), got "
                f"{velocity.shape} and {yaw.shape}"
            )
        self.request_velocity = np.broadcast_to(velocity, (count, 3)) * [1.0, 0.0, 1.0]
        self.request_yaw = self.yaws + wrapped_angle(np.broadcast_to(yaw, (count,)) - self.yaws)
        with trusted():  # the request is checked: the rest is the controller's own state
            self._simulate(dt)
            before = self.frame_positions
            self._advance(dt)
            self._move(before, dt)
            self._search(self._due(dt))

    def _simulate(self, dt: float) -> None:
        """Step 1: the simulation follows the request, then stays near the character."""
        options = self.options
        state = advance_trajectory(
            self.trajectory,
            self.request_velocity,
            self.request_yaw,
            dt,
            velocity_half_life=options.velocity_half_life,
            facing_half_life=options.facing_half_life,
        )
        self.trajectory = state

    def _advance(self, dt: float) -> None:
        """Step 2: the layer time moves on by ``dt``, held at each range's last frame."""
        db = self.database
        last = (db.range_stops[self.ranges] - 1) / db.fps
        end = np.minimum(self.player.raw_times[self.layer] + dt, last)
        self.player.advance_layers(self.layer, end[None, :], True)

    def _move(self, before: FloatArray, dt: float) -> None:
        """Step 3: the roots move by the track and the switch's offset, then toward the simulation."""
        player, options = self.player, self.options
        delta = track_travel(self.database, before, self.frame_positions, self.ranges)
        translation, turn = delta.translation, delta.yaw.copy()
        busy = player.transitions.active()
        if busy.size:
            extra = player.transitions.travel(busy, player.frame_start[busy], player.clock[busy])
            translation[busy, 0] += extra[:, 0]
            translation[busy, 2] += extra[:, 1]
            turn[busy] += extra[:, 2]
        move_roots(self.positions, self.yaws, translation, turn)
        state = self.trajectory
        if options.adjust_ratio > 0.0 and dt > 0.0:
            adjust_roots(
                self.positions,
                self.yaws,
                state.positions,
                state.yaws,
                np.linalg.norm(translation, axis=-1),
                turn,
                dt,
                position_half_life=options.adjust_half_life,
                yaw_half_life=options.adjust_yaw_half_life,
                ratio=options.adjust_ratio,
            )
        clamped, clamped_yaws = clamp_simulation(
            state.positions, state.yaws, self.positions, self.yaws, options.clamp_distance, options.clamp_angle
        )
        self.trajectory = replace(state, positions=clamped, yaws=clamped_yaws)

    def _due(self, dt: float) -> IntArray:
        """Step 4's choice: the characters searching this frame."""
        options, db = self.options, self.database
        self._timers -= dt
        scheduled = self._timers <= TIMER_TOLERANCE
        self._timers[scheduled] += options.interval
        np.maximum(self._timers, 0.0, out=self._timers)  # a frame longer than the interval searches once
        speed = np.linalg.norm(self.request_velocity - self._searched_velocity, axis=-1) > options.sharp_speed
        turn = np.abs(wrapped_angle(self.request_yaw - self._searched_yaw)) > options.sharp_turn
        stuck = ~db.searchable[self.frames] & (self._runway() < self._timers)  # it would run out before its next search
        return np.flatnonzero(scheduled | speed | turn | stuck)  # a forced search keeps the schedule's phase

    def _search(self, due: IntArray) -> None:
        """Steps 4 and 5 for characters ``due``: one batched search, then the switches."""
        if not due.size:
            self.last = SearchRecord()
            return
        db, options = self.database, self.options
        current = self.frames[due]
        source: Capture | None = None
        if options.pose_from == "player":
            source = self.player.capture(due)
            root = self._root_velocity(due, leaving=False) + source.root
            pose_part = pose_features(db.layout, db.skeleton, source.pose, source.velocity, _spatial(root), root[:, 2])
        else:
            pose_part = db.features[current, : self._pose_width]
        future, future_yaws = self.desired_trajectory(due)
        trajectory_part = trajectory_features(db.layout, self.positions[due], self.yaws[due], future, future_yaws)
        queries = db.normalize(feature_vectors(pose_part, trajectory_part))
        play_on = self._runway(due) > self._timers[due]  # may play on into the end margin until its next search
        found = search(
            db,
            queries,
            current=current,
            bias=options.bias,
            include=list(options.include) if options.include else None,
            exclude=list(options.exclude) if options.exclude else None,
            method=options.method,
            threads=self.threads,
            near=round(options.min_jump * db.fps),
            play_on=play_on,
        )
        self.searches[due] += 1
        self._searched_velocity[due] = self.request_velocity[due]
        self._searched_yaw[due] = self.request_yaw[due]
        ok = found.frames >= 0
        self.costs[due[ok]] = found.costs[ok]
        switched = ok & (found.frames != current)
        self.last = SearchRecord(due, queries, current, found.frames, found.costs, switched, play_on)
        if switched.any():
            self._switch(due[switched], found.frames[switched], None if source is None else source.take(switched))

    def _switch(self, characters: IntArray, frames: IntArray, source: Capture | None) -> None:
        """Step 5: ``characters`` jump to database ``frames`` through the transition stage."""
        player, options, db = self.player, self.options, self.database
        if source is None:
            source = player.capture(characters)
        source.root = source.root + self._root_velocity(characters, leaving=False)
        self.ranges[characters] = db.frame_range(frames)
        player.set_time(self.layer, frames / db.fps, characters)
        rates = player.rates[:, characters]
        rates[self.layer] = 1.0  # the new frame plays on at speed 1 (a character held at a range's end had 0)
        target = player.capture(characters, rates=rates, stage=False, leaving=True)
        target.root = self._root_velocity(characters, leaving=True)
        player.start_transition(characters, options.kind, options.duration, source, target, half_life=options.half_life)
        self.switches[characters] += 1

    def _runway(self, characters: Any = slice(None)) -> FloatArray:
        """Seconds of motion ``characters`` have before their ranges end."""
        db = self.database
        return (db.range_stops[self.ranges[characters]] - 1 - self.frames[characters]) / db.fps

    def _root_velocity(self, characters: IntArray, *, leaving: bool) -> FloatArray:
        """``(K, 3)`` the track's planar velocity where ``characters`` are, arriving or leaving."""
        return track_velocity(self.database, self.frame_positions[characters], self.ranges[characters], leaving=leaving)

    def _start(self, characters: IntArray) -> None:
        """Put ``characters`` at the frame that best matches standing still where they are (no transition)."""
        db = self.database
        future = np.repeat(self.positions[characters][:, None, :], self._horizons.size, axis=1)
        future_yaws = np.repeat(self.yaws[characters][:, None], self._horizons.size, axis=1)
        roots, yaws = self.positions[characters], self.yaws[characters]
        trajectory_part = trajectory_features(db.layout, roots, yaws, future, future_yaws)
        pose_part = np.broadcast_to(db.offset[: self._pose_width], (characters.size, self._pose_width))
        queries = db.normalize(feature_vectors(pose_part, trajectory_part))
        include = list(self.options.include) if self.options.include else None
        exclude = list(self.options.exclude) if self.options.exclude else None
        found = search(db, queries, include=include, exclude=exclude, method=self.options.method, threads=self.threads)
        if np.any(found.frames < 0):
            raise InvalidInputError("the tag filters leave no frame of the database to play")
        self.ranges[characters] = db.frame_range(found.frames)
        self.player.set_time(self.layer, found.frames / db.fps, characters)
        self.costs[characters] = found.costs


def _check_player(player: Player, database: Database) -> None:
    """``player`` can play ``database``: its skeleton's joints and hierarchy, and no root-motion joint."""
    if not isinstance(player, Player):
        raise InvalidInputError(f"player must be an engine.player.Player, got {type(player).__name__}")
    mine, theirs = player.skeleton, database.skeleton
    if mine.names != theirs.names or not np.array_equal(mine.parents, theirs.parents):
        raise SkeletonMismatchError(
            f"the player's skeleton ({mine.num_joints} joints) is not the database's ({theirs.num_joints} joints): "
            "build the database on the character (ossa mm build --character)"
        )
    if player.root_joint is not None:
        raise InvalidInputError(
            "the player has a root-motion joint; a motion-matching controller places the root itself (root_motion=None)"
        )


def _shaped(value: Any, shape: tuple[int, ...], name: str) -> FloatArray:
    array = as_array(value, name)
    if array.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {array.shape}")
    return array.copy()


def _spatial(planar: FloatArray) -> FloatArray:
    """``(K, 3)`` velocities ``(vx, 0, vz)`` of planar velocities ``(vx, vz, yaw rate)``."""
    return np.stack((planar[:, 0], np.zeros(planar.shape[0]), planar[:, 1]), axis=-1)


def _take(state: Trajectory, characters: IntArray) -> Trajectory:
    """The simulation of ``characters`` only."""
    return Trajectory(
        state.positions[characters],
        state.velocities[characters],
        state.accelerations[characters],
        state.yaws[characters],
        state.yaw_rates[characters],
    )
