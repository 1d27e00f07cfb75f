"""The per-frame jobs of a crowd: sample + blend + local→model + palette, on either backend.

A frame of ``C`` characters plays the ``L`` layers of a :class:`~engine.backend.state.FrameState`:
layer ``l`` of character ``c`` plays clip ``state.clip_ids[l, c]`` at ``times[l, c]`` seconds
with weight ``weights[l, c]`` (times the layer's joint mask and the complements of the overrides
covering it, at ``override_weights``). The blend is :func:`engine.anim.blending.blend`'s (sign
alignment to the first weighted layer, the rest pose below ``threshold``); a layer with weight 0
is not sampled at all.

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

import math
from typing import Any

import numpy as np

from engine.anim.blending import REST_THRESHOLD
from engine.anim.pose import Pose
from engine.backend import _reference
from engine.backend.select import compiled_module, kernels, resolve
from engine.backend.state import FrameState, Int64Array, check_threads
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray


def threads_for(state: FrameState, threads: Any, count: int) -> int:
    """Threads for ``count`` characters: a thread only for every 32 (waking threads costs more)."""
    wanted = state.threads if threads is None else check_threads(threads, "threads")
    if wanted > state.threads:
        raise InvalidInputError(f"threads must be at most the state's {state.threads}, got {wanted}")
    return max(1, min(wanted, count // 32))


def check_threshold(threshold: float) -> float:
    """A positive, finite rest threshold, else :class:`InvalidInputError`."""
    if not (threshold > 0.0 and math.isfinite(threshold)):
        raise InvalidInputError(f"threshold must be positive and finite, got {threshold}")
    return float(threshold)


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


def evaluate_frame(
    state: FrameState,
    times: Any,
    weights: Any,
    *,
    out: np.ndarray,
    model_out: FloatArray | None = None,
    override_weights: Any = None,
    characters: Any = None,
    threshold: float = REST_THRESHOLD,
    threads: int | None = None,
    backend: str | None = None,
) -> np.ndarray:
    """Skinning palette of every (or the given) character for this frame, into ``out``.

    Parameters
    ----------
    state
        The crowd's :class:`~engine.backend.state.FrameState` (clips per layer, masks,
        overrides, cursors; cursors are updated).
    times, weights
        ``(L, C)`` seconds (used as given: looping is the caller's) and non-negative weights.
    out
        ``(C, J, 4, 4)`` float32 (or float64), C-contiguous: ``out[c, j]`` receives
        ``(model[c, j] @ inverse_bind[j])`` transposed, i.e. stored column-major as GLSL reads
        a ``mat4`` (bit-for-bit the layout of :func:`engine.math.gl_pack`).
    model_out
        Optional ``(C, J, 4, 4)`` float64 C-contiguous: the model matrices (row-major, as
        :func:`~engine.anim.local_to_model.model_from_pose` returns them).
    override_weights
        ``(G, C)`` weights in ``[0, 1]`` of the state's overrides (``None``: all 0).
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
        finite, a weight that is negative or not finite, an override weight outside ``[0, 1]``
        (named ``times[l, c]`` …; the other characters may have been written already).
    """
    times, weights = state.per_layer(times, "times"), state.per_layer(weights, "weights")
    override_weights = state.per_override(override_weights)
    out = _check_out(out, state, "out", (np.float32, np.float64))
    model = state.no_model if model_out is None else _check_out(model_out, state, "model_out", (np.float64,))
    chosen = state.select(characters)
    threshold = check_threshold(threshold)
    workers = threads_for(state, threads, chosen.size)
    if resolve(backend) == "numpy":
        _numpy_checks(state, times, weights, override_weights, chosen)
        local = _reference.local_pose(state, times, weights, override_weights, chosen, threshold)
        _write_matrices(state, local, chosen, out, model_out)
        return out
    run(state, chosen, times, weights, override_weights, threshold, state.no_local, out, model, True, True, workers)
    return out


def sample_blend(
    state: FrameState,
    times: Any,
    weights: Any,
    *,
    out: Pose,
    override_weights: Any = None,
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
    times, weights = state.per_layer(times, "times"), state.per_layer(weights, "weights")
    override_weights = state.per_override(override_weights)
    local = _check_pose(out, state, "out")
    chosen = state.select(characters)
    threshold = check_threshold(threshold)
    workers = threads_for(state, threads, chosen.size)
    if resolve(backend) == "numpy":
        _numpy_checks(state, times, weights, override_weights, chosen)
        pose = _reference.local_pose(state, times, weights, override_weights, chosen, threshold)
        for mine, theirs in zip(out.arrays(), pose.arrays(), strict=True):
            mine[chosen] = theirs
        return out
    run(
        state,
        chosen,
        times,
        weights,
        override_weights,
        threshold,
        local,
        state.no_palette,
        state.no_model,
        True,
        False,
        workers,
    )
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
    model = state.no_model if model_out is None else _check_out(model_out, state, "model_out", (np.float64,))
    chosen = state.select(characters)
    workers = threads_for(state, threads, chosen.size)
    if resolve(backend) == "numpy":
        with_rows = Pose(local.translations[chosen], local.rotations[chosen], local.scales[chosen])
        _write_matrices(state, with_rows, chosen, out, model_out)
        return out
    empty = state.no_layers
    run(state, chosen, empty, empty, state.no_overrides, 1.0, arrays, out, model, False, True, workers)
    return out


def _check_pose(pose: Any, state: FrameState, name: str) -> tuple[FloatArray, FloatArray, FloatArray]:
    if not isinstance(pose, Pose):
        raise InvalidInputError(f"{name} must be a Pose, got {type(pose).__name__}")
    shape = (state.num_characters, state.bank.num_joints)
    arrays = pose.arrays()
    for field, array, width in zip(("translations", "rotations", "scales"), arrays, (3, 4, 3), strict=True):
        if array.shape != (*shape, width) or not array.flags.c_contiguous or not array.flags.writeable:
            raise InvalidInputError(
                f"{name}.{field} must be a writable C-contiguous float64 array shaped {(*shape, width)}, "
                f"got {array.shape}"
            )
    return arrays


def _numpy_checks(
    state: FrameState, times: FloatArray, weights: FloatArray, override_weights: FloatArray, chosen: Int64Array
) -> None:
    problem = state.first_bad(times, weights, override_weights, chosen)
    if problem is not None:
        raise InvalidInputError(problem)


def _write_matrices(state: FrameState, local: Pose, chosen: Int64Array, out: np.ndarray, model_out: Any) -> None:
    model, palette = _reference.model_and_palette(state, local)
    if chosen is state.everyone:
        np.copyto(out, np.swapaxes(palette, -1, -2))  # column-major per matrix, cast to out's dtype
        if model_out is not None:
            np.copyto(model_out, model)
        return
    out[chosen] = np.swapaxes(palette, -1, -2)
    if model_out is not None:
        model_out[chosen] = model


def run(
    state: FrameState,
    chosen: Int64Array,
    times: FloatArray,
    weights: FloatArray,
    override_weights: FloatArray,
    threshold: float,
    local: tuple[FloatArray, FloatArray, FloatArray],
    palette: np.ndarray,
    model: FloatArray,
    blend: bool,
    compose: bool,
    threads: int,
    stage: Any = None,
) -> None:
    """One compiled call on ``threads`` threads; raises after it when characters were skipped for bad input.

    ``stage`` (with ``blend``; ``None``: none): a transition stage's inertialized and spring
    offsets, added to each character's pose between its blend and its compose, as (clock ``(C,)``,
    (starts, kinds, durations ``(C,)``), (quintic, spring decays, their fields), joints, bounds):
    what :func:`~engine.backend.stage.apply_offsets` takes (:meth:`engine.player.offsets.Offsets.in_pass`).
    """
    if chosen.flags.writeable:  # the kernels read it: one type for every index array (FrameState.everyone is read-only)
        chosen = chosen.view()
        chosen.flags.writeable = False
    layers, masks, overrides = state.kernel_inputs(times, weights, override_weights)
    inputs = (layers, masks, overrides, threshold, state.kernel_root(), state.bank.arrays)
    outputs = (local, palette, model, state.no_samples)
    scratch = state.scratch()
    blocks = compiled_module("engine.backend._threads").parallel_blocks(threads, chosen.size)  # numba's
    if blocks <= 1:
        skipped = kernels().run_serial(chosen, inputs, scratch, outputs, blend, compose, stage)
    else:
        flat = None
        if stage is not None:  # the parallel driver takes no tuple of tuples
            clock, (start, kinds, durations), decays, joints, bounds = stage
            flat = (clock, start, kinds, durations, *decays, joints, bounds)
        blocked = (scratch[0][:blocks], scratch[1][:blocks])
        skipped = kernels().run_parallel(chosen, *inputs, blocked, *outputs, blend, compose, flat)
    if skipped:
        raise InvalidInputError(
            state.first_bad(times, weights, override_weights, chosen) or f"{skipped} characters had bad input"
        )
