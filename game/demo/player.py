"""The player character: locomotion from an animation graph, a wave over it, and IK that fits it to the world.

One :class:`Player` owns one :class:`~engine.player.Player` (the engine's: it poses the
character) and two controllers of it: the locomotion graph (:mod:`game.demo.graph_locomotion`)
and an :class:`~engine.animator.Animator` playing the wave. Each step is one straight line:

1. turn towards the move direction (frame-rate independent smoothing) — unless strafing, which
   keeps the facing — and ease the velocity asked for, in the character's own frame;
2. the controllers write their layers: the graph sets its parameters (that velocity,
   ``grounded``, the ``jump`` trigger) and chooses and blends; the wave, an arm-only layer, is an
   **override** of the graph's layers (they weigh ``1 - w`` on the arm it masks);
3. the engine player poses (sample, blend, the transition stage) and moves the root: the
   character moves by that travel (the exact keyed root motion of the clips, weighted like the
   pose), or by its in-place gaits' ground speeds, or glides; in a jump the take-off velocity
   carries on;
4. the IK stage fits the pose to the world: the model matrices once, hips lowered to the lower
   foot's ground, two-bone IK puts each ankle on the ground under it
   (:func:`~engine.anim.ik.two_bone_ik`), the neck and head aim at the nearest item
   (:func:`~engine.anim.ik.aim_ik`) within yaw/pitch limits; only the edited subtrees are
   composed again;
5. the palette records (:class:`~engine.render.scene_renderer.SceneRecords`: every skin's palette
   and the rigid meshes' nodes, float32, ready to upload) and the morph weights, computed once.

The legs, arms and head are found by role (:func:`engine.anim.humanoid.find_humanoid`); a model
that is not a biped (the Fox) plays without IK, and says so (:attr:`Player.notes`). The engine
player plays the scene's whole node hierarchy (plus the records' extra joints): joints of every
skin, rigid parts and animated nodes move together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.blending import subtree_mask
from engine.anim.events import Loop
from engine.anim.humanoid import Humanoid, find_humanoid
from engine.anim.ik import FootLock, aim_ik, two_bone_ik
from engine.anim.local_to_model import model_from_pose
from engine.anim.scene import SceneFrame
from engine.anim.skeleton import Skeleton
from engine.animator import Animator
from engine.camera import smooth_rotation, smoothing_alpha
from engine.errors import AssetError, SkeletonMismatchError
from engine.math import (
    affine_inverse,
    matrix_from_trs,
    quat_conjugate,
    quat_from_axis_angle,
    quat_rotate,
    transform_points,
    transform_vectors,
    trusted,
)
from engine.math._checks import FloatArray
from engine.player import MorphTargets
from engine.player import Player as Posing
from engine.render.scene_renderer import scene_records
from game.demo.graph_locomotion import GLIDE_SPEEDS, GRAPH, GraphLocomotion, load_locomotion
from game.demo.world import Terrain
from game.model import Model

UP = np.array([0.0, 1.0, 0.0])
FORWARD = np.array([0.0, 0.0, 1.0])
LOOK_YAW_LIMIT = np.radians(70.0)
"""Largest head turn left or right, radians."""
LOOK_PITCH_LIMITS = (np.radians(-35.0), np.radians(25.0))
"""Lowest and highest head pitch, radians."""
LOOK_GIVE_UP = np.radians(120.0)
"""Targets further round than this (behind the character) are not looked at."""
FADE_IN = 0.12
"""Seconds over which the wave fades in."""
ONE_SHOT_FADE = 0.3
"""Seconds before the end of the wave clip at which it starts fading out (over as long)."""


@dataclass(frozen=True)
class Leg:
    """A leg's joints: hip (start), knee (mid) and ankle (end)."""

    start: int
    mid: int
    end: int


def find_body(skeleton: Skeleton) -> Humanoid | None:
    """The body parts by role (:func:`engine.anim.humanoid.find_humanoid`); ``None`` for a skeleton not a biped."""
    try:
        return find_humanoid(skeleton)
    except SkeletonMismatchError:
        return None


def find_legs(body: Humanoid | None) -> tuple[Leg, Leg] | None:
    """Left and right legs: thigh, shin and foot joints (``None`` without a body).

    >>> from game.model import load_model
    >>> find_legs(find_body(load_model().skeleton))
    (Leg(start=17, mid=18, end=19), Leg(start=21, mid=22, end=23))
    """
    if body is None:
        return None
    legs = [body.leg(side).joints for side in "lr"]
    if any(len(joints) < 3 for joints in legs):
        return None
    return Leg(*legs[0][:3]), Leg(*legs[1][:3])


