"""The lab's five scenes: what each pane shows of the precomputed experiments at a time ``t``.

A scene turns :mod:`game.camera_lab.experiments` results into, for each of its panes (the split
screen's viewports): world-space lines for :class:`~engine.render.DebugDraw` (cameras as frusta
with their axes, targets, paths, trails), the camera to look through in lens mode, a few lines
of numbers, and a plot strip of the last :data:`PLOT_SECONDS`. A scene loops: ``t`` is taken
modulo its duration, and the plot window reaches back into the previous loop.

Nothing here draws: :class:`game.camera_lab.lab.CameraLab` flushes the lines, draws the
character and the overlays.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from engine.camera import camera_axes, view_matrix
from engine.math import matrix_from_trs, perspective, quat_rotate
from engine.math._checks import FloatArray
from engine.render import DebugDraw
from game.camera_lab import experiments as ex
from game.camera_lab import framing
from game.ui import SERIES_COLORS

PLOT_SECONDS = 3.0
"""Seconds of history in each pane's plot strip."""
PLOT_SAMPLES = 180
FRUSTUM_FOV = np.radians(50.0)
"""Field of view of the drawn frusta (and of the lens view)."""
GRID_COLOR = (0.32, 0.36, 0.42, 1.0)
DIM = (0.55, 0.55, 0.6, 1.0)
WHITE = (1.0, 1.0, 1.0, 1.0)
TARGET_COLOR = (1.0, 0.55, 0.15, 1.0)


def series_color(k: int) -> tuple[float, float, float, float]:
    """RGBA (0..1) of plot series ``k``: a camera drawn in this colour is that plot line."""
    r, g, b = SERIES_COLORS[k % len(SERIES_COLORS)]
    return (r / 255.0, g / 255.0, b / 255.0, 1.0)


@dataclass
class Orbit:
    """The observer camera: orbiting ``centre`` at ``distance``; yaw 0 looks down −Z, pitch > 0 looks up."""

    centre: FloatArray
    distance: float
    yaw: float
    pitch: float


@dataclass(frozen=True)
class Plot:
    """A plot strip: series ``(PLOT_SAMPLES,)`` oldest first, their labels, the y range and a title."""

    series: list[FloatArray]
    labels: list[str]
    y_range: tuple[float, float]
    title: str


@dataclass(frozen=True)
class Pane:
    """What one viewport shows at a time: title, lines of numbers, plot, and the lens camera."""

    title: str
    info: list[str]
    plot: Plot
    lens: tuple[FloatArray, FloatArray]
    """Position ``(3,)`` and orientation ``(4,)`` of the camera seen through in lens mode."""


@dataclass(frozen=True)
class Figure:
    """The character in a scene: feet position ``(3,)``, heading (rad about +Y from +Z), clip name, clip time (s)."""

    position: FloatArray
    heading: float
    clip: str
    time: float


@dataclass
class LabState:
    """The settings the keys change that scenes read: the highlighted frame rate and the cone limits."""

    fps_index: int = 1
    cone_limit: float = float(np.radians(45.0))
    twist_limit: float = float(np.radians(10.0))
    lens: bool = False
    cone: framing.ConeRun | None = field(default=None, repr=False)


# --- drawing helpers -------------------------------------------------------------------------------


def draw_camera(
    debug: DebugDraw,
    position: FloatArray,
    orientation: FloatArray,
    color: tuple[float, float, float, float],
    *,
    far: float = 0.8,
    axes: bool = True,
    ray: float = 0.0,
) -> None:
    """A camera as its frustum (to ``far`` metres), its axes (red right, green up, blue back) and a sight ray."""
    projection = perspective(FRUSTUM_FOV, 16.0 / 9.0, 0.12, far)
    debug.frustum(view_matrix(position, orientation), projection, color)
    if axes:
        debug.axes(matrix_from_trs(position, orientation, np.ones(3))[None], length=0.35)
    if ray > 0.0:
        debug.lines(position, position + ray * camera_axes(orientation)[2], color)


def ground_grid(debug: DebugDraw, half: float = 8.0) -> None:
    """Lines every metre over the ground square ``[-half, half]²``."""
    ticks = np.arange(-half, half + 0.5)
    ones = np.ones_like(ticks)
    debug.lines(np.stack((ticks, 0 * ones, -half * ones), -1), np.stack((ticks, 0 * ones, half * ones), -1), GRID_COLOR)
    debug.lines(np.stack((-half * ones, 0 * ones, ticks), -1), np.stack((half * ones, 0 * ones, ticks), -1), GRID_COLOR)


