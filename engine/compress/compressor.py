"""``compress_clip``: a clip in, a :class:`~engine.compress.clip.CompressedClip` whose error is guaranteed out.

The steps (each in its own module): resample on the clip's grid and measure the source
(:mod:`~engine.compress.source`), classify and lay out the tracks (:mod:`~engine.compress.tracks`),
choose the bit rates (:mod:`~engine.compress.allocate`), pack the bits
(:mod:`~engine.compress.encode`). Then the packed clip is decoded by the reference decoder at
every checked time (grid samples, source keys, midpoints between keys) and measured against the
source through the whole hierarchy: where a shell moves by more than the tolerance, the tracks
responsible are raised in the segments involved and the clip is packed again, until none does.
Only then is the clip returned, with the measured errors in ``info``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.anim.layout import PoseBuffer
from engine.anim.mesh import MeshData
from engine.anim.skeleton import Skeleton
from engine.compress.allocate import allocate, decode_stored, raise_worst
from engine.compress.clip import CompressedClip
from engine.compress.encode import encode
from engine.compress.metric import DEFAULT_SHELL, model_transforms, shell_error, shell_radii
from engine.compress.quantize import SEGMENT_SAMPLES
from engine.compress.source import Source, prepare
from engine.compress.tracks import Reach, Tracks, build_tracks
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray

#: Default tolerance, metres (0.01 cm, ACL's default).
DEFAULT_TOLERANCE = 1e-4
#: Rounds of "measure the packed clip, raise what exceeds" before giving up.
MAX_REPAIRS = 32
#: Bytes of one joint's pose per sample in float32 (translation, rotation, scale: ACL's raw size).
RAW_BYTES_PER_JOINT = 40


def measure(compressed: CompressedClip, source: Source) -> FloatArray:
    """Shell errors ``(V, J)`` of ``compressed`` against ``source`` at every checked time."""
    skeleton = source.skeleton
    rest = skeleton.rest_pose.arrays()
    errors = np.empty((source.checked_times.size, skeleton.num_joints))
    for rows, reference in source.reference_blocks():
        times = source.checked_times[rows]
        buffer = PoseBuffer.empty((times.size,), skeleton.num_joints)
        compressed.fill(rest, times, buffer)
        errors[rows] = shell_error(reference, model_transforms(skeleton, buffer), source.radii)
    return errors


def _repair(
    source: Source, tracks: Tracks, reach: Reach, levels: IntArray, compressed: CompressedClip, errors: FloatArray
) -> None:
    """Raise, in the segments of the keys around each time that exceeds the tolerance, the track most responsible."""
    rows = np.nonzero(errors.max(axis=1) > source.tolerance)[0]
    times = source.checked_times[rows]
    joints = np.argmax(errors[rows], axis=1)
    excess = errors[rows, joints] - source.tolerance
    first, second, _ = compressed.keys(times)
    nearest = np.clip(np.rint((times - source.grid.start) * source.grid.rate), 0, source.grid.count - 1).astype(np.intp)
    worst: dict[int, tuple[float, int, int]] = {}
    for stored, sample, joint, extra in zip(
        np.concatenate((first, second)), np.tile(nearest, 2), np.tile(joints, 2), np.tile(excess, 2), strict=True
    ):
        segment = int(stored) // SEGMENT_SAMPLES
        if segment not in worst or extra > worst[segment][0]:
            worst[segment] = (float(extra), int(sample), int(joint))
    segments = np.array(sorted(worst), dtype=np.intp)
    picked = np.array([worst[s] for s in segments.tolist()])
    violations = (segments, picked[:, 1].astype(np.intp), picked[:, 2].astype(np.intp), picked[:, 0])
    raise_worst(source, tracks, reach, levels, decode_stored(tracks, levels), violations)


def _statistics(errors: FloatArray, compressed: CompressedClip, source: Source, unit: float) -> dict[str, Any]:
    """What ``info`` records: errors (already in metres), sizes, the ratio, the keys of the source."""
    joints = source.skeleton.num_joints
    raw = RAW_BYTES_PER_JOINT * joints * source.grid.count
    channels = sum(4 * c.values[..., 0].size * c.values.shape[-1] for c in source.clip.channels if c.path != "weights")
    return {
        "tolerance_m": source.tolerance * unit,
        "metres_per_unit": unit,
        "max_error_m": float(errors.max(initial=0.0)),
        "p99_error_m": float(np.percentile(errors, 99)) if errors.size else 0.0,
        "mean_error_m": float(errors.mean()) if errors.size else 0.0,
        "checked_times": int(source.checked_times.size),
        "compressed_bytes": compressed.nbytes,
        "raw_float32_bytes": raw,
        "source_float32_bytes": int(channels),
        "ratio": raw / compressed.nbytes,
        "animated_tracks": int(compressed.animated[0].size),
        "shell_m": float(np.median(source.radii)) * unit,
        "key_times": _key_times(source),
    }


def _key_times(source: Source) -> str | list[float]:
    """``"grid"`` when the source's keys are the grid samples, else the key times (what decompression samples)."""
    keys = np.unique(np.concatenate([c.times for c in source.clip.channels if c.path != "weights"] or [np.zeros(1)]))
    grid = source.grid.times
    if keys.size == grid.size and np.allclose(keys, grid, rtol=0.0, atol=1e-9):
        return "grid"
    return [float(t) for t in keys]


