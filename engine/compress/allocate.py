"""Bit rates per segment and track, chosen against the error budget down the hierarchy.

Three steps, each over every segment of the clip at once (segments never share a sample):

1. **Floor.** Each track alone (all others exact) gets the lowest level whose estimated effect on
   its subtree's shells (:class:`~engine.compress.tracks.Reach`) stays within the tolerance: no
   allocation can go below it without exceeding the tolerance on its own.
2. **Ascent.** The true error of every joint at every sample, through the whole hierarchy
   (:mod:`engine.compress.metric`), is measured with all tracks quantized. In every segment whose
   worst joint exceeds the tolerance, the track on that joint's chain with the largest estimated
   contribution per stored bit is raised (one to three levels, as the excess asks), and the
   segment is measured again, until none exceeds it.
3. **Descent.** Every track is tried one level lower in every segment, one track at a time in
   order of the bits it stores; a segment keeps the lower level when its true error stays within
   the tolerance.

The result is checked again by the compressor on the encoded bits at every checked time.
"""

from __future__ import annotations

import numpy as np

from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.compress.clip import constant_values
from engine.compress.metric import model_transforms, shell_error
from engine.compress.quantize import (
    LEVEL_BITS,
    ROTATION,
    SCALE,
    TRANSLATION,
    component_bits,
    dequantize,
    interpolate,
    quantize,
    rebuild_quaternion,
)
from engine.compress.source import Source
from engine.compress.tracks import Reach, Tracks, track_factor
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray, trusted

#: Highest level index.
TOP = len(LEVEL_BITS) - 1
#: Rounds of the descent (each tries every track once).
DESCENT_ROUNDS = 2


def decode_stored(tracks: Tracks, levels: IntArray, chosen: slice | IntArray = slice(None)) -> FloatArray:
    """Decoded values ``(K, A, 4)`` of every stored sample at ``levels`` ``(S, A)`` (rotations unit).

    ``chosen`` selects some tracks (then ``levels`` holds their columns only).
    """
    segment = tracks.segment_of_stored
    bits = component_bits(levels, tracks.extent_q[:, chosen])[segment]  # (K, A, 3)
    low, extent = tracks.segment_min[segment][:, chosen], tracks.segment_extent[segment][:, chosen]
    values = dequantize(quantize(tracks.stored[:, chosen], low, extent, bits), low, extent, bits)
    rotation = tracks.path[chosen] == ROTATION
    full = rebuild_quaternion(values, tracks.dropped[segment][:, chosen], rotation)
    return interpolate(full, full, np.zeros(full.shape[:-1]), rotation)


def base_pose(source: Source, tracks: Tracks) -> FloatArray:
    """``(J, 10)`` the pose of the default and constant tracks (animated tracks hold their rest value)."""
    skeleton = source.skeleton
    pose = np.concatenate((skeleton.rest_translations, skeleton.rest_rotations, skeleton.rest_scales), axis=1)
    constants = constant_values(tracks.constants, (np.arange(3) == ROTATION)[None, :])
    for path, begin, width in ((TRANSLATION, 0, 3), (ROTATION, 3, 4), (SCALE, 7, 3)):
        chosen = tracks.kinds[:, path] == 1
        pose[chosen, begin : begin + width] = constants[chosen, path, :width]
    return pose


def played_pose(base: FloatArray, tracks: Tracks, values: FloatArray) -> Pose:
    """The pose ``(n, J)`` of animated ``values`` ``(n, A, 4)`` over the collapsed tracks of ``base`` ``(J, 10)``."""
    pose = np.repeat(base[None], values.shape[0], axis=0)
    for path, begin, width in ((TRANSLATION, 0, 3), (ROTATION, 3, 4), (SCALE, 7, 3)):
        chosen = tracks.path == path
        pose[:, tracks.joint[chosen], begin : begin + width] = values[:, chosen, :width]
    with trusted():
        return Pose(pose[..., 0:3], pose[..., 3:7], pose[..., 7:10])


