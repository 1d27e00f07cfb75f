"""Fixtures of the compression tests: a walking rig (BVH-like, 60 and 120 Hz) compressed once per session."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from engine.anim.clip import Channel, Clip
from engine.anim.skeleton import Skeleton
from engine.compress import CompressedClip, compress_clip
from engine.math._checks import trusted
from tests.anim.rigs import rig, walk


@dataclass(frozen=True)
class Walk:
    """A skeleton in metres, its walk clip and the clip compressed at the default settings."""

    skeleton: Skeleton
    clip: Clip
    compressed: CompressedClip


def walk_clip(
    rate: float = 60.0, seconds: float = 1.0, *, period: float = 1.0, name: str = "walk"
) -> tuple[Skeleton, Clip]:
    """The CMU-named test rig walking, in metres, one LINEAR key per frame on every joint's rotation and the hips."""
    cmu = rig("cmu")
    skeleton = cmu.skeleton
    metres = Skeleton(skeleton.names, skeleton.parents, np.asarray(skeleton.rest_translations) * cmu.unit)
    times = np.arange(round(seconds * rate) + 1) / rate
    translations, rotations = walk(cmu, times, period=period)
    translations = translations * cmu.unit
    hips = skeleton.index(cmu.expected["hips"])
    with trusted():
        channels = [Channel(j, "rotation", "LINEAR", times, rotations[:, j]) for j in range(skeleton.num_joints)]
        channels.append(Channel(hips, "translation", "LINEAR", times, translations[:, hips]))
    return metres, Clip(name, tuple(channels), skeleton.num_joints)


@pytest.fixture(scope="session")
def walking() -> Walk:
    """A one-second walk at 60 Hz on the 31-joint CMU-named rig, compressed (0.01 cm, 3 cm shells)."""
    skeleton, clip = walk_clip()
    return Walk(skeleton, clip, compress_clip(skeleton, clip))


@pytest.fixture(scope="session")
def looping() -> Walk:
    """The walk in place over exactly one period (first pose = last pose), compressed."""
    skeleton, clip = walk_clip(30.0, 1.0, name="loop")
    hips = next(c for c in clip.channels if c.path == "translation")
    still = hips.values.copy()
    still[:, [0, 2]] = still[0, [0, 2]]  # no forward travel: a loop
    moved = Channel(hips.target, "translation", "LINEAR", hips.times, still)
    channels = (*tuple(c for c in clip.channels if c.path != "translation"), moved)
    clip = Clip("loop", channels, clip.num_targets)
    return Walk(skeleton, clip, compress_clip(skeleton, clip))
