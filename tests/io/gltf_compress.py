"""Compressed versions of hand-made glTF documents, written with the reference encoders.

``compress_views`` turns buffer views of a :class:`~tests.io.gltf_builder.DocBuilder` into
``EXT_meshopt_compression`` views (zeux's meshoptimizer, the C library the ``meshoptimizer``
package wraps), their data moved to a fallback buffer without data; ``encode_filter`` applies a
meshopt filter's encoder first. ``draco_primitive`` encodes arrays with Google's Draco (DracoPy,
vertex order preserved) into a ``KHR_draco_mesh_compression`` primitive.
"""

from __future__ import annotations

import ctypes
from typing import Any

import DracoPy
import meshoptimizer
import numpy as np
from meshoptimizer._loader import lib  # the filter encoders have no Python wrapper

from tests.io.gltf_builder import WIDTHS, DocBuilder

MESHOPT = "EXT_meshopt_compression"
DRACO = "KHR_draco_mesh_compression"

_FILTER_ENCODERS = {
    "OCTAHEDRAL": lib.meshopt_encodeFilterOct,
    "QUATERNION": lib.meshopt_encodeFilterQuat,
    "EXPONENTIAL": lib.meshopt_encodeFilterExp,
}
for _encoder in _FILTER_ENCODERS.values():
    _encoder.restype = None


def encode_filter(name: str, values: np.ndarray, stride: int, bits: int) -> bytes:
    """``values`` (``(count, 4)`` for OCTAHEDRAL/QUATERNION, ``(count, stride / 4)`` for EXPONENTIAL) filter-encoded."""
    data = np.ascontiguousarray(values, dtype=np.float32)
    count = data.shape[0]
    out = np.zeros(count * stride, dtype=np.uint8)
    args: list[Any] = [
        out.ctypes.data_as(ctypes.c_void_p),
        ctypes.c_size_t(count),
        ctypes.c_size_t(stride),
        ctypes.c_int(bits),
        data.ctypes.data_as(ctypes.c_void_p),
    ]
    if name == "EXPONENTIAL":
        args.append(ctypes.c_int(0))  # meshopt_EncodeExpSeparate: an exponent per component
    _FILTER_ENCODERS[name](*args)
    return out.tobytes()


def _encode(raw: bytes, count: int, stride: int, mode: str) -> bytes:
    meshoptimizer.encode_vertex_version(0)  # the extension's bitstream version (header 0xa0)
    meshoptimizer.encode_index_version(1)
    if mode == "ATTRIBUTES":
        return meshoptimizer.encode_vertex_buffer(np.frombuffer(raw, np.uint8).reshape(count, stride), count, stride)
    indices = np.frombuffer(raw, np.uint16 if stride == 2 else np.uint32).astype(np.uint32)
    encode = meshoptimizer.encode_index_buffer if mode == "TRIANGLES" else meshoptimizer.encode_index_sequence
    return encode(indices, count, int(indices.max()) + 1)


