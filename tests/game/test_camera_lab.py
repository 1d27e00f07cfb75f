"""The camera lab: its experiments checked against closed forms, its report, and scripted runs through
``main`` (headless EGL and a real window).

The scripted session (one headless run shared by several tests), one 60 Hz step per frame: scene 1
until step 20, then 2 (lens view from step 32 to 41), 3 (cone limit raised at step 52), 4, 5, and
Tab back to 1 at step 80; Space pauses at step 84, N steps once at step 88, Esc quits at step 95.
F12 saves screenshots at frames 10, 30, 36, 55, 65, 75 and 86.

The experiments are computed once per process (``run_experiments`` caches them) and the mannequin
is loaded once (:func:`tests.game.characters.cached_model` stands in for ``load_model``).
"""

from __future__ import annotations

import argparse
import csv
import itertools
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from engine.anim.scene import scene_vertices
from engine.camera import camera_axes, look_at
from engine.math import quat_angle
from game import app
from game.app import FIXED_DT, Controls, read_script
from game.camera_lab import experiments as ex
from game.camera_lab import framing, report
from game.camera_lab import lab as lab_module
from game.camera_lab.lab import FIGURE_HEIGHT, HEADER_HEIGHT, CameraLab, build_parser, main
from tests.conftest import ROOT
from tests.game.characters import cached_model
from tests.game.isolation import in_fresh_process
from tests.game.programs import run_recorded

SIZE = "480x270"
SCRIPT = """
10 press f12
20 press 2
30 press f12
32 press v
36 press f12
41 press v
50 press 3
52 press =
55 press f12
60 press 4
65 press f12
70 press 5
75 press f12
80 press tab
84 press space
86 press f12
88 press n
95 press escape
"""
FRAMES = 120


def degrees(radians: float) -> float:
    return float(np.degrees(radians))


# --- the experiments: pure numpy, checked against closed forms --------------------------------------


@pytest.fixture(scope="module")
def runs() -> dict[tuple[str, int], ex.SmoothingRun]:
    return ex.run_experiments().smoothing


def spread(orientations: list[np.ndarray]) -> float:
    """Largest angle (rad) between any two of ``orientations``."""
    return max(float(quat_angle(a, b)) for a in orientations for b in orientations)


def test_target_stands_jumps_and_runs_forwards() -> None:
    np.testing.assert_array_equal(ex.target_position([0.0, 0.49]), [ex.START, ex.START])
    np.testing.assert_array_equal(ex.target_position([0.5, 2.4]), [ex.JUMP_TO, ex.JUMP_TO])
    np.testing.assert_allclose(ex.target_position(ex.DURATION), ex.START, atol=1e-12)  # loops without a jump
    times = np.linspace(ex.RUN_START, ex.DURATION - 0.01, 7)
    velocity = (ex.target_position(times + 1e-6) - ex.target_position(times)) / 1e-6
    np.testing.assert_allclose(np.linalg.norm(velocity, axis=-1), ex.CIRCLE_RADIUS * ex.RUN_RATE, rtol=1e-5)
    heading = ex.target_heading(times)
    facing = np.stack((np.sin(heading), 0 * heading, np.cos(heading)), -1)
    np.testing.assert_allclose(facing, velocity / np.linalg.norm(velocity, axis=-1, keepdims=True), atol=1e-5)


def test_exponential_and_spring_agree_across_frame_rates_naive_does_not(runs) -> None:
    final = {m: spread([runs[m, fps].orientations[-1] for fps in ex.FPS]) for m in ex.METHODS}
    settling = {m: spread([runs[m, fps].orientations[runs[m, fps].index(1.0)] for fps in ex.FPS]) for m in ex.METHODS}
    print("\nmax angle between 30/60/144 FPS: at the end (target running) | 0.5 s after the cut (target still)")
    for method in ex.METHODS:
        print(f"  {method:12s} {final[method]:.3e} rad | {settling[method]:.3e} rad")
    assert settling["exponential"] < 1e-12  # a still target: exact at any frame rate
    assert settling["spring"] < 1e-12
    assert settling["naive"] > 1e-3
    assert max(final["exponential"], final["spring"]) < 2e-4  # a moving target is sampled once a frame
    assert final["naive"] > 1e-3
    assert final["naive"] > 10 * max(final["exponential"], final["spring"])


