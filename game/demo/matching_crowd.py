"""The crowd moved by motion matching: ``python -m game.demo --crowd N --motion-matching``.

Every character walks (some run) its own random path over the field: a waypoint at a time, a new
one when it gets there. One :class:`~engine.motion_matching.controller.MatchingController` drives
the whole crowd on one engine player: each frame its simulations, clocks and roots move for
everyone, about a sixth of the characters search (every 0.1 s, staggered; at once after a sharp
turn), in one batched search, and those whose best frame is another one switch through the
player's inertialization stage. The player then poses the characters the LOD schedule says are
due and writes their palettes (as :mod:`game.demo.crowd` does, whose drawing, overlay and timings
this mode keeps); an extra panel shows the searches and switches.
"""

from __future__ import annotations

import argparse

import numpy as np

from engine.anim.clip import Clip
from engine.backend import UpdateSchedule
from engine.math import matrix_from_trs, quat_from_axis_angle
from engine.math._checks import FloatArray
from engine.motion_matching import Database
from engine.motion_matching.controller import MatchingController
from engine.player import Player as Posing
from engine.render.scene_renderer import scene_records
from game.app import say
from game.demo.crowd import SPACING, Crowd, CrowdDemo, check_count
from game.demo.matching_database import demo_database, demo_options
from game.demo.motion_matching import RUN_SPEED, WALK_SPEED, ground_lift
from game.model import Model
from game.ui import ACCENT

RUNNERS = 0.3
"""The share of the crowd that runs its path."""
ARRIVED = 1.0
"""Metres from its waypoint at which a character picks the next one."""


class MatchingCrowd(Crowd):
    """A crowd on random paths, moved by motion matching (module docstring); :class:`Crowd`'s LOD and palettes.

    It shares :class:`Crowd`'s posing (:meth:`Crowd.animate`, :meth:`Crowd.lod_mix`) and makes its
    own state (the base class's walk and run actions are not made).

    Parameters
    ----------
    model
        The character every member plays.
    database
        A database over the model's palette-record skeleton.
    count, seed
        ``C``, and the seed of the start places, waypoints and gaits.

    Attributes
    ----------
    matcher
        The :class:`~engine.motion_matching.controller.MatchingController` of the whole crowd.
    waypoints
        ``(C, 3)`` where each character is going (metres).
    speeds
        ``(C,)`` each character's speed (m/s): walkers :data:`WALK_SPEED`, runners :data:`RUN_SPEED`.
    """

    def __init__(self, model: Model, database: Database, count: int, seed: int = 7) -> None:
        count = check_count(count)
        self.model = model
        self.records = scene_records(model.scene)
        rng = np.random.default_rng(seed)
        side = int(np.ceil(np.sqrt(count)))
        self.extent = 0.5 * side * SPACING * model.height * 2.0
        """Half the side of the field the paths cover, metres."""
        self._rng = rng
        starts = self._spots(count)
        scale = model.scale
        self.matcher = MatchingController(
            database,
            count,
            positions=starts / scale,
            yaws=rng.uniform(-np.pi, np.pi, count),
            options=demo_options(database),
        )
        self.waypoints = self._spots(count)
        self.speeds = np.where(rng.random(count) < RUNNERS, RUN_SPEED, WALK_SPEED)
        nodes = model.skeleton.num_joints
        timeline = database.timeline()
        node_clip = Clip(timeline.name, tuple(c for c in timeline.channels if c.target < nodes), nodes)
        self._frame = matrix_from_trs(
            [0.0, ground_lift(model, database, node_clip) * scale, 0.0], [0.0, 0.0, 0.0, 1.0], np.full(3, scale)
        )
        self.schedule = UpdateSchedule(count)
        self.palettes = np.zeros((count, self.records.count, 4, 4), dtype=np.float32)
        self.worlds = np.zeros((count, 4, 4))
        self.evaluated = 0
        self.clock = 0.0
        self.step(0.0)

    def _spots(self, count: int) -> FloatArray:
        """``count`` random places on the field, ``(count, 3)`` on ``y = 0``."""
        xz = self._rng.uniform(-self.extent, self.extent, (count, 2))
        return np.stack((xz[:, 0], np.zeros(count), xz[:, 1]), axis=-1)

    @property
    def count(self) -> int:
        """``C``."""
        return self.matcher.num_characters

    @property
    def player(self) -> Posing:
        """The engine player posing the crowd (the controller's)."""
        return self.matcher.player

    def step(self, dt: float) -> None:
        """Advance everyone by ``dt`` seconds: new waypoints where reached, the request, the controller, the places."""
        self.clock += dt
        scale = self.model.scale
        here = self.matcher.positions * scale
        arrived = np.linalg.norm((self.waypoints - here)[:, [0, 2]], axis=-1) < ARRIVED
        if arrived.any():
            self.waypoints[arrived] = self._spots(int(arrived.sum()))
        heading = self.waypoints - here
        length = np.maximum(np.linalg.norm(heading[:, [0, 2]], axis=-1), 1e-9)
        velocity = heading * (self.speeds / length)[:, None]
        self.player.begin_frame(dt)
        self.matcher.control(velocity / scale, np.arctan2(heading[:, 0], heading[:, 2]))
        rotations = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), self.matcher.yaws)
        placements = matrix_from_trs(self.matcher.positions * scale, rotations, np.ones((self.count, 3)))
        self.worlds = placements @ self._frame


class MatchingCrowdDemo(CrowdDemo):
    """The crowd program with a :class:`MatchingCrowd` (``--crowd N --motion-matching``)."""

    title = "ossa-crowd-motion-matching"

    def __init__(self, args: argparse.Namespace) -> None:
        self._database_file = args.database
        super().__init__(args)

    def make_crowd(self, count: int, seed: int) -> Crowd:
        """A :class:`MatchingCrowd` on the demo's database (built or loaded now)."""
        skeleton = scene_records(self.model.scene).skeleton
        database = demo_database(skeleton, lambda kind, text: say(self.prog, kind, text), self._database_file)
        return MatchingCrowd(self.model, database, count, seed)

    def _draw_overlay(self) -> None:
        """The crowd's overlay, and the motion-matching panel at the top right."""
        super()._draw_overlay()
        crowd = self.crowd
        assert isinstance(crowd, MatchingCrowd)
        matcher = crowd.matcher
        seconds = max(crowd.clock, 1e-9)
        last = matcher.last
        lines: list[str | tuple[str, tuple[int, int, int]]] = [
            ("motion matching", ACCENT),
            f"searched this frame {last.characters.size}, switched {int(last.switched.sum())}",
            f"per character: {matcher.searches.mean() / seconds:.1f} searches/s, "
            f"{matcher.switches.mean() / seconds:.1f} switches/s",
        ]
        panel = self.overlay.text_panel(lines)
        self.overlay.draw(panel, (self.size[0] - panel.get_width() - 10, 10))
