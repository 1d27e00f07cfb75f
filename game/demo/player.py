"""The player character: locomotion from an animation graph, a wave, and IK that fits it to the world.

One :class:`Player` owns an :class:`~engine.animator.Animator` for one character and, each step:

1. turns towards the move direction (frame-rate independent smoothing) — unless strafing, which
   keeps the facing — and eases the velocity it asks for, in its own frame;
2. poses the body: with the locomotion graph (:mod:`game.demo.graph_locomotion`, the default
   mannequin) it sets the graph's parameters only — that velocity, ``grounded`` and the ``jump``
   trigger — and the graph chooses and blends (idle, a 2-D blend space of walks and runs in four
   directions, jump, land, inertialized transitions); models without the graph's clips get the
   action-based locomotion (:class:`Locomotion`: an idle/walk/run
   :class:`~engine.animator.BlendSpace1D` with walk and run in a sync group, and a crossfaded
   jump clip);
3. plays the wave, an arm-only masked layer, over that pose
   (:meth:`~engine.animator.Animator.advance` with the graph's pose as ``base``);
4. moves by the animation: the graph's root motion (its clips play in place and the root's
   travel is blended and inertialized with the pose), or the actions' root-motion delta, or each
   in-place clip's measured ground speed (:func:`game.model.analyze_gait`) times how far its time
   advanced — the feet do not slide; in a jump the take-off velocity carries on;
5. fits the pose to the world, as the IK stage of the animator's staged frame
   (:meth:`~engine.animator.Animator.advance`, this stage, then
   :meth:`~engine.animator.Animator.finalize`): hips lowered to the lower foot's ground, then
   two-bone IK puts each ankle on the ground under it (:func:`~engine.anim.ik.two_bone_ik`), then
   the neck and head aim at the nearest item (:func:`~engine.anim.ik.aim_ik`) within yaw/pitch
   limits. The corrections go into the animator's pose in place and only the edited subtrees are
   recomposed: one full local→model pass per step.

Models that lack some of this get the nearest sensible behaviour, listed in :attr:`Player.notes`;
a file without a skin (an animated object) plays its clips as the "character", without IK.

The animator plays the scene's whole node hierarchy (:attr:`game.model.Model.skeleton`): joints
of every skin, rigid parts and animated nodes move together, and :attr:`Player.frame` is the
scene frame the demo draws (:meth:`game.model.Model.scene_frame`, morph weights included).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.events import Loop
from engine.anim.ik import aim_ik, two_bone_ik
from engine.anim.local_to_model import model_from_pose
from engine.anim.scene import SceneFrame
from engine.anim.skeleton import Skeleton
from engine.animator import Action, Animator, BlendSpace1D
from engine.camera import smooth_rotation, smoothing_alpha
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
from game.demo.graph_locomotion import GRAPH, load_locomotion
from game.demo.world import Terrain
from game.model import Gait, Model, body_weights, playing_clips

UP = np.array([0.0, 1.0, 0.0])
FORWARD = np.array([0.0, 0.0, 1.0])
LOOK_YAW_LIMIT = np.radians(70.0)
"""Largest head turn left or right, radians."""
LOOK_PITCH_LIMITS = (np.radians(-35.0), np.radians(25.0))
"""Lowest and highest head pitch, radians."""
LOOK_GIVE_UP = np.radians(120.0)
"""Targets further round than this (behind the character) are not looked at."""
FADE_IN = 0.12
"""Seconds over which the jump and the wave fade in."""
ONE_SHOT_FADE = 0.3
"""Seconds before the end of the jump or wave clip at which it starts fading out (over as long)."""
RUN_TIME_SCALE = 1.8
"""Playback speed of a lone gait clip when running (models without a run clip)."""
GLIDE_SPEEDS = (1.2, 3.0)
"""Walk and run speeds, m/s, of a model whose clips do not walk (it glides)."""


@dataclass(frozen=True)
class Leg:
    """A leg's joints: hip (start), knee (mid) and ankle (end)."""

    start: int
    mid: int
    end: int


def _side(name: str) -> str | None:
    lowered = name.lower()
    for side, word in (("l", "left"), ("r", "right")):
        if word in lowered or re.search(rf"(^|[^a-z]){side}([^a-z]|$)", lowered):
            return side
    return None


def _depth(skeleton: Skeleton, joint: int) -> int:
    depth = 0
    while skeleton.parents[joint] >= 0:
        joint, depth = int(skeleton.parents[joint]), depth + 1
    return depth


