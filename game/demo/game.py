"""The playable demo: collect the glowing items before the time runs out (``python -m game.demo``).

How to play
-----------
WASD or the arrow keys move relative to the camera, Shift runs, Space jumps; Ctrl held strafes:
the character keeps its facing and steps sideways or backwards. Drag the mouse (or
hold Q/E to orbit, R/F to tilt) to turn the camera. Esc pauses (Esc again quits, Enter resumes),
F1 shows the skeleton, the IK targets and the look-at point, F12 saves a screenshot into
``screenshots/``. When the game ends, Enter plays again.

What to look at
---------------
- **A locomotion graph** (``game/demo/locomotion.toml``, :mod:`game.demo.graph_locomotion`):
  states idle, locomotion, jump and land joined by inertialized transitions, the locomotion a
  2-D directional blend space over the velocity in the character's frame (walk and run forwards,
  backwards and sideways, synced). The player code sets parameters only — the velocity asked
  for, grounded, a jump trigger — and the character moves by the graph's root motion, so the
  feet do not slide at any blend. Hold Ctrl to strafe and see the 2-D blend space; the top-left
  panel shows the graph's state (``game/demo/scripts/locomotion.txt`` tours every state:
  ``--headless --frames 500 --script`` it). Models without the graph's clips (the shared files)
  get a graph made for them: one state blending idle, walk and run over the speed (a missing clip
  played as another time-scaled), root motion or measured ground speeds, and their jump.
- **Wave**: picking up an item plays an arm-only layer over whatever the legs do: an
  :class:`~engine.animator.Animator` action on the same engine player as the graph, an override
  of the graph's layers on the arm (:meth:`engine.player.Player.add_override`).
- **Feet on uneven ground**: the hips drop to the lower foot's ground and two-bone IK puts each
  ankle on the terrain under it (F1 shows the targets).
- **Head**: the neck and head aim at the nearest item, within yaw and pitch limits, easing in and
  out; an item behind the character is not looked at.
- **Camera**: a follow rig with exponential smoothing (frame-rate independent), kept within a
  cone around the character's facing and pulled in when the ground is in the way.

Engine functions it exercises
-----------------------------
:func:`engine.io.load_gltf` (the whole scene); :func:`engine.graph.load_graph`,
:func:`engine.graph.bind_graph` with a root-motion joint, :class:`engine.graph.GraphRuntime`
(parameters, triggers, inertialized transitions, 1-D and 2-D blend spaces, root motion);
:class:`engine.animator.Animator` (``action``, ``fade_in``, ``fade_out``, a mask) and both as
controllers of one :class:`engine.player.Player` over the scene's node hierarchy (overrides,
staged frame, palette records, morph weights); :func:`engine.anim.humanoid.find_humanoid`,
:func:`engine.anim.ik.two_bone_ik`, :func:`engine.anim.ik.aim_ik`;
:class:`engine.camera.FollowRig`, :func:`engine.camera.smooth_rotation`,
:func:`engine.camera.smoothing_alpha`; :class:`engine.render.SceneRenderer` (every mesh node of
the file: skinned, rigid, morphed; ``draw_records``), :class:`engine.render.SkinnedMesh` and
:class:`engine.render.DebugDraw`.

The code reads top-down: load (:class:`DemoGame` ``__init__``), the loop (:func:`game.app.run`
calls ``setup`` once, then ``update`` and ``render`` every frame), update, render. The character
logic is in :mod:`game.demo.player`, the ground and items in :mod:`game.demo.world`, model
loading (units, facing, gait speeds) in :mod:`game.model`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import moderngl
import numpy as np

from engine.backend import active_backend
from engine.camera import Camera, FollowRig
from engine.errors import InvalidInputError
from engine.math import matrix_from_trs
from engine.render import DebugDraw, SceneRenderer, SkinnedMesh
from game import app
from game.app import COMPILING, Controls, kernels_ready, load_program_model, say
from game.demo.crowd import MAX_CROWD, CrowdDemo
from game.demo.player import Player
from game.demo.world import Collectibles, Terrain, disc, gem, single_joint_mesh, sphere
from game.ui import ACCENT, DIM, Overlay

SKY = (0.58, 0.72, 0.88)
LIGHT = (-0.55, -0.75, -0.35)
ITEM_COLOR = (1.0, 0.78, 0.25, 1.0)
ITEM_SIZE = 0.16
COLLECT_RADIUS = 0.8
"""Metres (horizontally) from the character's root within which an item is picked up."""
HALO_SHELLS = ((1.6, 0.012), (2.4, 0.005), (3.4, 0.002))
"""Glow around the items: additive shells ``(size × item, linear brightness)``."""
CONE_LIMIT = np.radians(90.0)
"""The camera's view stays within this angle of the character's facing."""
ORBIT_SPEED = 2.0
"""Radians per second of Q/E and R/F."""
MOUSE_SENSITIVITY = 0.006
"""Radians per pixel of mouse drag."""
RUN_KEYS = frozenset({"left shift", "right shift"})
STRAFE_KEYS = frozenset({"left ctrl", "right ctrl"})
KEY_HELP = (
    "WASD / arrows   move",
    "Shift  run     Space  jump     Ctrl  strafe",
    "mouse drag, Q/E, R/F   camera",
    "F1 skeleton   F12 screenshot   Esc pause",
)


