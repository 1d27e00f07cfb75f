"""The format's numbers: per-component bits, quantization error, range bytes, the dropped component, bit packing."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine.compress.clip import read_bits
from engine.compress.encode import pack_bits
from engine.compress.quantize import (
    LEVEL_BITS,
    clip_range,
    component_bits,
    dequantize,
    quantize,
    rebuild_quaternion,
    segment_bounds,
    segment_range_bytes,
    stored_components,
)
from tests.strategies import unit_quaternions


@given(st.integers(0, len(LEVEL_BITS) - 1), hnp.arrays(np.uint8, (3,)))
def test_narrower_components_get_fewer_bits_for_about_the_same_step(level: int, extent: np.ndarray) -> None:
    bits = component_bits(level, extent)
    widest = int(extent.max())
    for e in range(3):
        if extent[e] == 0:
            assert bits[e] == 0
            continue
        shift = int(np.floor(np.log2(widest / extent[e]) + 1e-12))
        assert bits[e] == max(int(LEVEL_BITS[level]) - shift, 0)
        # the step of a narrower component is within a factor of 2 (either way) of the widest one's
        if bits[e] > 0:
            ratio = (extent[e] / (2.0 ** bits[e] - 1)) / (widest / (2.0 ** LEVEL_BITS[level] - 1))
            assert 0.25 < ratio < 2.0


@given(hnp.arrays(np.float64, 20, elements=st.floats(-5, 5)), st.integers(0, len(LEVEL_BITS) - 1))
def test_quantization_error_is_at_most_half_a_step(values: np.ndarray, level: int) -> None:
    low, high = values.min(), values.max()
    bits = LEVEL_BITS[level]
    q = quantize(values, low, high - low, bits)
    back = dequantize(q, low, high - low, bits)
    step = (high - low) / (2.0**bits - 1)
    assert np.all(np.abs(back - values) <= 0.5 * step + 1e-12 * max(1.0, abs(low), abs(high)))
    assert q.max(initial=0) <= 2 ** int(bits) - 1


def test_zero_bits_decode_the_middle_of_the_range() -> None:
    assert dequantize(np.uint64(0), 1.0, 2.0, 0) == 2.0


@given(hnp.arrays(np.float64, (2, 3), elements=st.floats(-3, 3)))
def test_range_bytes_hold_the_segment_range(bounds: np.ndarray) -> None:
    low = np.minimum(bounds[0], bounds[1])
    high = np.maximum(bounds[0], bounds[1])
    clip_min, clip_extent = clip_range(low - 1.0, high + 1.0)
    assert np.all(clip_min.astype(float) <= low - 1.0)
    assert np.all(clip_min.astype(float) + clip_extent <= high + 1.0 + 1e-6)
    min_q, extent_q = segment_range_bytes(low, high, clip_min.astype(float), clip_extent.astype(float))
    first, extent = segment_bounds(clip_min, clip_extent, min_q, extent_q)
    assert np.all(first <= low + 1e-12)
    assert np.all(first + extent >= high - 1e-12)
    assert np.all(min_q.astype(int) + extent_q <= 255)


@given(unit_quaternions())
def test_any_component_can_be_dropped_and_rebuilt(q: np.ndarray) -> None:
    for dropped in range(4):
        signed = q if q[dropped] >= 0 else -q
        kept = signed[stored_components(np.array(dropped))]
        rebuilt = rebuild_quaternion(kept, np.array(dropped), True)
        np.testing.assert_allclose(rebuilt, signed, atol=1e-7)
    vector = rebuild_quaternion(np.array([1.0, 2.0, 3.0]), np.array(3), False)
    assert vector.tolist() == [1.0, 2.0, 3.0, 0.0]


@given(st.lists(st.integers(0, 32), min_size=1, max_size=60), st.integers(0, 2**31))
def test_packed_bits_read_back(widths: list[int], seed: int) -> None:
    rng = np.random.default_rng(seed)
    bits = np.array(widths, dtype=np.uint64)
    values = np.array([rng.integers(0, 2 ** int(b)) if b else 0 for b in widths], dtype=np.uint64)
    words, position = pack_bits(values, bits)
    np.testing.assert_array_equal(read_bits(words, position.astype(np.uint64), bits), values)
    assert words.size >= (int(bits.sum()) // 64) + 2
