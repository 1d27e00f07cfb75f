"""A compressed clip: immutable arrays in the library format, and its numpy reference decoder.

The arrays (all read-only, usually views into a memory-mapped library file) are:

- ``kinds`` ``(J, 3)`` uint8: :data:`~engine.compress.quantize.DEFAULT`, ``CONSTANT`` or
  ``ANIMATED`` for each joint's translation, rotation and scale; ``refs`` ``(J, 3)`` uint16 the
  row of a constant track in ``constants`` or the index of an animated track (animated tracks are
  numbered in joint-then-path order);
- ``constants`` ``(C, 4)`` float32 (a vector uses 3 components, a rotation is normalised when read);
- ``clip_ranges`` ``(A, 8)`` float32: each animated track's four ``clip_min`` then four ``clip_extent``;
- ``formats`` ``(S, A)`` uint8 level and dropped component, ``ranges`` ``(S, A, 6)`` uint8 three
  ``min_q`` then three ``extent_q``, for every segment and animated track;
- ``segments`` ``(S, 2)`` uint32: each segment's first bit in ``words`` and its bits per sample;
- ``words`` uint64, little-endian: per segment, per sample, per animated track, its three
  components (``component_bits`` each), least significant bit first; one spare word at the end.

Sampling at time ``t`` uses sample ``x = (t − start) · rate`` clamped to ``[0, N − 1]``: the keys
``floor(x)`` and the next, and ``u = x − floor(x)``; a looping clip stores ``N − 1`` samples and
reads its last as its first. See :mod:`engine.compress.quantize` for the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.clip import Channel, Clip
from engine.anim.layout import PoseBuffer
from engine.anim.skeleton import Skeleton
from engine.compress.quantize import (
    ANIMATED,
    CONSTANT,
    DEFAULT,
    DROP_SHIFT,
    LEVEL_MASK,
    PATH_WIDTH,
    ROTATION,
    SEGMENT_SAMPLES,
    component_bits,
    dequantization,
    interpolate,
    rebuild_quaternion,
    segment_bounds,
    stored_components,
)
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray

#: The per-clip arrays, in file order, with their dtypes and trailing shapes.
CLIP_ARRAYS: dict[str, tuple[type, tuple[int, ...]]] = {
    "kinds": (np.uint8, (3,)),
    "refs": (np.uint16, (3,)),
    "constants": (np.float32, (4,)),
    "clip_ranges": (np.float32, (8,)),
    "formats": (np.uint8, ()),
    "ranges": (np.uint8, (6,)),
    "segments": (np.uint32, (2,)),
    "words": (np.uint64, ()),
}


@dataclass(frozen=True, eq=False)
class CompressedClip:
    """One compressed clip over ``num_targets`` joints (see the module docstring for the arrays).

    Pass it to :func:`engine.anim.sample` like a :class:`~engine.anim.clip.Clip`: default tracks
    take the ``rest`` pose given there. ``info`` carries what the compressor measured (errors,
    sizes, the source) as plain JSON values. ``skeleton`` is the skeleton it was compressed for
    (its rest pose is what the default tracks hold; the runtime checks it), ``None`` when unknown.
    """

    name: str
    num_targets: int
    start: float
    rate: float
    num_samples: int
    loops: bool
    kinds: npt.NDArray[np.uint8]
    refs: npt.NDArray[np.uint16]
    constants: npt.NDArray[np.float32]
    clip_ranges: npt.NDArray[np.float32]
    formats: npt.NDArray[np.uint8]
    ranges: npt.NDArray[np.uint8]
    segments: npt.NDArray[np.uint32]
    words: npt.NDArray[np.uint64]
    info: dict[str, Any] = field(default_factory=dict, compare=False)
    skeleton: Skeleton | None = field(default=None, compare=False, repr=False)

    @property
    def duration(self) -> float:
        """Time of the last sample, seconds (as :attr:`engine.anim.clip.Clip.duration`: the last key's)."""
        return self.start + self.span

    @property
    def span(self) -> float:
        """Seconds from the first sample to the last."""
        return (self.num_samples - 1) / self.rate if self.num_samples > 1 else 0.0

    @property
    def key_times(self) -> FloatArray:
        """The sample times ``(N,)``: between two of them every track moves by one interpolation."""
        return self.start + np.arange(self.num_samples) / self.rate

    @property
    def markers(self) -> None:
        """No markers: compression keeps the poses only (as :attr:`engine.anim.clip.Clip.markers`)."""
        return None

    def root_track(self, joint: int) -> Clip | None:
        """The root's own keys a build stored beside this in-place clip (``info["root_track"]``), or ``None``.

        A one-joint clip of joint ``joint``'s source channels (``None`` when the track is of
        another joint). Malformed keys raise :class:`~engine.errors.InvalidInputError`.
        """
        track = self.info.get("root_track")
        if not isinstance(track, dict) or track.get("joint") != joint:
            return None
        try:
            channels = tuple(
                Channel(0, c["path"], c["interpolation"], np.asarray(c["times"], float), np.asarray(c["values"], float))
                for c in track["channels"]
            )
        except (KeyError, TypeError, ValueError) as error:
            raise InvalidInputError(f"clip {self.name!r}: its stored root track is malformed: {error}") from None
        return Clip(f"{self.name} (root)", channels, 1)

    @property
    def num_stored(self) -> int:
        """Samples stored: ``N``, or ``N − 1`` for a loop."""
        return self.num_samples - 1 if self.loops else self.num_samples

    @property
    def nbytes(self) -> int:
        """Bytes of every array of the clip (its size in a library, without the shared header)."""
        return int(sum(getattr(self, name).nbytes for name in CLIP_ARRAYS))

    @cached_property
    def animated(self) -> tuple[IntArray, IntArray]:
        """``(joint, path)`` of each animated track ``(A,)``, in storage order."""
        joint, path = np.nonzero(self.kinds == ANIMATED)
        return joint, path

    def keys(self, times: FloatArray) -> tuple[IntArray, IntArray, FloatArray]:
        """Stored indices of the two keys around each time ``(B,)`` and the parameter ``u`` between them."""
        if self.num_samples == 1:
            zero = np.zeros(times.size, dtype=np.intp)
            return zero, zero, np.zeros(times.size)
        x = np.clip((times - self.start) * self.rate, 0.0, float(self.num_samples - 1))
        first = np.minimum(np.floor(x).astype(np.intp), self.num_samples - 1)
        second = np.minimum(first + 1, self.num_samples - 1)
        u = x - first
        if self.loops:
            first = np.where(first == self.num_samples - 1, 0, first)
            second = np.where(second == self.num_samples - 1, 0, second)
        return first, second, u

    def decoding(self, segment: IntArray) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
        """How segments ``(B,)`` decode, per animated track.

        Returns :func:`~engine.compress.quantize.dequantization`'s offset and step ``(B, A, 3)``, the
        component bits ``(B, A, 3)`` and the dropped component ``(B, A)``.
        """
        formats = self.formats[segment]  # (B, A)
        ranges = self.ranges[segment]  # (B, A, 6)
        dropped = formats >> DROP_SHIFT
        bits = component_bits(formats & LEVEL_MASK, ranges[..., 3:])  # (B, A, 3)
        kept = stored_components(dropped)  # (B, A, 3)
        lows = self.clip_ranges[:, :4].astype(np.float64)
        extents = self.clip_ranges[:, 4:].astype(np.float64)
        track = np.arange(self.animated[0].size)[:, None]
        low, extent = segment_bounds(lows[track, kept], extents[track, kept], ranges[..., :3], ranges[..., 3:])
        offset, step = dequantization(low, extent, bits)
        return offset, step, bits, dropped

    def decode_keys(self, stored: IntArray) -> FloatArray:
        """Values ``(B, A, 4)`` of the animated tracks at stored samples ``(B,)`` (rotations unnormalised)."""
        segment = stored // SEGMENT_SAMPLES
        within = (stored % SEGMENT_SAMPLES).astype(np.uint64)
        offset, step, bits, dropped = self.decoding(segment)
        flat = bits.reshape(bits.shape[0], -1).astype(np.uint64)
        first = np.cumsum(flat, axis=1) - flat  # exclusive prefix: bit of each component in its sample
        first_bit, per_sample = self.segments[segment, 0].astype(np.uint64), self.segments[segment, 1].astype(np.uint64)
        position = (first_bit + within * per_sample)[:, None] + first
        q = read_bits(self.words, position, flat).reshape(bits.shape)
        values = offset + step * q.astype(np.float64)  # dequantize
        return rebuild_quaternion(values, dropped, self.animated[1] == ROTATION)

    def fill(self, rest: tuple[FloatArray, FloatArray, FloatArray], times: FloatArray, buffer: PoseBuffer) -> None:
        """Write the pose at flat ``times`` ``(B,)`` into ``buffer`` ``(k, J, B)`` (rest values for default tracks)."""
        outputs = buffer.arrays()
        for path, (values, array) in enumerate(zip(rest, outputs, strict=True)):
            default = self.kinds[:, path] == DEFAULT
            if default.any():
                array[:, default] = values[default].T[:, :, None]
            constant = self.kinds[:, path] == CONSTANT
            if constant.any():
                stored = constant_values(self.constants[self.refs[constant, path]], path == ROTATION)
                array[:, constant] = stored[:, : PATH_WIDTH[path]].T[:, :, None]
        joint, paths = self.animated
        if not joint.size:
            return
        first, second, u = self.keys(times)
        played = interpolate(self.decode_keys(first), self.decode_keys(second), u[:, None], paths == ROTATION)
        for p, array in enumerate(outputs):
            chosen = paths == p
            if chosen.any():
                array[:, joint[chosen]] = played[:, chosen, : PATH_WIDTH[p]].transpose(2, 1, 0)


def constant_values(stored: Any, rotation: Any) -> FloatArray:
    """Float64 values ``(..., 4)`` of float32 constants ``(..., 4)``, rotations normalised (as a key is)."""
    values = np.asarray(stored, dtype=np.float64)
    return interpolate(values, values, np.zeros(values.shape[:-1]), rotation)


def read_bits(words: npt.NDArray[np.uint64], position: Any, bits: Any) -> npt.NDArray[np.uint64]:
    """The unsigned integers of ``bits`` bits (0 to 32) starting at bit ``position`` of ``words`` (LSB first)."""
    position = np.asarray(position, dtype=np.uint64)
    bits = np.asarray(bits, dtype=np.uint64)
    word = (position >> np.uint64(6)).astype(np.intp)
    shift = position & np.uint64(63)
    low = words[word] >> shift
    spill = np.where(shift > 0, np.uint64(64) - shift, np.uint64(0))
    high = np.where(shift > 0, words[np.minimum(word + 1, words.size - 1)] << (spill & np.uint64(63)), np.uint64(0))
    mask = (np.uint64(1) << bits) - np.uint64(1)
    return (low | high) & mask
