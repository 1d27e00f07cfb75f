"""Animation-blending testbed: weights, crossfades, sync, masks and additive layers on one character.

Run ``python -m game.blend_testbed`` (the generated mannequin) or add ``--model PATH`` for any
glTF scene or BVH take, e.g. the Fox (Survey / Walk / Run), CesiumMan or the pirouette from
``../shared/assets``; a file without a skin (BoxAnimated, InterpolationTest, a morph cube) blends
its clips as an object. The blend is over the scene's whole node hierarchy and every mesh node is
drawn (rigid parts, morph weights blended like the clips). The character stands on the floor
whatever blend plays (each clip's lowest point over the clip is known,
:meth:`game.model.Model.ground`) and the camera frames the union of its clips' motion bounds.

What to look at
---------------
- **The sliders** (top left) are each clip's *effective* weight, user weight × fade factor,
  one colour per clip; **the plot strip** (bottom left) draws the same weights over the last
  four seconds. A crossfade (X) is two straight ramps of the chosen duration crossing at ½.
- **Blends.** Raise two clips at once (idle and walk): the pose is their per-joint
  weighted blend; while the total is below 1 the rest pose fills in (the animator's rest
  threshold), so a lone clip at 0.3 is three tenths of the way out of the rest pose.
- **Sync (S).** Blend walk and run 50/50 with sync off: their cycles (1 s and 0.7 s) drift
  apart and the feet shuffle. With sync on they share one normalised phase, stepping together
  at a cycle length between the two. Warp (W) makes crossfades ramp the speeds too.
- **Masks (M)** restrict the selected clip to the upper or lower body: walk on the legs and
  wave on the arms. **Additive (A)** adds the lean/look clip on top of whatever is blended.
- **Side by side (Tab)** draws the same blend computed three ways: our hemisphere-aligned
  weighted sum, a slerp chain, and the seed's naive unaligned sum (the bug, implemented here
  only). With aligned inputs the three agree (the slerp chain within a fraction of a degree).
  **F** feeds the last weighted layer with its quaternions negated, the same rotations: ours
  and the slerp chain do not move, the naive sum twists joints or collapses them; the labels
  show each method's largest per-joint angle from ours.
- ``--report DIR`` writes the effective weights and the per-joint angular error of the slerp
  chain and the naive sum from ours, every step, as CSV files and a matplotlib PNG.

Keys (every control has one, so ``--script`` files can drive it)
----------------------------------------------------------------
=================  ==========================================================================
1–9, Up/Down       select a clip
Right/+ , Left/-   selected clip's weight ± 0.1 (stops a fade on it)
X                  crossfade from the heaviest other clip to the selected one
[ and ]            crossfade duration ∓ 0.1 s
W                  warp speeds during crossfades on/off
S                  sync group (walk/run, or ``--sync``) on/off
M                  selected clip's mask: full → upper body → lower body
A                  additive layer on/off
, and .            time scale down/up;  Space pause;  N single step (pauses)
Tab                side-by-side comparison of the three blend methods
F                  negate the last weighted layer's quaternions (comparison inputs)
B                  bones;  R reset;  mouse drag orbit;  F12 screenshot;  Esc quit
=================  ==========================================================================

Engine functions exercised
--------------------------
:func:`engine.io.load_gltf`; :class:`engine.animator.Animator` (``action``, ``play``,
``set_weight``, ``stop``, ``crossfade_to`` with warp, ``set_mask``, ``sync_group``,
``update``, additive actions); :func:`engine.anim.blending.blend`, ``slerp_chain`` and
``subtree_mask``; :func:`engine.anim.additive.apply_additive` and ``Pose.identity``;
:func:`engine.anim.sampling.sample`; :func:`engine.anim.rootmotion.remove_planar`;
``model_from_pose`` and :meth:`engine.anim.scene.Scene.frame`; :class:`engine.render.SceneRenderer`
and ``DebugDraw``; :class:`engine.camera.Camera` and ``orbit_orientation``;
:func:`engine.math.quat_angle`.
"""

from __future__ import annotations

import argparse
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import moderngl
import numpy as np
import pygame