def test_remaining_angle_after_the_cut_is_the_closed_form(runs) -> None:
    goal = look_at(ex.EYE, ex.look_point(ex.CUT_TIME))
    for fps in ex.FPS:
        steps = np.arange(round(0.7 * fps))  # 0.7 s from the cut (then slerp's nlerp fallback takes over)
        rows = round(ex.CUT_TIME * fps) + steps
        first = float(quat_angle(runs["exponential", fps].orientations[rows[0]], goal))
        exponential = quat_angle(runs["exponential", fps].orientations[rows], goal)
        np.testing.assert_allclose(exponential, first * 0.5 ** (steps / fps / ex.HALF_LIFE), rtol=1e-9, atol=1e-14)
        naive = quat_angle(runs["naive", fps].orientations[rows], goal)
        np.testing.assert_allclose(naive, first * (1.0 - ex.NAIVE_FACTOR / fps) ** steps, rtol=1e-9, atol=1e-14)


def test_time_to_95_percent(runs) -> None:
    table = {(row.method, row.fps): row for row in ex.smoothing_table(runs)}
    naive = [table["naive", fps].time_to_95 for fps in ex.FPS]
    exponential = [table["exponential", fps].time_to_95 for fps in ex.FPS]
    spring = [table["spring", fps].time_to_95 for fps in ex.FPS]
    assert np.ptp(exponential) < 1e-6
    assert np.ptp(spring) < 1e-3
    assert naive[0] < naive[1] < naive[2] < exponential[0]  # (1 - s·dt)ⁿ < exp(-s·n·dt): lower rates are faster
    assert naive[2] - naive[0] > 0.02
    assert table["naive", 144].spread == 0.0
    assert table["naive", 30].spread > 10 * table["exponential", 30].spread


def test_time_to_settle_interpolates_exponential_decay_exactly() -> None:
    times = np.arange(0.0, 3.0, 0.07)  # frames that do not fall on the crossing
    rate = 2.3
    run = ex.SmoothingRun(
        times, np.zeros((len(times), 4)), np.zeros((len(times), 3)), "decay", 1, np.exp(-rate * times)
    )
    assert ex.time_to_settle(run, start=0.0) == pytest.approx(np.log(20.0) / rate, rel=1e-12)
    assert ex.time_to_settle(run, start=0.0, fraction=1e-9) == float("inf")


def test_filters_cut_jitter_and_the_lag_metric_finds_a_known_delay() -> None:
    filters = ex.run_experiments().filters
    for name in ("one-euro", "kalman"):
        assert filters.jitter[name] < filters.jitter["raw"] / 5.0
        assert filters.lag[name] < 0.08
    _, clean, _ = ex.tracker_stream()
    delayed = np.concatenate((np.repeat(clean[:1], 5, axis=0), clean[:-5]))
    assert ex.lag(delayed, clean) == pytest.approx(5.0 / ex.TRACKER_RATE, abs=1e-3)
    assert ex.lag(clean, clean) == 0.0


def test_jitter_of_a_constant_rotation_rate_is_zero() -> None:
    times = np.arange(90) / ex.TRACKER_RATE
    steady = look_at(np.zeros(3), np.stack((np.sin(times), 0 * times, -np.cos(times)), -1))
    assert float(ex.jitter(steady)) < 1e-9


def test_filter_sweep_trades_jitter_for_lag() -> None:
    sweep = ex.filter_sweep(settings=4)
    euro = [p for p in sweep if p.filter == "one-euro"]
    assert [p.filter for p in sweep].count("raw") == 1
    assert np.all(np.diff([p.jitter for p in euro]) > 0)  # more beta: more jitter ...
    assert np.all(np.diff([p.lag for p in euro]) < 0)  # ... and less lag


def test_overhead_look_at_has_no_nan_and_no_flip() -> None:
    overhead = ex.run_experiments().overhead
    tracking = overhead.tracking.orientations
    assert np.isfinite(tracking).all()
    np.testing.assert_allclose(np.linalg.norm(tracking, axis=-1), 1.0, atol=1e-12)
    straight_up = overhead.tracking.index([2.0, 6.0])
    np.testing.assert_allclose(camera_axes(tracking[straight_up])[2], [[0.0, 1.0, 0.0]] * 2, atol=1e-12)
    # the camera turns exactly as much as the direction to the target: bounded, also at the pole
    np.testing.assert_allclose(overhead.steps["tracking"], overhead.target_steps, atol=1e-9)
    assert overhead.target_steps.max() < 1.5
    assert overhead.steps["stateless"].max() > 170.0  # the upright one turns half a turn at the pole


def test_cone_scene_stays_within_its_limits() -> None:
    limit, twist = np.radians(30.0), np.radians(5.0)
    cone = framing.cone_run(limit, twist)
    assert cone.angles["desired"].max() > 90.0
    assert cone.angles["cone"].max() == pytest.approx(30.0, abs=1e-9)
    assert cone.angles["swing"].max() == pytest.approx(30.0, abs=1e-9)
    assert cone.angles["twist"].max() <= 5.0 + 1e-9
    inside = cone.angles["desired"] < 30.0
    np.testing.assert_allclose(cone.angles["cone"][inside], cone.angles["desired"][inside], atol=1e-9)


