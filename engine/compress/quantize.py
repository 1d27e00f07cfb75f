"""The numbers of the compressed format: track kinds, bit rates, range reduction, the one copy of each formula.

A compressed clip holds ``N`` uniformly spaced samples of every animated track, in segments of
:data:`SEGMENT_SAMPLES`. Each stored value is three components (a translation or scale, or a
rotation without one component) quantized in two stages of range reduction:

1. per clip and component: ``clip_min``, ``clip_extent`` (float32);
2. per segment and component, inside the clip range on :data:`RANGE_STEPS` steps: the bytes
   ``min_q``, ``extent_q``, giving ``segment_min = clip_min + clip_extent · (min_q · u)`` and
   ``segment_extent = clip_extent · (extent_q · u)`` with ``u`` = :data:`RANGE_UNIT` (1/255 in
   float64; :func:`segment_bounds`);
3. per sample: an unsigned integer of ``bits`` bits, ``value = segment_min + segment_extent · q /
   (2^bits − 1)`` (as an offset and a step per segment, :func:`dequantize`). A level (:data:`LEVEL_BITS`),
   chosen per segment and track, gives the widest component its bits and each narrower one fewer
   (:func:`component_bits`), so all three are quantized with about the same step.

A rotation stores three of its four components: per segment the one with the largest smallest
magnitude is dropped, each sample's sign is chosen to make it positive, and it comes back as
``sqrt(1 − |v|²)`` (:func:`rebuild_quaternion`). Vectors use the same path with "component 3"
dropped (they have none; the track's path tells the two apart). Between samples rotations are
normalised lerps along the short arc and vectors lerps (:func:`interpolate`). The compiled decoder
(:mod:`engine.compress._kernels`) reads each segment's :func:`dequantization` as made here, and
writes the per-sample expressions in the same order: both give the same bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from engine.math._checks import FloatArray

#: Samples per segment (the last segment of a clip may hold fewer).
SEGMENT_SAMPLES = 16
#: Bits per component of each bit-rate level (a level index fits in 5 bits of the format byte).
LEVEL_BITS = np.array([*range(1, 24), 32], dtype=np.uint8)
#: Steps of the per-segment range inside the clip range (one byte each for minimum and extent).
RANGE_STEPS = 255
#: One step of a segment range, as a fraction of the clip range (decoders multiply by it).
RANGE_UNIT = 1.0 / RANGE_STEPS
#: Track kinds: the rest value (nothing stored), one constant value, or animated samples.
DEFAULT, CONSTANT, ANIMATED = 0, 1, 2
#: Paths in the order of the pose: translation, rotation, scale.
TRANSLATION, ROTATION, SCALE = 0, 1, 2
#: Components per path, and the float offset of each path in a ``(10, J)`` component-major pose.
PATH_WIDTH = (3, 4, 3)
PATH_OFFSET = (0, 3, 7)
#: The "dropped component" of a vector track: it has no fourth component.
NO_DROP = 3
#: Format byte of a (segment, track): level index in the low 5 bits, dropped component above.
LEVEL_MASK, DROP_SHIFT = 0x1F, 5

UInt8Array = npt.NDArray[np.uint8]
UInt64Array = npt.NDArray[np.uint64]


def stored_components(dropped: Any) -> npt.NDArray[np.intp]:
    """Indices ``(..., 3)`` of the components kept when ``dropped`` ``(...)`` is dropped (3: vectors keep 0 1 2)."""
    e = np.arange(3)
    return e + (e >= np.asarray(dropped)[..., None])


def segment_bounds(clip_min: Any, clip_extent: Any, min_q: Any, extent_q: Any) -> tuple[FloatArray, FloatArray]:
    """``(segment_min, segment_extent)`` from the float32 clip range and the segment's range bytes."""
    low = np.asarray(clip_min, dtype=np.float64)
    extent = np.asarray(clip_extent, dtype=np.float64)
    first = np.asarray(min_q, dtype=np.float64) * RANGE_UNIT
    return low + extent * first, extent * (np.asarray(extent_q, dtype=np.float64) * RANGE_UNIT)


def segment_range_bytes(
    low: FloatArray, high: FloatArray, clip_min: FloatArray, clip_extent: FloatArray
) -> tuple[UInt8Array, UInt8Array]:
    """Range bytes ``(min_q, extent_q)`` whose segment range holds ``[low, high]`` (rounded outwards)."""
    safe = np.where(clip_extent > 0.0, clip_extent, 1.0)
    first = np.floor((low - clip_min) / safe * RANGE_STEPS)
    last = np.ceil((high - clip_min) / safe * RANGE_STEPS)
    first = np.clip(np.where(clip_extent > 0.0, first, 0.0), 0, RANGE_STEPS)
    last = np.clip(np.where(clip_extent > 0.0, last, 0.0), first, RANGE_STEPS)
    return first.astype(np.uint8), (last - first).astype(np.uint8)


def clip_range(low: FloatArray, high: FloatArray) -> tuple[np.ndarray, np.ndarray]:
    """Float32 ``(clip_min, clip_extent)`` whose range ``[min, min + extent]`` (in float64) holds ``[low, high]``."""
    clip_min = low.astype(np.float32)
    below = clip_min.astype(np.float64) > low
    clip_min[below] = np.nextafter(clip_min[below], np.float32(-np.inf))
    extent = (high - clip_min.astype(np.float64)).astype(np.float32)
    short = clip_min.astype(np.float64) + extent.astype(np.float64) < high
    extent[short] = np.nextafter(extent[short], np.float32(np.inf))
    return clip_min, np.maximum(extent, np.float32(0.0))


