"""What the glTF loader builds: hierarchy, skins (re-ordered depth-first), clips, meshes, textures,
characters, on hand-made documents with known answers and on the shared real assets."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from engine.errors import AssetError, OssaWarning
from engine.io import load_character, load_gltf
from tests.helpers import assert_quat_allclose
from tests.io.gltf_builder import DocBuilder, quat_z, skinned_document

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def skinned(tmp_path: Path) -> Path:
    return skinned_document().write(tmp_path / "skinned.gltf")


def test_hierarchy_is_the_default_scene_depth_first(skinned: Path) -> None:
    asset = load_gltf(skinned)
    # nodes: 0 armature (children [3, 1]), 1 hip → 2 spine → 4 head, 3 mesh
    assert asset.node_indices.tolist() == [0, 3, 1, 2, 4]
    assert asset.hierarchy.names == ("armature", "mesh", "hip", "spine", "head")
    assert asset.hierarchy.parents.tolist() == [-1, 0, 0, 2, 3]
    assert asset.node_names == ("armature", "mesh", "hip", "spine", "head")
    np.testing.assert_array_equal(asset.hierarchy.rest_translations[0], [0, 1, 0])
    assert_quat_allclose(asset.hierarchy.rest_rotations[3], quat_z(0.3))
    np.testing.assert_array_equal(asset.hierarchy.rest_scales[4], [2, 2, 2])
    assert asset.hierarchy_index(2) == 3
    with pytest.raises(AssetError, match="node 7 is not part of the default scene"):
        asset.hierarchy_index(7)
    world = asset.rest_world()
    np.testing.assert_allclose(world[4, :3, 3], [-np.sin(0.3), 1 + 0.5 + 1 + np.cos(0.3), 0])


def test_skin_joints_are_reordered_depth_first_and_meshes_remapped(skinned: Path) -> None:
    asset = load_gltf(skinned)
    skin = asset.skins[0]
    # skins[0].joints = [4 head, 1 hip, 2 spine] → depth-first hip, spine, head
    assert skin.skeleton.names == ("hip", "spine", "head")
    assert skin.skeleton.parents.tolist() == [-1, 0, 1]
    assert skin.joint_nodes.tolist() == [1, 2, 4]
    assert skin.from_gltf_order.tolist() == [2, 0, 1]
    np.testing.assert_array_equal(skin.skeleton.inverse_bind_matrices[:, 1, 3], [-0.5, -1.5, -3.5])
    assert skin.root_parent == 0
    np.testing.assert_array_equal(skin.root_transform[:3, 3], [0, 1, 0])
    mesh = asset.mesh_nodes[0]
    assert (mesh.node, mesh.gltf_node, mesh.mesh, mesh.skin, mesh.primitive_indices) == (1, 3, 0, 0, (0,))
    data = mesh.primitives[0]
    gltf_joints = np.array(
        [[0, 1, 0, 0, 0, 0, 0, 0], [1, 2, 0, 0, 2, 1, 0, 0], [2, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 2, 0, 0]]
    )
    np.testing.assert_array_equal(data.joints, np.array([2, 0, 1])[gltf_joints])
    assert data.influence_sets == 2
    np.testing.assert_allclose(data.weights.sum(axis=1), 1.0)
    # triangle strip (0, 1, 2, 3) → triangles (0, 1, 2), (1, 3, 2): the spec's alternating winding
    assert data.indices.tolist() == [0, 1, 2, 1, 3, 2]
    np.testing.assert_array_equal(data.base_color, [1, 1, 1, 1])
    assert data.name == "strip/0"


def test_clips_bind_nodes_by_index_in_the_hierarchy_and_in_each_skin(skinned: Path) -> None:
    asset = load_gltf(skinned)
    assert [c.name for c in asset.clips] == ["wave", "animation1"]
    wave = asset.clips[0]
    assert wave.num_targets == 5
    assert [(c.target, c.path, c.interpolation) for c in wave.channels] == [
        (3, "rotation", "LINEAR"),
        (2, "translation", "STEP"),
    ]
    assert_quat_allclose(wave.channels[0].values, [quat_z(0.0), quat_z(1.0), quat_z(2.0)], atol=1e-7)  # float32 keys
    skin_wave, skin_lift = asset.skins[0].clips
    assert skin_wave.num_targets == 3
    assert [(c.target, c.path) for c in skin_wave.channels] == [(1, "rotation"), (0, "translation")]
    assert skin_lift.name == "animation1"
    assert skin_lift.channels == ()  # it animates the armature, which is not a joint


def test_runtime_arrays_are_read_only(skinned: Path) -> None:
    asset = load_gltf(skinned)
    data = asset.mesh_nodes[0].primitives[0]
    arrays = [
        asset.node_indices,
        asset.skins[0].joint_nodes,
        asset.skins[0].from_gltf_order,
        asset.skins[0].root_transform,
        asset.skins[0].skeleton.inverse_bind_matrices,
        asset.clips[0].channels[0].values,
        data.positions,
        data.joints,
        data.weights,
        data.indices,
    ]
    for array in arrays:
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0


@pytest.mark.parametrize("form", ["embedded", "external", "glb"])
def test_gltf_glb_and_external_buffers_load_the_same(form: str, tmp_path: Path) -> None:
    reference = load_gltf(skinned_document().write(tmp_path / "a.gltf"))
    suffix = ".glb" if form == "glb" else ".gltf"
    other = load_gltf(skinned_document().write(tmp_path / f"b{suffix}", form))
    np.testing.assert_array_equal(
        other.mesh_nodes[0].primitives[0].weights, reference.mesh_nodes[0].primitives[0].weights
    )
    np.testing.assert_array_equal(
        other.skins[0].skeleton.inverse_bind_matrices, reference.skins[0].skeleton.inverse_bind_matrices
    )
    np.testing.assert_array_equal(other.clips[0].channels[1].values, reference.clips[0].channels[1].values)


def test_node_matrix_is_decomposed_and_names_are_made_unique(tmp_path: Path) -> None:
    b = DocBuilder()
    m = np.diag([2.0, 3.0, 4.0, 1.0])
    m[:3, :3] = m[:3, :3] @ np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])  # R_z(90°) · S, then mirror below
    m[:3, 3] = [1, 2, 3]
    mirrored = m.copy()
    mirrored[:, 0] *= -1
    b.add("nodes", {"name": "twin", "matrix": mirrored.T.reshape(-1).tolist(), "children": [1, 2]})
    b.add("nodes", {"name": "twin"})
    b.add("nodes", {})
    asset = load_gltf(b.write(tmp_path / "m.gltf"))  # no scenes: every root node is used
    assert asset.scene_index is None
    assert asset.hierarchy.names == ("twin", "twin#1", "node2")
    assert asset.node_names == ("twin", "twin", None)
    np.testing.assert_allclose(asset.rest_world()[0], mirrored, atol=1e-12)


def test_triangle_fan_and_indexed_strip(tmp_path: Path) -> None:
    b = DocBuilder()
    position = b.accessor(np.zeros((5, 3)), 5126, "VEC3")
    fan = b.accessor([0, 1, 2, 3, 4], 5121, "SCALAR")
    strip = b.accessor([4, 3, 2, 1], 5123, "SCALAR")
    primitives = [
        {"attributes": {"POSITION": position}, "indices": fan, "mode": 6},
        {"attributes": {"POSITION": position}, "indices": strip, "mode": 5},
    ]
    b.add("meshes", {"primitives": primitives})
    b.add("nodes", {"mesh": 0})
    mesh = load_gltf(b.write(tmp_path / "fan.gltf")).mesh_nodes[0]
    # fan: (v1, v2, v0), (v2, v3, v0), (v3, v4, v0); strip over (4, 3, 2, 1): (4, 3, 2), (3, 1, 2)
    assert mesh.primitives[0].indices.tolist() == [1, 2, 0, 2, 3, 0, 3, 4, 0]
    assert mesh.primitives[1].indices.tolist() == [4, 3, 2, 3, 1, 2]
    assert mesh.primitives[0].name == "mesh0/0"


def png_rgba(pixels: np.ndarray) -> bytes:
    """A minimal PNG (8-bit RGBA, filter 0 on every row) written from the format's definition."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    height, width, _ = pixels.shape
    raw = b"".join(b"\0" + pixels[row].astype(np.uint8).tobytes() for row in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def textured(tmp_path: Path, image: dict) -> DocBuilder:
    b = DocBuilder()
    position = b.accessor(np.eye(3), 5126, "VEC3")
    uv0 = b.accessor(np.zeros((3, 2)), 5126, "VEC2")
    uv1 = b.accessor([[0, 0], [1, 0], [0, 1]], 5126, "VEC2")
    b.add("images", image)
    b.add("textures", {"source": 0})
    b.add(
        "materials",
        {
            "pbrMetallicRoughness": {
                "baseColorFactor": [0.5, 0.25, 1, 1],
                "baseColorTexture": {"index": 0, "texCoord": 1},
            }
        },
    )
    attributes = {"POSITION": position, "TEXCOORD_0": uv0, "TEXCOORD_1": uv1}
    b.add("meshes", {"primitives": [{"attributes": attributes, "material": 0}]})
    b.add("nodes", {"mesh": 0})
    return b


def test_base_colour_texture_is_decoded_top_row_first(tmp_path: Path) -> None:
    pixels = np.arange(2 * 3 * 4).reshape(2, 3, 4) * 10
    uri = "data:image/png;base64," + base64.b64encode(png_rgba(pixels)).decode()
    data = load_gltf(textured(tmp_path, {"uri": uri}).write(tmp_path / "t.gltf")).mesh_nodes[0].primitives[0]
    np.testing.assert_array_equal(data.texture, pixels)
    np.testing.assert_array_equal(data.base_color, [0.5, 0.25, 1, 1])
    np.testing.assert_array_equal(data.uvs, [[0, 0], [1, 0], [0, 1]])  # the texture's texCoord set
    (tmp_path / "tex.png").write_bytes(png_rgba(pixels))
    b = textured(tmp_path, {"uri": "tex.png"})
    assert load_gltf(b.write(tmp_path / "u.gltf")).mesh_nodes[0].primitives[0].texture.shape == (2, 3, 4)
    assert load_gltf(b.write(tmp_path / "v.gltf"), textures=False).mesh_nodes[0].primitives[0].texture is None


def test_image_in_a_glb_buffer_view(tmp_path: Path) -> None:
    pixels = np.full((1, 1, 4), 200)
    b = textured(tmp_path, {})
    b.doc["images"][0] = {"bufferView": b.view(png_rgba(pixels)), "mimeType": "image/png"}
    data = load_gltf(b.write(tmp_path / "t.glb", "glb")).mesh_nodes[0].primitives[0]
    np.testing.assert_array_equal(data.texture, pixels)


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ({"uri": "absent.png"}, r"images\[0\].uri: cannot read 'absent.png'.*; texture skipped"),
        (
            {"uri": "data:image/png;base64,AAAA"},
            r"images\[0\]: cannot decode the image from data: URI.*; texture skipped",
        ),
    ],
)
def test_unreadable_images_are_skipped_with_a_warning(image: dict, message: str, tmp_path: Path) -> None:
    path = textured(tmp_path, image).write(tmp_path / "t.gltf")
    with pytest.warns(OssaWarning, match=message):
        asset = load_gltf(path)
    assert asset.mesh_nodes[0].primitives[0].texture is None