from engine.anim import (
    Clip,
    Pose,
    apply_additive,
    compile_clip,
    model_from_pose,
    sample,
)
from engine.anim.rootmotion import parent_up, remove_planar
from engine.anim.scene import SceneFrame
from engine.animator import Action, Animator
from engine.camera import Camera, camera_axes, orbit_orientation
from engine.math._checks import FloatArray
from engine.render import DebugDraw, SceneRenderer
from game import app
from game.blend_testbed.methods import LABELS, METHODS, angular_errors, blend_three_ways, flip_layer
from game.blend_testbed.playback import MASK_MODES, Playback, body_masks, choose_clips, sample_layers
from game.blend_testbed.report import Recorder, write_report
from game.bounds import fit_distance, framing_position
from game.model import body_weights, playing_clips
from game.ui import ACCENT, Overlay

WEIGHT_STEP = 0.1
DURATION_STEP = 0.1
DURATION_RANGE = (0.1, 5.0)
TIME_SCALES = (0.1, 0.25, 0.5, 1.0, 1.5, 2.0)
PLOT_SECONDS = 4.0
PANEL_WIDTH = 340
BACKGROUND = (0.12, 0.13, 0.16, 1.0)
PROG_MODULE = "game.blend_testbed"
PROG = f"python -m {PROG_MODULE}"
FOV_Y = float(np.radians(60.0))
FRAME_FILL = 0.7
"""The framed bounds reach at most this fraction of the frame's half-height from its middle."""
METHOD_COLORS = {"ours": (0.4, 0.9, 0.5, 1.0), "slerp": (0.4, 0.7, 1.0, 1.0), "naive": (1.0, 0.4, 0.3, 1.0)}


