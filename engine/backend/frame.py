"""The per-frame jobs of a crowd: sample + blend + local→model + palette, on either backend.

A frame of ``C`` characters plays ``L`` layers: layer ``l`` of character ``c`` plays clip
``state.clip_ids[l, c]`` of a :class:`~engine.backend.bank.ClipBank` at ``times[l, c]`` seconds
with weight ``weights[l, c]`` (and a per-joint ``mask`` per layer). The blend is
:func:`engine.anim.blending.blend`'s (sign alignment to the first weighted layer, the rest pose
below ``threshold``); a layer with weight 0 is not sampled at all.

Three jobs, each with the same signature on both backends (:mod:`engine.backend.select`):

- :func:`evaluate_frame`: everything fused, one character at a time while its joints are in
  cache; writes the skinning palette, float32 (or float64) ``(C, J, 4, 4)`` with every matrix
  stored column-major (the GLSL ``mat4`` layout of :func:`engine.math.gl_pack`: ``out[c, j]`` is
  the transposed palette matrix), ready to upload as one buffer for instanced drawing.
- :func:`sample_blend`: the local pose only (for stages that edit it, such as IK).
- :func:`finalize`: a local pose to model matrices and palette.

``characters`` (an index array) restricts a call to some characters: the others' outputs and
cursors are left as they are (animation LOD, :mod:`engine.backend.lod`). Nothing is allocated
per call on the compiled backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.blending import REST_THRESHOLD
from engine.anim.pose import Pose
from engine.backend import _reference
from engine.backend.bank import ClipBank
from engine.backend.select import default_threads, kernels, resolve
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array

Int64Array = npt.NDArray[np.int64]
_NO_MODEL = np.zeros((0, 0, 4, 4))


class FrameState:
    """Per-crowd state of the frame jobs: which clip each layer plays, masks, cursors, scratch.

    Parameters
    ----------
    bank
        The clips (and skeleton) the crowd plays.
    layers
        ``L``, the number of layers blended per character.
    characters
        ``C``, the number of characters.
    threads
        The most threads a call may use (default :func:`~engine.backend.select.default_threads`);
        one scratch block of about ``470·J`` bytes each.

    Attributes
    ----------
    clip_ids
        ``(L, C)`` int64, read-only: the bank clip of each layer and character (all 0 at first);
        change it with :meth:`play`.
    masks
        ``(L, J)`` float64, read-only: per-joint weight of each layer (all 1 at first); change it
        with :meth:`set_mask`.
    cursors
        ``(L, C)`` int64: the merged-timeline segment each layer was last sampled in (ozz's
        sampling context); the search for the next frame's segment starts there. Any value is
        safe (it is clamped); :meth:`play` resets it.

    Examples
    --------
    >>> from engine.procedural.mannequin import build_mannequin
    >>> mannequin = build_mannequin()
    >>> bank = ClipBank(mannequin.skeleton, [mannequin.clips["walk"], mannequin.clips["run"]])
    >>> state = FrameState(bank, layers=2, characters=3).play(1, "run")
    >>> palette = state.new_palette()
    >>> times, weights = np.full((2, 3), 0.25), np.full((2, 3), 0.5)
    >>> evaluate_frame(state, times, weights, out=palette).shape
    (3, 25, 4, 4)
    """

    def __init__(self, bank: ClipBank, layers: int, characters: int, *, threads: int | None = None) -> None:
        if not isinstance(bank, ClipBank):
            raise InvalidInputError(f"bank must be a ClipBank, got {type(bank).__name__}")
        if int(layers) < 1 or int(characters) < 1:
            raise InvalidInputError(f"layers and characters must be at least 1, got {layers} and {characters}")
        self.bank = bank
        self.threads = default_threads() if threads is None else _check_threads(threads, "threads")
        joints = bank.num_joints
        self._clip_ids = np.zeros((int(layers), int(characters)), dtype=np.int64)
        self._masks = np.ones((int(layers), joints))
        self.cursors = np.zeros((int(layers), int(characters)), dtype=np.int64)
        self.everyone: Int64Array = np.arange(int(characters), dtype=np.int64)
        self.everyone.flags.writeable = False
        self._scratch: tuple[FloatArray, FloatArray] | None = None
        # stand-ins for the outputs a compiled call does not write (same types: no extra compilation)
        self._no_local = (np.zeros((0, joints, 3)), np.zeros((0, joints, 4)), np.zeros((0, joints, 3)))
        self._no_palette = np.zeros((0, joints, 4, 4), dtype=np.float32)
        self._no_layers = np.zeros((int(layers), int(characters)))
        self._workspace: dict[str, Any] = {}  # the numpy backend's buffers

    @property
    def num_layers(self) -> int:
        """``L``."""
        return self._clip_ids.shape[0]

    @property
    def num_characters(self) -> int:
        """``C``."""
        return self._clip_ids.shape[1]

    @property
    def clip_ids(self) -> Int64Array:
        """``(L, C)`` bank clip of each layer and character (read-only view)."""
        view = self._clip_ids.view()
        view.flags.writeable = False
        return view

    @property
    def masks(self) -> FloatArray:
        """``(L, J)`` per-joint weight of each layer (read-only view)."""
        view = self._masks.view()
        view.flags.writeable = False
        return view

    def play(self, layer: int, clip: int | str, characters: Any = None) -> FrameState:
        """Make ``layer`` play ``clip`` (bank index or name) for ``characters`` (default all); returns self."""
        layer = self._layer(layer)
        index = self.bank.index(clip) if isinstance(clip, str) else int(clip)
        if not 0 <= index < self.bank.num_clips:
            raise InvalidInputError(f"clip must be a name or an index below {self.bank.num_clips}, got {clip!r}")
        chosen = self.everyone if characters is None else self._characters(characters)
        self._clip_ids[layer, chosen] = index
        self.cursors[layer, chosen] = 0
        return self

    def set_mask(self, layer: int, mask: Any) -> FrameState:
        """Per-joint weights ``(J,)`` of ``layer`` (non-negative; ``None`` for all ones); returns self."""
        layer = self._layer(layer)
        if mask is None:
            self._masks[layer] = 1.0
            return self
        values = as_array(mask, "mask")
        if values.shape != (self.bank.num_joints,):
            raise SkeletonMismatchError(f"mask must have shape ({self.bank.num_joints},), got {values.shape}")
        if np.any(values < 0.0):
            raise InvalidInputError(f"mask must be non-negative, got {values.min()} at joint {int(values.argmin())}")
        self._masks[layer] = values
        return self

    def new_palette(self, dtype: Any = np.float32) -> np.ndarray:
        """A zeroed palette buffer ``(C, J, 4, 4)`` for :func:`evaluate_frame` (float32 or float64)."""
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise InvalidInputError(f"dtype must be float32 or float64, got {dtype}")
        return np.zeros((self.num_characters, self.bank.num_joints, 4, 4), dtype=dtype)

    def scratch(self) -> tuple[FloatArray, FloatArray]:
        """The compiled kernels' scratch, one block per thread (allocated on first use)."""
        if self._scratch is None:
            module = kernels()
            joints, blocks = self.bank.num_joints, self.threads
            self._scratch = (
                np.zeros((blocks, module.SCRATCH_ROWS, joints)),
                np.zeros((blocks, module.MODEL_FLOATS * joints)),
            )
        return self._scratch

    def _layer(self, layer: int) -> int:
        if not 0 <= int(layer) < self.num_layers:
            raise InvalidInputError(f"layer must be in [0, {self.num_layers}), got {layer}")
        return int(layer)

    def _characters(self, characters: Any) -> Int64Array:
        if characters is None:
            return self.everyone
        chosen = np.asarray(characters)
        if chosen.dtype != np.int64:
            if chosen.size and not np.issubdtype(chosen.dtype, np.integer):
                raise InvalidInputError(f"characters must be integer indices, got {chosen.dtype}")
            chosen = chosen.astype(np.int64)
        if chosen.ndim != 1:
            raise InvalidInputError(f"characters must be a 1-D index array, got shape {chosen.shape}")
        if chosen.size and (chosen.min() < 0 or chosen.max() >= self.num_characters):
            bad = chosen[(chosen < 0) | (chosen >= self.num_characters)][0]
            raise InvalidInputError(f"characters must lie in [0, {self.num_characters}), got {bad}")
        return np.ascontiguousarray(chosen)

    def __repr__(self) -> str:
        return f"FrameState({self.num_layers} layers, {self.num_characters} characters, {self.threads} threads)"


