"""Hand-made glTF documents for the loader tests, packed with ``struct`` (no engine code).

``DocBuilder`` collects binary data and JSON; ``write`` saves a ``.gltf`` (base64 data URI or an
external ``.bin``) or a ``.glb``. ``skinned_document`` builds the small valid skinned, animated
scene most validation tests break one property of.
"""

from __future__ import annotations

import base64
import copy
import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

#: struct format letter of each glTF component type.
FORMATS = {5120: "b", 5121: "B", 5122: "h", 5123: "H", 5125: "I", 5126: "f"}
WIDTHS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}


def pack_elements(values: Any, component_type: int, accessor_type: str) -> bytes:
    """Elements packed as the spec lays them out: matrices column by column, columns 4-byte aligned."""
    letter = FORMATS[component_type]
    rows = {"MAT2": 2, "MAT3": 3, "MAT4": 4}.get(accessor_type)
    out = bytearray()
    for element in np.asarray(values).reshape(-1, WIDTHS[accessor_type]):
        if rows is None:
            out += struct.pack(f"<{len(element)}{letter}", *element.tolist())
            continue
        matrix = element.reshape(rows, rows)  # given in math layout M[row, col]
        for col in range(rows):
            column = struct.pack(f"<{rows}{letter}", *matrix[:, col].tolist())
            out += column + b"\0" * (-len(column) % 4)
    return bytes(out)