def compress_clip(
    skeleton: Skeleton,
    clip: Clip,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    shell: float = DEFAULT_SHELL,
    meshes: Sequence[MeshData] = (),
    effectors: Mapping[str, float] | None = None,
    metres_per_unit: float = 1.0,
) -> CompressedClip:
    """Compress ``clip`` of ``skeleton`` so that no shell vertex moves by more than ``tolerance``.

    Parameters
    ----------
    skeleton
        The skeleton the clip plays on (its rest pose fills the tracks the clip leaves alone).
    clip
        Any clip over ``skeleton.num_joints`` targets (STEP, LINEAR or CUBICSPLINE channels).
    tolerance
        The largest displacement of any virtual vertex at any checked time, metres (0.01 cm).
    shell, meshes, effectors
        The virtual vertices' radius per joint (:func:`~engine.compress.metric.shell_radii`),
        metres (mesh vertices are measured in the skeleton's own units).
    metres_per_unit
        Length of one unit of the skeleton's model space (0.01 for a glTF character modelled in
        centimetres): tolerance and shells are converted to it, errors reported in metres.

    Returns
    -------
    CompressedClip
        The clip, its measured errors in ``info`` (``max_error_m`` ≤ ``tolerance``, always).

    Raises
    ------
    InvalidInputError
        A tolerance that is not a positive number of metres, or one that cannot be met (a clip
        whose keys lie off any uniform grid, or a tolerance below float32 precision).
    SkeletonMismatchError
        A clip of another number of joints, or effectors naming joints the skeleton lacks.
    """
    for value, name in ((tolerance, "tolerance"), (metres_per_unit, "metres_per_unit")):
        if not (isinstance(value, int | float | np.floating) and np.isfinite(value) and value > 0.0):
            raise InvalidInputError(f"{name} must be a positive number of metres, got {value!r}")
    unit = float(metres_per_unit)
    scaled = {name: radius / unit for name, radius in (effectors or {}).items()}
    radii = shell_radii(skeleton, shell / unit, meshes=meshes, effectors=scaled)
    source = prepare(skeleton, clip, radii, float(tolerance) / unit)
    reach = Reach.of(source)
    tracks = build_tracks(source, reach)
    levels = allocate(source, tracks, reach)
    for _ in range(MAX_REPAIRS):
        compressed = encode(source, tracks, levels, {})
        errors = measure(compressed, source)
        if errors.max(initial=0.0) <= source.tolerance:
            return encode(source, tracks, levels, _statistics(errors * unit, compressed, source, unit))
        _repair(source, tracks, reach, levels, compressed, errors)
    raise InvalidInputError(
        f"clip {clip.name!r}: the tolerance of {tolerance * 100:.3g} cm is still exceeded after {MAX_REPAIRS} repairs "
        f"(by {(errors.max() * unit - tolerance) * 100:.3g} cm)"
    )