def test_load_character(skinned: Path) -> None:
    with pytest.warns(OssaWarning, match=r"clip\(s\) 'animation1' move nodes \[0\] above the skeleton of skin 0"):
        character = load_character(skinned)
    assert character.name == "body"
    assert character.skeleton is character.skin.skeleton
    assert list(character.clips) == ["wave", "animation1"]
    assert character.clips["wave"].num_targets == 3
    assert len(character.meshes) == 1
    assert character.meshes[0].influence_sets == 2
    np.testing.assert_array_equal(character.root_transform[:3, 3], [0, 1, 0])
    np.testing.assert_array_equal(character.mesh_transforms[0][:3, 3], [0, 1, 0])
    with pytest.raises(TypeError):
        character.clips["x"] = character.clips["wave"]  # type: ignore[index]
    with pytest.raises(AssetError, match="skin 1 requested but the file has 1 skin"):
        load_character(skinned, skin=1)


def test_load_character_of_the_committed_mannequin() -> None:
    character = load_character(ROOT / "assets" / "mannequin.glb")
    assert character.skeleton.num_joints == 25
    assert character.asset.warnings == ()
    assert all(mesh.skinned for mesh in character.meshes)


# ---------------------------------------------------------------------------------------------
# the shared real assets (numbers from their READMEs and the files)


