"""The :class:`Player`: every character's layers, and the one frame that poses them (see :mod:`engine.player`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.anim.blending import REST_THRESHOLD
from engine.anim.ik import IKResult, apply_corrections
from engine.anim.layout import MatrixBuffer, PoseBuffer
from engine.anim.pose import Pose
from engine.anim.rootmotion import UP, parent_up
from engine.anim.skeleton import Skeleton
from engine.backend import BACKENDS, BufferFrame, active_backend
from engine.backend.buffers import check_records
from engine.backend.select import compiled_module
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray, as_array, shaped, trusted
from engine.player import evaluate
from engine.player.capture import VelocityTables
from engine.player.compose import CompiledLayers, Composer, joint_index
from engine.player.controls import layer_writes, read_only
from engine.player.morph import MorphTargets
from engine.player.root import RootMotion, RootSum
from engine.player.switching import Switching
from engine.player.transitions import KINDS, TransitionStage


class Player(Switching):
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
        installed, whatever the number of characters. Both agree to 1e-12.
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
        root = None if root_motion is None else joint_index(skeleton, root_motion, "root_motion")
        super().__init__(skeleton, count, root)
        self.rest_threshold = float(rest_threshold)
        self.backend = backend or active_backend()
        self._requested = backend  # None: the active backend (its fallback applies)
        self._threads = threads
        self.morph = morph
        self.clock = np.zeros(count)
        self._frame_start = np.zeros(count)
        self._step = np.zeros(count)
        self._everyone = np.arange(count, dtype=np.int64)
        self._root_sum = RootSum(count, UP if root is None else parent_up(skeleton, root))
        self.transitions = TransitionStage(count, joints, compiled=self.backend == "numba")
        self._velocity_tables = VelocityTables()
        self._composer = Composer(skeleton, count, character_major=self.backend == "numba")
        self._compiled = CompiledLayers(skeleton, self._table, self._composer.buffers, root)
        self._morph = np.tile(morph.defaults, (count, 1)) if morph is not None else np.zeros((count, 0))
        self.root_motion = RootMotion.still(count)
        self.stages: list[Callable[[Player], None]] = []
        self._characters: IntArray | None = None  # the characters the last pose() evaluated (None: all)

    def __repr__(self) -> str:
        return f"Player({self.num_characters} characters, {self.num_layers} layers, {self.skeleton!r})"

    def _layers_added(self) -> None:
        self.transitions.animate(self._animated())

    def _mask_changed(self, row: int, mask: FloatArray | None) -> None:
        self._compiled.set_mask(row, mask)

    @property
    def pose_buffer(self) -> PoseBuffer:
        """The frame's local pose, batch-innermost (stages edit it in place: report with :meth:`pose_changed`)."""
        return self._composer.pose_buffer

    @property
    def model_buffer(self) -> MatrixBuffer:
        """The model matrices (:meth:`update_model` brings them up to date)."""
        return self._composer.model_buffer

    @property
    def palette_buffer(self) -> MatrixBuffer:
        """The skinning palette (:meth:`finalize` brings it up to date)."""
        return self._composer.palette_buffer

    # --- the frame ------------------------------------------------------------------------------

    def begin_frame(self, dt: Any) -> None:
        """Start a frame of ``dt`` seconds (scalar or ``(C,)``, ``>= 0``): the clock moves, no travel yet."""
        given = as_array(dt, "dt")
        try:
            step = given if given.ndim == 0 else np.broadcast_to(given, (self.num_characters,))  # a scalar: one check
        except ValueError:
            raise InvalidInputError(
                f"dt must be a scalar or one per character ({self.num_characters},), got shape {given.shape}"
            ) from None
        if np.any(step < 0.0):
            raise InvalidInputError(f"dt must be >= 0 seconds (play backwards with a negative speed), got {dt}")
        self._frame_start = self.clock
        self._step = np.full(self.num_characters, step) if step.ndim == 0 else step.astype(np.float64)
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

    def advance_layers(
        self,
        rows: Any,
        end: Any,
        running: Any,
        characters: Any = None,
        *,
        weights: Any = None,
        jump: tuple[Any, Any] | None = None,
        exact: Any = None,
    ) -> None:
        """Move layers ``rows`` to the unwrapped raw times ``end`` ``(n, K)`` this frame.

        ``characters`` (an index array, ``None``: all ``C``): the ``K`` characters moved; the
        others' layers stay as they are (a controller running some characters this frame).
        Each layer's loop mode wraps (or clamps) the time; with a root-motion joint each layer's
        exact keyed travel from its time before to ``end`` counts with its current weight at the
        root (set the weights first); markers crossed fire where ``running`` ``(n, K)`` and the
        layer has weight. ``fresh`` flags are consumed where ``running``.

        A controller's whole write in one pass, as :meth:`set_weights` and :meth:`set_time` before
        and after would do it: ``weights`` ``(n, K)`` set first; ``jump`` = (raw times, where)
        ``(n, K)``: those layers start from there, fresh (a state entered this frame); ``exact``
        ``(n, K)``: where ``running``, the raw times the layers are put at after moving (the
        controller's own clock, e.g. a synced phase; not fresh).
        """
        table = self._table
        index, chosen, block = self._entries(rows, characters)
        stop = shaped(as_array(end, "end"), (index.size, chosen.size))
        moving = shaped(np.asarray(running, dtype=bool), stop.shape)
        durations, loops = table.durations[index], table.loops[index]
        writes = layer_writes(stop.shape, weights, jump, exact)  # checked, or empty
        weighted = None if weights is None else writes[0]  # the weights the table will hold
        if self.backend == "numba":  # one pass on the kernel: the same numbers
            cells, out = self._clock_buffers(stop.shape)
            compiled_module("engine.backend._clock_kernels").advance_layers_on(
                self.threads,
                index,
                np.ascontiguousarray(chosen, dtype=np.int64),
                stop,
                moving,
                (durations, loops),
                self._step,
                cells,
                writes,
                out,
            )
            start, stop, wraps, raw, fresh = out
        else:
            if weighted is not None:
                table.weights[block] = weighted
            if jump is not None:
                self.set_time(rows, writes[1], characters, where=writes[2])
            fresh = table.fresh[block]
            modes = (durations[:, None], loops[:, None])
            start, stop, raw, wraps = self._move(block, (stop, moving), modes, self._step[chosen])
            if exact is not None:
                self.set_time(rows, writes[3], characters, fresh=False, where=moving)
        weighted = table.weights[block] if weighted is None else weighted
        self._moved((index, chosen), weighted, (start, stop, raw, wraps), moving, fresh)

    def advance_with(self, rows: Any, characters: Any, write: Callable[..., None]) -> None:
        """:meth:`advance_layers` where a controller's kernel decides each entry as it moves it (numba backend).

        ``write(entries, table, out)`` runs the kernel once over the ``n`` layers ``rows`` of the
        ``K`` ``characters`` (an index array, ``None``: all): ``entries`` = their player layers
        ``(n,)``, the characters ``(K,)``, the clips' durations and loop codes ``(n,)`` and the
        frame steps ``(C,)``; ``table`` = the layers' raw times, rates, fresh flags and weights
        ``(L, C)``. For every entry the kernel sets the weight, moves the layer's cell (raw time,
        fresh flag, rate) with :func:`engine.player.kernels.move_layer`, writes the new cell back
        into ``table`` and the step's five outputs into ``out``'s first five arrays, and whether
        the layer ran into the sixth (``(n, K)`` each). Then, as :meth:`advance_layers`, each
        layer's root travel and its markers.
        """
        if self.backend != "numba":
            raise InvalidInputError("advance_with runs a compiled controller's kernel: it needs the numba backend")
        table = self._table
        index, chosen, block = self._entries(rows, characters)
        cells, out = self._clock_buffers((index.size, chosen.size))
        moving = np.empty(out[0].shape, dtype=bool)
        contiguous = np.ascontiguousarray(chosen, dtype=np.int64)
        write((index, contiguous, table.durations[index], table.loops[index], self._step), cells, (*out, moving))
        start, stop, wraps, raw, fresh = out
        self._moved((index, chosen), table.weights[block], (start, stop, raw, wraps), moving, fresh)

    def _entries(self, rows: Any, characters: Any) -> tuple[IntArray, IntArray, Any]:
        """The layers ``rows`` ``(n,)``, the characters ``(K,)`` (``None``: all) and the table's block of them."""
        index = np.atleast_1d(np.arange(self.num_layers)[rows])
        chosen = self._everyone if characters is None else self.select(characters)
        return index, chosen, index if characters is None else np.ix_(index, chosen)  # whole rows: no character index

    def _moved(
        self, entries: tuple[Any, Any], weighted: FloatArray, times: tuple[FloatArray, ...], moving: Any, fresh: Any
    ) -> None:
        """After a move: each layer's exact keyed travel at the root with its weight, the markers crossed.

        ``entries`` = the layers ``(n,)`` and characters ``(K,)``, ``weighted`` their weights;
        ``times`` = the raw times before, the end times, the raw times reached and the loops crossed ``(n, K)``.
        """
        (index, chosen), (start, stop, raw, wraps) = entries, times
        table = self._table
        if self.root_joint is not None:  # each layer's exact keyed travel, with its weight at the root
            at_root = table.joint_weights(index, weighted, table.override_weights[:, chosen], [self.root_joint])
            layers = [table.layers[r] for r in index.tolist()]
            self._root_sum.add_layers(layers, chosen, at_root[:, 0], (start, raw, wraps))
        self._markers.fire(index, table.layers, chosen, (start, stop), moving, fresh, weighted)

    def pose(self, characters: Any = None) -> PoseBuffer:
        """The frame's local pose into :attr:`pose_buffer`: sample, blend, additive layers, the transition stage.

        ``characters`` (an index array; ``None``: all) are evaluated, the others keep their last
        pose (animation LOD; every clock and time moves on regardless). Also :attr:`root_motion`
        and :attr:`morph_weights`. Model matrices and palette wait for :meth:`update_model` /
        :meth:`finalize`, after the post-blend stages.
        """
        self._pose(None if characters is None else self.select(characters))
        return self.pose_buffer

    def end_frame(
        self, characters: Any = None, records: np.ndarray | None = None, *, model: bool = True
    ) -> MatrixBuffer:
        """End the frame: :meth:`pose` of ``characters``, :meth:`run_stages`, :meth:`finalize` (``records``, ``model``).

        The same numbers as those three calls; returns :attr:`palette_buffer`. Without post-blend
        stages or additive layers, on the compiled kernels, the characters with no transition in
        progress are posed and composed in one pass: each pose composed while it is in cache.
        """
        chosen = None if characters is None else self.select(characters)
        if not self._one_pass():
            self._pose(chosen)
            self.run_stages()
            return self.finalize(records, model=model)
        if records is not None:
            check_records(records, self.pose_buffer.shape)
        return self._pose_and_compose(chosen, records, model)

    def _one_pass(self) -> bool:
        """Whether :meth:`end_frame` poses and composes in one pass: compiled, layers, no stages or additive layers."""
        table = self._table
        return bool(table.layers) and not table.any_additive and not self.stages and self.backend == "numba"

    def _pose_and_compose(self, chosen: IntArray | None, records: np.ndarray | None, model: bool) -> MatrixBuffer:
        """:meth:`end_frame`'s one pass (:meth:`_one_pass`): the pose of ``chosen`` composed as it is posed."""
        busy = self._pose(chosen, (records, model or records is None))
        return self._composer.finalize(self._compiled_frame(), self._requested, records, model=model, pending=busy)

    def _pose(self, chosen: IntArray | None, composing: tuple[np.ndarray | None, bool] | None = None) -> IntArray:
        """:meth:`pose` of ``chosen``; returns those of them whose transition stage followed the posing pass.

        With ``composing`` = (records, model) the others are composed with their pose (:meth:`end_frame`).
        """
        table, ws, threshold = self._table, self._composer.workspace, self.rest_threshold
        self.root_motion = self._root_motion()
        times = self._clip_times()  # read only
        stage = self.transitions
        with trusted():
            stage.expire(self.clock)
            busy = later = stage.active(chosen)  # later: the characters not composed in the pass
            fused = False
            if self.backend == "numba" and not table.additive.all():
                frame, factors = self._compiled.frame(self.threads)
                weights = table.weights * factors
                given: dict[str, Any] = {
                    "override_weights": table.override_weights,
                    "threshold": threshold,
                    "backend": self._requested,
                }
                # without additive layers the inertialized and spring offsets join the pass, between
                # each character's blend and its compose; the frozen and dead blends follow it
                fused = busy.size > 0 and stage.compiled and not table.any_additive
                if fused:
                    given["stage"] = stage.in_pass(self.clock)
                    later = stage.blending(chosen)
                if composing is None:
                    frame.sample_blend(times, weights, characters=chosen, **given)
                else:
                    records, model = composing
                    plain = stage.passing(chosen) if fused else stage.idle(chosen)
                    frame.sample_blend(
                        times, weights, characters=plain, compose=True, records=records, model=model, **given
                    )
                    if later.size:
                        frame.sample_blend(times, weights, characters=later, **given)
            else:
                evaluate.sample_blend(
                    self.skeleton, table, times, chosen, self.root_joint, threshold, self.pose_buffer, ws
                )
            if table.any_additive:
                evaluate.add_layers(table, times, chosen, self.pose_buffer, ws)
            if fused:
                stage.apply_blends(self.pose_buffer, self.clock, later)
            elif busy.size:
                stage.apply(self.pose_buffer, self.clock, busy, self.threads)
        if self.morph is not None and self.morph.size:
            rows = evaluate.weighted(table, None, additive=False)
            self.morph.mix([table.layers[r].clip for r in rows], times[rows], table.weights[rows], self._morph)
        self._composer.posed(chosen)
        self._characters = chosen
        return later

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
        """Compile (or load) the kernels a frame can call, then pose and finalize the current frame once more.

        The first compiled call of a process compiles a kernel for these buffers (tens of
        seconds, once: numba caches it on disk) or loads it (about a second), and a transition's
        kernels are first called at the first transition: mid-game. On the compiled backend this
        rehearses every transition kind on one character, then on as many as threads (the serial
        and the parallel kernels), each posed both ways (:meth:`end_frame`'s one pass, and
        :meth:`pose` then :meth:`finalize`), then puts the transition stage back as it was: no
        time passes, nothing changes (the post-blend stages do not run). A program that times its
        frames calls this first. ``records`` as for :meth:`finalize`; returns the seconds it took.
        """
        start = time.perf_counter()
        last = self._characters
        if self.backend == "numba" and self.num_layers:
            kept = self.transitions.saved()
            try:
                self._rehearse(records)
            finally:
                self.transitions.restore(kept)
        self.pose(last)
        self.finalize(records)
        return time.perf_counter() - start

    def _rehearse(self, records: np.ndarray | None) -> None:
        """Every transition kind started and posed (:meth:`warm_up`), each while the one before is in progress."""
        for count in dict.fromkeys((1, min(self.num_characters, self.threads))):  # serial, then parallel kernels
            rows = self._everyone[:count]
            for kind in KINDS:  # loop over the stage's kinds (four)
                self.switch_between(rows, self.layer_state(rows), self.layer_state(rows, leaving=True), kind, 1.0)
                for chosen in (None, rows):  # every character, then a subset (animation LOD)
                    if self._one_pass():
                        self._pose_and_compose(chosen, records, True)
                    self._pose(chosen)
                    self.update_model()
                    self.finalize(records)

    def run_stages(self) -> None:
        """Run the :attr:`stages`, in order."""
        for stage in self.stages:  # loop over post-blend stages
            stage(self)

    def update(self, dt: Any) -> None:
        """A frame without controllers: :meth:`begin_frame`, then :meth:`end_frame`."""
        self.begin_frame(dt)
        self.end_frame()

    # --- after the blend: stages, model matrices, palette ----------------------------------------

    def pose_changed(self, joint: int | str) -> None:
        """Report an edit of :attr:`pose_buffer` at ``joint`` (and below): only its subtree is recomposed."""
        self._composer.pose_changed(joint_index(self.skeleton, joint, "joint"))

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
        return self._composer.update_model(self._compiled_frame(), self._requested)

    def finalize(self, records: np.ndarray | None = None, *, model: bool = True) -> MatrixBuffer:
        """End the frame: model matrices and the skinning palette, once; returns :attr:`palette_buffer`.

        With ``records`` (a writable ``(C, J, 4, 4)`` float32 or float64 array) the palette is
        also written there, each matrix column-major: what
        :meth:`engine.render.PaletteBuffer.upload` sends as it is (``packed=True``). With
        ``records`` and ``model=False`` the compiled kernels write the records only — the model
        matrices are composed on the way but not stored, half the memory a character writes (a
        crowd that only draws); :meth:`update_model` (and :attr:`model`) compose them when asked.
        """
        return self._composer.finalize(self._compiled_frame(), self._requested, records, model=model)

    def _compiled_frame(self) -> BufferFrame | None:
        """The kernels' frame when this player composes on them (the numba backend with layers), else ``None``."""
        if self.backend != "numba" or not self.num_layers:
            return None
        return self._compiled.frame(self.threads)[0]

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
        return read_only(self._morph)


def _frozen(array: FloatArray) -> FloatArray:
    array.flags.writeable = False
    return array