def polyline(debug: DebugDraw, points: FloatArray, color: tuple[float, float, float, float]) -> None:
    """Segments joining consecutive ``points`` ``(N, 3)``."""
    if len(points) > 1:
        debug.lines(points[:-1], points[1:], color)


def window(t: float, duration: float) -> FloatArray:
    """The plot's sample times ``(PLOT_SAMPLES,)``: the last :data:`PLOT_SECONDS` before ``t``, looped."""
    return np.mod(t - np.linspace(PLOT_SECONDS, 0.0, PLOT_SAMPLES), duration)


def at(run: framing.Run, values: FloatArray, times: FloatArray) -> FloatArray:
    """Per-step ``values`` of ``run`` (one per step, or one fewer) seen at ``times`` (sample and hold)."""
    return values[np.minimum(run.index(times), len(values) - 1)]


def pose(run: framing.Run, t: float) -> tuple[FloatArray, FloatArray]:
    """Position ``(3,)`` and orientation ``(4,)`` of ``run`` at time ``t``."""
    row = int(run.index(t))
    return run.positions[row], run.orientations[row]


# --- the scenes ------------------------------------------------------------------------------------


class Scene(ABC):
    """What every scene provides; the subclasses below fill it in.

    Attributes
    ----------
    name, caption
        Short name (header) and one-line description (first pane).
    panes
        One name per viewport.
    duration
        Seconds before the scene loops.
    state
        The lab's :class:`LabState`, shared by every scene and changed by the keys.
    """

    name = ""
    caption = ""
    panes: tuple[str, ...] = ()
    duration = 1.0

    def __init__(self, state: LabState) -> None:
        self.state = state

    @abstractmethod
    def observer(self) -> Orbit:
        """The observer's starting position for this scene."""

    @abstractmethod
    def figure(self, t: float) -> Figure:
        """The character at time ``t``."""

    @abstractmethod
    def draw(self, debug: DebugDraw, pane: int, t: float) -> None:
        """Add pane ``pane``'s world-space lines at time ``t`` to ``debug`` (no cameras in lens mode)."""

    @abstractmethod
    def pane(self, pane: int, t: float) -> Pane:
        """Title, numbers, plot and lens camera of pane ``pane`` at time ``t``."""


class SmoothingScene(Scene):
    """Naive ``s·dt`` vs exponential vs spring smoothing, each at 30, 60 and 144 FPS (one pane per method)."""

    name = "smoothing"
    caption = "one target, 3 methods x 30/60/144 FPS"
    panes = ex.METHODS
    duration = ex.DURATION

    def __init__(self, state: LabState, runs: dict[tuple[str, int], ex.SmoothingRun]) -> None:
        super().__init__(state)
        self.runs = runs
        self.table = {(row.method, row.fps): row for row in ex.smoothing_table(runs)}
        angles = np.linspace(0.0, 2.0 * np.pi, 65)
        self.circle = ex.CIRCLE_CENTRE + ex.CIRCLE_RADIUS * np.stack(
            (np.cos(angles), np.full_like(angles, 0.02), np.sin(angles)), -1
        )

    def observer(self) -> Orbit:
        """Above and to the right of the cameras, the circle in view."""
        return Orbit(np.array([0.0, 0.0, 3.3]), 11.0, 0.25, -0.95)

    def figure(self, t: float) -> Figure:
        """The target: standing (idle), then running the circle."""
        running = t >= ex.RUN_START
        clip_time = (t - ex.RUN_START) if running else t
        return Figure(ex.target_position(t), float(ex.target_heading(t)), "run" if running else "idle", clip_time)

    def draw(self, debug: DebugDraw, pane: int, t: float) -> None:
        """The circle, the aim point, and the method's three cameras with their sight lines."""
        polyline(debug, self.circle, DIM)
        debug.target(ex.look_point(t), size=0.12, color=TARGET_COLOR)
        if self.state.lens:
            return
        reach = float(np.linalg.norm(ex.look_point(t) - ex.EYE))
        for k, fps in enumerate(ex.FPS):
            position, orientation = pose(self.runs[self.panes[pane], fps], t)
            highlighted = k == self.state.fps_index
            draw_camera(debug, position, orientation, series_color(k), far=1.0, axes=highlighted, ray=reach)

    def pane(self, pane: int, t: float) -> Pane:
        """Angles to the target now, times to 95 %, spread across frame rates; plot of the angles."""
        method = self.panes[pane]
        runs = [self.runs[method, fps] for fps in ex.FPS]
        times = window(t, self.duration)
        now = [float(np.degrees(run.errors[run.index(t)])) for run in runs]
        t95 = [self.table[method, fps].time_to_95 for fps in ex.FPS]
        info = [
            "error now  " + " / ".join(f"{e:4.1f}" for e in now) + " deg",
            "to 95 %   " + " / ".join(f"{s:.3f}" for s in t95) + " s",
            f"30 vs 144 FPS: up to {self.table[method, ex.FPS[0]].spread:.3f} deg",
        ]
        plot = Plot(
            [np.degrees(at(run, run.errors, times)) for run in runs],
            [f"{fps}" for fps in ex.FPS],
            (0.0, 45.0),
            "deg to target",
        )
        titles = {"naive": "naive slerp(q, goal, s*dt)", "exponential": "exponential 1-exp(-k*dt)"}
        return Pane(titles.get(method, "critically damped spring"), info, plot, pose(runs[self.state.fps_index], t))


