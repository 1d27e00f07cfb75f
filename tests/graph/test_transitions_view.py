"""The testbed's transitions view: its logic step by step without GL, and a headless run with a report."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.errors import GLContextError, InvalidInputError
from engine.render import create_context
from game.app import FIXED_DT, Controls
from game.blend_testbed.transitions import (
    BURST,
    CSV_FILE,
    FIRST,
    METHODS,
    PLOT_FILE,
    TransitionsView,
    build_parser,
    main,
    write_report,
)
from tests.conftest import require_or_skip


def view(*argv: str) -> TransitionsView:
    return TransitionsView(build_parser().parse_args(list(argv)))


def step(program: TransitionsView, keys: set[str] | None = None) -> None:
    controls = Controls()
    controls.pressed |= keys or set()
    program.update(FIXED_DT, controls)


def joint_angles(a, b):
    return np.degrees(2.0 * np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0.0, 1.0)))


def test_the_four_methods_share_the_source_then_reach_the_target(tmp_path: Path):
    program = view("--report", str(tmp_path))
    assert (program.source, program.target) == ("walk", "idle")
    poses = []
    for _ in range(round((FIRST + 0.4) / FIXED_DT) + 2):
        step(program)
        poses.append(program.runtime.local_pose.rotations.copy())
    before = round(FIRST / FIXED_DT) - 1
    for k in range(before):  # all four play the source, identically
        np.testing.assert_array_equal(poses[k], poses[k][:1].repeat(4, axis=0))
    assert program.runtime.state_names() == ["target"] * 4
    assert not program.runtime.in_transition()[[0, 1, 3]].any()
    final = poses[-1]
    np.testing.assert_array_equal(final[1], final[0])  # inertialization: exactly the target at the end
    np.testing.assert_array_equal(final[3], final[0])  # dead blending too
    assert joint_angles(final[2], final[0]).max() < 2.0  # the spring is still settling (20 half-lives)
    assert program.recorder is not None
    paths = write_report(program.recorder)
    with paths[0].open(newline="") as stream:
        rows = list(csv.reader(stream))
    assert rows[0] == ["step", "time", "method", "state", "joint", "angle_deg", "speed_deg_s", "acceleration_deg_s2"]
    assert len(rows) - 1 == 4 * len(poses)
    assert {row[2] for row in rows[1:]} == set(METHODS)
    with Image.open(paths[1]) as plot:
        assert plot.format == "PNG"


def test_rapid_retrigger_never_jumps():
    program = view()
    previous, worst = None, 0.0
    for _ in range(round((BURST + 1.2) / FIXED_DT)):
        step(program)
        rotations = program.runtime.local_pose.rotations.copy()
        if previous is not None:
            worst = max(worst, joint_angles(rotations, previous).max())
        previous = rotations
    assert program.recorder is None
    assert worst < 20.0  # per step at 60 Hz; a cut between walk and idle turns joints by up to 90°


def test_keys(tmp_path: Path):
    program = view("--duration", "0.5")
    joint = program.joint
    step(program, {"j"})
    assert program.joint != joint
    step(program, {"]"})
    assert program.duration == pytest.approx(0.6)
    step(program, {"t"})
    assert program.at_target
    step(program)
    assert program.runtime.state_names() == ["target"] * 4
    step(program, {"space"})
    assert program.paused
    time = program.time
    step(program)
    assert program.time == time
    step(program, {"n"})
    assert program.time == pytest.approx(time + FIXED_DT)
    step(program, {"r"})
    assert len(program.schedule) >= 6
    step(program, {"escape"})
    assert program.finished


def test_bad_options():
    with pytest.raises(InvalidInputError, match="--source names clip 'sprint'"):
        view("--source", "sprint")
    with pytest.raises(InvalidInputError, match="--duration must be within"):
        view("--duration", "9")


@pytest.mark.gl
def test_headless_run_writes_the_report(tmp_path: Path):
    try:
        create_context(standalone=True).release()
    except GLContextError as exc:
        require_or_skip(f"no OpenGL 4.3 context for the headless run: {exc}", "OSSA_REQUIRE_GL")
    report = tmp_path / "report"
    shot = tmp_path / "shot.png"
    code = main(
        ["--headless", "--frames", "40", "--size", "320x180", "--report", str(report), "--screenshot", str(shot)]
    )
    assert code == 0
    assert (report / CSV_FILE).is_file()
    assert (report / PLOT_FILE).is_file()
    with Image.open(shot) as image:
        pixels = np.asarray(image, dtype=float)
    assert pixels.shape == (180, 320, 3)
    assert pixels.std() > 10.0
