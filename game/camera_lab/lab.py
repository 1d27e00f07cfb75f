"""The camera lab: camera smoothing, stabilisation, constraints and transitions, side by side.

``python -m game.camera_lab`` opens a split screen: each scene shows the same scripted situation
handled two or three ways, one viewport (pane) each, with the numbers that tell them apart and a
plot strip of the last 3 seconds. Every camera is simulated beforehand with fixed time steps in
pure numpy (:mod:`game.camera_lab.experiments`); the lab only plays the results back, so what it
shows is exact and repeatable at any display rate. ``--report DIR`` writes the plots, the CSV
files and the table of :mod:`game.camera_lab.report`.

What to look at
---------------
1. **Smoothing**: a target stands, is cut to a new place at 0.5 s, then runs a circle. Each pane
   is a method, the seed's naive ``slerp(q, goal, s·dt)``, exponential smoothing and the
   critically damped spring, with one camera per frame rate: 30 (red), 60 (blue), 144 FPS
   (green), all with a half-life of 0.1 s. The naive cameras come apart (lower frame rates
   converge faster); the exponential and spring cameras stay on top of each other. Lens mode
   (V) shows the view of the highlighted frame rate (F); slow motion (,) shows each camera
   holding its frame.
2. **Jitter**: a 90 Hz head tracker with noise, raw and through the One-Euro and Kalman filters;
   the gaze is traced on the wall (grey: the clean path). Lens mode shows the shake.
3. **Cone**: a head camera that wanders up to 100° from the character's facing, held within the
   limit by :func:`cone_clamp` (exact: on the cone's edge, roll counted) and by
   :func:`swing_twist_clamp` (the view direction on the edge, roll limited separately).
4. **Overhead**: a target flies straight over a camera; :func:`look_at` given last frame's
   orientation tilts over smoothly (the white line is the camera's screen-up), without it the
   camera stays upright and so turns 180° in one frame at the pole.
5. **Transition**: a cut-scene through five viewpoints; slerp's angular speed jumps at every key
   (the coloured trail of the view direction has corners), squad's does not.

Keys
----
1-5 or Tab: scene; Space: pause; N: one frame while paused; , and .: slower, faster; R: restart;
V: observer or lens view; F: highlighted frame rate; arrows or mouse drag: orbit the observer,
W/S: closer, farther; - and =: cone limit, [ and ]: twist limit; H: key help; F12: screenshot;
Esc: quit.

Engine functions it exercises
-----------------------------
:func:`engine.camera.smooth_rotation_naive`, :func:`~engine.camera.smooth_rotation`,
:func:`~engine.camera.spring_rotation`, :func:`~engine.camera.stiffness_from_half_life`,
:func:`~engine.camera.one_euro_step`, :func:`~engine.camera.kalman_step`,
:func:`~engine.camera.cone_clamp`, :func:`~engine.camera.swing_twist_clamp`,
:func:`~engine.camera.swing_twist`, :func:`~engine.camera.look_at` (with and without
``previous``), :class:`~engine.camera.CameraSequence` (slerp and squad),
:func:`~engine.camera.camera_axes`, :func:`~engine.camera.view_matrix`,
:func:`~engine.camera.orbit_orientation`; :class:`engine.render.DebugDraw` (grid, frusta, axes,
targets), :class:`engine.render.SceneRenderer` and :func:`engine.anim.sampling.sample` for the
character (the mannequin, or ``--model``: any glTF scene — every mesh node drawn, an object
without a skin playing its clips — or BVH take, standing on the ground at its own size).

The code reads top-down: load (:class:`CameraLab` ``__init__``), then the loop
(:func:`game.app.run` calls ``setup`` once, then ``update`` and ``render`` every frame), update,
render. The scenes' contents are in :mod:`game.camera_lab.scenes`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import moderngl
import numpy as np

from engine.anim.scene import SceneFrame
from engine.camera import camera_axes, orbit_orientation, view_matrix
from engine.errors import OssaError
from engine.math import matrix_from_trs, perspective, quat_from_axis_angle
from engine.render import DebugDraw, SceneRenderer
from game import app
from game.app import Controls, load_program_model
from game.camera_lab import report
from game.camera_lab.experiments import CIRCLE_RADIUS, FPS, RUN_RATE, run_experiments
from game.camera_lab.scenes import (
    FRUSTUM_FOV,
    Figure,
    LabState,
    Orbit,
    Pane,
    Scene,
    SmoothingScene,
    ground_grid,
    make_scenes,
)
from game.ui import ACCENT, DIM, Overlay

BACKGROUND = (0.09, 0.1, 0.13)
PANE_BACKGROUND = (0.13, 0.15, 0.19)
LIGHT = (-0.4, -0.8, -0.45)
TIME_SCALES = (0.1, 0.25, 0.5, 1.0, 2.0)
ORBIT_SPEED = 1.5
"""Radians per second of the arrow keys."""
ZOOM_SPEED = 0.8
"""Fraction of the distance per second of W/S."""
MOUSE_SENSITIVITY = 0.006
"""Radians per pixel of mouse drag."""
LIMIT_STEP = np.radians(5.0)
"""Radians per press of -/= and [/]."""
SCENE_KEYS = ("1", "2", "3", "4", "5")
KEY_HELP = (
    "1-5 / Tab  scene      Space  pause      N  step (paused)",
    ", .  slower / faster      R  restart",
    "V  observer / lens view      F  highlighted FPS (scene 1)",
    "arrows, mouse drag  orbit      W S  closer / farther",
    "- =  cone limit      [ ]  twist limit (scene 3)",
    "H  this help      F12  screenshot      Esc  quit",
)
HEADER_HEIGHT = 26
TALLEST_FIGURE = 2.4
"""Metres: a taller model is drawn at :data:`FIGURE_HEIGHT` (the scenes' cameras and paths are human-sized)."""
FIGURE_HEIGHT = 1.8
RUN_SPEED = CIRCLE_RADIUS * RUN_RATE
"""Metres per second of the smoothing scene's target on its circle."""


def build_parser() -> argparse.ArgumentParser:
    """The lab's options: the common ones (:func:`game.app.common_parser`) and the report."""
    parser = app.common_parser(
        "game.camera_lab", "Ossa camera lab: smoothing, stabilisation, cones, look-at and transitions."
    )
    parser.add_argument("--report", type=Path, help="write the plots, CSV files and table into this folder")
    parser.add_argument(
        "--report-only", action="store_true", help="with --report: write the report and exit (no window, no GL)"
    )
    parser.add_argument("--scene", type=int, default=1, choices=range(1, 6), help="scene to start in (1-5)")
    return parser


class CameraLab:
    """The lab's state, updated by fixed steps and drawn each frame by :func:`game.app.run`.

    Parameters
    ----------
    args
        Parsed :func:`build_parser` options.

    Raises
    ------
    AssetError
        The model cannot be loaded.
    """

    title = "Ossa camera lab"

    # --- load ---------------------------------------------------------------------------------

    def __init__(self, args: argparse.Namespace) -> None:
        self.model = load_program_model(args)
        self.figure_scale = 1.0 if self.model.height <= TALLEST_FIGURE else FIGURE_HEIGHT / self.model.height
        """Scale the character is drawn at: 1, or what brings a giant (the 4.5 m robot) to human size."""
        if self.figure_scale != 1.0:
            app.say(
                args.prog,
                "note",
                f"{self.model.path.name}: drawn {FIGURE_HEIGHT:.1f} m tall, not {self.model.height:.2f} m: "
                "the lab's scenes are human-sized",
            )
        self.state = LabState()
        self.scenes = make_scenes(self.state, run_experiments())
        self.finished = False
        self.paused = False
        self.show_help = False
        self.time_scale = 1.0
        self.select(args.scene - 1)

    def select(self, index: int) -> None:
        """Show scene ``index`` (0-4) from its start, seen from its default observer position."""
        self.scene_index = index
        self.scene: Scene = self.scenes[index]
        self.observer: Orbit = self.scene.observer()
        self.clock = 0.0

    # --- the loop: app.run calls setup once, then update and render each frame -----------------

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Create the GPU resources: debug lines, overlay, the character's whole scene."""
        self.size = size
        self.overlay = Overlay(ctx, size)
        self.debug = DebugDraw(ctx)
        self.character = SceneRenderer(ctx, self.model.scene)
        """Every mesh node of the model's scene; ``drawn_mesh_nodes`` counts what the last pane drew."""

    def update(self, dt: float, controls: Controls) -> None:
        """One fixed step: keys, then the observer, then the clock."""
        pressed = controls.pressed
        if "escape" in pressed:
            self.finished = True
            return
        chosen = [SCENE_KEYS.index(key) for key in SCENE_KEYS if key in pressed]
        if chosen:
            self.select(chosen[0])
        elif "tab" in pressed:
            self.select((self.scene_index + 1) % len(self.scenes))
        self._settings(pressed)
        self._orbit(dt, controls)
        if not self.paused or "n" in pressed:
            self.clock = (self.clock + self.time_scale * dt) % self.scene.duration

    def _settings(self, pressed: set[str]) -> None:
        """Toggles and steps: pause, speed, restart, view, frame rate, limits, help."""
        state = self.state
        if "space" in pressed:
            self.paused = not self.paused
        speed = TIME_SCALES.index(self.time_scale) + ("." in pressed) - ("," in pressed)
        self.time_scale = TIME_SCALES[min(max(speed, 0), len(TIME_SCALES) - 1)]
        if "r" in pressed:
            self.clock = 0.0
        if "v" in pressed:
            state.lens = not state.lens
        if "f" in pressed:
            state.fps_index = (state.fps_index + 1) % len(FPS)
        if "h" in pressed:
            self.show_help = not self.show_help
        limit = state.cone_limit + LIMIT_STEP * (("=" in pressed) - ("-" in pressed))
        state.cone_limit = float(np.clip(limit, LIMIT_STEP, np.pi))
        twist = state.twist_limit + LIMIT_STEP * (("]" in pressed) - ("[" in pressed))
        state.twist_limit = float(np.clip(twist, 0.0, np.pi))

    def _orbit(self, dt: float, controls: Controls) -> None:
        """Arrows and mouse drag turn the observer around its centre; W/S move it closer or farther."""
        orbit = self.observer
        orbit.yaw += ORBIT_SPEED * dt * controls.axis("left", "right") - MOUSE_SENSITIVITY * controls.mouse[0]
        pitch = orbit.pitch + ORBIT_SPEED * dt * controls.axis("down", "up") - MOUSE_SENSITIVITY * controls.mouse[1]
        orbit.pitch = float(np.clip(pitch, -1.5, 1.2))
        orbit.distance *= float(np.exp(ZOOM_SPEED * dt * controls.axis("w", "s")))

    # --- render -------------------------------------------------------------------------------

    def render(self, ctx: moderngl.Context, framebuffer: moderngl.Framebuffer) -> None:
        """Draw each pane (grid, character, the scene's lines), then the overlays over the whole frame."""
        width, height = self.size
        framebuffer.clear(*BACKGROUND, 1.0, depth=1.0)
        panes = len(self.scene.panes)
        frame, world = self.figure_pose(self.scene.figure(self.clock))
        contents = [self.scene.pane(k, self.clock) for k in range(panes)]
        for k, content in enumerate(contents):
            left, right = k * width // panes, (k + 1) * width // panes
            viewport = (left + 1, 0, right - left - 2, height - HEADER_HEIGHT)  # GL: y up from the bottom
            framebuffer.clear(*PANE_BACKGROUND, 1.0, depth=1.0, viewport=viewport)
            ctx.viewport = viewport
            view, projection = self._camera(content.lens, viewport[2] / viewport[3])
            self.character.draw(frame, view, projection, world[None], light_direction=LIGHT)
            ground_grid(self.debug)
            self.scene.draw(self.debug, k, self.clock)
            self.debug.flush(view, projection)
        ctx.viewport = (0, 0, width, height)
        self._draw_overlay(contents)

    def figure_pose(self, figure: Figure) -> tuple[SceneFrame, np.ndarray]:
        """The scene frame (batch ``(1,)``) and world transform ``(4, 4)`` of the character for ``figure``.

        The scene's ``idle`` and ``run`` are the model's clips of those roles (a run falls back on
        the walk, either on the first clip); a gait clip plays at the rate that matches its
        measured ground speed to the target's, :data:`RUN_SPEED`, in place. The figure is lowered
        by the clip's lowest point over the clip (:meth:`game.model.Model.ground`): it stands on
        the grid, scaled by :attr:`figure_scale`.
        """
        model = self.model
        name = self.clip_for(figure.clip)
        clip = model.clips[name] if name is not None else None
        gait = model.gaits.get(name) if name is not None else None
        rate = RUN_SPEED / gait.speed if gait is not None and gait.moves else 1.0
        time = np.array([(rate * figure.time) % clip.duration if clip is not None and clip.duration > 0 else 0.0])
        frame = model.sample_frame(name, time)
        facing = quat_from_axis_angle([0.0, 1.0, 0.0], figure.heading)
        ground = model.ground({name: 1.0} if name is not None else {})
        scale = self.figure_scale
        world = matrix_from_trs(figure.position - [0.0, scale * ground, 0.0], facing, np.full(3, scale)) @ model.frame
        return frame, world

    def clip_for(self, role: str) -> str | None:
        """The model's clip playing a scene's ``"idle"`` or ``"run"``, ``None`` without clips."""
        roles = self.model.roles
        found = (roles.run or roles.walk) if role == "run" else roles.idle
        return found or self.model.reference

    def _camera(self, lens: tuple[np.ndarray, np.ndarray], aspect: float) -> tuple[np.ndarray, np.ndarray]:
        """View and projection ``(4, 4)`` of the observer, or of the pane's camera in lens mode.

        The field of view is :data:`~game.camera_lab.scenes.FRUSTUM_FOV` vertically, widened in a
        pane taller than wide so that it is at least that much horizontally too.
        """
        fov_y = max(FRUSTUM_FOV, 2.0 * np.arctan(np.tan(0.5 * FRUSTUM_FOV) / aspect))
        if self.state.lens:
            position, orientation = lens
            return view_matrix(position, orientation), perspective(fov_y, aspect, 0.05, 100.0)
        orbit = self.observer
        orientation = orbit_orientation(orbit.yaw, orbit.pitch)
        position = orbit.centre - orbit.distance * camera_axes(orientation)[2]
        return view_matrix(position, orientation), perspective(fov_y, aspect, 0.1, 200.0)

    def _draw_overlay(self, contents: list[Pane]) -> None:
        """Header (scene list, clock), per pane a title, numbers and plot strip, then the key help."""
        width, height = self.size
        overlay = self.overlay
        scenes = "  ".join(
            f"[{k + 1} {scene.name}]" if k == self.scene_index else f"{k + 1} {scene.name}"
            for k, scene in enumerate(self.scenes)
        )
        status = "paused" if self.paused else f"x{self.time_scale:g}"
        view = "lens" if self.state.lens else "observer"
        if self.state.lens and isinstance(self.scene, SmoothingScene):
            view += f" {FPS[self.state.fps_index]} FPS"
        line = f"{scenes}    t {self.clock:4.2f} s {status}   {view}   H: keys"
        header = overlay.text_panel([(line, ACCENT)], width=width)
        overlay.draw(header, (0, 0))
        panes = len(contents)
        for k, content in enumerate(contents):
            left = k * width // panes
            pane_width = (k + 1) * width // panes - left
            lines: list[str | tuple[str, tuple[int, int, int]]] = [(content.title, ACCENT), *content.info]
            if k == 0:
                lines.append((self.scene.caption, DIM))
            overlay.draw(overlay.text_panel(lines), (left + 6, HEADER_HEIGHT + 4))
            plot = content.plot
            size = (pane_width - 12, min(120, height // 4))
            strip = overlay.plot(plot.series, plot.labels, size, plot.y_range, plot.title)
            overlay.draw(strip, (left + 6, height - size[1] - 6))
        if self.show_help:
            panel = overlay.text_panel(KEY_HELP)
            overlay.draw(panel, ((width - panel.get_width()) // 2, height // 2 - panel.get_height() // 2))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the lab with command-line ``argv`` (``None``: ``sys.argv``); returns the exit status.

    ``--report DIR`` writes the report first (no GL needed); with ``--report-only`` that is all.
    """
    parser = build_parser()
    args = app.parse_args(parser, argv)
    if args.report_only and args.report is None:
        parser.error("--report-only needs --report DIR")
    if args.report is not None:
        try:
            paths, table = report.write_report(args.report)
        except (OSError, OssaError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            app.say(args.prog, "error", f"--report {args.report}: cannot write the report: {detail}")
            return 2
        print(table)
        print("wrote " + ", ".join(str(path) for path in paths))
    if args.report_only:
        return 0
    return app.main(CameraLab, parser, argv)
