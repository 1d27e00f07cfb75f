"""The guarantee on real clips: CMU mocap, a Khronos character, the Fox (keys off a 24 Hz grid), the mannequin."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.anim import sample
from engine.compress import compress_clip
from engine.errors import OssaWarning
from engine.io.clip_sources import ClipSource, read_clip_sources
from tests.compress.reference import shell_displacement

ROOT = Path(__file__).resolve().parents[2]


def clips_of(path: Path) -> list[ClipSource]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        return read_clip_sources(path)[0]


def check(source: ClipSource) -> float:
    """Compress ``source``, measure it with scipy at every key, midpoint and sample; the largest displacement (m)."""
    compressed = compress_clip(source.skeleton, source.clip, metres_per_unit=source.metres_per_unit)
    keys = np.unique(np.concatenate([c.times for c in source.clip.channels if c.path != "weights"]))
    grid = compressed.start + np.arange(compressed.num_samples) / compressed.rate
    times = np.unique(np.concatenate((keys, 0.5 * (keys[1:] + keys[:-1]), grid)))
    radii = np.full(source.skeleton.num_joints, 0.03 / source.metres_per_unit)
    rest = source.skeleton.rest_pose
    moved = shell_displacement(
        source.skeleton, sample(source.clip, rest, times), sample(compressed, rest, times), radii
    )
    moved = moved.max() * source.metres_per_unit
    assert moved <= 1e-4 * (1 + 1e-9), (source.name, moved)
    assert compressed.info["max_error_m"] <= 1e-4
    return float(moved)


@pytest.mark.assets
@pytest.mark.parametrize(
    "relative", ["cmu_locomotion_bvh/09_01.bvh", "fox/glTF-Binary/Fox.glb", "khronos/cesium_man.gltf"]
)
def test_real_clips_hold_the_tolerance(shared_assets: Path, relative: str) -> None:
    for source in clips_of(shared_assets / relative):
        check(source)


def test_the_mannequin_clips_hold_the_tolerance() -> None:
    sources = clips_of(ROOT / "assets" / "mannequin.glb")
    for source in sources[:3]:
        check(source)


@pytest.mark.slow
@pytest.mark.assets
def test_every_shared_mocap_take_and_character_holds_the_tolerance(shared_assets: Path) -> None:
    paths = sorted((shared_assets / "cmu_locomotion_bvh").glob("*.bvh"))
    paths += [
        shared_assets / "pirouette_bvh" / "pirouette.bvh",
        shared_assets / "pymo_av_walk_bvh" / "AV_8Walk_Meredith_HVHA_Rep1.bvh",
    ]
    paths += [shared_assets / "gdquest_mannequiny" / "mannequiny.glb"]
    for path in paths:
        for source in clips_of(path):
            check(source)
