"""The motion-matching database: frames of root-space poses, their roots, features, ranges and tags.

A :class:`Database` is immutable runtime data (arrays read-only), made by
:func:`~engine.motion_matching.build.build_database` and stored by
:func:`~engine.motion_matching.fileformat.save_database` (the file format is in
``docs/motion_matching.md``). Its frames are numbered ``0 … N−1``; a *range* is one continuous
clip (a source or its mirror image) occupying frames ``[start, stop)``; frame ``f`` of range
``r`` plays at time ``(f − start) / fps`` of :meth:`Database.clip` ``(r)``.

The last ``end_margin`` frames of every range are never a search result (the motion would run
out before the next search), nor is a frame whose tags a search filters out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip, Clips
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, InvalidInputError
from engine.math import trusted
from engine.math._checks import FloatArray, IntArray, as_array, readonly_copy
from engine.motion_matching.features import normalisation
from engine.motion_matching.layout import FeatureLayout

#: Tags a database can hold (one bit each in :attr:`Database.frame_tags`).
MAX_TAGS = 64
#: Default frames at the end of each range left out of the search (1/3 s at 60 fps).
DEFAULT_END_MARGIN = 20
#: The float64 arrays of a database (checked finite, stored read-only).
FLOAT_FIELDS = (
    "translations",
    "rotations",
    "scales",
    "root_positions",
    "root_yaws",
    "root_velocities",
    "root_yaw_rates",
    "features",
    "offset",
    "scale",
)


class DatabaseError(AssetError):
    """A database (in memory or a file) whose arrays are missing, mis-shaped, inconsistent or not finite."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise DatabaseError(message)


