"""Crowd mode of the demo: a field of animated characters (``python -m game.demo --crowd N``).

What it shows
-------------
``N`` copies of the demo's model (``--model``, default the generated mannequin) stand on a grid,
each blending its walk and run clips (an :class:`~engine.animator.Animator` with two actions in a
sync group, one :class:`~engine.player.Player` for the whole crowd) at its own phase, playback
speed and slowly drifting run weight. Every frame:

1. **animation**: the player samples, blends and composes the characters that are due (on the
   compiled kernels) and writes their palette records, float32 column-major, straight into the
   array that is uploaded; **animation LOD** (:class:`engine.backend.UpdateSchedule`) updates
   the characters near the camera every frame, the farther ones every 2nd and every 4th frame (by
   distance, :data:`LOD_LIMITS` × the model's height); the others keep their last palette, and
   their clocks run on, so a rate change never pops (see :mod:`engine.backend.lod`);
2. **upload**: one :meth:`engine.render.PaletteBuffer.upload` of the packed palettes, no copy;
3. **draw**: (timed up to ``ctx.finish()``, so the rendering counts here, not in the next
   frame's upload) one instanced draw per mesh primitive for all the characters (per-instance world
   matrices). A storage block holds at most
   :attr:`~engine.render.PaletteBuffer.max_characters` palettes: a larger crowd is split into
   that many characters per buffer, and each primitive is drawn once per buffer.

The first frame of a process compiles the kernels (tens of seconds, once: numba caches them on
disk) or loads them from the cache (about a second): the program does it before its first frame,
says so, and keeps it out of the timings.

The overlay shows the FPS, the character count and draw calls, the LOD mix (how many characters
update at each rate, how many were evaluated this frame), the median milliseconds of the three
stages over the last :data:`TIMING_WINDOW` frames, and the frame backend
(:func:`engine.backend.backend_description`). A run that stops after a number of frames (``--frames``,
or headless) ends with one line of the medians over the whole run on stderr.

Palette records
---------------
The palette of one character holds the scene's records in the layout of
:class:`~engine.render.scene_renderer.SceneRecords` (the one :class:`~engine.render.SceneRenderer`
uses): the node hierarchy with the skins' inverse binds, then extra records only where needed
(the mannequin needs none). Each mesh instance draws from its first record on.

Keys: Q/E or a mouse drag orbit, R/F tilt, W/S zoom, F12 saves a screenshot, Esc quits.
"""

from __future__ import annotations

import argparse
import time
from collections import deque
from collections.abc import Sequence

import moderngl
import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.mesh import MeshData
from engine.animator import Animator
from engine.backend import UpdateSchedule, backend_description
from engine.camera import Camera, orbit_orientation
from engine.errors import InvalidInputError
from engine.math import matrix_from_trs, quat_from_axis_angle, quat_rotate
from engine.math._checks import FloatArray
from engine.player import Player as Posing
from engine.render import PaletteBuffer, SkinnedMesh
from engine.render.scene_renderer import scene_records
from game.app import COMPILING, HEADLESS_FRAMES, Controls, kernels_ready, load_program_model, say
from game.demo.world import grass_texture, single_joint_mesh
from game.model import Model
from game.ui import ACCENT, DIM, Overlay

MAX_CROWD = 100_000
"""The largest ``--crowd``: beyond it a run would spend minutes per frame."""
SKY = (0.58, 0.72, 0.88)
LIGHT = (-0.55, -0.75, -0.35)
SPACING = 0.9
"""Grid spacing, in model sizes (the larger of the height and the horizontal extent over the clips)."""
LOD_LIMITS = (16.0, 28.0)
"""Camera distances, in model heights, within which a character updates every frame, every 2nd; beyond: every 4th."""
LOD_RATES = (1, 2, 4)
BLEND_DRIFT = 0.3
"""Radians per second of the slow oscillation of each character's run weight."""
TIMING_WINDOW = 60
"""Frames the overlay's median stage times cover."""
ORBIT_SPEED = 1.5
"""Radians per second of Q/E and R/F."""
ZOOM_SPEED = 0.8
"""Fraction of the distance per second of W/S."""
MOUSE_SENSITIVITY = 0.006
"""Radians per pixel of mouse drag."""
PITCH_LIMITS = (-1.35, -0.05)
KEY_HELP = ("Q/E, mouse drag   orbit     R/F   tilt     W/S   zoom", "F12 screenshot     Esc quit")
STAGES = ("animation", "upload", "draw")


