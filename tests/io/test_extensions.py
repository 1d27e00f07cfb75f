"""glTF extensions besides compression: textures (WebP, AVIF, KTX2), texture transforms, unlit and emissive
materials, KHR_animation_pointer, ignored and unknown extensions, and what ``ossa inspect`` says of each."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from engine.anim import sample
from engine.anim.clip import Clip
from engine.cli import main
from engine.errors import AssetError, OssaWarning
from engine.io import load_gltf
from engine.io.extensions import KNOWN
from engine.io.materials import uv_transform
from tests.anim.test_gltf_conformance import Reference
from tests.helpers import assert_quat_allclose
from tests.io.gltf_builder import DocBuilder

RNG = np.random.default_rng(3)
UVS = RNG.uniform(-0.2, 1.2, size=(4, 2))


def textured_quad(material: dict[str, Any], textures: list[dict[str, Any]] | None = None) -> DocBuilder:
    """One rigid quad with TEXCOORD_0 and TEXCOORD_1 (= 1 − TEXCOORD_0) and ``material``."""
    b = DocBuilder()
    b.add("nodes", {"mesh": 0})
    b.doc["scenes"] = [{"nodes": [0]}]
    positions = b.accessor([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    attributes = {
        "POSITION": positions,
        "TEXCOORD_0": b.accessor(UVS, 5126, "VEC2"),
        "TEXCOORD_1": b.accessor(1 - UVS, 5126, "VEC2"),
    }
    b.add(
        "meshes",
        {"primitives": [{"attributes": attributes, "indices": b.accessor([0, 1, 2, 0, 2, 3], 5123), "material": 0}]},
    )
    b.add("materials", material)
    b.doc["textures"] = textures if textures is not None else [{}]
    return b


def image_view(b: DocBuilder, pixels: np.ndarray, form: str) -> int:
    """An image of ``pixels`` encoded as ``form`` (``PNG``, lossless ``WEBP``, ``AVIF``) in a buffer view."""
    data = io.BytesIO()
    Image.fromarray(pixels).save(data, form, **({"lossless": True} if form == "WEBP" else {}))
    return b.add("images", {"bufferView": b.view(data.getvalue()), "mimeType": f"image/{form.lower()}"})


PIXELS = np.arange(4 * 4 * 4, dtype=np.uint8).reshape(4, 4, 4) * 3 + 10
PIXELS[..., 3] = 255


def texture_material(extensions: dict[str, Any] | None = None, tex_coord: int | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {"index": 0}
    if extensions:
        info["extensions"] = extensions
    if tex_coord is not None:
        info["texCoord"] = tex_coord
    return {"pbrMetallicRoughness": {"baseColorTexture": info}}


# ---------------------------------------------------------------------------------------------
# texture transforms, applied to the texture coordinates at load


def cesium_transform(uv: np.ndarray, offset: list[float], rotation: float, scale: list[float]) -> np.ndarray:
    """Cesium Native's KhrTextureTransform::applyTransform, written out (scale, rotate, offset)."""
    u, v = uv[:, 0] * scale[0], uv[:, 1] * scale[1]
    c, s = np.cos(rotation), np.sin(rotation)
    return np.stack([u * c + v * s + offset[0], v * c - u * s + offset[1]], axis=1)


@pytest.mark.parametrize(
    ("offset", "rotation", "scale"),
    [
        ([0.0, 0.0], 0.0, [1.0, 1.0]),
        ([0.25, -0.5], 0.0, [2.0, 0.5]),
        ([0.0, 1.0], np.pi / 2, [0.5, 0.5]),
        ([0.1, 0.2], 0.3927, [1.5, -1.0]),
    ],
)
def test_texture_transforms_move_the_texture_coordinates(
    offset: list[float], rotation: float, scale: list[float], tmp_path: Path
) -> None:
    transform = {"offset": offset, "rotation": rotation, "scale": scale}
    b = textured_quad(texture_material({"KHR_texture_transform": transform}))
    uvs = load_gltf(b.write(tmp_path / "t.gltf")).mesh_nodes[0].primitives[0].uvs
    np.testing.assert_allclose(uvs, cesium_transform(UVS, offset, rotation, scale), atol=1e-12)


