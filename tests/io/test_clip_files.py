"""Clips from other files bound by node name: the KayKit mannequin and its animation-only GLBs, small files, errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.anim import sample
from engine.cli import main
from engine.errors import AssetError, InvalidInputError, OssaWarning
from engine.io import load_character, load_gltf
from game.model import load_model
from tests.helpers import assert_quat_allclose
from tests.io.gltf_builder import DocBuilder, quat_z, skinned_document


@pytest.fixture(scope="module")
def kaykit(shared_assets: Path) -> tuple[Path, list[Path]]:
    folder = shared_assets / "kaykit_mannequin_rig_medium"
    return folder / "mannequin_v2" / "manny_med_mod.gltf", [
        folder / "anim" / "Med_General.glb",
        folder / "anim" / "Med_MovementBasic.glb",
    ]


@pytest.fixture(scope="module")
def mannequin(kaykit: tuple[Path, list[Path]]):  # type: ignore[no-untyped-def]
    model, clips = kaykit
    return load_character(model, clips=clips, textures=False)


def test_the_kaykit_clips_bind_by_joint_name(mannequin) -> None:  # type: ignore[no-untyped-def]
    assert len(mannequin.clips) == 15 + 11
    assert "Med_MovementBasic/Rig_Medium|T-Pose" in mannequin.clips  # the name both files use, told apart
    general, movement = mannequin.asset.clip_files
    assert general.not_in_character == ("handslot.l", "handslot.r")
    assert general.not_animated == ()
    assert len(general.bound) == 22  # the 21 joints and the armature root
    assert general.report() == (
        "Med_General.glb: 15 clip(s) bound by node name to 22 of the character's nodes; "
        "not in the character (left out): handslot.l, handslot.r"
    )
    assert movement.clips[-1] == "Rig_Medium|Walking_C"


def test_a_bound_clip_plays_the_files_own_pose(mannequin, kaykit: tuple[Path, list[Path]]) -> None:  # type: ignore[no-untyped-def]
    """Joint by joint, the character's sampled pose is the clip file's own skeleton's (same names, same keys)."""
    source = load_character(kaykit[1][1], textures=False)
    times = np.array([0.05, 0.4, 0.93])
    ours = sample(mannequin.clips["Rig_Medium|Walking_A"], mannequin.skeleton.rest_pose, times)
    theirs = sample(source.clips["Rig_Medium|Walking_A"], source.skeleton.rest_pose, times)
    for j, name in enumerate(mannequin.skeleton.names):
        k = source.skeleton.names.index(name)
        np.testing.assert_allclose(ours.translations[:, j], theirs.translations[:, k], atol=1e-12)
        assert_quat_allclose(ours.rotations[:, j], theirs.rotations[:, k], atol=1e-12)


def test_step_and_linear_channels_keep_their_interpolation(mannequin) -> None:  # type: ignore[no-untyped-def]
    modes = {c.interpolation for c in mannequin.clips["Rig_Medium|Idle_B"].channels}
    assert modes == {"STEP", "LINEAR"}


def test_the_scene_gets_the_clips_too(mannequin) -> None:  # type: ignore[no-untyped-def]
    scene = mannequin.scene
    assert len(scene.clips) == 26
    frame = scene.sample("Rig_Medium|Walking_A", np.array([0.5]))
    assert np.isfinite(frame.world).all()


def test_the_programs_say_what_bound(tmp_path: Path) -> None:
    body = skinned_document()
    del body.doc["animations"]
    clips = skinned_document()
    del clips.doc["animations"][1]
    program = load_model(body.write(tmp_path / "body.gltf"), clips=[clips.write(tmp_path / "wave.gltf")])
    expected = (
        "clips from wave.gltf: 1 clip(s) bound by node name to 2 of the character's nodes; "
        "joints its clips do not animate (rest pose): head"
    )
    assert expected in program.notes
    assert list(program.clips) == ["wave"]


def morph_document(targets: int) -> DocBuilder:
    """A node ``face`` with a mesh of ``targets`` morph targets and a clip of its weights."""
    b = DocBuilder()
    b.add("nodes", {"name": "face", "mesh": 0})
    b.doc["scenes"] = [{"nodes": [0]}]
    positions = b.accessor(
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0]
    )
    shift = [{"POSITION": b.accessor([[0.0, 0.0, 0.1 * (t + 1)]] * 3, 5126, "VEC3")} for t in range(targets)]
    b.add("meshes", {"primitives": [{"attributes": {"POSITION": positions}, "targets": shift}]})
    times = b.accessor([0.0, 1.0], 5126, "SCALAR", min=[0.0], max=[1.0])
    keys = b.accessor([0.0] * targets + [1.0] * targets, 5126, "SCALAR")
    b.add(
        "animations",
        {
            "name": "smile",
            "samplers": [{"input": times, "output": keys}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}}],
        },
    )
    return b


def test_morph_weight_channels_bind_too(tmp_path: Path) -> None:
    character = morph_document(2)
    del character.doc["animations"]
    asset = load_gltf(character.write(tmp_path / "face.gltf"), clips=[morph_document(2).write(tmp_path / "smile.gltf")])
    np.testing.assert_allclose(asset.scene.sample_morph_weights("smile", np.array([0.5]))[0], [[0.5, 0.5]])


