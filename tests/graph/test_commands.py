"""``ossa graph check``: called through its ``run`` (the coordinator wires it into the ``ossa`` command)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from engine.errors import AssetError
from engine.graph import GraphDefinitionError, commands
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


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ossa graph")
    commands.add_arguments(parser)
    return parser.parse_args(argv)


def write(tmp_path: Path, name: str, document: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_check_prints_the_graph(tmp_path: Path, capsys):
    path = write(tmp_path, "strafe.json", strafing())
    assert commands.run(parse(["check", str(path), "--model", "mannequin"])) == 0
    out = capsys.readouterr().out
    assert "state strafe: blend2d directional(vx, vz: (0, 0) idle, (0, 1.2) walk" in out
    assert "-> idle (inertialize, 0.25 s) when stop == true" in out
    assert "bound to the mannequin: 25 joints; plays 9 clips" in out
    assert out.rstrip().endswith("ok")


@pytest.mark.assets
def test_check_against_the_fox(tmp_path: Path, capsys, shared_assets: Path):
    path = write(tmp_path, "fox.json", FOX_GRAPH)
    fox = str(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    assert commands.run(parse(["check", str(path), "--model", fox])) == 0
    out = capsys.readouterr().out
    assert "plays 3 clips (Run, Survey, Walk)" in out
    assert "-> survey (dead_blend, 0.25 s, half-life 0.25 s) when speed <= 0.1" in out


def test_a_missing_clip_is_one_line_naming_the_path(tmp_path: Path):
    path = write(tmp_path, "graph.json", edited(locomotion(), "states.move.motion.points[1].clip", "sprint"))
    with pytest.raises(GraphDefinitionError) as raised:
        commands.run(parse(["check", str(path), "--model", "mannequin"]))
    assert str(raised.value).startswith(f"{path}: states.move.motion.points[1].clip: unknown clip 'sprint'")
    assert "\n" not in str(raised.value)


def test_unreachable_states_are_warned_about(tmp_path: Path, capsys):
    document = locomotion()
    document["states"]["lost"] = {"motion": {"clip": "wave"}}
    path = write(tmp_path, "graph.json", document)
    commands.run(parse(["check", str(path), "--model", "mannequin"]))
    assert "warning: states.lost: unreachable from the start state 'idle'" in capsys.readouterr().out


def test_register_adds_the_subcommand(tmp_path: Path, capsys):
    parser = argparse.ArgumentParser(prog="ossa")
    commands.register(parser.add_subparsers(dest="command"))
    path = write(tmp_path, "graph.json", locomotion())
    args = parser.parse_args(["graph", "check", str(path), "--model", "mannequin"])
    assert args.handler(args) == 0
    assert "ok" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        parser.parse_args(["graph", "check", str(path)])  # --model is required


def test_a_bad_model_file_is_reported(tmp_path: Path):
    path = write(tmp_path, "graph.json", locomotion())
    with pytest.raises(AssetError, match=r"nowhere\.glb: cannot read the file"):
        commands.run(parse(["check", str(path), "--model", str(tmp_path / "nowhere.glb")]))
