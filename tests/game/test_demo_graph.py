"""The demo's locomotion through its graph (game/demo/locomotion.toml): states from inputs, continuity, feet, fallback.

The player code sets parameters only (velocity asked for, grounded, a jump trigger); these tests
look at what comes out — the states the graph reaches, the drawn joints' world positions, the
feet on the ground — measured here, not replayed from the graph. The scripted run goes through
``main`` headless (EGL) with ``game/demo/scripts/locomotion.txt``: 60 steps per second, W from
step 30, Shift from 120, then Ctrl+D (strafe right, facing kept) from 210, then W+Shift and Space
at 330, all released at 420.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from engine.anim import sample
from engine.errors import GLContextError
from engine.math import quat_rotate, transform_points
from engine.render import create_context
from game.app import Controls
from game.demo import game as demo_game
from game.demo.game import DemoGame, main
from game.demo.player import FORWARD, Player, find_body, find_legs
from game.demo.world import Terrain
from game.model import load_model
from tests.conftest import require_or_skip
from tests.game.characters import cached_model
from tests.game.programs import run_recorded
from tests.game.test_placement import FlatTerrain

STEP = 1.0 / 60.0
SCRIPT = Path(demo_game.__file__).with_name("scripts") / "locomotion.txt"
FRAMES = 500
LOOK = np.array([3.0, 1.0, 5.0])


class Recorder(DemoGame):
    """The demo, recording after each step: graph state, position, facing, the graph's vx parameter."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        self.states: list[str] = []
        self.positions: list[np.ndarray] = []
        self.forwards: list[np.ndarray] = []
        self.sideways: list[float] = []

    def update(self, dt: float, controls: Controls) -> None:
        super().update(dt, controls)
        graph = self.player.graph
        assert graph is not None
        self.states.append(graph.state)
        self.positions.append(self.player.position.copy())
        self.forwards.append(self.player.forward.copy())
        self.sideways.append(float(graph.runtime.parameters.get("vx")[0]))


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    try:
        context = create_context(standalone=True)
    except GLContextError as exc:
        require_or_skip(f"no OpenGL 4.3 context for the headless run: {exc}", "OSSA_REQUIRE_GL")
    context.__exit__(None, None, None)
    context.release()
    directory = tmp_path_factory.mktemp("demo_graph")
    argv = ["--script", str(SCRIPT), "--size", "320x180", "--headless", "--frames", str(FRAMES)]
    code, made = run_recorded(main, demo_game, "DemoGame", Recorder, directory, argv, cached_model)
    game = made[0]
    return SimpleNamespace(
        code=code,
        states=game.states,
        positions=np.array(game.positions),
        forwards=np.array(game.forwards),
        sideways=np.array(game.sideways),
    )


def runs(states: list[str]) -> list[str]:
    """The states in order, each run of equal states once."""
    return [s for k, s in enumerate(states) if k == 0 or states[k - 1] != s]


def speed(positions: np.ndarray, start: int, end: int) -> float:
    """Mean horizontal speed between two steps, m/s."""
    return float(np.linalg.norm((positions[end] - positions[start])[[0, 2]]) / ((end - start) * STEP))


@pytest.mark.gl
def test_the_inputs_reach_every_state(scripted: SimpleNamespace) -> None:
    assert scripted.code == 0
    assert runs(scripted.states) == ["idle", "locomotion", "jump", "land", "locomotion", "idle"]
    assert set(scripted.states[:30]) == {"idle"}
    assert scripted.states[331] == "jump"  # Space at step 330: the trigger fires in that step's update


@pytest.mark.gl
def test_the_scripted_gaits_move_at_the_clips_speeds(scripted: SimpleNamespace) -> None:
    """Root motion from the graph: the walk's 1.2 m/s and the run's 3.0 m/s (the clips' own travel)."""
    assert speed(scripted.positions, 90, 120) == pytest.approx(1.2, abs=0.03)
    assert speed(scripted.positions, 180, 210) == pytest.approx(3.0, abs=0.05)


@pytest.mark.gl
def test_ctrl_strafes_with_the_facing_kept(scripted: SimpleNamespace) -> None:
    """Ctrl+D: the character keeps facing +Z and walks to its right (−X): the blend space's sideways samples."""
    forwards = scripted.forwards[240:300]
    assert np.abs(forwards - scripted.forwards[209]).max() < 1e-9  # the facing does not move
    assert scripted.forwards[209] @ FORWARD > 0.999
    assert scripted.sideways[270:300].max() < -0.8  # vx: to its right at the sideways walk's 0.84 m/s
    travel = scripted.positions[299] - scripted.positions[270]
    assert travel[0] < -0.35
    assert abs(travel[2]) < 0.03
    assert speed(scripted.positions, 270, 299) == pytest.approx(0.84, abs=0.03)


# --- continuity ----------------------------------------------------------------------------------

