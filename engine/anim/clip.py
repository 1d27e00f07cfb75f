"""Immutable keyframe data: channels of (times, values) bound to joint indices at build time."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array, readonly_copy

#: Components per key for each animated property of a pose.
PATH_WIDTHS = {"translation": 3, "rotation": 4, "scale": 3}
#: glTF's morph-target weights path: one component per morph target of the node's mesh. Pose
#: sampling (:func:`~engine.anim.sampling.sample`) ignores such channels;
#: :func:`~engine.anim.sampling.sample_channel` evaluates them.
WEIGHTS_PATH = "weights"
INTERPOLATIONS = ("STEP", "LINEAR", "CUBICSPLINE")


@dataclass(frozen=True, eq=False)
class Channel:
    """One animated property of one target (a joint, or a node of a scene hierarchy).

    ``times`` ``(K,)`` in seconds, finite and non-decreasing. ``values`` is ``(K, n)`` for STEP
    and LINEAR, or ``(K, 3, n)`` for CUBICSPLINE holding (in-tangent, value, out-tangent) per key,
    as glTF stores them; ``n`` is 3 for translation/scale, 4 for rotation (x, y, z, w) and the
    number of morph targets (≥ 1) for ``"weights"``.
    """

    target: int
    path: str
    interpolation: str
    times: FloatArray
    values: FloatArray
    #: The channel alone, compiled for sampling: filled once by :func:`engine.anim.sampling.compiled_channel`.
    _compiled: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.path not in PATH_WIDTHS and self.path != WEIGHTS_PATH:
            raise InvalidInputError(f"path must be one of {[*sorted(PATH_WIDTHS), WEIGHTS_PATH]}, got {self.path!r}")
        if self.interpolation not in INTERPOLATIONS:
            raise InvalidInputError(f"interpolation must be one of {INTERPOLATIONS}, got {self.interpolation!r}")
        if int(self.target) < 0:
            raise InvalidInputError(f"target must be a non-negative index, got {self.target}")
        times = as_array(self.times, "times")
        if times.ndim != 1 or times.size == 0:
            raise InvalidInputError(f"times must be a non-empty 1-D array, got shape {times.shape}")
        if np.any(np.diff(times) < 0):
            k = int(np.nonzero(np.diff(times) < 0)[0][0])
            raise InvalidInputError(
                f"times must be non-decreasing, got times[{k}] = {times[k]} > times[{k + 1}] = {times[k + 1]}"
            )
        values = as_array(self.values, "values")
        width = PATH_WIDTHS.get(self.path, values.shape[-1] if values.ndim else 0)
        if width < 1:
            raise InvalidInputError(f"weights values need one column per morph target, got shape {values.shape}")
        expected = (times.size, 3, width) if self.interpolation == "CUBICSPLINE" else (times.size, width)
        if values.shape != expected:
            raise InvalidInputError(
                f"{self.interpolation} {self.path} values must have shape {expected} "
                f"for {times.size} keys, got {values.shape}"
            )
        if self.path == "rotation":
            keys = values[:, 1] if self.interpolation == "CUBICSPLINE" else values
            if np.any(np.linalg.norm(keys, axis=-1) < 1e-12):
                raise InvalidInputError("rotation keys must be non-zero quaternions")
        object.__setattr__(self, "target", int(self.target))
        object.__setattr__(self, "times", readonly_copy(times))
        object.__setattr__(self, "values", readonly_copy(values))

    @property
    def start(self) -> float:
        """Time of the first key."""
        return float(self.times[0])

    @property
    def end(self) -> float:
        """Time of the last key."""
        return float(self.times[-1])


@dataclass(frozen=True, eq=False)
class Clip:
    """A named set of channels; immutable and shared by every character that plays it.

    ``num_targets`` is the size of the index space the channels' ``target`` values refer to
    (the skeleton's joint count). ``duration`` is the last key time over all channels;
    ``markers`` maps event names to times in seconds (e.g. ``{"left_foot_down": (0.1, 0.6)}``).
    """

    name: str
    channels: tuple[Channel, ...]
    num_targets: int
    markers: dict[str, tuple[float, ...]] | None = None
    #: The clip re-keyed for sampling: filled once by :func:`engine.anim.compiled_clip.compiled`.
    _compiled: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "channels", tuple(self.channels))
        for k, channel in enumerate(self.channels):
            if channel.target >= self.num_targets:
                raise InvalidInputError(
                    f"channels[{k}].target = {channel.target} is out of range for {self.num_targets} targets"
                )
        seen: set[tuple[int, str]] = set()
        for channel in self.channels:
            key = (channel.target, channel.path)
            if key in seen:
                raise InvalidInputError(f"two channels animate {channel.path} of target {channel.target}")
            seen.add(key)
        markers = {str(k): tuple(float(t) for t in v) for k, v in (self.markers or {}).items()}
        for name, times in markers.items():
            if not all(np.isfinite(times)):
                raise InvalidInputError(f"marker {name!r} has a non-finite time: {times}")
        object.__setattr__(self, "markers", markers)

    @property
    def duration(self) -> float:
        """Last key time over all channels (0 for a clip without channels)."""
        return max((c.end for c in self.channels), default=0.0)

    def channel(self, target: int, path: str) -> Channel | None:
        """The channel animating ``path`` of ``target``, or ``None``."""
        for c in self.channels:
            if c.target == target and c.path == path:
                return c
        return None

    def with_markers(self, markers: dict[str, Any]) -> Clip:
        """A copy of this clip carrying ``markers`` (event name → times in seconds)."""
        return Clip(self.name, self.channels, self.num_targets, markers)


@runtime_checkable
class SampledClip(Protocol):
    """A clip stored another way (:class:`engine.compress.CompressedClip`): ``sample`` checks, it fills the pose."""

    @property
    def name(self) -> str:
        """The clip's name."""

    @property
    def num_targets(self) -> int:
        """Size of the target index space (joints)."""

    @property
    def duration(self) -> float:
        """Time of the last sample, seconds."""

    @property
    def key_times(self) -> FloatArray:
        """The sample times ``(N,)``: between two of them every track moves by one interpolation."""

    @property
    def markers(self) -> dict[str, Any] | None:
        """Named event times, as :attr:`Clip.markers`, or ``None``."""

    def root_track(self, joint: int) -> Clip | None:
        """Joint ``joint``'s keys stored beside a clip played in place, as a one-joint clip, or ``None``."""

    def fill(self, rest: tuple[FloatArray, FloatArray, FloatArray], times: FloatArray, buffer: Any) -> None:
        """Write the pose at flat ``times`` ``(B,)`` into a ``PoseBuffer`` ``(k, J, B)``, ``rest`` where none plays."""


class Clips(Mapping[str, Clip]):
    """Clips by name, read-only: ``character.clips["Walk"]``.

    An unknown name raises a :class:`KeyError` that lists the names there are (``'Wlak'`` →
    ``no clip named 'Wlak'; the clips are ['Run', 'Survey', 'Walk']``).

    Examples
    --------
    >>> clips = Clips([Clip("walk", (), 1), Clip("run", (), 1)])
    >>> sorted(clips), clips["run"].name
    (['run', 'walk'], 'run')
    >>> clips["jump"]
    Traceback (most recent call last):
    KeyError: "no clip named 'jump'; the clips are ['run', 'walk']"
    """

    def __init__(self, clips: Iterable[Clip] | Mapping[str, Clip] = ()) -> None:
        items = clips.items() if isinstance(clips, Mapping) else ((clip.name, clip) for clip in clips)
        self._clips: dict[str, Clip] = {}
        for name, clip in items:
            if not isinstance(clip, Clip):
                raise InvalidInputError(f"clips[{name!r}] must be a Clip, got {type(clip).__name__}")
            if name in self._clips:
                raise InvalidInputError(f"two clips are named {name!r}")
            self._clips[str(name)] = clip

    def __getitem__(self, name: str) -> Clip:
        try:
            return self._clips[name]
        except KeyError:
            raise KeyError(f"no clip named {name!r}; the clips are {sorted(self._clips)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._clips)

    def __len__(self) -> int:
        return len(self._clips)

    def __repr__(self) -> str:
        return f"Clips({list(self._clips)})"