class FilterScene(Scene):
    """Jittery head tracking: raw vs One-Euro vs Kalman (one pane each), the gaze traced on a wall."""

    name = "jitter"
    caption = "90 Hz head tracker + noise (grey: clean)"
    panes = ex.FILTERS
    duration = ex.FILTER_DURATION
    trail_seconds = 1.5

    def __init__(self, state: LabState, filters: ex.FilterRuns) -> None:
        super().__init__(state)
        self.filters = filters

    def observer(self) -> Orbit:
        """Beside and behind the wearer, looking at the wall."""
        return Orbit(np.array([0.0, 1.6, -0.5]), 8.5, 0.75, -0.15)

    def figure(self, t: float) -> Figure:
        """The tracker's wearer, facing the wall."""
        return Figure(ex.WEARER, np.pi, "idle", t)

    def gaze(self, orientations: FloatArray) -> FloatArray:
        """Where view directions ``(..., 4)`` from :data:`~.experiments.HEAD` meet the wall ``(..., 3)``."""
        forward = camera_axes(orientations)[2]
        reach = (ex.WALL_Z - ex.HEAD[2]) / np.minimum(forward[..., 2:], -1e-3)
        return ex.HEAD + reach * forward

    def draw(self, debug: DebugDraw, pane: int, t: float) -> None:
        """The wall, the clean and the filtered gaze trails, and the head camera."""
        ticks = np.arange(-5.0, 5.5, 0.5)
        heights = np.arange(0.0, 4.25, 0.5)
        bottom = np.stack((ticks, 0.0 * ticks, np.full_like(ticks, ex.WALL_Z)), -1)
        debug.lines(bottom, bottom + np.array([0.0, 4.0, 0.0]), GRID_COLOR)
        left = np.stack((np.full_like(heights, -5.0), heights, np.full_like(heights, ex.WALL_Z)), -1)
        debug.lines(left, left + np.array([10.0, 0.0, 0.0]), GRID_COLOR)
        run = self.filters.runs[self.panes[pane]]
        rows = run.index(np.linspace(t - self.trail_seconds, t, round(self.trail_seconds * ex.TRACKER_RATE)))
        rows = rows[rows <= run.index(t)]  # no trail from the end of the last loop
        off_wall = np.array([0.0, 0.0, 0.02])
        polyline(debug, self.gaze(self.filters.clean.orientations[rows]) + off_wall, DIM)
        polyline(debug, self.gaze(run.orientations[rows]) + 2.0 * off_wall, series_color(0))
        if not self.state.lens:
            position, orientation = pose(run, t)
            reach = float(np.linalg.norm(self.gaze(orientation) - position))
            draw_camera(debug, position, orientation, series_color(0), ray=reach)

    def pane(self, pane: int, t: float) -> Pane:
        """The filter's jitter and lag; plot of the angle from the clean path."""
        name = self.panes[pane]
        run = self.filters.runs[name]
        times = window(t, self.duration)
        info = [
            f"jitter {self.filters.jitter[name]:6.1f} rad/s^2",
            f"lag    {1000.0 * self.filters.lag[name]:6.1f} ms",
        ]
        titles = {"raw": "raw tracker (no filter)", "one-euro": "One-Euro filter", "kalman": "Kalman (const. velocity)"}
        plot = Plot([np.degrees(at(run, self.filters.errors[name], times))], [name], (0.0, 5.0), "deg from clean")
        return Pane(titles[name], info, plot, pose(run, t))


