"""The blending testbed: scripted runs through ``main`` (headless EGL and a real window), its report,
and its logic driven step by step without GL.

The scripted session (one headless run shared by several tests) at 60 steps per second:
steps 3-4 set the crossfade duration to 0.3 s, step 8 crossfades idle → walk, steps 31-35 raise
idle to 0.5 and 37-41 lower walk to 0.5, step 43 opens the side-by-side view, step 50 flips the
last layer's quaternion signs; F12 saves screenshots at frames 48 and 56.

Each file is loaded once (:func:`tests.game.characters.cached_model` stands in for ``load_model``).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from engine.anim import Pose, Skeleton, blend
from engine.errors import InvalidInputError
from engine.math import quat_angle, quat_from_axis_angle
from game import app
from game.app import FIXED_DT, Controls, read_script
from game.blend_testbed import BlendTestbed, build_parser, main
from game.blend_testbed.methods import angular_errors, blend_three_ways, flip_layer, naive_blend
from game.blend_testbed.playback import body_masks
from game.blend_testbed.report import ERRORS_FILE, PLOT_FILE, WEIGHTS_FILE
from tests.game.characters import cached_model
from tests.helpers import assert_quat_allclose

ROOT = Path(__file__).resolve().parents[2]
STRAFE = ["walk_back", "walk_left", "walk_right", "run_back", "run_left", "run_right"]
CLIPS = ["idle", "walk", "run", "jump", "wave", *STRAFE, "lean_look (additive)"]
"""The mannequin file's clips as the testbed lists them (the strafe gaits are the demo graph's)."""
IDLE, WALK, RUN, ADDITIVE = 0, 1, 2, len(CLIPS) - 1
SCRIPT = """
3 press [
4 press [
6 press 2
8 press x
30 press 1
31 press right
32 press right
33 press =
34 press right
35 press right
36 press 2
37 press left
38 press left
39 press -
40 press left
41 press left
43 press tab
48 press f12
50 press f
56 press f12
"""
FRAMES, FLIP = 60, 50
SIZE = "384x216"


def read_csv(path: Path) -> tuple[list[str], np.ndarray]:
    with path.open(newline="") as stream:
        rows = list(csv.reader(stream))
    return rows[0], np.array(rows[1:], dtype=object)


cached_load = cached_model


def run_scripted(directory: Path, script: str, *options: str) -> SimpleNamespace:
    """``main`` with ``options`` and ``script`` in ``directory`` (F12 screenshots land there)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "script.txt").write_text(script)
    report = directory / "report"
    argv = [*options, "--size", SIZE, "--script", str(directory / "script.txt"), "--report", str(report)]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        patch.setattr(app, "load_model", cached_load)
        code = main(argv)
    header, rows = read_csv(report / WEIGHTS_FILE) if code == 0 else ([], np.zeros((0, 0)))
    return SimpleNamespace(code=code, directory=directory, report=report, header=header, rows=rows)


@pytest.fixture(scope="module")
def session(egl: None, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    run = run_scripted(tmp_path_factory.mktemp("blend"), SCRIPT, "--headless", "--frames", str(FRAMES))
    assert run.code == 0, "the scripted run failed (3 = a GL error was left in ctx.error)"
    run.weights = run.rows[:, 2:].astype(float)
    run.error_header, errors = read_csv(run.report / ERRORS_FILE)
    run.errors = errors[:, 4:].astype(float).reshape(FRAMES, -1, 2)  # (step, joint, slerp/naive)
    return run


# --- scripted headless session ------------------------------------------------------------------


@pytest.mark.gl
def test_weights_follow_the_keys(session: SimpleNamespace) -> None:
    idle, walk = session.weights[:, IDLE], session.weights[:, WALK]
    np.testing.assert_allclose(idle[31:36], [0.1, 0.2, 0.3, 0.4, 0.5])  # right, right, =, right, right
    np.testing.assert_allclose(walk[37:42], [0.9, 0.8, 0.7, 0.6, 0.5])
    np.testing.assert_allclose(session.weights[42:, [IDLE, WALK]], 0.5)
    assert not session.weights[:, [RUN, 3, 4, ADDITIVE]].any()


@pytest.mark.gl
def test_crossfade_lasts_the_chosen_duration(session: SimpleNamespace) -> None:
    idle, walk = session.weights[:, IDLE], session.weights[:, WALK]
    steps = round(0.3 / FIXED_DT)  # the default 0.5 s lowered by two presses of [
    assert idle[7] == 1.0
    assert walk[7] == 0.0
    np.testing.assert_allclose(walk[8 : 8 + steps], np.arange(1, steps + 1) / steps, atol=1e-6)
    np.testing.assert_allclose(idle[8 : 8 + steps] + walk[8 : 8 + steps], 1.0, atol=1e-6)
    assert walk[8 + steps - 2] < 1.0
    assert np.all(walk[8 + steps - 1 : 31] == 1.0)
    assert not idle[8 + steps - 1 : 31].any()


@pytest.mark.gl
def test_three_methods_agree_for_aligned_inputs(session: SimpleNamespace) -> None:
    aligned = session.errors[:FLIP]
    assert aligned[..., 0].max() < 1.0  # the slerp chain: within a degree of the normalised sum
    assert aligned[..., 0].max() > 1e-4  # ... but not equal: crossfade weights are not 1/2
    assert aligned[..., 1].max() < 1e-6  # the naive sum equals ours when nothing is flipped


@pytest.mark.gl
def test_naive_sum_departs_when_a_layer_is_flipped(session: SimpleNamespace) -> None:
    flipped = session.errors[FLIP:]
    assert flipped[..., 0].max() < 1.0  # -q is q for the slerp chain (shortest arc)
    assert flipped[..., 1].max(axis=1).min() > 90.0  # every step has a joint off by more than 90°


@pytest.mark.gl
def test_report_files(session: SimpleNamespace) -> None:
    assert session.header == ["step", "time", *CLIPS]
    assert session.error_header == ["step", "time", "joint", "name", "slerp_deg", "naive_deg"]
    np.testing.assert_allclose(session.rows[:, 1].astype(float), (np.arange(FRAMES) + 1) * FIXED_DT, atol=1e-6)
    with Image.open(session.report / PLOT_FILE) as plot:
        assert plot.format == "PNG"
        assert plot.width > 400
        assert plot.height > 400


@pytest.mark.gl
def test_screenshots_are_not_empty_and_change(session: SimpleNamespace) -> None:
    aligned, flipped = (
        np.asarray(Image.open(session.directory / "screenshots" / f"Ossa blend testbed-{frame:05d}.png"), float)
        for frame in (48, 56)
    )
    assert aligned.shape == (216, 384, 3)
    assert aligned.std() > 10.0
    assert flipped.std() > 10.0
    assert np.abs(aligned - flipped).mean() > 0.5


@pytest.mark.gl
@pytest.mark.assets
def test_fox_runs(egl: None, shared_assets: Path, tmp_path: Path) -> None:
    fox = shared_assets / "fox" / "glTF-Binary" / "Fox.glb"
    script = "2 press 2\n3 press right\n4 press right\n6 press s\n"
    run = run_scripted(tmp_path, script, "--model", str(fox), "--headless", "--frames", "10")
    assert run.code == 0
    assert run.header == ["step", "time", "Survey", "Walk", "Run"]
    np.testing.assert_allclose(run.rows[-1, 2:].astype(float), [1.0, 0.2, 0.0])


@pytest.mark.window
def test_real_window(display: str, tmp_path: Path) -> None:
    # In a fresh interpreter: under pytest, a second pygame OpenGL window in one process (the demo's
    # window test opens one) intermittently finds no current GLX context after set_mode.
    script = "5 press 3\n6 press right\n7 press right\n20 press tab\n30 press f12\n60 press a\n100 press f12\n"
    (tmp_path / "script.txt").write_text(script)
    command = [sys.executable, "-m", "game.blend_testbed", "--frames", "120", "--size", SIZE]
    command += ["--script", "script.txt", "--report", "report"]
    environment = {**os.environ, "DISPLAY": display, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        command, check=False, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"the window run failed (3 = a GL error in ctx.error): {done.stderr[-2000:]}"
    _, rows = read_csv(tmp_path / "report" / WEIGHTS_FILE)
    assert rows.shape[0] == 120
    assert rows[-1, 2 + RUN] == "0.200000"
    assert rows[-1, 2 + ADDITIVE] == "1.000000"
    first, last = (
        np.asarray(Image.open(tmp_path / "screenshots" / f"Ossa blend testbed-{frame:05d}.png"), float)
        for frame in (30, 100)
    )
    assert first.std() > 10.0
    assert np.abs(first - last).mean() > 0.5


def test_without_display_it_says_how_to_run_headless(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(app, "load_model", cached_load)
    assert main(["--frames", "1"]) == 2
    assert "--headless" in capsys.readouterr().err


# --- the program's logic, step by step (no GL) ------------------------------------------------------


def make_testbed(*options: str) -> BlendTestbed:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app, "load_model", cached_load)
        return BlendTestbed(build_parser().parse_args(list(options)))


def step(testbed: BlendTestbed, *keys: str) -> None:
    controls = Controls()
    controls.pressed.update(keys)
    testbed.update(FIXED_DT, controls)


def test_shown_blend_is_the_animators_and_sync_locks_the_phase() -> None:
    testbed = make_testbed()
    for keys in ["2", "right", "right", "right", "m", "3", "right", "right", "right", "5", "right", "m", "m", "a"]:
        step(testbed, keys)  # walk 0.3 upper body, run 0.3, wave 0.1 lower body, additive on
    for _ in range(40):
        step(testbed)
    assert testbed.mask_modes == ["full", "upper", "full", "full", "lower", *["full"] * len(STRAFE), "full"]
    np.testing.assert_allclose(testbed.weights, [1.0, 0.3, 0.3, 0.0, 0.1, *[0.0] * len(STRAFE), 1.0])
    for sync in (True, False):
        testbed.sync = sync
        testbed._evaluate()
        shown = testbed.animator.local_pose
        assert_quat_allclose(testbed.methods.rotations[0], shown.rotations[0], atol=1e-12)
        np.testing.assert_allclose(testbed.methods.translations[0], shown.translations[0], atol=1e-12)
    synced, free = ([a.time[0] / a.duration for a in testbed.playback.actions[k][WALK : RUN + 1]] for k in (1, 0))
    assert synced[0] == pytest.approx(synced[1])
    assert free[0] != pytest.approx(free[1])


def test_sync_time_scale_pause_and_single_step() -> None:
    testbed = make_testbed()
    assert testbed.sync
    assert testbed.sync_names == ["walk", "run"]
    step(testbed, "s")
    assert not testbed.sync
    assert testbed.animator is testbed.playback.animators[0]
    step(testbed, ".")
    clock = testbed.animator.clock[0]
    step(testbed)
    assert testbed.animator.clock[0] - clock == pytest.approx(1.5 * FIXED_DT)
    step(testbed, "space")
    clock = testbed.animator.clock[0]
    step(testbed)
    assert testbed.animator.clock[0] == clock
    step(testbed, "n")
    assert testbed.animator.clock[0] - clock == pytest.approx(1.5 * FIXED_DT)
    assert testbed.paused


def test_masks_cycle_and_reset() -> None:
    testbed = make_testbed()
    masks = body_masks(testbed.skeleton)
    spine = testbed.skeleton.index("spine")
    assert masks["upper"][spine] == 1.0
    assert masks["lower"][testbed.skeleton.index("upper_leg_l")] == 1.0
    step(testbed, "2")
    for mode in ("upper", "lower", "full"):
        step(testbed, "m")
        mask = testbed.playback.actions[1][WALK].mask
        assert testbed.mask_modes[WALK] == mode
        assert mask is None if mode == "full" else np.array_equal(mask, masks[mode])
    step(testbed, "m")
    step(testbed, "r")
    assert testbed.playback.actions[0][WALK].mask is None
    assert testbed.mask_modes == ["full"] * len(CLIPS)


def test_body_masks_without_a_spine_split_at_the_first_branch() -> None:
    skeleton = Skeleton(["root", "hip", "torso", "head", "arm", "leg"], [-1, 0, 1, 2, 2, 1])
    np.testing.assert_array_equal(body_masks(skeleton)["upper"], [0, 0, 1, 1, 1, 0])


def test_bad_clip_names() -> None:
    with pytest.raises(InvalidInputError, match=r"--additive names clip 'nope', but the model's clips are \["):
        make_testbed("--additive", "nope")
    with pytest.raises(InvalidInputError, match=r"--sync needs at least two of the blended clips .*got \['walk'\]"):
        make_testbed("--sync", "walk")
    with pytest.raises(InvalidInputError, match=r"--sync needs .*got \['walk', 'lean_look'\]"):
        make_testbed("--sync", "walk,lean_look")


def test_main_prints_bad_input(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(app, "load_model", cached_load)
    assert main(["--headless", "--additive", "nope"]) == 2
    assert "error: --additive names clip 'nope'" in capsys.readouterr().err


def test_without_an_additive_clip_the_toggle_says_so() -> None:
    testbed = make_testbed("--additive", "none", "--sync", "walk,run,idle")
    assert "lean_look" in testbed.names
    assert testbed.playback.additive_row is None
    step(testbed, "a")
    assert testbed.message == "no additive clip: use --additive CLIP"


# --- the three methods ------------------------------------------------------------------------------


def two_layer_case() -> tuple[Pose, Skeleton]:
    skeleton = Skeleton(["a", "b"], [-1, 0])
    angles = np.array([[0.3, 1.1], [0.9, -0.4]])  # (layer, joint), about three axes
    rotations = quat_from_axis_angle(np.array([[1.0, 0.0, 0.0], [0.0, 0.6, 0.8]]), angles)
    layers = Pose(np.arange(12.0).reshape(2, 2, 3), rotations, np.ones((2, 2, 3)))
    return layers, skeleton


def test_methods_agree_and_only_the_naive_sum_depends_on_signs() -> None:
    layers, skeleton = two_layer_case()
    weights = np.array([0.25, 0.75])
    poses = blend_three_ways(layers, weights, None, skeleton, 1.0)
    reference = blend(skeleton.rest_pose, layers, weights, threshold=1.0)
    assert_quat_allclose(poses.rotations[0], reference.rotations)
    np.testing.assert_allclose(poses.translations, np.broadcast_to(reference.translations, (3, 2, 3)))
    expected = [1e-12, 0.0]  # slerp vs nlerp of 0.6 rad, weights 1/4, 3/4: a small but non-zero gap
    assert np.all(angular_errors(poses)[0] > expected[0])
    assert np.all(angular_errors(poses)[0] < 1.0)
    np.testing.assert_allclose(angular_errors(poses)[1], 0.0, atol=1e-9)
    flipped = blend_three_ways(flip_layer(layers, 1), weights, None, skeleton, 1.0)
    assert_quat_allclose(flipped.rotations[:2], poses.rotations[:2], atol=1e-12)
    # naive: 0.25 q0 - 0.75 q1, normalised: the rotation about the same axis by far from the blend
    assert np.all(angular_errors(flipped)[1] > 20.0)


def test_naive_sum_of_opposite_signs_cancels_to_the_identity() -> None:
    q = quat_from_axis_angle([0.0, 1.0, 0.0], 0.7)
    layers = Pose(np.zeros((2, 1, 3)), np.stack([q, -q])[:, None], np.ones((2, 1, 3)))
    naive = naive_blend(layers, np.array([[0.5], [0.5]]))
    np.testing.assert_array_equal(naive.rotations, [[0.0, 0.0, 0.0, 1.0]])
    np.testing.assert_allclose(quat_angle(blend(Skeleton(["j"], [-1]).rest_pose, layers, [0.5, 0.5]).rotations, q), 0.0)


def test_masks_and_the_rest_pose_fill_in_the_same_way() -> None:
    layers, skeleton = two_layer_case()
    masks = np.array([[1.0, 0.0], [0.0, 1.0]])
    poses = blend_three_ways(layers, np.array([0.4, 0.4]), masks, skeleton, 1.0)
    # joint 0: layer 0 at 0.4 and the rest pose (identity) at 0.6; joint 1: layer 1 at 0.4
    for method in range(3):
        assert quat_angle(poses.rotations[method, 0], [0.0, 0.0, 0.0, 1.0]) == pytest.approx(0.4 * 0.3, abs=0.02)
    assert_quat_allclose(poses.rotations[1:], np.broadcast_to(poses.rotations[0], (2, 2, 4)), atol=0.02)
    empty = blend_three_ways(
        Pose(np.zeros((0, 2, 3)), np.zeros((0, 2, 4)), np.zeros((0, 2, 3))), np.zeros(0), None, skeleton, 1.0
    )
    np.testing.assert_array_equal(empty.rotations, np.broadcast_to(skeleton.rest_rotations, (3, 2, 4)))


def test_readme_screenshot_script_parses() -> None:
    events = read_script(ROOT / "game" / "blend_testbed" / "screenshot.txt")
    assert [e.args[0] for e in events if e.action == "press"][-2:] == ["tab", "f"]
    assert max(e.frame for e in events) < 150  # the README command runs 150 frames
