"""The generated mannequin: a sound skeleton, a skinned mesh, and gait clips with planted feet."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim.clip import Clip
from engine.anim.skeleton import Skeleton
from engine.cli import main
from engine.io.character import load_character
from engine.procedural.commands import DEFAULT_PATH, write_mannequin
from engine.procedural.mannequin import ANKLE_HEIGHT, build_mannequin
from engine.procedural.strafe import build_strafe_clips
from tests.conftest import ROOT, require_or_skip

MANNEQUIN = build_mannequin()
CLIPS = {**MANNEQUIN.clips, **build_strafe_clips(MANNEQUIN.skeleton)}
"""Every clip of the file: the mannequin's, then its strafe gaits."""
UPPER_BODY = {"spine", "chest", "upper_chest", "neck", "head"} | {
    f"{part}_{side}" for part in ("clavicle", "upper_arm", "lower_arm", "hand", "fingers") for side in "lr"
}


def keyed_world_positions(skeleton: Skeleton, clip: Clip) -> np.ndarray:
    """World joint positions at the clip's keys, by a plain recursive walk (not local_to_model)."""
    times = clip.channels[0].times
    assert all(np.array_equal(c.times, times) for c in clip.channels)
    translations = np.broadcast_to(skeleton.rest_translations, (len(times), skeleton.num_joints, 3)).copy()
    rotations = np.broadcast_to(skeleton.rest_rotations, (len(times), skeleton.num_joints, 4)).copy()
    for channel in clip.channels:
        (translations if channel.path == "translation" else rotations)[:, channel.target] = channel.values
    world = np.zeros((len(times), skeleton.num_joints, 3))
    for f in range(len(times)):
        frames: dict[int, tuple[Rotation, np.ndarray]] = {}
        for j in range(skeleton.num_joints):
            local_r = Rotation.from_quat(rotations[f, j])
            parent = int(skeleton.parents[j])
            if parent < 0:
                frames[j] = (local_r, translations[f, j])
            else:
                parent_r, parent_t = frames[parent]
                frames[j] = (parent_r * local_r, parent_t + parent_r.apply(translations[f, j]))
            world[f, j] = frames[j][1]
    return world


def test_skeleton_is_a_humanoid_of_25_joints() -> None:
    skeleton = MANNEQUIN.skeleton
    assert skeleton.num_joints == 25
    for name in ("hips", "spine", "neck", "head", "hand_l", "hand_r", "foot_l", "toes_r"):
        skeleton.index(name)
    assert list(skeleton.levels[0]) == [skeleton.index("root")]


def test_mesh_weights_are_normalised_and_blend_near_joints() -> None:
    mesh = MANNEQUIN.mesh
    assert mesh.weights is not None
    assert mesh.joints is not None
    assert mesh.indices is not None
    np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0, atol=1e-12)
    assert mesh.weights.min() >= 0.0
    influences = (mesh.weights > 1e-6).sum(axis=1)
    assert influences.max() == 2  # smooth weights: each joint region blends two bones
    assert np.count_nonzero(influences >= 2) > mesh.num_vertices // 5
    assert mesh.indices.max() < mesh.num_vertices
    np.testing.assert_allclose(np.linalg.norm(mesh.normals, axis=1), 1.0, atol=1e-9)


def test_mesh_stands_on_the_ground_and_is_human_sized() -> None:
    low, high = MANNEQUIN.mesh.positions.min(axis=0), MANNEQUIN.mesh.positions.max(axis=0)
    assert -0.02 < low[1] < 0.02
    assert 1.7 < high[1] < 1.9


@pytest.mark.parametrize(("name", "speed", "duty"), [("walk", 1.2, 0.6), ("run", 3.0, 0.35)])
def test_stance_foot_stays_planted_while_the_root_advances(name: str, speed: float, duty: float) -> None:
    clip = MANNEQUIN.clips[name]
    world = keyed_world_positions(MANNEQUIN.skeleton, clip)
    times = clip.channels[0].times
    period = clip.duration
    root = MANNEQUIN.skeleton.index("root")
    np.testing.assert_allclose(world[:, root, 2], speed * times, atol=1e-12)
    for side, offset in (("l", 0.0), ("r", 0.5)):
        ankle = world[:, MANNEQUIN.skeleton.index(f"foot_{side}")]
        phase = (times / period - offset) % 1.0
        stance = (phase < duty - 1e-9) & (times < period - 1e-9)  # the last key starts the next cycle
        if side == "r":  # the right stance wraps around the cycle end; take its first part
            stance &= times >= offset * period
        planted = ankle[stance]
        np.testing.assert_allclose(planted[:, 1], ANKLE_HEIGHT, atol=1e-9)
        np.testing.assert_allclose(planted[:, 2], planted[0, 2], atol=1e-9)  # no foot sliding
        assert ankle[~stance | (phase >= duty), 1].max() > ANKLE_HEIGHT + 0.05  # the swing foot lifts