def make_parser() -> argparse.ArgumentParser:
    """The demo's options: the common ones (:func:`game.app.common_parser`) and the game's."""
    parser = app.common_parser("game.demo", "Ossa demo: collect the glowing items before the time runs out.")
    parser.epilog = "keys: " + "; ".join(KEY_HELP) + "; Esc again quits"
    parser.add_argument("--items", type=int, default=8, help="items to collect (default 8)")
    parser.add_argument("--time", type=float, default=120.0, help="seconds to collect them (default 120)")
    parser.add_argument(
        "--seed", type=int, default=7, help="seed of the item layout (crowd mode: of the phases and places; default 7)"
    )
    parser.add_argument(
        "--crowd",
        type=int,
        metavar="N",
        help=f"crowd mode instead of the game: N animated characters (1 to {MAX_CROWD}) with animation LOD, "
        "one instanced draw, per-stage timings on screen (see game/demo/crowd.py); --items and --time do not apply",
    )
    parser.add_argument(
        "--motion-matching",
        action="store_true",
        help="move the character (or with --crowd, each character on its own path) by motion matching over the "
        "CMU locomotion takes retargeted onto the model (see game/demo/motion_matching.py)",
    )
    parser.add_argument(
        "--database", type=Path, help="with --motion-matching: a database file (ossa mm build --character MODEL)"
    )
    return parser