def check_count(count: int) -> int:
    """``count`` when it is a crowd size ``--crowd`` takes (1 to :data:`MAX_CROWD`), else :class:`InvalidInputError`."""
    if not 1 <= count <= MAX_CROWD:
        raise InvalidInputError(f"--crowd must be a number of characters from 1 to {MAX_CROWD}, got {count}")
    return count


def crowd_clip(model: Model, name: str) -> Clip:
    """The node channels of clip ``name``, the root without its horizontal travel.

    With :attr:`~game.model.Model.root_motion` the root's translation keys lose their x and z
    (as the programs play it in place; its rotation, a walk's hip sway, is kept).
    """
    nodes = model.scene.clips[name].nodes
    channels = []
    for channel in nodes.channels:
        if model.root_motion and channel.target == model.root and channel.path == "translation":
            values = np.array(channel.values)
            values[..., [0, 2]] = 0.0
            channels.append(Channel(channel.target, channel.path, channel.interpolation, channel.times, values))
        else:
            channels.append(channel)
    return Clip(nodes.name, tuple(channels), nodes.num_targets, nodes.markers)


class Crowd:
    """The animation of a crowd, without GL: one :class:`~engine.animator.Animator` on one player, with LOD.

    Every character plays the walk and the run (two actions, one sync group: its own phase and
    playback speed, its run weight drifting slowly); the clocks run every frame (:meth:`step`),
    the characters that are due are posed (:meth:`animate`, :class:`engine.backend.UpdateSchedule`).

    Parameters
    ----------
    model
        The character every member plays (its walk and run role clips; the first clip when it
        has neither).
    count
        ``C``, the number of characters.
    seed
        Seed of the phases, speeds, run weights and placements.

    Attributes
    ----------
    records
        :class:`~engine.render.scene_renderer.SceneRecords` of the model's scene (the palette layout).
    animator
        The :class:`~engine.animator.Animator` (its ``player`` poses the crowd).
    palettes
        ``(C, R, 4, 4)`` float32, each matrix column-major: what :meth:`animate` writes and the
        GPU reads.
    schedule
        The :class:`~engine.backend.UpdateSchedule` (animation LOD).
    positions
        ``(C, 3)`` where each character stands (on ``y = 0``).
    clip_names
        The clips of the walk and run actions.
    evaluated
        How many characters the last :meth:`animate` evaluated.
    """

    def __init__(self, model: Model, count: int, seed: int = 7) -> None:
        count = check_count(count)
        if not model.clips:
            raise InvalidInputError(f"--crowd needs a model with at least one clip; {model.name} has none")
        self.model = model
        self.records = scene_records(model.scene)
        roles = model.roles
        first = next(iter(model.clips))
        self.clip_names = (roles.walk or roles.run or first, roles.run or roles.walk or first)
        self.animator = Animator(self.records.skeleton, count)
        clips = {name: self.records.clip(crowd_clip(model, name)) for name in dict.fromkeys(self.clip_names)}
        self.actions = tuple(self.animator.action(clips[name]).play() for name in self.clip_names)
        rng = np.random.default_rng(seed)
        phases = rng.random(count)
        self.actions[0].set_time(phases * self.actions[0].duration)
        speeds = rng.uniform(0.85, 1.15, count)
        for action in dict.fromkeys(self.actions):
            action.set_speed(speeds)
        if self.actions[0] is not self.actions[1]:
            self.animator.sync_group(*self.actions)  # the feet land together at any blend
        self.grounds = np.array([model.bounds[n].low[1] for n in self.clip_names])
        self.schedule = UpdateSchedule(count)
        self.palettes = np.zeros((count, self.records.count, 4, 4), dtype=np.float32)
        self.drift = rng.uniform(0.0, 2.0 * np.pi, count)
        self.clock = 0.0
        side = int(np.ceil(np.sqrt(count)))
        footprint = model.motion_bounds(self.clip_names).size[[0, 2]].max()  # a fox is longer than tall
        spacing = SPACING * max(model.height, float(footprint))
        row, column = np.divmod(np.arange(count), side)
        jitter = rng.uniform(-0.15, 0.15, (2, count)) * spacing
        self.extent = 0.5 * (side - 1) * spacing
        """Half the side of the field, metres."""
        self.positions = np.stack(
            (
                (column - 0.5 * (side - 1)) * spacing + jitter[0],
                np.zeros(count),
                (row - 0.5 * (side - 1)) * spacing + jitter[1],
            ),
            axis=-1,
        )
        yaw = rng.uniform(-0.4, 0.4, count)  # facing +Z, give or take
        rotations = quat_from_axis_angle(np.array([0.0, 1.0, 0.0]), yaw)
        self._placements = matrix_from_trs(self.positions, rotations, np.ones((count, 3))) @ model.frame
        self.worlds = self._placements.copy()
        """``(C, 4, 4)`` model → world of each character, lowered to keep the feet of its blend on the ground."""
        self.evaluated = 0
        self.step(0.0)

    @property
    def count(self) -> int:
        """``C``."""
        return self.animator.num_characters

    @property
    def player(self) -> Posing:
        """The engine player posing the crowd."""
        return self.animator.player

    @property
    def times(self) -> FloatArray:
        """``(2, C)`` the walk's and the run's clip times (both at one phase: the feet land together)."""
        return np.stack([action.time for action in self.actions])

    @property
    def weights(self) -> FloatArray:
        """``(2, C)`` the walk's and the run's weights (summing to 1)."""
        run = 0.5 + 0.5 * np.sin(BLEND_DRIFT * self.clock + self.drift)
        return np.stack((1.0 - run, run))

    def step(self, dt: float) -> None:
        """Advance every character's clock by ``dt`` seconds (LOD never holds a clock back): weights, times."""
        self.clock += dt
        weights = self.weights
        walk, run = self.actions
        if walk is run:
            walk.set_weight(1.0)
        else:
            walk.set_weight(weights[0])
            run.set_weight(weights[1])
        self.animator.player.begin_frame(dt)
        self.animator.control()
        self.worlds[:, 1, 3] = self._placements[:, 1, 3] - self.grounds @ weights

    def animate(self, eye: FloatArray, *, lod: bool = True) -> np.ndarray:
        """Set the LOD rates from the camera position ``eye`` ``(3,)``, pose the due characters; returns them.

        ``lod=False`` poses everyone. The palettes of the others stay as they were.
        """
        if lod:
            distances = np.linalg.norm(self.worlds[:, :3, 3] - eye, axis=-1)
            height = self.model.height
            self.schedule.set_rates_by_distance(distances, tuple(limit * height for limit in LOD_LIMITS), LOD_RATES)
            due = self.schedule.due()
            self.schedule.advance()
        else:
            due = np.arange(self.count)
        player = self.player
        player.end_frame(due, self.palettes, model=False)  # only the palettes are drawn
        self.evaluated = int(due.size)
        return due

    def lod_mix(self) -> dict[int, int]:
        """How many characters update at each rate (1 = every frame)."""
        counts = np.bincount(self.schedule.rates, minlength=max(LOD_RATES) + 1)
        return {rate: int(counts[rate]) for rate in LOD_RATES}