def test_squad_turns_without_jumps_slerp_jumps_at_the_keys() -> None:
    transitions = ex.run_experiments().transitions
    kinks = transitions.kinks  # |change of angular velocity| between 60 Hz sample intervals, deg/s
    inner_keys = np.round(transitions.key_times[1:-2] * framing.TRANSITION_RATE).astype(int)  # between two blends
    assert kinks["squad"].max() < 5.0
    assert kinks["slerp"][inner_keys - 1].min() > 30.0
    away = np.ones(len(kinks["slerp"]), dtype=bool)
    away[np.round(transitions.key_times * framing.TRANSITION_RATE).astype(int)[:-1] - 1] = False
    assert kinks["slerp"][away].max() < 1e-6  # slerp turns at a constant rate between keys


# --- the report -----------------------------------------------------------------------------------


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="") as stream:
        rows = list(csv.reader(stream))
    return rows[0], rows[1:]


def check_report(directory: Path) -> None:
    header, rows = read_csv(directory / report.SUMMARY_FILE)
    assert header == ["method", "fps", "final_error_deg", "time_to_95_s", "max_diff_vs_144fps_deg"]
    assert [(r[0], int(r[1])) for r in rows] == [(m, fps) for m in ex.METHODS for fps in ex.FPS]
    header, rows = read_csv(directory / report.SMOOTHING_FILE)
    assert header == ["method", "fps", "frame", "time_s", "angle_to_target_deg"]
    assert len(rows) == len(ex.METHODS) * sum(round(ex.DURATION * fps) + 1 for fps in ex.FPS)
    header, rows = read_csv(directory / report.FILTERS_FILE)
    assert header == ["filter", "parameter", "value", "jitter_rad_s2", "lag_ms"]
    assert {r[0] for r in rows} == {"raw", "one-euro", "kalman"}
    for name in (report.SMOOTHING_PLOT, report.FILTERS_PLOT):
        with Image.open(directory / name) as plot:
            assert plot.format == "PNG"
            assert plot.width > 600
            assert plot.height > 300


def test_report_only_writes_the_files_and_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--report", str(tmp_path / "out"), "--report-only"]) == 0
    check_report(tmp_path / "out")
    printed = capsys.readouterr().out
    assert "final error (deg)" in printed
    assert sum(line.startswith(method) for line in printed.splitlines() for method in ex.METHODS) == 9


def test_report_into_a_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("")
    assert main(["--report", str(tmp_path / "taken"), "--report-only"]) == 2
    message = f"python -m game.camera_lab: error: --report {tmp_path / 'taken'}: cannot write the report: File exists"
    assert capsys.readouterr().err == message + "\n"


# --- scripted runs through main --------------------------------------------------------------------


class Recorder(CameraLab):
    """The lab, recording after each step: scene, clock, view mode, cone limit, paused."""

    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(args)
        self.steps: list[tuple[int, float, bool, float, bool]] = []

    def update(self, dt: float, controls: Controls) -> None:
        super().update(dt, controls)
        self.steps.append((self.scene_index, self.clock, self.state.lens, self.state.cone_limit, self.paused))


def run_lab(directory: Path, script: str, *options: str) -> SimpleNamespace:
    """``main`` with ``script`` as input, in ``directory``; the exit code and the recorded steps."""
    path = directory / "input.txt"
    path.write_text(script)
    argv = ["--script", str(path), "--size", SIZE, *options]
    code, made = run_recorded(main, lab_module, "CameraLab", Recorder, directory, argv, cached_model)
    steps = made[0].steps if made else []
    return SimpleNamespace(code=code, directory=directory, steps=steps)


def screenshot(directory: Path, frame: int) -> np.ndarray:
    with Image.open(directory / "screenshots" / f"{CameraLab.title}-{frame:05d}.png") as image:
        return np.asarray(image, dtype=float)


