"""Bit packing: the chosen levels of a clip's tracks written out as a :class:`~engine.compress.clip.CompressedClip`."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.compress.clip import CompressedClip
from engine.compress.quantize import CONSTANT, DROP_SHIFT, SEGMENT_SAMPLES, UInt64Array, component_bits, quantize
from engine.compress.source import Source
from engine.compress.tracks import Tracks
from engine.errors import InvalidInputError
from engine.math._checks import IntArray


def pack_bits(values: UInt64Array, bits: Any) -> tuple[UInt64Array, IntArray]:
    """``values`` on ``bits`` bits each, one after the other from bit 0 (LSB first), plus a spare word.

    Returns the words and the first bit of every value.
    """
    bits = np.asarray(bits, dtype=np.uint64).reshape(-1)
    values = np.asarray(values, dtype=np.uint64).reshape(-1)
    position = np.cumsum(bits) - bits
    total = int(position[-1] + bits[-1]) if bits.size else 0
    words = np.zeros(total // 64 + 2, dtype=np.uint64)
    word = (position >> np.uint64(6)).astype(np.intp)
    shift = position & np.uint64(63)
    np.bitwise_or.at(words, word, values << shift)
    spill = (shift + bits > np.uint64(64)) & (shift > 0)
    np.bitwise_or.at(words, word[spill] + 1, values[spill] >> (np.uint64(64) - shift[spill]))
    return words, position.astype(np.int64)


def encode(source: Source, tracks: Tracks, levels: IntArray, info: dict[str, Any]) -> CompressedClip:
    """The clip of ``tracks`` at ``levels`` ``(S, A)``, as the format stores it."""
    count = source.skeleton.num_joints
    refs = np.zeros((count, 3), dtype=np.uint16)
    constant = np.argwhere(tracks.kinds == CONSTANT)
    refs[constant[:, 0], constant[:, 1]] = np.arange(len(constant))
    refs[tracks.joint, tracks.path] = np.arange(tracks.joint.size)
    constants = tracks.constants[constant[:, 0], constant[:, 1]].reshape(-1, 4)
    clip_ranges = np.concatenate((tracks.clip_min, tracks.clip_extent), axis=1).astype(np.float32).reshape(-1, 8)
    formats = (levels | (tracks.dropped.astype(np.intp) << DROP_SHIFT)).astype(np.uint8)
    ranges = np.concatenate((tracks.min_q, tracks.extent_q), axis=-1).astype(np.uint8)
    segment = tracks.segment_of_stored
    bits = component_bits(levels, tracks.extent_q)  # (S, A, 3)
    sample_bits = bits[segment]  # (K, A, 3)
    low, extent = tracks.segment_min[segment], tracks.segment_extent[segment]
    words, position = pack_bits(quantize(tracks.stored, low, extent, sample_bits), sample_bits)
    if words.size * 64 >= 2**32:
        raise InvalidInputError(
            f"clip {source.clip.name!r} needs {words.size * 8} bytes of samples; "
            "the format's bit offsets stop at 512 MiB"
        )
    per_sample = bits.sum(axis=(1, 2))
    first_bit = np.zeros(tracks.num_segments, dtype=np.int64)
    if tracks.joint.size:
        first_bit = position.reshape(segment.size, -1)[np.arange(tracks.num_segments) * SEGMENT_SAMPLES, 0]
    segments = np.stack((first_bit, per_sample), axis=1).astype(np.uint32).reshape(-1, 2)
    arrays: dict[str, np.ndarray] = {
        "kinds": tracks.kinds.copy(),
        "refs": refs,
        "constants": constants.astype(np.float32),
        "clip_ranges": clip_ranges,
        "formats": formats.reshape(tracks.num_segments, -1),
        "ranges": ranges.reshape(tracks.num_segments, -1, 6),
        "segments": segments,
        "words": words,
    }
    for array in arrays.values():
        array.flags.writeable = False
    grid = source.grid
    clip = source.clip.name
    return CompressedClip(
        clip, count, grid.start, grid.rate, grid.count, source.loops, info=info, skeleton=source.skeleton, **arrays
    )