@pytest.mark.assets
@pytest.mark.parametrize("relative", ["fox/glTF/Fox.gltf", "fox/glTF-Binary/Fox.glb"])
def test_fox(shared_assets: Path, relative: str) -> None:
    fox = load_character(shared_assets / relative)
    assert fox.skeleton.num_joints == 24
    assert fox.skeleton.names[:3] == ("_rootJoint", "b_Root_00", "b_Hip_01")
    assert list(fox.clips) == ["Survey", "Walk", "Run"]
    for name, keys, duration in (("Survey", 83, 3.4167), ("Walk", 18, 0.7083), ("Run", 25, 1.1583)):
        clip = fox.clips[name]
        assert len(clip.channels) == 21
        assert {c.times.size for c in clip.channels} == {keys}
        assert clip.duration == pytest.approx(duration, abs=1e-4)
        assert {fox.skeleton.names[c.target] for c in clip.channels} == {
            fox.skeleton.names[c.target] for c in fox.clips["Survey"].channels
        }
    (mesh,) = fox.meshes
    assert (mesh.num_vertices, mesh.normals, mesh.influence_sets) == (1728, None, 1)
    assert mesh.texture is not None
    assert mesh.texture.shape[2] == 4
    extent = mesh.positions.max(axis=0) - mesh.positions.min(axis=0)
    assert extent.max() == pytest.approx(155, abs=3)
    assert fox.skin.root_parent == 0
    assert fox.asset.warnings == ()


