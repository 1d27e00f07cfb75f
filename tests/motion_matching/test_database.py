"""The database: its clips, tags and frames, weights, the versioned file, and bad databases refused."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from engine.anim.sampling import sample
from engine.errors import AssetError, InvalidInputError
from engine.motion_matching import Database, DatabaseError, load_database, save_database
from engine.motion_matching.database import _replace
from engine.motion_matching.fileformat import ARRAYS, VERSION
from tests.helpers import assert_quat_allclose


def test_range_clips_play_the_stored_frames(turning_database) -> None:
    db = turning_database
    for r in range(db.num_ranges):
        frames = np.arange(db.range_starts[r], db.range_stops[r])
        pose = sample(db.clip(r), db.skeleton.rest_pose, db.frame_time(frames))
        stored = db.poses(frames)
        np.testing.assert_allclose(pose.translations, stored.translations, atol=1e-12)
        assert_quat_allclose(pose.rotations, stored.rotations, atol=1e-12)
    assert db.clip(0) is db.clip(0)  # built once
    assert list(db.clips()) == list(db.range_names)


def test_the_timeline_plays_every_frame_at_its_index_over_fps(turning_database) -> None:
    db = turning_database
    frames = np.arange(db.num_frames)
    timeline = db.timeline()
    assert timeline.duration == pytest.approx((db.num_frames - 1) / db.fps, abs=1e-12)
    pose = sample(timeline, db.skeleton.rest_pose, frames / db.fps)
    stored = db.poses(frames)
    np.testing.assert_allclose(pose.translations, stored.translations, atol=1e-12)
    assert_quat_allclose(pose.rotations, stored.rotations, atol=1e-12)
    # half-way between two frames of a range: the LINEAR key interpolation of those two
    middle = sample(timeline, db.skeleton.rest_pose, np.array([10.5 / db.fps])).translations[0]
    np.testing.assert_allclose(middle, 0.5 * (db.translations[10] + db.translations[11]), atol=1e-12)
    assert db.timeline() is timeline  # built once


def test_frames_ranges_times_and_tags(turning_database) -> None:
    db = turning_database
    assert db.range_names == ("turning_walk", "turning_walk (mirrored)", "run", "run (mirrored)")
    assert db.range_sources == ("turning_walk", "turning_walk", "run", "run")
    assert list(db.range_mirrored) == [False, True, False, True]
    assert db.num_frames == 2 * 181 + 2 * 43  # 3 s and 0.7 s at 60 fps, ends included
    assert list(db.frame_range([0, 180, 181, 361, 362, 447])) == [0, 0, 1, 1, 2, 3]
    np.testing.assert_allclose(db.frame_time([0, 180, 181, 405]), [0.0, 3.0, 0.0, 0.0])
    assert db.tag_names == ("walk", "turn", "run")
    assert int(db.tag_mask(["walk", "run"])) == 0b101
    assert int(db.tag_mask(None)) == 0
    assert np.all(db.frame_tags[:362] == 0b011)
    assert np.all(db.frame_tags[362:] == 0b100)
    ends = [int(s) - 1 for s in db.range_stops]
    assert not db.searchable[ends].any()
    assert db.searchable[[e - 10 for e in ends]].all()
    assert not db.searchable[[e - 9 for e in ends]].any()
    summary = db.summary()
    assert "448 frames at 60 fps" in summary
    assert "run (mirrored): frames 405–447, tags ['run']" in summary
    with pytest.raises(InvalidInputError, match="no tag 'jog'"):
        db.tag_mask(["jog"])
    with pytest.raises(InvalidInputError, match=r"frames must be integers in \[0, 448\)"):
        db.frame_range([448])
    with pytest.raises(InvalidInputError, match="no range 'walk'"):
        db.range_index("walk")
    with pytest.raises(InvalidInputError, match="range index 4 out of range"):
        db.clip(4)


def test_arrays_are_read_only(turning_database) -> None:
    with pytest.raises(ValueError, match="read-only"):
        turning_database.features[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        turning_database.normalized[0, 0] = 1.0


def test_with_weights_rescales_only_the_groups_named(turning_database) -> None:
    db = turning_database
    heavier = db.with_weights({"foot_positions": 1.5, "trajectory_directions": 0.0})
    feet = db.layout.group("foot_positions").columns
    np.testing.assert_allclose(heavier.scale[feet], 2.0 * db.scale[feet], rtol=1e-14)
    assert np.all(heavier.scale[db.layout.group("trajectory_directions").columns] == 0.0)
    hips = db.layout.group("hip_velocity").columns
    np.testing.assert_array_equal(heavier.scale[hips], db.scale[hips])
    back = heavier.with_weights({"trajectory_directions": 1.5, "foot_positions": 0.75})
    np.testing.assert_allclose(back.scale, db.scale, rtol=1e-14)
    with pytest.raises(InvalidInputError, match="no feature group 'hands'"):
        db.with_weights({"hands": 1.0})
    with pytest.raises(InvalidInputError, match="finite number >= 0"):
        db.with_weights({"hip_velocity": -1.0})


def test_the_file_round_trips_exactly(turning_database, tmp_path: Path) -> None:
    db = turning_database
    path = save_database(db, tmp_path / "walk.mmdb")
    assert path.name == "walk.mmdb"  # numpy's ".npz" is not appended
    again = load_database(path)
    for name in ARRAYS:
        if not name.startswith("skeleton_"):
            np.testing.assert_array_equal(getattr(again, name), getattr(db, name), err_msg=name)
    np.testing.assert_array_equal(again.normalized, db.normalized)
    assert again.skeleton.names == db.skeleton.names
    np.testing.assert_array_equal(again.skeleton.rest_rotations, db.skeleton.rest_rotations)
    assert again.layout == db.layout
    assert again.fps == db.fps
    assert again.end_margin == db.end_margin
    assert (again.range_names, again.range_sources, again.tag_names) == (db.range_names, db.range_sources, db.tag_names)


def _rewrite(source: Path, target: Path, *, drop: str | None = None, header: dict | None = None, **arrays) -> Path:
    with np.load(source, allow_pickle=False) as archive:
        data = {name: archive[name] for name in archive.files if name != drop}
    if header is not None:
        data["header"] = np.array(json.dumps({**json.loads(str(data["header"][()])), **header}))
    data.update(arrays)
    with target.open("wb") as file:
        np.savez(file, **data)
    return target


@pytest.fixture(scope="module")
def saved(turning_database, tmp_path_factory) -> Path:
    return save_database(turning_database, tmp_path_factory.mktemp("db") / "db.npz")


def test_bad_files_are_refused_naming_the_file(saved: Path, tmp_path: Path, turning_database) -> None:
    features = turning_database.features
    text = tmp_path / "text.npz"
    text.write_text("not a zip")
    pickled = tmp_path / "pickled.npz"
    with pickled.open("wb") as file:
        np.savez(file, header=np.array([{"format": "x"}], dtype=object))
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(saved.read_bytes()[:5000])
    cases = [
        (tmp_path / "missing.npz", "cannot read the database"),
        (text, "not an Ossa motion-matching database"),
        (pickled, "not an Ossa motion-matching database"),
        (truncated, "not an Ossa motion-matching database"),
        (_rewrite(saved, tmp_path / "format.npz", header={"format": "other"}), "the header's format is not"),
        (
            _rewrite(saved, tmp_path / "version.npz", header={"version": VERSION + 1}),
            f"this Ossa reads version {VERSION}",
        ),
        (_rewrite(saved, tmp_path / "lacking.npz", drop="features"), r"lacks the arrays \['features'\]"),
        (_rewrite(saved, tmp_path / "shape.npz", features=features[:, :5]), r"features must have shape \(448, 27\)"),
        (_rewrite(saved, tmp_path / "nan.npz", offset=np.full(27, np.nan)), "offset holds NaN"),
        (_rewrite(saved, tmp_path / "joints.npz", header={"joint_names": ["a"] * 25}), "joint names must be unique"),
        (_rewrite(saved, tmp_path / "ranges.npz", range_stops=np.array([181, 362, 405, 440])), "ranges must tile"),
        (_rewrite(saved, tmp_path / "tags.npz", header={"tag_names": ["walk"]}), "bits of tags that tag_names"),
        (_rewrite(saved, tmp_path / "header.npz", header={"groups": "x"}), "malformed database header"),
        (_rewrite(saved, tmp_path / "quat.npz", rotations=2.0 * turning_database.rotations), "unit quaternions"),
    ]
    for path, message in cases:
        with pytest.raises(DatabaseError, match=message) as caught:
            load_database(path)
        assert isinstance(caught.value, AssetError), path
        assert caught.value.file == str(path), path


def test_a_database_cannot_be_written_where_it_cannot_go(turning_database, tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="cannot write the database"):
        save_database(turning_database, tmp_path / "no" / "such" / "dir.npz")


def test_bad_databases_are_refused_in_memory(turning_database) -> None:
    db = turning_database
    cases = [
        ({"fps": 0.0}, "fps must be a positive number"),
        ({"range_starts": np.array([0, 180, 362, 405])}, "ranges must tile"),
        ({"range_starts": np.array([0.0, 181.0, 362.0, 405.0])}, "must be integers"),
        ({"range_names": ("a", "b")}, "range_names must hold 4 names"),
        ({"range_mirrored": np.zeros(4)}, "range_mirrored must be"),
        ({"frame_tags": db.frame_tags.astype(np.int64)}, "frame_tags must be"),
        ({"tag_names": ("walk", "walk", "run")}, "distinct names"),
        ({"end_margin": -1}, "end_margin must be >= 0"),
        ({"root_yaws": np.zeros(3)}, r"root_yaws must have shape \(448,\)"),
    ]
    for changes, message in cases:
        with pytest.raises(DatabaseError, match=message):
            _replace(db, **changes)
    assert isinstance(_replace(db), Database)


def test_zip_without_a_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    with path.open("wb") as file:
        np.savez(file, features=np.zeros((2, 2)))
    with pytest.raises(DatabaseError, match="not an Ossa motion-matching database: no header"):
        load_database(path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("header.npy", b"garbage")
    (tmp_path / "garbage.npz").write_bytes(buffer.getvalue())
    with pytest.raises(DatabaseError, match="not an Ossa motion-matching database"):
        load_database(tmp_path / "garbage.npz")
