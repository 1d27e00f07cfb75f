"""Compiled frame kernels (numba): sample, blend, compose, write palettes.

One character at a time, everything in that character's scratch rows (a few kilobytes, in L1):

1. per weighted layer: the segment from the cursor (:func:`find_segment`), the rest pose copied
   into the layer's rows, then every group of the clip evaluated over its channels (loops over
   channels that the compiler turns into SIMD), exactly as :mod:`engine.anim.sampling` does;
2. blend over the layers, joint-wise (SIMD over joints): each layer's weight times its joint
   mask times, for every override covering it, ``1 - W·M_j`` (the override's weight and mask:
   :mod:`engine.backend.frame`), then sign alignment to the first weighted layer, weighted sums,
   the rest pose below the threshold, normalisation (as :func:`~engine.anim.blending.blend`);
3. down the joints in order: ``T·R·S``, ``model = model[parent] @ local``, ``palette = model @
   inverse_bind`` written column-major (the GLSL ``mat4`` layout of :func:`engine.math.gl_pack`).

The joint-wise steps write one scratch row per loop: LLVM vectorises a loop only when it can check
at run time that the rows it writes and reads do not overlap, and gives up beyond a few rows.

Sampling is bit-identical to :func:`~engine.anim.sampling.sample`; blend and matrices differ
from the numpy jobs by rounding only (``tests/backend``).

Every kernel has a serial driver and a ``parallel=True`` driver (``prange`` over blocks of
characters, each block with its own scratch); both call the same per-character function, so
their results are bit-identical. All are ``nogil`` and cached on disk (``cache=True``:
``__pycache__`` next to this file, or numba's user cache directory when that is read-only).
The frame lives in this one module on purpose, but for the decoder of compressed clips
(:func:`engine.compress._kernels.sample_clip`, inlined per layer): numba's cache is invalidated by
changes to the cached function's own file only, so :mod:`engine.backend.kernel_cache` keys it by
the decoder's modules too. And the per-character work is written out in one function on purpose:
numba reference-counts arrays passed to helper functions (atomic operations), which would cost
more than the arithmetic.

Inputs are trusted except for the per-frame numbers: a character whose times are not finite or
whose weights are negative or not finite is skipped (its outputs untouched) and counted; the
drivers return that count and the caller raises.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, prange

from engine.backend import _offset_kernels, _pose_offset_kernels, _sampling_kernels, kernel_cache
from engine.backend._offset_kernels import INERTIALIZE, SPRING
from engine.backend._pose_offset_kernels import offset_character, offset_rows
from engine.backend._sampling_kernels import find_segment, in_place
from engine.compress import _kernels as compressed_kernels
from engine.compress import library as compressed_library
from engine.compress import quantize as compressed_quantize
from engine.compress._kernels import sample_clip

# Taylor coefficients of sine and cosine, computed exactly as engine.anim.sampling._sin_cos does.
_SINE = np.array([(-1.0) ** k / math.factorial(2 * k + 1) for k in range(32)])
_COSINE = np.array([(-1.0) ** k / math.factorial(2 * k) for k in range(32)])


_POLY, _SLERP, _REST = range(3)  # group kinds of engine.backend.bank
# Unsigned offsets: numba wraps negative signed indices around (a select per access), unsigned ones not.
_0, _1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12 = (np.uint64(i) for i in range(13))

#: A character's scratch: ``SCRATCH_ROWS`` rows of ``J`` float64, then its model matrices.
_ACC = 0  # blended t (3), q (4), s (3); total weight; reference rotation (4); "has a reference" flag
_VALUE = 16  # one group's values (4 rows) and a slerp group's arc, arc², sine, cosine (4 rows)
_LOCAL = 24  # the local matrix's 3×3 part, row-major (9; its translation is the pose's rows 0..2)
_POSE = 36  # one layer's sampled pose: t (3), q (4), s (3)
_WEIGHT = 46  # one layer's weight per joint: weight × mask × the overrides' complements
SCRATCH_ROWS = 47
MODEL_FLOATS = 12  # per joint: model matrix rows 0..2, joint-major (the parent is read back)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _character(c: Any, inputs: Any, work: Any, model: Any, outputs: Any, blend: Any, compose: Any) -> Any:
    """One character: blend its layers (writing ``local``) or read ``local``, then compose.

    ``inputs`` = (layers, masks, overrides, threshold, root, bank), ``outputs`` = (local, palette,
    model_out, samples).

    ``work`` is this block's scratch ``(SCRATCH_ROWS, J)``. With ``blend`` every weighted layer
    is sampled and blended, and the pose written to ``local`` when it has rows; without it the
    local pose is read from ``local``. With ``compose`` the model matrices and the palette (each
    when its array has rows) are written. Returns 1 (nothing written) when a time is not
    finite, a weight negative or not finite, or an override weight outside ``[0, 1]``, else 0.

    ``overrides`` = (masks ``(G, J)``, spans ``(G, 2)`` int64: the layers ``[start, stop)`` each
    override covers, weights ``(G, C)``): a covered layer weighs ``1 - W·M_j`` of itself at joint
    ``j`` (``G`` may be 0).

    ``root`` = (joint, up): the joint every layer plays in place (-1: none) and the unit up
    ``(3,)`` of its parent space: right after sampling, its translation keeps only the height along
    up and its rotation loses its twist about up (:func:`~engine.anim.rootmotion.remove_planar`),
    before it is blended.

    ``local`` (three ``(C, J, width)`` arrays), ``palette`` ``(C, J, 4, 4)`` (``palette[c, j, k]``
    is column ``k`` of the matrix: column-major) and ``model_out`` ``(C, J, 4, 4)`` may be strided
    views: the crowd passes C-ordered arrays, the Animator its batch-innermost buffers transposed.
    ``samples`` ``(S, 11, J)`` (``S`` 0: not written) receives, for the ``s``-th weighted layer
    of character ``c``, its pose as sampled (rows 0-9, before the root is put in place) and its
    per-joint weight factor, the mask times the covering overrides' complements (row 10): what a
    capture's velocity needs (:mod:`engine.backend._capture_kernels`, one row at a time).

    Flat indices into the table are unsigned on purpose: numba wraps negative signed indices
    around (a select per access), which keeps these loops from vectorising.
    """
    layers, masks, overrides, threshold, root, bank = inputs
    local, palette, model_out, samples = outputs
    root_joint, up = root
    clip_ids, times, weights, cursors = layers
    override_masks, override_spans, override_weights = overrides
    parents, rest, inverse_bind, timelines, inverse_intervals, timeline_starts = bank[:6]
    table, table_starts, row_sizes, groups, group_starts, targets, affine = bank[6:13]
    compressed, compressed_arrays = bank[13], bank[14:]
    translations, rotations, scales = local
    n = parents.size
    arc, square, sine, cosine = _VALUE + 4, _VALUE + 5, _VALUE + 6, _VALUE + 7
    reference, referenced, total = _ACC + 11, _ACC + 15, _ACC + 10
    if blend:
        for layer in range(clip_ids.shape[0]):
            w = weights[layer, c]
            if not (w >= 0.0 and w < math.inf and math.isfinite(times[layer, c])):
                return 1
        for g in range(override_spans.shape[0]):
            w = override_weights[g, c]
            if not (w >= 0.0 and w <= 1.0):
                return 1
        fresh = True  # the first weighted layer writes the sums, later ones add to them
        slot = 0  # the rank of the layer among the character's weighted layers
        for layer in range(clip_ids.shape[0]):
            layer_weight = weights[layer, c]
            if not layer_weight > 0.0:
                continue
            k = clip_ids[layer, c]
            first = timeline_starts[k]
            t = times[layer, c]
            segment = find_segment(timelines, first, timeline_starts[k + 1] - first, t, cursors[layer, c])
            cursors[layer, c] = segment
            u = min(max((t - timelines[first + segment]) * inverse_intervals[first + segment], 0.0), 1.0)
            row = table_starts[k] + segment * row_sizes[k]
            for g in range(group_starts[k], group_starts[k + 1]):
                kind, component, width, terms = groups[g, 0], groups[g, 1], groups[g, 2], groups[g, 3]
                count = np.uint64(groups[g, 4])
                start, sine_terms = np.uint64(row + groups[g, 5]), groups[g, 7]
                at, contiguous = np.uint64(groups[g, 9]), groups[g, 10]
                # The group's values, channel by channel (as engine.anim.sampling): straight into the
                # layer's pose rows when its joints are consecutive, else into the value rows, then scattered.
                direct = contiguous >= 0
                dest = _POSE + component if direct else _VALUE
                column = np.uint64(contiguous if direct else 0)
                if kind == _SLERP:
                    arcs = np.uint64(row + groups[g, 6])
                    for i in range(count):
                        a = table[arcs + i] * u
                        work[arc, i] = a
                        work[square, i] = a * a
                        work[sine, i] = _SINE[sine_terms - 1]
                        work[cosine, i] = _COSINE[sine_terms - 1]
                    for term in range(sine_terms - 2, -1, -1):
                        for i in range(count):
                            work[sine, i] = work[sine, i] * work[square, i] + _SINE[term]
                            work[cosine, i] = work[cosine, i] * work[square, i] + _COSINE[term]
                    for i in range(count):
                        work[sine, i] *= work[arc, i]
                    for e in range(4):
                        begin, direction = start + np.uint64(e) * count, start + np.uint64(4 + e) * count
                        for i in range(count):
                            work[dest + e, column + i] = (
                                table[begin + i] * work[cosine, i] + table[direction + i] * work[sine, i]
                            )
                elif kind == _REST:
                    for e in range(width):
                        if direct:
                            for i in range(count):
                                work[dest + e, column + i] = rest[component + e, column + i]
                        else:
                            for i in range(count):
                                work[dest + e, i] = rest[component + e, targets[at + i]]
                else:
                    step = np.uint64(width) * count
                    for e in range(width):
                        c0 = start + np.uint64(e) * count
                        if terms == 1:
                            for i in range(count):
                                work[dest + e, column + i] = table[c0 + i]
                        elif terms == 2:
                            for i in range(count):
                                work[dest + e, column + i] = table[c0 + step + i] * u + table[c0 + i]
                        else:
                            for i in range(count):
                                v = table[c0 + 3 * step + i] * u + table[c0 + 2 * step + i]
                                v = v * u + table[c0 + step + i]
                                work[dest + e, column + i] = v * u + table[c0 + i]
                    if groups[g, 8]:  # cubic rotations are normalised
                        for i in range(count):
                            x, y, z = work[dest, column + i], work[dest + 1, column + i], work[dest + 2, column + i]
                            w = work[dest + 3, column + i]
                            norm = math.sqrt(x * x + y * y + z * z + w * w)
                            work[dest, column + i], work[dest + 1, column + i] = x / norm, y / norm
                            work[dest + 2, column + i], work[dest + 3, column + i] = z / norm, w / norm
                if not direct:
                    for e in range(width):
                        for i in range(count):
                            work[_POSE + component + e, targets[at + i]] = work[_VALUE + e, i]
            if compressed[k] >= 0:  # a compressed clip (no groups): decoded from its bits, every joint
                cursors[layer, c] = sample_clip(compressed_arrays, compressed[k], t, work, _POSE)
            if samples.shape[0]:  # a capture: the layer as sampled and its weight factor per joint
                for e in range(10):
                    for j in range(n):
                        samples[slot, e, j] = work[_POSE + e, j]
                for j in range(n):
                    samples[slot, 10, j] = masks[layer, j]
                for g in range(override_spans.shape[0]):
                    overriding = override_weights[g, c]
                    if overriding > 0.0 and override_spans[g, 0] <= layer < override_spans[g, 1]:
                        for j in range(n):
                            samples[slot, 10, j] *= 1.0 - overriding * override_masks[g, j]
            slot += 1
            if root_joint >= 0:  # in place: M⁻¹ · root (engine.anim.rootmotion.remove_planar)
                in_place(work, _POSE, root_joint, up)
            # --- blend the layer in, joint by joint; rotations aligned to the first weighted layer's
            # hemisphere (the reference rows hold the first layer's rotation until a weighted one comes)
            for j in range(n):
                work[_WEIGHT, j] = layer_weight * masks[layer, j]
            for g in range(override_spans.shape[0]):  # the overrides covering this layer (usually none)
                overriding = override_weights[g, c]
                if overriding > 0.0 and override_spans[g, 0] <= layer < override_spans[g, 1]:
                    for j in range(n):
                        work[_WEIGHT, j] *= 1.0 - overriding * override_masks[g, j]
            if fresh:  # one output row per loop (they vectorise)
                for j in range(n):
                    work[total, j] = work[_WEIGHT, j]
                for j in range(n):
                    work[referenced, j] = work[_WEIGHT, j]
                for e in range(10):
                    for j in range(n):
                        work[e, j] = work[_WEIGHT, j] * work[_POSE + e, j]
                for e in range(4):
                    for j in range(n):
                        work[reference + e, j] = work[_POSE + 3 + e, j]
            else:
                signed = _VALUE  # the weight with the sign that aligns the rotation to the reference
                for j in range(n):
                    dot = work[_POSE + 3, j] * work[reference, j] + work[_POSE + 4, j] * work[reference + 1, j]
                    dot += work[_POSE + 5, j] * work[reference + 2, j] + work[_POSE + 6, j] * work[reference + 3, j]
                    w = work[_WEIGHT, j]
                    work[signed, j] = math.copysign(w, dot) if work[referenced, j] > 0.0 else w
                for e in range(4):  # no reference yet (every earlier weight 0 here): this rotation
                    for j in range(n):
                        if not work[referenced, j] > 0.0:
                            work[reference + e, j] = work[_POSE + 3 + e, j]
                for j in range(n):  # max() as a select (numba's max() keeps the loop scalar)
                    w, seen = work[_WEIGHT, j], work[referenced, j]
                    work[referenced, j] = w if w > seen else seen
                for j in range(n):
                    work[total, j] += work[_WEIGHT, j]
                for e in range(3, 7):
                    for j in range(n):
                        work[e, j] += work[signed, j] * work[_POSE + e, j]
                for e in (0, 1, 2, 7, 8, 9):
                    for j in range(n):
                        work[e, j] += work[_WEIGHT, j] * work[_POSE + e, j]
            fresh = False
        if fresh:  # no weighted layer: only the rest pose
            for r in range(_ACC, _ACC + 16):
                for j in range(n):
                    work[r, j] = 0.0
        # --- the rest pose below the threshold, averages, normalised rotations (short loops: they vectorise)
        rest_weight, rest_signed, inverse_total, norm = _VALUE, _VALUE + 1, _VALUE + 2, _VALUE + 3
        for j in range(n):
            short = threshold - work[total, j]
            work[rest_weight, j] = 0.0 if short < 0.0 else short
        for j in range(n):
            dot = rest[3, j] * work[reference, j] + rest[4, j] * work[reference + 1, j]
            dot += rest[5, j] * work[reference + 2, j] + rest[6, j] * work[reference + 3, j]
            rest_share = work[rest_weight, j]
            work[rest_signed, j] = math.copysign(rest_share, dot) if work[referenced, j] > 0.0 else rest_share
        for j in range(n):
            work[inverse_total, j] = 1.0 / (threshold if threshold > work[total, j] else work[total, j])
        for e in (0, 1, 2, 7, 8, 9):
            for j in range(n):
                work[e, j] = (work[e, j] + work[rest_weight, j] * rest[e, j]) * work[inverse_total, j]
        for e in range(3, 7):
            for j in range(n):
                work[e, j] += work[rest_signed, j] * rest[e, j]
        for j in range(n):
            x, y, z, w = work[3, j], work[4, j], work[5, j], work[6, j]
            work[norm, j] = math.sqrt(x * x + y * y + z * z + w * w)
        for e in range(3, 7):
            for j in range(n):
                work[e, j] = work[e, j] / work[norm, j]
        if translations.shape[0]:  # the pose kept (a player's buffer), composed or not
            for j in range(n):
                for e in range(3):
                    translations[c, j, e] = work[e, j]
                    scales[c, j, e] = work[7 + e, j]
                for e in range(4):
                    rotations[c, j, e] = work[3 + e, j]
        if not compose:
            return 0
    else:
        for j in range(n):
            for e in range(3):
                work[e, j] = translations[c, j, e]
                work[7 + e, j] = scales[c, j, e]
            for e in range(4):
                work[3 + e, j] = rotations[c, j, e]
    # --- T·R·S of every joint (as engine.anim.local_to_model._trs_into): the 3×3 part in the local
    # rows, one row per loop (they vectorise); the translations stay in rows 0..2
    m = _LOCAL
    for j in range(n):
        work[m, j] = work[7, j] - (work[5, j] * work[5, j] + work[4, j] * work[4, j]) * (work[7, j] * 2.0)
    for j in range(n):
        work[m + 1, j] = (work[3, j] * work[4, j] - work[5, j] * work[6, j]) * (work[8, j] * 2.0)
    for j in range(n):
        work[m + 2, j] = (work[3, j] * work[5, j] + work[4, j] * work[6, j]) * (work[9, j] * 2.0)
    for j in range(n):
        work[m + 3, j] = (work[3, j] * work[4, j] + work[5, j] * work[6, j]) * (work[7, j] * 2.0)
    for j in range(n):
        work[m + 4, j] = work[8, j] - (work[3, j] * work[3, j] + work[5, j] * work[5, j]) * (work[8, j] * 2.0)
    for j in range(n):
        work[m + 5, j] = (work[4, j] * work[5, j] - work[3, j] * work[6, j]) * (work[9, j] * 2.0)
    for j in range(n):
        work[m + 6, j] = (work[3, j] * work[5, j] - work[4, j] * work[6, j]) * (work[7, j] * 2.0)
    for j in range(n):
        work[m + 7, j] = (work[4, j] * work[5, j] + work[3, j] * work[6, j]) * (work[8, j] * 2.0)
    for j in range(n):
        work[m + 8, j] = work[9, j] - (work[3, j] * work[3, j] + work[4, j] * work[4, j]) * (work[9, j] * 2.0)
    # --- down the joints: model = model[parent] @ local (joint-major in ``model``, read back by
    # the children; a parent that is the previous joint, as along chains, is still in registers),
    # palette = model @ inverse_bind stored column-major (the model's last row is 0 0 0 1)
    m00 = m01 = m02 = m03 = m10 = m11 = m12 = m13 = m20 = m21 = m22 = m23 = 0.0
    for j in range(n):
        l00, l01, l02, l03 = work[m, j], work[m + 1, j], work[m + 2, j], work[0, j]
        l10, l11, l12, l13 = work[m + 3, j], work[m + 4, j], work[m + 5, j], work[1, j]
        l20, l21, l22, l23 = work[m + 6, j], work[m + 7, j], work[m + 8, j], work[2, j]
        parent = parents[j]
        if parent < 0:
            m00, m01, m02, m03 = l00, l01, l02, l03
            m10, m11, m12, m13 = l10, l11, l12, l13
            m20, m21, m22, m23 = l20, l21, l22, l23
        else:
            if parent == j - 1:
                p0, p1, p2, p3 = m00, m01, m02, m03
                p4, p5, p6, p7 = m10, m11, m12, m13
                p8, p9, p10, p11 = m20, m21, m22, m23
            else:
                q = np.uint64(12 * parent)
                p0, p1, p2, p3 = model[q], model[q + _1], model[q + _2], model[q + _3]
                p4, p5, p6, p7 = model[q + _4], model[q + _5], model[q + _6], model[q + _7]
                p8, p9, p10, p11 = model[q + _8], model[q + _9], model[q + _10], model[q + _11]
            m00, m01, m02 = (
                p0 * l00 + p1 * l10 + p2 * l20,
                p0 * l01 + p1 * l11 + p2 * l21,
                p0 * l02 + p1 * l12 + p2 * l22,
            )
            m03 = p0 * l03 + p1 * l13 + p2 * l23 + p3
            m10, m11, m12 = (
                p4 * l00 + p5 * l10 + p6 * l20,
                p4 * l01 + p5 * l11 + p6 * l21,
                p4 * l02 + p5 * l12 + p6 * l22,
            )
            m13 = p4 * l03 + p5 * l13 + p6 * l23 + p7
            m20, m21, m22 = (
                p8 * l00 + p9 * l10 + p10 * l20,
                p8 * l01 + p9 * l11 + p10 * l21,
                p8 * l02 + p9 * l12 + p10 * l22,
            )
            m23 = p8 * l03 + p9 * l13 + p10 * l23 + p11
        o = np.uint64(12 * j)
        model[o], model[o + _1], model[o + _2], model[o + _3] = m00, m01, m02, m03
        model[o + _4], model[o + _5], model[o + _6], model[o + _7] = m10, m11, m12, m13
        model[o + _8], model[o + _9], model[o + _10], model[o + _11] = m20, m21, m22, m23
        b = np.uint64(16 * j)  # inverse_bind[j] in the flat inverse binds: row i at b + 4 i
        uc, uj = np.uint64(c), np.uint64(j)  # palette[c, j, k] is column k of the matrix (column-major)
        # the palette when asked for (an empty one: the model matrices only)
        if affine and palette.shape[0]:  # inverse binds with last row 0 0 0 1 (the usual case): 36 products, not 48
            for k in range(3):
                uk, bk = np.uint64(k), b + np.uint64(k)
                b0, b1, b2 = inverse_bind[bk], inverse_bind[bk + _4], inverse_bind[bk + _8]
                palette[uc, uj, uk, _0] = m00 * b0 + m01 * b1 + m02 * b2
                palette[uc, uj, uk, _1] = m10 * b0 + m11 * b1 + m12 * b2
                palette[uc, uj, uk, _2] = m20 * b0 + m21 * b1 + m22 * b2
                palette[uc, uj, uk, _3] = 0.0
            b0, b1, b2 = inverse_bind[b + _3], inverse_bind[b + _7], inverse_bind[b + _11]
            palette[uc, uj, _3, _0] = m00 * b0 + m01 * b1 + m02 * b2 + m03
            palette[uc, uj, _3, _1] = m10 * b0 + m11 * b1 + m12 * b2 + m13
            palette[uc, uj, _3, _2] = m20 * b0 + m21 * b1 + m22 * b2 + m23
            palette[uc, uj, _3, _3] = 1.0
        elif palette.shape[0]:
            for k in range(4):
                uk, bk = np.uint64(k), b + np.uint64(k)
                b0, b1, b2, b3 = inverse_bind[bk], inverse_bind[bk + _4], inverse_bind[bk + _8], inverse_bind[bk + _12]
                palette[uc, uj, uk, _0] = m00 * b0 + m01 * b1 + m02 * b2 + m03 * b3
                palette[uc, uj, uk, _1] = m10 * b0 + m11 * b1 + m12 * b2 + m13 * b3
                palette[uc, uj, uk, _2] = m20 * b0 + m21 * b1 + m22 * b2 + m23 * b3
                palette[uc, uj, uk, _3] = b3
        if model_out.shape[0]:  # rows 0..2 as composed above (model[o ...]), then 0 0 0 1
            for e in range(12):
                model_out[c, j, e // 4, e % 4] = model[o + np.uint64(e)]
            for e in range(3):
                model_out[c, j, 3, e] = 0.0
            model_out[c, j, 3, 3] = 1.0
    return 0


# --- drivers: serial, and parallel over blocks of characters (one scratch per block) ----------


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _posed(c: Any, inputs: Any, work: Any, model: Any, outputs: Any, flags: Any, stage: Any, rows: Any) -> Any:
    """:func:`_character` of ``c`` (``flags`` = blend, compose), the transition stage's offsets between the two.

    ``stage`` = (clock, transitions, decays, joints, bounds) as :func:`offset_character` takes
    them, ``rows`` its scratch rows: a character in an inertialized or spring transition is
    blended into ``local``, offset there, then composed.
    """
    blend, compose = flags
    clock, transitions, decays, joints, bounds = stage
    staged = blend and transitions[1][c] in (INERTIALIZE, SPRING)
    skipped = _character(c, inputs, work, model, outputs, blend, compose and not staged)
    if skipped or not staged:
        return skipped
    offset_character(c, clock, transitions, decays, outputs[0], joints, bounds, rows)
    return _character(c, inputs, work, model, outputs, False, True) if compose else 0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def run_serial(characters: Any, inputs: Any, scratch: Any, outputs: Any, blend: Any, compose: Any, stage: Any) -> Any:
    """:func:`_character` for every index in ``characters``; returns how many were skipped (bad input).

    ``scratch`` = (work ``(B, SCRATCH_ROWS, J)``, model ``(B, MODEL_FLOATS · J)``) float64 for
    ``B`` blocks; the serial driver uses block 0. ``stage``: ``None``, or as :func:`_posed` takes
    it (a ``None`` compiles without it).
    """
    work, model = scratch[0][0], scratch[1][0]
    skipped = 0
    if stage is None:
        for i in range(characters.size):
            skipped += _character(characters[i], inputs, work, model, outputs, blend, compose)
        return skipped
    rows = offset_rows(stage[3].size)
    for i in range(characters.size):
        skipped += _posed(characters[i], inputs, work, model, outputs, (blend, compose), stage, rows)
    return skipped


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def run_parallel(
    characters: Any,
    layers: Any,
    masks: Any,
    overrides: Any,
    threshold: Any,
    root: Any,
    bank: Any,
    scratch: Any,
    local: Any,
    palette: Any,
    model_out: Any,
    samples: Any,
    blend: Any,
    compose: Any,
    stage: Any,
) -> Any:
    """:func:`run_serial` with one contiguous block of characters per scratch block, blocks in parallel.

    The arguments come one by one (a parallel loop's body takes no tuple of tuples): the inputs
    and outputs are packed for :func:`_character` inside the loop; ``stage``: ``None``, or
    (clock, starts, kinds, durations, quintic, spring, their fields, joints, bounds), flat.
    """
    blocks = scratch[0].shape[0]
    count = characters.size
    skipped = 0
    for b in prange(blocks):
        work, model = scratch[0][b], scratch[1][b]
        inputs, outputs = (layers, masks, overrides, threshold, root, bank), (local, palette, model_out, samples)
        if stage is None:
            for i in range(b * count // blocks, (b + 1) * count // blocks):
                skipped += _character(characters[i], inputs, work, model, outputs, blend, compose)
        else:
            clock, start, kinds, durations, quintic, spring, at_quintic, at_spring, joints, bounds = stage
            posing = (clock, (start, kinds, durations), (quintic, spring, at_quintic, at_spring), joints, bounds)
            rows = offset_rows(joints.size)
            for i in range(b * count // blocks, (b + 1) * count // blocks):
                skipped += _posed(characters[i], inputs, work, model, outputs, (blend, compose), posing, rows)
    return skipped


# the frame kernels inline the segment search, the compressed clips' decoder and the stage's offsets: their cache
# follows those modules too
INLINED = (
    _sampling_kernels,
    compressed_kernels,
    compressed_quantize,
    compressed_library,
    _pose_offset_kernels,
    _offset_kernels,
)
kernel_cache.follow(run_serial, __file__, INLINED)
