"""Compiled sampling of compressed clips (numba): the only module of :mod:`engine.compress` that imports numba.

:func:`sample_clip` samples one clip of a packed :class:`~engine.compress.library.ClipLibrary` at
one time for one character and writes joints ``[first, stop)`` into a component-major block
``out[row + e, j]`` (translation rows 0-2, rotation x y z w 3-6, scale 7-9: the layout of a
character's pose rows in :mod:`engine.backend._kernels`). It is ``inline="always"``, so a frame
kernel that calls it per layer compiles it into its own loop (no call, no array reference
counting). :func:`sample_many` drives it over a crowd into ``(C, J, 3/4/3)`` arrays, serially or
with ``prange`` over blocks of characters.

Every expression repeats :mod:`engine.compress.quantize` and :mod:`engine.compress.clip` in the
same order, so the compiled samples equal the numpy reference's bit for bit
(``tests/compress/test_kernels.py``). Inputs are trusted: :mod:`engine.compress.runtime`
validates clip indices, times and shapes, and the library file was validated when loaded.
Everything compiled lives in this module (numba's cache follows a function's own file only).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import get_num_threads, njit, prange, set_num_threads

from engine.compress.library import COLUMN
from engine.compress.quantize import BIT_LENGTH, INVERSE_SCALE, LEVEL_BITS, RANGE_UNIT, ZERO_BIT_FRACTION

_JOINTS, _SAMPLES, _LOOPS, _ANIMATED = COLUMN["joints"], COLUMN["samples"], COLUMN["loops"], COLUMN["animated"]
_KINDS, _CONSTANTS, _CLIP_RANGES = COLUMN["kinds_row"], COLUMN["constants_row"], COLUMN["clip_ranges_row"]
_FORMATS, _SEGMENTS, _WORDS, _REST = (
    COLUMN["formats_row"],
    COLUMN["segments_row"],
    COLUMN["words_row"],
    COLUMN["rest_row"],
)
_OFFSET = np.array([0, 3, 7])  # first pose row of translation, rotation, scale
_WIDTH = np.array([3, 4, 3])
_BITS = LEVEL_BITS.astype(np.int64)
_LENGTH = BIT_LENGTH
_INVERSE, _ZERO_BIT, _RANGE_UNIT = INVERSE_SCALE, ZERO_BIT_FRACTION, RANGE_UNIT
_U6, _U63, _U64, _U1 = np.uint64(6), np.uint64(63), np.uint64(64), np.uint64(1)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _component_bits(level_bits: Any, extent: Any, widest: Any) -> Any:
    """Bits of one component (as :func:`engine.compress.quantize.component_bits`), without branches."""
    shift = _LENGTH[widest] - _LENGTH[extent]
    shift -= np.int64((np.int64(extent) << shift) > widest)
    return max(level_bits - shift, 0) * np.int64(extent > 0)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _format(byte: Any, e0: Any, e1: Any, e2: Any) -> Any:
    """Dropped component and the three components' bits of a (segment, track): its format byte, its extents."""
    level, widest = _BITS[byte & 31], max(e0, e1, e2)
    return (
        byte >> 5,
        _component_bits(level, e0, widest),
        _component_bits(level, e1, widest),
        _component_bits(level, e2, widest),
    )


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _mask(value: Any, bits: Any) -> Any:
    """The low ``bits`` bits (0 to 32) of ``value``, as a float."""
    return float(np.int64(value & ((_U1 << np.uint64(bits)) - _U1)))


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _bounds(low: Any, extent: Any, min_q: Any, extent_q: Any) -> Any:
    """``(segment_min, segment_extent)`` of one component (:func:`~engine.compress.quantize.segment_bounds`)."""
    low64, extent64 = np.float64(low), np.float64(extent)
    return low64 + extent64 * (min_q * _RANGE_UNIT), extent64 * (extent_q * _RANGE_UNIT)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def sample_clip(library: Any, clip: Any, t: Any, cursor: Any, first: Any, stop: Any, out: Any, row: Any) -> Any:  # noqa: ARG001
    """Write the pose of clip ``clip`` at time ``t`` for joints ``[first, stop)`` into ``out[row + e, j]``.

    ``library`` is :attr:`ClipLibrary.arrays <engine.compress.library.ClipLibrary.arrays>`.
    Returns the stored index of the first key (the cursor of the next call). Uniform samples need
    no search, so ``cursor`` is not read: it is there so that a frame kernel keeps one cursor per
    layer whatever the clip's storage.
    """
    table, times, kinds, refs, constants, clip_ranges, formats, ranges, segments, words, rest = library
    info = table[clip]
    samples, loops, animated = info[_SAMPLES], info[_LOOPS], info[_ANIMATED]
    key0, key1, u = 0, 0, 0.0
    if samples > 1:
        last = samples - 1
        x = (t - times[clip, 0]) * times[clip, 1]
        x = min(max(x, 0.0), float(last))
        key0 = min(math.floor(x), last)
        key1 = min(key0 + 1, last)
        u = x - key0
        if loops:
            key0 = 0 if key0 == last else key0
            key1 = 0 if key1 == last else key1
    segment0, segment1 = info[_SEGMENTS] + (key0 >> 4), info[_SEGMENTS] + (key1 >> 4)
    position0 = np.uint64(segments[segment0, 0]) + np.uint64(key0 & 15) * np.uint64(segments[segment0, 1])
    position1 = np.uint64(segments[segment1, 0]) + np.uint64(key1 & 15) * np.uint64(segments[segment1, 1])
    format0 = info[_FORMATS] + (key0 >> 4) * animated
    format1 = info[_FORMATS] + (key1 >> 4) * animated
    same = segment0 == segment1
    first_word = np.uint64(info[_WORDS])
    kinds_row, rest_row, constants_row, ranges_row = info[_KINDS], info[_REST], info[_CONSTANTS], info[_CLIP_RANGES]
    keep = 1.0 - u
    track = 0
    for j in range(stop):
        for p in range(3):
            kind = kinds[kinds_row + j, p]
            offset = row + _OFFSET[p]
            if kind == 2:  # animated: both keys, then the interpolation
                f0, f1 = format0 + track, format1 + track
                drop0, b00, b01, b02 = _format(formats[f0], ranges[f0, 3], ranges[f0, 4], ranges[f0, 5])
                drop1, b10, b11, b12 = drop0, b00, b01, b02
                if not same:  # the second key lies in the next segment: its own format and ranges
                    drop1, b10, b11, b12 = _format(formats[f1], ranges[f1, 3], ranges[f1, 4], ranges[f1, 5])
                if j >= first:
                    rotation = p == 1
                    r = ranges_row + track
                    a0, a1, a2, a3, c0, c1, c2, c3 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
                    offset0 = offset1 = offset2 = step0 = step1 = step2 = 0.0
                    for key in range(2):  # the key's three components (CompressedClip.decode_keys)
                        f = f0 if key == 0 else f1
                        drop = drop0 if key == 0 else drop1
                        position = position0 if key == 0 else position1
                        b0 = b00 if key == 0 else b10
                        b1 = b01 if key == 0 else b11
                        b2 = b02 if key == 0 else b12
                        if key == 0 or not same:  # segment ranges (segment_bounds), shared by keys of one segment
                            k0 = 1 if drop == 0 else 0
                            k1 = 2 if drop <= 1 else 1
                            k2 = 3 if drop <= 2 else 2
                            low0, extent0 = _bounds(
                                clip_ranges[r, k0], clip_ranges[r, 4 + k0], ranges[f, 0], ranges[f, 3]
                            )
                            low1, extent1 = _bounds(
                                clip_ranges[r, k1], clip_ranges[r, 4 + k1], ranges[f, 1], ranges[f, 4]
                            )
                            low2, extent2 = _bounds(
                                clip_ranges[r, k2], clip_ranges[r, 4 + k2], ranges[f, 2], ranges[f, 5]
                            )
                            # dequantize's offset and step of each component, for every sample of the segment
                            offset0, step0 = low0 + extent0 * _ZERO_BIT[b0], extent0 * _INVERSE[b0]
                            offset1, step1 = low1 + extent1 * _ZERO_BIT[b1], extent1 * _INVERSE[b1]
                            offset2, step2 = low2 + extent2 * _ZERO_BIT[b2], extent2 * _INVERSE[b2]
                        # one 64-bit window (two words; the spare word keeps the last read inside) holds
                        # the three components when they fit, else each component gets its own
                        q0 = q1 = q2 = 0.0
                        start = position
                        for part in range(3):
                            word, shift = first_word + (start >> _U6), start & _U63
                            window = words[word] >> shift
                            if shift > 0:
                                window |= words[word + _U1] << (_U64 - shift)
                            if b0 + b1 + b2 <= 64:
                                q0 = _mask(window, b0)
                                q1 = _mask(window >> np.uint64(b0), b1) if b1 > 0 else 0.0
                                q2 = _mask(window >> np.uint64(b0 + b1), b2) if b2 > 0 else 0.0
                                break
                            if part == 0:
                                q0, start = _mask(window, b0), start + np.uint64(b0)
                            elif part == 1:
                                q1, start = _mask(window, b1), start + np.uint64(b1)
                            else:
                                q2 = _mask(window, b2)
                        v0 = offset0 + step0 * q0  # dequantize
                        v1 = offset1 + step1 * q1
                        v2 = offset2 + step2 * q2
                        m = math.sqrt(max(1.0 - (v0 * v0 + v1 * v1 + v2 * v2), 0.0)) if rotation else 0.0
                        # the dropped component goes in at ``drop``, the kept ones around it
                        x = m if drop == 0 else v0
                        y = v0 if drop == 0 else (m if drop == 1 else v1)
                        z = v1 if drop <= 1 else (m if drop == 2 else v2)
                        w = v2 if drop <= 2 else m
                        if key == 0:
                            a0, a1, a2, a3 = x, y, z, w
                        else:
                            c0, c1, c2, c3 = x, y, z, w
                    sign = -1.0 if rotation and a0 * c0 + a1 * c1 + a2 * c2 + a3 * c3 < 0.0 else 1.0
                    m0, m1 = keep * a0 + u * (sign * c0), keep * a1 + u * (sign * c1)
                    m2, m3 = keep * a2 + u * (sign * c2), keep * a3 + u * (sign * c3)
                    if rotation:
                        norm = math.sqrt(m0 * m0 + m1 * m1 + m2 * m2 + m3 * m3)
                        inverse = 1.0 / (norm if norm > 0.0 else 1.0)
                        m0, m1, m2, m3 = m0 * inverse, m1 * inverse, m2 * inverse, m3 * inverse
                        out[offset + 3, j] = m3
                    out[offset, j], out[offset + 1, j], out[offset + 2, j] = m0, m1, m2
                position0 += np.uint64(b00 + b01 + b02)
                position1 += np.uint64(b10 + b11 + b12)
                track += 1
            elif j >= first:
                if kind == 0:
                    for e in range(_WIDTH[p]):
                        out[offset + e, j] = rest[rest_row + j, _OFFSET[p] + e]
                else:
                    c = constants_row + refs[kinds_row + j, p]
                    x0, x1, x2 = np.float64(constants[c, 0]), np.float64(constants[c, 1]), np.float64(constants[c, 2])
                    if p == 1:
                        x3 = np.float64(constants[c, 3])
                        norm = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2 + x3 * x3)
                        inverse = 1.0 / (norm if norm > 0.0 else 1.0)
                        x0, x1, x2, x3 = x0 * inverse, x1 * inverse, x2 * inverse, x3 * inverse
                        out[offset + 3, j] = x3
                    out[offset, j], out[offset + 1, j], out[offset + 2, j] = x0, x1, x2
    return key0


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _character(library: Any, c: Any, clips: Any, times: Any, cursors: Any, scratch: Any, local: Any) -> None:
    """Character ``c``: sample into its scratch rows, then copy them to ``local`` (three ``(C, J, width)`` arrays)."""
    translations, rotations, scales = local
    joints = translations.shape[1]
    cursors[c] = sample_clip(library, clips[c], times[c], cursors[c], 0, joints, scratch, 0)
    for j in range(joints):
        for e in range(3):
            translations[c, j, e] = scratch[e, j]
            scales[c, j, e] = scratch[7 + e, j]
        for e in range(4):
            rotations[c, j, e] = scratch[3 + e, j]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def sample_serial(
    library: Any, characters: Any, clips: Any, times: Any, cursors: Any, scratch: Any, local: Any
) -> None:
    """:func:`_character` for every index in ``characters``, with scratch block 0 ``(10, J)``."""
    for i in range(characters.size):
        _character(library, characters[i], clips, times, cursors, scratch[0], local)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def sample_parallel(
    library: Any, characters: Any, clips: Any, times: Any, cursors: Any, scratch: Any, local: Any
) -> None:
    """:func:`sample_serial` with one contiguous block of characters per scratch block, blocks in parallel."""
    blocks = scratch.shape[0]
    count = characters.size
    for b in prange(blocks):
        for i in range(b * count // blocks, (b + 1) * count // blocks):
            _character(library, characters[i], clips, times, cursors, scratch[b], local)


def sample_many(
    library: Any, characters: Any, clips: Any, times: Any, cursors: Any, scratch: Any, local: Any, threads: int
) -> None:
    """The serial driver, or the parallel one on ``threads`` threads (one scratch block each)."""
    if threads <= 1:
        sample_serial(library, characters, clips, times, cursors, scratch, local)
        return
    if get_num_threads() != threads:
        set_num_threads(threads)
    sample_parallel(library, characters, clips, times, cursors, scratch[:threads], local)
