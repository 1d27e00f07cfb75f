"""``ossa mm build`` and ``ossa mm inspect``: what they print and write, and their one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.io import load_character
from engine.motion_matching import load_database
from tests.motion_matching.conftest import CMU_TAGS, SNAKE_BVH

ROOT = Path(__file__).resolve().parents[2]
MANNEQUIN = ROOT / "assets" / "mannequin.glb"


def test_build_from_a_gltf_file_and_inspect(tmp_path: Path, capsys) -> None:
    out = tmp_path / "mannequin.npz"
    status = main(
        ["mm", "build", str(MANNEQUIN), "--out", str(out), "--no-mirror", "--fps", "30", "--horizons", "5,10"]
    )
    assert status == 0
    printed = capsys.readouterr()
    clips = len(load_character(MANNEQUIN).clips)  # one range per clip, not mirrored
    assert f"{clips} ranges" in printed.out
    assert f"wrote {out}" in printed.out
    assert "ossa mm: warning: feature groups" in printed.err  # the mannequin's clips never turn
    database = load_database(out)
    assert database.fps == 30.0
    assert database.layout.horizons == (5, 10)
    assert database.num_ranges == clips
    assert main(["mm", "inspect", str(out)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"{out}: Ossa motion-matching database")
    assert "  walk: frames" in shown


@pytest.mark.assets
def test_build_cmu_takes_on_the_mannequin(shared_assets: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "snake.bvh").write_text(SNAKE_BVH)
    takes = [tmp_path / "snake.bvh", *(shared_assets / "cmu_locomotion_bvh" / f"{n}.bvh" for n in ("02_03", "07_06"))]
    out = tmp_path / "cmu.npz"
    arguments = ["mm", "build", *map(str, takes), "--character", str(MANNEQUIN), "--tags", str(CMU_TAGS)]
    assert main([*arguments, "--out", str(out)]) == 2  # the snake is not a humanoid
    assert capsys.readouterr().err.splitlines()[-1].startswith("ossa mm: error: clip 'snake' cannot be retargeted")
    assert (
        main(
            [
                *arguments,
                "--skip-unusable",
                "--weights",
                "foot_positions=1,hand_positions=0.2",
                "--hands",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    assert "4 ranges" in printed.out
    assert "hand_positions 6 × 0.2" in printed.out
    assert "07_06 (mirrored): frames" in printed.out
    assert "tags ['walk']" in printed.out
    assert "ossa mm: warning: clip 'snake' cannot be retargeted" in printed.err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["mm", "inspect", "nowhere.npz"], "ossa mm: error: nowhere.npz: cannot read the database"),
        (["mm", "build", "take.fbx", "--out", "x.npz"], "ossa mm: error: take.fbx: unknown clip file type '.fbx'"),
        (
            ["mm", "build", str(MANNEQUIN), "--out", "x.npz", "--scale", "cm"],
            "ossa mm: error: --scale applies to .bvh files",
        ),
        (["mm", "build", str(MANNEQUIN), "--out", "x.npz", "--weights", "feet"], "expected group=weight pairs"),
        (["mm", "build", str(MANNEQUIN), "--out", "x.npz", "--horizons", "3,1"], "expected ascending frame counts"),
        (["mm", "build", str(MANNEQUIN), "--out", "x.npz", "--end-margin", "-2"], "end_margin must be a whole number"),
    ],
)
def test_errors_are_one_line(arguments: list[str], message: str, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "take.fbx").write_bytes(b"")
    try:
        status = main(arguments)
    except SystemExit as exit_info:  # argparse's own errors
        status = int(exit_info.code or 0)
    assert status == 2
    assert message in capsys.readouterr().err.splitlines()[-1]