PLAN: list[tuple[float, dict]] = [
    (0.8, {"move": [0.0, 0.0, 0.0]}),
    (1.2, {"move": [0.0, 0.0, 1.0]}),
    (1.2, {"move": [0.0, 0.0, 1.0], "run": True}),
    (1.2, {"move": [1.0, 0.0, 0.0], "strafe": True}),
    (0.8, {"move": [0.0, 0.0, -1.0], "strafe": True}),
    (1.5, {"move": [0.0, 0.0, 1.0], "run": True, "jump": True}),
    (1.5, {"move": [0.0, 0.0, 0.0]}),
]
"""Seconds of each input: stand, walk, run, strafe left, back, run and jump, stop."""


def play(player: Player, step: Callable[[], float]) -> tuple[list[np.ndarray], list[np.ndarray], list[float], set]:
    """The plan at steps of ``step()`` seconds: local rotations, world joint positions, the steps, the states."""
    rotations, positions, steps, states = [], [], [], set()
    for seconds, keys in PLAN:
        clock, first = 0.0, True
        while clock < seconds:
            dt = step()
            player.update(
                dt,
                keys["move"],
                keys.get("run", False),
                keys.get("jump", False) and first,
                LOOK,
                keys.get("strafe", False),
            )
            clock, first = clock + dt, False
            rotations.append(player.pose.rotations.copy())
            positions.append((player.world() @ player.model_matrices)[:, :3, 3])
            steps.append(dt)
            assert player.graph is not None
            states.add(player.graph.state)
    return rotations, positions, steps, states


@pytest.fixture(scope="module")
def clip_angular_speed() -> float:
    """The fastest any joint turns in the graph's clips, rad/s (finite differences at 480 Hz)."""
    model = cached_model()
    locomotion = Player(model, Terrain()).graph
    assert locomotion is not None
    fastest = 0.0
    for leaf in locomotion.runtime.graph.leaves:
        clip = leaf.clip
        rotations = sample(clip, model.skeleton.rest_pose, np.arange(0.0, clip.duration, 1 / 480)).rotations
        dots = np.abs(np.sum(rotations[1:] * rotations[:-1], axis=-1))
        fastest = max(fastest, float((2.0 * np.arccos(np.clip(dots, 0.0, 1.0))).max() * 480))
    return fastest


@pytest.mark.parametrize("rate", [30, 60, 144, "random"])
def test_the_pose_is_continuous_across_transitions(rate: int | str, clip_angular_speed: float) -> None:
    """Every joint turns at most 1.25× as fast as the clips ever turn one, and moves at most 12 m/s in the world.

    Through every transition of the session (idle, walk, run, strafe, back, jump, land) with the
    IK, the look-at and the inertialized transitions, at 30, 60 and 144 steps per second and at
    random steps of 1/200-1/20 s. A pop of 5° in one step at 144 FPS would turn at 12.6 rad/s.
    """
    rng = np.random.default_rng(11)
    player = Player(cached_model(), Terrain())
    rotations, positions, steps, states = play(
        player, (lambda: rng.uniform(1 / 200, 1 / 20)) if rate == "random" else (lambda: 1.0 / float(rate))
    )
    assert states == {"idle", "locomotion", "jump", "land"}
    dt = np.array(steps[1:])
    dots = np.abs(np.sum(np.stack(rotations[1:]) * np.stack(rotations[:-1]), axis=-1))
    turn = 2.0 * np.arccos(np.clip(dots, 0.0, 1.0)).max(axis=-1)
    assert clip_angular_speed == pytest.approx(11.8, abs=0.2)
    assert (turn / dt).max() < 1.25 * clip_angular_speed
    moved = np.linalg.norm(np.diff(np.stack(positions), axis=0), axis=-1).max(axis=-1)
    assert (moved / dt).max() < 12.0


# --- feet ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("move", "run", "strafe", "drift"),
    [
        ([0.0, 0.0, 1.0], False, False, 0.002),  # walk 1.2 m/s
        ([1.0, 0.0, 0.0], False, True, 0.002),  # strafe left 0.84 m/s
        ([0.0, 0.0, 1.0], True, False, 0.006),  # run 3.0 m/s
        ([0.0, 0.0, 0.7], True, False, 0.02),  # half way from walk to run, 2.1 m/s: synced at neither's rate
    ],
)
def test_feet_do_not_slide(move: list[float], run: bool, strafe: bool, drift: float) -> None:
    """While an ankle is planted (within 5 mm of its lowest) it moves at most ``drift`` metres in the world.

    On flat ground after 2 s of steady input, over 2 s (two to six stances per foot). Moving by the
    velocity asked for instead of the graph's root motion would slide the planted feet of the walk/run
    blend: synced, the walk plays faster and the run slower than their own rates.
    """
    model = cached_model()
    player = Player(model, FlatTerrain())
    legs = find_legs(find_body(model.skeleton))
    assert legs is not None
    ankles = []
    for k in range(240):
        player.update(STEP, move, run, False, None, strafe)
        if k >= 120:
            ankles.append(transform_points(player.world(), player.model_matrices[[leg.end for leg in legs], :3, 3]))
    world = np.stack(ankles)
    stances = 0
    for foot in range(2):
        height = world[:, foot, 1]
        planted = np.nonzero(height < height.min() + 0.005)[0]
        for stance in np.split(planted, np.nonzero(np.diff(planted) > 1)[0] + 1):
            if stance.size < 4:  # a touch at a stance's edge of the window
                continue
            stances += 1
            ground = world[stance, foot][:, [0, 2]]
            assert np.linalg.norm(ground - ground[0], axis=-1).max() < drift
    assert stances >= 3
    assert np.linalg.norm(player.velocity) > 0.8  # it did travel meanwhile