def _check_threads(threads: Any, name: str) -> int:
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {threads!r}")
    return int(threads)


def _per_layer(values: Any, state: FrameState, name: str) -> FloatArray:
    """``values`` as a C-ordered float64 ``(L, C)`` array (no copy when it already is one)."""
    array = np.ascontiguousarray(values, dtype=np.float64)
    expected = (state.num_layers, state.num_characters)
    if array.shape != expected:
        raise InvalidInputError(f"{name} must have shape (layers, characters) = {expected}, got {array.shape}")
    return array


def _first_bad(times: FloatArray, weights: FloatArray, characters: Int64Array) -> str | None:
    """The first non-finite time or negative / non-finite weight among ``characters``, described."""
    for name, values, ok in (
        ("times", times, np.isfinite(times)),
        ("weights", weights, np.isfinite(weights) & (weights >= 0.0)),
    ):
        bad = np.argwhere(~ok[:, characters])
        if bad.size:
            layer, column = (int(i) for i in bad[np.argsort(characters[bad[:, 1]], kind="stable")][0])
            c = int(characters[column])
            what = "finite seconds" if name == "times" else "finite and non-negative"
            return f"{name}[{layer}, {c}] must be {what}, got {values[layer, c]}"
    return None


def _check_out(out: Any, state: FrameState, name: str, dtypes: tuple[type, ...]) -> np.ndarray:
    shape = (state.num_characters, state.bank.num_joints, 4, 4)
    if (
        not isinstance(out, np.ndarray)
        or out.shape != shape
        or out.dtype not in dtypes
        or not out.flags.c_contiguous
        or not out.flags.writeable
    ):
        got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        kinds = " or ".join(np.dtype(d).name for d in dtypes)
        raise InvalidInputError(f"{name} must be a writable C-contiguous {kinds} array shaped {shape}, got {got}")
    return out