def test_the_spec_example_reads_the_lower_left_quadrant() -> None:
    """KHR_texture_transform's example: offset (0, 1), rotation π/2, scale ½: the unit square lands on u ≤ ½, v ≥ ½."""
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    a = uv_transform([0.0, 1.0], np.pi / 2, [0.5, 0.5])
    moved = square @ a[:, :2].T + a[:, 2]
    np.testing.assert_allclose(moved, [[0.0, 1.0], [0.0, 0.5], [0.5, 0.5], [0.5, 1.0]], atol=1e-15)


def test_the_transform_may_pick_another_texcoord_set(tmp_path: Path) -> None:
    b = textured_quad(texture_material({"KHR_texture_transform": {"texCoord": 1, "scale": [2.0, 2.0]}}, tex_coord=0))
    uvs = load_gltf(b.write(tmp_path / "t.gltf")).mesh_nodes[0].primitives[0].uvs
    np.testing.assert_allclose(uvs, 2.0 * (1.0 - UVS), atol=1e-12)


def test_a_malformed_transform_is_named(tmp_path: Path) -> None:
    b = textured_quad(texture_material({"KHR_texture_transform": {"scale": [2.0]}}))
    with pytest.raises(
        AssetError,
        match=r"baseColorTexture\.extensions\.KHR_texture_transform\.scale: expected 2 finite numbers, got array of 1",
    ):
        load_gltf(b.write(tmp_path / "t.gltf"))
    b = textured_quad(texture_material({"KHR_texture_transform": 5}))
    with pytest.raises(
        AssetError, match=r"baseColorTexture\.extensions\.KHR_texture_transform: expected an object, got integer 5"
    ):
        load_gltf(b.write(tmp_path / "t.gltf"))


# ---------------------------------------------------------------------------------------------
# image formats


@pytest.mark.parametrize(("extension", "form"), [("EXT_texture_webp", "WEBP"), ("EXT_texture_avif", "AVIF")])
def test_webp_and_avif_images_are_decoded(extension: str, form: str, tmp_path: Path) -> None:
    b = textured_quad(texture_material())
    b.doc["textures"] = [{"extensions": {extension: {"source": image_view(b, PIXELS, form)}}}]
    b.doc["extensionsUsed"] = b.doc["extensionsRequired"] = [extension]
    asset = load_gltf(b.write(tmp_path / "t.glb", "glb"))
    texture = asset.mesh_nodes[0].primitives[0].texture
    if form == "WEBP":
        np.testing.assert_array_equal(texture, PIXELS)  # lossless
    else:
        assert np.abs(texture.astype(int) - PIXELS).max() < 24  # AVIF is lossy: close
    assert asset.extensions[0].did == KNOWN[extension].does
    assert asset.warnings == ()


KTX2 = b"\xabKTX 20\xbb\r\n\x1a\n" + bytes(64)


def test_ktx2_textures_fall_back_to_the_core_source(tmp_path: Path) -> None:
    b = textured_quad(texture_material())
    ktx = b.add("images", {"bufferView": b.view(KTX2), "mimeType": "image/ktx2"})
    png = image_view(b, PIXELS, "PNG")
    b.doc["textures"] = [{"source": png, "extensions": {"KHR_texture_basisu": {"source": ktx}}}]
    b.doc["extensionsUsed"] = ["KHR_texture_basisu"]
    asset = load_gltf(b.write(tmp_path / "t.glb", "glb"))
    np.testing.assert_array_equal(asset.mesh_nodes[0].primitives[0].texture, PIXELS)
    assert asset.extensions[0].did == "KTX2 images not decoded (no decoder installed): the fallback images are drawn"
    assert asset.warnings == ()


