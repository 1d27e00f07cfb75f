"""Building databases: sources and sidecars, the CMU takes on the mannequin, frame rates, bad clips refused."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, InvalidInputError, OssaWarning, SkeletonMismatchError
from engine.io import load_character
from engine.motion_matching import BuildOptions, ClipSource, TagSpan, build_database, load_sources
from engine.motion_matching.sources import tags_from_name
from tests.motion_matching.conftest import SNAKE_BVH, turning_walk

ROOT = Path(__file__).resolve().parents[2]
REFERENCE_FRAME = {"131_02": False, "16_11": False}  # the others open with a converter's T-pose
DAZ_BLEND = ("07_06", "16_15", "16_31", "09_12")  # the sidecar starts these after their blend out of it


@pytest.mark.assets
def test_cmu_sources_skip_the_reference_pose_and_carry_the_sidecars_tags(cmu_sources) -> None:
    assert len(cmu_sources) == 14
    for source in cmu_sources:
        expected = 0.0 if not REFERENCE_FRAME.get(source.name, True) else 1 / 120
        if source.name in DAZ_BLEND:
            expected = 0.05
        assert source.start == pytest.approx(expected, abs=1e-6), source.name
    by_name = {s.name: s for s in cmu_sources}
    assert by_name["02_03"].tags == ("run",)
    stylised = by_name["131_02"]
    assert stylised.frame_tags([0.2, 5.0, 10.0]) == [("stylised", "idle"), ("stylised", "walk"), ("stylised", "idle")]


@pytest.mark.assets
def test_the_cmu_database_on_the_mannequin(cmu_database, cmu_sources, mannequin) -> None:
    db = cmu_database
    assert db.skeleton is mannequin.skeleton
    assert db.num_ranges == 26
    for source in cmu_sources:
        if source.name == "16_01":
            continue
        r = db.range_index(source.name)
        assert db.range_stops[r] - db.range_starts[r] == int(np.floor((source.end - source.start) * 60 + 1e-9)) + 1
    horizon = db.layout.group("trajectory_positions").columns
    straight = [db.range_index(n) for n in ("02_01", "07_06", "35_01", "16_15", "02_03", "09_01")]
    for r in straight:  # going straight ahead in root space: the facing is the direction of travel
        rows = slice(db.range_starts[r], db.range_stops[r] - 60)
        one_second = db.features[rows, horizon][:, 4:6]
        assert np.all(one_second[:, 1] > 0.6)
        assert np.all(np.abs(one_second[:, 0]) < 0.25 * one_second[:, 1])
    feet = db.layout.group("foot_positions").columns
    heights = db.features[:, feet][:, [1, 4]]
    assert 0.0 < heights.min() < 0.15  # the mannequin's ankles come down to the ground (retargeted, grounded)
    assert {"walk", "run", "idle", "turn", "backward"} <= set(db.tag_names)


@pytest.mark.assets
def test_16_01_retargets_and_a_non_humanoid_is_refused_or_left_out_with_a_warning(
    cmu_sources, mannequin, tmp_path: Path
) -> None:
    jump = [s for s in cmu_sources if s.name == "16_01"]
    db = build_database(jump, mannequin.skeleton, BuildOptions(mirror=False))
    assert db.range_sources == ("16_01",)
    assert {"idle", "jump"} <= set(db.tag_names)
    (tmp_path / "snake.bvh").write_text(SNAKE_BVH)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)  # the unit detection of a non-humanoid
        snake = load_sources([tmp_path / "snake.bvh"])
    with pytest.raises(SkeletonMismatchError, match=r"clip 'snake' cannot be retargeted: .*not a humanoid"):
        build_database(snake, mannequin.skeleton)
    walk = [s for s in cmu_sources if s.name == "02_01"]
    with pytest.warns(OssaWarning, match="clip 'snake' cannot be retargeted.*left out"):
        db = build_database(snake + walk, mannequin.skeleton, BuildOptions(skip_unusable=True))
    assert db.range_sources == ("02_01", "02_01")
    with pytest.warns(OssaWarning, match="left out"), pytest.raises(InvalidInputError, match="no clip source"):
        build_database(snake, mannequin.skeleton, BuildOptions(skip_unusable=True))


@pytest.mark.assets
def test_without_a_character_the_first_skeleton_is_the_database_s(cmu_sources) -> None:
    by_name = {s.name: s for s in cmu_sources}
    db = build_database([by_name["02_01"], by_name["07_06"], by_name["131_02"]], options=BuildOptions(mirror=False))
    assert db.skeleton is by_name["02_01"].skeleton  # Daz and 3ds Max takes retargeted onto the MotionBuilder one
    assert db.range_names == ("02_01", "07_06", "131_02")


def test_features_agree_across_frame_rates(turning_source) -> None:
    """The same horizons in seconds at 30, 60 and 144 fps: the same features at the same times, to sampling error."""
    built = {
        fps: build_database(
            [turning_source],
            options=BuildOptions(fps=fps, horizons=tuple(int(fps * s) for s in (1 / 3, 2 / 3, 1)), mirror=False),
        )
        for fps in (30.0, 60.0, 144.0)
    }
    times = np.array([0.5, 1.0, 1.5, 2.0])
    rows = {fps: db.features[np.round(times * fps).astype(int)] for fps, db in built.items()}
    layout = built[60.0].layout
    for fps in (30.0, 144.0):
        for group in layout.groups:
            tolerance = 0.06 if group.name.endswith("velocities") or group.name == "hip_velocity" else 0.01
            np.testing.assert_allclose(
                rows[fps][:, group.columns], rows[60.0][:, group.columns], atol=tolerance, err_msg=group.name
            )


def test_bad_build_input_is_refused(turning_source, mannequin) -> None:
    with pytest.raises(InvalidInputError, match="at least one clip source"):
        build_database([])
    for options, message in (
        (BuildOptions(fps=0.0), "fps must be a positive number"),
        (BuildOptions(end_margin=-1), "end_margin must be a whole number"),
        (BuildOptions(end_margin=True), "end_margin must be a whole number"),  # type: ignore[arg-type]
        (BuildOptions(horizons=(20, 10)), "ascending positive frame counts"),
        (BuildOptions(weights={"foot": 1.0}), "no feature group 'foot'"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            build_database([turning_source], options=options)
    blip = ClipSource("blip", turning_source.clip, turning_source.skeleton, start=1.0, end=1.01)
    with pytest.raises(InvalidInputError, match="less than the two frames of a range"):
        build_database([blip])
    chain = Skeleton(["a", "b", "c"], [-1, 0, 1], [[0, 0, 0], [0, 1, 0], [0, 1, 0]])
    with pytest.raises(SkeletonMismatchError, match="the database's skeleton: not a humanoid"):
        build_database([turning_source], chain)


def test_bad_sources_are_refused(turning_source, mannequin) -> None:
    clip, skeleton = turning_source.clip, turning_source.skeleton
    for kwargs, message in (
        ({"start": 2.0, "end": 1.0}, "must satisfy 0 <= start < end"),
        ({"end": 3.5}, "must satisfy 0 <= start < end"),
        ({"start": -0.1}, "must satisfy 0 <= start < end"),
        ({"tags": ("Walk",)}, "must be a lower-case word"),
        ({"tags": "walk"}, "must be a list of tags"),
        ({"spans": (TagSpan(1.0, 0.5, ("walk",)),)}, "must be ordered seconds"),
        ({"spans": (TagSpan(0.0, 0.5, ("a b",)),)}, "must be a lower-case word"),
    ):
        with pytest.raises(InvalidInputError, match=message):
            ClipSource("x", clip, skeleton, **kwargs)
    with pytest.raises(InvalidInputError, match="animates 25 joints but its skeleton has 3"):
        ClipSource("x", clip, Skeleton(["a", "b", "c"], [-1, 0, 1]))


def test_tag_spans_hold_both_ends(turning_source) -> None:
    source = ClipSource(
        "x", turning_source.clip, turning_source.skeleton, tags=("walk",), spans=(TagSpan(1.0, 2.0, ("turn",)),)
    )
    times = [np.nextafter(1.0, 0.0), 1.0, 2.0, np.nextafter(2.0, 3.0)]
    assert source.frame_tags(times) == [("walk",), ("walk", "turn"), ("walk", "turn"), ("walk",)]


def test_tags_from_names() -> None:
    assert tags_from_name("Walk_Fast") == ("walk", "fast")
    assert tags_from_name("runLeft90") == ("run", "left")
    assert tags_from_name("02_01") == ()
    assert tags_from_name("a_b_idle") == ("idle",)


def test_load_sources_reads_gltf_clips_with_their_name_tags(tmp_path: Path) -> None:
    sources = load_sources([ROOT / "assets" / "mannequin.glb"])
    by_name = {s.name: s for s in sources}
    assert list(by_name) == list(load_character(ROOT / "assets" / "mannequin.glb").clips)
    assert {"idle", "walk", "run", "jump", "wave", "lean_look"} <= set(by_name)
    assert by_name["lean_look"].tags == ("lean", "look")
    sidecar = tmp_path / "tags.json"
    sidecar.write_text(json.dumps({"clips": {"walk": {"tags": ["loop"], "end": 0.5}}}))
    walk = next(s for s in load_sources([ROOT / "assets" / "mannequin.glb"], tags_file=sidecar) if s.name == "walk")
    assert walk.tags == ("walk", "loop")
    assert walk.end == 0.5


TINY_BVH = (
    "HIERARCHY\nROOT hips\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n"
    " JOINT arm\n {\n  OFFSET 10 0 0\n  CHANNELS 1 Zrotation\n  End Site\n  {\n   OFFSET 10 0 0\n  }\n }\n}\n"
    "MOTION\nFrames: 2\nFrame Time: .5\n0 90 0 0 0 0 0\n0 90 0 0 0 0 45\n"
)


def test_load_sources_refuses_bad_files_and_sidecars(tmp_path: Path) -> None:
    take = tmp_path / "walk.bvh"
    take.write_text(TINY_BVH)
    mannequin = ROOT / "assets" / "mannequin.glb"
    (tmp_path / "take.fbx").write_bytes(b"")
    with pytest.raises(AssetError, match=r"unknown clip file type '\.fbx'"):
        load_sources([tmp_path / "take.fbx"])
    with pytest.raises(AssetError, match="two clips are named 'idle'"):
        load_sources([mannequin, mannequin])
    cases = {
        "bad.toml": ("clips = [", "not a valid TOML file"),
        "bad.json": ("{", "not a valid JSON file"),
        "list.json": ('{"clips": []}', "one table, 'clips'"),
        "extra.toml": ("clips = {}\nmore = 1", "one table, 'clips'"),
        "key.toml": ("[clips.walk]\nspeed = 2", "keys among"),
        "span.toml": ("[clips.walk]\nspans = [{ start = 0.0 }]", "clips.walk: bad entry"),
        "range.toml": ("[clips.walk]\nstart = 0.4\nend = 0.2", "must satisfy 0 <= start < end"),
        "tags.toml": ('[clips.walk]\ntags = ["Run"]', "must be a lower-case word"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises((AssetError, InvalidInputError), match=message):
            load_sources([take], tags_file=path)
    with pytest.raises(AssetError, match="cannot read the tags file"):
        load_sources([take], tags_file=tmp_path / "none.toml")
    (tmp_path / "unknown.toml").write_text('[clips.sprint]\ntags = ["run"]')
    with pytest.warns(OssaWarning, match=r"names clips that are not given: \['sprint'\]"):
        load_sources([take], tags_file=tmp_path / "unknown.toml")


def test_a_static_database_warns_that_its_trajectory_cannot_rank(mannequin) -> None:
    idle = ClipSource("idle", mannequin.clips["idle"], mannequin.skeleton)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(OssaWarning, match=r"\['trajectory_positions', 'trajectory_directions'\] are constant"):
            build_database([idle], options=BuildOptions(mirror=False))


def test_an_equal_skeleton_is_used_as_it_is(mannequin) -> None:
    """A copy of the database's skeleton (another object, the same joints and rest) is not retargeted."""
    skeleton = mannequin.skeleton
    copy = Skeleton(skeleton.names, skeleton.parents, skeleton.rest_translations.copy(), skeleton.rest_rotations)
    clip = turning_walk(mannequin, seconds=1.0, name="twin")
    options = BuildOptions(mirror=False)
    both = build_database([ClipSource("a", clip, skeleton), ClipSource("b", clip, copy)], options=options)
    np.testing.assert_array_equal(both.features[:61], both.features[61:])