def flat_ground(extent: float, tile: float = 2.0) -> MeshData:
    """A flat, textured square ``[-extent, extent]²`` on ``y = 0``, as a single-joint mesh."""
    corners = np.array([[-extent, 0.0, -extent], [-extent, 0.0, extent], [extent, 0.0, -extent], [extent, 0.0, extent]])
    return single_joint_mesh(
        corners,
        [0, 1, 2, 2, 1, 3],
        np.tile([0.0, 1.0, 0.0], (4, 1)),
        (1.0, 1.0, 1.0, 1.0),
        uvs=corners[:, [0, 2]] / tile,
        texture=grass_texture(),
        name="ground",
    )


class CrowdDemo:
    """The crowd program, driven by :func:`game.app.run` (see the module docstring).

    Parameters
    ----------
    args
        Parsed :func:`game.demo.game.make_parser` options with ``args.crowd`` set.

    Attributes
    ----------
    draw_calls
        Instanced draw calls of the characters in the last frame (primitives × palette buffers).
    drawn_instances
        Characters drawn by each primitive in the last frame (summed over the buffers).
    timings
        Milliseconds of each stage (:data:`STAGES`), one entry per rendered frame of a run with
        a frame limit (a window without ``--frames`` keeps the last :data:`TIMING_WINDOW` only).
    """

    title = "ossa-crowd"

    def __init__(self, args: argparse.Namespace) -> None:
        count = check_count(args.crowd)
        self.prog = args.prog
        self.model = load_program_model(args)
        self.crowd = self.make_crowd(count, args.seed)
        player = self.crowd.player
        if player.backend == "numba":  # the kernels before the first frame: out of the timings
            say(self.prog, "note", COMPILING)
            started = time.perf_counter()
            player.warm_up(self.crowd.palettes)
            kernels_ready(self.prog, started)
        self.headless = bool(args.headless)
        self.frames = int(args.frames) or (HEADLESS_FRAMES if self.headless else 0)
        """The run's last frame (0: none), after which :meth:`summary` is said."""
        self.finished = False
        height = self.model.height
        self.target = np.array([0.0, 0.45 * height, 0.0])
        self.yaw, self.pitch = 0.0, -0.5
        self.distance = float(np.clip(2.0 * self.crowd.extent + 4.0 * height, 3.0 * height, 150.0))
        self.camera = self._camera()
        self.timings: dict[str, list[float]] = {stage: [] for stage in STAGES}
        self._recent: dict[str, deque[float]] = {stage: deque(maxlen=TIMING_WINDOW) for stage in STAGES}
        self.draw_calls = 0
        self.drawn_instances = 0
        self._fps = 0.0
        self._last_render: float | None = None

    def make_crowd(self, count: int, seed: int) -> Crowd:
        """The crowd's animation: the walk/run :class:`Crowd` (``--motion-matching``: the search's)."""
        return Crowd(self.model, count, seed)

    def _camera(self) -> Camera:
        orientation = orbit_orientation(self.yaw, self.pitch)
        eye = self.target - self.distance * quat_rotate(orientation, np.array([0.0, 0.0, -1.0]))
        far = 2.0 * (self.distance + 2.0 * self.crowd.extent) + 50.0
        return Camera(eye, orientation, fov_y=float(np.radians(50.0)), near=0.1, far=far)

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Create the GPU resources: palette buffers, the model's primitives, the ground, the overlay."""
        self.ctx = ctx
        self.size = size
        self.overlay = Overlay(ctx, size)
        self.ground = SkinnedMesh(ctx, flat_ground(self.crowd.extent + 12.0 * self.model.height))
        joints = self.crowd.records.skeleton.num_joints
        first = PaletteBuffer(ctx, joints)
        per_buffer = first.max_characters
        self.buffers = [first] + [PaletteBuffer(ctx, joints) for _ in range(1, -(-self.crowd.count // per_buffer))]
        self.chunks = [
            slice(k * per_buffer, min((k + 1) * per_buffer, self.crowd.count)) for k in range(len(self.buffers))
        ]
        self.meshes = [
            (SkinnedMesh(ctx, primitive), offset)
            for instance, offset in zip(self.model.scene.instances, self.crowd.records.offsets, strict=True)
            for primitive in instance.primitives
        ]

    def update(self, dt: float, controls: Controls) -> None:
        """One fixed step: camera input, then every character's clock."""
        if "escape" in controls.pressed:
            self.finished = True
            return
        self.yaw += -ORBIT_SPEED * dt * controls.axis("q", "e") - MOUSE_SENSITIVITY * controls.mouse[0]
        self.pitch += ORBIT_SPEED * dt * controls.axis("f", "r") - MOUSE_SENSITIVITY * controls.mouse[1]
        self.pitch = float(np.clip(self.pitch, *PITCH_LIMITS))
        self.distance *= float(np.exp(ZOOM_SPEED * dt * controls.axis("w", "s")))
        self.camera = self._camera()
        self.crowd.step(dt)

    def render(self, ctx: moderngl.Context, framebuffer: moderngl.Framebuffer) -> None:
        """Animate (LOD), upload the palettes, draw the ground and every primitive instanced, then the overlay."""
        now = time.perf_counter()
        if self._last_render is not None and now > self._last_render:
            self._fps += (1.0 / (now - self._last_render) - self._fps) * 0.1
        self._last_render = now
        crowd = self.crowd
        start = time.perf_counter()
        crowd.animate(self.camera.position)
        animated = time.perf_counter()
        for buffer, chunk in zip(self.buffers, self.chunks, strict=True):
            buffer.upload(crowd.palettes[chunk], packed=True)
        uploaded = time.perf_counter()
        framebuffer.clear(*SKY, 1.0, depth=1.0)
        view = self.camera.view_matrix()
        projection = self.camera.projection_matrix(self.size[0] / self.size[1])
        self.ground.draw(np.eye(4)[None, None], view, projection, light_direction=LIGHT)
        calls = 0
        for mesh, offset in self.meshes:
            for buffer, chunk in zip(self.buffers, self.chunks, strict=True):
                mesh.draw(buffer, view, projection, crowd.worlds[chunk], joint_offset=offset, light_direction=LIGHT)
                calls += 1
        ctx.finish()  # the rendering itself counts as the draw stage, not as a wait in the next frame's upload
        drawn = time.perf_counter()
        self.draw_calls = calls
        self.drawn_instances = sum(buffer.characters for buffer in self.buffers) if self.meshes else 0
        for stage, seconds in zip(STAGES, (animated - start, uploaded - animated, drawn - uploaded), strict=True):
            self._recent[stage].append(1e3 * seconds)
            if self.frames:
                self.timings[stage].append(1e3 * seconds)
        self._draw_overlay()
        if self.frames and len(self.timings["draw"]) == self.frames:
            say(self.prog, "note", self.summary())

    def median_ms(self, recent: bool = False) -> dict[str, float]:
        """Median milliseconds of each stage over the run (``recent``: the last :data:`TIMING_WINDOW` frames)."""
        source = self._recent if recent else self.timings
        return {stage: float(np.median(values)) if values else 0.0 for stage, values in source.items()}

    def summary(self) -> str:
        """One line: the crowd, its LOD mix and the median stage times over the run."""
        medians = ", ".join(f"{stage} {ms:.3f}" for stage, ms in self.median_ms().items())
        mix = self.crowd.lod_mix()
        return (
            f"crowd of {self.crowd.count} ({mix[1]}/{mix[2]}/{mix[4]} at every 1st/2nd/4th frame), "
            f"median ms per frame over {len(self.timings['draw'])} frames: {medians}; {backend_description()}"
        )

    def _draw_overlay(self) -> None:
        """Statistics (top left) and key help (bottom left)."""
        crowd = self.crowd
        mix = crowd.lod_mix()
        medians = self.median_ms(recent=True)
        lines: Sequence[str | tuple[str, tuple[int, int, int]]] = [
            (f"Crowd: {crowd.count} characters, {self.draw_calls} instanced draw call(s)", ACCENT),
            ("headless: one 60 Hz step a frame" if self.headless else f"FPS {self._fps:3.0f}"),
            f"LOD  every frame {mix[1]}   2nd {mix[2]}   4th {mix[4]}   (evaluated {crowd.evaluated})",
            f"ms   animation {medians['animation']:.2f}   upload {medians['upload']:.2f}   draw {medians['draw']:.2f}",
            (f"backend: {backend_description()}", DIM),
            (f"model: {self.model.name}", DIM),
        ]
        self.overlay.draw(self.overlay.text_panel(lines), (10, 10))
        help_panel = self.overlay.text_panel(KEY_HELP)
        self.overlay.draw(help_panel, (10, self.size[1] - help_panel.get_height() - 10))
