"""The programs play whole scenes: morph weights from the clip, node-animated objects, rigid-part characters.

The expected values are read from the files without the engine: the morph cube's weights are
linearly interpolated from its sampler's keys (the glTF JSON and ``.bin``, as the corpus tests do),
BoxAnimated's node matrices come from the recursive glTF evaluator of
``tests/anim/test_gltf_conformance.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from game.app import Controls, parse_args
from game.blend_testbed.testbed import BlendTestbed
from game.blend_testbed.testbed import build_parser as bed_parser
from game.camera_lab.lab import CameraLab
from game.camera_lab.lab import build_parser as lab_parser
from game.camera_lab.scenes import Figure
from game.demo.player import Player
from game.demo.world import Terrain
from tests.anim.test_gltf_conformance import Reference
from tests.corpus.corpus import Corpus, by_id
from tests.corpus.fetch import cache_root
from tests.corpus.test_corpus_inspect import accessor, gltf_json
from tests.game.characters import cached_model, cached_models
from tests.game.scenes import generated_path

STEP = 1.0 / 60.0


@pytest.fixture(scope="module")
def morph_cube() -> Path:
    """The corpus's AnimatedMorphCube (skips, or fails under ``OSSA_REQUIRE_CORPUS=1``, when not fetched)."""
    return Corpus(cache_root()).path(by_id("animated-morph-cube"))


def cube_weights(path: Path, times: np.ndarray) -> np.ndarray:
    """``(T, 2)`` weights of the cube's one clip at ``times``: its LINEAR sampler's keys, interpolated."""
    doc = gltf_json(path)
    animation = doc["animations"][0]
    (channel,) = animation["channels"]
    sampler = animation["samplers"][channel["sampler"]]
    keys = accessor(doc, path.parent, sampler["input"])[:, 0]
    values = accessor(doc, path.parent, sampler["output"]).reshape(len(keys), -1)
    return np.stack([np.interp(times, keys, values[:, k]) for k in range(values.shape[1])], axis=-1)


def program_args(path: Path) -> list[str]:
    return ["--model", str(path)]


def test_the_demo_plays_the_morph_weights_of_the_clip(morph_cube: Path) -> None:
    model = cached_model(morph_cube)
    assert model.is_object
    player = Player(model, Terrain())
    assert "an animated object (no skin): it plays its clips, without IK" in player.notes
    assert (player.legs, player.head) == (None, [])
    for step in range(150):
        player.update(STEP, [0.0, 0.0, 1.0] if step > 60 else [0.0, 0.0, 0.0], run=False, jump=False)
    assert player.graph is not None
    (layer,) = player.graph.runtime.layers  # the clip's layer on the engine player
    (weights,) = player.frame.morph_weights
    np.testing.assert_allclose(weights[0], cube_weights(morph_cube, player.posing.times[layer])[0], atol=1e-6)
    assert player.position[2] > 0.5  # the object is steered like a character


def test_the_testbed_and_the_lab_play_the_morph_weights_of_the_clip(morph_cube: Path) -> None:
    with cached_models():
        bed = BlendTestbed(parse_args(bed_parser(), program_args(morph_cube)))
        lab = CameraLab(parse_args(lab_parser(), program_args(morph_cube)))
    for _ in range(100):
        bed.update(STEP, Controls())
    time = bed.playback.actions[0][0].time
    (weights,) = bed.scene_frame(bed.node_matrices()).morph_weights
    np.testing.assert_allclose(weights[0], cube_weights(morph_cube, time)[0], atol=1e-6)
    for time in (0.3, 1.7, 3.9):
        frame, _ = lab.figure_pose(Figure(np.zeros(3), 0.0, "idle", time))
        np.testing.assert_allclose(frame.morph_weights[0][0], cube_weights(morph_cube, np.array([time]))[0], atol=1e-6)


def test_a_blend_of_clips_blends_their_morph_weights(morph_cube: Path) -> None:
    """Half the clip at one time: half its weights and half the defaults (zero), as the rest pose fills a blend."""
    model = cached_model(morph_cube)
    ((half,),) = [model.morph_weights([("Square", 1.6, 0.5)])]
    np.testing.assert_allclose(half, 0.5 * cube_weights(morph_cube, np.array([1.6]))[0], atol=1e-6)
    ((full,),) = [model.morph_weights([("Square", 1.6, 0.8), ("Square", 1.6, 0.8)])]
    np.testing.assert_allclose(full, cube_weights(morph_cube, np.array([1.6]))[0], atol=1e-6)


def test_the_lab_moves_a_node_animated_object_like_the_file(shared_assets: Path) -> None:
    path = shared_assets / "khronos" / "box_animated.gltf"
    with cached_models():
        lab = CameraLab(parse_args(lab_parser(), program_args(path)))
    reference = Reference(path)
    order = lab.model.skeleton.names  # hierarchy order; the loader names an unnamed node "node<index>"
    animation = reference.json["animations"][0]
    for time in (0.2, 1.25, 2.9):
        frame, _ = lab.figure_pose(Figure(np.zeros(3), 0.0, "idle", time))
        for k, name in enumerate(order):
            node = next(n for n, spec in enumerate(reference.nodes) if spec.get("name", f"node{n}") == name)
            np.testing.assert_allclose(frame.world[0, k], reference.world(node, animation, time), atol=1e-6)


def test_a_character_of_rigid_parts_gets_its_ik_and_clips() -> None:
    """The rigid-part mannequin (two hand skins) is a character: legs and head found, every clip in its role."""
    model = cached_model(generated_path("rigid-mannequin"))
    player = Player(model, Terrain())
    assert player.notes == []
    assert player.legs is not None
    assert [model.skeleton.names[j] for j in player.head] == ["neck", "head"]
    for _ in range(60):
        player.update(STEP, [0.0, 0.0, 1.0], run=False, jump=False)
    assert player.position[2] > 0.5
    assert len(player.frame.skin_palettes) == 2