def sample_errors(
    source: Source, tracks: Tracks, base: FloatArray, decoded: FloatArray, samples: IntArray
) -> FloatArray:
    """True shell errors ``(n, J)`` at grid ``samples`` of the decoded stored values ``(K, A, 4)``."""
    pose = played_pose(base, tracks, decoded[tracks.stored_of_sample[samples]])
    played = model_transforms(source.skeleton, pose)
    return shell_error((source.linear[samples], source.origin[samples]), played, source.radii)


def floor_levels(source: Source, tracks: Tracks, reach: Reach) -> IntArray:
    """Lowest level of each (segment, track) whose own estimated effect stays within the tolerance ``(S, A)``."""
    segment = tracks.segment_of_stored
    scale = np.where(tracks.path == TRANSLATION, 1.0, reach.reach[tracks.samples][:, tracks.joint])
    parent = source.parent_scale[tracks.samples][:, tracks.joint]
    floor = np.full((tracks.num_segments, tracks.joint.size), TOP, dtype=np.intp)
    for level in range(TOP, -1, -1):  # 24 levels, each over every sample and track at once
        decoded = decode_stored(tracks, np.full_like(floor, level))
        effect = track_factor(tracks.path, tracks.values, decoded, parent) * scale  # (K, A)
        worst = np.zeros(floor.shape)
        np.maximum.at(worst, segment, effect)
        floor = np.where(worst <= source.tolerance, level, floor)
    return floor


def _segment_worst(errors: FloatArray, segment: IntArray, segments: int) -> tuple[FloatArray, IntArray, IntArray]:
    """Per segment: largest error, and the row and joint where it is (rows index ``errors``)."""
    flat = errors.max(axis=1)
    worst = np.full(segments, -1.0)
    np.maximum.at(worst, segment, flat)
    rows = np.full(segments, -1, dtype=np.intp)
    hit = flat >= worst[segment]
    rows[segment[hit]] = np.nonzero(hit)[0]
    joints = np.argmax(errors[np.maximum(rows, 0)], axis=1)
    return worst, rows, joints


def _candidates(tracks: Tracks, reach: Reach) -> IntArray:
    """``(J, D, 3)`` the animated track of each ancestor and path of every joint, ``-1`` where none."""
    index = np.full((reach.chain.shape[0] + 1, 3), -1, dtype=np.intp)
    index[tracks.joint, tracks.path] = np.arange(tracks.joint.size)
    return index[reach.chain]  # chain -1 reads the last row: no track


def raise_worst(
    source: Source,
    tracks: Tracks,
    reach: Reach,
    levels: IntArray,
    decoded: FloatArray,
    violations: tuple[IntArray, IntArray, IntArray, FloatArray],
) -> None:
    """Raise, in each violating segment, the track that contributes most per bit to its worst joint.

    ``violations`` is ``(segments, grid samples, joints, excess)`` of the worst error of each.
    """
    segments, samples, joints, excess = violations
    candidates = _candidates(tracks, reach)[joints]  # (V, D, 3)
    exists = candidates >= 0
    track = np.maximum(candidates, 0)
    stored = tracks.stored_of_sample[samples][:, None, None]
    factor = track_factor(
        tracks.path[track],
        tracks.values[stored, track],
        decoded[stored, track],
        source.parent_scale[samples[:, None, None], tracks.joint[track]],
    )
    distance = reach.distance[samples, joints]  # (V, D)
    contribution = np.where(tracks.path[track] == TRANSLATION, factor, factor * distance[:, :, None])
    level = levels[segments[:, None, None], track]
    extent = tracks.extent_q[segments[:, None, None], track]  # (V, D, 3, 3)
    cost = component_bits(np.minimum(level + 1, TOP), extent).sum(axis=-1) - component_bits(level, extent).sum(axis=-1)
    cost = np.maximum(cost, 1).astype(np.float64)
    score = np.where(exists & (level < TOP), contribution / cost, -1.0).reshape(segments.size, -1)
    best = np.argmax(score, axis=1)
    stuck = score[np.arange(segments.size), best] < 0.0
    if np.any(stuck):
        raise InvalidInputError(
            f"clip {source.clip.name!r}: the tolerance cannot be met at joint "
            f"{source.skeleton.names[int(joints[stuck][0])]!r}: every track above it is at full precision"
        )
    chosen = track.reshape(segments.size, -1)[np.arange(segments.size), best]
    part = contribution.reshape(segments.size, -1)[np.arange(segments.size), best]
    # levels that remove the excess if the chosen track's share halves per level (1 to 3)
    remaining = np.maximum(part - excess, part / 8.0)
    steps = np.clip(np.ceil(np.log2(part / np.maximum(remaining, 1e-300))), 1, 3).astype(np.intp)
    levels[segments, chosen] = np.minimum(levels[segments, chosen] + steps, TOP)


