"""The compiled decoder of compressed clips (numba): the only module of :mod:`engine.compress` that imports numba.

:func:`sample_clip` samples one clip at one time for one character and writes its pose into a
component-major block ``out[row + e, j]`` (translation rows 0-2, rotation x y z w 3-6, scale 7-9:
a character's pose rows in :mod:`engine.backend._kernels`, whose frame kernels inline it per
layer). It reads :func:`~engine.compress.library.kernel_arrays`: the clips' bits as a library
file holds them, each segment's dequantization (decoded once by the numpy reference's code), each
clip's static pose (what its default and constant tracks hold) and where each animated track goes,
so that per sample only the animated tracks' bits are read, dequantized and interpolated.

Every expression repeats :mod:`engine.compress.quantize` and :mod:`engine.compress.clip` in the
same order, so the compiled samples equal the numpy reference's bit for bit
(``tests/backend/test_compressed.py``). Inputs are trusted: the bank validated the clips, the
library file was validated when loaded, the frame kernels check times.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from engine.compress.library import BITS_SHIFT, KERNEL_FIELDS

_SAMPLES, _LOOPS, _ANIMATED, _TRACKS, _DECODING, _SEGMENTS, _WORDS = range(len(KERNEL_FIELDS))
_U6, _U63, _U64, _U1 = np.uint64(6), np.uint64(63), np.uint64(64), np.uint64(1)
_FIELD = np.int64((1 << BITS_SHIFT) - 1)


@njit(nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _window(words: Any, first_word: Any, position: Any) -> Any:
    """The 64 bits of ``words`` from bit ``position`` on (two words; the spare word keeps the last read inside).

    Without a branch: the second word shifted left by ``64 - shift`` in two steps is 0 when ``shift`` is 0.
    """
    word, shift = first_word + (position >> _U6), position & _U63
    return (words[word] >> shift) | ((words[word + _U1] << _U1) << (_U63 - shift))


@njit(nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _field(window: Any, bits: Any) -> Any:
    """The low ``bits`` bits (0 to 32) of ``window``, as a float."""
    return float(np.int64(window & ((_U1 << bits) - _U1)))


@njit(nogil=True, error_model="numpy", boundscheck=False, inline="always")
def sample_clip(arrays: Any, clip: Any, t: Any, out: Any, row: Any) -> Any:
    """Write the pose of clip ``clip`` at time ``t`` into ``out[row + e, j]``; returns the first key's index.

    ``arrays`` is :func:`~engine.compress.library.kernel_arrays`' tuple. The static pose is copied
    in, then every animated track is decoded at its two keys and interpolated over its rows.
    """
    table, times, decoding, segments, words, statics, tracks = arrays
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
    for e in range(10):
        for j in range(statics.shape[2]):
            out[row + e, j] = statics[clip, e, j]
    segment0, segment1 = info[_SEGMENTS] + (key0 >> 4), info[_SEGMENTS] + (key1 >> 4)
    position0 = np.uint64(segments[segment0, 0]) + np.uint64(key0 & 15) * np.uint64(segments[segment0, 1])
    position1 = np.uint64(segments[segment1, 0]) + np.uint64(key1 & 15) * np.uint64(segments[segment1, 1])
    decoding0 = info[_DECODING] + (key0 >> 4) * animated  # the keys' segments' decoding rows
    decoding1 = info[_DECODING] + (key1 >> 4) * animated
    first_word = np.uint64(info[_WORDS])
    keep = 1.0 - u
    for track in range(animated):
        r = info[_TRACKS] + track
        j, offset = tracks[r, 0], row + tracks[r, 1]
        rotation = tracks[r, 1] == 3
        a0, a1, a2, a3, c0, c1, c2, c3 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        for key in range(2):  # the key's three components (CompressedClip.decode_keys)
            d = (decoding0 if key == 0 else decoding1) + track
            packed, drop = np.int64(decoding[d, 6]), np.int64(decoding[d, 7])
            b0, b1 = np.uint64(packed & _FIELD), np.uint64((packed >> BITS_SHIFT) & _FIELD)
            b2 = np.uint64(packed >> (2 * BITS_SHIFT))
            position = position0 if key == 0 else position1
            window = _window(words, first_word, position)
            q0 = _field(window, b0)
            if b0 + b1 + b2 <= _U64:  # one window holds the three components
                q1, q2 = _field(window >> b0, b1), _field(window >> (b0 + b1), b2) if b2 > 0 else 0.0
            else:  # 32-bit components: a window each
                q1 = _field(_window(words, first_word, position + b0), b1)
                q2 = _field(_window(words, first_word, position + b0 + b1), b2)
            if key == 0:
                position0 += b0 + b1 + b2
            else:
                position1 += b0 + b1 + b2
            v0 = decoding[d, 0] + decoding[d, 3] * q0  # dequantize
            v1 = decoding[d, 1] + decoding[d, 4] * q1
            v2 = decoding[d, 2] + decoding[d, 5] * q2
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
    return key0