def test_ktx2_textures_without_a_fallback_draw_untextured_with_one_warning(tmp_path: Path) -> None:
    b = textured_quad(texture_material())
    ktx = b.add("images", {"bufferView": b.view(KTX2), "mimeType": "image/ktx2"})
    b.doc["textures"] = [{"extensions": {"KHR_texture_basisu": {"source": ktx}}}] * 2
    b.add("materials", {"pbrMetallicRoughness": {"baseColorTexture": {"index": 1}}})
    b.doc["meshes"][0]["primitives"].append(dict(b.doc["meshes"][0]["primitives"][0], material=1))
    b.doc["extensionsUsed"] = b.doc["extensionsRequired"] = ["KHR_texture_basisu"]
    with pytest.warns(
        OssaWarning,
        match=r"KHR_texture_basisu: its KTX2 images cannot be decoded here; textures without a fallback are not drawn$",
    ) as caught:
        asset = load_gltf(b.write(tmp_path / "t.glb", "glb"))
    assert len(caught) == 1
    assert all(p.texture is None for p in asset.mesh_nodes[0].primitives)


# ---------------------------------------------------------------------------------------------
# materials: unlit, emissive strength


def test_unlit_and_emissive_materials(tmp_path: Path) -> None:
    material = {
        "pbrMetallicRoughness": {"baseColorFactor": [0.2, 0.4, 0.6, 1.0]},
        "emissiveFactor": [0.5, 0.25, 1.0],
        "extensions": {"KHR_materials_emissive_strength": {"emissiveStrength": 4.0}, "KHR_materials_unlit": {}},
    }
    b = textured_quad(material)
    b.doc["extensionsUsed"] = ["KHR_materials_emissive_strength", "KHR_materials_unlit"]
    b.doc["extensionsRequired"] = ["KHR_materials_unlit"]
    mesh = load_gltf(b.write(tmp_path / "t.gltf")).mesh_nodes[0].primitives[0]
    assert mesh.unlit
    np.testing.assert_array_equal(mesh.emissive, [2.0, 1.0, 4.0])
    np.testing.assert_array_equal(mesh.base_color, [0.2, 0.4, 0.6, 1.0])


def test_an_emissive_texture_is_not_drawn_nor_its_factor(tmp_path: Path) -> None:
    b = textured_quad({"emissiveFactor": [1.0, 1.0, 1.0], "emissiveTexture": {"index": 0}})
    assert not load_gltf(b.write(tmp_path / "t.gltf")).mesh_nodes[0].primitives[0].emissive.any()


# ---------------------------------------------------------------------------------------------
# ignored, unknown and refused extensions


def test_an_ignored_material_extension_warns_once(tmp_path: Path) -> None:
    b = textured_quad({"extensions": {"KHR_materials_sheen": {"sheenColorFactor": [1, 0, 0]}}})
    b.doc["extensionsUsed"] = b.doc["extensionsRequired"] = ["KHR_materials_sheen"]  # required, still drawn
    with pytest.warns(
        OssaWarning,
        match=r"KHR_materials_sheen: not drawn \(Ossa draws base colour, emissive and one light\); ignored$",
    ) as caught:
        load_gltf(b.write(tmp_path / "t.gltf"))
    assert len(caught) == 1


def test_an_unknown_extension_used_warns_and_required_is_refused(tmp_path: Path) -> None:
    b = textured_quad({})
    b.doc["extensionsUsed"] = ["ACME_sparkles"]
    with pytest.warns(
        OssaWarning, match=r"ACME_sparkles: not known to Ossa; ignored \(the file's core data is read\)$"
    ):
        load_gltf(b.write(tmp_path / "t.gltf"))
    b.doc["extensionsRequired"] = ["ACME_sparkles"]
    with pytest.raises(
        AssetError,
        match=r"extensionsRequired: requires extensions Ossa does not support: \['ACME_sparkles'\] "
        r"\(supported: \['EXT_meshopt_compression'",
    ):
        load_gltf(b.write(tmp_path / "t.gltf"))


