"""EXT_meshopt_compression: every mode and filter against the uncompressed data, the real VALID human, bad input.

The compressed files are written with the reference encoder (meshoptimizer's C library); the
references are the uncompressed documents the tests build and the original float data, so a
decoded byte in the wrong place, a filter not applied or a stride mix-up shows.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine.anim.scene import instance_vertices, scene_vertices
from engine.errors import AssetError
from engine.io import load_gltf
from engine.io.commands import evaluate
from engine.io.gltf import GltfDocument
from engine.io.gltf_writer import save_gltf_with_clips
from engine.io.meshopt import MAX_DECODED_BYTES
from tests.io.gltf_builder import DocBuilder, glb_bytes, scene_document
from tests.io.gltf_compress import MESHOPT, compress_views, encode_filter

# ---------------------------------------------------------------------------------------------
# every view of a rich scene compressed: lossless, so equal to the uncompressed document


def index_views(b: DocBuilder) -> dict[int, int]:
    """View → primitive mode, for the views that primitives use as indices."""
    views = {}
    for mesh in b.doc["meshes"]:
        for primitive in mesh["primitives"]:
            if "indices" in primitive:
                views[b.doc["accessors"][primitive["indices"]]["bufferView"]] = primitive.get("mode", 4)
    return views


def compressed_scene(tmp_path: Path) -> tuple[Path, Path, dict[int, tuple[str, str]]]:
    """The scene document plain and with every view it can compress compressed (TRIANGLES, INDICES, ATTRIBUTES)."""
    b = scene_document()
    plain = b.write(tmp_path / "plain.gltf")
    indices = index_views(b)
    modes: dict[int, tuple[str, str]] = {}
    for v, view in enumerate(b.doc["bufferViews"]):
        accessor = next(a for a in b.doc["accessors"] if a.get("bufferView") == v)
        size = {5121: 1, 5123: 2, 5125: 4}.get(accessor["componentType"])
        if v in indices:
            if size in (2, 4):  # the index codecs take 2- and 4-byte indices
                modes[v] = ("TRIANGLES" if indices[v] == 4 and accessor["count"] % 3 == 0 else "INDICES", "NONE")
        elif view["byteLength"] % accessor["count"] == 0 and (view["byteLength"] // accessor["count"]) % 4 == 0:
            modes[v] = ("ATTRIBUTES", "NONE")
    compress_views(b, modes)
    return plain, b.write(tmp_path / "compressed.glb", "glb"), modes


def canonical_triangles(indices: np.ndarray) -> np.ndarray:
    """Each triangle rotated to start at its smallest index: the TRIANGLES codec keeps the winding, not the start."""
    triangles = indices.reshape(-1, 3)
    first = np.argmin(triangles, axis=1)
    return np.stack([np.roll(t, -k) for t, k in zip(triangles, first, strict=True)])


def test_every_mode_decodes_to_the_uncompressed_data(tmp_path: Path) -> None:
    plain, compressed, modes = compressed_scene(tmp_path)
    assert {mode for mode, _ in modes.values()} == {"ATTRIBUTES", "TRIANGLES", "INDICES"}
    assert len(modes) >= len(json.loads(plain.read_text())["bufferViews"]) - 1  # all but the UBYTE indices
    ours, reference = GltfDocument(compressed), GltfDocument(plain)
    triangles = {v for v, (mode, _) in modes.items() if mode == "TRIANGLES"}
    for a, accessor in enumerate(reference.json["accessors"]):
        decoded, expected = ours.accessor(a, "test"), reference.accessor(a, "test")
        if accessor["bufferView"] in triangles:
            decoded, expected = canonical_triangles(decoded), canonical_triangles(expected)
        np.testing.assert_array_equal(decoded, expected)


def test_a_compressed_scene_evaluates_as_the_plain_one(tmp_path: Path) -> None:
    plain, compressed, _ = compressed_scene(tmp_path)
    times = np.array([0.0, 0.7, 1.9])
    for clip in range(2):
        a, b = load_gltf(compressed), load_gltf(plain)
        assert evaluate(a, a.clips[clip], times) == evaluate(b, b.clips[clip], times)
    assert [e.name for e in load_gltf(compressed).extensions] == [MESHOPT]


def test_fallback_data_kept_is_not_what_is_read(tmp_path: Path) -> None:
    """With the uncompressed bytes still in the file, the decoder's output is what is used (zeroed plain data shows)."""
    b = scene_document()
    reference = GltfDocument(b.write(tmp_path / "plain.gltf"))
    position_view = b.doc["accessors"][b.doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]]["bufferView"]
    compress_views(b, {position_view: ("ATTRIBUTES", "NONE")}, keep_fallback_data=True)
    view = b.doc["bufferViews"][position_view]
    b.blob[view["byteOffset"] : view["byteOffset"] + view["byteLength"]] = bytes(view["byteLength"])
    ours = GltfDocument(b.write(tmp_path / "kept.gltf"))
    accessor = b.doc["meshes"][0]["primitives"][0]["attributes"]["POSITION"]
    np.testing.assert_array_equal(ours.accessor(accessor, "t"), reference.accessor(accessor, "t"))


