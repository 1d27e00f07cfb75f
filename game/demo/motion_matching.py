"""The demo driven by motion matching: ``python -m game.demo --motion-matching``.

What to look at
---------------
The character is moved by **motion matching** (:class:`engine.motion_matching.MatchingController`)
over the shared CMU locomotion takes retargeted onto it (:mod:`game.demo.matching_database`;
``--database FILE`` plays another database built for the model): no state machine, no blend
tree. WASD asks for a velocity (walk, Shift: run) and a facing; the controller's springs turn
that into the desired trajectory, and every 0.1 s (at once when the request changes sharply) it
searches the database for the frame whose pose and future trajectory match best, then switches
there through the engine player's inertialization stage (half-life 0.1 s). The character moves
by the database's own root motion, pulled toward the desired trajectory by at most half of it.

The overlay's panel on the right shows the clip and frame playing, the last search's cost and
the searches and switches per second; on the ground the **desired** trajectory (where the
springs go, yellow) and the **predicted** one (where the frame playing goes, cyan) are drawn at
the three horizons (1/3, 2/3 and 1 s). The wave, the feet on the uneven ground (two-bone IK)
and the head's look-at work as in the graph-driven demo: they are the same character code
(:class:`game.demo.player.Player`) with the graph replaced by the controller.

Space does nothing (16_01 holds a standing jump, but the demo searches no jump frame) and Ctrl
does nothing (hardly any sideways walking).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import moderngl
import numpy as np

from engine.anim.clip import Clip
from engine.anim.ik import FootLock
from engine.math import matrix_from_trs, quat_from_axis_angle
from engine.math._checks import FloatArray
from engine.motion_matching import Database
from engine.motion_matching.controller import ControllerOptions, MatchingController
from engine.render.scene_renderer import scene_records
from game.app import say
from game.bounds import frame_boxes, scene_frames
from game.demo.game import DemoGame
from game.demo.matching_database import demo_database, demo_options
from game.demo.player import UP, Player
from game.demo.world import Terrain
from game.model import Model
from game.ui import ACCENT, DIM

WALK_SPEED = 1.4
"""Metres per second asked for while walking (the CMU walks go 1.3-2.1 m/s)."""
RUN_SPEED = 3.5
"""Metres per second asked for while running (the takes' jog and run: 3.3 and 4.5 m/s)."""
DESIRED_COLOR = (1.0, 0.85, 0.2, 1.0)
PREDICTED_COLOR = (0.3, 0.95, 1.0, 1.0)
TRAJECTORY_LIFT = 0.03
"""Metres above the ground the trajectories are drawn."""
GROUND_SAMPLES = 200
"""Database frames whose lowest vertex sets how far the character stands above its root (their median)."""


def ground_lift(model: Model, database: Database, node_clip: Clip) -> float:
    """Scene units to raise the database's poses by so that their lowest vertex stands on the root's ground.

    The median over :data:`GROUND_SAMPLES` frames of the lowest point of the whole drawn scene
    (:func:`game.bounds.frame_boxes`), negated: retargeted takes keep the source's height over
    its floor, which need not be the character's mesh sole.
    """
    frames = np.linspace(0, database.num_frames - 1, GROUND_SAMPLES).round().astype(int)
    frame = scene_frames(model.scene, node_clip, frames / database.fps, np.eye(4))
    lows, _ = frame_boxes(model.scene, frame)
    return -float(np.median(lows[:, 1]))


class MatchingPlayer(Player):
    """The demo's character with motion matching in place of the graph (see the module docstring).

    Parameters
    ----------
    model, terrain, position
        As :class:`game.demo.player.Player`.
    database
        A database over the model's palette-record skeleton.
    options
        The controller's :class:`~engine.motion_matching.controller.ControllerOptions` (default:
        :func:`game.demo.matching_database.demo_options`).

    Attributes
    ----------
    matcher
        The :class:`~engine.motion_matching.controller.MatchingController` (one character) on the
        character's engine player.
    """

    def __init__(
        self,
        model: Model,
        terrain: Terrain,
        database: Database,
        position: tuple[float, float] = (0.0, 0.0),
        options: ControllerOptions | None = None,
    ) -> None:
        self.database = database
        self._options = options
        self._yaw = 0.0
        super().__init__(model, terrain, position, graph=None)

    def _root_motion_joint(self) -> int | None:
        return None  # the controller places the root

    def _foot_lock(self) -> FootLock | None:
        """Motion matching's contact cleanup: the switches and the root's pull toward the simulation slide the feet."""
        return FootLock((2,))

    def _start_locomotion(self, graph: Path | None) -> np.ndarray:  # noqa: ARG002 (no graph: the controller)
        db = self.database
        scale = self.model.scale
        options = self._options if self._options is not None else demo_options(db)
        self.matcher = MatchingController(db, player=self.posing, options=options)
        nodes = self.model.skeleton.num_joints
        timeline = db.timeline()
        node_clip = Clip(timeline.name, tuple(c for c in timeline.channels if c.target < nodes), nodes)
        self._lift = ground_lift(self.model, db, node_clip)
        self.notes += [
            f"motion matching: {db.num_frames} frames in {db.num_ranges} ranges ({len(set(db.range_sources))} takes)",
            "no jump played (the demo searches no jump frame): Space does nothing; Ctrl does nothing",
        ]
        self._scale = scale
        return np.array([self.matcher.layer])

    def _model_frame(self) -> FloatArray:
        """Model space (the database's root space, in the file's units) → character frame: scale, feet on the ground."""
        scale = self.model.scale
        return matrix_from_trs([0.0, self._lift * scale, 0.0], [0.0, 0.0, 0.0, 1.0], np.full(3, scale))

    def _control(
        self,
        dt: float,  # noqa: ARG002 (Player._control's arguments: the controller reads the player's dt)
        move: FloatArray,
        amount: float,
        run: bool,
        jump: bool,  # noqa: ARG002 (no jump played)
        strafe: bool,  # noqa: ARG002 (hardly any sideways walking in the takes)
    ) -> None:
        """The request (velocity and facing, in the database's units) to the controller, then the wave."""
        if amount > 1e-6:
            self._yaw = float(np.arctan2(move[0], move[2]))
        speed = RUN_SPEED if run else WALK_SPEED
        self.matcher.control(move * (speed / self.model.scale), self._yaw)
        self._control_wave()

    def _move(self, dt: float) -> None:
        """Stand where the controller's root is, on the terrain (kept inside it: the root is put back there)."""
        matcher, scale = self.matcher, self.model.scale
        wanted = matcher.positions[0] * scale
        target = self.terrain.clamp(wanted)
        if np.hypot(*(target - wanted)[[0, 2]]) > 1e-9:
            matcher.place(0, target[None] * [1.0, 0.0, 1.0] / scale, matcher.yaws[:1])
        self.velocity = (target - self.position) * [1.0, 0.0, 1.0] / dt if dt > 0.0 else np.zeros(3)
        self.speed = float(np.hypot(self.velocity[0], self.velocity[2]))
        self.position = target
        self.facing = quat_from_axis_angle(UP, float(matcher.yaws[0]))

    def hud(self) -> list[str]:
        """What the overlay shows: clip, frame, cost, searches and switches per second."""
        matcher, db = self.matcher, self.database
        frame = int(matcher.frames[0])
        r = int(matcher.ranges[0])
        seconds = max(float(self.posing.clock[0]), 1e-9)
        return [
            f"clip  {db.range_names[r]}",
            f"frame {frame - int(db.range_starts[r])} of {int(db.range_stops[r] - db.range_starts[r])} "
            f"(database frame {frame})",
            f"cost  {float(matcher.costs[0]):.3f}",
            f"searches {matcher.searches[0] / seconds:.1f}/s   switches {matcher.switches[0] / seconds:.1f}/s",
        ]

    def trajectories(self) -> tuple[FloatArray, FloatArray]:
        """World points ``(H + 1, 3)`` of the desired and the predicted trajectory, from the root, on the ground."""
        matcher, scale = self.matcher, self.model.scale
        root = matcher.positions[:1][:, None]
        desired = np.concatenate((root, matcher.desired_trajectory(0)[0]), axis=1)[0] * scale
        predicted = np.concatenate((root, matcher.matched_trajectory(0)), axis=1)[0] * scale
        for points in (desired, predicted):
            points[:, 1] = self.terrain.height(points[:, 0], points[:, 2]) + TRAJECTORY_LIFT
        return desired, predicted


class MatchingGame(DemoGame):
    """The demo game with a :class:`MatchingPlayer` (``--motion-matching``), its panel and its trajectories."""

    title = "ossa-demo-motion-matching"

    def __init__(self, args: argparse.Namespace) -> None:
        self._prog = args.prog
        self._database_file: Path | None = args.database
        self.database: Database | None = None
        super().__init__(args)

    def make_player(self) -> Player:
        """A :class:`MatchingPlayer` on the database (built or loaded on the first call)."""
        if self.database is None:
            skeleton = scene_records(self.model.scene).skeleton
            self.database = demo_database(skeleton, lambda kind, text: say(self._prog, kind, text), self._database_file)
        return MatchingPlayer(self.model, self.terrain, self.database)

    def _draw_translucent(
        self,
        ctx: moderngl.Context,
        framebuffer: moderngl.Framebuffer,
        view: np.ndarray,
        projection: np.ndarray,
        items: np.ndarray,
        pulse: float,
    ) -> None:
        """The shadow and the glow, then the desired and predicted trajectories on the ground."""
        super()._draw_translucent(ctx, framebuffer, view, projection, items, pulse)
        player = self.player
        assert isinstance(player, MatchingPlayer)
        for points, color in zip(player.trajectories(), (DESIRED_COLOR, PREDICTED_COLOR), strict=True):
            self.debug.lines(points[:-1], points[1:], color)
            self.debug.target(points[1:], size=0.05, color=color)
        self.debug.flush(view, projection, depth_test=False)

    def _draw_overlay(self) -> None:
        """The game's overlay, and the motion-matching panel at the top right."""
        super()._draw_overlay()
        player = self.player
        assert isinstance(player, MatchingPlayer)
        lines: list[str | tuple[str, tuple[int, int, int]]] = [("motion matching", ACCENT), *player.hud()]
        lines += [("yellow: desired   cyan: predicted", DIM)]
        panel = self.overlay.text_panel(lines)
        self.overlay.draw(panel, (self.size[0] - panel.get_width() - 10, 10))
