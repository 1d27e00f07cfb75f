"""The :class:`Animator`: C characters sharing one skeleton, and the frame that poses them.

The playback state is one :class:`~engine.animator.table.ActionTable` (arrays ``(A, C)``), so the
frame has no Python loop over characters; it loops over actions, sync groups and marker names
only. The math is in :mod:`engine.anim` (see the package docstring for the order of a frame).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.anim.additive import add_into, additive_clip, restrict_clip
from engine.anim.blending import REST_THRESHOLD, blend
from engine.anim.clip import Clip
from engine.anim.events import Loop, clip_time, wrap_raw
from engine.anim.ik import IKResult, apply_corrections
from engine.anim.layout import POSE_WIDTHS, MatrixBuffer, PoseBuffer, Workspace
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.rootmotion import UP, Planar, parent_up, remove_planar
from engine.anim.sampling import compile_clip, sample
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skinning_palette
from engine.animator.action import Action
from engine.animator.markers import fire_markers
from engine.animator.root_motion import RootMotion, RootTrack
from engine.animator.sync import BlendSpace1D, SyncGroup
from engine.animator.table import ActionTable
from engine.backend import BACKENDS, ClipBank, FrameState, active_backend, default_threads
from engine.backend.buffers import BufferFrame
from engine.backend.select import forced
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, trusted

#: Fewest characters for which an Animator picks the fused kernels by itself (``backend=None``
#: with numba available and ``OSSA_BACKEND`` unset); ``OSSA_BACKEND=numba`` fuses at any count.
FUSED_MIN_CHARACTERS = 16


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
        ``"numba"``: sample + blend and local→model + palette run on the fused compiled kernels
        of :mod:`engine.backend` (:class:`~engine.backend.buffers.BufferFrame`); ``"numpy"``:
        the batched numpy jobs of :mod:`engine.anim`. ``None`` (default): ``OSSA_BACKEND``
        decides when it is set; otherwise numba when it is installed and ``num_characters >=``
        :data:`FUSED_MIN_CHARACTERS`, else numpy. Both give the same results to rounding
        (1e-12). Fades, warps, sync groups, loop modes, markers, additive layers and IK stages
        run the same code on both; with root motion the kernels blend every joint and numpy
        makes the root joint again (in place per layer, then blended), as the numpy path does.
        The fused calls run on one thread unless ``OSSA_THREADS`` is set.

    Attributes
    ----------
    clock
        Each character's animator time ``(C,)``, seconds (fades and warps run on it).
    pose_buffer, model_buffer, palette_buffer
        The frame's results in the batch-innermost layout of :mod:`engine.anim.layout`, written
        in place by every update (no allocation per frame): the local pose
        (:class:`~engine.anim.layout.PoseBuffer`), the model matrices and the skinning palette
        (:class:`~engine.anim.layout.MatrixBuffer`). Jobs take them as inputs and as ``out=``.
    root_motion
        :class:`RootMotion` of the last update (zeros without a root-motion joint).
    backend
        ``"numba"`` (the fused kernels) or ``"numpy"``: see the parameter.
    """

    def __init__(
        self,
        skeleton: Skeleton,
        num_characters: int = 1,
        *,
        root_motion: str | int | None = None,
        rest_threshold: float = REST_THRESHOLD,
        backend: str | None = None,
    ) -> None:
        if backend is not None and backend not in BACKENDS:
            raise InvalidInputError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
        if int(num_characters) < 1:
            raise InvalidInputError(f"num_characters must be at least 1, got {num_characters}")
        if not rest_threshold > 0.0:
            raise InvalidInputError(f"rest_threshold must be positive, got {rest_threshold}")
        self.skeleton = skeleton
        self.num_characters = int(num_characters)
        self.rest_threshold = float(rest_threshold)
        self.root_joint = None if root_motion is None else self._joint_index(root_motion)
        self._root_up = UP if self.root_joint is None else tuple(parent_up(skeleton, self.root_joint))
        self.clock = np.zeros(self.num_characters)
        self._table = ActionTable.empty(self.num_characters)
        self._actions: list[Action] = []
        self._by_clip: dict[tuple[Clip, bool], Action] = {}
        self._groups: list[SyncGroup] = []
        self._all = np.arange(self.num_characters)
        self._rest = skeleton.rest_pose
        self._workspace = Workspace()
        self._layers: PoseBuffer | None = None  # one sampled pose per action, made when first needed
        count, joints = self.num_characters, skeleton.num_joints
        self.pose_buffer = PoseBuffer.empty(count, joints).assign(self._rest)
        self.model_buffer = model_from_pose(skeleton, self.pose_buffer, out=MatrixBuffer.empty(count, joints))
        self.palette_buffer = skinning_palette(skeleton, self.model_buffer, out=MatrixBuffer.empty(count, joints))
        self.root_motion = RootMotion.still(self.num_characters)
        self.stages: list[Callable[[Animator], None]] = []
        """Post-blend stages run by :meth:`update` between :meth:`advance` and :meth:`finalize`, in order.

        Each is called with the animator; it reads :attr:`model_buffer` (after
        :meth:`update_model`) and edits :attr:`pose_buffer`, reporting what it changed with
        :meth:`pose_changed` or :meth:`apply_corrections`: IK, procedural look-at, user code.
        """
        self._stale: set[int] | None = set()  # joints whose subtrees need model matrices; None: all
        self._palette_stale = False
        self.backend = backend or _default_backend(self.num_characters)
        self._requested = backend  # None: the active backend (resolve's fallback applies)
        self._blended = np.zeros((0, 1))  # (A, 1): 1 for the blended actions, 0 for the additive ones
        self._has_blended = False  # whether any action blends (the fused kernels need one clip)
        self._frame: BufferFrame | None = None  # the fused kernels' state, made when first needed

    @property
    def local_pose(self) -> Pose:
        """The local pose ``(C, J)`` of the frame so far: a read-only C-ordered copy of :attr:`pose_buffer`."""
        return _read_only(self.pose_buffer.to_pose())

    @property
    def model(self) -> FloatArray:
        """Model-space joint matrices ``(C, J, 4, 4)`` of the current local pose: a read-only C-ordered copy.

        Brings :attr:`model_buffer` up to date first (:meth:`update_model`).
        """
        return _frozen(self.update_model().to_array())

    @property
    def palette(self) -> FloatArray:
        """Skinning matrices ``(C, J, 4, 4)`` (``model @ inverse_bind``): a read-only C-ordered copy.

        Brings :attr:`palette_buffer` up to date first (:meth:`finalize`).
        """
        return _frozen(self.finalize().to_array())

    def __repr__(self) -> str:
        return f"Animator({self.num_characters} characters, {len(self._actions)} actions, {self.skeleton!r})"

    @property
    def actions(self) -> tuple[Action, ...]:
        """Every action made so far, in creation (= additive layering) order."""
        return tuple(self._actions)

    def _joint_index(self, joint: str | int) -> int:
        if isinstance(joint, str):
            return self.skeleton.index(joint)
        if not 0 <= int(joint) < self.skeleton.num_joints:
            raise SkeletonMismatchError(f"joint index {joint} is out of range for {self.skeleton.num_joints} joints")
        return int(joint)

    def _select(self, characters: Any) -> IntArray:
        if characters is None:
            return self._all
        try:
            return np.atleast_1d(self._all[characters])
        except (IndexError, TypeError) as exc:
            raise InvalidInputError(
                f"characters must index {self.num_characters} characters (int, slice, indices or mask), "
                f"got {characters!r}: {exc}"
            ) from None

    def _sync_of(self, action: Action) -> SyncGroup | None:
        return next((g for g in self._groups if action in g.actions), None)

    # --- building ---------------------------------------------------------------------------

    def action(
        self,
        clip: Clip,
        *,
        additive: bool = False,
        reference: Pose | None = None,
        mask: Any = None,
    ) -> Action:
        """The action playing ``clip`` (made on first call, the same object afterwards).

        Parameters
        ----------
        clip
            A clip of this animator's skeleton.
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
        joints = self.skeleton.num_joints
        if clip.num_targets != joints:
            raise SkeletonMismatchError(
                f"clip {clip.name!r} targets {clip.num_targets} joints but the animator's skeleton has {joints}"
            )
        weights = self._check_mask(mask)
        played = additive_clip(clip, self.skeleton, reference) if additive else clip
        self._frame = None  # the fused kernels' state is made again with one more layer
        action = Action(self, len(self._actions), played, additive=additive)
        action.set_mask(weights)
        if self.root_joint is not None and not additive:
            action._root = RootTrack.of(played, self._rest, self.root_joint, self._root_up)
        self._table.grow(action.loop, action.duration)
        self._actions.append(action)
        self._by_clip[key] = action
        self._layers = None  # re-made for the new action count
        self._has_blended |= not additive
        return action

    def _check_mask(self, mask: Any) -> FloatArray | None:
        if mask is None:
            return None
        joints = self.skeleton.num_joints
        weights = as_array(mask, "mask")
        if weights.shape != (joints,):
            raise SkeletonMismatchError(f"mask must have shape ({joints},) for this skeleton, got {weights.shape}")
        if np.any(weights < 0.0):
            raise InvalidInputError(f"mask must be non-negative, got {float(weights.min())}")
        return weights

    def _compact_additive(self, action: Action) -> None:
        """Sample an additive clip only on the joints it moves: elsewhere its delta is the identity."""
        moved = {c.target for c in action.clip.channels}
        if action.mask is not None:
            moved &= set(np.nonzero(action.mask)[0].tolist())
        joints = np.array(sorted(moved), dtype=np.intp)
        action._joints = joints
        action._delta_rest = Pose.identity(joints.size)
        action._compiled = compile_clip(restrict_clip(action.clip, joints))

    def sync_group(self, *actions: Action) -> SyncGroup:
        """Phase-lock ``actions`` (:class:`SyncGroup`); their phase starts at the first one's."""
        group = SyncGroup(self, actions)
        self._groups.append(group)
        return group

    def blend_space_1d(
        self, points: Sequence[tuple[float, Action]], *, sync: bool | Sequence[Action] = True
    ) -> BlendSpace1D:
        """A :class:`BlendSpace1D` over ``(position, action)`` points, strictly increasing."""
        return BlendSpace1D(self, points, sync)

    # --- the frame: advance → stages → finalize ------------------------------------------------

    def update(self, dt: Any) -> None:
        """One whole frame: :meth:`advance` by ``dt``, run the :attr:`stages`, then :meth:`finalize`."""
        self.advance(dt)
        for stage in self.stages:  # loop over post-blend stages
            stage(self)
        self.finalize()

    def advance(self, dt: Any, base: Pose | None = None) -> None:
        """Advance every action by ``dt`` seconds (scalar or ``(C,)``, ``>= 0``) and blend the local pose.

        ``base``: a local pose ``(J,)`` or ``(C, J)`` that fills in, instead of the rest pose, where
        the actions' weights sum below :attr:`rest_threshold` — e.g. an animation graph's output
        under a masked one-shot layer; ``None``: the rest pose.

        Order: clocks, fades and warps (evaluated at the new clock), effective weights, times
        (sync groups, loop modes), sampling of weighted actions, blend, additive layers into
        :attr:`pose_buffer`, :attr:`root_motion`, then marker callbacks. The model matrices and
        the palette are *not* computed: a post-blend stage may edit the pose first, and
        :meth:`finalize` (or :meth:`update_model`) composes them once.
        """
        step = np.broadcast_to(as_array(dt, "dt"), (self.num_characters,))
        if np.any(step < 0.0):
            raise InvalidInputError(f"dt must be >= 0 seconds (play backwards with a negative speed), got {dt}")
        with trusted():
            table = self._table
            previous = self.clock
            self.clock = previous + step
            playing = self._advance_fades(previous, step)
            running = table.enabled & ~table.paused
            travel = self._advance_warps(previous, playing)
            speed = table.speed * running  # the speed at the end of the frame: its direction
            start = table.raw.copy()
            end = start + travel
            for group in self._groups:  # loop over sync groups
                group.advance(travel, table.effective, table.raw, end)
            loops = table.loops[:, None]
            durations = table.durations[:, None]
            once = loops == Loop.ONCE
            end = np.where(once, np.clip(end, 0.0, durations), end)
            at_end = np.where(speed > 0.0, end >= durations, end <= 0.0)
            table.finished = np.where(once & (speed != 0.0), at_end, table.finished)  # speed 0: unchanged
            table.raw, wraps = wrap_raw(end, durations, loops)
            for group in self._groups:
                group.lock(table.raw)
            times = clip_time(table.raw, durations, loops)
            self._pose(times, start, wraps, self._rest if base is None else base)
            self._stale, self._palette_stale = None, True
            fire_markers(self._actions, table, start, end, running)
            table.fresh &= ~running

    def pose_changed(self, joint: int | str) -> None:
        """Report an edit of :attr:`pose_buffer` at ``joint`` (and below): its subtree's matrices are recomputed.

        Call it after writing a joint's local transform in a post-blend stage; the next
        :meth:`update_model` or :meth:`finalize` recomputes that subtree only
        (``model_from_pose(..., from_joint=joint)``).
        """
        index = self._joint_index(joint)
        if self._stale is not None:
            self._stale.add(index)
        self._palette_stale = True

    def apply_corrections(self, joints: Any, corrections: Any = None) -> None:
        """Correct :attr:`pose_buffer`'s local rotations in place: an IK result, or ``joints`` and ``corrections``.

        :func:`engine.anim.ik.apply_corrections` with ``out=`` the animator's own pose, and the
        corrected joints' subtrees marked for recomputation (:meth:`pose_changed`).
        """
        apply_corrections(self.pose_buffer, joints, corrections, out=self.pose_buffer)
        index = joints.joints if isinstance(joints, IKResult) else np.asarray(joints)
        for joint in np.asarray(index).reshape(-1):  # loop over the corrected joints (a chain: a few)
            self.pose_changed(int(joint))

    def update_model(self) -> MatrixBuffer:
        """Bring :attr:`model_buffer` up to date with :attr:`pose_buffer` and return it.

        After :meth:`advance` every joint is composed (one ``model_from_pose`` over the whole
        skeleton); after edits reported with :meth:`pose_changed` only their subtrees are (one
        partial recomputation each, root-most first). Nothing is done when it is up to date.
        """
        if self.backend == "numba" and self._stale is None and self._has_blended:
            self._buffer_frame().finalize(backend=self._requested)  # every joint, and the palette with them
            self._palette_stale = False
        elif self._stale is None:
            model_from_pose(self.skeleton, self.pose_buffer, out=self.model_buffer, workspace=self._workspace)
        elif self._stale:
            for joint in _subtree_roots(self.skeleton.parents, self._stale):
                model_from_pose(
                    self.skeleton, self.pose_buffer, out=self.model_buffer, from_joint=joint, workspace=self._workspace
                )
        self._stale = set()
        return self.model_buffer

    def finalize(self) -> MatrixBuffer:
        """End the frame: model matrices (:meth:`update_model`) and the skinning palette, once; return the palette."""
        self.update_model()
        if self._palette_stale:
            skinning_palette(self.skeleton, self.model_buffer, out=self.palette_buffer, workspace=self._workspace)
            self._palette_stale = False
        return self.palette_buffer

    def _advance_fades(self, previous: FloatArray, step: FloatArray) -> FloatArray:
        """Fade factors and effective weights at the new clock; the seconds ``(A, C)`` each action plays.

        An action plays the whole step when enabled and unpaused; one whose fade-out ends during
        the step plays until that moment, then stops.
        """
        table = self._table
        playing = np.where(table.enabled & ~table.paused, step, 0.0)
        ramp = table.fading
        if ramp.active.any():
            progress = ramp.progress(self.clock)
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

    def _advance_warps(self, previous: FloatArray, playing: FloatArray) -> FloatArray:
        """Speeds at the new clock; the clip seconds ``(A, C)`` each action moves while it plays.

        A warp ramps the speed linearly in time, so the distance is the exact integral of the
        ramp over the seconds played, not the end speed times ``dt``: the same at any frame rate.
        """
        table = self._table
        ramp = table.warping
        if not ramp.active.any():
            return table.speed * playing
        travel = np.where(ramp.active, ramp.integral(previous, playing), table.speed * playing)
        progress = ramp.progress(self.clock)
        table.speed = np.where(ramp.active, ramp.value(progress), table.speed)
        ramp.active &= progress < 1.0
        return travel

    def _layer_buffer(self) -> PoseBuffer:
        if self._layers is None:
            self._layers = PoseBuffer.empty(self.num_characters, self.skeleton.num_joints, layers=len(self._actions))
        return self._layers

    def _pose(self, times: FloatArray, start: FloatArray, wraps: FloatArray, base: Pose) -> None:
        effective = self._table.effective
        active = [a for a in self._actions if not a.additive and effective[a._row].any()]
        if not active:
            self.pose_buffer.assign(base)
            self.root_motion = RootMotion.still(self.num_characters)
        elif self.backend == "numba" and base is self._rest:  # the kernels fill in the rest pose only
            self._buffer_frame().sample_blend(
                times, effective * self._blended, threshold=self.rest_threshold, backend=self._requested
            )
            if self.root_joint is None:
                self.root_motion = RootMotion.still(self.num_characters)
            else:
                self._root_in_place(active, times, start, wraps)
        else:
            self._sample_blend(active, times, start, wraps, base)
        self._add_layers(times)

    def _sample_blend(
        self, active: list[Action], times: FloatArray, start: FloatArray, wraps: FloatArray, base: Pose
    ) -> None:
        """The numpy jobs: sample each weighted action (its root in place), blend over ``base``; :attr:`root_motion`."""
        layers, ws, local = self._layer_buffer(), self._workspace, self.pose_buffer
        effective = self._table.effective
        root = self.root_joint
        motion = Planar(np.zeros(self.num_characters), np.zeros(self.num_characters, dtype=np.complex128))
        root_weight = np.zeros(self.num_characters)
        for k, action in enumerate(active):  # loop over weighted layers
            row = action._row
            slot = sample(action._compiled, self._rest, times[row], out=layers.layer(k), workspace=ws)
            if root is not None and action._root is not None:
                delta, w = self._in_place(action, slot, root, start, times, wraps)
                motion = Planar(motion.yaw + w * delta.yaw, motion.w + w * delta.w)
                root_weight += w
        rows = [a._row for a in active]
        masks = None
        if any(a.mask is not None for a in active):
            masks = np.stack([np.ones(self.skeleton.num_joints) if a.mask is None else a.mask for a in active])
        stacked, threshold = layers.first_layers(len(active)), self.rest_threshold
        blend(base, stacked, effective[rows], masks, threshold=threshold, out=local, workspace=ws)
        norm = np.maximum(root_weight, self.rest_threshold)
        travel = Planar(motion.yaw / norm, motion.w / norm)
        self.root_motion = RootMotion(travel.translation_in(self._root_up), travel.yaw)

    def _root_in_place(self, active: list[Action], times: FloatArray, start: FloatArray, wraps: FloatArray) -> None:
        """After the fused blend: the root joint made again as :meth:`_sample_blend` makes it; :attr:`root_motion`.

        The kernels blend the root as sampled; the numpy path blends it in place (planar motion
        removed per layer). Blending is per joint, so only the root differs: each weighted
        action's root track (the root alone) is sampled, made in place and blended here, and
        replaces the kernels' root.
        """
        root, ws, count = self.root_joint, self._workspace, self.num_characters
        assert root is not None
        effective = self._table.effective
        motion = Planar(np.zeros(count), np.zeros(count, dtype=np.complex128))
        root_weight = np.zeros(count)
        masks = None
        if any(a.mask is not None for a in active):
            masks = np.array([[1.0 if a.mask is None else a.mask[root]] for a in active])
        with ws.scope():
            t, r, sc = (ws.empty((len(active), width, 1, count)) for width in POSE_WIDTHS)
            stacked = PoseBuffer(t, r, sc, (count,))
            for k, action in enumerate(active):  # loop over weighted layers
                track = action._root
                assert track is not None
                slot = sample(track.compiled, track.rest, times[action._row], out=stacked.layer(k), workspace=ws)
                delta, w = self._in_place(action, slot, 0, start, times, wraps)
                motion = Planar(motion.yaw + w * delta.yaw, motion.w + w * delta.w)
                root_weight += w
            rows, rest = [a._row for a in active], self._rest.joints([root])
            blended = PoseBuffer.scratch(ws, (count,), 1)
            blend(rest, stacked, effective[rows], masks, threshold=self.rest_threshold, out=blended, workspace=ws)
            for mine, theirs in zip(self.pose_buffer.arrays(), blended.arrays(), strict=True):
                mine[:, root] = theirs[:, 0]
        norm = np.maximum(root_weight, self.rest_threshold)
        travel = Planar(motion.yaw / norm, motion.w / norm)
        self.root_motion = RootMotion(travel.translation_in(self._root_up), travel.yaw)

    def _in_place(
        self, action: Action, slot: PoseBuffer, at: int, start: FloatArray, times: FloatArray, wraps: FloatArray
    ) -> tuple[Planar, FloatArray]:
        """Remove the planar motion of joint ``at`` of ``action``'s sampled ``slot`` (the root); its travel and weight.

        Returns the root's planar delta of this frame ``(C,)`` and the action's weight on the root.
        """
        assert action._root is not None
        assert self.root_joint is not None
        row = action._row
        delta = action._root.delta(start[row], times[row], wraps[row], action.duration, action.loop)
        w = self._table.effective[row] * (1.0 if action.mask is None else action.mask[self.root_joint])
        in_place = remove_planar(slot.translations[:, at].T, slot.rotations[:, at].T, self._root_up)
        slot.translations[:, at], slot.rotations[:, at] = in_place[0].T, in_place[1].T
        return delta, w

    def _add_layers(self, times: FloatArray) -> None:
        """Add the weighted additive actions into :attr:`pose_buffer`, in creation order (numpy jobs, both backends)."""
        ws, local, effective = self._workspace, self.pose_buffer, self._table.effective
        for action in self._actions:  # additive layers, in creation order
            row = action._row
            if action.additive and action._joints is not None and action._joints.size and effective[row].any():
                joints, identity = action._joints, action._delta_rest
                assert identity is not None
                with ws.scope():  # the delta, sampled on the joints it moves, added in the buffer layout
                    delta_pose = PoseBuffer.scratch(ws, (self.num_characters,), joints.size)
                    sample(action._compiled, identity, times[row], out=delta_pose, workspace=ws)
                    weight = effective[row] * (1.0 if action.mask is None else action.mask[joints, None])
                    t, r, s = (a[:, joints] for a in local.arrays())
                    moved = add_into((t, r, s), delta_pose.arrays(), np.broadcast_to(weight, r.shape[1:]), axis=0)
                    for array, values in zip(local.arrays(), moved, strict=True):
                        array[:, joints] = values

    def _buffer_frame(self) -> BufferFrame:
        """The fused kernels' state over :attr:`pose_buffer`, :attr:`model_buffer`, :attr:`palette_buffer`.

        One layer per action, playing that action's clip; additive actions' layers keep weight 0
        (their deltas are added afterwards, as on the numpy path). Made again when actions are added.
        """
        if self._frame is None:
            blended = [a for a in self._actions if not a.additive]
            bank = ClipBank(self.skeleton, [a._compiled for a in blended])
            state = FrameState(bank, layers=len(self._actions), characters=self.num_characters, threads=_threads())
            for k, action in enumerate(blended):
                state.play(action._row, k)
            for action in self._actions:
                state.set_mask(action._row, action.mask)
            self._blended = np.array([[0.0] if a.additive else [1.0] for a in self._actions])
            self._frame = BufferFrame(state, self.pose_buffer, self.model_buffer, self.palette_buffer)
        return self._frame

    def _mask_changed(self, action: Action) -> None:
        """Keep the fused kernels' masks in step with ``action``'s."""
        if self._frame is not None:
            self._frame.state.set_mask(action._row, action.mask)