def build_parser() -> argparse.ArgumentParser:
    """The testbed's options: the common ones (game/app.py) plus model, layers and report."""
    parser = app.common_parser(
        PROG_MODULE, "Ossa animation-blending testbed: weights, crossfades, sync, masks, additive layers."
    )
    parser.add_argument(
        "--additive", default=None, help="clip played as the additive layer (default: lean_look if present; 'none')"
    )
    parser.add_argument("--sync", default=None, help="comma-separated clips of the sync group (default: walk, run)")
    parser.add_argument("--compare", action="store_true", help="start in the side-by-side comparison view")
    parser.add_argument("--report", type=Path, help="write weights and method errors (CSV + PNG) to this folder")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the testbed (``python -m game.blend_testbed``), then write the ``--report`` files.

    The report covers every recorded step, also of a run stopped by Ctrl-C (exit status 130) or
    ending with a GL error (3); a headless run without ``--frames`` stops after
    :data:`game.app.HEADLESS_FRAMES` frames and writes it too.
    """
    testbeds: list[BlendTestbed] = []

    def factory(args: argparse.Namespace) -> BlendTestbed:
        testbeds.append(BlendTestbed(args))
        return testbeds[-1]

    code = app.main(factory, build_parser(), argv)
    recorder = testbeds[0].recorder if testbeds else None
    if recorder is not None and recorder.times:  # also after Ctrl-C or a GL error: what was recorded
        try:
            paths = write_report(recorder)
        except OSError as exc:
            app.say(PROG, "error", f"--report {recorder.directory}: cannot write the report: {exc.strerror or exc}")
            return 2
        for path in paths:
            print(f"wrote {path}")
    return code


# --- the program ----------------------------------------------------------------------------------


class BlendTestbed:
    """The testbed as an :class:`app.Program`: keys → animator commands, then one or three characters."""

    title = "Ossa blend testbed"

    def __init__(self, args: argparse.Namespace) -> None:
        self.model = app.load_program_model(args)
        self.skeleton = self.model.skeleton
        roles = self.model.roles
        overrides, additive, sync = choose_clips(self.model.clips, args.additive, args.sync, (roles.walk, roles.run))
        self.names = overrides + ([f"{additive} (additive)"] if additive else [])
        self.sync_names = sync
        start = overrides.index(self.model.reference) if self.model.reference in overrides else 0  # not a RESET
        # Play in place: root motion is taken out of the pose, as the model's bounds were measured.
        self.playback = Playback(self.model, overrides, additive, sync, self.model.in_place, start)
        self.masks = body_masks(self.skeleton)
        self.compiled = [compile_clip(a.clip) if isinstance(a.clip, Clip) else a.clip for a in self.playback.actions[0]]
        self.delta_rest = Pose.identity(self.skeleton.num_joints)
        self.selected, self.duration, self.warp, self.sync = start, 0.5, True, bool(sync)
        self.time_scale, self.paused, self.compare, self.flip = TIME_SCALES.index(1.0), False, args.compare, False
        self.show_bones, self.mask_modes = False, ["full"] * len(self.names)
        self.message = (
            f"loaded {self.model.path.name}: {self.skeleton.num_joints} nodes, "
            f"{self.model.mesh_nodes} drawn, {len(self.names)} clips"
        )
        self.time, self.yaw, self.pitch = 0.0, 0.45, -0.12
        self.weights_history: deque[FloatArray] = deque(maxlen=round(PLOT_SECONDS / app.FIXED_DT))
        self.recorder = Recorder(args.report, self.names, list(self.skeleton.names)) if args.report else None
        self.finished = False
        self.clip_names = overrides
        self.framed: tuple[str, ...] = ()
        """The clips the camera frames: those playing (weight above 0), all of them when none plays."""
        self.floor = 0.0
        self._evaluate()
        self.spacing = 0.0
        """Metres between the side-by-side characters (set with the camera each frame)."""

    # --- setup: GL resources ----------------------------------------------------------------------

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """The model's whole scene (drawn for up to three characters at once), debug lines, overlays."""
        self.size = size
        self.character = SceneRenderer(ctx, self.model.scene)
        """Every mesh node of the model's scene; ``drawn_mesh_nodes`` counts what the last frame drew."""
        self.debug = DebugDraw(ctx)
        self.overlay = Overlay(ctx, size)

    # --- update: input, then animation ------------------------------------------------------------

    def update(self, dt: float, controls: app.Controls) -> None:
        """Apply this step's keys, advance the animators (scaled, paused, stepped), record."""
        single_step = self._handle_keys(controls.pressed)
        self.yaw -= 0.01 * float(controls.mouse[0])
        self.pitch = float(np.clip(self.pitch - 0.01 * controls.mouse[1], -1.2, 1.2))
        running = not self.paused or single_step
        self.playback.update(dt * TIME_SCALES[self.time_scale] if running else 0.0)
        self.time += dt
        self._evaluate()
        if self.recorder is not None:
            self.recorder.record(self.time, self.weights, angular_errors(self.methods))

    def _handle_keys(self, pressed: set[str]) -> bool:
        """Turn this step's key presses into commands; ``True`` when a single step was asked for."""
        rows = len(self.names)
        for k in range(min(rows, 9)):
            if str(k + 1) in pressed:
                self.selected = k
        self.selected = (self.selected + ("down" in pressed) - ("up" in pressed)) % rows
        change = len(pressed & {"right", "=", "+", "[+]"}) - len(pressed & {"left", "-", "[-]"})
        if change:
            weight = round(min(max(self.weights[self.selected] + WEIGHT_STEP * np.sign(change), 0.0), 1.0), 6)
            self.playback.set_weight(self.selected, weight)
            self.message = f"{self.names[self.selected]} weight {weight:.1f}"
        if "[" in pressed or "]" in pressed:
            step = DURATION_STEP * (("]" in pressed) - ("[" in pressed))
            self.duration = round(float(np.clip(self.duration + step, *DURATION_RANGE)), 6)
        if "x" in pressed:
            self._crossfade()
        toggles = {"w": "warp", "tab": "compare", "f": "flip", "b": "show_bones", "space": "paused"}
        for key, name in toggles.items():
            if key in pressed:
                setattr(self, name, not getattr(self, name))
        if "s" in pressed:
            self.sync = bool(self.sync_names) and not self.sync
            self.message = f"sync {'on' if self.sync else 'off'}" if self.sync_names else "no sync group: use --sync"
        if "m" in pressed:
            self._cycle_mask()
        if "a" in pressed:
            self._toggle_additive()
        self.time_scale = int(np.clip(self.time_scale + ("." in pressed) - ("," in pressed), 0, len(TIME_SCALES) - 1))
        if "r" in pressed:
            self.playback.reset()
            self.mask_modes = ["full"] * rows
            for row in range(rows):
                self.playback.set_mask(row, None)
            self.message = "reset"
        if "escape" in pressed:
            self.finished = True
        if "n" in pressed:
            self.paused = True
        return "n" in pressed

    def _crossfade(self) -> None:
        target = self.selected
        if target == self.playback.additive_row:
            self.message = "crossfade: select a blended clip, not the additive one"
            return
        others = [k for k in range(len(self.names)) if k not in (target, self.playback.additive_row)]
        source = max(others, key=lambda k: self.weights[k], default=None)
        if source is None or self.weights[source] <= 0.0:
            self.playback.fade_in(target, self.duration)
            self.message = f"fade in {self.names[target]} over {self.duration:.1f} s"
            return
        self.playback.crossfade(source, target, self.duration, self.warp)
        self.message = f"crossfade {self.names[source]} -> {self.names[target]} over {self.duration:.1f} s"

    def _cycle_mask(self) -> None:
        row = self.selected
        mode = MASK_MODES[(MASK_MODES.index(self.mask_modes[row]) + 1) % len(MASK_MODES)]
        self.mask_modes[row] = mode
        self.playback.set_mask(row, self.masks[mode])
        self.message = f"{self.names[row]} mask: {mode}"

    def _toggle_additive(self) -> None:
        row = self.playback.additive_row
        if row is None:
            self.message = "no additive clip: use --additive CLIP"
            return
        weight = 0.0 if self.weights[row] > 0.0 else 1.0
        self.playback.set_weight(row, weight)
        self.message = f"additive layer {'on' if weight else 'off'}"

    # --- evaluation: the shown blend and the same blend three ways --------------------------------

    @property
    def animator(self) -> Animator:
        """The animator shown: the one with the sync group while sync is on."""
        return self.playback.animators[int(self.sync)]

    def _evaluate(self) -> None:
        """Read the effective weights and compute the shown blend by the three methods."""
        actions = self.playback.actions[int(self.sync)]
        self.weights = np.array([a.effective_weight[0] for a in actions])
        self.weights_history.append(self.weights)
        playing = tuple(n for n, w in zip(self.clip_names, self.weights, strict=False) if w > 0.0) or tuple(
            self.clip_names
        )
        if playing != self.framed:  # a clip played alone fills the frame (GDQuest's 4.5 m dash shrank its idle)
            self.framed = playing
            # the figure's bounds over the clips playing (character frame, floor at y = 0)
            self.bounds = self.model.motion_bounds(playing)
            self.center, self.extent = self.bounds.centre, self.bounds.size
        self.methods = self._three_ways(actions)

    def _three_ways(self, actions: list[Action]) -> Pose:
        """Sample the weighted override clips as the animator does, blend them by each method, add the additive."""
        rows = [k for k, a in enumerate(actions) if not a.additive and self.weights[k] > 0.0]
        layers = sample_layers([self.compiled[k] for k in rows], [actions[k].time[0] for k in rows], self.skeleton)
        root = self.animator.root_joint
        if root is not None and rows:
            layers.translations[:, root], layers.rotations[:, root] = remove_planar(
                layers.translations[:, root], layers.rotations[:, root], parent_up(self.skeleton, root)
            )
        if self.flip and rows:
            layers = flip_layer(layers, len(rows) - 1)
        chosen = [actions[k].mask for k in rows]
        masks = None
        if any(mask is not None for mask in chosen):
            masks = np.stack([np.ones(self.skeleton.num_joints) if mask is None else mask for mask in chosen])
        poses = blend_three_ways(layers, self.weights[rows], masks, self.skeleton, self.animator.rest_threshold)
        row = self.playback.additive_row
        if row is not None and self.weights[row] > 0.0:
            delta = sample(self.compiled[row], self.delta_rest, actions[row].time[0])
            poses = apply_additive(poses, delta, self.weights[row], actions[row].mask)
        return poses

    # --- render: characters, lines, overlays ------------------------------------------------------

    def render(self, ctx: moderngl.Context, framebuffer: moderngl.Framebuffer) -> None:  # noqa: ARG002 (Program)
        """Draw one character (or three side by side), the floor and the overlays."""
        framebuffer.clear(*BACKGROUND, depth=1.0)
        camera, offsets = self._layout()
        view, projection = camera.view_matrix(), camera.projection_matrix(self.size[0] / self.size[1])
        model = self.node_matrices()
        worlds = self.world_transforms(offsets)
        self.character.draw(self.scene_frame(model), view, projection, worlds)
        self._draw_lines(worlds, model, offsets, view, projection)
        self._draw_overlays(camera, projection @ view, offsets)

    def node_matrices(self) -> FloatArray:
        """Scene world matrices ``(K, N, 4, 4)`` of the ``K`` figures drawn: the three methods, else the animator's."""
        return model_from_pose(self.skeleton, self.methods) if self.compare else self.animator.model

    def scene_frame(self, node_matrices: FloatArray) -> SceneFrame:
        """The scene frame of ``node_matrices`` with the morph weights of the clips playing (the same for all)."""
        return self.model.scene_frame(node_matrices, playing_clips(self.playback.actions[int(self.sync)]))

    def world_transforms(self, offsets: FloatArray) -> FloatArray:
        """World transforms ``(N, 4, 4)`` of characters drawn at ``offsets`` ``(N, 3)``.

        Each is its offset, lowered by the playing clips' weighted lowest point
        (:meth:`game.model.Model.ground`) so the feet touch the floor, times the model's frame.
        """
        worlds = np.repeat(np.eye(4)[None], len(offsets), axis=0)
        worlds[:, :3, 3] = offsets
        worlds[:, 1, 3] -= self.model.ground(body_weights(self.playback.actions[int(self.sync)], root=self.model.root))
        return worlds @ self.model.frame

    def _layout(self) -> tuple[Camera, FloatArray]:
        """The orbit camera and each drawn character's offset ``(N, 3)``; sets :attr:`spacing`.

        Side by side, the three stand :attr:`spacing` apart along the view's horizontal right
        axis (1.15 × the figure's footprint across the view). The camera frames the union of
        their motion bounds' corners over the clips playing (:attr:`framed`;
        :func:`~game.bounds.fit_distance`, :data:`FRAME_FILL` of the frame) in the part of the frame
        right of the panels.
        """
        orientation = orbit_orientation(self.yaw, self.pitch)
        right = camera_axes(orientation)[0]
        flat_right = np.array([right[0], 0.0, right[2]]) / max(float(np.hypot(right[0], right[2])), 1e-9)
        footprint = abs(flat_right[0]) * self.extent[0] + abs(flat_right[2]) * self.extent[2]
        self.spacing = 1.15 * max(footprint, 0.3 * self.extent[1])
        count = len(METHODS) if self.compare else 1
        offsets = np.outer(np.arange(count) - (count - 1) / 2.0, self.spacing * flat_right)
        corners = (self.bounds.corners()[None] + offsets[:, None]).reshape(-1, 3)
        aspect = self.size[0] / self.size[1]
        panel = min((PANEL_WIDTH + 40) / self.size[0], 0.5)  # NDC x of the free area's centre
        distance = fit_distance(corners, self.center, orientation, FOV_Y, aspect, fill=FRAME_FILL, centre_x=panel)
        position = framing_position(self.center, orientation, distance, FOV_Y, aspect, centre_x=panel)
        camera = Camera(position, orientation, fov_y=FOV_Y, near=distance / 100.0, far=distance * 10.0)
        return camera, offsets

    def _draw_lines(
        self, worlds: FloatArray, model: FloatArray, offsets: FloatArray, view: FloatArray, projection: FloatArray
    ) -> None:
        """Floor grid, a coloured square under each compared character, and (B) the bones on top."""
        size = 1.5 * max(self.extent[0], self.extent[2]) + 2.0 * self.spacing
        ticks = np.linspace(-size, size, 17)
        zeros, edge = np.zeros_like(ticks), np.full_like(ticks, size)
        floor = np.array([0.0, self.floor, 0.0])  # under the root: the frame puts it at the origin
        starts = np.concatenate([np.stack([-edge, zeros, ticks], -1), np.stack([ticks, zeros, -edge], -1)])
        ends = np.concatenate([np.stack([edge, zeros, ticks], -1), np.stack([ticks, zeros, edge], -1)])
        self.debug.lines(floor + starts, floor + ends, (0.3, 0.32, 0.36, 1.0))
        if self.compare:
            square = (
                0.4 * self.spacing * np.array([[-1.0, 0.0, -1.0], [1.0, 0.0, -1.0], [1.0, 0.0, 1.0], [-1.0, 0.0, 1.0]])
            )
            for k, name in enumerate(METHODS):  # three squares
                corners = floor + offsets[k] + square
                self.debug.lines(corners, np.roll(corners, -1, axis=0), METHOD_COLORS[name])
        if self.show_bones:
            self.debug.bones(self.skeleton, worlds[:, None] @ model)
        self.debug.flush(view, projection, depth_test=not self.show_bones)

    def _draw_overlays(self, camera: Camera, view_projection: FloatArray, offsets: FloatArray) -> None:
        """Sliders and status (top left), the weight plot (bottom left), method labels (side by side).

        The panels are blitted onto one screen-sized surface: one texture upload per frame.
        """
        screen = pygame.Surface(self.size, pygame.SRCALPHA)
        rows = [
            (f"{k + 1} {name}" + ("" if mode == "full" else f" [{mode}]"), float(weight))
            for k, (name, mode, weight) in enumerate(zip(self.names, self.mask_modes, self.weights, strict=True))
        ]
        sliders = self.overlay.bars(rows, PANEL_WIDTH, self.selected)
        screen.blit(sliders, (10, 10))
        screen.blit(self.overlay.text_panel(self._status_lines(), PANEL_WIDTH), (10, 18 + sliders.get_height()))
        history = np.array(self.weights_history)
        plot = self.overlay.plot(list(history.T), [], (PANEL_WIDTH, 110), title="effective weights, last 4 s")
        screen.blit(plot, (10, self.size[1] - 120))
        if self.compare:
            largest = angular_errors(self.methods).max(axis=1)
            notes = ["the reference", f"max {largest[0]:.2f} deg off", f"max {largest[1]:.1f} deg off"]
            floor = np.array([0.0, self.floor, 0.0])  # under the root: the frame puts it at the origin
            toward = (camera.position - floor) * np.array([1.0, 0.0, 1.0])
            front = floor + 0.4 * self.spacing * toward / max(float(np.linalg.norm(toward)), 1e-9)
            for k, name in enumerate(METHODS):  # three labels, under the characters
                red, green, blue, _ = (round(255 * c) for c in METHOD_COLORS[name])
                color = (red, green, blue)
                label = self.overlay.text_panel([(LABELS[name][0], color), LABELS[name][1], notes[k]])
                x, y = screen_position(view_projection, front + offsets[k], self.size)
                x = min(max(round(x - label.get_width() / 2), 0), self.size[0] - label.get_width())
                screen.blit(label, (x, round(y + 4)))
        self.overlay.draw(screen, (0, 0))

    def _status_lines(self) -> list[str | tuple[str, tuple[int, int, int]]]:
        on = {True: "on", False: "off"}
        group = "+".join(self.sync_names) or "no group"
        return [
            f"X crossfade in {self.duration:.1f} s ([ ])  warp (W) {on[self.warp]}",
            f"sync (S) {on[self.sync]}: {group}",
            f"time (, .) {TIME_SCALES[self.time_scale]:g}x  {'paused' if self.paused else 'playing'} (Space, N)",
            f"side by side (Tab) {on[self.compare]}  flip (F) {on[self.flip]}",
            "1-9 Up Down select  Left Right weight",
            "M mask  A additive  B bones  R reset",
            (self.message, ACCENT),
        ]


def screen_position(view_projection: FloatArray, point: FloatArray, size: tuple[int, int]) -> tuple[float, float]:
    """Pixel position (origin top left) of world ``point`` ``(3,)``."""
    clip = view_projection @ np.append(point, 1.0)
    ndc = clip[:2] / max(abs(clip[3]), 1e-9)
    return (ndc[0] + 1.0) / 2.0 * size[0], (1.0 - ndc[1]) / 2.0 * size[1]
