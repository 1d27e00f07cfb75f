"""The :class:`Animator`: actions with fades, warps and sync groups — a controller of a :class:`~engine.player.Player`.

The playback state is one :class:`~engine.animator.table.ActionTable` (arrays ``(A, C)``); each
action plays one layer of the player, which owns the clip times and does all the posing. A frame
(:meth:`Animator.control`) turns the clock into effective weights and clip travel, loops over
actions, sync groups and nothing per character.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.anim.blending import REST_THRESHOLD
from engine.anim.clip import Clip, SampledClip
from engine.anim.events import Loop
from engine.anim.layout import MatrixBuffer, PoseBuffer
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.animator.action import Action
from engine.animator.sync import BlendSpace1D, SyncGroup
from engine.animator.table import ActionTable
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, trusted
from engine.player import Player, RootMotion


class Animator:
    """Plays clips on ``num_characters`` characters sharing ``skeleton`` (see :mod:`engine.animator`).

    Parameters
    ----------
    skeleton
        The characters' skeleton; every clip must target its ``J`` joints.
    num_characters
        ``C``, the number of characters driven together.
    root_motion
        Name or index of the joint whose horizontal translation and yaw become
        :attr:`root_motion` deltas (that joint then plays in place), or ``None``.
    rest_threshold
        Total weight per joint below which the rest pose fills in (see
        :func:`~engine.anim.blending.blend`); default
        :data:`~engine.anim.blending.REST_THRESHOLD` = 1, the same as ``blend``'s.
    backend
        The player's backend (:class:`~engine.player.Player`): ``"numba"``, ``"numpy"`` or
        ``None`` (``OSSA_BACKEND``, else numba where it is installed). Both agree to 1e-12.
    player
        Play on this existing player instead (its skeleton, characters, root motion, threshold
        and backend; leave the other arguments out): several controllers sharing one player
        each own their layers (the demo's graph and its wave).

    Attributes
    ----------
    player
        The :class:`~engine.player.Player` the actions play on (it owns the buffers, the
        clock, the root motion and the post-blend stages).
    table
        The :class:`~engine.animator.table.ActionTable`: one row per action.
    """

    def __init__(
        self,
        skeleton: Skeleton | None = None,
        num_characters: int = 1,
        *,
        root_motion: str | int | None = None,
        rest_threshold: float = REST_THRESHOLD,
        backend: str | None = None,
        player: Player | None = None,
    ) -> None:
        if player is None:
            if skeleton is None:
                raise InvalidInputError("an Animator needs a skeleton or a player")
            player = Player(
                skeleton, num_characters, root_motion=root_motion, rest_threshold=rest_threshold, backend=backend
            )
        elif not isinstance(player, Player) or (skeleton is not None and skeleton is not player.skeleton):
            raise InvalidInputError("player must be a Player (of the skeleton given, if one is)")
        self.player = player
        self.table = ActionTable.empty(player.num_characters)
        self._actions: list[Action] = []
        self._by_clip: dict[tuple[Clip | SampledClip, bool], Action] = {}
        self._groups: list[SyncGroup] = []

    def __repr__(self) -> str:
        return f"Animator({self.num_characters} characters, {len(self._actions)} actions, {self.skeleton!r})"

    # --- the player's, under the names the animator always had ----------------------------------

    @property
    def skeleton(self) -> Skeleton:
        """The characters' skeleton."""
        return self.player.skeleton

    @property
    def num_characters(self) -> int:
        """``C``."""
        return self.player.num_characters

    @property
    def clock(self) -> FloatArray:
        """Each character's time ``(C,)``, seconds (fades and warps run on it; a copy)."""
        return self.player.clock.copy()

    @property
    def rest_threshold(self) -> float:
        """The blend's rest threshold."""
        return self.player.rest_threshold

    @property
    def root_joint(self) -> int | None:
        """The root-motion joint, or ``None``."""
        return self.player.root_joint

    @property
    def backend(self) -> str:
        """``"numba"`` (the compiled kernels) or ``"numpy"``."""
        return self.player.backend

    @property
    def stages(self) -> list[Callable[[Player], None]]:
        """The player's post-blend stages, run by :meth:`update` (see :attr:`engine.player.Player.stages`)."""
        return self.player.stages

    @property
    def root_motion(self) -> RootMotion:
        """The root's planar travel of the last frame (:class:`~engine.player.RootMotion`)."""
        return self.player.root_motion

    @property
    def pose_buffer(self) -> PoseBuffer:
        """The local pose of the frame, batch-innermost (the player's; written in place)."""
        return self.player.pose_buffer

    @property
    def model_buffer(self) -> MatrixBuffer:
        """The model matrices (the player's MatrixBuffer)."""
        return self.player.model_buffer

    @property
    def palette_buffer(self) -> MatrixBuffer:
        """The skinning palette (the player's MatrixBuffer)."""
        return self.player.palette_buffer

    @property
    def local_pose(self) -> Pose:
        """The local pose ``(C, J)``: a read-only C-ordered copy."""
        return self.player.local_pose

    @property
    def model(self) -> FloatArray:
        """Model-space matrices ``(C, J, 4, 4)``: a read-only copy."""
        return self.player.model

    @property
    def palette(self) -> FloatArray:
        """Skinning matrices ``(C, J, 4, 4)``: a read-only copy (ends the frame: :meth:`finalize`)."""
        return self.player.palette

    @property
    def actions(self) -> tuple[Action, ...]:
        """Every action made so far, in creation (= additive layering) order."""
        return tuple(self._actions)

    # --- building ---------------------------------------------------------------------------

    def action(
        self,
        clip: Clip | SampledClip,
        *,
        additive: bool = False,
        reference: Pose | None = None,
        mask: Any = None,
    ) -> Action:
        """The action playing ``clip`` (made on first call, the same object afterwards).

        Parameters
        ----------
        clip
            A clip of this animator's skeleton, or a compressed clip of it (blended, not additive).
        additive
            Add the clip on top of the blended pose as a delta against ``reference`` (``None``:
            the clip's first frame, see :func:`~engine.anim.additive.additive_clip`) instead of
            blending it in.
        reference
            Reference pose ``(J,)`` of an additive action.
        mask
            Per-joint weights ``(J,)`` (:func:`~engine.anim.blending.subtree_mask`).

        Raises
        ------
        SkeletonMismatchError
            A clip or mask for a different number of joints.
        """
        key = (clip, additive)
        if key in self._by_clip:
            return self._by_clip[key]
        if not isinstance(clip, Clip | SampledClip) or clip.num_targets != self.skeleton.num_joints:
            got = clip.num_targets if isinstance(clip, Clip | SampledClip) else type(clip).__name__
            raise SkeletonMismatchError(
                f"clip {getattr(clip, 'name', '?')!r} targets {got} joints but the animator's skeleton "
                f"has {self.skeleton.num_joints}"
            )
        layer = self.player.add_layer(clip, mask=mask, additive=additive, reference=reference)
        action = Action(self, self.table.grow(layer))
        self._actions.append(action)
        self._by_clip[key] = action
        return action

    def sync_group(self, *actions: Action) -> SyncGroup:
        """Phase-lock ``actions`` (:class:`SyncGroup`); their phase starts at the first one's."""
        group = SyncGroup(self, actions)
        self._groups.append(group)
        return group

    def sync_group_of(self, action: Action) -> SyncGroup | None:
        """The sync group ``action`` is in, or ``None``."""
        return next((g for g in self._groups if action in g.actions), None)

    def blend_space_1d(
        self, points: Sequence[tuple[float, Action]], *, sync: bool | Sequence[Action] = True
    ) -> BlendSpace1D:
        """A :class:`BlendSpace1D` over ``(position, action)`` points, strictly increasing."""
        return BlendSpace1D(self, points, sync)

    # --- the frame: control → pose → stages → finalize ------------------------------------------

    def update(self, dt: Any, *, records: Any = None, model: bool = True) -> None:
        """One whole frame: :meth:`advance`'s control by ``dt``, then the player's ``end_frame``.

        The pose, the post-blend :attr:`stages`, then :meth:`finalize`'s matrices and palette
        (:meth:`engine.player.Player.end_frame`); ``records`` and ``model`` as
        :meth:`engine.player.Player.finalize` takes them.
        """
        self.player.begin_frame(dt)
        self.control()
        self.player.end_frame(records=records, model=model)

    def advance(self, dt: Any) -> None:
        """Advance every action by ``dt`` seconds (scalar or ``(C,)``, ``>= 0``) and blend the local pose.

        The player's frame begins (:meth:`~engine.player.Player.begin_frame`), the actions write
        their weights and times (:meth:`control`), the player poses (:meth:`~engine.player.Player.pose`).
        The model matrices and the palette are *not* computed: a post-blend stage may edit the
        pose first, and :meth:`finalize` (or :meth:`update_model`) composes them once.
        """
        self.player.begin_frame(dt)
        self.control()
        self.player.pose()

    def control(self) -> None:
        """The actions' part of the player's current frame: effective weights and clip times, no pose.

        Order: fades and warps (evaluated at the frame's end clock), effective weights, times
        (sync groups, loop modes); the player then wraps the times, adds the exact root travel
        and fires the markers (:meth:`~engine.player.Player.advance_layers`).
        """
        if not self._actions:
            return
        player, table = self.player, self.table
        with trusted():
            previous, now, step = player.frame_start, player.clock, player.frame_step
            playing = self._advance_fades(previous, now, step)
            running = table.enabled & ~table.paused
            travel = self._advance_warps(previous, now, playing)
            speed = table.speed * running  # the speed at the end of the frame: its direction
            start = player.raw_times[table.rows]
            end = start + travel
            for group in self._groups:  # loop over sync groups
                group.advance(travel, table.effective, start, end)
            durations = np.array([a.duration for a in self._actions])[:, None]
            once = np.array([a.loop == Loop.ONCE for a in self._actions])[:, None]
            clamped = np.where(once, np.clip(end, 0.0, durations), end)
            at_end = np.where(speed > 0.0, clamped >= durations, clamped <= 0.0)
            table.finished = np.where(once & (speed != 0.0), at_end, table.finished)  # speed 0: unchanged
            player.set_weights(table.rows, table.effective)
            player.advance_layers(table.rows, end, running)
            for group in self._groups:
                group.lock()

    def update_model(self) -> MatrixBuffer:
        """The player's :meth:`~engine.player.Player.update_model`: model matrices up to date, once."""
        return self.player.update_model()

    def finalize(self) -> MatrixBuffer:
        """The player's :meth:`~engine.player.Player.finalize`: model matrices and palette, once."""
        return self.player.finalize()

    def pose_changed(self, joint: int | str) -> None:
        """Report an edit of :attr:`pose_buffer` at ``joint`` (:meth:`~engine.player.Player.pose_changed`)."""
        self.player.pose_changed(joint)

    def apply_corrections(self, joints: Any, corrections: Any = None) -> None:
        """Correct :attr:`pose_buffer` in place (:meth:`~engine.player.Player.apply_corrections`)."""
        self.player.apply_corrections(joints, corrections)

    def _advance_fades(self, previous: FloatArray, now: FloatArray, step: FloatArray) -> FloatArray:
        """Fade factors and effective weights at the frame's end clock; the seconds ``(A, C)`` each action plays.

        An action plays the whole step when enabled and unpaused; one whose fade-out ends during
        the step plays until that moment, then stops.
        """
        table = self.table
        playing = np.where(table.enabled & ~table.paused, step, 0.0)
        ramp = table.fading
        if ramp.active.any():
            progress = ramp.progress(now)
            table.fade = np.where(ramp.active, ramp.value(progress), table.fade)
            done = ramp.active & (progress >= 1.0)
            faded_out = done & (ramp.end_value <= 0.0)
            until_end = np.clip(ramp.start_time + ramp.duration - previous, 0.0, step)
            playing = np.where(faded_out, np.minimum(playing, until_end), playing)
            table.enabled &= ~faded_out  # a finished fade-out stops the action
            table.fade = np.where(faded_out, 1.0, table.fade)
            ramp.active &= ~done
        table.effective = np.where(table.enabled, table.weight * table.fade, 0.0)
        return playing

    def _advance_warps(self, previous: FloatArray, now: FloatArray, playing: FloatArray) -> FloatArray:
        """Speeds at the frame's end clock; the clip seconds ``(A, C)`` each action moves while it plays.

        A warp ramps the speed linearly in time, so the distance is the exact integral of the
        ramp over the seconds played, not the end speed times ``dt``: the same at any frame rate.
        """
        table = self.table
        ramp = table.warping
        if not ramp.active.any():
            return table.speed * playing
        travel = np.where(ramp.active, ramp.integral(previous, playing), table.speed * playing)
        progress = ramp.progress(now)
        table.speed = np.where(ramp.active, ramp.value(progress), table.speed)
        ramp.active &= progress < 1.0
        return travel
