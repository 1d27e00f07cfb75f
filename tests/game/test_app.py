"""What every program shares (game/app.py): options, one-line messages, headless limits, scripts, sizes.

Each user-facing error is checked for its whole line as printed (``PROGRAM: error: TEXT``), in
every program where it can happen; the real command line is run in a subprocess where the point
is what a user sees (the testbed's ``--report`` from a headless run).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.errors import InvalidInputError
from game import app
from game.app import HEADLESS_FRAMES, frame_limit, key_name, parse_args, parse_size, read_script
from game.blend_testbed import testbed as testbed_module
from game.blend_testbed.report import WEIGHTS_FILE
from game.camera_lab import lab as lab_module
from game.demo import game as demo_module
from tests.conftest import ROOT
from tests.game.characters import cached_models
from tests.game.programs import but_kernels

PROGRAMS: dict[str, Callable[[list[str] | None], int]] = {
    "game.demo": demo_module.main,
    "game.blend_testbed": testbed_module.main,
    "game.camera_lab": lab_module.main,
}
PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "game.demo": demo_module.make_parser,
    "game.blend_testbed": testbed_module.build_parser,
    "game.camera_lab": lab_module.build_parser,
}
LINE = re.compile(r"^python -m game\.(demo|blend_testbed|camera_lab|contact_sheet): (error|warning|note): \S.*$")
"""How every message line a program prints looks."""


def errors_of(program: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """Exit code and stderr lines of ``python -m PROGRAM ARGV`` run in this process."""
    with cached_models():
        code = PROGRAMS[program](argv)
    return code, capsys.readouterr().err.splitlines()


# --- options every program takes --------------------------------------------------------------------


@pytest.mark.parametrize("program", PROGRAMS)
def test_every_program_takes_a_model_and_its_scale(program: str) -> None:
    args = parse_args(PARSERS[program](), ["--model", "take.bvh", "--scale", "0.0254"])
    assert (args.model, args.scale, args.prog) == (Path("take.bvh"), 0.0254, f"python -m {program}")


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "hero.fbx"], "--model hero.fbx: expected a .gltf, .glb, .vrm or .bvh file, got '.fbx'"),
        (["--model", "no/such/hero.glb"], "no/such/hero.glb: model file not found"),
        (["--scale", "0"], "--scale must be a positive number of metres per unit, got 0.0"),
        (["--size", "960by540"], "--size must look like 960x540, got '960by540'"),
        (["--size", "8x600"], "--size must be at least 16x16, got '8x600'"),
        (["--frames", "-2"], "--frames must be 0 (until the window closes) or more, got -2"),
    ],
)
def test_bad_common_options_say_one_line(
    program: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = errors_of(program, ["--headless", *argv], capsys)
    assert code == 2
    assert lines[-1] == f"python -m {program}: error: {message}"
    assert all(LINE.match(line) for line in lines), lines


@pytest.mark.gl
@pytest.mark.parametrize("program", PROGRAMS)
def test_a_size_larger_than_the_driver_renders_says_one_line(
    egl: None, program: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, lines = errors_of(program, ["--headless", "--frames", "1", "--size", "100000x100000"], capsys)
    assert code == 2
    assert re.fullmatch(
        rf"python -m {program}: error: --size 100000x100000 is larger than this OpenGL driver renders, "
        r"(\d+)x\1 at most",
        lines[-1],
    ), lines


def test_headless_without_frames_stops_at_the_stated_default(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_args(demo_module.make_parser(), ["--headless"])
    assert frame_limit(args) == HEADLESS_FRAMES == 300
    assert capsys.readouterr().err == (
        "python -m game.demo: warning: --headless without --frames: stopping after 300 frames\n"
    )
    assert frame_limit(parse_args(demo_module.make_parser(), ["--headless", "--frames", "7"])) == 7
    assert frame_limit(parse_args(demo_module.make_parser(), [])) == 0  # a window runs until closed


@pytest.mark.gl
def test_a_headless_run_without_frames_ends(
    egl: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(app, "HEADLESS_FRAMES", 4)
    monkeypatch.chdir(tmp_path)
    code, lines = errors_of("game.camera_lab", ["--headless", "--size", "64x36", "--screenshot", "end.png"], capsys)
    assert code == 0
    assert lines == ["python -m game.camera_lab: warning: --headless without --frames: stopping after 4 frames"]
    assert (tmp_path / "end.png").is_file()


# --- one format for every message ------------------------------------------------------------------


@pytest.mark.assets
@pytest.mark.parametrize("program", ["game.demo", "game.blend_testbed", "game.camera_lab"])
def test_loader_warnings_and_notes_look_alike_in_every_program(
    program: str, shared_assets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CesiumMan: a loader warning (weights not summing to 1) and notes (faced to +Z, where it stands), a line each."""
    args = parse_args(PARSERS[program](), ["--model", str(shared_assets / "khronos" / "cesium_man.gltf")])
    factory = {"game.demo": demo_module.DemoGame, "game.blend_testbed": testbed_module.BlendTestbed}
    with cached_models():
        factory.get(program, lab_module.CameraLab)(args)
    everything = capsys.readouterr().err.splitlines()
    lines = but_kernels(everything)
    prefix = f"python -m {program}: "
    assert lines == [
        prefix + "note: cesium_man.gltf: 'animation0' travels +90° from +Z: turned to face +Z",
        prefix
        + "note: cesium_man.gltf: no idle clip: standing still on 'animation0' at 0.88 s (the lowest point of each)",
        prefix + "warning: " + lines[2].split(": warning: ", 1)[1],
    ]
    assert "WEIGHTS_0: 210 of 3273 vertices have weights not summing to 1" in lines[2]
    assert all(LINE.match(line) for line in everything)