@dataclass(frozen=True, eq=False)
class Database:
    """Frames of motion and their feature vectors, ready to search.

    Attributes
    ----------
    skeleton
        The skeleton every frame's pose is of.
    fps
        Frames per second of every range.
    layout
        The feature columns, joints and weights (:class:`~engine.motion_matching.layout.FeatureLayout`).
    translations, rotations, scales
        ``(N, J, 3)``, ``(N, J, 4)``, ``(N, J, 3)``: each frame's local pose in root space (the
        root at the origin facing ``+Z``).
    root_positions, root_yaws
        ``(N, 3)`` and ``(N,)``: each frame's root in its range's world (``y = 0``; yaw about ``+Y``).
    root_velocities, root_yaw_rates
        ``(N, 3)`` and ``(N,)``: the root's velocity arriving at the frame, in root axes (m/s),
        and its turning rate (rad/s); at a range's first frame, the velocity leaving it.
    range_starts, range_stops
        ``(R,)``: range ``r`` is frames ``[range_starts[r], range_stops[r])``.
    range_names
        ``(R,)`` names (the source's, ``"… (mirrored)"`` for a mirror image).
    range_sources
        ``(R,)`` the source each range was made from.
    range_mirrored
        ``(R,)`` whether the range is a mirror image.
    tag_names
        The tags, at most :data:`MAX_TAGS`; tag ``k`` is bit ``k`` of ``frame_tags``.
    frame_tags
        ``(N,)`` uint64 bit sets.
    end_margin
        Frames at the end of each range never returned by a search.
    features
        ``(N, D)`` raw feature vectors (metres, m/s, unit directions).
    offset, scale
        ``(D,)``: the searched vectors are ``(features − offset) · scale``.
    normalized
        ``(N, D)`` those searched vectors (derived).
    searchable
        ``(N,)`` bool, frames a search may return, before tag filters (derived).
    """

    skeleton: Skeleton
    fps: float
    layout: FeatureLayout
    translations: FloatArray
    rotations: FloatArray
    scales: FloatArray
    root_positions: FloatArray
    root_yaws: FloatArray
    root_velocities: FloatArray
    root_yaw_rates: FloatArray
    range_starts: IntArray
    range_stops: IntArray
    range_names: tuple[str, ...]
    range_sources: tuple[str, ...]
    range_mirrored: np.ndarray
    tag_names: tuple[str, ...]
    frame_tags: np.ndarray
    end_margin: int
    features: FloatArray
    offset: FloatArray
    scale: FloatArray
    normalized: FloatArray = field(init=False, repr=False)
    searchable: np.ndarray = field(init=False, repr=False)
    _cache: dict[str, Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        count, joints = self.translations.shape[0], self.skeleton.num_joints
        _check(np.isfinite(self.fps) and self.fps > 0, f"fps must be a positive number, got {self.fps}")
        for name, tail in (("translations", (joints, 3)), ("rotations", (joints, 4)), ("scales", (joints, 3))):
            shape = np.shape(getattr(self, name))
            _check(shape == (count, *tail), f"{name} must have shape {(count, *tail)}, got {shape}")
        for name, shape in (
            ("root_positions", (count, 3)),
            ("root_yaws", (count,)),
            ("root_velocities", (count, 3)),
            ("root_yaw_rates", (count,)),
            ("features", (count, self.layout.width)),
            ("offset", (self.layout.width,)),
            ("scale", (self.layout.width,)),
        ):
            _check(
                np.shape(getattr(self, name)) == shape,
                f"{name} must have shape {shape}, got {np.shape(getattr(self, name))}",
            )
        for name in FLOAT_FIELDS:
            value = np.asarray(getattr(self, name), dtype=np.float64)
            _check(bool(np.isfinite(value).all()), f"{name} holds NaN or infinite values")
            object.__setattr__(self, name, readonly_copy(value))
        norms = np.linalg.norm(self.rotations, axis=-1)
        _check(bool(np.all(np.abs(norms - 1.0) < 1e-6)), "rotations must be unit quaternions")
        starts, stops = (np.asarray(a) for a in (self.range_starts, self.range_stops))
        ranges = starts.shape[0] if starts.ndim == 1 else -1
        _check(
            ranges >= 1 and stops.shape == starts.shape, "range_starts and range_stops must be two (R,) arrays, R >= 1"
        )
        _check(
            np.issubdtype(starts.dtype, np.integer) and np.issubdtype(stops.dtype, np.integer),
            "range starts and stops must be integers",
        )
        _check(
            bool(starts[0] == 0 and stops[-1] == count)
            and bool(np.all(starts[1:] == stops[:-1]) and np.all(stops - starts >= 2)),
            f"ranges must tile the {count} frames in order, each at least 2 frames long",
        )
        for name in ("range_names", "range_sources"):
            _check(len(getattr(self, name)) == ranges, f"{name} must hold {ranges} names")
            object.__setattr__(self, name, tuple(str(n) for n in getattr(self, name)))
        mirrored = np.asarray(self.range_mirrored)
        _check(mirrored.shape == (ranges,) and mirrored.dtype == np.bool_, f"range_mirrored must be ({ranges},) bools")
        _check(
            len(self.tag_names) <= MAX_TAGS and len(set(self.tag_names)) == len(self.tag_names),
            f"tag_names must be at most {MAX_TAGS} distinct names",
        )
        tags = np.asarray(self.frame_tags)
        _check(tags.shape == (count,) and tags.dtype == np.uint64, f"frame_tags must be ({count},) uint64")
        unused = np.uint64(0) if len(self.tag_names) == MAX_TAGS else ~np.uint64((1 << len(self.tag_names)) - 1)
        _check(not np.any(tags & unused), "frame_tags sets bits of tags that tag_names does not name")
        _check(int(self.end_margin) >= 0, f"end_margin must be >= 0 frames, got {self.end_margin}")
        _check(self.layout.horizons[-1] >= 1, "the layout has no trajectory horizon")
        searchable = np.ones(count, dtype=bool)
        for start, stop in zip(starts, stops, strict=True):
            searchable[max(int(start), int(stop) - int(self.end_margin)) : int(stop)] = False
        derived: tuple[tuple[str, np.ndarray], ...] = (
            ("range_starts", starts.astype(np.intp)),
            ("range_stops", stops.astype(np.intp)),
            ("range_mirrored", mirrored),
            ("frame_tags", tags),
            ("searchable", searchable),
            ("normalized", (self.features - self.offset) * self.scale),
        )
        for name, value in derived:
            object.__setattr__(self, name, readonly_copy(value))
        object.__setattr__(self, "tag_names", tuple(self.tag_names))
        object.__setattr__(self, "end_margin", int(self.end_margin))
        object.__setattr__(self, "_cache", {})

    @property
    def num_frames(self) -> int:
        """Number of frames ``N``."""
        return int(self.features.shape[0])

    @property
    def num_ranges(self) -> int:
        """Number of ranges ``R``."""
        return int(self.range_starts.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays held (poses, roots, features, normalized features, tags)."""
        arrays = [getattr(self, name) for name in FLOAT_FIELDS] + [self.normalized, self.frame_tags]
        return int(sum(a.nbytes for a in arrays))

    def normalize(self, features: Any) -> FloatArray:
        """Raw feature vectors ``(..., D)`` → the searched space, ``(features − offset) · scale``."""
        raw = as_array(features, "features", (self.layout.width,))
        return (raw - self.offset) * self.scale

    def tag_mask(self, tags: Iterable[str] | None) -> np.uint64:
        """The bit set of ``tags`` (names of :attr:`tag_names`); ``None`` or empty: 0."""
        mask = 0
        for tag in tags or ():
            if tag not in self.tag_names:
                raise InvalidInputError(f"no tag {tag!r} in this database; its tags are {list(self.tag_names)}")
            mask |= 1 << self.tag_names.index(tag)
        return np.uint64(mask)

    def frame_range(self, frames: Any) -> IntArray:
        """The range index of each frame index ``(...)``."""
        f = np.asarray(frames)
        if not np.issubdtype(f.dtype, np.integer) or np.any((f < 0) | (f >= self.num_frames)):
            raise InvalidInputError(f"frames must be integers in [0, {self.num_frames}), got {frames!r}")
        return np.searchsorted(self.range_stops, f, side="right")

    def frame_time(self, frames: Any) -> FloatArray:
        """The time of each frame index ``(...)`` in its range's clip (:meth:`clip`), seconds."""
        ranges = self.frame_range(frames)
        return (np.asarray(frames) - self.range_starts[ranges]) / self.fps

    def poses(self, frames: Any) -> Pose:
        """The root-space poses of frame indices ``(...)`` (copies)."""
        f = np.asarray(frames)
        self.frame_range(f)
        with trusted():
            return Pose(self.translations[f], self.rotations[f], self.scales[f])

    def range_index(self, name: str) -> int:
        """The index of the range called ``name``."""
        if name not in self.range_names:
            raise InvalidInputError(f"no range {name!r}; the ranges are {list(self.range_names)}")
        return self.range_names.index(name)

    def clip(self, range_index: int) -> Clip:
        """Range ``range_index`` as a LINEAR clip of :attr:`skeleton` (one key per frame, root in place).

        Every joint gets a rotation channel; translations and scales only where they leave the
        rest pose. Built once per range and cached.
        """
        if not 0 <= int(range_index) < self.num_ranges:
            raise InvalidInputError(f"range index {range_index} out of range for {self.num_ranges} ranges")
        start, stop = int(self.range_starts[range_index]), int(self.range_stops[range_index])
        return self._frames_clip(f"clip:{int(range_index)}", self.range_names[range_index], slice(start, stop))

    def timeline(self) -> Clip:
        """Every frame as one LINEAR clip of :attr:`skeleton`: frame ``f`` at ``f / fps`` seconds (root in place).

        What a controller plays with one layer for every character: a character in range ``r``
        stays within ``[range_starts[r], range_stops[r] − 1] / fps``, where the keys are that
        range's own frames (the step from one range's last frame to the next one's first is never
        played). Channels as :meth:`clip`; built once and cached.
        """
        return self._frames_clip("timeline", "frames", slice(0, self.num_frames))

    def _frames_clip(self, key: str, name: str, frames: slice) -> Clip:
        """Frames ``frames`` as a LINEAR clip called ``name`` (first frame at 0 s), cached under ``key``."""
        if key not in self._cache:
            times = np.arange(frames.stop - frames.start) / self.fps
            channels = []
            skeleton = self.skeleton
            with trusted():
                for j in range(skeleton.num_joints):
                    channels.append(Channel(j, "rotation", "LINEAR", times, self.rotations[frames, j]))
                    for path, values, rest in (
                        ("translation", self.translations[frames, j], skeleton.rest_translations[j]),
                        ("scale", self.scales[frames, j], skeleton.rest_scales[j]),
                    ):
                        if np.any(values != rest):
                            channels.append(Channel(j, path, "LINEAR", times, values))
            self._cache[key] = Clip(name, tuple(channels), skeleton.num_joints)
        clip: Clip = self._cache[key]
        return clip

    def clips(self) -> Clips:
        """Every range as a clip (:meth:`clip`), by range name."""
        return Clips([self.clip(r) for r in range(self.num_ranges)])

    def with_weights(self, weights: dict[str, float]) -> Database:
        """The same frames searched with other group weights (``weights`` names groups of :attr:`layout`)."""
        layout = self.layout.with_weights(weights)
        offset, scale, _ = normalisation(self.features, layout)
        return _replace(self, layout=layout, offset=offset, scale=scale)

    def summary(self) -> str:
        """A few lines: frames, ranges and their tags, feature groups and weights, bytes."""
        lines = [
            f"{self.num_frames} frames at {self.fps:g} fps ({self.num_frames / self.fps:.1f} s) in {self.num_ranges} "
            f"ranges, {int(self.searchable.sum())} searchable; skeleton of {self.skeleton.num_joints} joints; "
            f"{self.nbytes / 1e6:.2f} MB in memory",
            "features: "
            + ", ".join(f"{g.name} {g.stop - g.start} × {g.weight:g}" for g in self.layout.groups)
            + f" (horizons {list(self.layout.horizons)} frames)",
        ]
        for r in range(self.num_ranges):
            frames = slice(int(self.range_starts[r]), int(self.range_stops[r]))
            bits = np.bitwise_or.reduce(self.frame_tags[frames])
            tags = [t for k, t in enumerate(self.tag_names) if int(bits) >> k & 1]
            lines.append(f"  {self.range_names[r]}: frames {frames.start}–{frames.stop - 1}, tags {tags or '-'}")
        return "\n".join(lines)


def _replace(database: Database, **changes: Any) -> Database:
    """A new database with some constructor fields replaced."""
    names = [f for f in Database.__dataclass_fields__ if Database.__dataclass_fields__[f].init]
    values = {n: getattr(database, n) for n in names}
    values.update(changes)
    return Database(**values)


def tag_bits(frame_tags: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], np.ndarray]:
    """Tag names (first seen first) and the ``(F,)`` uint64 bit set of each frame's tags."""
    names = tuple(dict.fromkeys(t for tags in frame_tags for t in tags))
    if len(names) > MAX_TAGS:
        raise InvalidInputError(f"a database holds at most {MAX_TAGS} tags, got {len(names)}")
    index = {t: k for k, t in enumerate(names)}
    bits = np.zeros(len(frame_tags), dtype=np.uint64)
    for f, tags in enumerate(frame_tags):
        for t in tags:
            bits[f] |= np.uint64(1 << index[t])
    return names, bits