@pytest.mark.assets
def test_fox_gltf_and_glb_hold_the_same_data(shared_assets: Path) -> None:
    a = load_gltf(shared_assets / "fox/glTF/Fox.gltf")
    b = load_gltf(shared_assets / "fox/glTF-Binary/Fox.glb")
    np.testing.assert_array_equal(a.mesh_nodes[0].primitives[0].texture, b.mesh_nodes[0].primitives[0].texture)
    for clip_a, clip_b in zip(a.clips, b.clips, strict=True):
        for ca, cb in zip(clip_a.channels, clip_b.channels, strict=True):
            np.testing.assert_array_equal(ca.values, cb.values)


@pytest.mark.assets
def test_cesium_man_joints_sit_under_a_transformed_node(shared_assets: Path) -> None:
    with pytest.warns(OssaWarning, match="210 of 3273 vertices have weights not summing to 1"):
        man = load_character(shared_assets / "khronos" / "cesium_man.gltf")
    assert man.skeleton.num_joints == 19
    assert man.skin.root_parent == 21
    # node 0 turns Z-up into Y-up: world y of the root joint is its local z
    np.testing.assert_allclose(man.root_transform[:3, :3], [[1, 0, 0], [0, 0, 1], [0, -1, 0]], atol=1e-12)
    assert man.meshes[0].texture.shape == (1024, 1024, 4)
    assert len(man.clips["animation0"].channels) == 57


@pytest.mark.assets
def test_rigged_simple_and_box_animated(shared_assets: Path) -> None:
    rigged = load_gltf(shared_assets / "khronos" / "rigged_simple.gltf")
    assert rigged.skins[0].skeleton.names == ("Bone", "Bone.001")
    assert rigged.skins[0].root_parent == 1
    assert rigged.warnings == ()
    box = load_gltf(shared_assets / "khronos" / "box_animated.gltf")
    assert box.skins == ()
    assert [(m.gltf_node, m.skin) for m in box.mesh_nodes] == [(3, None), (2, None)]
    assert [(c.target, c.path) for c in box.clips[0].channels] == [
        (box.hierarchy_index(2), "rotation"),
        (box.hierarchy_index(0), "translation"),
    ]
    with pytest.raises(AssetError, match="skin 0 requested but the file has 0 skin"):
        load_character(shared_assets / "khronos" / "box_animated.gltf")