def find_legs(skeleton: Skeleton) -> tuple[Leg, Leg] | None:
    """Left and right legs by name: each side's root-most ``foot``/``ankle`` joint, its parent and grandparent.

    ``None`` when either side is missing (e.g. CesiumMan, whose joints are unnamed).

    >>> from game.model import load_model
    >>> find_legs(load_model().skeleton)
    (Leg(start=17, mid=18, end=19), Leg(start=21, mid=22, end=23))
    """
    legs = []
    for side in "lr":
        feet = [
            j
            for j, name in enumerate(skeleton.names)
            if _side(name) == side and ("foot" in name.lower() or "ankle" in name.lower())
        ]
        if not feet:
            return None
        end = min(feet, key=lambda j: _depth(skeleton, j))
        mid = int(skeleton.parents[end])
        start = int(skeleton.parents[mid]) if mid >= 0 else -1
        if start < 0:
            return None
        legs.append(Leg(start, mid, end))
    return legs[0], legs[1]


def find_head(skeleton: Skeleton) -> list[int]:
    """The look-at chain by name: ``[neck, head]``, ``[head]`` without a neck, ``[]`` without a head."""
    heads = [j for j, name in enumerate(skeleton.names) if "head" in name.lower()]
    if not heads:
        return []
    head = min(heads, key=lambda j: _depth(skeleton, j))
    neck = int(skeleton.parents[head])
    return [neck, head] if neck >= 0 and "neck" in skeleton.names[neck].lower() else [head]