# ---------------------------------------------------------------------------------------------
# filters: the original floats back, to the filter's quantization step


def filtered_document(
    normals: np.ndarray, rotations: np.ndarray, offsets: np.ndarray, bits: dict[str, int]
) -> DocBuilder:
    """A rigid mesh whose NORMAL is OCTAHEDRAL (8-byte), a clip whose rotation keys are QUATERNION and
    translation keys EXPONENTIAL, each view compressed with its filter (and the 4-byte OCTAHEDRAL on a second mesh)."""
    b = DocBuilder()
    count = len(normals)
    positions = np.arange(3 * count, dtype=float).reshape(count, 3) / (3 * count)
    b.add("nodes", {"name": "mover", "mesh": 0})
    b.add("nodes", {"name": "small", "mesh": 1})
    b.doc["scenes"] = [{"nodes": [0, 1]}]
    padded = np.concatenate([normals, np.zeros((count, 1))], axis=1)

    def octahedral(stride: int, component_type: int) -> int:
        view = b.view(encode_filter("OCTAHEDRAL", padded, stride, bits[f"OCTAHEDRAL{stride}"]), stride)
        return b.add(
            "accessors",
            {"bufferView": view, "componentType": component_type, "normalized": True, "count": count, "type": "VEC3"},
        )

    position = b.accessor(positions, 5126, "VEC3", min=positions.min(0).tolist(), max=positions.max(0).tolist())
    b.add("meshes", {"primitives": [{"attributes": {"POSITION": position, "NORMAL": octahedral(8, 5122)}, "mode": 0}]})
    b.add("meshes", {"primitives": [{"attributes": {"POSITION": position, "NORMAL": octahedral(4, 5120)}, "mode": 0}]})
    keys = len(rotations)
    times = b.accessor(np.linspace(0.0, 1.0, keys), 5126, "SCALAR", min=[0.0], max=[1.0])
    quat_view = b.view(encode_filter("QUATERNION", rotations, 8, bits["QUATERNION"]), 8)
    quat = b.add(
        "accessors", {"bufferView": quat_view, "componentType": 5122, "normalized": True, "count": keys, "type": "VEC4"}
    )
    exp_view = b.view(encode_filter("EXPONENTIAL", offsets, 12, bits["EXPONENTIAL"]), 12)
    exp = b.add("accessors", {"bufferView": exp_view, "componentType": 5126, "count": keys, "type": "VEC3"})
    b.add(
        "animations",
        {
            "samplers": [{"input": times, "output": quat}, {"input": times, "output": exp}],
            "channels": [
                {"sampler": 0, "target": {"node": 0, "path": "rotation"}},
                {"sampler": 1, "target": {"node": 0, "path": "translation"}},
            ],
        },
    )
    compress_views(
        b,
        {
            b.doc["accessors"][1]["bufferView"]: ("ATTRIBUTES", "OCTAHEDRAL"),
            b.doc["accessors"][2]["bufferView"]: ("ATTRIBUTES", "OCTAHEDRAL"),
            quat_view: ("ATTRIBUTES", "QUATERNION"),
            exp_view: ("ATTRIBUTES", "EXPONENTIAL"),
            b.doc["accessors"][3]["bufferView"]: ("ATTRIBUTES", "NONE"),  # the key times, lossless
        },
    )
    return b


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    normals = rng.normal(size=(64, 3))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    rotations = rng.normal(size=(16, 4))
    rotations /= np.linalg.norm(rotations, axis=1, keepdims=True)
    offsets = rng.uniform(-40.0, 40.0, size=(16, 3)) * np.array([1.0, 1e-3, 1e2])  # three magnitudes
    bits = {"OCTAHEDRAL8": 16, "OCTAHEDRAL4": 8, "QUATERNION": 12, "EXPONENTIAL": 15}
    path = filtered_document(normals, rotations, offsets, bits).write(tmp_path_factory.mktemp("f") / "f.glb", "glb")
    return path, normals, rotations, offsets


