"""The graph's flat layers against the recursive evaluator of nested blend trees (engine.graph.oracle).

The runtime plays every leaf clip on one player layer (weights multiplied down the tree, layer
motions as overrides) and blends them in one normalised sum; the oracle evaluates the document's
trees level by level. Both then get the same transition stage (the player's, checked on its own
in tests/player). Random parameter streams and triggers at random steps (1/144–1/30 s) drive
every transition kind, interruptions included. Measured differences (quaternion components,
sign-aligned; translations):

- one blend space per state, clips alone, every transition kind: rounding (below 1e-12);
- layer and additive motions over a clip: rounding (below 1e-12);
- a crossfade between a clip and a blend space (a blend of blends): the nested tree normalises
  the blend space's rotations before the crossfade, the flat sum once: up to about 0.7° (0.006
  in quaternion components) while the crossfade runs, on the mannequin's idle into its walk/run;
  translations and scales agree to rounding (they are linear);
- the Fox's clips (shared assets) in the same graphs: as above.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.anim.layout import PoseBuffer
from engine.errors import OssaWarning
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.graph.oracle import Oracle
from engine.io import load_character
from tests.graph.documents import chain, locomotion, mannequin_clips, strafing
from tests.graph.test_runtime import every_kind_document

COUNT = 16
FRAMES = 60


@pytest.fixture(scope="module")
def character():
    return mannequin_clips()


def layered() -> dict:
    """A layer (wave over the walk, upper body, weight from a parameter) under an additive lean."""
    return {
        "parameters": {"lean": {"type": "float", "default": 0.6}, "arm": {"type": "float", "default": 0.7}},
        "masks": {"upper": {"joints": ["spine"]}},
        "start": "s",
        "states": {
            "s": {
                "motion": {
                    "additive": {"clip": "lean_look", "sync": False},
                    "weight": "lean",
                    "base": {
                        "layer": {"clip": "wave", "sync": False},
                        "base": {"clip": "walk"},
                        "mask": "upper",
                        "weight": "arm",
                    },
                }
            }
        },
    }


def sub_machines() -> dict:
    """The locomotion graph whose idle state is a sub-machine (stand, wave) with crossfades of its own."""
    document = locomotion("inertialize", 0.2)
    document["parameters"]["tired"] = {"type": "bool"}
    document["machines"] = {
        "resting": {
            "start": "stand",
            "states": {
                "stand": {
                    "motion": {"clip": "idle"},
                    "transitions": [{"to": "wave", "duration": 0.2, "conditions": [{"parameter": "tired"}]}],
                },
                "wave": {
                    "motion": {"clip": "wave"},
                    "transitions": [
                        {"to": "stand", "duration": 0.2, "conditions": [{"parameter": "tired", "value": False}]}
                    ],
                },
            },
        }
    }
    document["states"]["idle"]["motion"] = {"machine": "resting"}
    return document


def differences(document: dict, skeleton, clips, root=None, seed: int = 3) -> tuple[float, float]:
    """Largest rotation (components, sign-aligned) and translation differences, flat vs oracle, over a stream."""
    graph = bind_graph(parse_graph(document), skeleton, clips, root_motion=root)
    oracle = Oracle(graph.definition, skeleton, clips, graph.root_motion)
    runtime = GraphRuntime(graph, COUNT)
    rng = np.random.default_rng(seed)
    everyone = np.arange(COUNT)
    worst_rotation = worst_translation = 0.0
    for _ in range(FRAMES):
        for name, spec in graph.definition.parameters.items():
            if spec.type == "float":
                runtime.parameters.set_float(name, rng.uniform(0.0 if name == "speed" else -3.5, 3.5, COUNT))
            elif spec.type == "bool":
                runtime.parameters.set_bool(name, rng.random(COUNT) < 0.5)
            else:
                runtime.parameters.set_trigger(name, np.flatnonzero(rng.random(COUNT) < 0.04))
        runtime.update(rng.uniform(1 / 144, 1 / 30))
        expected = PoseBuffer.from_pose(oracle.pose(runtime, everyone))
        stage = runtime.player.transitions
        if stage.active().size:
            stage.apply(expected, runtime.player.clock, stage.active())
        want, got = expected.to_pose(), runtime.local_pose
        sign = np.where(np.sum(want.rotations * got.rotations, axis=-1, keepdims=True) < 0.0, -1.0, 1.0)
        worst_rotation = max(worst_rotation, float(np.abs(got.rotations - sign * want.rotations).max()))
        worst_translation = max(worst_translation, float(np.abs(got.translations - want.translations).max()))
    return worst_rotation, worst_translation


@pytest.mark.parametrize(
    "document",
    [strafing("inertialize"), chain("dead_blend"), every_kind_document(), layered()],
    ids=["blend2d-inertialize", "chain-dead-blend", "every-kind-interrupted", "layer-additive"],
)
def test_one_blend_level_equals_the_oracle_to_rounding(character, document) -> None:
    mannequin, clips = character
    rotation, translation = differences(document, mannequin.skeleton, clips)
    assert rotation < 1e-12
    assert translation < 1e-12


@pytest.mark.parametrize(
    ("kind", "blend"), [("crossfade", "1d"), ("synced", "1d"), ("inertialize", "1d"), ("crossfade", "2d")]
)
def test_a_crossfade_into_a_blend_space_differs_by_the_nested_normalisation(character, kind, blend) -> None:
    """idle ↔ a blend space: flat and nested agree where no crossfade runs, within 0.01 while one does."""
    mannequin, clips = character
    document = locomotion(kind, 0.3) if blend == "1d" else strafing(kind)
    rotation, translation = differences(document, mannequin.skeleton, clips, root="root")
    assert rotation < (1e-12 if kind == "inertialize" else 0.01)  # inertialize: no crossfade at all
    assert rotation > 0.0
    assert translation < 1e-12


def test_sub_machines_equal_the_oracle(character) -> None:
    mannequin, clips = character
    rotation, translation = differences(sub_machines(), mannequin.skeleton, clips)
    assert rotation < 0.01  # the sub-machine's crossfades sit inside a state: nested like a blend of blends
    assert translation < 1e-12


@pytest.mark.assets
def test_the_fox_s_clips_equal_the_oracle(shared_assets: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", textures=False)
    document = {
        "parameters": {"speed": {"type": "float"}, "stop": {"type": "bool"}},
        "start": "move",
        "states": {
            "move": {
                "motion": {"blend1d": "speed", "points": [{"at": 0.5, "clip": "Walk"}, {"at": 3.0, "clip": "Run"}]},
                "transitions": [
                    {"to": "rest", "kind": "inertialize", "duration": 0.3, "conditions": [{"parameter": "stop"}]}
                ],
            },
            "rest": {
                "motion": {"clip": "Survey"},
                "transitions": [
                    {"to": "move", "kind": "spring", "conditions": [{"parameter": "stop", "value": False}]}
                ],
            },
        },
    }
    rotation, translation = differences(document, fox.skeleton, dict(fox.clips))
    assert rotation < 1e-12
    assert translation < 1e-9  # centimetres: 1e-9 of the Fox's ~100-unit translations


def test_a_synced_transition_out_of_a_sub_machine_state_keeps_the_phase(character) -> None:
    """The sub-machine state has no clips of its own, hence no markers: the target starts at the source's phase."""
    mannequin, clips = character
    document = sub_machines()
    document["states"]["idle"]["transitions"][0]["kind"] = "synced"
    graph = bind_graph(parse_graph(document), mannequin.skeleton, clips)
    runtime = GraphRuntime(graph, 4)
    runtime.update(0.37)  # some way into the idle state (and its stand sub-state)
    before = runtime.root.phase.copy()
    runtime.parameters.set_float("speed", [0.0, 0.0, 2.0, 2.0])
    runtime.update(0.0)  # the transition fires at the start of the update: no time passes
    assert runtime.state_names() == ["idle", "idle", "move", "move"]
    np.testing.assert_array_equal(runtime.root.phase[2:], before[2:])
