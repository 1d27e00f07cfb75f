"""The testbed's transitions view: one transition made four ways, side by side, with a joint's curves.

Run ``python -m game.blend_testbed --transitions`` (or ``python -m game.blend_testbed.transitions``),
``--model PATH`` for any skinned glTF, ``--source``/``--target`` to pick the two clips.

What to look at
---------------
- **Four characters, one graph, one input stream.** Each plays the same two-state graph
  (:mod:`engine.graph`): the source clip, then the target clip. Only the kind of their
  transitions differs: a **crossfade** (both clips sampled and blended linearly), an
  **inertialization** (only the target, plus the source's offset decaying with Bollo's quintic),
  a **spring** inertialization (the offset decays with a critically damped spring of half-life
  ``duration / 4``) and **dead blending** (the source extrapolated with decaying velocity,
  smoothstepped into the target).
- **The plots** (bottom) follow one joint (J cycles; by default the one the two clips move most
  apart): its rotation angle from its rest rotation, its angular speed and its angular
  acceleration, one colour per method, over the last three seconds. A crossfade's velocity kinks
  where it starts and ends (an acceleration spike); the inertialized ones start with the source's
  velocity, so their acceleration stays bounded.
- **The scenario plays by itself**: the transition at 0.5 s, then a rapid back-and-forth from 2 s
  (every 0.12 s, six times: each new transition starts before the last one ends, from the
  current output and its velocity). T toggles a transition now, R starts a burst.
- ``--report DIR`` writes ``transitions.csv`` (per step and method: time, state, the joint's angle,
  angular speed and acceleration) and ``transitions.png`` (the three curves over the run).

Keys: T transition, R rapid re-trigger, ``[`` ``]`` duration -/+ 0.1 s, J next joint, Space pause,
N single step, B bones, mouse drag orbit, F12 screenshot, Esc quit.

Engine functions exercised: :func:`engine.graph.parse_graph`, :func:`engine.graph.bind_graph`,
:class:`engine.graph.GraphRuntime` (``parameters``, ``update``, ``output_velocity``);
:mod:`engine.anim.inertialization` through the graph; :func:`engine.anim.rootmotion.remove_planar`;
``model_from_pose``, ``skinning_palette``; :class:`engine.render.SkinnedMesh`, ``PaletteBuffer``,
``DebugDraw``; :class:`engine.camera.Camera`.
"""

from __future__ import annotations

import argparse
import csv
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import moderngl
import numpy as np
import pygame

from engine.anim import model_from_pose, sample, skinning_palette
from engine.anim.rootmotion import remove_planar
from engine.camera import Camera, camera_axes, orbit_orientation
from engine.errors import InvalidInputError
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.io import Character, load_character
from engine.math._checks import FloatArray
from engine.render import DebugDraw, PaletteBuffer, SkinnedMesh
from game import app
from game.ui import ACCENT, SERIES_COLORS, Overlay

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "assets" / "mannequin.glb"
METHODS = ("crossfade", "inertialize", "spring", "dead_blend")
LABELS = {"crossfade": "crossfade", "inertialize": "inertialization", "spring": "spring", "dead_blend": "dead blending"}
FIRST = 0.5
"""Seconds into the run of the scenario's first transition."""
BURST = 2.0
"""Seconds into the run of the scenario's rapid back-and-forth."""
BURST_GAP = 0.12
BURST_COUNT = 6
HISTORY_SECONDS = 3.0
DURATION_RANGE = (0.1, 2.0)
CSV_FILE = "transitions.csv"
PLOT_FILE = "transitions.png"
BACKGROUND = (0.12, 0.13, 0.16, 1.0)
PANEL_WIDTH = 330