# --- the jump trigger ----------------------------------------------------------------------------


def test_the_jump_trigger_is_consumed_once() -> None:
    """Space held for 5 steps and pressed again in the air: one jump, then the trigger is clear."""
    player = Player(cached_model(), Terrain())
    assert player.graph is not None
    trigger = player.graph.runtime.parameters
    states = []
    for k in range(150):
        jump = k < 5 or k == 30
        player.update(STEP, np.zeros(3), False, jump)
        states.append(player.graph.state)
        if k >= 1:
            assert not trigger.get("jump")[0], k
    assert runs(states) == ["jump", "land", "idle"]
    lift = []
    player = Player(cached_model(), Terrain())
    for k in range(80):
        player.update(STEP, np.zeros(3), False, k == 0)
        lift.append((player.world() @ player.model_matrices)[:, 1, 3].max())
    assert max(lift) - lift[0] > 0.3  # the clip's flight


def test_the_jump_keeps_the_run_s_momentum() -> None:
    """Jumping while running: the character flies on at the take-off velocity, and runs on after landing."""
    player = Player(cached_model(), Terrain())
    for _ in range(90):
        player.update(STEP, [0.0, 0.0, 1.0], True, False)
    take_off = player.velocity.copy()
    player.update(STEP, [0.0, 0.0, 1.0], True, True)
    for _ in range(35):  # into the flight (take-off at 0.4 s of the jump clip)
        player.update(STEP, [0.0, 0.0, 1.0], True, False)
    assert player.graph is not None
    assert player.graph.state == "jump"
    np.testing.assert_allclose(player.velocity, take_off, atol=0.02)


def test_the_wave_plays_over_the_graph_s_pose() -> None:
    """Picking up an item: the wave moves the arm it masks (an override of the graph's layers); the legs keep theirs.

    Two players with the same input, one of them waving: the arm differs, the knees do not.
    """
    model = cached_model()
    waving, still = Player(model, Terrain()), Player(model, Terrain())
    for k in range(70):
        if k == 30:
            waving.celebrate()
        for player in (waving, still):
            player.update(STEP, [0.0, 0.0, 1.0], False, False)
    assert waving.wave is not None
    arm = sorted({c.target for c in waving.wave.clip.channels})
    assert np.abs(waving.pose.rotations[arm] - still.pose.rotations[arm]).max() > 0.1
    legs = find_legs(find_body(model.skeleton))
    assert legs is not None
    knees = [leg.mid for leg in legs]  # below the foot IK's corrections of the hips, the legs' own
    np.testing.assert_allclose(waving.pose.translations[knees], still.pose.translations[knees], atol=1e-12)


# --- models without the graph's clips ------------------------------------------------------------


def test_the_generated_graph_plays_the_mannequin() -> None:
    """``graph=None``: the graph made for the model (idle / 1-D walk-run / jump), without strafing."""
    player = Player(cached_model(), Terrain(), graph=None)
    assert player.graph is not None
    assert not player.graph.strafes
    assert any("Ctrl does nothing" in note for note in player.notes)
    start = player.position.copy()
    for _ in range(120):
        player.update(STEP, [1.0, 0.0, 0.0], False, False, None, strafe=True)  # strafe ignored: it turns and walks
    assert quat_rotate(player.facing, FORWARD)[0] > 0.99
    assert (player.position - start)[0] > 1.2


@pytest.mark.assets
@pytest.mark.parametrize("path", ["khronos/cesium_man.gltf", "fox/glTF-Binary/Fox.glb"])
def test_models_without_strafe_clips_play_a_generated_graph(shared_assets: Path, path: str) -> None:
    model = load_model(shared_assets / path)
    player = Player(model, Terrain())
    assert player.graph is not None
    assert not player.graph.strafes
    start = player.position.copy()
    for _ in range(60):
        player.update(STEP, [0.0, 0.0, 1.0], False, False, None, strafe=True)
    assert player.graph.state == "locomotion"
    travel = player.position - start
    assert travel[2] > 0.25
    assert abs(travel[0]) < 1e-6
