"""The demo game: scripted runs through ``main`` (headless EGL and a real window), and its parts without GL.

The scripted session (one headless run shared by several tests) at 60 steps per second: W and
Shift from step 0 (run straight ahead: the first item lies 4 m ahead, 0.6 m to the left), W
released at step 84 while E orbits the camera for 20 steps (2/3 rad), W again from step 104; F12
saves screenshots at frames 20 and 130. Each step records the character's position, the
camera's view direction and the score.

Each model file is loaded once (:func:`tests.game.characters.cached_model` stands in for ``load_model``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from engine.anim.local_to_model import model_from_pose
from engine.errors import InvalidInputError
from engine.io.gltf_writer import save_gltf
from engine.math import quat_from_axis_angle, quat_rotate, transform_points
from engine.procedural.mannequin import ANKLE_HEIGHT, build_mannequin
from game import app
from game.app import Controls, read_script
from game.demo import game as demo_game
from game.demo.game import CONE_LIMIT, DemoGame, main, make_parser
from game.demo.player import LOOK_YAW_LIMIT, Player, find_body, find_head, find_legs
from game.demo.world import ITEM_HOVER, Collectibles, Terrain
from game.model import load_model
from tests.conftest import ROOT
from tests.game.characters import cached_model
from tests.game.isolation import in_fresh_process
from tests.game.programs import run_recorded

cached_load = cached_model
STEP = 1.0 / 60.0
SESSION_SCRIPT = """
0 down w
0 down left shift
20 press f12
84 up w
84 down e
104 up e
104 down w
130 press f12
"""
SESSION_FRAMES = 135
TURN = 20 * STEP * 2.0  # E held for 20 steps at the orbit speed of 2 rad/s


class Recorder(DemoGame):
    """The demo, recording after each step: position ``(3,)``, camera view direction ``(3,)``, score."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        self.positions: list[np.ndarray] = []
        self.views: list[np.ndarray] = []
        self.scores: list[int] = []

    def update(self, dt: float, controls: Controls) -> None:
        super().update(dt, controls)
        self.positions.append(self.player.position.copy())
        self.views.append(self.camera.forward.copy())
        self.scores.append(self.score)


def run_demo(directory: Path, script: str, *options: str) -> SimpleNamespace:
    """``main`` with ``script`` as input, in ``directory``, at 320x180; the exit code and the recorded game."""
    path = directory / "input.txt"
    path.write_text(script)
    argv = ["--script", str(path), "--size", "320x180", *options]
    code, made = run_recorded(main, demo_game, "DemoGame", Recorder, directory, argv, cached_load)
    game = made[0]
    return SimpleNamespace(
        code=code, game=game, directory=directory, positions=np.array(game.positions), views=np.array(game.views)
    )


def screenshot(directory: Path, frame: int) -> np.ndarray:
    with Image.open(directory / "screenshots" / f"ossa-demo-{frame:05d}.png") as image:
        return np.asarray(image, dtype=float)


def heading(vector: np.ndarray) -> float:
    """Angle of a vector's horizontal part about +Y, from +Z (radians)."""
    return float(np.arctan2(vector[0], vector[2]))


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a * [1, 0, 1], b * [1, 0, 1]
    return float(np.arccos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1.0, 1.0)))