class Locomotion:
    """The clips that move the character, and the ground speed they produce.

    ``blend`` mode: a :class:`~engine.animator.BlendSpace1D` over idle (speed 0, when the model
    has one), walk and run at their measured ground speeds, walk and run synchronised.
    ``single`` mode (no walk clip): the first clip alone, time-scaled to the speed when it is a
    gait, else played as is while the character glides (as the rest pose does without clips).
    """

    def __init__(self, model: Model, animator: Animator) -> None:
        clips, roles, gaits = model.clips, model.roles, model.gaits
        self.notes: list[str] = []
        self.space: BlendSpace1D | None = None
        self.gaits: dict[Action, Gait] = {}
        walk = roles.walk if roles.walk and gaits[roles.walk].moves else None
        if walk is not None:
            points: list[tuple[float, Action]] = []
            if roles.idle:
                points.append((0.0, animator.action(clips[roles.idle])))
            else:
                self.notes.append("no idle clip: the walk slows to a stop")
            moving = [walk] + ([roles.run] if roles.run and gaits[roles.run].speed > 1.1 * gaits[walk].speed else [])
            for name in moving:
                action = animator.action(clips[name])
                self.gaits[action] = gaits[name]
                points.append((gaits[name].speed, action))
            self.space = animator.blend_space_1d(points, sync=list(self.gaits) if len(self.gaits) > 1 else False)
            self.walk_speed = gaits[walk].speed
            self.run_speed = gaits[moving[-1]].speed if len(moving) > 1 else RUN_TIME_SCALE * self.walk_speed
            if len(moving) == 1:
                self.notes.append(f"no run clip: '{walk}' plays faster")
            self.actions = tuple(a for _, a in points)
            self.has_idle = bool(roles.idle)
        elif not clips:
            self.actions, self.has_idle = (), False
            self.walk_speed, self.run_speed = GLIDE_SPEEDS
            self.notes.append("no clips: the rest pose glides")
        else:
            name = next(iter(clips))
            action = animator.action(clips[name]).play()
            gait = gaits[name]
            self.actions, self.has_idle = (action,), False
            if gait.moves:
                self.gaits[action] = gait
                self.walk_speed, self.run_speed = gait.speed, RUN_TIME_SCALE * gait.speed
                self.notes.append(f"no idle/walk/run clips: '{name}' plays in place, time-scaled to the speed")
            else:
                self.walk_speed, self.run_speed = GLIDE_SPEEDS
                self.notes.append(f"no walk clip ('{name}' is not a gait): the character glides")

    def drive(self, speed: float, weight: float) -> None:
        """Weight the clips for ``speed`` m/s, all together weighing ``weight``; set time scales."""
        if self.space is not None:
            self.space.set_parameter(speed, weight=weight)
        elif self.actions:
            self.actions[0].set_weight(weight)
        if not self.has_idle and self.gaits:  # nothing stands still: slow the gait down to a stop
            scale = min(speed / self.walk_speed, 1.0) if self.space is not None else speed / self.walk_speed
            for action in self.gaits:
                action.set_speed(scale)

    def clip_times(self) -> FloatArray:
        """Current clip time of each gait action ``(G,)``, seconds."""
        return np.array([a.time[0] for a in self.gaits])

    def in_place_travel(self, before: FloatArray) -> float:
        """Metres the in-place gait clips carried the character since ``before`` (their clip times then).

        Each clip's measured ground speed times the clip time it advanced, weighted by its share
        of the current weights (the jump's share carries nothing).
        """
        travel = 0.0
        for (action, gait), start in zip(self.gaits.items(), before, strict=True):  # loop over gait clips
            advanced = (action.time[0] - start) % action.duration
            travel += action.effective_weight[0] * gait.speed * advanced
        return travel


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
        The locomotion graph document (:data:`game.demo.graph_locomotion.GRAPH`), or ``None``: the
        action-based locomotion, which is also what a model without the graph's clips plays.
    """

    def __init__(
        self, model: Model, terrain: Terrain, position: tuple[float, float] = (0.0, 0.0), graph: Path | None = GRAPH
    ) -> None:
        self.model = model
        self.terrain = terrain
        skeleton = self.skeleton = model.skeleton
        clips, roles = model.clips, model.roles
        self.graph = None if model.is_object or graph is None else load_locomotion(model, graph)
        """The locomotion graph the character plays, or ``None`` (the actions of :attr:`locomotion`)."""
        self.locomotion: Locomotion | None = None
        """The action-based locomotion (models without the graph's clips), or ``None``."""
        self.jump: Action | None = None
        if self.graph is not None:  # the graph poses the body; the animator plays the wave over it
            self.animator = Animator(skeleton, 1)
            self.notes: list[str] = []
        else:
            self.animator = Animator(skeleton, 1, root_motion=model.in_place, rest_threshold=1e-3)
            self.locomotion = Locomotion(model, self.animator)
            self.notes = list(self.locomotion.notes)
            self.jump = self.animator.action(clips[roles.jump]).set_loop(Loop.ONCE) if roles.jump else None
            if self.jump is None:
                self.notes.append("no jump clip: Space does nothing")
            if not model.is_object:
                self.notes.append("no strafe clips (no locomotion graph): Ctrl does nothing")
        self.wave = self.animator.action(clips[roles.wave]).set_loop(Loop.ONCE) if roles.wave else None
        self._wave_mask = np.zeros(skeleton.num_joints)
        if self.wave is not None:
            self._wave_mask[[c.target for c in self.wave.clip.channels]] = 1.0
            self.wave.set_mask(self._wave_mask)
        self.legs = None if model.is_object else find_legs(skeleton)
        self.head = [] if model.is_object else find_head(skeleton)
        if model.is_object:
            self.notes.append("an animated object (no skin): it plays its clips, without IK")
        else:
            if self.legs is None:
                self.notes.append("foot IK off: no left/right foot joints found by name")
            if not self.head:
                self.notes.append("look-at off: no head joint found by name")
        self._to_character = affine_inverse(model.frame)
        rest = model_from_pose(skeleton, skeleton.rest_pose)
        self._look_axes = self._head_axes(rest) if self.head else (FORWARD, UP)

        self.position = terrain.clamp(np.array([position[0], 0.0, position[1]]))
        """World position ``(3,)`` of the character's root, on the ground."""
        self.facing = np.array([0.0, 0.0, 0.0, 1.0])
        """Orientation ``(4,)`` about +Y; the character's forward is ``facing`` applied to +Z."""
        self.speed = 0.0
        """Eased ground speed, m/s (the blend-space parameter)."""
        self.velocity = np.zeros(3)
        """World velocity ``(3,)`` of the last step, m/s."""
        self._carried = np.zeros(3)  # horizontal velocity at take-off, kept through the jump
        self._airborne = 0.0  # graph: eased weight of the jump's momentum (1 in the jump state)
        self._wanted = np.zeros(3)  # graph: eased velocity asked for, in the character's frame
        self._ending: set[Action] = set()  # one-shot layers fading out
        self._wave_share = 0.0
        self._foot_offsets = np.zeros(2)
        self._look = np.zeros(3)  # eased head yaw, pitch and weight
        self.foot_targets = np.zeros((0, 3))
        """World positions ``(2, 3)`` the ankles were solved to last step (empty without foot IK)."""
        self.look_point: FloatArray | None = None
        """World point the head aimed at last step, ``None`` when not looking."""
        self.ground = 0.0
        """Height of the playing clips' lowest point in the character frame (:meth:`game.model.Model.ground`)."""
        if self.graph is not None:
            self.animator.advance(0.0, base=self.graph.drive(0.0, np.zeros(3), self.facing))
            self.animator.finalize()
            self.ground = model.ground(self.graph.clip_weights())
        else:
            assert self.locomotion is not None
            self.locomotion.drive(0.0, 1.0)
            self.animator.update(0.0)
            self.ground = model.ground(body_weights(self.animator.actions, root=model.root))
        self.clip_model = self.animator.model[0]
        """Model-space node matrices ``(N, 4, 4)`` as the clips posed them, before fitting to the world."""
        self.pose = self.animator.local_pose[0]
        """The final local pose ``(N)`` of every node of the scene, of the last step (after IK)."""
        self.model_matrices = self.animator.model[0]
        """Model-space (scene world) node matrices ``(N, 4, 4)`` of :attr:`pose`."""
        self.frame: SceneFrame = model.scene_frame(self.model_matrices[None], playing_clips(self.animator.actions))
        """The scene frame of :attr:`pose` (batch ``(1,)``): skin palettes, node matrices, morph weights."""

    # --- queries ------------------------------------------------------------------------------

    @property
    def forward(self) -> FloatArray:
        """World forward ``(3,)`` of the character (horizontal, unit)."""
        return quat_rotate(self.facing, FORWARD)

    @property
    def jumping(self) -> bool:
        """Whether the jump clip is playing (graph: in its ``jump`` or ``land`` state)."""
        if self.graph is not None:
            return self.graph.state in ("jump", "land")
        return self.jump is not None and bool(self.jump.enabled[0])

    @property
    def jump_weight(self) -> float:
        """How much the jump carries the character now, ``[0, 1]``: its momentum's share, the feet's IK off."""
        if self.graph is not None:
            return self._airborne
        return float(self.jump.effective_weight[0]) if self.jump is not None else 0.0

    def world(self) -> FloatArray:
        """``(4, 4)`` scene world space → world: the placement lowered by :attr:`ground`, times the model's frame."""
        return matrix_from_trs(self.position - self.ground * UP, self.facing, np.ones(3)) @ self.model.frame

    # --- actions ------------------------------------------------------------------------------

    def celebrate(self) -> None:
        """Wave (an upper-body layer over whatever plays), when the model has a wave clip."""
        if self.wave is not None and not self.wave.enabled[0]:
            self.wave.stop().fade_in(FADE_IN)
            self._ending.discard(self.wave)

    def update(self, dt: float, move: Any, run: bool, jump: bool, look_at: Any = None, strafe: bool = False) -> None:
        """Advance one step of ``dt`` seconds.

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
            Keep the facing and move sideways or backwards (the graph's 2-D blend space); without
            the locomotion graph the character turns as usual.
        """
        move = np.asarray(move, dtype=float)
        amount = min(float(np.linalg.norm(move)), 1.0)
        strafe = strafe and self.graph is not None
        if amount > 1e-6 and not strafe:
            heading = quat_from_axis_angle(UP, np.arctan2(move[0], move[2]))
            self.facing = smooth_rotation(self.facing, heading, dt, half_life=0.08)
        with trusted():  # the inputs are ours and checked once at load: skip the NaN scans
            if self.graph is not None:
                self._advance_graph(dt, move, amount, run, jump, strafe)
            else:
                self._advance_actions(dt, amount, run, jump)
            self._fit_to_world(dt, look_at)  # ... the IK stage, editing the animator's pose in place ...
            self.animator.finalize()  # ... then model matrices and palette, once
            self.pose = self.animator.local_pose[0]
            self.model_matrices = self.animator.model[0]
            self.frame = self.model.scene_frame(self.model_matrices[None], playing_clips(self.animator.actions))

    def _advance_graph(self, dt: float, move: FloatArray, amount: float, run: bool, jump: bool, strafe: bool) -> None:
        """The graph's step: set its parameters, take its pose under the wave layer, move by its root motion."""
        graph = self.graph
        assert graph is not None
        self._layers()
        local = quat_rotate(quat_conjugate(self.facing), move) if strafe else amount * FORWARD
        goal = local * [1.0, 0.0, 1.0] * graph.gait_speed(local, run)
        self._wanted += (goal - self._wanted) * float(smoothing_alpha(dt, half_life=0.12))
        self.speed = float(np.hypot(self._wanted[0], self._wanted[2]))
        take_off = jump and not self.jumping
        if take_off:
            self._carried = self.velocity.copy()
        pose = graph.drive(dt, quat_rotate(self.facing, self._wanted), self.facing, grounded=True, jump=take_off)
        self.animator.advance(dt, base=pose)  # the blended local pose: the wave over the graph's
        self.ground = self.model.ground(graph.clip_weights())
        self._airborne += (float(graph.airborne) - self._airborne) * float(smoothing_alpha(dt, half_life=0.05))
        self._move_by(dt, transform_vectors(self.model.motion_frame, graph.travel))

    def _advance_actions(self, dt: float, amount: float, run: bool, jump: bool) -> None:
        """The action-based step: blend-space speed, jump crossfade, wave layer; move by the animation."""
        locomotion = self.locomotion
        assert locomotion is not None
        goal = amount * (locomotion.run_speed if run else locomotion.walk_speed)
        self.speed += (goal - self.speed) * float(smoothing_alpha(dt, half_life=0.12))
        if jump and self.jump is not None and not self.jumping:
            self.jump.stop().fade_in(FADE_IN)
            self._ending.discard(self.jump)
            self._carried = self.velocity.copy()
        self._layers()
        before = locomotion.clip_times()
        self.animator.advance(dt)  # the staged frame: blended local pose ...
        self.ground = self.model.ground(body_weights(self.animator.actions, root=self.model.root))
        if self.animator.root_joint is not None:
            local = transform_vectors(self.model.motion_frame, self.animator.root_motion.translation[0])
        elif locomotion.gaits:
            local = locomotion.in_place_travel(before) * FORWARD
        else:
            local = self.speed * dt * FORWARD * (1.0 - self.jump_weight)
        self._move_by(dt, local)

    def _layers(self) -> None:
        """Weights of this step: the locomotion gives way to the jump; the wave masks the joints it moves."""
        for action in (self.jump, self.wave):  # one-shot layers fade out as their clip ends
            if action is None or not action.enabled[0] or action in self._ending:
                continue
            if action.time[0] >= action.duration - ONE_SHOT_FADE:
                action.fade_out(ONE_SHOT_FADE)
                self._ending.add(action)
        if self.locomotion is None:  # the graph: the wave's own mask and weight blend it over the graph's pose
            return
        self.locomotion.drive(self.speed, 1.0 - self.jump_weight)
        share = float(self.wave.effective_weight[0]) if self.wave is not None else 0.0
        if share != self._wave_share:
            others = 1.0 - share * self._wave_mask
            for action in (*self.locomotion.actions, *((self.jump,) if self.jump else ())):
                action.set_mask(others)
            self._wave_share = share

    def _move_by(self, dt: float, local: FloatArray) -> None:
        """Move by ``local`` ``(3,)`` (the animation's travel, character frame), with the jump's momentum."""
        step = quat_rotate(self.facing, local * [1.0, 0.0, 1.0])
        weight = self.jump_weight
        if self.graph is not None:  # the jump state's momentum replaces the root motion
            step = (1.0 - weight) * step
        step = step + weight * self._carried * dt
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
        """The frame's IK stage: foot IK on the terrain, then the head look-at, on the animator's pose.

        Reads the model matrices once (:meth:`~engine.animator.Animator.update_model`), writes the
        corrections into the animator's local pose in place; after each edit only the edited
        subtrees are recomposed, and :meth:`~engine.animator.Animator.finalize` does the rest.
        """
        self.clip_model = self.animator.update_model().to_array()[0]
        world = self.world()
        to_skeleton = affine_inverse(world)
        if self.legs is not None:
            self._plant_feet(dt, world, to_skeleton, 1.0 - self.jump_weight)
        if self.head:
            self._look_at(dt, world, to_skeleton, look_at)

    def _plant_feet(self, dt: float, world: FloatArray, to_skeleton: FloatArray, weight: float) -> None:
        """Lower (or raise) the hips to the lower foot's ground, then put each ankle on its ground."""
        assert self.legs is not None
        legs, animator, model = self.legs, self.animator, self.clip_model
        ankles = transform_points(world, model[[leg.end for leg in legs], :3, 3])
        ground = self.terrain.height(ankles[:, 0], ankles[:, 2]) - self.position[1]  # vs the flat ground played
        self._foot_offsets += (weight * ground - self._foot_offsets) * float(smoothing_alpha(dt, half_life=0.05))
        hips = int(self.skeleton.parents[legs[0].start])
        drop: np.ndarray = transform_vectors(to_skeleton, [0.0, float(self._foot_offsets.min()), 0.0])
        parent = int(self.skeleton.parents[hips])
        if parent >= 0:
            drop = np.linalg.solve(model[parent, :3, :3], drop)
        animator.pose_buffer.translations[:, hips, 0] += drop
        animator.pose_changed(hips)
        placed = animator.update_model()  # the hips' subtree only
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
            animator.apply_corrections(result)

    def _look_at(self, dt: float, world: FloatArray, to_skeleton: FloatArray, target: Any) -> None:
        """Aim the neck and head at the look target, clamped to the head's yaw and pitch limits, eased."""
        model = self.animator.update_model()  # current after the feet (the legs' subtrees only)
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
        self.animator.apply_corrections(result)