def find_head(body: Humanoid | None) -> list[int]:
    """The look-at chain: ``[neck, head]`` (``[]`` without a body)."""
    return [] if body is None else list(body.head_chain())


def wave_mask(body: Humanoid | None, skeleton: Skeleton, clip_targets: set[int]) -> FloatArray:
    """The wave's mask: the arms (by role) whose joints the clip moves, else the joints it animates."""
    if body is not None:
        arms = [body.arm(side).joints for side in "lr"]
        moved = [arm[0] for arm in arms if clip_targets & set(arm)]
        if moved:
            return subtree_mask(skeleton, moved)
    mask = np.zeros(skeleton.num_joints)
    mask[sorted(clip_targets)] = 1.0
    return mask


class Player:
    """The character the player steers (see the module docstring).

    Parameters
    ----------
    model
        The character to play.
    terrain
        The ground it walks on.
    position
        Start position ``(x, z)``; the character starts facing +Z.
    graph
        The shipped locomotion graph (:data:`game.demo.graph_locomotion.GRAPH`), or ``None``:
        the graph made for the model, which is also what a model without the graph's clips plays.
    """

    def __init__(
        self, model: Model, terrain: Terrain, position: tuple[float, float] = (0.0, 0.0), graph: Path | None = GRAPH
    ) -> None:
        self.model = model
        self.terrain = terrain
        self.records = scene_records(model.scene)
        """The palette records' layout (:class:`~engine.render.scene_renderer.SceneRecords`)."""
        skeleton = self.skeleton = self.records.skeleton
        root = self._root_motion_joint()
        self.posing = Posing(skeleton, 1, root_motion=root, morph=MorphTargets.from_scene(model.scene))
        """The engine's player: the one that samples, blends, composes and writes the palette."""
        self.notes: list[str] = []
        self.graph: GraphLocomotion | None = None
        """The locomotion graph, ``None`` for a model without clips (the rest pose glides)."""
        locomotion = self._start_locomotion(graph)
        roles = model.roles
        body = None if model.is_object else find_body(model.skeleton)
        self._waves = Animator(player=self.posing)
        self.wave = None
        if roles.wave:
            clip = self.records.clip(model.clips[roles.wave])
            mask = wave_mask(body, skeleton, {c.target for c in clip.channels})
            self.wave = self._waves.action(clip, mask=mask).set_loop(Loop.ONCE)
            covered = range(int(locomotion.min()), int(locomotion.max()) + 1) if locomotion.size else range(0)
            self._wave_override = self.posing.add_override(covered, mask)
        self._ending = False  # the wave is fading out
        self.legs = find_legs(body)
        self.head = find_head(body)
        if model.is_object:
            self.notes.append("an animated object (no skin): it plays its clips, without IK")
        elif body is None:
            self.notes.append("foot IK and look-at off: not a biped (engine.anim.humanoid finds no legs and head)")
        self._to_character = affine_inverse(self._model_frame())
        rest = model_from_pose(skeleton, skeleton.rest_pose)
        self._look_axes = self._head_axes(rest) if self.head else (FORWARD, UP)

        self.position = terrain.clamp(np.array([position[0], 0.0, position[1]]))
        """World position ``(3,)`` of the character's root, on the ground."""
        self.facing = np.array([0.0, 0.0, 0.0, 1.0])
        """Orientation ``(4,)`` about +Y; the character's forward is ``facing`` applied to +Z."""
        self.speed = 0.0
        """Eased ground speed, m/s."""
        self.velocity = np.zeros(3)
        """World velocity ``(3,)`` of the last step, m/s."""
        self._carried = np.zeros(3)  # horizontal velocity at take-off, kept through the jump
        self._airborne = 0.0  # eased weight of the jump's momentum (1 in the jump state)
        self._wanted = np.zeros(3)  # eased velocity asked for, in the character's frame
        self._foot_offsets = np.zeros(2)
        self.foot_lock: FootLock | None = self._foot_lock()
        """The feet's locks (:class:`~engine.anim.ik.FootLock`), or ``None``: the ankles go where the clips put them."""
        self._look = np.zeros(3)  # eased head yaw, pitch and weight
        self.foot_targets = np.zeros((0, 3))
        """World positions ``(2, 3)`` the ankles were solved to last step (empty without foot IK)."""
        self.look_point: FloatArray | None = None
        """World point the head aimed at last step, ``None`` when not looking."""
        self.palette_records = np.zeros((1, self.records.count, 4, 4), dtype=np.float32)
        """``(1, R, 4, 4)`` float32: the palette records of the last step, column-major, ready to upload."""
        self.ground = 0.0
        """Height of the playing clips' lowest point in the character frame (:meth:`game.model.Model.ground`)."""
        self.clip_model = np.zeros((skeleton.num_joints, 4, 4))
        """Model-space node matrices ``(R, 4, 4)`` as the clips posed them, before fitting to the world."""
        self.update(0.0, np.zeros(3), run=False, jump=False)

    def _foot_lock(self) -> FootLock | None:
        """The feet's locks: none here (the graph's gaits carry their own root motion, feet planted)."""
        return None

    def _root_motion_joint(self) -> int | None:
        """The engine player's root-motion joint: the model's root when its gaits carry their travel."""
        return self.model.root if self.model.root_motion else None

    def _start_locomotion(self, graph: Path | None) -> np.ndarray:
        """Set up the locomotion controller (the graph) on :attr:`posing`; returns the layers the wave covers."""
        model = self.model
        try:
            self.graph = load_locomotion(model, self.posing, self.records, graph)
            self.notes += self.graph.notes
        except AssetError:
            self.notes += ["no clips: the rest pose glides", "no jump clip: Space does nothing"]
        if self.graph is not None and not self.graph.strafes and not model.is_object:
            self.notes.append("no strafe clips: Ctrl does nothing")
        return self.graph.runtime.layers if self.graph is not None else np.zeros(0, dtype=np.intp)

    def _model_frame(self) -> FloatArray:
        """``(4, 4)`` the engine player's model space (the scene's world) → the character frame."""
        return self.model.frame

    # --- queries ------------------------------------------------------------------------------

    @property
    def forward(self) -> FloatArray:
        """World forward ``(3,)`` of the character (horizontal, unit)."""
        return quat_rotate(self.facing, FORWARD)

    @property
    def jumping(self) -> bool:
        """Whether the graph is in its ``jump`` or ``land`` state."""
        return self.graph is not None and self.graph.state in ("jump", "land")

    @property
    def jump_weight(self) -> float:
        """How much the jump carries the character now, ``[0, 1]``: its momentum's share, the feet's IK off."""
        return self._airborne

    @property
    def pose(self) -> Any:
        """The final local pose ``(R,)`` of the last step (after IK): a read-only copy."""
        return self.posing.local_pose[0]

    @property
    def model_matrices(self) -> FloatArray:
        """Model-space (scene world) matrices ``(R, 4, 4)`` of :attr:`pose` (a read-only copy)."""
        return self.posing.model[0]

    @property
    def morph_weights(self) -> FloatArray:
        """``(1, W)`` the morph weights of the last step, in the renderer's layout (read-only)."""
        return self.posing.morph_weights

    @property
    def frame(self) -> SceneFrame:
        """The scene frame of the last step (batch ``(1,)``), made on access for tools and tests.

        The demo draws :attr:`palette_records` and :attr:`morph_weights` instead: they are the same
        palettes, computed once in the step (this makes the per-skin palettes again).
        """
        nodes = self.records.nodes
        morph = self.posing.morph
        weights = self.posing.morph_weights
        per_instance = []
        slot = 0
        for instance in self.model.scene.instances:
            if instance.num_targets and morph is not None:
                start, stop = morph.offsets[slot], morph.offsets[slot + 1]
                per_instance.append(weights[:, start:stop])
                slot += 1
            else:
                per_instance.append(np.zeros((1, 0)))
        return self.model.scene.frame(self.model_matrices[None, :nodes], per_instance)

    def world(self) -> FloatArray:
        """``(4, 4)`` scene world space → world: the placement lowered by :attr:`ground`, times the model's frame."""
        return matrix_from_trs(self.position - self.ground * UP, self.facing, np.ones(3)) @ self._model_frame()

    # --- actions ------------------------------------------------------------------------------

    def celebrate(self) -> None:
        """Wave (an arm-only override of whatever plays), when the model has a wave clip."""
        if self.wave is not None and not self.wave.enabled[0]:
            self.wave.stop().fade_in(FADE_IN)
            self._ending = False

    def update(self, dt: float, move: Any, run: bool, jump: bool, look_at: Any = None, strafe: bool = False) -> None:
        """Advance one step of ``dt`` seconds (the straight frame of the module docstring).

        Parameters
        ----------
        dt
            Seconds.
        move
            ``(3,)`` world-space horizontal direction to go, length in ``[0, 1]`` (0: stand).
        run
            Whether to run rather than walk.
        jump
            Start a jump now (ignored while one plays).
        look_at
            ``(3,)`` world point for the head to look at, or ``None``.
        strafe
            Keep the facing and move sideways or backwards (the shipped graph's 2-D blend
            space); without it the character turns as usual.
        """
        move = np.asarray(move, dtype=float)
        amount = min(float(np.linalg.norm(move)), 1.0)
        strafe = strafe and self.graph is not None and self.graph.strafes
        if amount > 1e-6 and not strafe:
            heading = quat_from_axis_angle(UP, np.arctan2(move[0], move[2]))
            self.facing = smooth_rotation(self.facing, heading, dt, half_life=0.08)
        with trusted():  # the inputs are ours and checked once at load: skip the NaN scans
            posing = self.posing
            posing.begin_frame(dt)
            self._control(dt, move, amount, run, jump, strafe)  # 1-2: the controllers write their layers
            posing.pose()  # 3: sample, blend, the transition stage, root motion
            self._move(dt)
            self._fit_to_world(dt, look_at)  # 4: the IK stage, on the player's pose in place
            posing.finalize(self.palette_records)  # 5: the matrices, the palette records, once

    def _control(self, dt: float, move: FloatArray, amount: float, run: bool, jump: bool, strafe: bool) -> None:
        """The graph's parameters and layers, then the wave's (an override of them)."""
        graph = self.graph
        local = quat_rotate(quat_conjugate(self.facing), move) if strafe else amount * FORWARD
        speed = GLIDE_SPEEDS[int(run)] if graph is None else graph.gait_speed(local, run)
        length = float(np.hypot(local[0], local[2]))
        goal = local * [1.0, 0.0, 1.0] * (speed if length > 0.0 else 0.0)
        self._wanted += (goal - self._wanted) * float(smoothing_alpha(dt, half_life=0.12))
        self.speed = float(np.hypot(self._wanted[0], self._wanted[2]))
        take_off = jump and not self.jumping
        if take_off:
            self._carried = self.velocity.copy()
        if graph is not None:
            graph.control(quat_rotate(self.facing, self._wanted), self.facing, grounded=True, jump=take_off)
        self._control_wave()

    def _control_wave(self) -> None:
        """The wave's layer: fading out as its clip ends, an override of the locomotion's layers."""
        if self.wave is None:
            return
        if self.wave.enabled[0] and not self._ending and self.wave.time[0] >= self.wave.duration - ONE_SHOT_FADE:
            self.wave.fade_out(ONE_SHOT_FADE)  # the one-shot fades out as its clip ends
            self._ending = True
        self._waves.control()
        self.posing.set_override_weights(self._wave_override, np.minimum(self.wave.effective_weight, 1.0))

    def _move(self, dt: float) -> None:
        """Move by the animation: root motion, in-place gaits or a glide; with the jump's momentum."""
        graph = self.graph
        airborne = 0.0 if graph is None else float(graph.airborne)
        self._airborne += (airborne - self._airborne) * float(smoothing_alpha(dt, half_life=0.05))
        if graph is not None:
            self.ground = self.model.ground(graph.clip_weights())
        if self.posing.root_joint is not None:
            local = transform_vectors(self.model.motion_frame, self.posing.root_motion.translation[0])
        elif graph is not None and graph.in_place_travel(1.0) > 0.0:
            local = graph.in_place_travel(dt) * FORWARD
        else:
            local = self.speed * dt * FORWARD
        step = (1.0 - self.jump_weight) * quat_rotate(self.facing, local * [1.0, 0.0, 1.0])
        step = step + self.jump_weight * self._carried * dt  # the jump's momentum replaces the travel
        target = self.terrain.clamp(self.position + step)
        self.velocity = (target - self.position) * [1.0, 0.0, 1.0] / dt if dt > 0.0 else np.zeros(3)
        self.position = target

    # --- fitting the pose to the world --------------------------------------------------------

    def _head_axes(self, rest: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The character's forward and up in the head joint's own frame (from the rest pose)."""
        head = rest[self.head[-1], :3, :3]
        basis = head / np.linalg.norm(head, axis=0)
        to_skeleton = self._to_character[:3, :3]
        forward, up = (basis.T @ to_skeleton @ v for v in (FORWARD, UP))
        return forward / np.linalg.norm(forward), up / np.linalg.norm(up)

    def _fit_to_world(self, dt: float, look_at: Any) -> None:
        """The frame's IK stage: foot IK on the terrain, then the head look-at, on the player's pose.

        Reads the model matrices once (:meth:`~engine.player.Player.update_model`), writes the
        corrections into the player's local pose in place; after each edit only the edited
        subtrees are recomposed, and :meth:`~engine.player.Player.finalize` does the rest.
        """
        self.clip_model = np.asarray(self.posing.update_model())[0]
        world = self.world()
        to_skeleton = affine_inverse(world)
        if self.legs is not None:
            self._plant_feet(dt, world, to_skeleton, 1.0 - self.jump_weight)
        if self.head:
            self._look_at(dt, world, to_skeleton, look_at)

    def _plant_feet(self, dt: float, world: FloatArray, to_skeleton: FloatArray, weight: float) -> None:
        """Lower (or raise) the hips to the lower foot's ground, then put each ankle on its ground.

        With :attr:`foot_lock`, a standing ankle (within the lock's height of the lower one, slow)
        is held where it was put down; the two-bone IK reaches for it.
        """
        assert self.legs is not None
        legs, posing, model = self.legs, self.posing, self.clip_model
        ankles = transform_points(world, model[[leg.end for leg in legs], :3, 3])
        ground = self.terrain.height(ankles[:, 0], ankles[:, 2]) - self.position[1]  # vs the flat ground played
        self._foot_offsets += (weight * ground - self._foot_offsets) * float(smoothing_alpha(dt, half_life=0.05))
        hips = int(self.skeleton.parents[legs[0].start])
        drop: np.ndarray = transform_vectors(to_skeleton, [0.0, float(self._foot_offsets.min()), 0.0])
        parent = int(self.skeleton.parents[hips])
        if parent >= 0:
            drop = np.linalg.solve(model[parent, :3, :3], drop)
        posing.pose_buffer.translations[:, hips, 0] += drop
        posing.pose_changed(hips)
        placed = posing.update_model()  # the hips' subtree only
        if self.foot_lock is not None:
            lows = ankles[:, 1] - ankles[:, 1].min() if weight > 0.5 else np.full(2, np.inf)  # no contact in the air
            ankles = self.foot_lock.update(dt, ankles, lows)
        self.foot_targets = ankles + self._foot_offsets[:, None] * UP
        targets = transform_points(to_skeleton, self.foot_targets)
        forward = transform_vectors(to_skeleton, self.forward)
        results = []
        for leg, target in zip(legs, targets, strict=True):  # two legs, both solved on the placed pose
            hip, knee, ankle = placed.gather([leg.start, leg.mid, leg.end])[0, :, :3, 3]
            axis = ankle - hip
            bend = knee - hip - axis * np.dot(knee - hip, axis) / max(np.dot(axis, axis), 1e-30)
            pole = bend if np.linalg.norm(bend) > 0.02 * np.linalg.norm(axis) else forward
            solve = two_bone_ik(
                self.skeleton, placed, leg.start, leg.mid, leg.end, target, pole, keep_end_rotation=True, weight=weight
            )
            results.append(solve)
        for result in results:
            posing.apply_corrections(result)

    def _look_at(self, dt: float, world: FloatArray, to_skeleton: FloatArray, target: Any) -> None:
        """Aim the neck and head at the look target, clamped to the head's yaw and pitch limits, eased."""
        model = self.posing.update_model()  # current after the feet (the legs' subtrees only)
        head = transform_points(world, model.gather(self.head[-1])[0, :3, 3])
        want = np.zeros(3)  # yaw, pitch, weight: look ahead, at weight 0
        if target is not None:
            local = quat_rotate(quat_conjugate(self.facing), np.asarray(target) - head)
            yaw = float(np.arctan2(local[0], local[2]))
            pitch = float(np.arctan2(local[1], np.hypot(local[0], local[2])))
            if abs(yaw) < LOOK_GIVE_UP:
                limited = (np.clip(yaw, -LOOK_YAW_LIMIT, LOOK_YAW_LIMIT), np.clip(pitch, *LOOK_PITCH_LIMITS))
                want = np.array([*limited, 1.0])
        self._look += (want - self._look) * float(smoothing_alpha(dt, half_life=0.2))
        yaw, pitch, weight = self._look
        if weight < 1e-3:
            self.look_point = None
            return
        direction = np.array([np.cos(pitch) * np.sin(yaw), np.sin(pitch), np.cos(pitch) * np.cos(yaw)])
        self.look_point = head + quat_rotate(self.facing, direction) * 2.0 * self.model.height
        forward, up = self._look_axes
        result = aim_ik(
            self.skeleton,
            model,
            self.head,
            transform_points(to_skeleton, self.look_point),
            forward,
            up=up,
            pole=transform_vectors(to_skeleton, UP),
            weight=min(float(weight), 1.0),
        )
        self.posing.apply_corrections(result)