@pytest.fixture(scope="module")
def session(egl: None, tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    run = run_lab(tmp_path_factory.mktemp("lab"), SCRIPT, "--headless", "--frames", str(FRAMES))
    assert run.code == 0, "the scripted run failed (3 = a GL error was left in ctx.error)"
    return run


@pytest.mark.gl
def test_scenes_switch_on_keys(session: SimpleNamespace) -> None:
    scenes = [step[0] for step in session.steps]
    assert len(scenes) == 96  # Esc at step 95 ends the run before --frames
    assert scenes[:20] == [0] * 20
    assert scenes[20:50] == [1] * 30
    assert scenes[50:60] == [2] * 10
    assert scenes[60:70] == [3] * 10
    assert scenes[70:80] == [4] * 10
    assert scenes[80:] == [0] * 16
    clocks = np.array([step[1] for step in session.steps])
    assert clocks[20] == pytest.approx(FIXED_DT)  # a new scene starts from its beginning
    assert clocks[19] == pytest.approx(20 * FIXED_DT)


@pytest.mark.gl
def test_view_pause_step_and_limits_follow_the_keys(session: SimpleNamespace) -> None:
    lens = [step[2] for step in session.steps]
    assert lens[31:41] == [False] + [True] * 9
    assert not any(lens[41:])
    limits = np.degrees([step[3] for step in session.steps])
    np.testing.assert_allclose(limits[:52], 45.0)
    np.testing.assert_allclose(limits[52:], 50.0)
    paused = [step[4] for step in session.steps]
    clocks = [step[1] for step in session.steps]
    assert paused[84:] == [True] * 12
    assert clocks[84] == clocks[87]  # paused
    assert clocks[88] == pytest.approx(clocks[87] + FIXED_DT)  # N: one step
    assert clocks[89] == clocks[88]


@pytest.mark.gl
def test_screenshots_are_not_empty_and_differ(session: SimpleNamespace) -> None:
    frames = [10, 30, 36, 55, 65, 75, 86]
    shots = {frame: screenshot(session.directory, frame) for frame in frames}
    for frame, image in shots.items():
        assert image.shape == (270, 480, 3), frame
        assert image.std() > 10.0, frame
    for a, b in itertools.pairwise(frames):  # each shows another scene or view
        assert np.abs(shots[a] - shots[b]).mean() > 0.5, (a, b)


def test_without_display_it_says_how_to_run_headless(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(app, "load_model", cached_model)
    assert main(["--frames", "1"]) == 2
    assert "--headless" in capsys.readouterr().err


def window_session(directory: Path) -> tuple[int, list]:
    """The real-window run, in a fresh process (see tests/game/isolation.py): exit code, steps."""
    script = "5 press 4\n10 press v\n30 press f12\n60 press 1\n70 press .\n100 press f12\n"
    run = run_lab(directory, script, "--frames", "120", "--report", str(directory / "report"))
    return run.code, run.steps


@pytest.mark.window
def test_real_window(display: str, tmp_path: Path) -> None:
    code, steps = in_fresh_process(window_session, tmp_path)
    assert code == 0, "the window run failed (3 = a GL error was left in ctx.error)"
    assert len(steps) == 120
    assert steps[29][:3] == (3, pytest.approx(25 * FIXED_DT), True)
    assert steps[-1][1] == pytest.approx(10 * FIXED_DT + 50 * 2 * FIXED_DT)  # x2 from step 70
    first, last = screenshot(tmp_path, 30), screenshot(tmp_path, 100)
    assert first.std() > 10.0
    assert last.std() > 10.0
    assert np.abs(first - last).mean() > 0.5
    check_report(tmp_path / "report")


def test_parser_and_readme_screenshot_script() -> None:
    assert build_parser().parse_args([]).scene == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--scene", "6"])
    with pytest.raises(SystemExit):
        main(["--report-only"])
    events = read_script(ROOT / "game" / "camera_lab" / "screenshot.txt")
    assert max(e.frame for e in events) < 40  # the README command runs 40 frames


def test_a_giant_is_drawn_human_sized_and_whole_in_every_scene(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mannequin at 4.5 m (RobotExpressive's height as read): drawn 1.8 m tall, in frame of every observer.

    The scenes' cameras, paths and cones are human-sized; drawn at its own size the figure ran out
    of the panes.
    """
    monkeypatch.setattr(app, "load_model", cached_model)
    scale = 4.5 / cached_model(None).height  # the mannequin's file is in metres
    lab = CameraLab(app.parse_args(build_parser(), ["--scale", str(scale)]))
    assert lab.model.height == pytest.approx(4.5)
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"python -m game.camera_lab: note: mannequin.glb: drawn 1.8 m tall, not {lab.model.height:.2f} m: "
        "the lab's scenes are human-sized"
    )
    lab.size = (960, 540)
    for index in range(len(lab.scenes)):
        lab.select(index)
        for t in np.linspace(0.0, lab.scene.duration, 7):
            frame, world = lab.figure_pose(lab.scene.figure(float(t)))
            points = scene_vertices(lab.model.scene, lab.model.scene.frame(world[None] @ frame.world, None))
            points = points.reshape(-1, 3)
            assert np.ptp(points[:, 1]) <= 1.01 * FIGURE_HEIGHT
            panes = len(lab.scene.panes)
            view, projection = lab._camera(lab.scene.pane(0, float(t)).lens, (960 / panes) / (540 - HEADER_HEIGHT))
            clip = np.concatenate([points, np.ones((len(points), 1))], axis=1) @ (projection @ view).T
            assert (np.abs(clip[:, :2] / clip[:, 3:]) < 1.0).all(), (index, t)
