"""Calibration frames: a converter's reference T-pose as frame 0 is told from capture, said, and left out.

The ground truth for the real takes is ``../shared/assets/cmu_locomotion_bvh/README.md``: frame 0
of the MotionBuilder-friendly cgspeed files (2010 release: a T-pose frame with compensation
angles) and of the Daz-friendly ones is a reference pose, 16_11 (re-written, no added frame) and
131_02 (3ds Max conversion) start with a captured frame.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.cli import main
from engine.io import load_character
from engine.io.bvh import CALIBRATION_JUMP, load_bvh, parse_bvh
from tests.anim.rigs import rig, to_bvh, walk

CALIBRATED = [
    "02_01",
    "02_02",
    "02_03",
    "07_01",
    "08_01",
    "09_01",
    "35_01",
    "16_01",
    "07_06",
    "16_15",
    "16_31",
    "09_12",
]
CAPTURED = ["16_11", "131_02"]
NOTE = "frame 0 is the converter's calibration pose (a T-pose), not capture: the take plays from frame 1"


def take(shared_assets: Path, name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CMU units are read with a warning (tests/io/test_bvh.py)
        return load_bvh(shared_assets / "cmu_locomotion_bvh" / f"{name}.bvh")


@pytest.mark.assets
@pytest.mark.parametrize("name", CALIBRATED + CAPTURED)
def test_the_cmu_takes_frame_0_as_their_readme_says(shared_assets: Path, name: str) -> None:
    anim = take(shared_assets, name)
    assert anim.calibration_frames == (name in CALIBRATED)
    assert anim.calibration_note == (NOTE if name in CALIBRATED else None)


@pytest.mark.assets
def test_other_mocap(shared_assets: Path) -> None:
    """The pirouette is a Daz-friendly conversion (its frame 0 a T-pose); PyMO's walk starts captured."""
    assert load_bvh(shared_assets / "pirouette_bvh" / "pirouette.bvh").calibration_frames == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # inches, with a warning
        walk_take = load_bvh(shared_assets / "pymo_av_walk_bvh" / "AV_8Walk_Meredith_HVHA_Rep1.bvh")
    assert walk_take.calibration_frames == 0


@pytest.mark.assets
def test_the_captured_clip_starts_at_frame_1(shared_assets: Path) -> None:
    anim = take(shared_assets, "02_01")
    captured, whole = anim.captured_clip, anim.clip
    assert whole.duration == pytest.approx(343 * anim.frame_time)  # every frame, as the file has them
    assert captured.duration == pytest.approx(342 * anim.frame_time)
    assert captured.name == whole.name
    for mine, theirs in zip(captured.channels, whole.channels, strict=True):
        np.testing.assert_array_equal(mine.values, theirs.values[1:])
        np.testing.assert_allclose(mine.times, theirs.times[1:] - theirs.times[1], atol=1e-15)
    captured_take = take(shared_assets, "16_11")
    assert captured_take.captured_clip is captured_take.clip


def walk_after(rest_frames: int, nudge: float = 0.0) -> str:
    """BVH text of a CMU-rig walk, arms down, after ``rest_frames`` frames of its T-pose (root turned by ``nudge``°)."""
    cmu = rig("cmu")
    translations, rotations = walk(cmu, np.arange(60) / 60.0)
    for arm, angle in (("LeftArm", -70.0), ("RightArm", 70.0)):  # the capture's arms hang down
        j = cmu.skeleton.index(arm)
        rotations[:, j] = (
            Rotation.from_euler("z", angle, degrees=True) * Rotation.from_quat(rotations[:, j])
        ).as_quat()
    rest_t = np.repeat(translations[:1], rest_frames, axis=0)
    rest_r = np.tile([0.0, 0.0, 0.0, 1.0], (rest_frames, cmu.skeleton.num_joints, 1))
    rest_r[:, 0] = Rotation.from_euler("z", nudge, degrees=True).as_quat()
    return to_bvh(cmu, np.concatenate((rest_t, translations)), np.concatenate((rest_r, rotations)), 1 / 60)


def read(text: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CMU units, with a warning
        return parse_bvh(text)


def test_a_rest_pose_put_before_a_walk_is_a_calibration_frame() -> None:
    assert read(walk_after(1)).calibration_frames == 1
    assert read(walk_after(0)).calibration_frames == 0


def test_a_root_turned_off_zero_is_capture_however_it_jumps() -> None:
    assert read(walk_after(1, nudge=0.01)).calibration_frames == 0


def test_a_still_start_at_the_rest_pose_is_capture() -> None:
    """Two rest frames, then the walk: frame 0 does not jump into frame 1 (CALIBRATION_JUMP × the median)."""
    assert read(walk_after(2)).calibration_frames == 0
    assert CALIBRATION_JUMP == 10.0


@pytest.mark.assets
def test_inspect_and_convert_say_so(shared_assets: Path, tmp_path: Path, capsys) -> None:
    path = shared_assets / "cmu_locomotion_bvh" / "07_06.bvh"
    assert main(["inspect", str(path)]) == 0
    assert f"note: {NOTE}" in capsys.readouterr().out.splitlines()
    out = tmp_path / "walk.glb"
    assert main(["convert", str(path), str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == f"note: {NOTE}"
    assert "(417 frames, " in printed[-2]
    assert load_character(out).clips["07_06"].duration == pytest.approx(416 * 0.00833333, rel=1e-6)