def test_octahedral_normals_to_the_grid_step(filtered: tuple[Path, np.ndarray, np.ndarray, np.ndarray]) -> None:
    """b bits per octahedral coordinate: a step of 2 / (2^(b-1) - 1) in the octahedron, less on the sphere."""
    path, normals, _, _ = filtered
    asset = load_gltf(path)
    for node, bits in ((0, 16), (1, 8)):
        decoded = asset.mesh_nodes[node].primitives[0].normals
        unit = decoded / np.linalg.norm(decoded, axis=1, keepdims=True)
        assert np.abs(unit - normals).max() < 2.0 / (2 ** (bits - 1) - 1)


def test_quaternion_filter_rotations_to_the_grid_step(
    filtered: tuple[Path, np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Three components stored in b bits over [-1/√2, 1/√2], the largest rebuilt: within one step of the keys (±q)."""
    path, _, rotations, _ = filtered
    keys = load_gltf(path).clips[0].channels
    rotation = next(c for c in keys if c.path == "rotation").values
    signs = np.sign(np.sum(rotation * rotations, axis=1, keepdims=True))
    assert np.abs(rotation * signs - rotations).max() < 2.0 * np.sqrt(0.5) / (2 ** (12 - 1) - 1)


def test_exponential_filter_translations_to_the_mantissa(
    filtered: tuple[Path, np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """b-bit signed mantissas with a shared exponent per component: relative error below 2^-(b-1)."""
    path, _, _, offsets = filtered
    translation = next(c for c in load_gltf(path).clips[0].channels if c.path == "translation").values
    np.testing.assert_allclose(translation, offsets, rtol=2.0 ** -(15 - 1))
    times = load_gltf(path).clips[0].channels[0].times  # no filter: lossless, the float32 keys exactly
    np.testing.assert_array_equal(times, np.linspace(0.0, 1.0, 16).astype(np.float32))


# ---------------------------------------------------------------------------------------------
# the real file: the VALID human (meshopt + quantization + WebP, 7 skins, 96 morph targets)


@pytest.fixture(scope="module")
def human(shared_assets: Path) -> Path:
    return shared_assets / "valid_avatar_mixamo_names_cm" / "Asian_M_1_Casual.glb"


def test_the_valid_human_decodes_as_its_readme_measures(human: Path) -> None:
    """Counts and the rest-pose skinned bounds of the folder's README (measured there independently)."""
    asset = load_gltf(human)
    assert asset.warnings == ()
    assert {e.name: e.required for e in asset.extensions} == {
        "EXT_texture_webp": True,
        "KHR_mesh_quantization": True,
        "EXT_meshopt_compression": True,
    }
    counts = [(m.primitives[0].num_vertices, m.primitives[0].num_targets) for m in asset.mesh_nodes]
    assert sorted(counts) == sorted([(22102, 65), (201, 0), (138, 0), (201, 0), (138, 0), (4737, 31), (4380, 0)])
    assert all(
        m.primitives[0].texture is not None and m.primitives[0].texture.shape == (2048, 2048, 4)
        for m in asset.mesh_nodes
    )
    vertices = scene_vertices(asset.scene, asset.scene.rest_frame(()))
    np.testing.assert_allclose(vertices.min(0), [-0.8693, 0.0, -0.095], atol=6e-5)
    np.testing.assert_allclose(vertices.max(0), [0.8693, 1.8123, 0.2582], atol=6e-5)


@pytest.mark.skipif(
    os.environ.get("OSSA_THREEJS") is None or shutil.which("node") is None,
    reason="optional: set OSSA_THREEJS to use three.js",
)
def test_the_valid_human_agrees_with_threejs(human: Path, tmp_path: Path) -> None:
    """three.js decodes the meshopt views with its own decoder (JS/wasm) and skins the quantized vertices itself.

    Its loader cannot decode images under node, so the copy it reads has no textures.
    """
    raw = human.read_bytes()
    length = struct.unpack_from("<I", raw, 12)[0]
    doc = json.loads(raw[20 : 20 + length])
    blob = raw[28 + length : 28 + length + struct.unpack_from("<I", raw, 20 + length)[0]]
    for key in ("images", "textures"):
        doc.pop(key)
    for material in doc["materials"]:
        material.pop("normalTexture", None)
        material["pbrMetallicRoughness"].pop("baseColorTexture", None)
    for key in ("extensionsUsed", "extensionsRequired"):
        doc[key] = [name for name in doc[key] if name != "EXT_texture_webp"]
    untextured = tmp_path / "human.glb"
    untextured.write_bytes(glb_bytes(doc, blob))
    script = Path(__file__).with_name("threejs_rest_oracle.mjs")
    run = subprocess.run(
        ["node", str(script), os.environ["OSSA_THREEJS"], str(untextured)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    three = json.loads(run.stdout)
    asset = load_gltf(human, textures=False)
    frame = asset.scene.rest_frame(())
    for i, instance in enumerate(asset.scene.instances):
        ours = instance_vertices(asset.scene, frame, i, 0)[0]
        np.testing.assert_allclose(ours, three[instance.name], atol=5e-7)  # float32 in three.js, 1.8 m tall


# ---------------------------------------------------------------------------------------------
# bad input: every rule of the extension, one line each


def small(tmp_path: Path, edit: object, name: str = "bad.gltf") -> Path:
    """A mesh whose POSITION view (stride 12, 3 vertices) is compressed, then ``edit(doc, extension)`` applied."""
    b = DocBuilder()
    b.add("nodes", {"mesh": 0})
    b.doc["scenes"] = [{"nodes": [0]}]
    positions = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    accessor = b.accessor(positions, 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0])
    b.doc["bufferViews"][0]["byteStride"] = 12
    b.add("meshes", {"primitives": [{"attributes": {"POSITION": accessor}}]})
    compress_views(b, {0: ("ATTRIBUTES", "NONE")})
    edit(b, b.doc["bufferViews"][0]["extensions"][MESHOPT])  # type: ignore[operator]
    return b.write(tmp_path / name)


BAD = {
    "mode": (
        lambda b, e: e.update(mode="VERTICES"),
        r"\.mode: mode must be one of \['ATTRIBUTES', 'TRIANGLES', 'INDICES'\], got 'VERTICES'",
    ),
    "filter": (
        lambda b, e: e.update(filter="COLOR"),
        r"\.filter: filter must be one of \['NONE', 'OCTAHEDRAL', 'QUATERNION', 'EXPONENTIAL'\], got 'COLOR'",
    ),
    "stride type": (
        lambda b, e: e.update(byteStride="12"),
        r"\.byteStride: expected a non-negative integer, got string '12'",
    ),
    "missing count": (lambda b, e: e.pop("count"), r"\.count: the required property 'count' is missing"),
    "stride differs": (
        lambda b, e: e.update(byteStride=16, count=2),
        r"byteStride 16 differs from the bufferView's byteStride 12",
    ),
    "length": (lambda b, e: e.update(count=4), r"the bufferView's byteLength 36 must equal byteStride × count = 48"),
    "attribute stride": (
        lambda b, e: (b.doc["bufferViews"][0].update(byteStride=6, byteLength=18), e.update(byteStride=6)),
        r"ATTRIBUTES need a byteStride divisible by 4, at most 256; got 6",
    ),
    "filter stride": (
        lambda b, e: e.update(filter="QUATERNION"),
        r"the QUATERNION filter needs a byteStride of 8, got 12",
    ),
    "octahedral stride": (
        lambda b, e: e.update(filter="OCTAHEDRAL"),
        r"the OCTAHEDRAL filter needs a byteStride of 4 or 8, got 12",
    ),
    "index stride": (lambda b, e: e.update(mode="INDICES"), r"INDICES need a byteStride of 2 or 4, got 12"),
    "out of the buffer": (
        lambda b, e: e.update(byteOffset=10**6),
        r"byteOffset 1000000 \+ byteLength \d+ exceeds buffers\[0\]",
    ),
    "fallback source": (
        lambda b, e: e.update(buffer=1),
        r"names buffer 1, a fallback buffer; the compressed data must be elsewhere",
    ),
    "corrupt": (
        lambda b, e: b.blob.__setitem__(slice(e["byteOffset"], e["byteOffset"] + 1), b"\x00"),
        r"the ATTRIBUTES data does not decode: ",
    ),
    "huge": (
        lambda b, e: (
            b.doc["bufferViews"][0].update(byteStride=256, byteLength=256 << 23),
            e.update(byteStride=256, count=1 << 23),
        ),
        rf"elements of 256 bytes decode to more than {MAX_DECODED_BYTES} bytes",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_compressed_views_raise_one_line_errors(case: str, tmp_path: Path) -> None:
    edit, message = BAD[case]
    path = small(tmp_path, edit)
    with pytest.raises(AssetError, match=message) as info:
        load_gltf(path)
    assert "bufferViews[0].extensions.EXT_meshopt_compression" in str(info.value)
    assert "\n" not in str(info.value)


def test_a_plain_view_on_the_fallback_buffer_is_refused(tmp_path: Path) -> None:
    def plain_view_on_fallback(b: DocBuilder, extension: dict) -> None:
        del b.doc["bufferViews"][0]["extensions"]

    with pytest.raises(AssetError, match=r"buffers\[1\]: is a EXT_meshopt_compression fallback buffer without data"):
        load_gltf(small(tmp_path, plain_view_on_fallback))


def test_the_small_file_itself_loads(tmp_path: Path) -> None:
    positions = load_gltf(small(tmp_path, lambda b, e: None)).mesh_nodes[0].primitives[0].positions
    np.testing.assert_array_equal(positions, [[0, 0, 0], [1, 0, 0], [0, 1, 0]])


def test_a_file_written_with_new_clips_is_decompressed(tmp_path: Path) -> None:
    """``ossa retarget`` onto a meshopt file writes its views decoded: no decoder or fallback buffer needed."""
    plain, compressed, _ = compressed_scene(tmp_path)
    source = load_gltf(compressed)
    written = load_gltf(save_gltf_with_clips(compressed, tmp_path / "out.glb", [source.clips[0]]))
    assert written.extensions == ()
    assert GltfDocument(tmp_path / "out.glb").count("buffers") == 1
    times = np.array([0.0, 0.9])  # the rest pose: the geometry as decoded (the file's morph channels are not copied)
    assert evaluate(written, None, times) == evaluate(load_gltf(plain), None, times)