@pytest.mark.parametrize("name", ["walk", "run"])
def test_gait_cycles_loop_and_are_phase_aligned(name: str) -> None:
    clip = MANNEQUIN.clips[name]
    root = MANNEQUIN.skeleton.index("root")
    for channel in clip.channels:
        first, last = channel.values[0], channel.values[-1]
        if channel.target == root:
            np.testing.assert_allclose(
                last - first, [0, 0, clip.duration * (1.2 if name == "walk" else 3.0)], atol=1e-12
            )
        elif channel.path == "rotation":
            assert abs(abs(first @ last) - 1.0) < 1e-12
        else:
            np.testing.assert_allclose(first, last, atol=1e-12)
    assert clip.markers == {"left_foot_down": (0.0,), "right_foot_down": (clip.duration / 2,)}


def test_wave_animates_only_the_upper_body() -> None:
    names = {MANNEQUIN.skeleton.names[c.target] for c in MANNEQUIN.clips["wave"].channels}
    assert names
    assert names <= UPPER_BODY


def test_lean_look_starts_at_the_rest_pose() -> None:
    for channel in MANNEQUIN.clips["lean_look"].channels:
        np.testing.assert_allclose(channel.values[0], MANNEQUIN.skeleton.rest_rotations[channel.target], atol=1e-12)
        assert np.abs(channel.values[len(channel.values) // 2] - channel.values[0]).max() > 0.04


def test_committed_asset_is_what_the_generator_writes(tmp_path: Path) -> None:
    fresh, _ = write_mannequin(tmp_path / "mannequin.glb")
    assert DEFAULT_PATH.read_bytes() == fresh.read_bytes(), "run `ossa make-mannequin` and commit assets/mannequin.glb"


def test_the_file_holds_every_clip_the_programs_play() -> None:
    """The mannequin's clips, then the strafe gaits the demo's graph plays (``ossa graph check`` binds them)."""
    assert list(load_character(DEFAULT_PATH).clips) == list(CLIPS)
    assert list(CLIPS)[6:] == ["walk_back", "walk_left", "walk_right", "run_back", "run_left", "run_right"]
    assert main(["graph", "check", str(ROOT / "game" / "demo" / "locomotion.toml"), "--model", str(DEFAULT_PATH)]) == 0


def test_khronos_validator_reports_no_issue() -> None:
    """The Khronos glTF validator (npm ``gltf-validator``) finds no error and no warning."""
    module = os.environ.get("OSSA_GLTF_VALIDATOR")
    node = shutil.which("node")
    if not module or not node:
        require_or_skip(
            "set OSSA_GLTF_VALIDATOR to an npm gltf-validator folder (see README)", "OSSA_REQUIRE_VALIDATOR"
        )
    script = (
        "const v = require(process.argv[1]); const fs = require('fs');"
        "v.validateBytes(new Uint8Array(fs.readFileSync(process.argv[2])))"
        ".then(r => console.log(JSON.stringify(r.issues)));"
    )
    out = subprocess.run(
        [node, "-e", script, str(module), str(DEFAULT_PATH)], capture_output=True, text=True, check=True
    )
    issues = json.loads(out.stdout)
    assert (issues["numErrors"], issues["numWarnings"]) == (0, 0), issues["messages"][:5]


def test_the_written_file_loads_back_with_the_same_skeleton_clips_and_markers() -> None:
    character = load_character(DEFAULT_PATH)
    assert character.skeleton.names == MANNEQUIN.skeleton.names
    np.testing.assert_array_equal(character.skeleton.parents, MANNEQUIN.skeleton.parents)
    np.testing.assert_allclose(
        character.skeleton.inverse_bind_matrices, MANNEQUIN.skeleton.inverse_bind_matrices, atol=1e-6
    )
    assert list(character.clips) == list(CLIPS)
    for name, clip in CLIPS.items():
        loaded = character.clips[name]
        assert loaded.markers == clip.markers
        assert len(loaded.channels) == len(clip.channels)
        for a, b in zip(loaded.channels, clip.channels, strict=True):
            assert (a.target, a.path, a.interpolation) == (b.target, b.path, b.interpolation)
            np.testing.assert_allclose(a.values, b.values, atol=1e-6)  # float32 in the file
    (mesh,) = character.meshes
    assert mesh.num_vertices == MANNEQUIN.mesh.num_vertices
    np.testing.assert_allclose(mesh.weights, MANNEQUIN.mesh.weights, atol=1e-6)