def test_gpu_instancing_is_refused_when_required(tmp_path: Path) -> None:
    """Instances place geometry: a file that needs them is refused; one that only uses them draws each mesh once."""
    b = textured_quad({})
    b.doc["extensionsUsed"] = b.doc["extensionsRequired"] = ["EXT_mesh_gpu_instancing"]
    with pytest.raises(AssetError, match=r"does not support: \['EXT_mesh_gpu_instancing'\]"):
        load_gltf(b.write(tmp_path / "t.gltf"))
    del b.doc["extensionsRequired"]
    with pytest.warns(OssaWarning, match="EXT_mesh_gpu_instancing: instances not drawn: each node draws its mesh once"):
        load_gltf(b.write(tmp_path / "t.gltf"))


def test_inspect_lists_the_extensions_and_what_ossa_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = textured_quad({"extensions": {"KHR_materials_unlit": {}}})
    b.doc["extensionsUsed"] = ["KHR_materials_unlit", "KHR_lights_punctual"]
    b.doc["extensionsRequired"] = ["KHR_materials_unlit"]
    assert main(["inspect", str(b.write(tmp_path / "t.gltf"))]) == 0
    out = capsys.readouterr().out
    assert (
        "extensions: 2\n  KHR_materials_unlit (required): drawn unlit (base colour only)\n"
        "  KHR_lights_punctual: lights not used (the programs light the scene)\n"
    ) in out
    assert "warnings: 1\n  extensionsUsed: KHR_lights_punctual: lights not used (the programs light the scene)" in out


# ---------------------------------------------------------------------------------------------
# KHR_animation_pointer on the real "Animate All The Things"


@pytest.fixture(scope="module")
def things(shared_assets: Path) -> Path:
    return shared_assets / "animate_all_the_things_pointer" / "24_animation_pointer.gltf"


def pointers(path: Path) -> list[tuple[str, dict[str, Any]]]:
    animation = json.loads(path.read_text())["animations"][0]
    return [
        (c["target"]["extensions"]["KHR_animation_pointer"]["pointer"], animation["samplers"][c["sampler"]])
        for c in animation["channels"]
    ]


def test_animate_all_the_things_loads_with_one_warning_per_thing_ignored(things: Path) -> None:
    with pytest.warns(OssaWarning) as caught:
        asset = load_gltf(things, textures=False)
    messages = [str(w.message).split(": ", 1)[1] for w in caught]
    assert messages == [
        "animations: KHR_animation_pointer: 46 of 70 pointer channels animate what Ossa does not animate "
        "(cameras 8, extensions 11, materials 27); ignored",
        "extensionsUsed: KHR_lights_punctual: lights not used (the programs light the scene)",
        *(
            f"extensionsUsed: {name}: not drawn (Ossa draws base colour, emissive and one light); ignored"
            for name in (
                "KHR_materials_ior",
                "KHR_materials_transmission",
                "KHR_materials_iridescence",
                "KHR_materials_volume",
            )
        ),
    ]
    did = {e.name: e.did for e in asset.extensions}
    assert (
        did["KHR_animation_pointer"]
        == "24 node/mesh pointer channel(s) played; 46 others ignored (cameras 8, extensions 11, materials 27)"
    )
    assert did["KHR_materials_unlit"] == "drawn unlit (base colour only)"
    text = {m.gltf_node: m.primitives[0].unlit for m in asset.mesh_nodes}
    assert text[20]  # the text meshes' material is unlit
    assert not text[15]  # the spheres' is not