def _threads_for(state: FrameState, threads: Any, count: int) -> int:
    """Threads for ``count`` characters: a thread only for every 32 (waking threads costs more)."""
    wanted = state.threads if threads is None else _check_threads(threads, "threads")
    if wanted > state.threads:
        raise InvalidInputError(f"threads must be at most the state's {state.threads}, got {wanted}")
    return max(1, min(wanted, count // 32))


def _check_threshold(threshold: float) -> float:
    if not (threshold > 0.0 and np.isfinite(threshold)):
        raise InvalidInputError(f"threshold must be positive and finite, got {threshold}")
    return float(threshold)


def evaluate_frame(
    state: FrameState,
    times: Any,
    weights: Any,
    *,
    out: np.ndarray,
    model_out: FloatArray | None = None,
    characters: Any = None,
    threshold: float = REST_THRESHOLD,
    threads: int | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Skinning palette of every (or the given) character for this frame, into ``out``.

    Parameters
    ----------
    state
        The crowd's :class:`FrameState` (clips per layer, masks, cursors; cursors are updated).
    times, weights
        ``(L, C)`` seconds (used as given: looping is the caller's) and non-negative weights.
    out
        ``(C, J, 4, 4)`` float32 (or float64), C-contiguous: ``out[c, j]`` receives
        ``(model[c, j] @ inverse_bind[j])`` transposed, i.e. stored column-major as GLSL reads
        a ``mat4`` (bit-for-bit the layout of :func:`engine.math.gl_pack`).
    model_out
        Optional ``(C, J, 4, 4)`` float64 C-contiguous: the model matrices (row-major, as
        :func:`~engine.anim.local_to_model.model_from_pose` returns them).
    characters
        Optional index array: only these characters are evaluated (and their cursors moved).
    threshold
        Rest-pose threshold of the blend (:func:`engine.anim.blending.blend`).
    threads
        Threads for this call (default the state's); results do not depend on it.
    backend
        ``"numba"``, ``"numpy"`` or ``None`` for the active backend.

    Returns
    -------
    numpy.ndarray
        ``out``.

    Raises
    ------
    InvalidInputError
        Arrays of the wrong shape, dtype or layout; characters out of range; a time that is not
        finite or a weight that is negative or not finite (named ``times[l, c]``/``weights[l, c]``;
        the other characters may have been written already).
    """
    times, weights = _per_layer(times, state, "times"), _per_layer(weights, state, "weights")
    out = _check_out(out, state, "out", (np.float32, np.float64))
    model = _NO_MODEL if model_out is None else _check_out(model_out, state, "model_out", (np.float64,))
    chosen = state._characters(characters)
    threshold = _check_threshold(threshold)
    workers = _threads_for(state, threads, chosen.size)
    if resolve(backend) == "numpy":
        _numpy_checks(times, weights, chosen)
        local = _reference.local_pose(
            state.bank,
            state._clip_ids,
            state._masks,
            state.cursors,
            times,
            weights,
            chosen,
            threshold,
            state._workspace,
        )
        _write_matrices(state, local, chosen, out, model_out)
        return out
    _run(state, chosen, times, weights, threshold, state._no_local, out, model, True, True, workers)
    return out


def sample_blend(
    state: FrameState,
    times: Any,
    weights: Any,
    *,
    out: Pose,
    characters: Any = None,
    threshold: float = REST_THRESHOLD,
    threads: int | None = None,
    backend: str | None = None,
) -> Pose:
    """The blended local pose of every (or the given) character, into ``out``.

    Same inputs as :func:`evaluate_frame`; ``out`` is a :class:`~engine.anim.pose.Pose` of
    C-contiguous float64 arrays ``(C, J, 3)``, ``(C, J, 4)``, ``(C, J, 3)`` (rotations come out
    unit). Returns ``out``.
    """
    times, weights = _per_layer(times, state, "times"), _per_layer(weights, state, "weights")
    local = _check_pose(out, state, "out")
    chosen = state._characters(characters)
    threshold = _check_threshold(threshold)
    workers = _threads_for(state, threads, chosen.size)
    if resolve(backend) == "numpy":
        _numpy_checks(times, weights, chosen)
        pose = _reference.local_pose(
            state.bank,
            state._clip_ids,
            state._masks,
            state.cursors,
            times,
            weights,
            chosen,
            threshold,
            state._workspace,
        )
        out.translations[chosen], out.rotations[chosen], out.scales[chosen] = (
            pose.translations,
            pose.rotations,
            pose.scales,
        )
        return out
    _run(state, chosen, times, weights, threshold, local, state._no_palette, _NO_MODEL, True, False, workers)
    return out


def finalize(
    state: FrameState,
    local: Pose,
    *,
    out: np.ndarray,
    model_out: FloatArray | None = None,
    characters: Any = None,
    threads: int | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Model matrices (optional) and palette of a local pose ``(C, J)``, into ``out`` (see :func:`evaluate_frame`).

    ``local`` is a :class:`~engine.anim.pose.Pose` of C-contiguous float64 arrays (unit rotations,
    e.g. from :func:`sample_blend` after an IK stage edited it). Returns ``out``.
    """
    arrays = _check_pose(local, state, "local")
    out = _check_out(out, state, "out", (np.float32, np.float64))
    model = _NO_MODEL if model_out is None else _check_out(model_out, state, "model_out", (np.float64,))
    chosen = state._characters(characters)
    workers = _threads_for(state, threads, chosen.size)
    if resolve(backend) == "numpy":
        with_rows = Pose(local.translations[chosen], local.rotations[chosen], local.scales[chosen])
        _write_matrices(state, with_rows, chosen, out, model_out)
        return out
    _run(state, chosen, state._no_layers, state._no_layers, 1.0, arrays, out, model, False, True, workers)
    return out


def _check_pose(pose: Any, state: FrameState, name: str) -> tuple[FloatArray, FloatArray, FloatArray]:
    if not isinstance(pose, Pose):
        raise InvalidInputError(f"{name} must be a Pose, got {type(pose).__name__}")
    shape = (state.num_characters, state.bank.num_joints)
    arrays = (pose.translations, pose.rotations, pose.scales)
    for field, array, width in zip(("translations", "rotations", "scales"), arrays, (3, 4, 3), strict=True):
        if array.shape != (*shape, width) or not array.flags.c_contiguous or not array.flags.writeable:
            raise InvalidInputError(
                f"{name}.{field} must be a writable C-contiguous float64 array shaped {(*shape, width)}, "
                f"got {array.shape}"
            )
    return arrays


def _numpy_checks(times: FloatArray, weights: FloatArray, chosen: Int64Array) -> None:
    problem = _first_bad(times, weights, chosen)
    if problem is not None:
        raise InvalidInputError(problem)


def _write_matrices(state: FrameState, local: Pose, chosen: Int64Array, out: np.ndarray, model_out: Any) -> None:
    model, palette = _reference.model_and_palette(state.bank, local, state._workspace)
    if chosen is state.everyone:
        np.copyto(out, np.swapaxes(palette, -1, -2))  # column-major per matrix, cast to out's dtype
        if model_out is not None:
            np.copyto(model_out, model)
        return
    out[chosen] = np.swapaxes(palette, -1, -2)
    if model_out is not None:
        model_out[chosen] = model


def _run(
    state: FrameState,
    chosen: Int64Array,
    times: FloatArray,
    weights: FloatArray,
    threshold: float,
    local: tuple[FloatArray, FloatArray, FloatArray],
    palette: np.ndarray,
    model: FloatArray,
    blend: bool,
    compose: bool,
    threads: int,
) -> None:
    """One compiled call on ``threads`` threads; raises after it when characters were skipped for bad input."""
    module = kernels()
    layers = (state._clip_ids, times, weights, state.cursors)
    skipped = module.run(
        chosen,
        layers,
        state._masks,
        threshold,
        state.bank.arrays,
        state.scratch(),
        local,
        palette,
        model,
        blend,
        compose,
        threads,
    )
    if skipped:
        raise InvalidInputError(_first_bad(times, weights, chosen) or f"{skipped} characters had bad input")