@pytest.fixture(scope="module")
def session(egl: None, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    run = run_demo(tmp_path_factory.mktemp("demo"), SESSION_SCRIPT, "--headless", "--frames", str(SESSION_FRAMES))
    assert run.code == 0, "the scripted run failed (3 = a GL error was left in ctx.error)"
    assert len(run.positions) == SESSION_FRAMES
    return run


# --- the scripted headless session --------------------------------------------------------------


@pytest.mark.gl
def test_holding_w_moves_along_the_camera_forward(session: SimpleNamespace) -> None:
    start_view = session.views[0]
    assert angle_between(start_view, np.array([0.0, 0.0, 1.0])) < 1e-6  # the camera starts behind, looking +Z
    travel = session.positions[80] - session.positions[0]
    assert travel[2] > 2.5
    assert abs(travel[0]) < 1e-6
    # root motion at the run clip's speed (3 m/s): the blend space reached the run and the feet
    # carry the character exactly as fast as the clip moves them
    speed = np.linalg.norm((session.positions[80] - session.positions[65])[[0, 2]]) / (15 * STEP)
    assert speed == pytest.approx(3.0, abs=0.05)


@pytest.mark.gl
def test_turning_the_camera_turns_the_move_direction(session: SimpleNamespace) -> None:
    view = session.views[-1]
    assert heading(view) == pytest.approx(-TURN, abs=0.02)  # E turns the view right (towards -X)
    travel = session.positions[-1] - session.positions[-13]
    assert np.linalg.norm(travel[[0, 2]]) > 0.4
    assert angle_between(travel, view) < np.radians(3.0)  # W goes where the camera looks now
    assert angle_between(travel, np.array([0.0, 0.0, 1.0])) == pytest.approx(TURN, abs=np.radians(3.0))


@pytest.mark.gl
def test_the_scripted_path_collects_the_first_item(session: SimpleNamespace) -> None:
    scores = np.array(session.game.scores)
    assert scores[0] == 0
    assert scores[83] == 1  # picked up on the straight run
    assert session.game.items.collected[0]
    assert session.game.items.remaining == len(session.game.items.positions) - 1
    reached = int(np.argmax(scores > 0))
    item = session.game.items.positions[0]
    assert np.linalg.norm((session.positions[reached] - item)[[0, 2]]) < demo_game.COLLECT_RADIUS


@pytest.mark.gl
def test_screenshots_are_not_empty_and_differ(session: SimpleNamespace) -> None:
    first, last = screenshot(session.directory, 20), screenshot(session.directory, 130)
    assert first.shape == (180, 320, 3)
    assert first.std() > 10.0
    assert last.std() > 10.0
    assert np.abs(first - last).mean() > 2.0


@pytest.mark.gl
@pytest.mark.assets
@pytest.mark.parametrize(
    ("path", "note"),
    [
        ("khronos/cesium_man.gltf", "plays in place, time-scaled to the speed"),
        ("fox/glTF-Binary/Fox.glb", "read as centimetres"),
    ],
)
def test_other_models_walk_forward(
    egl: None, shared_assets: Path, tmp_path: Path, path: str, note: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_demo(tmp_path, "0 down w\n", "--headless", "--frames", "40", "--model", str(shared_assets / path))
    assert run.code == 0
    travel = run.positions[-1] - run.positions[0]
    assert travel[2] > 0.25  # the model's own facing was turned to +Z: it walks away from the camera
    assert abs(travel[0]) < 1e-6
    assert any(note in line for line in (*run.game.model.notes, *run.game.player.notes))
    assert "Traceback" not in capsys.readouterr().err


# --- a real window ------------------------------------------------------------------------------


def window_session(directory: Path) -> tuple[int, np.ndarray]:
    """The real-window run, in a fresh process (see tests/game/isolation.py): exit code, positions."""
    run = run_demo(directory, "0 down w\n30 press f12\n100 press f12\n", "--frames", "120")
    return run.code, run.positions


@pytest.mark.window
def test_real_window(display: str, tmp_path: Path) -> None:
    code, positions = in_fresh_process(window_session, tmp_path)
    assert code == 0, "the window run failed (3 = a GL error was left in ctx.error)"
    assert len(positions) >= 120
    travel = positions[-1] - positions[0]
    assert travel[2] > 1.0
    first, last = screenshot(tmp_path, 30), screenshot(tmp_path, 100)
    assert first.std() > 10.0
    assert np.abs(first - last).mean() > 2.0


# --- command line -------------------------------------------------------------------------------


def test_without_display_it_says_how_to_run_headless() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run(
        [sys.executable, "-m", "game.demo", "--frames", "1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert "cannot open a window: no DISPLAY or WAYLAND_DISPLAY is set" in done.stderr
    assert "python -m game.demo --headless" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--items", "0"], "--items must be at least 1, got 0"),
        (["--time", "0"], "--time must be a positive number of seconds, got 0.0"),
        (["--model", "no/such/model.glb"], "python -m game.demo: error: no/such/model.glb: model file not found\n"),
    ],
)
def test_bad_options_print_an_error(options: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--headless", *options]) == 2
    assert message in capsys.readouterr().err


def test_bad_options_raise_typed_errors() -> None:
    with pytest.raises(InvalidInputError, match="--items must be at least 1, got -3"):
        DemoGame(make_parser().parse_args(["--items", "-3"]))


def test_script_key_names_may_hold_spaces(tmp_path: Path) -> None:
    path = tmp_path / "input.txt"
    path.write_text("0 down left shift\n3 mouse 4 -2\n")
    down, mouse = read_script(path)
    assert down.args == ("left shift",)
    assert mouse.args == ("4", "-2")


# --- the game without GL ------------------------------------------------------------------------


def new_game(*options: str) -> DemoGame:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app, "load_model", cached_load)
        return DemoGame(make_parser().parse_args(list(options)))


def steps(game: DemoGame, count: int, held: tuple[str, ...] = (), pressed: tuple[str, ...] = ()) -> None:
    controls = Controls(held=set(held))
    controls.pressed.update(pressed)
    for _ in range(count):
        game.update(STEP, controls)
        controls.end_step()


def test_the_camera_stays_in_a_cone_around_the_facing() -> None:
    game = new_game()
    angles = []
    for _ in range(90):  # 3 rad of orbit input while standing
        steps(game, 1, held=("e",))
        angles.append(angle_between(game.camera.forward, game.player.forward))
    assert max(angles) <= CONE_LIMIT + 1e-9
    assert angles[-1] == pytest.approx(CONE_LIMIT, abs=0.005)  # smoothed up to the cone's edge
    assert game.rig.yaw == pytest.approx(np.pi - CONE_LIMIT, abs=1e-6)


def test_the_control_yaw_is_kept_while_a_move_key_is_held() -> None:
    game = new_game()
    steps(game, 60, held=("s",))  # walk towards the camera: the character turns round, the cone swings the camera
    middle = game.player.position.copy()
    steps(game, 30, held=("s",))
    assert angle_between(game.player.position - middle, np.array([0.0, 0.0, -1.0])) < np.radians(1.0)  # no circling
    assert game.control_yaw == pytest.approx(np.pi)
    assert angle_between(game.camera.forward, np.array([0.0, 0.0, 1.0])) > np.radians(45.0)  # the camera swung


def test_escape_pauses_then_quits() -> None:
    game = new_game()
    steps(game, 1, pressed=("escape",))
    assert game.paused
    before = game.player.position.copy()
    steps(game, 10, held=("w",))
    np.testing.assert_array_equal(game.player.position, before)
    steps(game, 1, pressed=("return",))
    assert not game.paused
    steps(game, 1, pressed=("escape",))
    steps(game, 1, pressed=("escape",))
    assert game.finished


def test_time_runs_out_and_enter_restarts() -> None:
    game = new_game("--time", "0.1")
    steps(game, 7)
    assert game.outcome == "lost"
    assert game.time_left == 0.0
    steps(game, 1, pressed=("return",))
    assert game.outcome is None
    assert game.time_left == pytest.approx(0.1 - STEP)


def test_collecting_every_item_wins() -> None:
    game = new_game("--items", "1")
    steps(game, 95, held=("w", "left shift"))
    assert game.outcome == "won"
    assert game.score == 1


# --- the character without GL -------------------------------------------------------------------


def test_feet_stay_on_the_uneven_ground() -> None:
    """While a foot is planted its ankle stands as high above the terrain as the clip has it above flat ground."""
    model = cached_load()
    terrain = Terrain()
    player = Player(model, terrain, position=(-15.0, 10.0))  # walking up and down a 10 % slope
    legs = find_legs(find_body(model.skeleton))
    assert legs is not None
    ankles = [leg.end for leg in legs]
    fitted, unfitted = [], []
    planted = np.zeros(2, dtype=int)
    for k in range(150):
        player.update(STEP, [0.0, 0.0, 1.0], run=False, jump=False)
        if k < 30:
            continue
        world = player.world()
        clip_height = transform_points(model.frame, player.clip_model[ankles, :3, 3])[:, 1]
        for placed, errors in ((player.model_matrices, fitted), (player.clip_model, unfitted)):
            ankle = transform_points(world, placed[ankles, :3, 3])
            errors.append(ankle[:, 1] - terrain.height(ankle[:, 0], ankle[:, 2]) - clip_height)
        planted = np.where(clip_height < ANKLE_HEIGHT + model.frame[1, 3] + 1e-3, planted + 1, 0)
        settled = planted > 6  # planted for 0.1 s: the ground offsets have caught up with the step
        fitted[-1], unfitted[-1] = np.where(settled, fitted[-1], 0.0), np.where(settled, unfitted[-1], 0.0)
    assert np.count_nonzero(fitted) > 50
    assert np.abs(fitted).max() < 0.01
    assert np.abs(unfitted).max() > 0.03  # without IK the feet would float or sink here


def test_head_turns_to_an_item_within_its_limits() -> None:
    model = cached_load()
    player = Player(model, Terrain())
    head = find_head(find_body(model.skeleton))[-1]
    rest = model_from_pose(model.skeleton, model.skeleton.rest_pose)[head, :3, :3]
    facing_in_head = rest.T @ np.linalg.inv(model.frame[:3, :3]) @ [0.0, 0.0, 1.0]  # independent of the solver

    def head_heading() -> float:
        world = player.world() @ player.model_matrices[head]
        return heading(world[:3, :3] @ facing_in_head)

    eye = player.world() @ player.model_matrices[head]
    for side, expected in ((45.0, 45.0), (90.0, np.degrees(LOOK_YAW_LIMIT))):
        target = eye[:3, 3] + quat_rotate(quat_from_axis_angle([0, 1, 0], np.radians(side)), [0, 0, 3.0])
        for _ in range(75):
            player.update(STEP, np.zeros(3), run=False, jump=False, look_at=target)
        assert np.degrees(head_heading()) == pytest.approx(expected, abs=1.5)
    behind = eye[:3, 3] + [0.0, 0.0, -3.0]
    for _ in range(130):
        player.update(STEP, np.zeros(3), run=False, jump=False, look_at=behind)
    assert player.look_point is None  # eased out: a target behind is not looked at
    assert abs(np.degrees(head_heading())) < 5.0


def test_the_generated_graph_jumps_and_lands() -> None:
    """The graph made for a model (``graph=None``; the shipped graph's jump: test_demo_graph.py): jump, then back."""
    model = cached_load()
    player = Player(model, Terrain(), graph=None)
    assert player.graph is not None
    assert not player.graph.strafes
    player.update(STEP, np.zeros(3), run=False, jump=True)
    assert player.graph.state == "jump"
    heights = []
    for _ in range(90):
        player.update(STEP, np.zeros(3), run=False, jump=False)
        heights.append((player.world() @ player.model_matrices)[:, 1, 3].max())
    assert max(heights) - heights[0] > 0.3  # the clip's flight
    assert player.graph.state == "locomotion"  # its exit time, then inertialized back


# --- models, world ------------------------------------------------------------------------------


def test_mannequin_gaits_are_its_root_motion() -> None:
    model = cached_load()
    walk, run = model.gaits["walk"], model.gaits["run"]
    assert walk.root_motion
    assert walk.speed == pytest.approx(1.2, abs=1e-6)  # the generator's walk and run speeds
    assert run.speed == pytest.approx(3.0, abs=1e-6)
    np.testing.assert_allclose(walk.direction, [0.0, 0.0, 1.0], atol=1e-9)
    assert model.notes == ()
    assert find_legs(find_body(model.skeleton)) is not None


@pytest.mark.assets
def test_models_are_brought_to_the_character_frame(shared_assets: Path) -> None:
    cesium = cached_load(shared_assets / "khronos" / "cesium_man.gltf")
    assert any("turned to face +Z" in note for note in cesium.notes)
    gait = cesium.gaits["animation0"]
    assert not gait.root_motion
    assert 0.5 < gait.speed < 1.5
    assert heading(gait.direction) == pytest.approx(0.0, abs=0.1)
    assert cesium.warnings  # its weights do not sum to 1: reported, not raised
    legs = find_legs(find_body(cesium.skeleton))  # unnamed joints: the legs by geometry (engine.anim.humanoid)
    assert legs is not None
    assert [cesium.skeleton.names[leg.end] for leg in legs] == ["node9", "node5"]
    fox = cached_load(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    assert 0.5 < fox.height < 1.0  # centimetres, scaled to metres
    assert fox.roles.idle == "Survey"
    assert fox.gaits["Run"].speed > fox.gaits["Walk"].speed > 0.5
    assert find_body(fox.skeleton) is None  # four legs: not a biped, no foot IK or look-at
    assert "foot IK and look-at off: not a biped" in " ".join(Player(fox, Terrain()).notes)


def test_terrain_normals_match_its_slope() -> None:
    terrain = Terrain()
    x, z = np.meshgrid(np.linspace(-20, 20, 9), np.linspace(-20, 20, 9))
    h = 1e-5
    dx = (terrain.height(x + h, z) - terrain.height(x - h, z)) / (2 * h)
    dz = (terrain.height(x, z + h) - terrain.height(x, z - h)) / (2 * h)
    expected = np.stack((-dx, np.ones_like(dx), -dz), axis=-1)
    expected /= np.linalg.norm(expected, axis=-1, keepdims=True)
    np.testing.assert_allclose(terrain.normal(x, z), expected, atol=1e-8)
    mesh = terrain.mesh(cells=8)
    np.testing.assert_allclose(mesh.positions[:, 1], terrain.height(mesh.positions[:, 0], mesh.positions[:, 2]))


def test_items_are_spaced_and_hover_over_the_ground() -> None:
    terrain = Terrain()
    items = Collectibles(terrain, 12, seed=3)
    xz = items.positions[:, [0, 2]]
    gaps = np.linalg.norm(xz[:, None] - xz[None], axis=-1) + np.eye(12) * 99
    assert gaps.min() >= 3.0
    np.testing.assert_allclose(items.positions[:, 1] - terrain.height(xz[:, 0], xz[:, 1]), ITEM_HOVER)
    np.testing.assert_array_equal(items.collect(items.positions[0] + [0.5, 0, 0], 0.8), [0])
    assert items.transforms(0.0).shape == (11, 4, 4)
    assert not np.allclose(items.nearest([0.0, 0.0, 0.0]), items.positions[0])


@pytest.mark.parametrize(
    ("clips", "notes"),
    [
        ({}, ["no clips: the rest pose glides"]),
        ({"walk": "walk"}, ["no idle clip: the walk slows to a stop", "no run clip: 'walk' plays faster"]),
        ({"Take 001": "wave"}, ["no walk clip ('Take 001' is not a gait): the character glides"]),
        ({"Take 001": "run"}, ["no idle/walk/run clips: 'Take 001' plays in place, time-scaled to the speed"]),
    ],
)
def test_models_missing_clips_fall_back(tmp_path: Path, clips: dict[str, str], notes: list[str]) -> None:
    """The mannequin written again with only some of its clips, renamed: the demo says what it does instead."""
    mannequin = build_mannequin()
    renamed = [dataclasses.replace(mannequin.clips[source], name=name) for name, source in clips.items()]
    model = load_model(save_gltf(tmp_path / "partial.glb", mannequin.skeleton, renamed, [mannequin.mesh]))
    player = Player(model, Terrain())
    for note in notes:
        assert note in player.notes
    assert "no jump clip: Space does nothing" in player.notes
    for _ in range(40):
        player.update(STEP, [0.0, 0.0, 1.0], run=False, jump=True)
    assert player.position[2] > 0.2  # it still goes where it is steered
    assert abs(player.position[0]) < 1e-9