@pytest.mark.assets
def test_interpolation_test_clips(shared_assets: Path) -> None:
    with pytest.warns(OssaWarning, match=r"images\[0\].uri: cannot read 'l.jpg'"):
        asset = load_gltf(shared_assets / "khronos" / "interpolation_test.gltf")
    modes = {clip.name: clip.channels[0].interpolation for clip in asset.clips}
    assert len(modes) == 9
    assert sorted(set(modes.values())) == ["CUBICSPLINE", "LINEAR", "STEP"]
    assert modes["Linear Scale"] == "CUBICSPLINE"  # the file's own naming slip: kept as stored
    assert asset.clips[asset.clip_index("CubicSpline Rotation")].channels[0].values.shape == (5, 3, 4)


def test_two_skins_share_joints_and_a_mesh(tmp_path: Path) -> None:
    """Skin 1 holds spine → head only; the same mesh drawn by a second node with skin 1."""
    b = skinned_document()
    b.doc["skins"].append({"joints": [4, 2]})  # no inverse binds: identity
    b.add("nodes", {"name": "mesh2", "mesh": 0, "skin": 1})
    b.doc["nodes"][0]["children"].append(5)
    prim = b.doc["meshes"][0]["primitives"][0]
    for name in ("JOINTS_0", "JOINTS_1"):  # skin 1 has 2 joints: keep indices 0 and 1 only
        prim["attributes"][name] = b.accessor(
            [[0, 1, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0]], 5121 if name == "JOINTS_0" else 5123, "VEC4"
        )
    b.doc["animations"][1]["name"] = "wave"  # duplicate clip names are made unique
    asset = load_gltf(b.write(tmp_path / "two.gltf"))
    first, second = asset.skins
    assert second.skeleton.names == ("spine", "head")
    assert second.root_parent == 1
    assert second.from_gltf_order.tolist() == [1, 0]
    np.testing.assert_array_equal(second.skeleton.inverse_bind_matrices, np.tile(np.eye(4), (2, 1, 1)))
    np.testing.assert_allclose(second.root_transform[:3, 3], [0, 1.5, 0])
    assert [c.name for c in asset.clips] == ["wave", "wave#1"]
    assert [(c.target, c.path) for c in second.clips[0].channels] == [(0, "rotation")]
    nodes = {m.gltf_node: m for m in asset.mesh_nodes}
    assert nodes[3].primitives[0].joints[2, :2].tolist() == [first.from_gltf_order[1]] * 2
    assert nodes[5].primitives[0].joints[2, :2].tolist() == [0, 0]  # glTF joint 1 of skin 1 is the spine
    assert nodes[5].primitives[0] is not nodes[3].primitives[0]


def test_quantized_attributes_and_rotations(tmp_path: Path) -> None:
    """KHR_mesh_quantization-style integer positions, normalized normals/uvs, and SHORT-normalized rotation keys."""
    b = DocBuilder()
    b.doc["extensionsUsed"] = b.doc["extensionsRequired"] = ["KHR_mesh_quantization"]
    attributes = {
        "POSITION": b.accessor([[-300, 0, 7], [1, 2, 3], [0, 0, 0]], 5122, "VEC3"),
        "NORMAL": b.accessor([[0, 0, 127], [0, -128, 0], [127, 0, 0]], 5120, "VEC3", normalized=True),
        "TEXCOORD_0": b.accessor([[0, 65535], [32768, 0], [0, 0]], 5123, "VEC2", normalized=True),
    }
    b.add("meshes", {"primitives": [{"attributes": attributes}]})
    b.add("nodes", {"mesh": 0})
    times = b.accessor([0.0, 1.0], 5126, "SCALAR")
    keys = b.accessor([[0, 0, 0, 32767], [0, 0, 23170, 23170]], 5122, "VEC4", normalized=True)
    b.add(
        "animations",
        {
            "samplers": [{"input": times, "output": keys}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "rotation"}}],
        },
    )
    asset = load_gltf(b.write(tmp_path / "q.gltf"))
    data = asset.mesh_nodes[0].primitives[0]
    np.testing.assert_array_equal(data.positions, [[-300, 0, 7], [1, 2, 3], [0, 0, 0]])
    np.testing.assert_array_equal(data.normals, [[0, 0, 1], [0, -1, 0], [1, 0, 0]])
    np.testing.assert_allclose(data.uvs, [[0, 1], [32768 / 65535, 0], [0, 0]])
    assert_quat_allclose(asset.clips[0].channels[0].values, [[0, 0, 0, 1], [0, 0, np.sqrt(0.5), np.sqrt(0.5)]])