#: ``BIT_LENGTH[x]``: bits needed to write the byte ``x`` (0 for 0).
BIT_LENGTH = np.array([int(x).bit_length() for x in range(256)], dtype=np.int64)


def component_bits(level: Any, extent_q: Any) -> npt.NDArray[np.int64]:
    """Bits ``(..., 3)`` of each kept component at ``level`` ``(...)``, from its range bytes ``(..., 3)``.

    The widest component of the segment gets the level's bits; a component whose range is ``2^s``
    times narrower gets ``s`` bits fewer (never below 0), so that every component is quantized
    with about the same step. A component of zero extent needs no bits. Integer arithmetic only.
    """
    extent = np.asarray(extent_q).astype(np.int64)
    widest = extent.max(axis=-1, keepdims=True)
    shift = BIT_LENGTH[widest] - BIT_LENGTH[extent]
    shift = shift - ((extent << np.maximum(shift, 0)) > widest)
    bits = LEVEL_BITS[np.asarray(level)].astype(np.int64)[..., None] - shift
    return np.where(extent > 0, np.maximum(bits, 0), 0)


def level_scale(bits: Any) -> FloatArray:
    """``2^bits − 1`` as float64."""
    return np.ldexp(1.0, np.asarray(bits, dtype=np.int64)) - 1.0


def quantize(values: FloatArray, segment_min: FloatArray, segment_extent: FloatArray, bits: Any) -> UInt64Array:
    """Integers ``q`` (uint64) of ``values`` on ``bits`` bits in their segment range (clamped to it)."""
    safe = np.where(segment_extent > 0.0, segment_extent, 1.0)
    normalized = np.clip(np.where(segment_extent > 0.0, (values - segment_min) / safe, 0.0), 0.0, 1.0)
    return np.floor(normalized * level_scale(bits) + 0.5).astype(np.uint64)


#: ``1 / (2^bits − 1)`` for 0 to 32 bits (0 for 0 bits), and the fraction added: ½ for 0 bits, else 0.
INVERSE_SCALE = np.array([0.0] + [1.0 / (2.0**b - 1.0) for b in range(1, 33)])
ZERO_BIT_FRACTION = np.array([0.5] + [0.0] * 32)


def dequantization(segment_min: FloatArray, segment_extent: FloatArray, bits: Any) -> tuple[FloatArray, FloatArray]:
    """``(offset, step)`` of :func:`dequantize` for a segment range and its bits (once per segment)."""
    bits = np.asarray(bits, dtype=np.intp)
    return segment_min + segment_extent * ZERO_BIT_FRACTION[bits], segment_extent * INVERSE_SCALE[bits]


def dequantize(q: Any, segment_min: FloatArray, segment_extent: FloatArray, bits: Any) -> FloatArray:
    """Values of the integers ``q`` on ``bits`` bits in their segment range (the format's one decoding formula).

    ``value = offset + step · q`` with ``offset = segment_min + segment_extent · ZERO_BIT_FRACTION[bits]``
    and ``step = segment_extent · INVERSE_SCALE[bits]`` (:func:`dequantization`, once per segment; two
    operations per sample): zero bits give the middle of the range.
    """
    offset, step = dequantization(segment_min, segment_extent, bits)
    return offset + step * np.asarray(q, dtype=np.float64)


def rebuild_quaternion(stored: FloatArray, dropped: Any, rotation: Any) -> FloatArray:
    """Four components ``(..., 4)`` from three ``stored`` ``(..., 3)``: the dropped one is ``sqrt(1 − |v|²)``.

    Where ``rotation`` is false (a vector track, ``dropped == 3``) the fourth component is 0
    (unused). Rotations come back unnormalised; :func:`interpolate` normalises.
    """
    dropped = np.asarray(dropped)
    a, b, c = stored[..., 0], stored[..., 1], stored[..., 2]
    missing = np.where(rotation, np.sqrt(np.maximum(1.0 - (a * a + b * b + c * c), 0.0)), 0.0)
    out = np.empty((*stored.shape[:-1], 4))
    np.put_along_axis(out, stored_components(dropped), stored, axis=-1)
    np.put_along_axis(out, dropped[..., None].astype(np.intp), missing[..., None], axis=-1)
    return out


def interpolate(first: FloatArray, second: FloatArray, u: FloatArray, rotation: Any) -> FloatArray:
    """Values ``(..., 4)`` at ``u`` ``(...)`` between two keys: nlerp on the short arc where ``rotation``, else lerp.

    Rotations come out unit. ``rotation`` broadcasts against the leading shape.
    """
    rotation = np.asarray(rotation, dtype=bool)
    a0, a1, a2, a3 = first[..., 0], first[..., 1], first[..., 2], first[..., 3]
    b0, b1, b2, b3 = second[..., 0], second[..., 1], second[..., 2], second[..., 3]
    dot = a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3
    sign = np.where(rotation & (dot < 0.0), -1.0, 1.0)
    keep = 1.0 - u
    mixed = np.stack(
        (
            keep * a0 + u * (sign * b0),
            keep * a1 + u * (sign * b1),
            keep * a2 + u * (sign * b2),
            keep * a3 + u * (sign * b3),
        ),
        axis=-1,
    )
    x, y, z, w = mixed[..., 0], mixed[..., 1], mixed[..., 2], mixed[..., 3]
    norm = np.sqrt(x * x + y * y + z * z + w * w)
    inverse = 1.0 / np.where(norm > 0.0, norm, 1.0)
    return np.where(rotation[..., None], mixed * inverse[..., None], mixed)
