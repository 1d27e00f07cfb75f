"""The player's layers: what each plays (:class:`Layer`), and every character's time and weight in it.

A :class:`LayerTable` holds one row per layer and one column per character: the raw times
(:mod:`engine.anim.events`: the clip time before the loop mode maps it), the weights, and the
``fresh`` flags (the next frame counts markers at its start time too). Per layer it keeps a
:class:`Layer`: the clip, its loop mode, mask, additive flag, root track and markers.
**Overrides** (:mod:`engine.backend.state`) are kept beside: a mask, the layers each override_weights, and
a weight per character.

Nothing here samples or blends; the player (:mod:`engine.player.player`) reads the table, the
controllers write it through the player's methods.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from engine.anim.additive import additive_clip, restrict_clip
from engine.anim.clip import Clip, SampledClip
from engine.anim.compiled_clip import CompiledClip, compile_clip
from engine.anim.events import Loop
from engine.anim.pose import Pose
from engine.anim.rootmotion import parent_up
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array
from engine.player.root import RootTrack


@dataclass(frozen=True, eq=False)
class Layer:
    """What one layer plays (immutable: a new mask or loop mode makes a new one).

    Attributes
    ----------
    source
        The clip the controller gave (its name and markers): a clip, or a compressed clip
        (:class:`~engine.anim.clip.SampledClip`, no markers) on a blended layer.
    clip
        The clip played: ``source``, or for an additive layer its delta clip
        (:func:`~engine.anim.additive.additive_clip`).
    compiled
        What is sampled: the compiled ``clip`` (a compressed clip as it is, sampled from its bits);
        for an additive layer restricted to :attr:`joints`.
    loop
        Loop mode (:class:`~engine.anim.events.Loop`).
    mask
        Per-joint weights ``(J,)`` or ``None`` (every joint 1).
    additive
        Added on top of the blended pose instead of blended into it.
    joints
        Additive layers: the joints the delta moves (elsewhere it is the identity); else ``None``.
    root
        The root-motion track of a blended layer when the player has a root-motion joint.
    marker_names, marker_times
        One entry per marker time of ``source`` (``(M,)`` each).
    duration
        The clip's duration, seconds.
    """

    source: Clip | SampledClip
    clip: Clip | SampledClip
    compiled: CompiledClip | SampledClip
    loop: Loop
    mask: FloatArray | None
    additive: bool
    joints: IntArray | None
    root: RootTrack | None
    marker_names: tuple[str, ...]
    marker_times: FloatArray
    duration: float

    @classmethod
    def make(
        cls,
        skeleton: Skeleton,
        clip: Clip | SampledClip,
        *,
        loop: Loop,
        mask: Any,
        additive: bool,
        reference: Pose | None,
        root: int | None,
    ) -> Layer:
        """A checked layer of ``skeleton`` playing ``clip`` (see :meth:`engine.player.Player.add_layer`)."""
        if not isinstance(clip, Clip | SampledClip):
            raise InvalidInputError(f"clip must be a Clip or a compressed clip, got {type(clip).__name__}")
        if additive and not isinstance(clip, Clip):
            raise InvalidInputError(
                f"an additive layer needs a Clip (its delta clip), got compressed clip {clip.name!r}"
            )
        joints = skeleton.num_joints
        if clip.num_targets != joints:
            raise SkeletonMismatchError(
                f"clip {clip.name!r} targets {clip.num_targets} joints but the skeleton has {joints}"
            )
        markers = clip.markers or {}
        for name, times in markers.items():
            if any(not 0.0 <= t <= clip.duration for t in times):
                raise InvalidInputError(
                    f"marker {name!r} of clip {clip.name!r} has times {times} outside the clip [0, {clip.duration}]"
                )
        played = additive_clip(clip, skeleton, reference) if additive and isinstance(clip, Clip) else clip
        track = None
        if root is not None and not additive:
            x, y, z = (float(v) for v in parent_up(skeleton, root))  # the root's parent space (+Z: CesiumMan)
            track = RootTrack.of(played, skeleton.rest_pose, root, (x, y, z))
        layer = cls(
            clip,
            played,
            compile_clip(played) if isinstance(played, Clip) else played,
            Loop(loop),
            None,
            bool(additive),
            None,
            track,
            tuple(name for name, times in markers.items() for _ in times),
            np.array([t for times in markers.values() for t in times], dtype=np.float64),
            float(played.duration),
        )
        return layer.with_mask(check_mask(mask, joints))

    def with_mask(self, mask: FloatArray | None) -> Layer:
        """The layer with ``mask`` (checked by the caller); an additive one sampled only where it moves."""
        if not self.additive or not isinstance(self.clip, Clip):
            return replace(self, mask=mask)
        moved = {c.target for c in self.clip.channels if c.path in ("translation", "rotation", "scale")}
        if mask is not None:
            moved &= set(np.nonzero(mask)[0].tolist())
        joints = np.array(sorted(moved), dtype=np.intp)
        return replace(self, mask=mask, joints=joints, compiled=compile_clip(restrict_clip(self.clip, joints)))


def check_mask(mask: Any, joints: int) -> FloatArray | None:
    """A layer mask ``(J,)``, non-negative, or ``None``."""
    if mask is None:
        return None
    weights = as_array(mask, "mask")
    if weights.shape != (joints,):
        raise SkeletonMismatchError(f"mask must have shape ({joints},) for this skeleton, got {weights.shape}")
    if np.any(weights < 0.0):
        raise InvalidInputError(f"mask must be non-negative, got {float(weights.min())}")
    return weights


def _grown(array: np.ndarray, value: float | bool) -> np.ndarray:
    """``array`` ``(N, ...)`` with one more row filled with ``value``."""
    return np.concatenate((array, np.full((1, *array.shape[1:]), value, dtype=array.dtype)))


class LayerTable:
    """Layers and overrides of ``C`` characters (module docstring).

    Attributes
    ----------
    layers
        The :class:`Layer` of each row.
    raw, weights
        ``(L, C)`` raw times and weights.
    fresh
        ``(L, C)``: the next frame counts a marker exactly at the start time too.
    override_masks, override_spans, override_weights
        ``(G, J)`` masks in ``[0, 1]``, ``(G, 2)`` covered layers ``[start, stop)``, ``(G, C)`` weights.
    version
        Counts the layers and overrides added (the compiled frame state is made again).
    durations, loops, repeats, additive
        ``(L,)`` each layer's clip duration, loop code (:class:`~engine.anim.events.Loop`), whether
        it repeats and additive flag, kept with :attr:`layers` (:meth:`add`, :meth:`put`): a frame
        reads them without going through the layers.
    any_additive, any_ping_pong
        Whether some layer is additive, whether some layer ping-pongs.
    """

    def __init__(self, characters: int, joints: int) -> None:
        self.layers: list[Layer] = []
        self.raw = np.zeros((0, characters))
        self.weights = np.zeros((0, characters))
        self.fresh = np.zeros((0, characters), dtype=bool)
        self.override_masks = np.zeros((0, joints))
        self.override_spans = np.zeros((0, 2), dtype=np.int64)
        self.override_weights = np.zeros((0, characters))
        self.version = 0
        self._columns()

    def _columns(self) -> None:
        """The layers' per-row arrays and flags, from :attr:`layers`."""
        self.durations = np.array([layer.duration for layer in self.layers], dtype=np.float64)
        self.loops = np.array([int(layer.loop) for layer in self.layers], dtype=np.intp)
        self.repeats = self.loops == Loop.REPEAT
        self.additive = np.array([layer.additive for layer in self.layers], dtype=bool)
        self.any_additive = bool(self.additive.any())
        self.any_ping_pong = bool(np.any(self.loops == Loop.PING_PONG))

    @property
    def count(self) -> int:
        """``L``."""
        return len(self.layers)

    def add(self, layer: Layer) -> int:
        """Append ``layer`` (weight 0, raw time 0, fresh); return its row."""
        self.layers.append(layer)
        self.raw = _grown(self.raw, 0.0)
        self.weights = _grown(self.weights, 0.0)
        self.fresh = _grown(self.fresh, True)
        self.version += 1
        self._columns()
        return len(self.layers) - 1

    def put(self, row: int, layer: Layer) -> None:
        """Layer ``row`` plays ``layer`` from now on (a new mask or loop mode: the same layout)."""
        self.layers[row] = layer
        self._columns()

    def add_override(self, covered: range, mask: FloatArray) -> int:
        """Append an override (weight 0) covering ``covered``; return its index."""
        self.override_masks = np.concatenate((self.override_masks, mask[None]))
        self.override_spans = np.concatenate((self.override_spans, [[covered.start, covered.stop]]))
        self.override_weights = _grown(self.override_weights, 0.0)
        self.version += 1
        return self.override_spans.shape[0] - 1

    def masks(self, rows: IntArray) -> FloatArray:
        """``(n, J)`` the masks of ``rows`` (ones where a layer has none)."""
        joints = self.override_masks.shape[1]
        return np.array([np.ones(joints) if self.layers[r].mask is None else self.layers[r].mask for r in rows])

    def joint_weights(
        self, rows: IntArray, weights: FloatArray, override_weights: FloatArray, joints: Any = None
    ) -> FloatArray:
        """``(n, J', K)`` per-joint weights of ``rows``: ``weights`` × mask × the covering overrides' complements.

        ``weights`` ``(n, K)`` are the rows' weights and ``override_weights`` ``(G, K)`` the overrides'
        weights for some ``K`` characters; ``joints`` (an index array, default all) picks ``J'``.
        """
        at = slice(None) if joints is None else joints
        result = weights[:, None, :] * self.masks(rows)[:, at, None]
        for g in range(self.override_spans.shape[0]):  # loop over overrides (a handful)
            start, stop = self.override_spans[g]
            covered = (rows >= start) & (rows < stop)
            if covered.any() and np.any(override_weights[g] > 0.0):
                result[covered] *= 1.0 - override_weights[g][None, None, :] * self.override_masks[g, at][None, :, None]
        return result