def build_parser() -> argparse.ArgumentParser:
    """The view's options: the common ones (game/app.py), the model, the two clips, the report."""
    parser = app.common_parser(
        "game.blend_testbed --transitions",
        "Ossa transitions view: crossfade, inertialization, spring and dead blending side by side.",
    )
    parser.add_argument("--source", default=None, help="clip played first (default: a run or walk)")
    parser.add_argument("--target", default=None, help="clip transitioned to (default: an idle)")
    parser.add_argument("--duration", type=float, default=0.4, help="transition duration in seconds (default 0.4)")
    parser.add_argument("--joint", default=None, help="joint plotted (default: the one the clips move most apart)")
    parser.add_argument("--report", type=Path, help="write the joint's curves (CSV + PNG) to this folder")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the view, then write the ``--report`` files."""
    views: list[TransitionsView] = []

    def factory(args: argparse.Namespace) -> TransitionsView:
        views.append(TransitionsView(args))
        return views[-1]

    code = app.main(factory, build_parser(), argv)
    if code == 0 and views and views[0].recorder is not None:
        for path in write_report(views[0].recorder):
            print(f"wrote {path}")
    return code


# --- the graph ------------------------------------------------------------------------------------


def choose_clips(character: Character, source: str | None, target: str | None) -> tuple[str, str]:
    """The source and target clip names: given, or a gait and an idle by name (or the first two clips)."""
    names = list(character.clips)
    for given, flag in ((source, "--source"), (target, "--target")):
        if given is not None and given not in names:
            raise InvalidInputError(f"{flag} names clip {given!r}, but the model's clips are {names}")
    if len(names) < 2 and (source is None or target is None):
        raise InvalidInputError(f"the transitions view needs two clips, the model has {names}")

    def find(words: tuple[str, ...], avoid: str | None) -> str:
        found = [n for n in names if n != avoid and any(w in n.lower() for w in words)]
        return found[0] if found else next(n for n in names if n != avoid)

    source = source or find(("run", "walk"), target)
    target = target or find(("idle", "survey", "stand"), source)
    return source, target


def transitions_document(source: str, target: str, duration: float) -> dict[str, Any]:
    """Two states and, for every method, a transition each way on its own trigger (``go_METHOD``)."""

    def timing(kind: str) -> dict[str, Any]:
        return {"kind": kind, "half_life": duration / 4.0} if kind == "spring" else {"kind": kind, "duration": duration}

    def leaving(to: str) -> list[dict[str, Any]]:
        return [{"to": to, "conditions": [{"parameter": f"go_{kind}"}], **timing(kind)} for kind in METHODS]

    return {
        "name": "transitions view",
        "parameters": {f"go_{kind}": {"type": "trigger"} for kind in METHODS},
        "start": "source",
        "states": {
            "source": {"motion": {"clip": source}, "transitions": leaving("target")},
            "target": {"motion": {"clip": target}, "transitions": leaving("source")},
        },
    }


def ranked_joints(character: Character, source: str, target: str) -> list[int]:
    """Joints by how far apart the two clips turn them (mean angle over the clips), most first."""
    skeleton = character.skeleton
    a, b = (character.clips[n] for n in (source, target))
    times_a, times_b = (np.linspace(0.0, c.duration, 24) for c in (a, b))
    rotations_a = sample(a, skeleton.rest_pose, times_a).rotations[:, None]
    rotations_b = sample(b, skeleton.rest_pose, times_b).rotations[None, :]
    dot = np.clip(np.abs(np.sum(rotations_a * rotations_b, axis=-1)), 0.0, 1.0)
    spread = (2.0 * np.arccos(dot)).mean(axis=(0, 1))
    return [int(j) for j in np.argsort(-spread, kind="stable")]


@dataclass
class Recorder:
    """Per step: time, then per method the state (0 source, 1 target), angle, speed and acceleration."""

    directory: Path
    joint: str
    times: list[float] = field(default_factory=list)
    rows: list[FloatArray] = field(default_factory=list)
    events: list[float] = field(default_factory=list)

    def record(self, time: float, states: FloatArray, curves: FloatArray) -> None:
        """Keep one step: ``states`` ``(4,)`` and ``curves`` ``(3, 4)`` (angle °, speed °/s, acceleration °/s²)."""
        self.times.append(time)
        self.rows.append(np.concatenate((states[None], curves)).T.copy())  # (4 methods, 4 values)


def write_report(recorder: Recorder) -> list[Path]:
    """Write the CSV and the PNG into the recorder's folder (created); return their paths."""
    directory = recorder.directory
    directory.mkdir(parents=True, exist_ok=True)
    times, rows = np.array(recorder.times), np.array(recorder.rows)  # rows: (steps, methods, 4)
    paths = [directory / CSV_FILE, directory / PLOT_FILE]
    with paths[0].open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["step", "time", "method", "state", "joint", "angle_deg", "speed_deg_s", "acceleration_deg_s2"])
        for step, (time, values) in enumerate(zip(times, rows, strict=True)):
            for method, (state, angle, speed, acceleration) in zip(METHODS, values, strict=True):
                state_name = "target" if state else "source"
                writer.writerow(
                    [
                        step,
                        f"{time:.6f}",
                        method,
                        state_name,
                        recorder.joint,
                        f"{angle:.6f}",
                        f"{speed:.6f}",
                        f"{acceleration:.6f}",
                    ]
                )
    from matplotlib.figure import Figure  # noqa: PLC0415 (lazy: only a report needs matplotlib)

    figure = Figure(figsize=(10, 9), layout="constrained")
    panels = figure.subplots(3, 1, sharex=True)
    titles = (
        f"{recorder.joint}: rotation angle from rest (degrees)",
        "angular speed (degrees per second)",
        "angular acceleration (degrees per second squared)",
    )
    for panel, title, column in zip(panels, titles, (1, 2, 3), strict=True):
        for m, method in enumerate(METHODS):
            color = np.array(SERIES_COLORS[m]) / 255.0
            panel.plot(times, rows[:, m, column], color=color, label=LABELS[method])
        for event in recorder.events:
            panel.axvline(event, color="0.6", linewidth=0.8, linestyle=":")
        panel.set(title=title)
        panel.set_facecolor("#202228")
    panels[0].legend(loc="upper right", fontsize="small")
    panels[-1].set(xlabel="time (s); dotted: a transition starts")
    figure.savefig(paths[1], dpi=80)
    return paths