def _ascend(source: Source, tracks: Tracks, reach: Reach, levels: IntArray, base: FloatArray) -> None:
    segment_of_sample = tracks.segment_of_stored[tracks.stored_of_sample]
    pending = np.arange(source.grid.count)
    while pending.size:
        decoded = decode_stored(tracks, levels)
        errors = sample_errors(source, tracks, base, decoded, pending)
        worst, rows, joints = _segment_worst(errors, segment_of_sample[pending], tracks.num_segments)
        bad = np.nonzero(worst > source.tolerance)[0]
        if not bad.size:
            return
        violations = (bad, pending[rows[bad]], joints[bad], worst[bad] - source.tolerance)
        raise_worst(source, tracks, reach, levels, decoded, violations)
        pending = np.nonzero(np.isin(segment_of_sample, bad))[0]


def _descend(source: Source, tracks: Tracks, levels: IntArray, floor: IntArray, base: FloatArray) -> None:
    """Lower each track a level where its subtree stays within the tolerance (model matrices kept, subtrees redone)."""
    skeleton = source.skeleton
    segment_of_sample = tracks.segment_of_stored[tracks.stored_of_sample]
    bits = component_bits(levels, tracks.extent_q).sum(axis=(0, 2))
    order = np.argsort(-bits, kind="stable")
    decoded = decode_stored(tracks, levels)
    pose = played_pose(base, tracks, decoded[tracks.stored_of_sample])
    model = model_from_pose(skeleton, pose)  # (N, J, 4, 4) at the current levels
    for _ in range(DESCENT_ROUNDS):
        changed = False
        for t in order:  # one track at a time: offline work, each step batched over every segment
            lower = levels[:, t] > floor[:, t]
            if not lower.any():
                continue
            joint, path = int(tracks.joint[t]), int(tracks.path[t])
            trial = decode_stored(tracks, np.where(lower, levels[:, t] - 1, levels[:, t])[:, None], np.array([t]))[:, 0]
            samples = np.nonzero(lower[segment_of_sample])[0]
            with trusted():
                local = pose[samples]
            width = (3, 4, 3)[path]
            local.arrays()[path][:, joint] = trial[tracks.stored_of_sample[samples], :width]
            moved = model[samples]
            model_from_pose(skeleton, local, out=moved, from_joint=joint)
            subtree = skeleton.subtree(joint)
            part = moved[:, subtree]
            errors = shell_error(
                (source.linear[samples][:, subtree], source.origin[samples][:, subtree]),
                (part[..., :3, :3], part[..., :3, 3]),
                source.radii[subtree],
            )
            worst = np.zeros(tracks.num_segments)
            np.maximum.at(worst, segment_of_sample[samples], errors.max(axis=1))
            accept = lower & (worst <= source.tolerance)
            if accept.any():
                levels[accept, t] -= 1
                taken = accept[segment_of_sample[samples]]
                rows = samples[taken]
                model[rows] = moved[taken]
                pose.arrays()[path][rows, joint] = local.arrays()[path][taken, joint]
                changed = True
        if not changed:
            return


def allocate(source: Source, tracks: Tracks, reach: Reach) -> IntArray:
    """Level index ``(S, A)`` of every segment and animated track (see the module docstring)."""
    if not tracks.joint.size:
        return np.zeros((tracks.num_segments, 0), dtype=np.intp)
    base = base_pose(source, tracks)
    floor = floor_levels(source, tracks, reach)
    levels = floor.copy()
    _ascend(source, tracks, reach, levels, base)
    _descend(source, tracks, levels, floor, base)
    return levels
