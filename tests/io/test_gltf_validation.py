"""Every validation failure of the glTF loader: a broken document in, an AssetError naming the
file, the JSON path and the problem out (or an OssaWarning for legal-but-suspicious data)."""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.errors import AssetError, OssaWarning
from engine.io import GltfAsset, load_gltf
from tests.io.gltf_builder import DocBuilder, glb_bytes, quat_z, scene_document, skinned_document

Mutation = Callable[[DocBuilder], None]


def prim(b: DocBuilder) -> dict:
    return b.doc["meshes"][0]["primitives"][0]


def sampler(b: DocBuilder, s: int = 0) -> dict:
    return b.doc["animations"][0]["samplers"][s]


def channel(b: DocBuilder, c: int = 0) -> dict:
    return b.doc["animations"][0]["channels"][c]


def times(b: DocBuilder, values: list[float]) -> None:
    sampler(b)["input"] = b.accessor(values, 5126, "SCALAR")


def rotations(b: DocBuilder, values: object, component_type: int = 5126) -> None:
    sampler(b)["output"] = b.accessor(values, component_type, "VEC4")


def attribute(b: DocBuilder, name: str, values: object, component_type: int, accessor_type: str) -> None:
    prim(b)["attributes"][name] = b.accessor(values, component_type, accessor_type)


def ibm(b: DocBuilder, count: int) -> None:
    b.doc["skins"][0]["inverseBindMatrices"] = b.accessor([np.eye(4)] * count, 5126, "MAT4")


SHEAR = [1, 0, 0, 0, 0.5, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]  # column-major: x leaks into the y column

