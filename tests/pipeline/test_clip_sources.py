"""The one reader of clip sources (``engine.io.read_clip_sources``): BVH takes from their first captured frame."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.io import read_clip_sources
from engine.io.bvh import load_bvh


@pytest.mark.assets
@pytest.mark.parametrize(("name", "calibration"), [("02_01", 1), ("16_11", 0)])
def test_a_take_is_read_from_its_first_captured_frame(shared_assets: Path, name: str, calibration: int) -> None:
    """02_01's frame 0 is the converter's T-pose (the shared README), 16_11's is capture."""
    path = shared_assets / "cmu_locomotion_bvh" / f"{name}.bvh"
    (source,), _ = read_clip_sources(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CMU units are read with a warning
        anim = load_bvh(path)
    assert source.calibration_frames == calibration
    for got, file in zip(source.clip.channels, anim.clip.channels, strict=True):
        np.testing.assert_array_equal(got.times, file.times[calibration:] - calibration * anim.frame_time)
        np.testing.assert_array_equal(got.values, file.values[calibration:])
    assert source.clip.channels[0].times[0] == 0.0