def compress_views(b: DocBuilder, modes: dict[int, tuple[str, str]], *, keep_fallback_data: bool = False) -> int:
    """Make ``bufferViews[v]`` for each ``v: (mode, filter)`` of ``modes`` EXT_meshopt_compression views.

    The compressed bytes are appended to buffer 0; the views move to a new buffer, a fallback
    without data (``keep_fallback_data``: buffer 0's uncompressed bytes stay readable instead).
    Returns the fallback buffer's index.
    """
    fallback = 1 + len(b.extra_buffers)
    length = 0
    for v, (mode, filter_name) in modes.items():
        view = b.doc["bufferViews"][v]
        raw = bytes(b.blob[view.get("byteOffset", 0) : view.get("byteOffset", 0) + view["byteLength"]])
        stride = view.get("byteStride") or _element_size(b, v)
        count = len(raw) // stride
        compressed = _encode(raw, count, stride, mode)
        b.blob += b"\0" * (-len(b.blob) % 4)
        extension = {"buffer": 0, "byteOffset": len(b.blob), "byteLength": len(compressed), "byteStride": stride}
        extension.update(count=count, mode=mode)
        if filter_name != "NONE":
            extension["filter"] = filter_name
        b.blob += compressed
        if not keep_fallback_data:
            view["buffer"] = fallback
            view["byteOffset"] = length
            length += -(-view["byteLength"] // 4) * 4
        view.setdefault("extensions", {})[MESHOPT] = extension
    b.extra_buffers.append({"byteLength": max(length, 4), "extensions": {MESHOPT: {"fallback": True}}})
    for key in ("extensionsUsed", "extensionsRequired"):
        b.doc[key] = sorted({*b.doc.get(key, []), MESHOPT})
    return fallback


def _element_size(b: DocBuilder, v: int) -> int:
    """The element size of the (tightly packed) accessors on view ``v``, which has no byteStride."""
    sizes = {
        {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}[a["componentType"]] * WIDTHS[a["type"]]
        for a in b.doc["accessors"]
        if a.get("bufferView") == v
    }
    assert len(sizes) == 1, f"view {v} holds accessors of element sizes {sizes}"
    return sizes.pop()


def draco_primitive(
    b: DocBuilder, positions: np.ndarray, indices: np.ndarray, *, attributes: dict[str, tuple[np.ndarray, int, bool]]
) -> dict[str, Any]:
    """A KHR_draco_mesh_compression primitive of ``positions`` ``(V, 3)``, ``indices`` ``(3·F,)`` and ``attributes``.

    ``attributes``: glTF name → (values ``(V, k)``, componentType of its accessor, normalized).
    NORMAL and TEXCOORD_0 go in as Draco's normals and texture coordinates, the others as
    generic attributes. Every accessor has no bufferView: the data is the Draco stream's.
    """
    generic = {
        10 + k: values
        for k, (name, (values, _, _)) in enumerate(attributes.items())
        if name not in ("NORMAL", "TEXCOORD_0")
    }
    normals = attributes.get("NORMAL", (None,))[0]
    uvs = attributes.get("TEXCOORD_0", (None,))[0]
    stream = DracoPy.encode(
        np.asarray(positions, dtype=np.float64),
        np.asarray(indices, dtype=np.uint32).reshape(-1, 3),
        quantization_bits=14,
        preserve_order=True,
        normals=None if normals is None else np.asarray(normals, dtype=np.float64),
        tex_coord=None if uvs is None else np.asarray(uvs, dtype=np.float64),
        normal_quantization_bits=10,
        tex_coord_quantization_bits=12,
        generic_attributes=generic or None,
    )
    decoded = DracoPy.decode(stream)
    kinds = {attribute["attribute_type"]: attribute["unique_id"] for attribute in decoded.attributes}
    ids = {"POSITION": kinds[0]}
    if normals is not None:
        ids["NORMAL"] = kinds[1]
    if uvs is not None:
        ids["TEXCOORD_0"] = kinds[3]
    ids.update({name: 10 + k for k, name in enumerate(attributes) if name not in ("NORMAL", "TEXCOORD_0")})
    widths = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4"}
    accessors = {
        "POSITION": b.add(
            "accessors",
            {
                "componentType": 5126,
                "count": len(positions),
                "type": "VEC3",
                "min": np.min(positions, 0).tolist(),
                "max": np.max(positions, 0).tolist(),
            },
        )
    }
    for name, (values, component_type, normalized) in attributes.items():
        accessor = {"componentType": component_type, "count": len(values), "type": widths[np.shape(values)[1]]}
        if normalized:
            accessor["normalized"] = True
        accessors[name] = b.add("accessors", accessor)
    index_accessor = b.add("accessors", {"componentType": 5125, "count": len(indices), "type": "SCALAR"})
    view = b.view(stream)
    for key in ("extensionsUsed", "extensionsRequired"):
        b.doc[key] = sorted({*b.doc.get(key, []), DRACO})
    return {
        "attributes": accessors,
        "indices": index_accessor,
        "extensions": {DRACO: {"bufferView": view, "attributes": ids}},
    }