CASES: dict[str, tuple[Mutation, str, str]] = {
    # asset and extensions
    "version": (lambda b: b.doc["asset"].update(version="1.0"), "asset.version", "expected a glTF 2.x asset"),
    "required extension": (
        lambda b: b.doc.update(extensionsRequired=["EXT_mesh_gpu_instancing"]),
        "extensionsRequired",
        r"requires extensions Ossa does not support: \['EXT_mesh_gpu_instancing'\]",
    ),
    # node hierarchy
    "child out of range": (
        lambda b: b.doc["nodes"][1].update(children=[9]),
        "nodes[1].children[0]",
        "index 9 is out of range: the file has 5 nodes",
    ),
    "self child": (lambda b: b.doc["nodes"][0].update(children=[0]), "nodes[0].children[0]", "lists itself"),
    "two parents": (
        lambda b: b.doc["nodes"][3].update(children=[4]),
        "nodes[3].children[0]",
        r"node 4 has two parents \(nodes 2 and 3\)",
    ),
    "cycle": (
        lambda b: (b.doc["nodes"][0].update(children=[3]), b.doc["nodes"][4].update(children=[1])),
        "nodes",
        r"cycle: nodes\[\d\] → nodes\[\d\] → nodes\[\d\] → nodes\[\d\]",
    ),
    "scene node not a root": (
        lambda b: b.doc["scenes"][0].update(nodes=[0, 2]),
        "scenes[0].nodes[1]",
        "node 2 is not a root: it is a child of node 1",
    ),
    "scene node twice": (lambda b: b.doc["scenes"][0].update(nodes=[0, 0]), "scenes[0].nodes[1]", "listed twice"),
    "scene out of range": (lambda b: b.doc.update(scene=3), "scene", "index 3 is out of range: the file has 1 scenes"),
    "shear matrix": (lambda b: b.doc["nodes"][3].update(matrix=SHEAR), "nodes[3].matrix", "not decomposable"),
    "projective matrix": (
        lambda b: b.doc["nodes"][3].update(matrix=[1, 0, 0, 0.5, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
        "nodes[3].matrix",
        r"must be affine \(last row 0 0 0 1\)",
    ),
    "matrix and TRS": (
        lambda b: b.doc["nodes"][1].update(matrix=[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
        "nodes[1]",
        "a matrix or translation/rotation/scale, not both",
    ),
    "short translation": (
        lambda b: b.doc["nodes"][1].update(translation=[0, 1]),
        "nodes[1].translation",
        "expected 3 finite numbers",
    ),
    "zero rotation": (
        lambda b: b.doc["nodes"][2].update(rotation=[0, 0, 0, 0]),
        "nodes[2].rotation",
        "quaternion 0 is zero",
    ),
    # animations
    "sampler out of range": (
        lambda b: channel(b).update(sampler=5),
        "animations[0].channels[0].sampler",
        r"index 5 is out of range: the file has 2 samplers in animations\[0\]",
    ),
    "target node out of range": (
        lambda b: channel(b)["target"].update(node=9),
        "animations[0].channels[0].target.node",
        "index 9 is out of range",
    ),
    "bad path": (
        lambda b: channel(b)["target"].update(path="color"),
        "animations[0].channels[0].target.path",
        "target.path must be translation, rotation, scale, weights or pointer, got 'color'",
    ),
    "duplicate target": (
        lambda b: channel(b, 1).update(target={"node": 2, "path": "rotation"}),
        "animations[0].channels[1].target",
        "channels 0 and 1 both animate rotation of node 2",
    ),
    "bad interpolation": (
        lambda b: sampler(b).update(interpolation="SMOOTH"),
        "animations[0].samplers[0].interpolation",
        "interpolation must be one of",
    ),
    "integer key times": (
        lambda b: sampler(b).update(input=prim(b)["attributes"]["JOINTS_0"]),
        "animations[0].samplers[0].input",
        "key times must be a FLOAT SCALAR accessor, got componentType 5121 type VEC4",
    ),
    "decreasing key times": (
        lambda b: times(b, [0.0, 2.0, 1.0]),
        "animations[0].samplers[0].input",
        r"key times must be non-decreasing, got times\[1\] = 2 > times\[2\] = 1",
    ),
    "NaN key time": (
        lambda b: times(b, [0.0, float("nan"), 1.0]),
        "animations[0].samplers[0].input",
        "key time 1 is nan",
    ),
    "output type": (
        lambda b: sampler(b).update(output=sampler(b, 1)["output"]),
        "animations[0].samplers[0].output",
        "rotation values must be VEC4, got VEC3",
    ),
    "LINEAR output count": (
        lambda b: rotations(b, [quat_z(0), quat_z(1)]),
        "animations[0].samplers[0].output",
        r"LINEAR needs 1 value\(s\) per key: 3 for 3 key times, got 2",
    ),
    "CUBICSPLINE output count": (
        lambda b: sampler(b).update(interpolation="CUBICSPLINE"),
        "animations[0].samplers[0].output",
        r"CUBICSPLINE needs 3 value\(s\) per key: 9 for 3 key times, got 3",
    ),
    "zero quaternion key": (
        lambda b: rotations(b, [quat_z(0), [0, 0, 0, 0], quat_z(1)]),
        "animations[0].samplers[0].output",
        "quaternion 1 is zero",
    ),
    "unnormalized integer rotations": (
        lambda b: rotations(b, [[0, 0, 0, 127]] * 3, component_type=5120),
        "animations[0].samplers[0].output",
        "must be FLOAT or normalized integers, got componentType 5120",
    ),
    # skins
    "joint out of range": (
        lambda b: b.doc["skins"][0].update(joints=[4, 1, 9]),
        "skins[0].joints[2]",
        "index 9 is out of range",
    ),
    "duplicate joints": (
        lambda b: b.doc["skins"][0].update(joints=[4, 1, 1]),
        "skins[0].joints",
        r"joints must be distinct nodes, got nodes \[1\] more than once",
    ),
    "joints without a common root": (
        lambda b: (
            b.add("nodes", {"name": "loose"}),
            b.doc["scenes"][0].update(nodes=[0, 5]),
            b.doc["skins"][0].update(joints=[4, 1, 5]),
            b.doc["skins"][0].pop("skeleton"),
        ),
        "skins[0].joints",
        r"joints must have a common root, but they lie in separate trees \(root nodes \[0, 5\]\)",
    ),
    "missing asset": (lambda b: b.doc.pop("asset"), "asset", "the required property 'asset' is missing"),
    "missing asset version": (
        lambda b: b.doc["asset"].pop("version"),
        "asset.version",
        "the required property 'version' is missing",
    ),
    "too few inverse binds": (
        lambda b: ibm(b, 2),
        "skins[0].inverseBindMatrices",
        "has 2 matrices for 3 joints",
    ),
    "inverse binds not MAT4": (
        lambda b: b.doc["skins"][0].update(inverseBindMatrices=prim(b)["attributes"]["POSITION"]),
        "skins[0].inverseBindMatrices",
        "must be a FLOAT MAT4 accessor, got componentType 5126 type VEC3",
    ),
    # meshes
    "mesh out of range": (lambda b: b.doc["nodes"][3].update(mesh=4), "nodes[3].mesh", "index 4 is out of range"),
    "skin out of range": (lambda b: b.doc["nodes"][3].update(skin=1), "nodes[3].skin", "index 1 is out of range"),
    "attribute count": (
        lambda b: attribute(b, "NORMAL", [[0, 0, 1]] * 3, 5126, "VEC3"),
        "meshes[0].primitives[0].attributes.NORMAL",
        "NORMAL has 3 elements but POSITION has 4",
    ),
    "bad mode": (lambda b: prim(b).update(mode=9), "meshes[0].primitives[0].mode", "mode must be one of"),
    "index out of range": (
        lambda b: prim(b).update(mode=4, indices=b.accessor([0, 1, 9], 5123, "SCALAR")),
        "meshes[0].primitives[0].indices",
        "index 2 is 9 but the primitive has 4 vertices",
    ),
    "float indices": (
        lambda b: prim(b).update(indices=b.accessor([0.0, 1.0, 2.0], 5126, "SCALAR")),
        "meshes[0].primitives[0].indices",
        "indices must be UNSIGNED_BYTE/SHORT/INT SCALAR, got componentType 5126",
    ),
    "unpaired influence set": (
        lambda b: prim(b)["attributes"].pop("WEIGHTS_1"),
        "meshes[0].primitives[0].attributes",
        r"must come in pairs numbered 0, 1, …; got JOINTS \[0, 1\] and WEIGHTS \[0\]",
    ),
    "joint index beyond the skin": (
        lambda b: attribute(b, "JOINTS_0", [[0, 0, 0, 3]] * 4, 5121, "VEC4"),
        "meshes[0].primitives[0].attributes.JOINTS_0",
        "vertex 0 uses joint 3 but skin 0 has 3 joints",
    ),
    "float joints": (
        lambda b: attribute(b, "JOINTS_0", [[0, 0, 0, 0]] * 4, 5126, "VEC4"),
        "meshes[0].primitives[0].attributes.JOINTS_0",
        "must be VEC4 of UNSIGNED_BYTE or UNSIGNED_SHORT",
    ),
    "negative weight": (
        lambda b: attribute(b, "WEIGHTS_0", [[1.5, -0.5, 0, 0]] * 4, 5126, "VEC4"),
        "meshes[0].primitives[0].attributes.WEIGHTS_0",
        r"weights must be finite and ≥ 0, vertex 0 has \[1.5, -0.5, 0.0, 0.0\]",
    ),
    "skinned without influences": (
        lambda b: [prim(b)["attributes"].pop(k) for k in ("JOINTS_0", "WEIGHTS_0", "JOINTS_1", "WEIGHTS_1")],
        "meshes[0].primitives[0].attributes",
        "the node has a skin, so the primitive needs JOINTS_0 and WEIGHTS_0",
    ),
    "material out of range": (
        lambda b: prim(b).update(material=2),
        "meshes[0].primitives[0].material",
        "index 2 is out of range: the file has 0 materials",
    ),
    # buffers and URIs
    "buffer claims too much": (
        lambda b: b.doc.update(buffers=[{"byteLength": 10**12, "uri": "data:application/octet-stream;base64,AAAA"}]),
        "buffers[0]",
        r"byteLength claims 1000000000000 bytes but the data has 3",
    ),
    "text data URI": (
        lambda b: b.doc.update(buffers=[{"byteLength": 3, "uri": "data:text/plain,abc"}]),
        "buffers[0].uri",
        "data: URIs must be base64-encoded",
    ),
    "escaping URI": (
        lambda b: b.doc.update(buffers=[{"byteLength": 3, "uri": "sub/../../outside.bin"}]),
        "buffers[0].uri",
        "must be a relative path inside the model's folder",
    ),
    "absolute URI": (
        lambda b: b.doc.update(buffers=[{"byteLength": 3, "uri": "/etc/passwd"}]),
        "buffers[0].uri",
        "must be a relative path inside the model's folder",
    ),
    "URL": (
        lambda b: b.doc.update(buffers=[{"byteLength": 3, "uri": "https://example.com/a.bin"}]),
        "buffers[0].uri",
        "must be a relative path inside the model's folder",
    ),
    "missing file": (
        lambda b: b.doc.update(buffers=[{"byteLength": 3, "uri": "missing%20file.bin"}]),
        "buffers[0].uri",
        "cannot read 'missing%20file.bin'",
    ),
    "buffer without uri in .gltf": (
        lambda b: b.doc.update(buffers=[{"byteLength": 3}]),
        "buffers[0]",
        "a buffer without uri must be buffer 0 of a GLB file with a BIN chunk",
    ),
}


def write_json(b: DocBuilder, path: Path) -> Path:
    """Write ``b`` keeping any ``buffers`` a mutation put in its JSON."""
    doc = b.document(None) if "buffers" in b.doc else None
    if doc is None:
        return b.write(path)
    doc["buffers"] = b.doc["buffers"]
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_broken_documents_raise_asset_errors(case: str, tmp_path: Path) -> None:
    mutate, where, message = CASES[case]
    b = skinned_document()
    mutate(b)
    path = write_json(b, tmp_path / "broken.gltf")
    with pytest.raises(AssetError) as info:
        load_gltf(path)
    assert info.value.where == where
    assert re.search(message, info.value.problem), info.value.problem
    assert info.value.file == str(path)
    assert str(info.value) == f"{path}: {where}: {info.value.problem}"


def test_the_unbroken_document_loads(tmp_path: Path) -> None:
    asset = load_gltf(skinned_document().write(tmp_path / "ok.gltf"))
    assert asset.warnings == ()


# ---------------------------------------------------------------------------------------------
# warnings: legal but suspicious


def load_warning(b: DocBuilder, tmp_path: Path, message: str) -> GltfAsset:
    path = b.write(tmp_path / "warn.gltf")
    with pytest.warns(OssaWarning, match=message):
        asset = load_gltf(path)
    assert any(re.search(message, w) for w in asset.warnings)
    return asset


def test_weights_channel_on_a_node_without_morph_targets_raises(tmp_path: Path) -> None:
    b = skinned_document()
    channel(b, 1)["target"]["path"] = "weights"
    with pytest.raises(AssetError, match=r"channels\[1\].target: animates the morph weights of node 1, whose mesh"):
        load_gltf(b.write(tmp_path / "w.gltf"))


def test_non_unit_rotation_keys_are_normalised_with_a_warning(tmp_path: Path) -> None:
    b = skinned_document()
    rotations(b, [np.array(quat_z(0.0)) * 2, quat_z(1.0), quat_z(2.0)])
    asset = load_warning(b, tmp_path, r"samplers\[0\].output: quaternion 0 has norm 2, not 1; normalised")
    np.testing.assert_allclose(asset.clips[0].channels[0].values[0], [0, 0, 0, 1])


def test_weight_sums_off_are_normalised_with_a_warning(tmp_path: Path) -> None:
    b = skinned_document()
    attribute(b, "WEIGHTS_1", [[0.0] * 4] * 4, 5126, "VEC4")
    asset = load_warning(b, tmp_path, "2 of 4 vertices have weights not summing to 1 .*vertex 1, sum 0.5")
    weights = asset.mesh_nodes[0].primitives[0].weights
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    np.testing.assert_allclose(weights[1, :2], [0.5, 0.5])


def test_all_zero_weights_raise(tmp_path: Path) -> None:
    b = skinned_document()
    attribute(b, "WEIGHTS_0", [[0.0] * 4] * 4, 5126, "VEC4")
    attribute(b, "WEIGHTS_1", [[0.0] * 4] * 4, 5126, "VEC4")
    with pytest.raises(AssetError, match=r"WEIGHTS_0: 4 of 4 vertices have all weights 0"):
        load_gltf(b.write(tmp_path / "zero.gltf"))


def test_quantized_weights_within_one_step_do_not_warn(tmp_path: Path) -> None:
    b = skinned_document()
    prim(b)["attributes"]["WEIGHTS_0"] = b.accessor(
        [[128, 128, 0, 0], [64, 64, 0, 0], [255, 0, 0, 0], [127, 0, 0, 0]], 5121, "VEC4", normalized=True
    )
    attribute(b, "WEIGHTS_1", [[0, 0, 0, 0], [0.25, 0.25, 0, 0], [0, 0, 0, 0], [0.25, 0.25, 0, 0]], 5126, "VEC4")
    asset = load_gltf(b.write(tmp_path / "q.gltf"))
    assert asset.warnings == ()
    np.testing.assert_allclose(asset.mesh_nodes[0].primitives[0].weights.sum(axis=1), 1.0)


def test_extra_inverse_binds_warn(tmp_path: Path) -> None:
    b = skinned_document()
    ibm(b, 4)
    load_warning(b, tmp_path, "has 4 matrices for 3 joints; the extra ones are ignored")


def test_primitive_without_position_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """glTF 2.0: a client skips a primitive without POSITION (the validator: a warning)."""
    b = skinned_document()
    b.doc["meshes"][0]["primitives"].insert(0, {"attributes": {"NORMAL": prim(b)["attributes"]["NORMAL"]}})
    asset = load_warning(b, tmp_path, r"primitives\[0\].attributes: the primitive has no POSITION attribute")
    assert asset.mesh_nodes[0].primitive_indices == (1,)
    assert len(asset.scene.instances[0].primitives) == 1


@pytest.mark.parametrize(
    ("mode", "indices", "message", "kept"),
    [
        (4, [0, 1, 2, 3], r"4 indices do not make whole triangles \(3 each\); the last 1 are not drawn", [0, 1, 2]),
        (1, [0, 1, 2], r"3 indices do not make whole lines \(2 each\); the last 1 are not drawn", [0, 1]),
        (5, [0, 1], r"a TRIANGLE_STRIP of 2 indices draws nothing \(it needs 3\)", []),
        (6, [3], r"a TRIANGLE_FAN of 1 indices draws nothing \(it needs 3\)", []),
        (3, [2], r"a LINE_STRIP of 1 indices draws nothing \(it needs 2\)", []),
    ],
)
def test_incomplete_elements_are_dropped_with_a_warning(
    tmp_path: Path, mode: int, indices: list[int], message: str, kept: list[int]
) -> None:
    """The validator's MESH_PRIMITIVE_INCOMPATIBLE_MODE is a warning: draw the whole elements, as GL does."""
    b = skinned_document()
    prim(b).update(mode=mode, indices=b.accessor(indices, 5123, "SCALAR"))
    asset = load_warning(b, tmp_path, r"primitives\[0\].indices: " + message)
    assert asset.mesh_nodes[0].primitives[0].indices.tolist() == kept


def test_non_indexed_triangles_drop_the_incomplete_last_one(tmp_path: Path) -> None:
    b = skinned_document()
    prim(b)["mode"] = 4  # 4 vertices, no indices
    asset = load_warning(b, tmp_path, r"primitives\[0\]: 4 vertices do not make whole triangles")
    assert asset.mesh_nodes[0].primitives[0].indices.tolist() == [0, 1, 2]


def test_morph_targets_of_attributes_ossa_does_not_draw_warn(tmp_path: Path) -> None:
    b = skinned_document()
    prim(b)["attributes"]["TEXCOORD_0"] = b.accessor([[0.0, 0.0]] * 4, 5126, "VEC2")
    prim(b)["targets"] = [{"TEXCOORD_0": b.accessor([[0.5, 0.0]] * 4, 5126, "VEC2")}]
    asset = load_warning(b, tmp_path, r"targets\[0\].TEXCOORD_0: morph targets of TEXCOORD_0 are not applied")
    (primitive,) = asset.mesh_nodes[0].primitives
    assert primitive.num_targets == 1
    np.testing.assert_array_equal(primitive.morph_positions, 0.0)


def test_channel_outside_the_default_scene_warns(tmp_path: Path) -> None:
    b = skinned_document()
    b.add("nodes", {"name": "elsewhere"})
    b.doc["scenes"].append({"nodes": [5]})
    channel(b, 1)["target"]["node"] = 5
    asset = load_warning(b, tmp_path, "node 5 is not in the default scene; its translation channel is skipped")
    assert len(asset.clips[0].channels) == 1


def test_weights_of_a_node_left_in_as_a_joint_only_warn(tmp_path: Path) -> None:
    """``hip`` taken out of the scene: ``hat`` stays in the hierarchy as a joint of a skin, drawing no mesh.

    Its weights channel is skipped with a warning (found by fuzzing: the scene refused the clip
    with an untyped, unlocated error); ``body``'s is kept.
    """
    b = scene_document()
    b.doc["nodes"][0]["children"] = [1, 7]
    asset = load_warning(b, tmp_path, r"node 5 draws no mesh in the default scene; its weights channel is skipped")
    names = asset.hierarchy.names
    assert [names[c.target] for c in asset.scene.clips["move"].weights] == ["body"]
    assert [names[c.target] for c in asset.scene.clips["blink"].weights] == ["spinner"]


# ---------------------------------------------------------------------------------------------
# files and containers


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AssetError, match=r"nope.gltf: cannot read the file"):
        load_gltf(tmp_path / "nope.gltf")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "JSON line 1 column 2: not valid JSON: Expecting property name"),
        (b"[1, 2]", "document: expected an object, got array of 2 items"),
        (b"\xff\xfe\x00garbage", r"expected a glTF JSON document \(UTF-8\) or a GLB file"),
        (b'{"asset": {"version": "3.0"}}', "expected a glTF 2.x asset, got asset.version = '3.0'"),
    ],
)
def test_not_a_gltf_document(content: bytes, message: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.gltf"
    path.write_bytes(content)
    with pytest.raises(AssetError, match=message):
        load_gltf(path)


def test_external_buffer_shorter_than_claimed_fails_before_reading(tmp_path: Path) -> None:
    b = skinned_document()
    path = b.write(tmp_path / "ext.gltf", "external")
    (tmp_path / "ext.bin").write_bytes(bytes(b.blob[:100]))
    with pytest.raises(
        AssetError, match=rf"buffers\[0\].uri: 'ext.bin' has 100 bytes but byteLength claims {len(b.blob)}"
    ):
        load_gltf(path)


def glb_case(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "broken.glb"
    path.write_bytes(data)
    return path


def test_glb_containers(tmp_path: Path) -> None:
    b = skinned_document()
    good = glb_bytes(b.document(None), bytes(b.blob))
    assert load_gltf(glb_case(tmp_path, good)).skins[0].skeleton.num_joints == 3
    cases = {
        "GLB file is truncated": good[:16],
        "GLB version must be 2, got 1": good[:4] + struct.pack("<I", 1) + good[8:],
        rf"GLB header claims {len(good) + 4} bytes but the file has {len(good)}": good[:8]
        + struct.pack("<I", len(good) + 4)
        + good[12:],
        "GLB chunk at byte 12 claims": good[:12] + struct.pack("<I", len(good)) + good[16:],
        "the first GLB chunk must be JSON": good[:16] + b"BIN\0" + good[20:],
        "a buffer without uri must be buffer 0 of a GLB file with a BIN chunk": glb_bytes(
            {**b.document(None), "buffers": [{"byteLength": 4}]}, b""
        ),
        r"byteLength claims \d+ bytes but the GLB BIN chunk has 8": glb_bytes(b.document(None), bytes(8)),
    }
    for message, data in cases.items():
        with pytest.raises(AssetError, match=message):
            load_gltf(glb_case(tmp_path, data))


def test_markers_in_animation_extras_become_clip_markers(tmp_path: Path) -> None:
    b = skinned_document()
    b.doc["animations"][0]["extras"] = {"markers": {"step": [0.25, 0.75], "land": 1.0}}
    asset = load_gltf(b.write(tmp_path / "markers.gltf"))
    assert asset.clips[0].markers == {"step": (0.25, 0.75), "land": (1.0,)}


def test_malformed_markers_are_skipped_with_a_warning(tmp_path: Path) -> None:
    b = skinned_document()
    b.doc["animations"][0]["extras"] = {"markers": {"step": ["soon"], "ok": [0.5]}}
    asset = load_warning(b, tmp_path, r"marker 'step' must be a list of finite times")
    assert asset.clips[0].markers == {"ok": (0.5,)}
