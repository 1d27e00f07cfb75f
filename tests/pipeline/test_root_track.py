"""Root motion in ``ossa build``: the library's clip plays in place, the player's root travel is the source's.

build → library → player: the Animator with root motion on the library clip travels as the
Animator on the source clip (the same keys: to 1e-12) at 30/60/144 FPS and random dt, its poses
within the compression tolerance; the library clip alone does not travel.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

from engine.anim import Clip, sample
from engine.anim.rootmotion import parent_up, planar_from_root
from engine.animator import Animator
from engine.compress import CompressedClip, load_library
from engine.errors import InvalidInputError, OssaWarning
from engine.io import read_clip_sources
from engine.io.clip_sources import ClipSource
from engine.pipeline.build import LIBRARY_NAME, plan, run_build
from engine.pipeline.executors import serial
from engine.pipeline.task import Settings
from tests.compress.files import write_take

STEPS = {"30fps": 1 / 30, "60fps": 1 / 60, "144fps": 1 / 144, "random-dt": None}
FRAMES, COUNT = 40, 3


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory: pytest.TempPathFactory) -> tuple[ClipSource, CompressedClip]:
    folder = tmp_path_factory.mktemp("sources")
    path = write_take(folder / "walk.bvh", frames=40)
    out = tmp_path_factory.mktemp("built")
    run_build(plan([folder], Settings(tolerance=1e-4, shell=0.03)), out, serial)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)  # the rig's lengths are read with a unit warning
        (source,), _ = read_clip_sources(path)
    return source, load_library(out / LIBRARY_NAME)[f"{folder.name}/walk"]


def travel(source: ClipSource, clip: Clip | CompressedClip, step: float | None) -> tuple[np.ndarray, ...]:
    animator = Animator(source.skeleton, COUNT, root_motion=0)
    animator.action(clip).play()
    dts = np.full(FRAMES, step) if step else np.random.default_rng(3).uniform(0.0, 0.05, (FRAMES, COUNT))
    moved, turned, models = np.zeros((COUNT, 3)), np.zeros(COUNT), []
    for dt in dts:
        animator.advance(dt)
        animator.finalize()
        moved += animator.root_motion.translation
        turned += animator.root_motion.yaw
        models.append(animator.model[..., :3, 3].copy())
    return moved, turned, np.array(models)


@pytest.mark.parametrize("step", list(STEPS.values()), ids=list(STEPS))
def test_the_player_travels_as_the_source_clip(
    round_trip: tuple[ClipSource, CompressedClip], step: float | None
) -> None:
    source, compressed = round_trip
    moved, turned, models = travel(source, compressed, step)
    expected_moved, expected_turned, expected_models = travel(source, source.clip, step)
    assert np.abs(expected_moved).max() > 0.05  # the walk travels (6 cm in its 1.3 s)
    np.testing.assert_allclose(moved, expected_moved, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(turned, expected_turned, rtol=0.0, atol=1e-12)
    assert np.abs(models - expected_models).max() < 2e-4


def test_the_library_clip_plays_in_place(round_trip: tuple[ClipSource, CompressedClip]) -> None:
    source, compressed = round_trip
    rest, up = source.skeleton.rest_pose, parent_up(source.skeleton, 0)
    ends = np.array([compressed.start, compressed.duration])
    played = sample(compressed, rest, ends)
    planar = planar_from_root(played.translations[:, 0], played.rotations[:, 0], up)
    assert abs(planar.w[1] - planar.w[0]) < 1e-4
    original = sample(source.clip, rest, ends)
    assert abs(np.diff(planar_from_root(original.translations[:, 0], original.rotations[:, 0], up).w)[0]) > 0.1


def test_a_malformed_stored_root_track_is_refused(round_trip: tuple[ClipSource, CompressedClip]) -> None:
    _, compressed = round_trip
    info = dict(compressed.info, root_track={"joint": 0, "channels": [{"path": "rotation"}]})
    broken = dataclasses.replace(compressed, info=info)
    with pytest.raises(InvalidInputError, match="its stored root track is malformed"):
        broken.root_track(0)
    assert compressed.root_track(1) is None  # the track is the root's