class DocBuilder:
    """A glTF JSON document plus one binary buffer, built piece by piece."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] = {"asset": {"version": "2.0"}}
        self.blob = bytearray()

    def add(self, key: str, item: dict[str, Any]) -> int:
        self.doc.setdefault(key, []).append(item)
        return len(self.doc[key]) - 1

    def view(self, data: bytes, stride: int | None = None) -> int:
        """A buffer view over ``data`` appended to the blob (4-byte aligned)."""
        self.blob += b"\0" * (-len(self.blob) % 4)
        view = {"buffer": 0, "byteOffset": len(self.blob), "byteLength": len(data)}
        if stride is not None:
            view["byteStride"] = stride
        self.blob += data
        return self.add("bufferViews", view)

    def accessor(self, values: Any, component_type: int = 5126, accessor_type: str = "SCALAR", **fields: Any) -> int:
        """A tightly packed accessor holding ``values``; ``fields`` are added to its JSON."""
        values = np.asarray(values)
        count = values.reshape(-1, WIDTHS[accessor_type]).shape[0]
        view = self.view(pack_elements(values, component_type, accessor_type))
        accessor = {"bufferView": view, "componentType": component_type, "count": count, "type": accessor_type}
        accessor.update(fields)
        return self.add("accessors", accessor)

    def document(self, uri: str | None) -> dict[str, Any]:
        doc = copy.deepcopy(self.doc)
        buffer: dict[str, Any] = {"byteLength": len(self.blob)}
        if uri is not None:
            buffer["uri"] = uri
        if self.blob:
            doc["buffers"] = [buffer]
        return doc

    def write(self, path: Path, form: str = "embedded") -> Path:
        """Save as ``form``: ``"embedded"`` (data URI), ``"external"`` (.bin next to it) or ``"glb"``."""
        if form == "embedded":
            uri = "data:application/octet-stream;base64," + base64.b64encode(bytes(self.blob)).decode()
            path.write_text(json.dumps(self.document(uri)))
        elif form == "external":
            bin_path = path.with_suffix(".bin")
            bin_path.write_bytes(bytes(self.blob))
            path.write_text(json.dumps(self.document(bin_path.name)))
        else:
            path.write_bytes(glb_bytes(self.document(None), bytes(self.blob)))
        return path


def glb_bytes(doc: dict[str, Any], blob: bytes) -> bytes:
    """A GLB container: header, JSON chunk (space-padded), BIN chunk (zero-padded)."""
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), 0x4E4F534A) + text
    if blob:
        blob += b"\0" * (-len(blob) % 4)
        chunks += struct.pack("<II", len(blob), 0x004E4942) + blob
    return struct.pack("<4sII", b"glTF", 2, 12 + len(chunks)) + chunks


def quat_z(angle: float) -> list[float]:
    """Unit quaternion (x, y, z, w) of a rotation by ``angle`` about +Z."""
    return [0.0, 0.0, float(np.sin(angle / 2)), float(np.cos(angle / 2))]


def skinned_document() -> DocBuilder:
    """A valid scene: a root node (translated) over a 3-joint chain listed out of order, a skinned
    triangle strip of 4 vertices with two influence sets, a rigid box node, and two clips.

    Nodes: 0 ``armature`` (translation (0, 1, 0), children [3, 1]); 1 ``hip`` (joint, child 2);
    2 ``spine`` (joint, child 4); 3 ``mesh`` (skinned mesh, skin 0); 4 ``head`` (joint).
    ``skins[0].joints`` = [4, 1, 2] (head, hip, spine) so the loader must re-order them.
    """
    b = DocBuilder()
    b.add("nodes", {"name": "armature", "translation": [0.0, 1.0, 0.0], "children": [3, 1]})
    b.add("nodes", {"name": "hip", "translation": [0.0, 0.5, 0.0], "children": [2]})
    b.add("nodes", {"name": "spine", "translation": [0.0, 1.0, 0.0], "rotation": quat_z(0.3), "children": [4]})
    b.add("nodes", {"name": "mesh", "mesh": 0, "skin": 0})
    b.add("nodes", {"name": "head", "translation": [0.0, 1.0, 0.0], "scale": [2.0, 2.0, 2.0]})
    b.doc["scenes"] = [{"nodes": [0]}]
    b.doc["scene"] = 0
    positions = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]]
    joints0 = [[0, 1, 0, 0], [1, 2, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0]]
    weights0 = [[0.5, 0.5, 0.0, 0.0], [0.25, 0.25, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0]]
    joints1 = [[0, 0, 0, 0], [2, 1, 0, 0], [0, 0, 0, 0], [1, 2, 0, 0]]
    weights1 = [[0.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.0, 0.0]]
    attributes = {
        "POSITION": b.accessor(positions, 5126, "VEC3", min=[0, 0, 0], max=[1, 1, 0]),
        "NORMAL": b.accessor([[0.0, 0.0, 1.0]] * 4, 5126, "VEC3"),
        "JOINTS_0": b.accessor(joints0, 5121, "VEC4"),
        "WEIGHTS_0": b.accessor(weights0, 5126, "VEC4"),
        "JOINTS_1": b.accessor(joints1, 5123, "VEC4"),
        "WEIGHTS_1": b.accessor(weights1, 5126, "VEC4"),
    }
    b.add("meshes", {"name": "strip", "primitives": [{"attributes": attributes, "mode": 5}]})
    ibm = []
    for height in (3.5, 0.5, 1.5):  # head, hip, spine: arbitrary invertible bind transforms
        m = np.eye(4)
        m[1, 3] = -height
        ibm.append(m)
    b.add(
        "skins",
        {"name": "body", "joints": [4, 1, 2], "skeleton": 1, "inverseBindMatrices": b.accessor(ibm, 5126, "MAT4")},
    )
    times = b.accessor([0.0, 1.0, 2.0], 5126, "SCALAR", min=[0.0], max=[2.0])
    turn = b.accessor([quat_z(0.0), quat_z(1.0), quat_z(2.0)], 5126, "VEC4")
    slide = b.accessor([[0.0, 0.5, 0.0], [1.0, 0.5, 0.0], [1.0, 1.5, 0.0]], 5126, "VEC3")
    b.add(
        "animations",
        {
            "name": "wave",
            "samplers": [{"input": times, "output": turn}, {"input": times, "output": slide, "interpolation": "STEP"}],
            "channels": [
                {"sampler": 0, "target": {"node": 2, "path": "rotation"}},
                {"sampler": 1, "target": {"node": 1, "path": "translation"}},
            ],
        },
    )
    lift = b.accessor([[0.0, 1.0, 0.0], [0.0, 3.0, 0.0]], 5126, "VEC3")
    two = b.accessor([0.0, 1.0], 5126, "SCALAR")
    b.add(
        "animations",
        {
            "samplers": [{"input": two, "output": lift}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "translation"}}],
        },
    )
    return b
