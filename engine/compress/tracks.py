"""Tracks of a prepared clip: which are the rest pose, which constant, and how the animated ones are stored.

Every joint has three tracks (translation, rotation, scale). A track whose replacement by the
rest value (or by one constant) moves no shell by more than :func:`constant_share` of the
tolerance is *default* (nothing stored) or *constant* (one float32 value); the others are
*animated*. For an animated track this module decides the stored components (per segment, the
rotation component dropped), the float32 clip ranges and the per-segment range bytes
(:mod:`engine.compress.quantize`); :mod:`engine.compress.allocate` then picks the bit rates.

The effect of a track's error on the shells is estimated (:class:`Reach`) as a rigid motion of
the joint's subtree: a rotation error of angle ``θ`` at joint ``a`` moves a vertex at distance
``d`` from it by at most ``2 sin(θ/2) · d``; a translation error ``ε`` moves the subtree by
``σ(parent) · |ε|``; a relative scale error ``δ`` moves it by ``δ · d``. The estimate guides
choices only: the compressor checks every choice against the true error through the hierarchy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engine.compress.clip import constant_values
from engine.compress.quantize import (
    ANIMATED,
    CONSTANT,
    DEFAULT,
    NO_DROP,
    ROTATION,
    SCALE,
    SEGMENT_SAMPLES,
    TRANSLATION,
    clip_range,
    segment_bounds,
    segment_range_bytes,
    stored_components,
)
from engine.compress.source import Source
from engine.math._checks import FloatArray, IntArray

#: Largest share of the tolerance one collapsed (default or constant) track may use; halved for
#: skeletons deeper than 8, so that a chain of collapsed tracks stays under half the tolerance.
CONSTANT_SHARE = 1.0 / 16.0


def constant_share(depth: int) -> float:
    """Share of the tolerance a collapsed track may use on a skeleton of ``depth`` levels."""
    return min(CONSTANT_SHARE, 0.5 / max(depth, 1))


@dataclass(frozen=True, eq=False)
class Reach:
    """Distances that turn a track's own error into shell displacements (see the module docstring).

    ``chain[j, d]`` is joint ``j``'s ancestor ``d`` levels up (``d = 0``: ``j``), ``-1`` past the
    root; ``distance[k, j, d]`` is ``|o_j − o_a| + r_j σ_j`` at grid sample ``k`` for ``a =
    chain[j, d]`` (0 where there is none); ``reach[k, a]`` its largest value over ``a``'s subtree.
    """

    chain: IntArray
    distance: FloatArray
    reach: FloatArray

    @classmethod
    def of(cls, source: Source) -> Reach:
        """The reach of every joint of ``source`` at every grid sample."""
        parents = source.skeleton.parents
        count = parents.size
        depth = int(source.skeleton.depths.max(initial=0)) + 1
        chain = np.full((count, depth), -1, dtype=np.intp)
        chain[:, 0] = np.arange(count)
        for d in range(1, depth):  # depth levels, not joints
            above = chain[:, d - 1]
            chain[:, d] = np.where(above >= 0, parents[np.maximum(above, 0)], -1)
            chain[above < 0, d] = -1
        shell = source.radii * source.scale  # (N, J)
        ancestor = source.origin[:, np.maximum(chain, 0)]  # (N, J, D, 3)
        offset = source.origin[:, :, None, :] - ancestor
        distance = np.sqrt((offset**2).sum(axis=-1)) + shell[:, :, None]
        distance[:, chain < 0] = 0.0
        reach = np.zeros((source.grid.count, count))
        joints, levels = np.nonzero(chain >= 0)
        np.maximum.at(reach.T, chain[joints, levels], distance[:, joints, levels].T)
        return cls(chain, distance, reach)


@dataclass(frozen=True, eq=False)
class Tracks:
    """The tracks of a clip as the format stores them.

    Attributes
    ----------
    kinds
        ``(J, 3)`` :data:`~engine.compress.quantize.DEFAULT`, ``CONSTANT`` or ``ANIMATED`` per
        joint and path (translation, rotation, scale).
    constants
        ``(J, 3, 4)`` float32 value of each constant track (vectors use 3 components).
    joint, path
        ``(A,)`` joint and path of each animated track, ordered by joint then path.
    samples
        ``(K,)`` grid sample stored at each stored index (``K = N``, or ``N − 1`` for a loop,
        whose last sample is the first); ``stored_of_sample`` ``(N,)`` the reverse map.
    values
        ``(K, A, 4)`` the source values at the stored samples, each rotation signed so that its
        dropped component is non-negative (vectors padded with 0).
    stored
        ``(K, A, 3)`` the components kept.
    dropped
        ``(S, A)`` dropped component per segment (:data:`~engine.compress.quantize.NO_DROP` for vectors).
    clip_min, clip_extent
        ``(A, 4)`` float32 clip range per component.
    min_q, extent_q
        ``(S, A, 3)`` uint8 range bytes of the kept components; ``segment_min``,
        ``segment_extent`` the float64 ranges they give.
    """

    kinds: npt.NDArray[np.uint8]
    constants: npt.NDArray[np.float32]
    joint: IntArray
    path: IntArray
    samples: IntArray
    stored_of_sample: IntArray
    values: FloatArray
    stored: FloatArray
    dropped: npt.NDArray[np.uint8]
    clip_min: npt.NDArray[np.float32]
    clip_extent: npt.NDArray[np.float32]
    min_q: npt.NDArray[np.uint8]
    extent_q: npt.NDArray[np.uint8]
    segment_min: FloatArray
    segment_extent: FloatArray

    @property
    def num_segments(self) -> int:
        """``S``."""
        return int(self.dropped.shape[0])

    @property
    def segment_of_stored(self) -> IntArray:
        """``(K,)`` segment of each stored sample."""
        return np.arange(self.samples.size) // SEGMENT_SAMPLES


def rotation_chord(reference: FloatArray, other: FloatArray) -> FloatArray:
    """``2 sin(θ/2)`` ``(...)`` for the angle ``θ`` between unit quaternions ``(..., 4)``, accurate for tiny ``θ``."""
    x1, y1, z1, w1 = (reference[..., i] for i in range(4))
    x2, y2, z2, w2 = (other[..., i] for i in range(4))
    # vector part of conj(reference) · other
    vx = w1 * x2 - x1 * w2 - (y1 * z2 - z1 * y2)
    vy = w1 * y2 - y1 * w2 - (z1 * x2 - x1 * z2)
    vz = w1 * z2 - z1 * w2 - (x1 * y2 - y1 * x2)
    return 2.0 * np.sqrt(vx * vx + vy * vy + vz * vz)


def track_factor(path: IntArray, reference: FloatArray, other: FloatArray, parent_scale: FloatArray) -> FloatArray:
    """Per-sample error factor ``(..., A)`` of tracks whose values ``(..., A, 4)`` became ``other``.

    Rotations and scales give a factor per metre of reach; translations give metres already
    (times the parent's model scale ``(..., A)``).
    """
    chord = rotation_chord(reference, other)
    delta = other[..., :3] - reference[..., :3]
    moved = np.sqrt((delta**2).sum(axis=-1))
    safe = np.where(np.abs(reference[..., :3]) > 0.0, np.abs(reference[..., :3]), 1.0)
    ratio = np.where(np.abs(reference[..., :3]) > 0.0, np.abs(delta) / safe, np.where(delta != 0.0, np.inf, 0.0))
    return np.where(path == ROTATION, chord, np.where(path == TRANSLATION, moved * parent_scale, ratio.max(axis=-1)))


def _values(source: Source, joint: IntArray, path: IntArray, samples: IntArray) -> FloatArray:
    """``(K, A, 4)`` source values of tracks ``(joint, path)`` at grid ``samples`` (vectors padded)."""
    out = np.zeros((samples.size, joint.size, 4))
    for p, array in (
        (TRANSLATION, source.pose.translations),
        (ROTATION, source.pose.rotations),
        (SCALE, source.pose.scales),
    ):
        chosen = path == p
        out[:, chosen, : array.shape[-1]] = array[samples][:, joint[chosen]]
    return out


def _collapsed_error(source: Source, reach: Reach, joint: IntArray, path: IntArray, value: FloatArray) -> FloatArray:
    """Largest shell displacement estimate ``(T,)`` of replacing each track by ``value`` ``(T, 4)``."""
    actual = _values(source, joint, path, np.arange(source.grid.count))
    replaced = np.broadcast_to(value, actual.shape)
    if np.any(path == ROTATION):  # compare rotations on the short arc
        dots = (actual * replaced).sum(axis=-1, keepdims=True)
        replaced = np.where((path[None, :, None] == ROTATION) & (dots < 0.0), -replaced, replaced)
    factor = track_factor(path, actual, replaced, source.parent_scale[:, joint])
    scale = np.where(path == TRANSLATION, 1.0, reach.reach[:, joint])
    return (factor * scale).max(axis=0)


def classify(source: Source, reach: Reach) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """Track kinds ``(J, 3)`` and constant values ``(J, 3, 4)`` float32 (module docstring)."""
    skeleton = source.skeleton
    count = skeleton.num_joints
    joint = np.repeat(np.arange(count), 3)
    path = np.tile(np.arange(3), count)
    rest = np.zeros((count, 3, 4))
    rest[:, TRANSLATION, :3] = skeleton.rest_translations
    rest[:, ROTATION] = skeleton.rest_rotations
    rest[:, SCALE, :3] = skeleton.rest_scales
    actual = _values(source, joint, path, np.arange(source.grid.count))  # (N, 3J, 4)
    middle = 0.5 * (actual.min(axis=0) + actual.max(axis=0))
    signs = np.where((actual * actual[:1]).sum(axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
    mean = (actual * signs).mean(axis=0)
    norms = np.sqrt((mean**2).sum(axis=-1, keepdims=True))
    mean_rotation = np.where(norms > 0.0, mean / np.where(norms > 0.0, norms, 1.0), actual[0])
    constant = np.where((path == ROTATION)[:, None], mean_rotation, middle).astype(np.float32)
    budget = constant_share(len(skeleton.levels)) * source.tolerance
    is_default = _collapsed_error(source, reach, joint, path, rest.reshape(-1, 4)) <= budget
    constant64 = constant_values(constant, path == ROTATION)
    is_constant = _collapsed_error(source, reach, joint, path, constant64) <= budget
    kinds = np.where(is_default, DEFAULT, np.where(is_constant, CONSTANT, ANIMATED)).astype(np.uint8)
    constants = np.where((kinds == CONSTANT)[:, None], constant, np.float32(0.0)).astype(np.float32)
    return kinds.reshape(count, 3), constants.reshape(count, 3, 4)


def _dropped(values: FloatArray, segment: IntArray, path: IntArray, segments: int) -> npt.NDArray[np.uint8]:
    """Per segment and rotation track the component with the largest smallest magnitude ``(S, A)``."""
    magnitude = np.abs(values)  # (K, A, 4)
    smallest = np.full((segments, values.shape[1], 4), np.inf)
    np.minimum.at(smallest, segment, magnitude)
    dropped = np.argmax(smallest, axis=-1).astype(np.uint8)
    dropped[:, path != ROTATION] = NO_DROP
    return dropped


def build_tracks(source: Source, reach: Reach) -> Tracks:
    """Classify the tracks of ``source`` and lay out its animated ones (see :class:`Tracks`)."""
    kinds, constants = classify(source, reach)
    joint, path = np.nonzero(kinds == ANIMATED)
    count = source.grid.count - 1 if source.loops else source.grid.count
    samples = np.arange(count)
    stored_of_sample = np.arange(source.grid.count)
    if source.loops:
        stored_of_sample[-1] = 0
    segment = samples // SEGMENT_SAMPLES
    segments = int(segment[-1]) + 1 if count else 0
    values = _values(source, joint, path, samples)
    dropped = _dropped(values, segment, path, segments)
    sample_drop = dropped[segment]  # (K, A)
    sign = np.take_along_axis(values, np.minimum(sample_drop, 3)[..., None].astype(np.intp), axis=-1)
    flip = (path == ROTATION) & (sign[..., 0] < 0.0)
    values = np.where(flip[..., None], -values, values)
    kept = stored_components(sample_drop)
    stored = np.take_along_axis(values, kept, axis=-1)  # (K, A, 3)
    # clip range per component over the samples that store it
    low = np.full((joint.size, 4), np.inf)
    high = np.full((joint.size, 4), -np.inf)
    tracks = np.broadcast_to(np.arange(joint.size), sample_drop.shape)
    for e in range(3):  # the three kept slots
        np.minimum.at(low, (tracks, kept[..., e]), stored[..., e])
        np.maximum.at(high, (tracks, kept[..., e]), stored[..., e])
    unused = ~np.isfinite(low)
    low[unused], high[unused] = 0.0, 0.0
    clip_min, clip_extent = clip_range(low, high)
    # segment ranges of the kept components
    seg_low = np.full((segments, joint.size, 3), np.inf)
    seg_high = np.full((segments, joint.size, 3), -np.inf)
    np.minimum.at(seg_low, segment, stored)
    np.maximum.at(seg_high, segment, stored)
    kept_of_segment = stored_components(dropped)  # (S, A, 3)
    track_index = np.arange(joint.size)[None, :, None]
    base = clip_min.astype(np.float64)[track_index, kept_of_segment]
    extent = clip_extent.astype(np.float64)[track_index, kept_of_segment]
    min_q, extent_q = segment_range_bytes(seg_low, seg_high, base, extent)
    segment_min, segment_extent = segment_bounds(base, extent, min_q, extent_q)
    return Tracks(
        kinds,
        constants,
        joint,
        path,
        samples,
        stored_of_sample,
        values,
        stored,
        dropped,
        clip_min,
        clip_extent,
        min_q,
        extent_q,
        segment_min,
        segment_extent,
    )