class DemoGame:
    """The game state, updated by fixed steps and drawn each frame by :func:`game.app.run`.

    Parameters
    ----------
    args
        Parsed :func:`make_parser` options.

    Raises
    ------
    InvalidInputError
        ``--items`` below 1 or ``--time`` not positive.
    AssetError
        The model cannot be loaded.
    """

    title = "ossa-demo"

    # --- load ---------------------------------------------------------------------------------

    def __init__(self, args: argparse.Namespace) -> None:
        if args.items < 1:
            raise InvalidInputError(f"--items must be at least 1, got {args.items}")
        if not args.time > 0.0:
            raise InvalidInputError(f"--time must be a positive number of seconds, got {args.time}")
        self.model = load_program_model(args)
        self.terrain = Terrain()
        self.items = Collectibles(self.terrain, args.items, args.seed)
        self.time_limit = float(args.time)
        height = self.model.height
        standing = self.model.motion_bounds([self.model.reference] if self.model.reference else [])
        reach = max(height, 0.75 * float(max(standing.size[0], standing.size[2])))  # a wide object: by its width
        self.rig = FollowRig(
            distance=1.6 + 1.5 * reach,
            pivot_offset=(0.0, 0.85 * height, 0.0),
            pitch=-0.25,
            pitch_limits=(-1.2, 0.3),
            cone_limit=CONE_LIMIT,
            rotation_half_life=0.1,
            position_half_life=0.08,
            camera=Camera(np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), fov_y=np.radians(55.0), near=0.05, far=200.0),
        )
        self.headless = bool(args.headless)
        self.finished = False
        self.paused = False
        self.show_skeleton = False
        compiled = active_backend() == "numba"
        if compiled:  # the kernels the character's frames and transitions call, before the first frame
            say(args.prog, "note", COMPILING)
        started = time.perf_counter()
        self.restart()
        if compiled:
            graph = self.player.graph  # the graph's own kernels too, when the character has one
            (graph.runtime if graph else self.player.posing).warm_up(self.player.palette_records)
            kernels_ready(args.prog, started)
        self._fps = 0.0
        self._last_render: float | None = None

    def restart(self) -> None:
        """Put the items back, the character at the start facing +Z, the camera behind it, the clock full."""
        self.items.reset()
        self.player = self.make_player()
        self.score = 0
        self.time_left = self.time_limit
        self.outcome: str | None = None
        """``"won"`` or ``"lost"`` once the game has ended."""
        self.clock = 0.0
        self.rig.yaw, self.rig.pitch = np.pi, -0.25  # behind the character, looking along +Z
        self.rig.snap()
        self.camera = self.rig.update(0.0, self.player.position, self.player.facing)
        self.control_yaw = self.rig.yaw
        """The yaw that WASD is relative to (see :meth:`_move_input`)."""

    def make_player(self) -> Player:
        """The character at the start (:meth:`restart`): the graph's (``--motion-matching``: the search's)."""
        return Player(self.model, self.terrain)

    # --- the loop: app.run calls setup once, then update and render each frame -----------------

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Create the GPU resources: meshes, the character's whole scene, debug lines, overlay."""
        self.size = size
        self.overlay = Overlay(ctx, size)
        self.debug = DebugDraw(ctx)
        self.ground = SkinnedMesh(ctx, self.terrain.mesh())
        self.gem = SkinnedMesh(ctx, single_joint_mesh(*gem(ITEM_SIZE), ITEM_COLOR, name="item"))
        self.halo = SkinnedMesh(ctx, single_joint_mesh(*sphere(ITEM_SIZE), ITEM_COLOR, name="halo"))
        self.shadow = SkinnedMesh(
            ctx, single_joint_mesh(*disc(0.22 * self.model.height), (0.0, 0.0, 0.0, 0.35), name="shadow")
        )
        self.character = SceneRenderer(ctx, self.model.scene)
        """Every mesh node of the model's scene; ``drawn_mesh_nodes`` counts what the last frame drew."""

    def update(self, dt: float, controls: Controls) -> None:
        """One fixed step: menus, then input → character → items and clock → camera."""
        pressed = controls.pressed
        if "escape" in pressed:
            self.finished = self.paused  # the second Esc quits
            self.paused = True
            return
        if self.paused:
            self.paused = "return" not in pressed
            return
        if "f1" in pressed:
            self.show_skeleton = not self.show_skeleton
        if self.outcome is not None and "return" in pressed:
            self.restart()
        playing = self.outcome is None
        yaw_input = -ORBIT_SPEED * dt * controls.axis("q", "e") - MOUSE_SENSITIVITY * controls.mouse[0]
        pitch_input = ORBIT_SPEED * dt * controls.axis("f", "r") - MOUSE_SENSITIVITY * controls.mouse[1]
        self.control_yaw += yaw_input
        move = self._move_input(controls) if playing else np.zeros(3)
        run, strafe = bool(controls.held & RUN_KEYS), bool(controls.held & STRAFE_KEYS)
        jump = playing and "space" in pressed
        self.player.update(dt, move, run, jump, self.items.nearest(self.player.position), strafe=strafe)
        if playing:
            self._play(dt)
        self.clock += dt
        self.camera = self.rig.update(
            dt, self.player.position, self.player.facing, yaw_input, pitch_input, distance=self._camera_reach()
        )
        if not np.any(move):
            self.control_yaw = self.rig.yaw  # standing: WASD follows the camera as it is now

    def _move_input(self, controls: Controls) -> np.ndarray:
        """World direction ``(3,)`` of WASD/arrows, relative to :attr:`control_yaw`, length ≤ 1.

        Relative to the *control* yaw, not the camera's: the camera swings behind the character
        as it turns (the cone), and following that while a key is held would turn "back" into
        a circle. The control yaw moves with the player's own camera input, and catches up with
        the camera whenever no move key is held.
        """
        ahead = controls.axis("s", "w") + controls.axis("down", "up")
        side = controls.axis("a", "d") + controls.axis("left", "right")
        amount = np.hypot(ahead, side)
        if amount == 0.0:
            return np.zeros(3)
        yaw = self.control_yaw
        forward = np.array([-np.sin(yaw), 0.0, -np.cos(yaw)])  # the rig's view direction at this yaw
        right = np.array([np.cos(yaw), 0.0, -np.sin(yaw)])
        return (ahead * forward + side * right) / max(amount, 1.0)

    def _play(self, dt: float) -> None:
        """Pick up the items in reach, run the clock, decide the outcome."""
        taken = self.items.collect(self.player.position, COLLECT_RADIUS)
        if len(taken):
            self.score += len(taken)
            self.player.celebrate()
        self.time_left = max(self.time_left - dt, 0.0)
        if self.items.remaining == 0:
            self.outcome = "won"
        elif self.time_left == 0.0:
            self.outcome = "lost"

    def _camera_reach(self) -> float:
        """The rig's distance, shortened when looking up would put the camera under the ground."""
        forward = self.camera.forward
        if forward[1] <= 1e-3:
            return self.rig.distance
        x, _, z = self.camera.position
        pivot = self.player.position[1] + self.rig.pivot_offset[1]
        clearance = pivot - (float(self.terrain.height(x, z)) + 0.25)
        return float(np.clip(clearance / forward[1], 0.5, self.rig.distance))

    # --- render -------------------------------------------------------------------------------

    def render(self, ctx: moderngl.Context, framebuffer: moderngl.Framebuffer) -> None:
        """Draw the frame: ground, items, character, then shadow and glow, debug lines, overlay."""
        now = time.perf_counter()
        if self._last_render is not None and now > self._last_render:
            self._fps += (1.0 / (now - self._last_render) - self._fps) * 0.1
        self._last_render = now
        framebuffer.clear(*SKY, 1.0, depth=1.0)
        view = self.camera.view_matrix()
        projection = self.camera.projection_matrix(self.size[0] / self.size[1])
        self.ground.draw(np.eye(4)[None, None], view, projection, light_direction=LIGHT)
        items = self.items.transforms(self.clock)
        pulse = 0.5 + 0.5 * np.sin(4.0 * self.clock)
        if len(items):
            glow = (0.8 + 0.4 * pulse,) * 3
            self.gem.draw(items[:, None], view, projection, light_direction=LIGHT, ambient=glow)
        world = self.player.world()
        player = self.player
        self.character.draw_records(  # the player's palette records and morph weights, as they are
            player.palette_records, player.morph_weights, view, projection, world[None], light_direction=LIGHT
        )
        self._draw_translucent(ctx, framebuffer, view, projection, items, pulse)
        if self.show_skeleton:
            self._draw_debug(view, projection, world)
        self._draw_overlay()

    def _draw_translucent(
        self,
        ctx: moderngl.Context,
        framebuffer: moderngl.Framebuffer,
        view: np.ndarray,
        projection: np.ndarray,
        items: np.ndarray,
        pulse: float,
    ) -> None:
        """The blob shadow (alpha blended) and the items' glow (additive shells), without depth writes."""
        framebuffer.depth_mask = False
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        x, _, z = self.player.position
        spot = matrix_from_trs([x, float(self.terrain.height(x, z)) + 0.03, z], [0.0, 0.0, 0.0, 1.0], np.ones(3))
        self.shadow.draw(spot[None, None], view, projection, light_color=(0.0, 0.0, 0.0), ambient=(1.0, 1.0, 1.0))
        if len(items):
            ctx.blend_func = moderngl.ONE, moderngl.ONE
            ctx.enable(moderngl.CULL_FACE)
            for size, brightness in HALO_SHELLS:
                shell = items @ np.diag([size, size, size, 1.0])
                level = (brightness * (0.6 + 0.8 * pulse),) * 3
                self.halo.draw(shell[:, None], view, projection, light_color=(0.0, 0.0, 0.0), ambient=level)
            ctx.disable(moderngl.CULL_FACE)
        ctx.disable(moderngl.BLEND)
        framebuffer.depth_mask = True

    def _draw_debug(self, view: np.ndarray, projection: np.ndarray, world: np.ndarray) -> None:
        """F1: the skeleton, the ankles' IK targets and the head's look-at point, over everything."""
        self.debug.bones(self.model.skeleton, world @ self.player.model_matrices[: self.model.skeleton.num_joints])
        if len(self.player.foot_targets):
            self.debug.target(self.player.foot_targets, size=0.04)
        if self.player.look_point is not None:
            self.debug.target(self.player.look_point, size=0.08, color=(0.3, 1.0, 1.0, 1.0))
        self.debug.flush(view, projection, depth_test=False)

    def _draw_overlay(self) -> None:
        """Score, timer, FPS and notes (top left), key help (bottom left), pause and end messages (centre)."""
        width, height = self.size
        total = len(self.items.positions)
        status: list[str | tuple[str, tuple[int, int, int]]] = [
            (f"Items {self.score} / {total}     Time {self.time_left:5.1f} s", ACCENT),
            ("headless: one 60 Hz step a frame" if self.headless else f"FPS {self._fps:3.0f}")
            + f"     speed {self.player.speed:3.1f} m/s"
            + (f"     graph: {self.player.graph.state}" if self.player.graph is not None else ""),
            (f"model: {self.model.name}", DIM),
        ]
        status += [(note, DIM) for note in (*self.model.notes, *self.player.notes)]
        if self.model.warnings:
            status.append((f"{len(self.model.warnings)} loader warning(s): see the terminal", DIM))
        self.overlay.draw(self.overlay.text_panel(status), (10, 10))
        help_panel = self.overlay.text_panel(KEY_HELP)
        self.overlay.draw(help_panel, (10, height - help_panel.get_height() - 10))
        message = self._message()
        if message:
            panel = self.overlay.text_panel(message)
            self.overlay.draw(panel, ((width - panel.get_width()) // 2, (height - panel.get_height()) // 2))

    def _message(self) -> Sequence[str | tuple[str, tuple[int, int, int]]]:
        if self.paused:
            return [("Paused", ACCENT), "Esc: quit     Enter: resume"]
        if self.outcome == "won":
            used = self.time_limit - self.time_left
            return [(f"All {self.score} collected in {used:.1f} s!", ACCENT), "Enter: play again     Esc: quit"]
        if self.outcome == "lost":
            total = len(self.items.positions)
            return [(f"Time's up: {self.score} of {total}", ACCENT), "Enter: play again     Esc: quit"]
        return []


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo (or, with ``--crowd N``, the crowd mode) with command-line ``argv`` (``None``: ``sys.argv``).

    Returns the exit status.
    """
    return app.main(program, make_parser(), argv)


def program(args: argparse.Namespace) -> app.Program:
    """The program the options ask for: the game or the crowd, driven by the graph or by motion matching."""
    if args.database is not None and not args.motion_matching:
        raise InvalidInputError("--database goes with --motion-matching")
    if args.motion_matching:
        from game.demo import matching_crowd, motion_matching  # noqa: PLC0415 (they build on this module)

        return matching_crowd.MatchingCrowdDemo(args) if args.crowd is not None else motion_matching.MatchingGame(args)
    return CrowdDemo(args) if args.crowd is not None else DemoGame(args)