# --- the program --------------------------------------------------------------------------------------


class TransitionsView:
    """The view as an :class:`app.Program`: a schedule and keys → triggers, then four characters and plots."""

    title = "Ossa transitions view"

    def __init__(self, args: argparse.Namespace) -> None:
        self.character = load_character(args.model or DEFAULT_MODEL, clips=args.clips)
        self.skeleton = self.character.skeleton
        self.source, self.target = choose_clips(self.character, args.source, args.target)
        if not DURATION_RANGE[0] <= args.duration <= DURATION_RANGE[1]:
            raise InvalidInputError(f"--duration must be within {DURATION_RANGE} seconds, got {args.duration}")
        self.duration = float(args.duration)
        self.joints = ranked_joints(self.character, self.source, self.target)
        if args.joint is not None:
            self.joints.remove(self.skeleton.index(args.joint))
            self.joints.insert(0, self.skeleton.index(args.joint))
        self.joint = self.joints[0]
        self.root = 0 if np.allclose(self.character.root_transform, np.eye(4)) else None  # play in place
        self.recorder = Recorder(args.report, self.skeleton.names[self.joint]) if args.report else None
        self.time, self.paused, self.show_bones, self.finished = 0.0, False, False, False
        self.yaw, self.pitch = 0.6, -0.15
        self.schedule = [FIRST] + [BURST + k * BURST_GAP for k in range(BURST_COUNT)]
        self.history: deque[FloatArray] = deque(maxlen=round(HISTORY_SECONDS / app.FIXED_DT))
        self.message = f"{self.source} -> {self.target}, {self.duration:.1f} s"
        self._build()
        points = np.concatenate([mesh.positions for mesh in self.character.meshes])
        world = points @ self.character.root_transform[:3, :3].T + self.character.root_transform[:3, 3]
        low, high = world.min(axis=0), world.max(axis=0)
        self.center, self.extent, self.floor = (low + high) / 2.0, high - low, float(low[1])
        self.spacing = 1.2 * max(self.extent[0], self.extent[2], 0.5 * self.extent[1])

    def _build(self) -> None:
        """The graph for the current duration, four characters at the start, nothing recorded yet."""
        document = transitions_document(self.source, self.target, self.duration)
        graph = bind_graph(parse_graph(document, "transitions view"), self.skeleton, self.character.clips)
        self.runtime = GraphRuntime(graph, len(METHODS))
        self.at_target = False
        self.speed = np.zeros((len(METHODS), 3))  # the plotted joint's angular velocity last step, rad/s
        self._measure(0.0)

    # --- setup -----------------------------------------------------------------------------------------

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Meshes, a palette buffer for four characters, debug lines, overlays."""
        self.size = size
        self.meshes = [SkinnedMesh(ctx, mesh) for mesh in self.character.meshes]
        self.palette = PaletteBuffer(ctx, self.skeleton.num_joints)
        self.debug = DebugDraw(ctx)
        self.overlay = Overlay(ctx, size)

    # --- update --------------------------------------------------------------------------------------

    def trigger(self) -> None:
        """Start the transition to the other state for every character, each by its own method."""
        for c, kind in enumerate(METHODS):
            self.runtime.parameters.set_trigger(f"go_{kind}", c)
        self.at_target = not self.at_target
        if self.recorder is not None:
            self.recorder.events.append(self.time)

    def update(self, dt: float, controls: app.Controls) -> None:
        """Keys and the schedule, then one step of the graph and the joint's curves."""
        pressed = controls.pressed
        single_step = "n" in pressed
        if single_step:
            self.paused = True
        if "space" in pressed:
            self.paused = not self.paused
        self.yaw -= 0.01 * float(controls.mouse[0])
        self.pitch = float(np.clip(self.pitch - 0.01 * controls.mouse[1], -1.2, 1.2))
        if "t" in pressed:
            self.trigger()
        if "r" in pressed:
            self.schedule += [self.time + k * BURST_GAP for k in range(BURST_COUNT)]
            self.message = f"rapid re-trigger: {BURST_COUNT} transitions {BURST_GAP:.2f} s apart"
        if "[" in pressed or "]" in pressed:
            step = 0.1 * (("]" in pressed) - ("[" in pressed))
            self.duration = round(float(np.clip(self.duration + step, *DURATION_RANGE)), 6)
            self._build()
            self.message = f"duration {self.duration:.1f} s (restarted)"
        if "j" in pressed:
            self.joint = self.joints[(self.joints.index(self.joint) + 1) % len(self.joints)]
            self.history.clear()
            self.message = f"joint {self.skeleton.names[self.joint]}"
        if "b" in pressed:
            self.show_bones = not self.show_bones
        if "escape" in pressed:
            self.finished = True
        if self.paused and not single_step:
            return
        while self.schedule and self.schedule[0] <= self.time + 1e-9:
            self.schedule.pop(0)
            self.trigger()
        self.runtime.update(dt)
        self.time += dt
        self._measure(dt)

    def _measure(self, dt: float) -> None:
        """The plotted joint's angle from rest, angular speed and acceleration per method (degrees)."""
        j = self.joint
        rotation = self.runtime.local_pose.rotations[:, j]
        rest = self.skeleton.rest_rotations[j]
        angle = 2.0 * np.arccos(np.clip(np.abs(rotation @ rest), 0.0, 1.0))
        speed = self.runtime.output_velocity().angular[:, j]
        acceleration = np.linalg.norm(speed - self.speed, axis=-1) / dt if dt > 0.0 else np.zeros(len(METHODS))
        self.speed = speed
        self.curves = np.degrees(np.stack((angle, np.linalg.norm(speed, axis=-1), acceleration)))
        self.history.append(self.curves)
        if self.recorder is not None and dt > 0.0:
            states = np.array(self.runtime.root.state, dtype=float)
            self.recorder.record(self.time, states, self.curves)

    # --- render --------------------------------------------------------------------------------------

    def render(self, ctx: moderngl.Context, framebuffer: moderngl.Framebuffer) -> None:  # noqa: ARG002 (Program)
        """Four characters in a row, the floor, labels, then the status panel and the three plots."""
        framebuffer.clear(*BACKGROUND, depth=1.0)
        pose = self.runtime.local_pose.copy()
        if self.root is not None:
            pose.translations[:, self.root], pose.rotations[:, self.root] = remove_planar(
                pose.translations[:, self.root], pose.rotations[:, self.root]
            )
        model = model_from_pose(self.skeleton, pose)
        orientation = orbit_orientation(self.yaw, self.pitch)
        right, _, forward = camera_axes(orientation)
        flat = np.array([right[0], 0.0, right[2]]) / max(float(np.hypot(right[0], right[2])), 1e-9)
        offsets = np.outer(np.arange(len(METHODS)) - 1.5, self.spacing * flat)
        worlds = np.repeat(np.eye(4)[None], len(METHODS), axis=0)
        worlds[:, :3, 3] = offsets
        worlds = worlds @ self.character.root_transform
        aspect = self.size[0] / self.size[1]
        width = self.extent[1] * 0.8 + 4.0 * self.spacing
        half_fov = np.radians(30.0)
        distance = 1.2 * max(0.5 * self.extent[1] / np.tan(half_fov), 0.5 * width / (np.tan(half_fov) * aspect))
        pivot = self.center + np.array([0.0, -0.15 * self.extent[1], 0.0])
        camera = Camera(pivot - distance * forward, orientation, near=distance / 100.0, far=distance * 10.0)
        view, projection = camera.view_matrix(), camera.projection_matrix(aspect)
        self.palette.upload(skinning_palette(self.skeleton, model))
        for mesh in self.meshes:
            mesh.draw(self.palette, view, projection, worlds)
        floor = np.array([self.center[0], self.floor, self.center[2]])
        square = 0.4 * self.spacing * np.array([[-1.0, 0, -1], [1, 0, -1], [1, 0, 1], [-1, 0, 1]])
        for k in range(len(METHODS)):  # a coloured square under each character
            corners = floor + offsets[k] + square
            color = (*(np.array(SERIES_COLORS[k]) / 255.0), 1.0)
            self.debug.lines(corners, np.roll(corners, -1, axis=0), color)
        if self.show_bones:
            self.debug.bones(self.skeleton, worlds[:, None] @ model)
        self.debug.flush(view, projection, depth_test=not self.show_bones)
        self._overlays(projection @ view, floor, offsets)

    def _overlays(self, view_projection: FloatArray, floor: FloatArray, offsets: FloatArray) -> None:
        screen = pygame.Surface(self.size, pygame.SRCALPHA)
        state = "target" if self.at_target else "source"
        lines: list[str | tuple[str, tuple[int, int, int]]] = [
            f"{self.source} <-> {self.target}: now {state}",
            f"T transition  R rapid re-trigger  [ ] duration {self.duration:.1f} s",
            f"J joint: {self.skeleton.names[self.joint]}  B bones  Space/N pause/step",
            (self.message, ACCENT),
        ]
        screen.blit(self.overlay.text_panel(lines, PANEL_WIDTH), (10, 10))
        history = np.array(self.history)  # (steps, 3, methods)
        plot_width = (self.size[0] - 40) // 3
        plot_height = min(120, self.size[1] // 4)
        titles = ("angle (deg)", "speed (deg/s)", "accel (deg/s2)")
        for k, title in enumerate(titles):
            series = list(history[:, k].T) if history.size else []
            top = float(max(np.max(history[:, k]) if history.size else 1.0, 1.0)) * 1.05
            labels = [LABELS[m] for m in METHODS] if k == 0 else []
            plot = self.overlay.plot(
                series, labels, (plot_width, plot_height), (0.0, top), title=f"{title} <= {top:.0f}"
            )
            screen.blit(plot, (10 + k * (plot_width + 10), self.size[1] - plot_height - 10))
        for k, method in enumerate(METHODS):  # a label over each character
            clip = view_projection @ np.append(floor + offsets[k] + np.array([0.0, 1.05 * self.extent[1], 0.0]), 1.0)
            x = (clip[0] / max(abs(clip[3]), 1e-9) + 1.0) / 2.0 * self.size[0]
            y = (1.0 - clip[1] / max(abs(clip[3]), 1e-9)) / 2.0 * self.size[1]
            label = self.overlay.text_panel([(LABELS[method], SERIES_COLORS[k])])
            x = min(max(round(x - label.get_width() / 2), 0), self.size[0] - label.get_width())
            screen.blit(label, (x, max(round(y) - label.get_height(), 0)))
        self.overlay.draw(screen, (0, 0))


if __name__ == "__main__":
    raise SystemExit(main())