@pytest.mark.assets
def test_a_bvh_take_says_what_was_assumed(shared_assets: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = parse_args(demo_module.make_parser(), ["--model", str(shared_assets / "pirouette_bvh" / "pirouette.bvh")])
    with cached_models():
        demo_module.DemoGame(args)
    """The unit as ``ossa`` reads it (one rule for both), and the calibration frame left out."""
    assert but_kernels(capsys.readouterr().err.splitlines()) == [
        "python -m game.demo: note: pirouette.bvh: a BVH take, converted in memory (57 joints, bone mesh)",
        "python -m game.demo: note: pirouette.bvh: lengths read as centimetres (detected: the figure's joints span "
        "1.53 m) (--scale to change)",
        "python -m game.demo: note: pirouette.bvh: frame 0 is the converter's calibration pose (a T-pose), not "
        "capture: the take plays from frame 1",
    ]


# --- scripts -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("12 down shiftt", "unknown key 'shiftt' (pygame key names: w, left shift, space, f12, ...)"),
        ("12 press", "'press' takes a key name, got '12 press'"),
        (
            "12 jump w",
            "expected 'FRAME ACTION [ARGS]' with ACTION in ('down', 'up', 'press', 'mouse'), got '12 jump w'",
        ),
        ("x down w", "expected 'FRAME ACTION [ARGS]' with ACTION in ('down', 'up', 'press', 'mouse'), got 'x down w'"),
        ("12 mouse 4", "'mouse' takes 2 numbers (DX DY), got '12 mouse 4'"),
        ("12 mouse 4 left", "'mouse' takes 2 numbers (DX DY), got '12 mouse 4 left'"),
    ],
)
def test_a_bad_script_line_is_named_with_its_number(
    line: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input.txt"
    path.write_text(f"# warm up\n0 down w\n{line}\n")
    with pytest.raises(InvalidInputError) as raised:
        read_script(path)
    assert str(raised.value) == f"--script {path}, line 3: {message}"
    for program in PROGRAMS:  # the same line from every program
        code, lines = errors_of(program, ["--headless", "--frames", "1", "--script", str(path)], capsys)
        assert code == 2
        assert lines[-1] == f"python -m {program}: error: --script {path}, line 3: {message}"


def test_a_missing_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = errors_of("game.demo", ["--headless", "--script", str(tmp_path / "none.txt")], capsys)
    assert code == 2
    assert (
        lines[-1]
        == f"python -m game.demo: error: --script {tmp_path / 'none.txt'}: cannot read it: No such file or directory"
    )


def test_script_key_names_are_pygames_whatever_the_case(tmp_path: Path) -> None:
    path = tmp_path / "input.txt"
    path.write_text("0 down Left Shift\n1 press F12\n2 up W\n3 mouse 4 -2.5\n")
    assert [e.args for e in read_script(path)] == [("left shift",), ("f12",), ("w",), ("4", "-2.5")]
    assert key_name("[+]") == "[+]"
    assert key_name("no such key") is None


# --- the testbed's report ----------------------------------------------------------------------------


@pytest.mark.gl
def test_testbed_report_from_a_headless_command_line(egl: None, tmp_path: Path) -> None:
    """``python -m game.blend_testbed --report DIR --headless --frames N``, as a user types it."""
    command = [sys.executable, "-m", "game.blend_testbed", "--report", "out", "--headless", "--frames", "5"]
    done = subprocess.run(
        [*command, "--size", "64x36"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    with (tmp_path / "out" / WEIGHTS_FILE).open(newline="") as stream:
        rows = list(csv.reader(stream))
    assert len(rows) == 1 + 5
    assert [f"wrote out/{name}" for name in ("blend_weights.csv", "blend_errors.csv", "blend_report.png")] == (
        done.stdout.splitlines()
    )


@pytest.mark.gl
def test_testbed_report_after_ctrl_c(
    egl: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C at the fourth step: exit status 130, the three recorded steps in the report."""
    update = testbed_module.BlendTestbed.update
    steps: list[int] = []

    def interrupted(self: testbed_module.BlendTestbed, dt: float, controls: app.Controls) -> None:
        steps.append(1)
        if len(steps) == 4:
            raise KeyboardInterrupt
        update(self, dt, controls)

    monkeypatch.setattr(testbed_module.BlendTestbed, "update", interrupted)
    argv = ["--headless", "--frames", "50", "--size", "64x36", "--report", str(tmp_path / "out")]
    code, lines = errors_of("game.blend_testbed", argv, capsys)
    assert code == app.INTERRUPTED == 130
    assert lines == ["python -m game.blend_testbed: note: interrupted (Ctrl-C) after 3 frames"]
    with (tmp_path / "out" / WEIGHTS_FILE).open(newline="") as stream:
        assert len(list(csv.reader(stream))) == 1 + 3


def test_testbed_report_into_a_file_says_one_line(
    egl: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("")
    argv = ["--headless", "--frames", "2", "--size", "64x36", "--report", str(tmp_path / "taken")]
    code, lines = errors_of("game.blend_testbed", argv, capsys)
    assert code == 2
    assert lines == [
        f"python -m game.blend_testbed: error: --report {tmp_path / 'taken'}: cannot write the report: File exists"
    ]


def test_parse_size_accepts_the_usual_spellings() -> None:
    assert parse_size("960x540") == (960, 540)
    assert parse_size("64X36") == (64, 36)
    assert np.prod(parse_size("16x16")) == 256


@pytest.mark.window
def test_a_window_larger_than_the_screen_says_one_line(display: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "game.demo", "--frames", "1", "--size", "100000x100000"],
        cwd=ROOT,
        env={**os.environ, "DISPLAY": display},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    shown = but_kernels(done.stderr.splitlines())  # the error, not the kernels' notes before the window opens
    lines = [line for line in shown if not line.startswith("error: XDG_RUNTIME_DIR")]  # SDL's
    assert len(lines) == 1, lines
    assert re.fullmatch(
        r"python -m game\.demo: error: --size 100000x100000: no window that large could be opened on this "
        r"\d+x\d+ screen \(.+\)",
        lines[0],
    )


# --- output folders and progress --------------------------------------------------------------------


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_screenshot_into_a_missing_folder_is_refused_before_any_work(
    program: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ``ossa evaluate --out missing/dir/x.json`` is: one line, exit 2, no folder made, nothing loaded."""
    out = tmp_path / "missing" / "dir" / "x.png"
    code, lines = errors_of(program, ["--model", "not-read.glb", "--headless", "--screenshot", str(out)], capsys)
    assert code == 2
    assert lines == [f"python -m {program}: error: --screenshot {out}: cannot write: No such file or directory"]
    assert not (tmp_path / "missing").exists()


def test_long_work_says_how_far_it_is(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A line every PROGRESS_SECONDS: item N/M, the seconds so far and an estimate of those left; none at the end."""
    clock = iter([0.0, 2.0, 6.0, 7.0, 12.5, 20.0])
    monkeypatch.setattr(app.time, "perf_counter", lambda: next(clock))
    progress = app.Progress("python -m game.demo", 10)  # starts at 0 s
    for done in (1, 3, 4, 5, 10):  # at 2, 6, 7, 12.5 and 20 s
        progress.step(done)
    assert capsys.readouterr().err.splitlines() == [
        "python -m game.demo: note: frame 3/10, 6 s so far, about 14 s left",
        "python -m game.demo: note: frame 5/10, 12 s so far, about 12 s left",
    ]
