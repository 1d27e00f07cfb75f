"""The :class:`Player`: every character's layers, and the one frame that poses them (see :mod:`engine.player`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.anim.blending import REST_THRESHOLD
from engine.anim.clip import Clip
from engine.anim.events import Loop, clip_time, wrap_raw
from engine.anim.ik import IKResult, apply_corrections
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skinning_palette
from engine.backend import BACKENDS, BufferFrame, ClipBank, FrameState, active_backend, default_threads
from engine.backend.select import forced
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, trusted
from engine.player import evaluate
from engine.player.capture import VelocityTables, capture
from engine.player.layers import Layer, LayerTable, check_mask
from engine.player.markers import MarkerCallback, Markers
from engine.player.morph import MorphTargets
from engine.player.root import RootMotion, RootSum
from engine.player.transitions import Capture, TransitionStage

#: Fewest characters for which a player picks the compiled kernels by itself (``backend=None``
#: with numba available and ``OSSA_BACKEND`` unset); ``OSSA_BACKEND=numba`` compiles at any count.
FUSED_MIN_CHARACTERS = 16


class Player:
    """Plays layers of clips on ``num_characters`` characters sharing ``skeleton`` (see :mod:`engine.player`).

    Parameters
    ----------
    skeleton
        The characters' skeleton; every clip must target its ``J`` joints.
    num_characters
        ``C``.
    root_motion
        Name or index of the joint whose horizontal translation and yaw become :attr:`root_motion`
        (every blended layer plays it in place), or ``None``.
    rest_threshold
        Total weight per joint below which the rest pose fills in (:func:`~engine.anim.blending.blend`).
    backend
        ``"numba"`` (the compiled kernels of :mod:`engine.backend`), ``"numpy"`` (the batched
        jobs of :mod:`engine.anim`) or ``None``: ``OSSA_BACKEND`` when set, else numba when it is
        installed and ``num_characters >=`` :data:`FUSED_MIN_CHARACTERS`. Both agree to 1e-12.
        The compiled calls run on one thread unless ``OSSA_THREADS`` is set (or ``threads``).
    morph
        The morph targets whose weights the layers' clips animate (:class:`MorphTargets`), or ``None``.
    threads
        Threads of the compiled calls (default: ``OSSA_THREADS``, else 1).

    Attributes
    ----------
    clock
        ``(C,)`` each character's time, seconds (advanced by :meth:`begin_frame`; do not write).
    pose_buffer, model_buffer, palette_buffer
        The frame's local pose (:class:`~engine.anim.layout.PoseBuffer`), model matrices and
        skinning palette (:class:`~engine.anim.layout.MatrixBuffer`), written in place.
    root_motion
        :class:`RootMotion` of the last frame (zeros without a root-motion joint).
    stages
        Post-blend stages (IK, look-at, user code) run by :meth:`run_stages`, in order: each is
        called with the player, reads :meth:`update_model` and edits :attr:`pose_buffer`,
        reporting what it changed (:meth:`pose_changed`, :meth:`apply_corrections`).
    transitions
        The :class:`~engine.player.transitions.TransitionStage` (read its ``kind`` ``(C,)``).
    backend
        ``"numba"`` or ``"numpy"``: see the parameter.
    """

    def __init__(
        self,
        skeleton: Skeleton,
        num_characters: int = 1,
        *,
        root_motion: str | int | None = None,
        rest_threshold: float = REST_THRESHOLD,
        backend: str | None = None,
        morph: MorphTargets | None = None,
        threads: int | None = None,
    ) -> None:
        if not isinstance(skeleton, Skeleton):
            raise InvalidInputError(f"skeleton must be a Skeleton, got {type(skeleton).__name__}")
        if backend is not None and backend not in BACKENDS:
            raise InvalidInputError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
        if isinstance(num_characters, bool) or int(num_characters) < 1:
            raise InvalidInputError(f"num_characters must be at least 1, got {num_characters}")
        if not (rest_threshold > 0.0 and np.isfinite(rest_threshold)):
            raise InvalidInputError(f"rest_threshold must be positive and finite, got {rest_threshold}")
        count, joints = int(num_characters), skeleton.num_joints
        self.skeleton = skeleton
        self.num_characters = count
        self.rest_threshold = float(rest_threshold)
        self.root_joint = None if root_motion is None else joint_index(skeleton, root_motion, "root_motion")
        self.backend = backend or _default_backend(count)
        self._requested = backend  # None: the active backend (its fallback applies)
        self._threads = threads
        self.morph = morph
        self.clock = np.zeros(count)
        self._frame_start = np.zeros(count)
        self._step = np.zeros(count)
        self._table = LayerTable(count, joints)
        self._markers = Markers()
        self._root_sum = RootSum(count)
        self._rates = np.zeros((0, count))  # each layer's clip seconds per second over the last frame
        self.transitions = TransitionStage(count, joints)
        self._velocity_tables = VelocityTables()
        self._workspace = Workspace()
        self.pose_buffer = PoseBuffer.empty(count, joints).assign(skeleton.rest_pose)
        self.model_buffer = model_from_pose(skeleton, self.pose_buffer, out=MatrixBuffer.empty(count, joints))
        self.palette_buffer = skinning_palette(skeleton, self.model_buffer, out=MatrixBuffer.empty(count, joints))
        self._morph = np.tile(morph.defaults, (count, 1)) if morph is not None else np.zeros((count, 0))
        self.root_motion = RootMotion.still(count)
        self.stages: list[Callable[[Player], None]] = []
        self._stale: set[int] | None = set()  # joints whose subtrees need model matrices; None: all
        self._palette_stale = False
        self._frame: tuple[int, BufferFrame, FloatArray] | None = (
            None  # (layout version, kernels' state, 0/1 per layer)
        )
        self._characters: IntArray | None = None  # the characters the last pose() evaluated (None: all)

    def __repr__(self) -> str:
        return f"Player({self.num_characters} characters, {self.num_layers} layers, {self.skeleton!r})"

    @property
    def threads(self) -> int:
        """Threads of the compiled calls: ``threads`` when given, else ``OSSA_THREADS`` when set, else 1.

        Not every CPU by default, unlike a crowd's :class:`~engine.backend.FrameState`: the
        player's compiled calls sit between numpy work, and with the other cores busy (a game's
        render and audio threads, other processes) each parallel call waits for a descheduled
        worker (measured on a shared 2-core machine: 2 threads made a 100-character update 10×
        slower than 1). Read when the compiled state is made (when layers are added).
        """
        if self._threads is not None:
            return self._threads
        return default_threads() if os.environ.get("OSSA_THREADS") else 1

    # --- layers ---------------------------------------------------------------------------------

    @property
    def num_layers(self) -> int:
        """``L``, the layers added so far."""
        return self._table.count

    @property
    def num_overrides(self) -> int:
        """``G``, the overrides added so far."""
        return self._table.override_spans.shape[0]

    def layer(self, row: int) -> Layer:
        """The :class:`~engine.player.layers.Layer` in row ``row`` (what it plays; immutable)."""
        return self._table.layers[self._row(row)]

    def add_layer(
        self,
        clip: Clip,
        *,
        loop: Loop = Loop.REPEAT,
        mask: Any = None,
        additive: bool = False,
        reference: Pose | None = None,
    ) -> int:
        """A new layer playing ``clip`` (time 0, weight 0); returns its row.

        ``additive`` layers are added on top of the blend as a delta against ``reference``
        (``None``: the clip's first frame, :func:`~engine.anim.additive.additive_clip`), in row
        order. ``mask`` ``(J,)`` weights the layer per joint.
        """
        layer = Layer.make(
            self.skeleton, clip, loop=loop, mask=mask, additive=additive, reference=reference, root=self.root_joint
        )
        row = self._table.add(layer)
        self._rates = np.concatenate((self._rates, np.zeros((1, self.num_characters))))
        self.transitions.animate(self._animated())
        return row

    def add_override(self, covered: range, mask: Any) -> int:
        """An override (weight 0) of the layers ``covered`` by ``mask`` ``(J,)`` in ``[0, 1]``; returns its index.

        With weight ``W`` a covered layer weighs ``1 - W·M_j`` of itself at joint ``j``
        (:mod:`engine.backend.state`): the layers that override them carry ``W`` and ``M``.
        """
        if not isinstance(covered, range) or covered.step != 1 or not 0 <= covered.start <= covered.stop:
            raise InvalidInputError(f"covered must be a range of layers with step 1, got {covered!r}")
        if covered.stop > self.num_layers:
            raise InvalidInputError(f"covered must lie within the {self.num_layers} layers, got {covered!r}")
        values = check_mask(mask, self.skeleton.num_joints)
        if values is None or np.any(values > 1.0):
            raise InvalidInputError("an override's mask must be given, with values in [0, 1]")
        return self._table.add_override(covered, values)

    def set_mask(self, row: int, mask: Any) -> None:
        """Weight layer ``row`` per joint: ``(J,)`` non-negative, or ``None`` (every joint 1)."""
        layer = self.layer(row).with_mask(check_mask(mask, self.skeleton.num_joints))
        self._table.layers[row] = layer  # the same layout: the compiled state follows at once
        if self._frame is not None:
            self._frame[1].state.set_mask(row, layer.mask)

    def set_loop(self, row: int, loop: Loop) -> None:
        """Set layer ``row``'s loop mode; it continues from the same clip time."""
        layer = self.layer(row)
        self._table.raw[row] = clip_time(self._table.raw[row], layer.duration, layer.loop)
        self._table.layers[row] = Layer(**{**vars(layer), "loop": Loop(loop)})

    # --- per-frame inputs -----------------------------------------------------------------------

    @property
    def weights(self) -> FloatArray:
        """``(L, C)`` each layer's weight per character (read-only view; :meth:`set_weights`)."""
        return _view(self._table.weights)

    @property
    def override_weights(self) -> FloatArray:
        """``(G, C)`` each override's weight per character (read-only view; :meth:`set_override_weights`)."""
        return _view(self._table.override_weights)

    @property
    def raw_times(self) -> FloatArray:
        """``(L, C)`` raw times (:mod:`engine.anim.events`; read-only view)."""
        return _view(self._table.raw)

    @property
    def times(self) -> FloatArray:
        """``(L, C)`` clip times: the raw times mapped by each layer's loop mode (a copy)."""
        table = self._table
        durations = np.array([layer.duration for layer in table.layers])[:, None]
        loops = np.array([int(layer.loop) for layer in table.layers])[:, None]
        return clip_time(table.raw, durations, loops) if table.count else np.zeros((0, self.num_characters))

    @property
    def rates(self) -> FloatArray:
        """``(L, C)`` each layer's clip seconds per second over the last frame (a copy)."""
        return self._rates.copy()

    def set_weights(self, rows: Any, values: Any, characters: Any = None) -> None:
        """Weights of layers ``rows`` (an index, slice or index array): ``values`` broadcast to ``(n, K)``, ``>= 0``."""
        self._set(self._table.weights, rows, values, characters, "weights", upper=np.inf)

    def set_override_weights(self, rows: Any, values: Any, characters: Any = None) -> None:
        """Weights of overrides ``rows``: ``values`` in ``[0, 1]`` broadcast to ``(n, K)``."""
        self._set(self._table.override_weights, rows, values, characters, "override weights", upper=1.0)

    def set_time(self, rows: Any, raw: Any, characters: Any = None, *, fresh: bool = True) -> None:
        """Put layers ``rows`` at raw time ``raw`` (broadcast to ``(n, K)``): a jump, no travel.

        ``fresh``: a marker exactly at the new time fires on the next frame (after a start or a
        jump); ``False`` only re-locks a time the layer reached by itself (a sync phase).
        """
        index, pick = np.arange(self.num_layers)[rows], self.select(characters)
        values = np.broadcast_to(as_array(raw, "raw"), (np.size(index), pick.size) if np.ndim(index) else (pick.size,))
        where = np.ix_(np.atleast_1d(index), pick)
        self._table.raw[where] = values.reshape(np.size(index), pick.size)
        if fresh:
            self._table.fresh[where] = True

    def on_marker(self, row: int, name: str, callback: MarkerCallback) -> None:
        """Call ``callback(marker, time, characters, weights)`` per crossing of marker ``name`` of layer ``row``.

        Fires for characters where the layer ran and has weight, once per crossing (a frame
        spanning two loops calls it twice), during :meth:`advance_layers`.
        """
        self._markers.add(self._row(row), self.layer(row), name, callback)

    # --- the frame ------------------------------------------------------------------------------

    def begin_frame(self, dt: Any) -> None:
        """Start a frame of ``dt`` seconds (scalar or ``(C,)``, ``>= 0``): the clock moves, no travel yet."""
        step = np.broadcast_to(as_array(dt, "dt"), (self.num_characters,))
        if np.any(step < 0.0):
            raise InvalidInputError(f"dt must be >= 0 seconds (play backwards with a negative speed), got {dt}")
        self._frame_start = self.clock
        self._step = step.astype(np.float64)
        self.clock = self.clock + self._step
        self._root_sum.reset()

    @property
    def frame_start(self) -> FloatArray:
        """``(C,)`` the clock when the current frame began (a copy)."""
        return self._frame_start.copy()

    @property
    def frame_step(self) -> FloatArray:
        """``(C,)`` the current frame's ``dt``, seconds, exactly as given (a copy)."""
        return self._step.copy()

    def advance_layers(self, rows: Any, end: Any, running: Any) -> None:
        """Move layers ``rows`` to the unwrapped raw times ``end`` ``(n, C)`` this frame.

        Each layer's loop mode wraps (or clamps) the time; with a root-motion joint each layer's
        exact keyed travel from its time before to ``end`` counts with its current weight at the
        root (set the weights first); markers crossed fire where ``running`` ``(n, C)`` and the
        layer has weight. ``fresh`` flags are consumed where ``running``.
        """
        table = self._table
        index = np.atleast_1d(np.arange(self.num_layers)[rows])
        stop = np.broadcast_to(as_array(end, "end"), (index.size, self.num_characters))
        moving = np.broadcast_to(np.asarray(running, dtype=bool), stop.shape)
        layers = [table.layers[r] for r in index.tolist()]
        durations = np.array([layer.duration for layer in layers])[:, None]
        loops = np.array([int(layer.loop) for layer in layers])[:, None]
        start = table.raw[index]
        stop = np.where(loops == Loop.ONCE, np.clip(stop, 0.0, durations), stop)
        raw, wraps = wrap_raw(stop, durations, loops)
        table.raw[index] = raw
        self._rates[index] = np.divide(stop - start, self._step, out=self._rates[index], where=self._step > 0.0)
        if self.root_joint is not None:
            self._root_travel(index, layers, start, raw, wraps)
        self._markers.fire(
            index,
            table.layers,
            start,
            stop,
            moving & (table.weights[index] > 0.0),
            table.fresh[index],
            table.weights[index],
        )
        table.fresh[index] &= ~moving

    def _root_travel(
        self, index: IntArray, layers: list[Layer], start: FloatArray, raw: FloatArray, wraps: FloatArray
    ) -> None:
        """Add the layers' keyed deltas, weighted at the root, to the frame's travel."""
        assert self.root_joint is not None
        table = self._table
        at_root = table.joint_weights(index, table.weights[index], table.override_weights, [self.root_joint])[:, 0]
        for k, layer in enumerate(layers):  # loop over the moved layers
            if layer.root is None:
                continue
            who = np.flatnonzero(at_root[k] > 0.0)
            if not who.size:
                continue
            times = clip_time(raw[k, who], layer.duration, layer.loop)
            delta = layer.root.delta(start[k, who], times, wraps[k, who], layer.duration, layer.loop)
            self._root_sum.add(who, delta, at_root[k, who])

    def pose(self, characters: Any = None) -> PoseBuffer:
        """The frame's local pose into :attr:`pose_buffer`: sample, blend, additive layers, the transition stage.

        ``characters`` (an index array; ``None``: all) are evaluated, the others keep their last
        pose (animation LOD; every clock and time moves on regardless). Also :attr:`root_motion`
        and :attr:`morph_weights`. Model matrices and palette wait for :meth:`update_model` /
        :meth:`finalize`, after the post-blend stages.
        """
        chosen = None if characters is None else self.select(characters)
        table, ws, threshold = self._table, self._workspace, self.rest_threshold
        self.root_motion = self._root_motion()
        times = self.times
        blended = any(not layer.additive for layer in table.layers)
        with trusted():
            if self.backend == "numba" and blended:
                _, frame, factors = self._buffer_frame()
                frame.sample_blend(
                    times,
                    table.weights * factors,
                    override_weights=table.override_weights,
                    characters=chosen,
                    threshold=threshold,
                    backend=self._requested,
                )
                if self.root_joint is not None:
                    evaluate.root_in_place(
                        self.skeleton, table, times, chosen, self.root_joint, threshold, self.pose_buffer, ws
                    )
            else:
                evaluate.sample_blend(
                    self.skeleton, table, times, chosen, self.root_joint, threshold, self.pose_buffer, ws
                )
            evaluate.add_layers(table, times, chosen, self.pose_buffer, ws)
            stage = self.transitions
            stage.expire(self.clock)
            busy = stage.active()
            if chosen is not None:
                busy = np.intersect1d(busy, chosen, assume_unique=True)
            if busy.size:
                stage.apply(self.pose_buffer, self.clock, busy)
        if self.morph is not None and self.morph.size:
            rows = evaluate.weighted(table, None, additive=False)
            self.morph.mix([table.layers[r].clip for r in rows], times[rows], table.weights[rows], self._morph)
        self._stale, self._palette_stale, self._characters = None, True, chosen
        return self.pose_buffer

    def _root_motion(self) -> RootMotion:
        """The frame's travel: the layers' weighted deltas, plus the transition stage's velocity offsets."""
        if self.root_joint is None:
            return RootMotion.still(self.num_characters)
        motion = self._root_sum.motion(self.rest_threshold)
        busy = self.transitions.active()
        if busy.size:
            extra = self.transitions.travel(busy, self._frame_start[busy], self.clock[busy])
            motion.translation[busy, 0] += extra[:, 0]
            motion.translation[busy, 2] += extra[:, 1]
            motion.yaw[busy] += extra[:, 2]
        return motion

    def warm_up(self, records: np.ndarray | None = None) -> float:
        """Pose and finalize the current frame once more (no time passes); returns the seconds it took.

        The first compiled call of a process compiles the kernels for these buffers (tens of
        seconds, once: numba caches them on disk) or loads them (about a second): a program that
        times its frames calls this first. ``records`` as for :meth:`finalize`.
        """
        start = time.perf_counter()
        self.pose(self._characters)
        self.finalize(records)
        return time.perf_counter() - start

    def run_stages(self) -> None:
        """Run the :attr:`stages`, in order."""
        for stage in self.stages:  # loop over post-blend stages
            stage(self)

    def update(self, dt: Any) -> None:
        """A frame without controllers: :meth:`begin_frame`, :meth:`pose`, the stages, :meth:`finalize`."""
        self.begin_frame(dt)
        self.pose()
        self.run_stages()
        self.finalize()

    # --- after the blend: stages, model matrices, palette ----------------------------------------

    def pose_changed(self, joint: int | str) -> None:
        """Report an edit of :attr:`pose_buffer` at ``joint`` (and below): only its subtree is recomposed."""
        index = joint_index(self.skeleton, joint, "joint")
        if self._stale is not None:
            self._stale.add(index)
        self._palette_stale = True

    def apply_corrections(self, joints: Any, corrections: Any = None) -> None:
        """Correct :attr:`pose_buffer`'s rotations in place (an IK result, or ``joints`` and ``corrections``)."""
        apply_corrections(self.pose_buffer, joints, corrections, out=self.pose_buffer)
        index = joints.joints if isinstance(joints, IKResult) else np.asarray(joints)
        for joint in np.asarray(index).reshape(-1):  # loop over the corrected joints (a chain: a few)
            self.pose_changed(int(joint))

    def update_model(self) -> MatrixBuffer:
        """Bring :attr:`model_buffer` up to date with :attr:`pose_buffer` and return it.

        After :meth:`pose` every joint is composed (once); after edits reported with
        :meth:`pose_changed` only their subtrees are. Nothing is done when it is up to date.
        """
        if self._stale is None and self.backend == "numba" and self.num_layers:
            self._buffer_frame()[1].finalize(characters=self._characters, backend=self._requested)
            self._palette_stale = False
        elif self._stale is None:
            model_from_pose(self.skeleton, self.pose_buffer, out=self.model_buffer, workspace=self._workspace)
        elif self._stale:
            for joint in subtree_roots(self.skeleton.parents, self._stale):
                model_from_pose(
                    self.skeleton, self.pose_buffer, out=self.model_buffer, from_joint=joint, workspace=self._workspace
                )
        self._stale = set()
        return self.model_buffer

    def finalize(self, records: np.ndarray | None = None) -> MatrixBuffer:
        """End the frame: model matrices and the skinning palette, once; returns :attr:`palette_buffer`.

        With ``records`` (a writable ``(C, J, 4, 4)`` float32 or float64 array) the palette is
        also written there, each matrix column-major: what
        :meth:`engine.render.PaletteBuffer.upload` sends as it is (``packed=True``).
        """
        if records is not None and self._stale is None and self.backend == "numba" and self.num_layers:
            self._buffer_frame()[1].finalize(records=records, characters=self._characters, backend=self._requested)
            self._stale, self._palette_stale = set(), True  # the palette went to records only
            return self.palette_buffer
        self.update_model()
        if self._palette_stale:
            skinning_palette(self.skeleton, self.model_buffer, out=self.palette_buffer, workspace=self._workspace)
            self._palette_stale = False
        if records is not None:
            _check_records(records, self.pose_buffer.shape)
            np.copyto(records, self.palette_buffer.entries.transpose(3, 2, 1, 0), casting="same_kind")
        return self.palette_buffer

    # --- results ----------------------------------------------------------------------------------

    @property
    def local_pose(self) -> Pose:
        """The local pose ``(C, J)`` of the frame so far: a read-only C-ordered copy of :attr:`pose_buffer`."""
        pose = self.pose_buffer.to_pose()
        for array in pose.arrays():
            array.flags.writeable = False
        return pose

    @property
    def model(self) -> FloatArray:
        """Model-space matrices ``(C, J, 4, 4)``: a read-only copy (brings :attr:`model_buffer` up to date)."""
        return _frozen(self.update_model().to_array())

    @property
    def palette(self) -> FloatArray:
        """Skinning matrices ``(C, J, 4, 4)`` (``model @ inverse_bind``): a read-only copy (:meth:`finalize` first)."""
        return _frozen(self.finalize().to_array())

    @property
    def morph_weights(self) -> FloatArray:
        """``(C, W)`` the morph weights of the last :meth:`pose` in :attr:`morph`'s layout (read-only view)."""
        return _view(self._morph)

    # --- transitions -----------------------------------------------------------------------------

    def capture(
        self,
        characters: Any,
        times: Any = None,
        rates: Any = None,
        weights: Any = None,
        weight_rates: Any = None,
        *,
        covers: Any = None,
        at: Any = None,
        stage: bool = True,
        leaving: Any = False,
    ) -> Capture:
        """The output of ``characters`` ``(K,)`` and its velocity, for layers at clip ``times`` ``(L, K)``.

        Defaults: the layers as they are (:attr:`times`, :attr:`rates`, :attr:`weights`, weight
        rates 0, the overrides' weights ``covers`` ``(G, K)``), the transition stage at clock
        ``at`` ``(K,)`` (default :attr:`clock`) when ``stage``. A controller that switches
        mid-frame passes the times and weights of that instant. ``leaving`` (scalar or ``(L, K)``):
        where true, a layer's velocity is that of the
        motion leaving its time (a layer entered now), else of the motion arriving.
        """
        chosen = self.select(characters)
        table = self._table
        shape = (self.num_layers, chosen.size)
        times = self.times[:, chosen] if times is None else np.broadcast_to(as_array(times, "times"), shape)
        rates = self._rates[:, chosen] if rates is None else np.broadcast_to(as_array(rates, "rates"), shape)
        weights = table.weights[:, chosen] if weights is None else np.broadcast_to(as_array(weights, "weights"), shape)
        moving = (
            np.zeros(shape) if weight_rates is None else np.broadcast_to(as_array(weight_rates, "weight_rates"), shape)
        )
        when = self.clock[chosen] if at is None else np.broadcast_to(as_array(at, "at"), chosen.shape)
        overrides = table.override_weights[:, chosen] if covers is None else as_array(covers, "covers")
        with trusted():
            result = capture(
                self.skeleton,
                table,
                times,
                rates,
                weights,
                moving,
                overrides,
                root=self.root_joint,
                threshold=self.rest_threshold,
                leaving=np.broadcast_to(np.asarray(leaving, dtype=bool), shape),
                tables=self._velocity_tables,
            )
            if stage:
                self.transitions.apply_captured(result, chosen, when)
        return result

    def start_transition(
        self,
        characters: Any,
        kind: str,
        duration: Any,
        source: Capture,
        target: Capture,
        *,
        half_life: Any = 1.0,
        at: Any = None,
    ) -> None:
        """Start ``kind`` (``"inertialize"``, ``"spring"``, ``"dead_blend"``, ``"frozen"``) from ``source``.

        Both are :meth:`capture` s of ``characters`` at the switch (clock ``at``, default now):
        ``source`` of the output before the controller changed the layers, ``target`` of the
        new layers (``stage=False``, ``leaving=True``). See :mod:`engine.player.transitions`.
        """
        chosen = self.select(characters)
        when = self.clock[chosen] if at is None else np.broadcast_to(as_array(at, "at"), chosen.shape)
        with trusted():
            self.transitions.begin(chosen, kind, duration, half_life, source, target, when)

    def switch(
        self, characters: Any, kind: str, duration: Any, change: Callable[[], None], *, half_life: Any = 1.0
    ) -> None:
        """Start an inertialized (or other ``kind``) switch of ``characters`` from the current output to new layers.

        ``change()`` sets the new layers (weights, times) of those characters; the switch starts
        from what the player showed just before, at the current clock (a controller between two
        frames, e.g. motion matching's jump to a new database frame).
        """
        chosen = self.select(characters)
        source = self.capture(chosen)
        change()
        target = self.capture(chosen, stage=False, leaving=True)
        self.start_transition(chosen, kind, duration, source, target, half_life=half_life)

    def output_velocity(self, characters: Any = None) -> Any:
        """Velocity ``(K, J)`` of the output now (the layers at their last frame's rates, weights held)."""
        return self.capture(self.select(characters)).velocity

    # --- helpers ----------------------------------------------------------------------------------

    def select(self, characters: Any) -> IntArray:
        """Character indices from an index, slice, index array, boolean mask or ``None`` (all)."""
        everyone = np.arange(self.num_characters)
        if characters is None:
            return everyone
        try:
            return np.atleast_1d(everyone[characters])
        except (IndexError, TypeError) as exc:
            raise InvalidInputError(
                f"characters must index {self.num_characters} characters (int, slice, indices or mask), "
                f"got {characters!r}: {exc}"
            ) from None

    def _row(self, row: int) -> int:
        if isinstance(row, bool) or not isinstance(row, int | np.integer) or not 0 <= row < self.num_layers:
            raise InvalidInputError(f"layer must be an index below {self.num_layers}, got {row!r}")
        return int(row)

    def _set(self, table: FloatArray, rows: Any, values: Any, characters: Any, name: str, *, upper: float) -> None:
        index = np.atleast_1d(np.arange(table.shape[0])[rows])
        pick = self.select(characters)
        array = as_array(values, name)
        if np.any(array < 0.0) or np.any(array > upper):
            limits = "non-negative" if upper == np.inf else f"in [0, {upper:g}]"
            raise InvalidInputError(f"{name} must be {limits}, got {float(array.min())}..{float(array.max())}")
        table[np.ix_(index, pick)] = np.broadcast_to(array, (index.size, pick.size))

    def _animated(self) -> dict[str, IntArray]:
        """Per path, the joints some layer's clip animates."""
        found: dict[str, set[int]] = {"translation": set(), "rotation": set(), "scale": set()}
        for layer in self._table.layers:
            for channel in layer.source.channels:
                if channel.path in found:
                    found[channel.path].add(channel.target)
        return {path: np.array(sorted(joints), dtype=np.intp) for path, joints in found.items()}

    def _buffer_frame(self) -> tuple[int, BufferFrame, FloatArray]:
        """The compiled kernels' state over the buffers: one layer per row, additive rows at weight 0."""
        table = self._table
        version = table.version
        if self._frame is None or self._frame[0] != version:
            blended = [r for r, layer in enumerate(table.layers) if not layer.additive]
            clips: list[Any] = []
            slot: dict[int, int] = {}
            for r in blended:
                compiled = table.layers[r].compiled
                if id(compiled) not in slot:
                    slot[id(compiled)] = len(clips)
                    clips.append(compiled)
            state = FrameState(
                ClipBank(self.skeleton, clips),
                table.count,
                self.num_characters,
                overrides=table.override_spans.shape[0],
                threads=self.threads,
            )
            for r in blended:
                state.play(r, slot[id(table.layers[r].compiled)])
            for r, layer in enumerate(table.layers):
                state.set_mask(r, layer.mask)
            for g, (start, stop) in enumerate(table.override_spans.tolist()):
                state.set_override(g, range(start, stop), table.override_masks[g])
            factors = np.array([[0.0] if layer.additive else [1.0] for layer in table.layers])
            frame = BufferFrame(state, self.pose_buffer, self.model_buffer, self.palette_buffer)
            self._frame = (version, frame, factors)
        return self._frame


def joint_index(skeleton: Skeleton, joint: str | int, name: str) -> int:
    """The index of ``joint`` (a name or an index) in ``skeleton``; errors name the argument ``name``."""
    if isinstance(joint, str):
        try:
            return skeleton.index(joint)
        except SkeletonMismatchError as error:
            raise SkeletonMismatchError(f"{name}: {error}") from None
    if isinstance(joint, bool) or not 0 <= int(joint) < skeleton.num_joints:
        raise SkeletonMismatchError(f"{name}: joint index {joint} is out of range for {skeleton.num_joints} joints")
    return int(joint)


def subtree_roots(parents: IntArray, joints: set[int]) -> list[int]:
    """The joints of ``joints`` with no ancestor in the set, ascending (their subtrees cover the rest)."""
    roots = []
    for joint in sorted(joints):  # a handful of edited joints
        ancestor = int(parents[joint])
        while ancestor >= 0 and ancestor not in joints:
            ancestor = int(parents[ancestor])
        if ancestor < 0:
            roots.append(joint)
    return roots


def _default_backend(count: int) -> str:
    """The backend for ``backend=None``: ``OSSA_BACKEND``'s, else numba from :data:`FUSED_MIN_CHARACTERS` up."""
    name = active_backend()
    if name == "numba" and not forced() and count < FUSED_MIN_CHARACTERS:
        return "numpy"
    return name


def _check_records(records: Any, shape: tuple[int, ...]) -> None:
    expected = (*shape, 4, 4)
    if (
        not isinstance(records, np.ndarray)
        or records.shape != expected
        or records.dtype not in (np.float32, np.float64)
    ):
        raise InvalidInputError(f"records must be a float32 or float64 array shaped {expected}, got {records!r}")


def _view(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def _frozen(array: FloatArray) -> FloatArray:
    array.flags.writeable = False
    return array