class ConeScene(Scene):
    """A wandering head camera held in a cone around the character's facing: cone_clamp vs swing-twist."""

    name = "cone"
    caption = "-/= limit, [/] twist; grey camera: wanted"
    panes = ("cone_clamp", "swing_twist_clamp")
    duration = framing.CONE_DURATION

    def observer(self) -> Orbit:
        """Behind and beside the character, looking along its facing."""
        return Orbit(np.array([0.0, 1.5, 1.2]), 6.5, np.pi + 0.9, -0.35)

    def figure(self, t: float) -> Figure:
        """The character whose facing is the cone's centre."""
        return Figure(np.zeros(3), 0.0, "idle", t)

    def cone(self) -> framing.ConeRun:
        """The cone run for the current limits (recomputed only when they change)."""
        state = self.state
        if state.cone is None or (state.cone.limit, state.cone.twist_limit) != (state.cone_limit, state.twist_limit):
            state.cone = framing.cone_run(state.cone_limit, state.twist_limit)
        return state.cone

    def draw(self, debug: DebugDraw, pane: int, t: float) -> None:
        """The cone (white), markers to look at, the wanted (grey) and the clamped camera."""
        run = self.cone()
        around = np.linspace(0.0, 2.0 * np.pi, 33)
        right, up, forward = camera_axes(framing.CONE_CENTRE)
        limit = self.state.cone_limit
        spokes = np.cos(limit) * forward + np.sin(limit) * (
            np.cos(around)[:, None] * right + np.sin(around)[:, None] * up
        )
        rim = framing.CONE_EYE + 2.0 * spokes
        debug.lines(framing.CONE_EYE, rim[::4], WHITE)
        polyline(debug, rim, WHITE)
        for k, spot in enumerate(np.linspace(-4.0, 4.0, 5)):
            debug.target([spot, 1.0 + 0.4 * k, 5.0], size=0.25, color=series_color(k))
        if self.state.lens:
            return
        position, desired = pose(run.desired, t)
        draw_camera(debug, position, desired, DIM, axes=False, ray=2.5)
        clamped = (run.cone, run.swing_twist)[pane]
        draw_camera(debug, position, pose(clamped, t)[1], series_color(0), ray=2.5)

    def pane(self, pane: int, t: float) -> Pane:
        """The limits and the clamped angles now; plot of the wanted and clamped angles."""
        run = self.cone()
        times = window(t, self.duration)
        limits = f"limit {np.degrees(self.state.cone_limit):.0f} deg"
        if pane == 0:
            limit = np.full(PLOT_SAMPLES, np.degrees(self.state.cone_limit))
            series = [at(run.cone, run.angles["cone"], times), limit, at(run.desired, run.angles["desired"], times)]
            row = run.cone.index(t)
            info = [limits, f"from centre {run.angles['cone'][row]:5.1f} (wants {run.angles['desired'][row]:5.1f})"]
            plot = Plot(series, ["clamped", "limit", "wanted"], (0.0, 120.0), "deg from centre")
            return Pane("cone_clamp (exact; roll counts)", info, plot, pose(run.cone, t))
        series = [
            at(run.swing_twist, run.angles["swing"], times),
            at(run.swing_twist, run.angles["twist"], times),
            at(run.desired, run.angles["desired swing"], times),
        ]
        row = run.swing_twist.index(t)
        info = [
            f"{limits}, twist {np.degrees(self.state.twist_limit):.0f} deg",
            f"swing {run.angles['swing'][row]:5.1f}  twist {run.angles['twist'][row]:5.1f}",
        ]
        plot = Plot(series, ["swing", "twist", "wanted swing"], (0.0, 120.0), "deg")
        return Pane("swing_twist_clamp", info, plot, pose(run.swing_twist, t))