def _threads() -> int:
    """Threads of the Animator's fused calls: ``OSSA_THREADS`` when set, else 1.

    Not every CPU by default, unlike a crowd's :class:`~engine.backend.FrameState`: the Animator's
    two calls a frame sit between numpy work, and with the other cores busy (a game's render and
    audio threads, other processes) each parallel call waits for a descheduled worker; measured
    on a shared 2-core machine, 2 threads made a 100-character update 10× slower than 1.
    """
    return default_threads() if os.environ.get("OSSA_THREADS") else 1


def _default_backend(count: int) -> str:
    """The backend for ``backend=None``: ``OSSA_BACKEND``'s, else numba from :data:`FUSED_MIN_CHARACTERS` up."""
    name = active_backend()
    if name == "numba" and not forced() and count < FUSED_MIN_CHARACTERS:
        return "numpy"
    return name


def _subtree_roots(parents: IntArray, joints: set[int]) -> list[int]:
    """The joints of ``joints`` with no ancestor in the set, ascending (their subtrees cover the rest)."""
    roots = []
    for joint in sorted(joints):  # a handful of edited joints
        ancestor = int(parents[joint])
        while ancestor >= 0 and ancestor not in joints:
            ancestor = int(parents[ancestor])
        if ancestor < 0:
            roots.append(joint)
    return roots


def _frozen(array: FloatArray) -> FloatArray:
    array.flags.writeable = False
    return array


def _read_only(pose: Pose) -> Pose:
    for array in pose.arrays():
        array.flags.writeable = False
    return pose
