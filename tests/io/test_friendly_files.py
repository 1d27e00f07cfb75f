"""What a user meets first: files that are not glTF named for what they are, short reprs, the engine.io surface,
and the morph files of ../shared/assets (MorphStressTest, Blender's CUBICSPLINE and sparse weights) read right."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import engine.io
from engine.cli import main
from engine.errors import AssetError
from engine.io import load_character, load_gltf
from engine.io.bvh_character import load_bvh_character
from tests.anim.test_gltf_conformance import Reference


@pytest.mark.parametrize(
    ("name", "data", "what"),
    [
        (
            "walk.bvh",
            b"HIERARCHY\nROOT Hips\n",
            "a BVH motion-capture take (read it with engine.io.load_bvh or load_bvh_character)",
        ),
        (
            "hero.fbx",
            b"Kaydara FBX Binary  \x00\x1a\x00",
            "an FBX file (convert it to glTF first: FBX2glTF, Blender or assimp)",
        ),
        (
            "hero.fbx",
            b"; FBX 7.4.0 project file\n",
            "an ASCII FBX file (convert it to glTF first: FBX2glTF, Blender or assimp)",
        ),
        (
            "hero.obj",
            b"v 0 0 0\nv 1 0 0\n",
            "a Wavefront OBJ file (no skeleton or animation; convert it to glTF first)",
        ),
        ("skin.gltf", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "a PNG image"),
    ],
)
def test_files_that_are_not_gltf_are_named(name: str, data: bytes, what: str, tmp_path: Path) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    expected = f"{path}: not a glTF file but {what}; Ossa reads glTF 2.0: .gltf (JSON), .glb or .vrm (binary glTF)"
    with pytest.raises(AssetError) as info:
        load_character(path)
    assert str(info.value) == expected


def test_ossa_inspect_names_an_fbx_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hero.fbx"
    path.write_bytes(b"Kaydara FBX Binary  \x00\x1a\x00")
    assert main(["inspect", str(path)]) != 0
    err = capsys.readouterr().err.splitlines()
    fbx = "an FBX file (convert it to glTF first: FBX2glTF, Blender or assimp)"
    accepted = "glTF 2.0: .gltf (JSON), .glb or .vrm (binary glTF)"
    assert err == [f"ossa inspect: error: {path}: not a glTF file but {fbx}; Ossa reads {accepted}"]


def test_broken_json_is_still_reported_as_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.gltf"
    path.write_text('{"asset": ')
    with pytest.raises(AssetError, match=r"JSON line 1 column 11: not valid JSON"):
        load_gltf(path)


def test_a_character_prints_in_one_short_line(shared_assets: Path) -> None:
    fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    assert repr(fox) == "Character('skin0', 24 joints, 3 clips, 1 meshes, from 'Fox.glb')"
    assert repr(fox.asset) == "GltfAsset('Fox.glb', 26 nodes, 1 skins, 1 mesh nodes, 3 clips)"


def test_engine_io_exports_what_the_readme_lists() -> None:
    assert {"load_bvh_character", "load_character", "load_gltf", "load_bvh", "ClipFile"} <= set(engine.io.__all__)
    assert engine.io.load_bvh_character is load_bvh_character


# ---------------------------------------------------------------------------------------------
# morph files of the shared assets


def test_morph_stress_test_plays_its_weights_keys(shared_assets: Path) -> None:
    path = shared_assets / "morph_stress_test_weights" / "MorphStressTest.gltf"
    asset = load_gltf(path, textures=False)
    reference = Reference(path)
    animations = json.loads(path.read_text())["animations"]
    assert list(asset.scene.clips) == ["Individuals", "Pulse", "TheWave"]
    for animation, name in zip(animations, asset.scene.clips, strict=True):
        sampler = animation["samplers"][animation["channels"][0]["sampler"]]
        times = reference.accessor(sampler["input"])[:, 0]
        keys = reference.accessor(sampler["output"]).reshape(len(times), 8)
        np.testing.assert_allclose(asset.scene.sample_morph_weights(name, times)[0], keys, atol=1e-7)


def test_blender_cubicspline_weights_pass_through_their_values(shared_assets: Path) -> None:
    """CUBICSPLINE output holds (in-tangent, value, out-tangent) per key: at each key time the value."""
    path = shared_assets / "blender_io_morph_weights_tests" / "01_morphed_cube.gltf"
    asset = load_gltf(path, textures=False)
    reference = Reference(path)
    sampler = json.loads(path.read_text())["animations"][0]["samplers"][0]
    times = reference.accessor(sampler["input"])[:, 0]
    triplets = reference.accessor(sampler["output"]).reshape(len(times), 3, 2)
    np.testing.assert_allclose(asset.scene.sample_morph_weights("KeyAction", times)[0], triplets[:, 1], atol=1e-7)


def test_blender_sparse_weights_without_a_buffer_view(shared_assets: Path) -> None:
    """The output accessor has no bufferView: zeros, then its one sparse value substituted."""
    path = shared_assets / "blender_io_morph_weights_tests" / "23_multi_prim_vertex_attribute.gltf"
    document = json.loads(path.read_text())
    animation = document["animations"][0]
    output = document["accessors"][animation["samplers"][0]["output"]]
    assert "bufferView" not in output
    assert output["sparse"]["count"] == 1
    asset = load_gltf(path, textures=False)
    clip = next(iter(asset.scene.clips.values()))
    values = clip.weights[0].values[:, 0]
    assert np.count_nonzero(values) == 1
    assert values[0] == 0.0