class OverheadScene(Scene):
    """A target flying straight over a tripod camera: look_at with last frame's orientation vs without."""

    name = "overhead"
    caption = "white line: the camera's screen-up"
    panes = ("tracking", "stateless")
    duration = framing.OVERHEAD_DURATION

    def __init__(self, state: LabState, overhead: framing.OverheadRun) -> None:
        super().__init__(state)
        self.overhead = overhead
        self.path = framing.drone_position(np.linspace(0.0, framing.OVERHEAD_DURATION / 2.0, 40))

    def observer(self) -> Orbit:
        """From the side of the flight path."""
        return Orbit(np.array([0.0, 2.8, 0.0]), 12.0, 1.25, -0.2)

    def figure(self, t: float) -> Figure:
        """The camera operator, beside the tripod."""
        return Figure(np.array([0.0, 0.0, 1.5]), np.pi, "idle", t)

    def run(self, pane: int) -> framing.Run:
        """The tracking (pane 0) or the stateless (pane 1) look-at run."""
        return (self.overhead.tracking, self.overhead.stateless)[pane]

    def draw(self, debug: DebugDraw, pane: int, t: float) -> None:
        """The tripod, the flight path, the target, and the camera with its screen-up."""
        feet = np.array([[0.5, 0.0, 0.0], [-0.25, 0.0, 0.43], [-0.25, 0.0, -0.43]])
        debug.lines(framing.TRIPOD, framing.TRIPOD * np.array([1.0, 0.0, 1.0]) + feet, DIM)
        polyline(debug, self.path, DIM)
        drone = framing.drone_position(t)
        debug.target(drone, size=0.3, color=TARGET_COLOR)
        if not self.state.lens:
            position, orientation = pose(self.run(pane), t)
            reach = float(np.linalg.norm(drone - position))
            draw_camera(debug, position, orientation, series_color(0), far=1.4, ray=reach)
            debug.lines(position, position + 0.9 * quat_rotate(orientation, [0.0, 1.0, 0.0]), WHITE)

    def pane(self, pane: int, t: float) -> Pane:
        """The turn this frame and the largest; plot of the turn per frame, camera and target direction."""
        name = self.panes[pane]
        run = self.run(pane)
        steps = self.overhead.steps[name]
        times = window(t, self.duration)
        info = [
            f"turn this frame {at(run, steps, np.array(t)):6.2f} deg",
            f"largest turn {steps.max():6.1f} deg (target {self.overhead.target_steps.max():.1f})",
        ]
        plot = Plot(
            [at(run, steps, times), at(run, self.overhead.target_steps, times)],
            ["camera", "target"],
            (0.0, 4.0),
            "deg per frame",
        )
        title = "look_at(previous=last frame)" if pane == 0 else "look_at() stateless: flips"
        return Pane(title, info, plot, pose(run, t))


class TransitionScene(Scene):
    """A cut-scene through five viewpoints: slerp (kinks at the keys) vs squad (C1), the same spline path."""

    name = "transition"
    caption = "same path; trail: view direction"
    panes = framing.ROTATIONS

    def __init__(self, state: LabState, transitions: framing.TransitionRuns) -> None:
        super().__init__(state)
        self.transitions = transitions
        self.duration = float(transitions.runs["squad"].times[-1])
        self.keys = framing.viewpoint_orientations()

    def observer(self) -> Orbit:
        """High above the viewpoints."""
        return Orbit(np.array([0.0, 1.5, 0.0]), 12.5, 0.55, -0.55)

    def figure(self, t: float) -> Figure:
        """The character the cut-scene shows."""
        return Figure(np.zeros(3), 0.0, "idle", t)

    def draw(self, debug: DebugDraw, pane: int, t: float) -> None:
        """The key viewpoints (grey), the path, the trail of the view direction, the camera now."""
        if self.state.lens:
            return
        run = self.transitions.runs[self.panes[pane]]
        for position, orientation in zip(framing.VIEWPOINTS, self.keys, strict=True):
            draw_camera(debug, position, orientation, DIM, axes=False)
        polyline(debug, run.positions[::2], DIM)
        polyline(debug, run.positions + 1.5 * camera_axes(run.orientations)[2], series_color(0))
        position, orientation = pose(run, t)
        draw_camera(debug, position, orientation, WHITE, far=1.5, ray=1.5)

    def pane(self, pane: int, t: float) -> Pane:
        """Angular speed now and the largest jump of the angular velocity; plot of the angular speed."""
        name = self.panes[pane]
        run = self.transitions.runs[name]
        speeds = self.transitions.speeds[name]
        times = window(t, self.duration)
        info = [
            f"turning {at(run, speeds, np.array(t)):5.1f} deg/s",
            f"largest velocity jump {self.transitions.kinks[name].max():5.1f} deg/s",
        ]
        plot = Plot([at(run, speeds, times)], [name], (0.0, 120.0), "deg/s")
        title = "slerp: C0 at the keys" if name == "slerp" else "squad: C1 through the keys"
        return Pane(title, info, plot, pose(run, t))


def make_scenes(state: LabState, experiments: ex.Experiments) -> list[Scene]:
    """The five scenes, in key order 1-5, sharing ``state``."""
    return [
        SmoothingScene(state, experiments.smoothing),
        FilterScene(state, experiments.filters),
        ConeScene(state),
        OverheadScene(state, experiments.overhead),
        TransitionScene(state, experiments.transitions),
    ]
