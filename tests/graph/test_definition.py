"""Graph documents: JSON and TOML reading, and every rule's one-line error naming the document path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.anim import Channel, Clip
from engine.errors import AssetError
from engine.graph import GraphDefinitionError, bind_graph, load_graph, parse_graph
from engine.graph.definition import ClipMotion
from engine.graph.reader import tomllib  # tomllib, or tomli on Python 3.10
from tests.graph.documents import chain, edited, locomotion, mannequin_clips, strafing

GOOD = locomotion()

RUN = {
    "start": "idle",
    "parameters": {"speed": {"type": "float"}},
    "states": {
        "idle": {"motion": {"clip": "idle"}},
        "run": {
            "motion": {"clip": "run"},
            "transitions": [
                {"to": "idle", "conditions": [{"parameter": "speed", "op": "<", "value": 1.0}]},
                {"to": "idle", "exit_time": 0.5},
                {"to": "sprint"},
            ],
        },
    },
}


def test_the_issue_example_error(tmp_path: Path):
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(RUN))
    with pytest.raises(GraphDefinitionError) as raised:
        load_graph(path)
    assert str(raised.value) == (
        f"{path}: states.run.transitions[2].to: unknown state 'sprint'; the states are ['idle', 'run']"
    )
    assert isinstance(raised.value, AssetError)
    assert isinstance(raised.value, ValueError)


def two_state_cycle():
    document = edited(GOOD, "states.idle.transitions[0].duration", 0.0)
    return edited(document, "states.move.transitions[0].duration", 0.0)


def any_state_cycle():
    document = edited(GOOD, "any_state[0].duration", 0.0)
    return edited(document, "states.jump.transitions", [{"to": "idle", "duration": 0.0}])


def nested(cycle: bool):
    document = edited(
        GOOD,
        "machines",
        {"air": {"start": "up", "states": {"up": {"motion": {"machine": "air" if cycle else "ground"}}}}},
    )
    document["machines"]["ground"] = {"start": "stand", "states": {"stand": {"motion": {"clip": "idle"}}}}
    document = edited(document, "states.jump.transitions[0].exit_time", None)
    return edited(document, "states.jump.motion", {"machine": "air"})


BAD_DOCUMENTS = [
    # (document, path in the message, words of the message)
    (edited(GOOD, "start", "fly"), "start", "unknown state 'fly'"),
    (edited(GOOD, "start", None), "start", "missing (required)"),
    (edited(GOOD, "states", {}), "states", "at least one state"),
    (
        edited(GOOD, "states.idle.transitions[0].to", "sprint"),
        "states.idle.transitions[0].to",
        "unknown state 'sprint'",
    ),
    (two_state_cycle(), "states.idle.transitions[0]", "zero-duration transitions form a cycle idle -> move -> idle"),
    (any_state_cycle(), "any_state[0]", "cycle idle -> jump -> idle"),
    (
        edited(GOOD, "states.idle.transitions", [{"to": "idle", "duration": 0.0}]),
        "states.idle.transitions[0]",
        "cycle idle -> idle",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].duration", "fast"),
        "states.idle.transitions[0].duration",
        "expected a number, got a string ('fast')",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].duration", -0.1),
        "states.idle.transitions[0].duration",
        "expected a number >= 0",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].duration", float("nan")),
        "states.idle.transitions[0].duration",
        "finite",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].duration", True),
        "states.idle.transitions[0].duration",
        "expected a number, got a boolean",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].kind", "morph"),
        "states.idle.transitions[0].kind",
        "expected one of ['crossfade'",
    ),
    (edited(GOOD, "states.idle.transitions[0].exit_time", 1.5), "states.idle.transitions[0].exit_time", "<= 1"),
    (
        edited(GOOD, "states.idle.transitions[0].half_life", 0.1),
        "states.idle.transitions[0].half_life",
        "only spring and dead_blend",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].kind", "spring"),
        "states.idle.transitions[0].duration",
        "spring transition has no duration",
    ),
    (edited(GOOD, "states.idle.transitions[0].colour", "red"), "states.idle.transitions[0].colour", "unknown key"),
    (
        edited(GOOD, "states.idle.transitions[0].conditions[0].parameter", "height"),
        "states.idle.transitions[0].conditions[0].parameter",
        "unknown parameter 'height'",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].conditions[0].op", "=>"),
        "states.idle.transitions[0].conditions[0].op",
        "expected one of ['<'",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].conditions[0].value", None),
        "states.idle.transitions[0].conditions[0].value",
        "missing (required): 'speed' is a float",
    ),
    (
        edited(GOOD, "states.idle.transitions[0].conditions[0].value", "1"),
        "states.idle.transitions[0].conditions[0].value",
        "expected a number",
    ),
    (
        edited(GOOD, "states.jump.transitions[0].conditions[0].value", 1),
        "states.jump.transitions[0].conditions[0].value",
        "expected true or false",
    ),
    (
        edited(GOOD, "states.jump.transitions[0].conditions[0].op", ">"),
        "states.jump.transitions[0].conditions[0].op",
        "expected one of ['==', '!=']",
    ),
    (edited(GOOD, "any_state[0].conditions[0].value", True), "any_state[0].conditions[0].value", "'jump' is a trigger"),
    (edited(GOOD, "any_state[0].conditions", []), "any_state[0]", "needs conditions"),
    (edited(GOOD, "any_state[0].exit_time", 0.5), "any_state[0].exit_time", "no exit time"),
    (
        edited(GOOD, "parameters.speed.type", "int"),
        "parameters.speed.type",
        "expected one of ['float', 'bool', 'trigger']",
    ),
    (edited(GOOD, "parameters.jump.default", True), "parameters.jump.default", "a trigger has no default"),
    (edited(GOOD, "parameters.grounded.default", "yes"), "parameters.grounded.default", "expected true or false"),
    (edited(GOOD, "parameters.speed", 3), "parameters.speed", "expected a table"),
    (edited(GOOD, "states.idle.motion", {}), "states.idle.motion", "exactly one motion kind"),
    (
        edited(GOOD, "states.idle.motion", {"clip": "idle", "machine": "x"}),
        "states.idle.motion",
        "got clip and machine",
    ),
    (edited(GOOD, "states.idle.motion.clip", 7), "states.idle.motion.clip", "expected a non-empty string"),
    (edited(GOOD, "states.idle.motion.speed", -1.0), "states.idle.motion.speed", ">= 0"),
    (
        edited(GOOD, "states.move.motion.blend1d", "grounded"),
        "states.move.motion.blend1d",
        "is a bool, a blend space needs a float",
    ),
    (edited(GOOD, "states.move.motion.blend1d", "jump"), "states.move.motion.blend1d", "is a trigger"),
    (
        edited(GOOD, "states.move.motion.points[1].at", 1.2),
        "states.move.motion.points[1].at",
        "increase strictly, got 1.2 after 1.2",
    ),
    (edited(GOOD, "states.move.motion.points[1].at", None), "states.move.motion.points[1].at", "missing (required)"),
    (edited(GOOD, "states.move.motion.points", []), "states.move.motion.points", "at least one entry"),
    (
        edited(GOOD, "states.move.motion.points[0].clip", None),
        "states.move.motion.points[0]",
        "exactly one motion kind",
    ),
    (
        edited(strafing(), "states.strafe.motion.blend2d", ["vx"]),
        "states.strafe.motion.blend2d",
        "two float parameters",
    ),
    (
        edited(strafing(), "states.strafe.motion.points[2].at", [0.0, 1.2]),
        "states.strafe.motion.points[2].at",
        "used twice",
    ),
    (
        edited(strafing(), "states.strafe.motion.points[2].at", [0.0]),
        "states.strafe.motion.points[2].at",
        "expected [x, y]",
    ),
    (
        edited(strafing(), "states.strafe.motion.mode", "polar"),
        "states.strafe.motion.mode",
        "['directional', 'cartesian']",
    ),
    (
        edited(GOOD, "states.idle.motion", {"layer": {"clip": "wave"}, "base": {"clip": "idle"}, "mask": "arms"}),
        "states.idle.motion.mask",
        "unknown mask 'arms'",
    ),
    (
        edited(
            GOOD, "states.idle.motion", {"additive": {"clip": "lean_look"}, "base": {"clip": "idle"}, "weight": "lean"}
        ),
        "states.idle.motion.weight",
        "unknown parameter 'lean'",
    ),
    (edited(GOOD, "masks", {"upper": {"joints": []}}), "masks.upper.joints", "at least one entry"),
    (edited(GOOD, "states.jump.motion", {"machine": "air"}), "states.jump.motion.machine", "unknown machine 'air'"),
    (nested(cycle=True), "machines.air.states.up.motion.machine", "machine 'air' contains itself: root -> air -> air"),
    (
        edited(nested(cycle=False), "states.jump.transitions[0].exit_time", 0.5),
        "states.jump.transitions[0].exit_time",
        "sub-machine has no normalised time",
    ),
    (edited(GOOD, "shape", "round"), "shape", "unknown key"),
    (edited(GOOD, "states.idle.transitions[0].offset", 1.5), "states.idle.transitions[0].offset", "<= 1"),
    (
        edited(edited(GOOD, "states.idle.transitions[0].kind", "synced"), "states.idle.transitions[0].offset", 0.5),
        "states.idle.transitions[0].offset",
        "synced transition starts the target",
    ),
    ([], None, "expected a table (object), got an array"),
]


@pytest.mark.parametrize(
    ("document", "where", "words"), BAD_DOCUMENTS, ids=[f"{k}:{c[1]}" for k, c in enumerate(BAD_DOCUMENTS)]
)
def test_bad_documents_give_one_line_errors_naming_the_path(document, where, words):
    with pytest.raises(GraphDefinitionError) as raised:
        parse_graph(document, "graph.json")
    message = str(raised.value)
    assert "\n" not in message
    prefix = f"graph.json: {where}: " if where else "graph.json: "
    assert message.startswith(prefix), message
    assert words in message, message


BIND_ERRORS = [
    (
        edited(GOOD, "states.move.motion.points[0].clip", "stroll"),
        "states.move.motion.points[0].clip",
        "unknown clip 'stroll'; the character has",
    ),
    (edited(GOOD, "masks", {"upper": {"joints": ["spine", "tail"]}}), "masks.upper.joints[1]", "unknown joint 'tail'"),
    (
        edited(GOOD, "states.move.motion.points[1].loop", False),
        "states.move.motion",
        "must all loop or all play once",
    ),
    (
        edited(
            GOOD,
            "states.idle.motion",
            {"additive": {"blend1d": "speed", "points": [{"at": 0, "clip": "wave"}]}, "base": {"clip": "idle"}},
        ),
        "states.idle.motion.reference",
        "needs a clip",
    ),
]


@pytest.mark.parametrize(("document", "where", "words"), BIND_ERRORS, ids=[c[1] for c in BIND_ERRORS])
def test_binding_to_a_character_names_the_path(document, where, words):
    mannequin, clips = mannequin_clips()
    with pytest.raises(GraphDefinitionError) as raised:
        bind_graph(parse_graph(document, "graph.toml"), mannequin.skeleton, clips)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"graph.toml: {where}: "), message
    assert words in message


def test_a_clip_for_another_skeleton_is_refused():
    mannequin, clips = mannequin_clips()
    tiny = Clip("walk", [Channel(0, "translation", "LINEAR", [0.0, 1.0], [[0, 0, 0], [1, 0, 0]])], 1)
    with pytest.raises(
        GraphDefinitionError, match=r"states.move.motion.points\[0\].clip: clip 'walk' animates 1 joints"
    ):
        bind_graph(parse_graph(GOOD, "g.json"), mannequin.skeleton, {**clips, "walk": tiny})


TOML = """
name = "toml locomotion"
start = "idle"

