"""Accessor decoding against the glTF 2.0 spec's layouts and formulas, on hand-packed bytes."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from engine.errors import AssetError
from engine.io.accessors import element_layout, read_elements
from engine.io.gltf import GltfDocument
from tests.io.gltf_builder import DocBuilder, pack_elements

#: The spec's int-to-float table (section 3.6.2.2 / KHR_mesh_quantization), written out per value.
SPEC_NORMALIZED = {
    5120: lambda c: max(c / 127.0, -1.0),
    5121: lambda c: c / 255.0,
    5122: lambda c: max(c / 32767.0, -1.0),
    5123: lambda c: c / 65535.0,
}
EXTREMES = {
    5120: [-128, -127, -64, -1, 0, 1, 63, 126, 127],
    5121: [0, 1, 2, 127, 128, 200, 254, 255, 17],
    5122: [-32768, -32767, -1000, -1, 0, 1, 1000, 32766, 32767],
    5123: [0, 1, 2, 32767, 32768, 40000, 65534, 65535, 9],
    5125: [0, 1, 65535, 65536, 2**31, 2**32 - 1, 7, 8, 9],
    5126: [-1.5, -0.0, 0.0, 1e-30, 3.25, 1e30, -7.0, 0.1, 2.0],
}


def open_doc(builder: DocBuilder, tmp_path: Path, form: str = "embedded") -> GltfDocument:
    suffix = ".glb" if form == "glb" else ".gltf"
    return GltfDocument(builder.write(tmp_path / f"doc{suffix}", form))


@pytest.mark.parametrize("component_type", sorted(EXTREMES))
@pytest.mark.parametrize("form", ["embedded", "external", "glb"])
def test_every_component_type_round_trips_raw(component_type: int, form: str, tmp_path: Path) -> None:
    b = DocBuilder()
    index = b.accessor(EXTREMES[component_type], component_type, "VEC3")
    doc = open_doc(b, tmp_path, form)
    values = doc.accessor(index, "test")
    expected = np.array(EXTREMES[component_type], dtype=np.float32 if component_type == 5126 else np.int64)
    assert values.shape == (3, 3)
    np.testing.assert_array_equal(values.reshape(-1), expected)
    np.testing.assert_array_equal(doc.floats(index, "test").reshape(-1), expected.astype(np.float64))
    assert not values.flags.writeable


@pytest.mark.parametrize("component_type", sorted(SPEC_NORMALIZED))
def test_normalized_integers_follow_the_spec_formulas(component_type: int, tmp_path: Path) -> None:
    b = DocBuilder()
    index = b.accessor(EXTREMES[component_type], component_type, "SCALAR", normalized=True)
    decoded = open_doc(b, tmp_path).floats(index, "test")
    expected = [SPEC_NORMALIZED[component_type](float(c)) for c in EXTREMES[component_type]]
    np.testing.assert_allclose(decoded, expected, rtol=0, atol=1e-15)
    assert decoded.min() >= -1.0
    assert decoded.max() <= 1.0


def test_signed_normalized_minimum_clamps_to_minus_one(tmp_path: Path) -> None:
    b = DocBuilder()
    index = b.accessor([-128, -127], 5120, "SCALAR", normalized=True)
    short = b.accessor([-32768, -32767], 5122, "SCALAR", normalized=True)
    doc = open_doc(b, tmp_path)
    np.testing.assert_array_equal(doc.floats(index, "t"), [-1.0, -1.0])
    np.testing.assert_array_equal(doc.floats(short, "t"), [-1.0, -1.0])


def test_interleaved_strided_accessors(tmp_path: Path) -> None:
    """One buffer view, byteStride 24: float VEC3 position, normalized ushort VEC2 uv, ubyte VEC4 joints, pad."""
    rng = np.random.default_rng(7)
    positions = rng.normal(size=(5, 3)).astype(np.float32)
    uvs = rng.integers(0, 65536, size=(5, 2))
    joints = rng.integers(0, 256, size=(5, 4))
    data = b"".join(
        struct.pack("<3f2H4B4x", *p.tolist(), *u.tolist(), *j.tolist())
        for p, u, j in zip(positions, uvs, joints, strict=True)
    )
    b = DocBuilder()
    view = b.view(b"\0" * 8 + data, stride=24)  # the vertex data starts 8 bytes into the view
    b.add("accessors", {"bufferView": view, "byteOffset": 8, "componentType": 5126, "count": 5, "type": "VEC3"})
    b.add(
        "accessors",
        {"bufferView": view, "byteOffset": 20, "componentType": 5123, "count": 5, "type": "VEC2", "normalized": True},
    )
    b.add("accessors", {"bufferView": view, "byteOffset": 24, "componentType": 5121, "count": 5, "type": "VEC4"})
    doc = open_doc(b, tmp_path)
    np.testing.assert_array_equal(doc.floats(0, "t"), positions.astype(np.float64))
    np.testing.assert_allclose(doc.floats(1, "t"), uvs / 65535.0, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(doc.accessor(2, "t"), joints)


@pytest.mark.parametrize(
    ("component_type", "accessor_type", "normalized"),
    [
        (5126, "MAT4", False),
        (5126, "MAT3", False),
        (5121, "MAT2", True),
        (5120, "MAT3", True),
        (5122, "MAT3", True),
        (5123, "MAT2", False),
    ],
)
def test_matrices_are_column_major_with_padded_columns(
    component_type: int, accessor_type: str, normalized: bool, tmp_path: Path
) -> None:
    n = int(accessor_type[-1])
    rng = np.random.default_rng(n * 10 + component_type)
    if component_type == 5126:
        matrices = rng.normal(size=(3, n, n)).astype(np.float32)
    else:
        info = np.iinfo({5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16}[component_type])
        matrices = rng.integers(info.min, info.max + 1, size=(3, n, n))
    b = DocBuilder()
    index = b.accessor(matrices, component_type, accessor_type, normalized=normalized)
    layout = element_layout(component_type, accessor_type)
    assert len(b.blob) == 3 * layout.size  # the builder's own padding agrees with the spec layout
    decoded = open_doc(b, tmp_path).floats(index, "t")
    assert decoded.shape == (3, n, n)
    expected = matrices.astype(np.float64)
    if normalized:
        expected = np.vectorize(SPEC_NORMALIZED[component_type])(expected)
    np.testing.assert_allclose(decoded, expected, rtol=0, atol=1e-15)


def test_mat4_translation_lands_in_the_last_column(tmp_path: Path) -> None:
    b = DocBuilder()
    column_major = [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 5, 6, 7, 1]  # as a glTF file stores a translation
    view = b.view(struct.pack("<16f", *column_major))
    b.add("accessors", {"bufferView": view, "componentType": 5126, "count": 1, "type": "MAT4"})
    m = open_doc(b, tmp_path).floats(0, "t")[0]
    np.testing.assert_array_equal(m[:3, 3], [5, 6, 7])
    np.testing.assert_array_equal(m[3], [0, 0, 0, 1])


@pytest.mark.parametrize("index_type", [5121, 5123, 5125])
def test_sparse_substitution_over_a_buffer_view(index_type: int, tmp_path: Path) -> None:
    b = DocBuilder()
    base = np.arange(18, dtype=np.float32).reshape(6, 3)
    view = b.view(pack_elements(base, 5126, "VEC3"))
    indices = b.view(pack_elements([1, 4], index_type, "SCALAR"))
    values = b.view(pack_elements([[-1, -2, -3], [-4, -5, -6]], 5126, "VEC3"))
    sparse = {
        "count": 2,
        "indices": {"bufferView": indices, "componentType": index_type},
        "values": {"bufferView": values},
    }
    b.add("accessors", {"bufferView": view, "componentType": 5126, "count": 6, "type": "VEC3", "sparse": sparse})
    decoded = open_doc(b, tmp_path).floats(0, "t")
    expected = base.astype(np.float64)
    expected[1] = [-1, -2, -3]
    expected[4] = [-4, -5, -6]
    np.testing.assert_array_equal(decoded, expected)


def test_sparse_without_buffer_view_starts_from_zeros_and_normalizes(tmp_path: Path) -> None:
    b = DocBuilder()
    indices = b.view(pack_elements([0, 3], 5123, "SCALAR"))
    values = b.view(pack_elements([[255, 0], [51, 102]], 5121, "VEC2"))
    b.view(b"\0\0")  # offsets the next view so byteOffset matters
    sparse = {"count": 2, "indices": {"bufferView": indices, "componentType": 5123}, "values": {"bufferView": values}}
    b.add("accessors", {"componentType": 5121, "normalized": True, "count": 4, "type": "VEC2", "sparse": sparse})
    decoded = open_doc(b, tmp_path).floats(0, "t")
    np.testing.assert_allclose(decoded, [[1.0, 0.0], [0, 0], [0, 0], [0.2, 0.4]], rtol=0, atol=1e-15)


def test_accessor_without_buffer_view_is_zeros(tmp_path: Path) -> None:
    b = DocBuilder()
    b.add("accessors", {"componentType": 5126, "count": 3, "type": "VEC2"})
    np.testing.assert_array_equal(open_doc(b, tmp_path).floats(0, "t"), np.zeros((3, 2)))


def test_read_elements_direct_strided_view() -> None:
    data = struct.pack("<hhxxhhxx", 1, -2, 3, -4)
    np.testing.assert_array_equal(read_elements(data, 0, 2, 5122, "VEC2", stride=6), [[1, -2], [3, -4]])


# ---------------------------------------------------------------------------------------------
# malformed accessors


def broken(tmp_path: Path, accessor: dict, views: list | None = None, data: bytes = b"\0" * 64) -> GltfDocument:
    b = DocBuilder()
    b.blob += data
    for view in views or [{"buffer": 0, "byteOffset": 0, "byteLength": len(data)}]:
        b.add("bufferViews", view)
    b.add("accessors", accessor)
    return open_doc(b, tmp_path)


@pytest.mark.parametrize(
    ("accessor", "views", "message"),
    [
        (
            {"bufferView": 0, "componentType": 5126, "count": 6, "type": "VEC3"},
            None,
            r"accessors\[0\]: 6 elements of 12 bytes .* need 72 bytes but bufferViews\[0\] has 64",
        ),
        ({"bufferView": 0, "byteOffset": 60, "componentType": 5126, "count": 1, "type": "VEC2"}, None, "need 68 bytes"),
        (
            {"bufferView": 0, "componentType": 5126, "count": 2, "type": "VEC3"},
            [{"buffer": 0, "byteLength": 64, "byteStride": 8}],
            "byteStride 8 .* smaller than one VEC3",
        ),
        (
            {"bufferView": 0, "componentType": 5126, "count": 2, "type": "VEC3"},
            [{"buffer": 0, "byteLength": 64, "byteStride": 2}],
            r"byteStride must be an integer in \[4, 252\]",
        ),
        (
            {"bufferView": 0, "componentType": 5126, "count": 1, "type": "VEC3", "normalized": True},
            None,
            "normalized may only be true",
        ),
        (
            {"bufferView": 0, "componentType": 5125, "count": 1, "type": "SCALAR", "normalized": True},
            None,
            "normalized may only be true",
        ),
        (
            {"bufferView": 0, "componentType": 5124, "count": 1, "type": "SCALAR"},
            None,
            r"componentType must be one of .* got 5124",
        ),
        ({"bufferView": 0, "componentType": 5126, "count": 1, "type": "VEC5"}, None, "type must be one of"),
        (
            {"bufferView": 0, "componentType": 5126, "count": 0, "type": "VEC3"},
            None,
            "count must be a positive integer, got 0",
        ),
        (
            {"bufferView": 3, "componentType": 5126, "count": 1, "type": "VEC3"},
            None,
            r"accessors\[0\].bufferView: index 3 is out of range: the file has 1 bufferViews",
        ),
        (
            {"bufferView": 0, "componentType": 5126, "count": 1, "type": "VEC3"},
            [{"buffer": 0, "byteOffset": 32, "byteLength": 40}],
            r"bufferViews\[0\]: byteOffset 32 \+ byteLength 40 exceeds buffers\[0\] \(64 bytes\)",
        ),
        (
            {"bufferView": 0, "componentType": 5126, "count": 1, "type": "VEC3"},
            [{"buffer": 1, "byteLength": 4}],
            r"bufferViews\[0\].buffer: index 1 is out of range",
        ),
        ({"componentType": 5126, "count": 2**40, "type": "VEC3"}, None, "would zero-fill more than"),
    ],
)
def test_malformed_accessors_raise_with_json_path(
    accessor: dict, views: list | None, message: str, tmp_path: Path
) -> None:
    doc = broken(tmp_path, accessor, views)
    with pytest.raises(AssetError, match=message) as info:
        doc.floats(0, "test")
    assert info.value.file == doc.file


def sparse_doc(tmp_path: Path, indices: list[int], count: int = 4, sparse_count: int = 2) -> GltfDocument:
    b = DocBuilder()
    view = b.view(pack_elements(indices, 5121, "SCALAR"))
    values = b.view(pack_elements([9.0] * len(indices), 5126, "SCALAR"))
    sparse = {
        "count": sparse_count,
        "indices": {"bufferView": view, "componentType": 5121},
        "values": {"bufferView": values},
    }
    b.add("accessors", {"componentType": 5126, "count": count, "type": "SCALAR", "sparse": sparse})
    return open_doc(b, tmp_path)


@pytest.mark.parametrize(
    ("indices", "sparse_count", "message"),
    [
        ([2, 1], 2, r"sparse.indices: indices must be strictly increasing, got 2 then 1"),
        ([1, 1], 2, "strictly increasing, got 1 then 1"),
        ([1, 4], 2, r"sparse.indices: index 4 is out of range for an accessor of 4 elements"),
        ([1, 2], 5, r"sparse.count: count must be an integer in \[1, 4\], got 5"),
        ([1, 2], 3, r"do not fit in bufferViews"),
    ],
)
def test_malformed_sparse_storage(indices: list[int], sparse_count: int, message: str, tmp_path: Path) -> None:
    doc = sparse_doc(tmp_path, indices, sparse_count=sparse_count)
    with pytest.raises(AssetError, match=message):
        doc.floats(0, "test")
