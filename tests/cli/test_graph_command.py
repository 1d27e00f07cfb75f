"""``ossa graph check FILE --model M``, run through the ``ossa`` entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from tests.graph.documents import edited, locomotion, strafing

FOX_GRAPH = {
    "name": "fox",
    "parameters": {"speed": {"type": "float"}},
    "start": "survey",
    "states": {
        "survey": {
            "motion": {"clip": "Survey"},
            "transitions": [
                {"to": "move", "kind": "inertialize", "conditions": [{"parameter": "speed", "op": ">", "value": 0.1}]}
            ],
        },
        "move": {
            "motion": {"blend1d": "speed", "points": [{"at": 0.5, "clip": "Walk"}, {"at": 2.0, "clip": "Run"}]},
            "transitions": [
                {"to": "survey", "kind": "dead_blend", "conditions": [{"parameter": "speed", "op": "<=", "value": 0.1}]}
            ],
        },
    },
}


def graph(*argv: str) -> int:
    return main(["graph", *argv])


def write(tmp_path: Path, name: str, document: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_check_prints_the_graph(tmp_path: Path, capsys):
    path = write(tmp_path, "strafe.json", strafing())
    assert graph("check", str(path), "--model", "mannequin") == 0
    out = capsys.readouterr().out
    assert "state strafe: blend2d directional(vx, vz: (0, 0) idle, (0, 1.2) walk" in out
    assert "-> idle (inertialize, 0.25 s) when stop == true" in out
    assert "bound to the mannequin: 25 joints; plays 9 clips" in out
    assert out.rstrip().endswith("ok")


@pytest.mark.assets
def test_check_against_the_fox(tmp_path: Path, capsys, shared_assets: Path):
    path = write(tmp_path, "fox.json", FOX_GRAPH)
    fox = str(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    assert graph("check", str(path), "--model", fox) == 0
    out = capsys.readouterr().out
    assert "plays 3 clips (Run, Survey, Walk)" in out
    assert "-> survey (dead_blend, 0.25 s, half-life 0.25 s) when speed <= 0.1" in out


def test_a_missing_clip_is_one_line_naming_the_path(tmp_path: Path, capsys):
    path = write(tmp_path, "graph.json", edited(locomotion(), "states.move.motion.points[1].clip", "sprint"))
    assert graph("check", str(path), "--model", "mannequin") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ossa graph: error: {path}: states.move.motion.points[1].clip: unknown clip 'sprint'")
    assert err.count("\n") == 1


def test_unreachable_states_are_warned_about(tmp_path: Path, capsys):
    document = locomotion()
    document["states"]["lost"] = {"motion": {"clip": "wave"}}
    path = write(tmp_path, "graph.json", document)
    graph("check", str(path), "--model", "mannequin")
    assert "warning: states.lost: unreachable from the start state 'idle'" in capsys.readouterr().out


def test_model_is_required(tmp_path: Path, capsys):
    path = write(tmp_path, "graph.json", locomotion())
    with pytest.raises(SystemExit):
        graph("check", str(path))
    assert "the following arguments are required: --model" in capsys.readouterr().err


def test_a_bad_model_file_is_reported(tmp_path: Path, capsys):
    path = write(tmp_path, "graph.json", locomotion())
    assert graph("check", str(path), "--model", str(tmp_path / "nowhere.glb")) == 2
    assert "nowhere.glb: cannot read the file" in capsys.readouterr().err


@pytest.mark.assets
def test_a_bvh_take_is_a_model(tmp_path: Path, capsys, shared_assets: Path):
    document = {
        "name": "take",
        "parameters": {},
        "start": "dance",
        "states": {"dance": {"motion": {"clip": "pirouette"}}},
    }
    path = write(tmp_path, "take.json", document)
    assert graph("check", str(path), "--model", str(shared_assets / "pirouette_bvh" / "pirouette.bvh")) == 0
    assert "plays 1 clips (pirouette)" in capsys.readouterr().out
