"""The demo driven by motion matching: headless runs, the HUD's fields, the crowd, the cached database, bad input."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.errors import OssaWarning
from engine.motion_matching import BuildOptions, build_database, load_sources, save_database
from engine.render.scene_renderer import scene_records
from game.demo import game as demo_game
from game.demo import matching_crowd, motion_matching
from game.demo.matching_database import OPTIONS, TAGS, build_key, cache_dir, demo_database
from game.demo.motion_matching import MatchingGame, MatchingPlayer
from game.demo.world import Terrain
from game.model import Model
from tests.game.characters import cached_model
from tests.game.programs import but_kernels, run_recorded

pytestmark = pytest.mark.assets

WALK = "0 down w\n"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory, shared_assets: Path) -> Iterator[Path]:
    """A cache folder of this module's own (``OSSA_CACHE_DIR``): the database is built once here, then loaded."""
    folder = tmp_path_factory.mktemp("ossa-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OSSA_CACHE_DIR", str(folder))
        yield folder


@pytest.fixture(scope="module")
def mannequin() -> Model:
    return cached_model()


def said(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the program wrote to stderr, but for its kernels' notes."""
    return but_kernels(capsys.readouterr().err.strip().splitlines())


def test_the_database_is_built_once_then_loaded_from_the_cache(
    cache: Path, mannequin: Model, capsys: pytest.CaptureFixture[str]
) -> None:
    skeleton = scene_records(mannequin.scene).skeleton
    messages: list[tuple[str, str]] = []
    first = demo_database(skeleton, lambda kind, text: messages.append((kind, text)))
    files = list((cache / "motion-matching").glob("*.npz"))
    assert len(files) == 1
    assert any("building the database from 14 CMU takes" in text for _, text in messages)
    assert not any("left out" in text for _, text in messages)  # every take is a humanoid's (16_01 too)
    assert "jump" in first.tag_names
    messages.clear()
    again = demo_database(skeleton, lambda kind, text: messages.append((kind, text)))
    assert [kind for kind, _ in messages] == ["note"]
    assert "from the cache" in messages[0][1]
    np.testing.assert_array_equal(again.features, first.features)
    files[0].write_bytes(b"not a database")  # a damaged cache is built again, with a warning
    messages.clear()
    rebuilt = demo_database(skeleton, lambda kind, text: messages.append((kind, text)))
    assert messages[0][0] == "warning"
    assert "does not load" in messages[0][1]
    assert rebuilt.num_frames == first.num_frames
    assert cache_dir() == cache / "motion-matching"


def test_the_cache_key_follows_every_input(tmp_path: Path, mannequin: Model, shared_assets: Path) -> None:
    takes = sorted((shared_assets / "cmu_locomotion_bvh").glob("*.bvh"))[:2]
    skeleton = scene_records(mannequin.scene).skeleton
    key = build_key(takes, TAGS, skeleton, OPTIONS)
    assert build_key(takes, TAGS, skeleton, OPTIONS) == key
    tags = tmp_path / "tags.toml"
    tags.write_text(TAGS.read_text() + "\n# changed\n")
    assert build_key(takes, tags, skeleton, OPTIONS) != key
    assert build_key(takes[:1], TAGS, skeleton, OPTIONS) != key
    assert build_key(takes, TAGS, skeleton, type(OPTIONS)(mirror=False)) != key
    other = scene_records(cached_model().scene).skeleton
    assert build_key(takes, TAGS, other, OPTIONS) == key  # the same skeleton read again


def test_the_character_walks_where_it_is_asked(cache: Path, mannequin: Model) -> None:
    database = demo_database(scene_records(mannequin.scene).skeleton, lambda kind, text: None)
    player = MatchingPlayer(mannequin, Terrain(), database)
    for _ in range(180):
        player.update(1 / 60, np.array([1.0, 0.0, 0.0]), False, False)
    assert player.position[0] > 2.0  # 3 s towards +x at 1.4 m/s
    assert abs(player.position[2]) < 0.5
    yaw = player.matcher.yaws[0]
    assert abs(yaw - np.pi / 2) < 0.3
    desired, predicted = player.trajectories()
    assert desired.shape == predicted.shape == (4, 3)
    assert np.all(desired[1:, 0] > player.position[0])  # both go on ahead
    assert np.all(predicted[1:, 0] > player.position[0])
    hud = player.hud()
    assert hud[0].startswith("clip  ")
    assert hud[0][6:] in database.range_names
    assert hud[1].startswith("frame ")
    assert hud[2].startswith("cost ")
    assert player.matcher.switches[0] >= 1
    assert player.matcher.options.exclude == ("jump",)
    assert not database.frame_tags[player.matcher.frames] & database.tag_mask(["jump"])
    assert np.isfinite(player.matcher.costs[0])
    lowest = (player.world() @ player.model_matrices)[:, 1, 3].min() - player.position[1]
    assert -0.1 < lowest < 0.1  # the feet on the ground, not floating or sunk


def run_demo(directory: Path, *options: str) -> tuple[int, MatchingGame, np.ndarray]:
    (directory / "walk.txt").write_text(WALK)
    argv = ["--motion-matching", "--headless", "--size", "640x360", "--screenshot", "shot.png", *options]
    code, made = run_recorded(
        demo_game.main, motion_matching, "MatchingGame", MatchingGame, directory, argv, cached_model
    )
    with Image.open(directory / "shot.png") as image:
        pixels = np.asarray(image, dtype=float)
    return code, made[0], pixels


@pytest.mark.slow  # 4 s: the whole program, drawn
@pytest.mark.gl
def test_the_motion_matching_demo_runs_headless_with_its_panel_and_trajectories(
    egl: None, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, game, pixels = run_demo(tmp_path, "--frames", "40", "--script", "walk.txt")
    assert code == 0  # 3 would be a GL error left in the context
    player = game.player
    assert isinstance(player, MatchingPlayer)
    assert player.position[2] > 0.4  # walked ahead
    panel = pixels[10:100, 520:630]
    assert np.abs(panel - panel.mean(axis=(0, 1))).max() > 60  # text on the right-hand panel
    yellow = (pixels[..., 0] > 200) & (pixels[..., 1] > 170) & (pixels[..., 2] < 90)
    cyan = (pixels[..., 0] < 120) & (pixels[..., 1] > 200) & (pixels[..., 2] > 200)
    assert yellow[150:].sum() > 3  # both trajectories, below the panels
    assert cyan[150:].sum() > 3
    assert not any("error" in line for line in said(capsys))


@pytest.mark.slow  # 4 s: a database of a CMU take's own skeleton is built
def test_bad_databases_and_options_are_one_line_errors(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], cmu_sources_skeleton: Path
) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really")
    assert demo_game.main(["--motion-matching", "--database", str(bad), "--headless", "--frames", "1"]) == 2
    lines = said(capsys)
    assert len(lines) == 1
    assert lines[0].startswith("python -m game.demo: error: ")
    assert "bad.npz" in lines[0]
    assert demo_game.main(["--database", str(bad), "--headless", "--frames", "1"]) == 2
    assert said(capsys) == ["python -m game.demo: error: --database goes with --motion-matching"]
    assert demo_game.main(["--motion-matching", "--database", str(cmu_sources_skeleton), "--headless"]) == 2
    lines = said(capsys)
    assert len(lines) == 2  # its note, and the error: a database of another skeleton
    assert "is not the database's" in lines[1]


@pytest.fixture
def cmu_sources_skeleton(tmp_path: Path, shared_assets: Path) -> Path:
    """A database file over a CMU take's own skeleton (not the mannequin's)."""
    with pytest.warns(OssaWarning, match="CMU"):
        sources = load_sources([shared_assets / "cmu_locomotion_bvh" / "02_01.bvh"])
    return save_database(build_database(sources, options=BuildOptions(end_margin=5)), tmp_path / "cmu.npz")


@pytest.mark.gl
def test_a_crowd_moves_by_motion_matching(egl: None, cache: Path, tmp_path: Path) -> None:
    argv = ["--crowd", "16", "--motion-matching", "--headless", "--size", "160x90", "--frames", "20"]
    code, made = run_recorded(
        demo_game.main,
        matching_crowd,
        "MatchingCrowdDemo",
        matching_crowd.MatchingCrowdDemo,
        tmp_path,
        argv,
        cached_model,
    )
    assert code == 0
    program = made[0]
    crowd = program.crowd
    assert isinstance(crowd, matching_crowd.MatchingCrowd)
    assert program.drawn_instances == 16
    matcher = crowd.matcher
    assert matcher.searches.min() >= 2  # each searched at least every 0.1 s
    speeds = np.linalg.norm(matcher.trajectory.velocities, axis=-1)
    assert speeds.min() > 0.5  # every one on its way
    np.testing.assert_allclose(crowd.worlds[:, :3, 3] * [1, 0, 1], matcher.positions * [1, 0, 1], atol=1e-12)
