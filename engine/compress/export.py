"""A compressed clip back as an ordinary :class:`~engine.anim.clip.Clip`, sampled at the source's key times."""

from __future__ import annotations

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.compress.clip import CompressedClip
from engine.compress.quantize import DEFAULT
from engine.errors import SkeletonMismatchError
from engine.math._checks import FloatArray, trusted
from engine.math.quat import unflip

_PATHS = ("translation", "rotation", "scale")


def key_times(clip: CompressedClip) -> FloatArray:
    """The times the source had keys at (``info["key_times"]``), or the clip's samples."""
    keys = clip.info.get("key_times", "grid")
    if isinstance(keys, list) and keys:
        return np.asarray(keys, dtype=np.float64)
    return clip.key_times


def decompressed(clip: CompressedClip, skeleton: Skeleton) -> Clip:
    """``clip`` as LINEAR channels at its source's key times: one per track that is not the rest pose."""
    if clip.num_targets != skeleton.num_joints:
        raise SkeletonMismatchError(
            f"clip {clip.name!r} animates {clip.num_targets} joints but the skeleton has {skeleton.num_joints}"
        )
    times = key_times(clip)
    pose = sample(clip, skeleton.rest_pose, times)
    channels = []
    with trusted():
        for p, (name, values) in enumerate(zip(_PATHS, pose.arrays(), strict=True)):
            for j in np.nonzero(clip.kinds[:, p] != DEFAULT)[0]:
                track = unflip(values[:, j], axis=0) if name == "rotation" else values[:, j]
                channels.append(Channel(int(j), name, "LINEAR", times, track))
    channels.sort(key=lambda c: (c.target, _PATHS.index(c.path)))
    return Clip(clip.name, tuple(channels), skeleton.num_joints)