def test_node_pointers_play_the_keys_of_their_samplers(things: Path) -> None:
    """At each key time a LINEAR channel is its key: the file's keys, read with np.frombuffer, per node pointer."""
    with pytest.warns(OssaWarning):
        asset = load_gltf(things, textures=False)
    reference = Reference(things)
    clip = asset.clips[0]
    channels = {(int(asset.node_indices[c.target]), c.path): c for c in clip.channels}
    node_pointers = [(p, s) for p, s in pointers(things) if p.startswith("/nodes/") and not p.endswith("/weights")]
    assert len(node_pointers) == 22
    assert len(channels) == 22
    for pointer, sampler in node_pointers:
        _, _, node, path = pointer.split("/")
        times = reference.accessor(sampler["input"])[:, 0]
        keys = reference.accessor(sampler["output"])
        channel = channels[int(node), path]
        hierarchy = asset.hierarchy
        pose = sample(Clip("one", (channel,), hierarchy.num_joints), hierarchy.rest_pose, times)
        values = getattr(pose, {"translation": "translations", "rotation": "rotations", "scale": "scales"}[path])[
            :, channel.target
        ]
        if path == "rotation":
            assert_quat_allclose(values, keys / np.linalg.norm(keys, axis=1, keepdims=True), atol=1e-6)
        else:
            np.testing.assert_allclose(values, keys, atol=1e-6)


def test_weights_pointers_drive_the_node_and_the_meshs_instances(things: Path) -> None:
    with pytest.warns(OssaWarning):
        asset = load_gltf(things, textures=False)
    scene_clip = next(iter(asset.scene.clips.values()))
    animated = sorted(int(asset.node_indices[c.target]) for c in scene_clip.weights)
    assert animated == [43, 62, 63]  # /nodes/43/weights, and /meshes/33/weights on both nodes of mesh 33
    reference = Reference(things)
    sampler = dict(pointers(things))["/meshes/33/weights"]
    times = reference.accessor(sampler["input"])[:, 0]
    weights = asset.scene.sample_morph_weights(scene_clip.name, times)
    nodes = {int(asset.node_indices[i.node]): k for k, i in enumerate(asset.scene.instances)}
    np.testing.assert_allclose(
        weights[nodes[62]], reference.accessor(sampler["output"]).reshape(len(times), 1), atol=1e-6
    )
    # the node and mesh channels have different widths (2 and 1 targets): one clip samples both
    both = Clip("both", (*scene_clip.nodes.channels, *scene_clip.weights), asset.hierarchy.num_joints)
    assert sample(both, asset.hierarchy.rest_pose, np.array([0.5])).translations.shape[-2] == asset.hierarchy.num_joints


def pointer_document(pointer: Any, path: str = "pointer") -> DocBuilder:
    b = textured_quad({})
    times = b.accessor([0.0, 1.0], 5126, "SCALAR", min=[0.0], max=[1.0])
    values = b.accessor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], 5126, "VEC3")
    target: dict[str, Any] = {"path": path}
    if pointer is not None:
        target["extensions"] = {"KHR_animation_pointer": pointer}
    b.add(
        "animations", {"samplers": [{"input": times, "output": values}], "channels": [{"sampler": 0, "target": target}]}
    )
    b.doc["extensionsUsed"] = ["KHR_animation_pointer"]
    return b


@pytest.mark.parametrize(
    ("pointer", "message"),
    [
        (None, r"channels\[0\]\.target: path 'pointer' needs a KHR_animation_pointer extension object"),
        ({"pointer": 7}, r"KHR_animation_pointer\.pointer: expected a string, got integer 7"),
        (
            {"pointer": "/nodes/9/translation"},
            r"KHR_animation_pointer\.pointer: index 9 is out of range: the file has 1 nodes",
        ),
        ({}, r"KHR_animation_pointer\.pointer: the required property 'pointer' is missing"),
    ],
)
def test_bad_pointers_are_named(pointer: Any, message: str, tmp_path: Path) -> None:
    with pytest.raises(AssetError, match=message):
        load_gltf(pointer_document(pointer).write(tmp_path / "p.gltf"))


def test_a_translation_pointer_is_a_translation_channel(tmp_path: Path) -> None:
    asset = load_gltf(pointer_document({"pointer": "/nodes/0/translation"}).write(tmp_path / "p.gltf"))
    channel = asset.clips[0].channels[0]
    assert (channel.target, channel.path) == (0, "translation")
    np.testing.assert_array_equal(channel.values, [[0, 0, 0], [1, 2, 3]])