def test_morph_weights_for_another_target_count_are_refused(tmp_path: Path) -> None:
    face = morph_document(2)
    del face.doc["animations"]
    character = face.write(tmp_path / "face.gltf")
    clips = morph_document(3).write(tmp_path / "smile.gltf")
    with pytest.raises(
        AssetError,
        match=r"smile\.gltf: clip 'smile' animates 3 morph weights of 'face', but the character's 'face' has a mesh "
        r"of 2 morph targets",
    ):
        load_gltf(character, clips=[clips])


def test_a_clip_file_that_binds_nothing_is_refused(tmp_path: Path, shared_assets: Path) -> None:
    character = skinned_document().write(tmp_path / "body.gltf")
    fox = shared_assets / "fox" / "glTF-Binary" / "Fox.glb"
    with pytest.raises(
        AssetError,
        match=r"Fox\.glb: none of the 20 nodes its clips animate \('b_Head_05', .* is named as a node of the "
        r"character \('head', 'hip', 'spine'\): nothing to bind",
    ) as info:
        load_gltf(character, clips=[fox])
    assert "\n" not in str(info.value)


def test_joints_a_clip_file_leaves_at_rest_warn_once(tmp_path: Path) -> None:
    b = skinned_document()
    del b.doc["animations"][1]
    partial = skinned_document()
    partial.doc["animations"] = partial.doc["animations"][:1]
    partial.doc["animations"][0]["channels"] = partial.doc["animations"][0]["channels"][:1]  # the spine only
    with pytest.warns(
        OssaWarning,
        match=r"clips from partial\.gltf: 1 clip\(s\) bound by node name to 1 of the character's nodes; joints its "
        r"clips do not animate \(rest pose\): head, hip$",
    ) as caught:
        load_character(b.write(tmp_path / "body.gltf"), clips=[partial.write(tmp_path / "partial.gltf")])
    assert len(caught) == 1
    assert caught[0].filename == __file__  # attributed to the caller, not to a line inside engine/io


def test_loader_warnings_point_at_the_caller(tmp_path: Path) -> None:
    b = skinned_document()
    b.doc["skins"][0]["inverseBindMatrices"] = b.accessor([np.eye(4)] * 4, 5126, "MAT4")
    path = b.write(tmp_path / "extra.gltf")
    for load in (load_gltf, load_character):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            load(path)
        assert {w.filename for w in caught} == {__file__}, load.__name__


def test_a_clip_moving_nodes_above_the_skeleton_warns_once_for_every_clip(tmp_path: Path) -> None:
    b = skinned_document()
    second = dict(b.doc["animations"][1], name="lift again")
    b.doc["animations"].append(second)
    still = {
        "samplers": [
            {"input": b.accessor([0.0, 1.0], 5126, "SCALAR"), "output": b.accessor([[0.0, 1.0, 0.0]] * 2, 5126, "VEC3")}
        ],
        "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}],
        "name": "at rest",
    }
    b.doc["animations"].append(still)  # keys the armature at its rest translation: nothing moves, no warning
    with pytest.warns(
        OssaWarning, match=r"clip\(s\) 'animation1', 'lift again' move nodes \[0\] above the skeleton of skin 0"
    ) as caught:
        load_character(b.write(tmp_path / "lift.gltf"))
    assert len(caught) == 1


def test_ossa_commands_take_clips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = skinned_document()
    del body.doc["animations"]
    clips = skinned_document()
    del clips.doc["animations"][1]
    model, wave = body.write(tmp_path / "body.gltf"), clips.write(tmp_path / "wave.gltf")
    assert main(["inspect", str(model), "--clips", str(wave)]) == 0
    out = capsys.readouterr().out
    assert "clip files: 1\n  wave.gltf: 1 clip(s) bound by node name to 2 of the character's nodes" in out
    assert "clips: 1\n  0 'wave': 0–2 s" in out
    assert main(["evaluate", str(model), "--clips", str(wave), "--clip", "wave", "--times", "0.5"]) == 0


def test_clips_for_a_bvh_take_are_refused(
    shared_assets: Path, kaykit: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    take = shared_assets / "pirouette_bvh" / "pirouette.bvh"
    assert main(["inspect", str(take), "--clips", str(kaykit[1][0])]) != 0
    assert "--clips binds glTF clips to a glTF character; pirouette.bvh is a BVH take" in capsys.readouterr().err
    with pytest.raises(
        InvalidInputError, match=r"--clips binds glTF clips to a glTF character; pirouette\.bvh is a BVH take"
    ):
        load_model(take, clips=kaykit[1])


def test_rest_rotation_keys_of_either_sign_do_not_warn(tmp_path: Path) -> None:
    """Keys that are not the rest rotation up to sign (q and -q) still count as at rest."""
    b = skinned_document()
    del b.doc["animations"][1]
    keys = b.accessor([quat_z(0.0), [0.0, 0.0, 0.0, -1.0]], 5126, "VEC4")
    b.doc["animations"].append(
        {
            "samplers": [{"input": b.accessor([0.0, 1.0], 5126, "SCALAR"), "output": keys}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "rotation"}}],
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_character(b.write(tmp_path / "sign.gltf"))


def test_clip_names_taken_get_the_files_stem(tmp_path: Path) -> None:
    body = skinned_document()
    del body.doc["animations"][1]  # the body keeps its own 'wave'
    clips = skinned_document()
    del clips.doc["animations"][1]
    wave = clips.write(tmp_path / "wave.gltf")
    with pytest.warns(OssaWarning, match=r"joints its clips do not animate \(rest pose\): head"):
        character = load_character(body.write(tmp_path / "body.gltf"), clips=[wave, wave, wave])
    assert list(character.clips) == ["wave", "wave/wave", "wave/wave#2", "wave/wave#3"]