[parameters]
speed = { type = "float", default = 0.5 }
jump = { type = "trigger" }

[masks]
upper = { joints = ["spine"] }

[states.idle]
motion = { layer = { clip = "wave", sync = false }, base = { clip = "idle" }, mask = "upper", weight = 0.5 }
transitions = [
    { to = "move", kind = "dead_blend", duration = 0.4, conditions = [{ parameter = "speed", op = ">", value = 1.0 }] },
]

[states.move]
speed = 1.5
motion = { blend1d = "speed", points = [{ at = 1.2, clip = "walk" }, { at = 3.0, clip = "run" }] }

[[any_state]]
to = "idle"
kind = "spring"
half_life = 0.1
conditions = [{ parameter = "jump" }]
"""


def test_toml_and_json_read_the_same(tmp_path: Path):
    toml_path = tmp_path / "graph.toml"
    toml_path.write_text(TOML)
    from_toml = load_graph(toml_path)
    json_path = tmp_path / "graph.json"
    json_path.write_text(json.dumps(tomllib.loads(TOML)))
    from_json = load_graph(json_path)
    assert from_toml.describe().replace(str(toml_path), "x") == from_json.describe().replace(str(json_path), "x")
    assert from_toml.name == "toml locomotion"
    assert from_toml.parameters["speed"].default == 0.5
    assert from_toml.root.states["move"].speed == 1.5
    spring = from_toml.root.any_state[0]
    assert (spring.kind, spring.half_life) == ("spring", 0.1)
    dead = from_toml.root.states["idle"].transitions[0]
    assert (dead.kind, dead.duration, dead.half_life) == ("dead_blend", 0.4, 0.4)
    layer = from_toml.root.states["idle"].motion
    assert isinstance(layer.layer, ClipMotion)
    assert layer.layer.sync is False


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("g.json", '{"start": "a",', "invalid JSON"),
        ("g.json", '{"start": "a", "start": "b", "states": {}}', "duplicate key 'start'"),
        ("g.toml", "start = ", "invalid TOML"),
        ("g.toml", 'start = "a"\nstart = "b"', "invalid TOML"),
        ("g.yaml", "start: a", "expected a .json or .toml file, got '.yaml'"),
    ],
)
def test_unreadable_files(tmp_path: Path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(GraphDefinitionError) as raised:
        load_graph(path)
    assert str(raised.value).startswith(str(path))
    assert words in str(raised.value)
    assert "\n" not in str(raised.value)


def test_missing_file(tmp_path: Path):
    with pytest.raises(GraphDefinitionError, match="cannot read the graph"):
        load_graph(tmp_path / "nowhere.json")


def test_defaults_and_describe():
    definition = parse_graph(chain("frozen"), "chain.json")
    transition = definition.root.states["a"].transitions[0]
    assert (transition.kind, transition.duration, transition.exit_time, transition.interruptible) == (
        "frozen",
        0.3,
        None,
        True,
    )
    text = definition.describe()
    assert "state a: idle" in text
    assert "-> b (frozen, 0.3 s) when go_b" in text
    spring = parse_graph(chain("spring"), "chain.json").root.states["a"].transitions[0]
    assert spring.half_life == pytest.approx(0.08)


def test_exit_time_transitions_are_not_instant_cycles():
    document = edited(GOOD, "states.idle.transitions", [{"to": "move", "duration": 0.0, "exit_time": 0.5}])
    document = edited(document, "states.move.transitions", [{"to": "idle", "duration": 0.0, "exit_time": 0.5}])
    parse_graph(document)  # an exit time is only crossed after the state has played: no cycle within a frame
