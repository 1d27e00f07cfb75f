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
        self.extra_buffers: list[dict[str, Any]] = []  # buffers 1, 2, … (buffer 0 holds the blob)

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
            doc["buffers"] = [buffer, *copy.deepcopy(self.extra_buffers)]
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


def scene_document() -> DocBuilder:
    """A valid scene exercising everything drawn besides a plain skin; closed-form friendly.

    Nodes (all under ``root``): 0 ``root`` (animated translation, children [1, 2, 7]);
    1 ``body`` (mesh 0 skinned by skin 0, 2 morph targets); 2 ``hip`` (joint, child 3);
    3 ``bend`` (**not a joint**, animated rotation, child 4); 4 ``chest`` (joint, children [5, 6]);
    5 ``hat`` (rigid mesh 1 under a joint, 1 morph target, animated weights; a joint of skin 1);
    6 ``wire`` (mesh 2 skinned by skin 1: a POINTS and a LINE_LOOP primitive);
    7 ``spinner`` (rigid mesh 1 again, STEP rotation, CUBICSPLINE translation, ``node.weights``).

    Skins: 0 ``torso`` joints [4, 2] (chest, hip: listed out of depth-first order, node 3 between
    them); 1 ``wire`` joints [5, 2] (nodes 3 and 4 between them are not its joints).
    Clips: ``move`` (everything above, weights of ``body`` CUBICSPLINE and of ``hat`` LINEAR) and
    ``blink`` (STEP weights of ``spinner`` only).
    """
    b = DocBuilder()

    def bounded(values: Any, accessor_type: str = "VEC3") -> int:
        """A FLOAT accessor with the min/max the spec requires of positions and key times."""
        array = np.asarray(values, dtype=float).reshape(-1, WIDTHS[accessor_type])
        return b.accessor(array, 5126, accessor_type, min=array.min(0).tolist(), max=array.max(0).tolist())

    b.add("nodes", {"name": "root", "translation": [0.0, 0.5, 0.0], "children": [1, 2, 7]})
    b.add("nodes", {"name": "body", "mesh": 0, "skin": 0, "translation": [5.0, 0.0, 0.0]})
    b.add("nodes", {"name": "hip", "translation": [0.0, 1.0, 0.0], "children": [3]})
    b.add("nodes", {"name": "bend", "translation": [0.0, 0.5, 0.0], "rotation": quat_z(0.4), "children": [4]})
    b.add("nodes", {"name": "chest", "translation": [0.0, 0.5, 0.0], "children": [5, 6]})
    b.add("nodes", {"name": "hat", "mesh": 1, "translation": [0.0, 0.3, 0.0], "scale": [1.0, 2.0, 1.0]})
    b.add("nodes", {"name": "wire", "mesh": 2, "skin": 1})
    b.add("nodes", {"name": "spinner", "mesh": 1, "translation": [2.0, 0.0, 0.0], "weights": [0.8]})
    b.doc["scenes"] = [{"nodes": [0]}]
    b.doc["scene"] = 0

    # mesh 0: a skinned quad strip of 6 vertices over skin 0 (JOINTS index skins[0].joints = [chest, hip])
    body = [[-0.5, 1.0, 0.0], [0.5, 1.0, 0.0], [-0.5, 1.6, 0.0], [0.5, 1.6, 0.0], [-0.5, 2.2, 0.0], [0.5, 2.2, 0.0]]
    body_normals = [[0.0, 0.0, 1.0]] * 6
    body_joints = [[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    body_weights = [[1, 0, 0, 0], [0.7, 0.3, 0, 0], [0.5, 0.5, 0, 0], [0.6, 0.4, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]
    grow = [[0.0, 0.1 * k, 0.05 * k] for k in range(6)]
    grow_normals = [[0.3, 0.0, 0.0]] * 6
    widen = [[(-1) ** k * 0.2, 0.0, 0.0] for k in range(6)]
    b.add(
        "meshes",
        {
            "name": "body",
            "weights": [0.25, 0.5],
            "primitives": [
                {
                    "attributes": {
                        "POSITION": bounded(body),
                        "NORMAL": b.accessor(body_normals, 5126, "VEC3"),
                        "JOINTS_0": b.accessor(body_joints, 5121, "VEC4"),
                        "WEIGHTS_0": b.accessor(body_weights, 5126, "VEC4"),
                    },
                    "indices": b.accessor([0, 1, 2, 3, 4, 5], 5123, "SCALAR"),
                    "mode": 5,
                    "targets": [
                        {"POSITION": bounded(grow), "NORMAL": b.accessor(grow_normals, 5126, "VEC3")},
                        {"POSITION": bounded(widen)},
                    ],
                }
            ],
        },
    )
    # mesh 1: a rigid tetrahedron with one morph target that lifts its apex
    tetra = [[0.0, 0.0, 0.0], [0.4, 0.0, 0.0], [0.0, 0.0, 0.4], [0.1, 0.4, 0.1]]
    b.add(
        "meshes",
        {
            "name": "box",
            "primitives": [
                {
                    "attributes": {
                        "POSITION": bounded(tetra),
                        "NORMAL": b.accessor([[0.0, -1.0, 0.0], [1, 0, 0], [0, 0, 1], [0, 1, 0]], 5126, "VEC3"),
                    },
                    "indices": b.accessor([0, 1, 2, 0, 3, 1, 0, 2, 3, 1, 3, 2], 5123, "SCALAR"),
                    "targets": [{"POSITION": bounded([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0.5, 0]])}],
                }
            ],
        },
    )
    # mesh 2: skinned points and a line loop over skin 1 (JOINTS index skins[1].joints = [hat, hip])
    points = [[0.0, 2.5, 0.0], [0.2, 2.6, 0.0], [0.4, 2.7, 0.0]]
    loop = [[0.0, 2.0, 0.3], [0.3, 2.0, 0.3], [0.3, 2.3, 0.3], [0.0, 2.3, 0.3]]
    b.add(
        "meshes",
        {
            "name": "wire",
            "primitives": [
                {
                    "attributes": {
                        "POSITION": bounded(points),
                        "JOINTS_0": b.accessor([[0, 0, 0, 0], [0, 1, 0, 0], [1, 0, 0, 0]], 5123, "VEC4"),
                        "WEIGHTS_0": b.accessor([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [1, 0, 0, 0]], 5126, "VEC4"),
                    },
                    "mode": 0,
                },
                {
                    "attributes": {
                        "POSITION": bounded(loop),
                        "JOINTS_0": b.accessor([[0, 1, 0, 0]] * 4, 5121, "VEC4"),
                        "WEIGHTS_0": b.accessor([[0.9, 0.1, 0, 0]] * 4, 5126, "VEC4"),
                    },
                    "indices": b.accessor([3, 2, 1, 0], 5121, "SCALAR"),
                    "mode": 2,
                },
            ],
        },
    )

    def inverse_binds(heights: list[float]) -> int:
        matrices = []
        for height in heights:
            m = np.eye(4)
            m[1, 3] = -height
            matrices.append(m)
        return b.accessor(matrices, 5126, "MAT4")

    b.add("skins", {"name": "torso", "joints": [4, 2], "skeleton": 2, "inverseBindMatrices": inverse_binds([2.0, 1.5])})
    b.add("skins", {"name": "wire", "joints": [5, 2], "inverseBindMatrices": inverse_binds([2.3, 1.5])})

    keys = bounded([0.0, 1.0, 2.0], "SCALAR")
    bend = b.accessor([quat_z(0.4), quat_z(-0.6), quat_z(0.9)], 5126, "VEC4")
    lift = b.accessor([[0.0, 0.5, 0.0], [0.5, 0.5, 0.0], [0.5, 1.0, 0.5]], 5126, "VEC3")
    spin = b.accessor([quat_z(0.0), quat_z(1.5), quat_z(3.0)], 5126, "VEC4")
    # CUBICSPLINE: (in-tangent, value, out-tangent) per key
    slide = [
        [[0, 0, 0], [2.0, 0, 0], [1.0, 0, 0]],
        [[0.5, 1, 0], [2.5, 0.5, 0], [-1, 0, 0]],
        [[0, 0, 1], [3, 0, 0], [0, 0, 0]],
    ]
    # weights of body (2 targets), CUBICSPLINE: per key in-tangents (2), values (2), out-tangents (2)
    body_weights_keys = [0.3, -0.2, 0.0, 0.0, 1.0, 0.5, 0.5, 0.5, 1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 0.2, 0.9, 0.0, 0.0]
    hat_weights_keys = [0.0, 1.0, 0.25]
    b.add(
        "animations",
        {
            "name": "move",
            "samplers": [
                {"input": keys, "output": bend},
                {"input": keys, "output": lift},
                {"input": keys, "output": spin, "interpolation": "STEP"},
                {"input": keys, "output": b.accessor(slide, 5126, "VEC3"), "interpolation": "CUBICSPLINE"},
                {"input": keys, "output": b.accessor(body_weights_keys), "interpolation": "CUBICSPLINE"},
                {"input": keys, "output": b.accessor(hat_weights_keys)},
            ],
            "channels": [
                {"sampler": 0, "target": {"node": 3, "path": "rotation"}},
                {"sampler": 1, "target": {"node": 0, "path": "translation"}},
                {"sampler": 2, "target": {"node": 7, "path": "rotation"}},
                {"sampler": 3, "target": {"node": 7, "path": "translation"}},
                {"sampler": 4, "target": {"node": 1, "path": "weights"}},
                {"sampler": 5, "target": {"node": 5, "path": "weights"}},
            ],
        },
    )
    blink_keys = bounded([0.5, 1.5], "SCALAR")
    b.add(
        "animations",
        {
            "name": "blink",
            "samplers": [{"input": blink_keys, "output": b.accessor([0.0, 1.0]), "interpolation": "STEP"}],
            "channels": [{"sampler": 0, "target": {"node": 7, "path": "weights"}}],
        },
    )
    return b
