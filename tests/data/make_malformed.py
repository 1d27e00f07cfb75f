"""Write the malformed-asset corpus ``tests/data/malformed/``: ``python -m tests.data.make_malformed``.

Every case is one small file that breaks one rule of glTF 2.0 (or of BVH), made by an explicit
edit of a valid base document. Next to each edit this script states what the loader must report:
the family, the location (a JSON path such as ``animations[0].samplers[1].input``, a GLB chunk,
or a BVH line) and a regular expression of the problem. ``manifest.json`` records all of it and
``tests/io/test_malformed_corpus.py`` holds the loaders to it.

Bases, written as ``gltf/base-<name>.gltf`` beside the ``<name>.bin`` every case of that base
shares (each loads without error or warning):

- ``skinned``: :func:`tests.io.gltf_builder.skinned_document` (hand-made: 5 nodes, a skin of 3
  joints listed out of order, a skinned triangle strip with two influence sets, two clips);
- ``scene``: :func:`tests.io.gltf_builder.scene_document` (hand-made: rigid meshes under a joint
  and a node, two skins with a non-joint node between joints, skinned points and a line loop,
  morph targets with animated weights), the base the fuzzer mutates beside the others;
- ``rigged_simple`` and ``box_animated``: the Khronos sample models (CC BY 4.0, see the README)
  from ``../shared/assets/khronos`` (or ``$OSSA_SHARED_ASSETS/khronos``), JSON as published, the
  base64 buffer moved to a ``.bin``.

Cases that need new binary data (NaN key times, out-of-range joints, …) carry it in an extra
``data:`` buffer of their own, so the shared ``.bin`` files stay as published. The output is
deterministic: a second run writes the same bytes, which the corpus test checks.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.conftest import SHARED_ASSETS
from tests.io.gltf_builder import FORMATS, WIDTHS, glb_bytes, pack_elements, quat_z, scene_document, skinned_document

HERE = Path(__file__).resolve().parent
OUT = HERE / "malformed"
KHRONOS = SHARED_ASSETS / "khronos"
GIB = 1 << 30

# ---------------------------------------------------------------------------------------------
# documents and edits


@dataclass
class Base:
    """A valid document: JSON whose ``buffers[0]`` is the ``<name>.bin`` file, and that file's bytes."""

    name: str
    json: dict[str, Any]
    blob: bytes

    def read(self, accessor: int) -> np.ndarray:
        """Values of a tightly packed accessor of the base, ``(count, width)``."""
        a = self.json["accessors"][accessor]
        view = self.json["bufferViews"][a["bufferView"]]
        width = WIDTHS[a["type"]]
        dtype = np.dtype("<" + FORMATS[a["componentType"]])
        offset = view.get("byteOffset", 0) + a.get("byteOffset", 0)
        return np.frombuffer(self.blob, dtype, a["count"] * width, offset).reshape(a["count"], width).copy()


_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")


def _keys(path: str) -> list[str | int]:
    keys: list[str | int] = []
    for name, index in _TOKEN.findall(path):
        keys.append(name if name else int(index))
    return keys


class Doc:
    """An editable copy of a base's JSON; paths look like ``nodes[1].children[0]``."""

    def __init__(self, base: Base) -> None:
        self.base = base
        self.json = copy.deepcopy(base.json)

    def get(self, path: str) -> Any:
        value: Any = self.json
        for key in _keys(path):
            value = value[key]
        return value

    def set(self, path: str, value: Any) -> Doc:
        *head, last = _keys(path)
        container: Any = self.json
        for key in head:
            if isinstance(key, str) and key not in container:
                container[key] = {}
            container = container[key]
        container[last] = value
        return self

    def delete(self, path: str) -> Doc:
        *head, last = _keys(path)
        container: Any = self.json
        for key in head:
            container = container[key]
        del container[last]
        return self

    def view(self, data: bytes, **fields: Any) -> int:
        """A new buffer view over ``data``, held in a new ``data:`` buffer."""
        uri = "data:application/octet-stream;base64," + base64.b64encode(data).decode()
        self.json.setdefault("buffers", []).append({"byteLength": len(data), "uri": uri})
        view = {"buffer": len(self.json["buffers"]) - 1, "byteLength": len(data), **fields}
        self.json.setdefault("bufferViews", []).append(view)
        return len(self.json["bufferViews"]) - 1

    def accessor(self, values: Any, component_type: int = 5126, accessor_type: str = "SCALAR", **fields: Any) -> int:
        """A new tightly packed accessor holding ``values`` (matrices given as ``M[row, col]``)."""
        values = np.asarray(values)
        count = values.reshape(-1, WIDTHS[accessor_type]).shape[0]
        view = self.view(pack_elements(values, component_type, accessor_type))
        accessor = {"bufferView": view, "componentType": component_type, "count": count, "type": accessor_type}
        self.json.setdefault("accessors", []).append({**accessor, **fields})
        return len(self.json["accessors"]) - 1

    def text(self) -> bytes:
        return json.dumps(self.json).encode()


Edit = Callable[[Doc], Any]


@dataclass(frozen=True)
class Case:
    """One corpus file and what loading it must raise."""

    family: str
    name: str
    file: str
    where: str  # regular expression, matched in full against AssetError.where
    problem: str  # regular expression, searched in AssetError.problem
    loader: str = "gltf"


@dataclass
class Corpus:
    bases: dict[str, Base]
    cases: list[Case] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)

    def add(self, family: str, name: str, suffix: str, data: bytes, where: str, problem: str) -> None:
        folder = "bvh" if suffix == ".bvh" else "gltf"
        file = f"{folder}/{family}-{name}{suffix}"
        if file in self.files:
            raise ValueError(f"two cases named {file}")
        self.files[file] = data
        self.cases.append(Case(family, name, file, where, problem, "bvh" if suffix == ".bvh" else "gltf"))

    def edit(self, family: str, name: str, base: str, edit: Edit, where: str, problem: str) -> None:
        """A ``.gltf`` case: ``edit`` applied to a copy of base ``base``; ``where`` is an exact path."""
        doc = Doc(self.bases[base])
        edit(doc)
        self.add(family, name, ".gltf", doc.text(), re.escape(where), problem)

    def glb(self, family: str, name: str, data: bytes, where: str, problem: str, *, pattern: bool = False) -> None:
        """A ``.glb`` case; ``where`` is exact unless ``pattern``."""
        self.add(family, name, ".glb", data, where if pattern else re.escape(where), problem)


def edits(*steps: Edit) -> Edit:
    """Several edits applied in order."""

    def apply(doc: Doc) -> None:
        for step in steps:
            step(doc)

    return apply


def setting(path: str, value: Any) -> Edit:
    return lambda d: d.set(path, value)


def deleting(path: str) -> Edit:
    return lambda d: d.delete(path)


# ---------------------------------------------------------------------------------------------
# bases


def skinned_base() -> Base:
    builder = skinned_document()
    doc = builder.document("skinned.bin")
    return Base("skinned", doc, bytes(builder.blob))


def scene_base() -> Base:
    builder = scene_document()
    return Base("scene", builder.document("scene.bin"), bytes(builder.blob))


def khronos_base(name: str) -> Base:
    doc = json.loads((KHRONOS / f"{name}.gltf").read_text())
    uri = doc["buffers"][0]["uri"]
    blob = base64.b64decode(uri.split(",", 1)[1])
    doc["buffers"][0]["uri"] = f"{name}.bin"
    return Base(name, doc, blob)


def glb_of(base: Base, doc: dict[str, Any] | None = None) -> bytes:
    """``base`` (or an edited copy of its JSON) as a GLB whose buffer 0 is the BIN chunk."""
    doc = copy.deepcopy(base.json if doc is None else doc)
    del doc["buffers"][0]["uri"]
    return glb_bytes(doc, base.blob)


def chunks(data: bytes) -> list[tuple[int, int, int]]:
    """``(offset, length, type)`` of each chunk of a well-formed GLB."""
    found, offset = [], 12
    while offset < len(data):
        length, kind = struct.unpack_from("<II", data, offset)
        found.append((offset, length, kind))
        offset += 8 + length
    return found


def with_u32(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<I", value) + data[offset + 4 :]


def chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload)) + kind + payload


def container(*parts: bytes, version: int = 2) -> bytes:
    body = b"".join(parts)
    return struct.pack("<4sII", b"glTF", version, 12 + len(body)) + body


def json_chunk(doc: dict[str, Any]) -> bytes:
    text = json.dumps(doc).encode()
    return chunk(b"JSON", text + b" " * (-len(text) % 4))


# ---------------------------------------------------------------------------------------------
# families


def json_syntax(c: Corpus) -> None:
    """Truncated and garbled JSON text, bytes that are not UTF-8, NaN tokens, absurd nesting."""
    text = Doc(c.bases["rigged_simple"]).text()
    anywhere = r"JSON line \d+ column \d+"
    for percent in (1, 10, 50, 90, 99):
        cut = len(text) * percent // 100
        c.add("json-syntax", f"truncated-{percent}pct", ".gltf", text[:cut], anywhere, "not valid JSON")
    c.add("json-syntax", "truncated-last-brace", ".gltf", text[:-1], anywhere, "not valid JSON")
    c.add("json-syntax", "empty", ".gltf", b"", "JSON line 1 column 1", "not valid JSON: Expecting value")
    c.add("json-syntax", "whitespace-only", ".gltf", b" \n\t\n", "JSON line 3 column 1", "not valid JSON")
    garbles = {
        "double-comma": (b'"scene": 0,', b'"scene": 0,,'),
        "trailing-comma": (b"[3, 2]", b"[3, 2,]"),
        "single-quotes": (b'"asset"', b"'asset'"),
        "unquoted-key": (b'"scenes"', b"scenes"),
        "missing-colon": (b'"scene": 0', b'"scene" 0'),
        "missing-brace": (b'{"nodes": [0]}', b'{"nodes": [0]'),
        "tab-in-string": (b'"Z_UP"', b'"Z\tUP"'),
        "unterminated-string": (b'"Armature"}', b'"Armature}'),
    }
    for name, (old, new) in garbles.items():
        assert old in text, name
        c.add("json-syntax", name, ".gltf", text.replace(old, new, 1), anywhere, "not valid JSON")
    c.add(
        "json-syntax",
        "line-comment",
        ".gltf",
        b"// exported by hand\n" + text,
        "JSON line 1 column 1",
        "not valid JSON",
    )
    c.add("json-syntax", "extra-data", ".gltf", text + b"\n{}", "JSON line 2 column 1", "not valid JSON: Extra data")
    c.add("json-syntax", "two-documents", ".gltf", text + text, anywhere, "not valid JSON: Extra data")
    rng = np.random.default_rng(10)
    noise = rng.integers(128, 256, 2048, dtype=np.uint8).tobytes()
    undecodable = r"expected a glTF JSON document \(UTF-8\) or a GLB file, got undecodable bytes"
    c.add("json-syntax", "binary-noise", ".gltf", noise, r"byte \d+", undecodable)
    c.add("json-syntax", "utf16", ".gltf", text.decode().encode("utf-16"), "byte 0", undecodable)
    at = text.index(b"Armature")
    broken = text[:at] + b"\xff\xfe" + text[at:]
    c.add("json-syntax", "invalid-utf8-in-name", ".gltf", broken, f"byte {at}", f"{undecodable} at offset {at}")
    nested = b"[" * 20_000 + b"]" * 20_000
    c.add("json-syntax", "nested-20000", ".gltf", nested, "JSON", "nested too deeply")
    nan = text.replace(b'"translation": [1.2150299863455947e-11', b'"translation": [NaN', 1)
    c.add("json-syntax", "nan-token", ".gltf", nan, re.escape("nodes[4].translation[0]"), "expected a finite number")
    inf = text.replace(b'"translation": [1.2150299863455947e-11', b'"translation": [-Infinity', 1)
    c.add("json-syntax", "infinity-token", ".gltf", inf, re.escape("nodes[4].translation[0]"), "got -Infinity")
    huge = text.replace(b'"translation": [1.2150299863455947e-11', b'"translation": [1e400', 1)
    c.add("json-syntax", "overflowing-number", ".gltf", huge, re.escape("nodes[4].translation[0]"), "got Infinity")


def json_types(c: Corpus) -> None:
    """Values of the wrong JSON type (pygltflib would coerce many: "12" → [1, 2], 1.5 → 1)."""
    for name, data in {"array": b"[1, 2]", "string": b'"glTF"', "null": b"null", "number": b"2.0"}.items():
        c.add("json-types", f"top-level-{name}", ".gltf", data, "document", "expected an object")
    cases: list[tuple[str, str, str, Any, str]] = [
        ("asset-string", "skinned", "asset", "2.0", "expected an object, got string '2.0'"),
        ("version-number", "skinned", "asset.version", 2.0, "expected a string, got number 2.0"),
        ("nodes-object", "skinned", "nodes", {"0": {}}, "expected an array, got object"),
        ("node-number", "skinned", "nodes[1]", 5, "expected an object, got integer 5"),
        ("node-null", "skinned", "nodes[4]", None, "expected an object, got null"),
        ("children-string", "skinned", "nodes[1].children", "24", "expected an array, got string '24'"),
        ("child-fraction", "skinned", "nodes[1].children[0]", 2.5, "expected an integer, got number 2.5"),
        ("child-string", "skinned", "nodes[1].children[0]", "2", "expected an integer, got string '2'"),
        ("mesh-fraction", "skinned", "nodes[3].mesh", 0.5, "expected an integer, got number 0.5"),
        ("mesh-boolean", "skinned", "nodes[3].mesh", False, "expected an integer, got boolean false"),
        ("translation-string", "skinned", "nodes[1].translation", "050", "expected an array, got string '050'"),
        ("translation-boolean", "skinned", "nodes[1].translation[1]", True, "expected a finite number, got boolean"),
        ("translation-string-item", "skinned", "nodes[1].translation[0]", "0", "expected a finite number, got string"),
        ("rotation-null-item", "skinned", "nodes[2].rotation[0]", None, "expected a finite number, got null"),
        ("matrix-nested", "rigged_simple", "nodes[0].matrix", [[1, 0, 0, 0]] * 4, "got array of 4 items"),
        ("name-number", "skinned", "nodes[1].name", 7, "expected a string, got integer 7"),
        ("extensions-number", "skinned", "nodes[1].extensions", 5, "expected an object, got integer 5"),
        ("scene-string", "skinned", "scene", "0", "expected an integer, got string '0'"),
        ("scene-nodes-integer", "skinned", "scenes[0].nodes", 0, "expected an array, got integer 0"),
        ("count-string", "rigged_simple", "accessors[5].count", "50", "expected an integer, got string '50'"),
        ("count-fraction", "rigged_simple", "accessors[5].count", 49.5, "expected an integer, got number 49.5"),
        ("component-type-string", "rigged_simple", "accessors[3].componentType", "5126", "expected an integer"),
        ("type-number", "rigged_simple", "accessors[3].type", 3, "expected a string, got integer 3"),
        ("normalized-string", "rigged_simple", "accessors[4].normalized", "false", "expected true or false"),
        ("byte-offset-string", "rigged_simple", "accessors[3].byteOffset", "1920", "expected an integer"),
        ("view-length-float", "rigged_simple", "bufferViews[4].byteLength", 200.5, "expected an integer"),
        ("buffer-length-string", "rigged_simple", "buffers[0].byteLength", "11136", "expected an integer"),
        ("uri-number", "rigged_simple", "buffers[0].uri", 5, "expected a string, got integer 5"),
        ("primitives-object", "rigged_simple", "meshes[0].primitives", {}, "expected an array, got object"),
        ("attributes-array", "rigged_simple", "meshes[0].primitives[0].attributes", [1, 2, 3], "expected an object"),
        (
            "attribute-string",
            "rigged_simple",
            "meshes[0].primitives[0].attributes.POSITION",
            "3",
            "expected an integer",
        ),
        ("mode-string", "rigged_simple", "meshes[0].primitives[0].mode", "TRIANGLES", "expected an integer"),
        ("target-number", "rigged_simple", "animations[0].channels[0].target", 4, "expected an object, got integer 4"),
        ("target-node-string", "rigged_simple", "animations[0].channels[0].target.node", "4", "expected an integer"),
        ("target-path-number", "rigged_simple", "animations[0].channels[1].target.path", 1, "expected a string"),
        ("sampler-input-string", "rigged_simple", "animations[0].samplers[0].input", "5", "expected an integer"),
        ("interpolation-array", "rigged_simple", "animations[0].samplers[0].interpolation", ["LINEAR"], "string"),
        ("joints-string", "rigged_simple", "skins[0].joints", "34", "expected an array, got string '34'"),
        ("joint-fraction", "rigged_simple", "skins[0].joints[1]", 4.5, "expected an integer, got number 4.5"),
        ("skeleton-string", "rigged_simple", "skins[0].skeleton", "3", "expected an integer"),
        ("color-string", "rigged_simple", "materials[0].pbrMetallicRoughness.baseColorFactor", "red", "an array"),
        ("required-string", "skinned", "extensionsRequired", "KHR_draco_mesh_compression", "expected an array"),
        ("required-number-item", "skinned", "extensionsRequired", [5], "expected a string, got integer 5"),
        ("used-object", "skinned", "extensionsUsed", {"KHR_lights_punctual": True}, "expected an array"),
    ]
    for name, base, path, value, problem in cases:
        where = {"required-number-item": "extensionsRequired[0]", "matrix-nested": "nodes[0].matrix[0]"}.get(name, path)
        c.edit("json-types", name, base, setting(path, value), where, problem)
    # required by the schema; pygltflib would invent an asset with version "2.0"
    c.edit(
        "json-types", "asset-missing", "skinned", deleting("asset"), "asset", "the required property 'asset' is missing"
    )
    c.edit(
        "json-types",
        "asset-version-missing",
        "skinned",
        deleting("asset.version"),
        "asset.version",
        "the required property 'version' is missing",
    )


def glb(c: Corpus) -> None:
    """GLB containers: magic, version, lengths, chunk order and types, missing or short BIN."""
    box = c.bases["box_animated"]
    good = glb_of(box)
    (json_at, _, _), (bin_at, bin_length, _) = chunks(good)
    header = "GLB header"
    c.glb("glb", "magic-lowercase", b"gltf" + good[4:], header, "magic must be b'glTF', got b'gltf'")
    c.glb("glb", "magic-zero", bytes(4) + good[4:], header, r"magic must be b'glTF', got b'\\x00")
    for version in (0, 1, 3, 0xFFFFFFFF):
        c.glb("glb", f"version-{version}", with_u32(good, 4, version), header, f"version must be 2, got {version}")
    c.glb("glb", "length-past-end", with_u32(good, 8, len(good) + 4), header, "header claims")
    c.glb("glb", "length-below-header", with_u32(good, 8, 8), header, "header length 8 is less than")
    c.glb("glb", "length-cuts-json", with_u32(good, 8, json_at + 8 + 16), "GLB chunk 0", "claims")
    c.glb("glb", "truncated-header", good[:10], header, "truncated: 10 bytes")
    c.glb("glb", "truncated-in-json", good[:100], header, "header claims .* but the file has 100")
    c.glb("glb", "truncated-in-bin", good[:-16], header, "but the file has")
    cut = good[:-16]
    c.glb("glb", "truncated-length-fixed", with_u32(cut, 8, len(cut)), "GLB chunk 1", f"claims {bin_length} bytes")
    c.glb("glb", "json-length-past-end", with_u32(good, json_at, len(good)), "GLB chunk 0", "claims")
    c.glb("glb", "bin-length-past-end", with_u32(good, bin_at, bin_length + 4), "GLB chunk 1", "claims")
    swapped = good[:12] + good[bin_at:] + good[json_at:bin_at]
    c.glb("glb", "bin-chunk-first", swapped, "GLB chunk 0", "the first GLB chunk must be JSON")
    c.glb("glb", "json-type-garbage", with_u32(good, json_at + 4, 0xDEADBEEF), "GLB chunk 0", "must be JSON")
    doc = copy.deepcopy(box.json)
    del doc["buffers"][0]["uri"]
    c.glb("glb", "no-bin-chunk", container(json_chunk(doc)), "buffers[0]", "GLB file with a BIN chunk")
    c.glb("glb", "bin-chunk-short", container(json_chunk(doc), chunk(b"BIN\0", bytes(8))), "buffers[0]", "has 8")
    second_json = container(json_chunk(doc), chunk(b"BIN\0", box.blob), json_chunk(doc))
    c.glb("glb", "two-json-chunks", second_json, "GLB chunk 2", "a second JSON chunk")
    second_bin = container(json_chunk(doc), chunk(b"BIN\0", box.blob), chunk(b"BIN\0", box.blob))
    c.glb("glb", "two-bin-chunks", second_bin, "GLB chunk 2", "a second BIN chunk")
    c.glb("glb", "empty-json-chunk", container(chunk(b"JSON", b"")), "JSON chunk line 1 column 1", "not valid JSON")
    truncated = container(chunk(b"JSON", json.dumps(doc).encode()[:200]))
    c.glb("glb", "json-chunk-truncated", truncated, r"JSON chunk line 1 column \d+", "not valid JSON", pattern=True)
    c.glb("glb", "json-chunk-not-utf8", container(chunk(b"JSON", b"{\xff\xfe}")), "GLB chunk 0", "not UTF-8")
    c.glb("glb", "json-chunk-array", container(chunk(b"JSON", b"[]  ")), "document", "expected an object")
    c.glb("glb", "only-a-header", struct.pack("<4sII", b"glTF", 2, 12), header, "truncated: 12 bytes")
    rigged = c.bases["rigged_simple"]
    edited = copy.deepcopy(rigged.json)
    edited["bufferViews"][4]["byteOffset"] = len(rigged.blob) - 100
    c.glb("glb", "view-past-bin-chunk", glb_of(rigged, edited), "bufferViews[4]", r"exceeds buffers\[0\]")


def buffers(c: Corpus) -> None:
    """Buffers shorter than their views, views with impossible ranges, bad data: URIs."""
    r = "rigged_simple"
    c.edit(
        "buffers",
        "view-one-byte-past",
        r,
        setting("bufferViews[0].byteLength", 1129),
        "bufferViews[0]",
        r"byteOffset 10008 \+ byteLength 1129 exceeds buffers\[0\] \(11136 bytes\)",
    )
    c.edit(
        "buffers",
        "view-offset-past",
        r,
        setting("bufferViews[4].byteOffset", 11000),
        "bufferViews[4]",
        "exceeds buffers",
    )
    c.edit(
        "buffers", "view-length-zero", r, setting("bufferViews[4].byteLength", 0), "bufferViews[4]", "byteLength ≥ 1"
    )
    c.edit(
        "buffers",
        "view-offset-negative",
        r,
        setting("bufferViews[4].byteOffset", -8),
        "bufferViews[4]",
        "byteOffset must be ≥ 0",
    )
    c.edit(
        "buffers",
        "buffer-shorter-than-views",
        r,
        setting("buffers[0].byteLength", 10000),
        "bufferViews[4]",
        r"byteOffset 9808 \+ byteLength 200 exceeds buffers\[0\] \(10000 bytes\)",
    )
    c.edit(
        "buffers",
        "buffer-length-zero",
        r,
        setting("buffers[0].byteLength", 0),
        "buffers[0].byteLength",
        "must be a positive integer, got 0",
    )
    c.edit(
        "buffers",
        "buffer-length-negative",
        r,
        setting("buffers[0].byteLength", -1),
        "buffers[0].byteLength",
        "must be a positive integer, got -1",
    )
    c.edit(
        "buffers",
        "buffer-length-missing",
        r,
        deleting("buffers[0].byteLength"),
        "buffers[0].byteLength",
        "must be a positive integer, got None",
    )
    c.edit(
        "buffers",
        "bin-file-missing",
        r,
        setting("buffers[0].uri", "rigged_simple_missing.bin"),
        "buffers[0].uri",
        "cannot read 'rigged_simple_missing.bin'",
    )
    c.files["gltf/rigged_simple_short.bin"] = c.bases[r].blob[:5000]
    c.edit(
        "buffers",
        "bin-file-short",
        r,
        setting("buffers[0].uri", "rigged_simple_short.bin"),
        "buffers[0].uri",
        "'rigged_simple_short.bin' has 5000 bytes but byteLength claims 11136",
    )
    payload = base64.b64encode(c.bases[r].blob).decode()
    uris = {
        "data-uri-not-base64": ("data:application/octet-stream," + payload, "must be base64-encoded"),
        "data-uri-bad-base64": ("data:application/octet-stream;base64," + payload[:-8] + "!!!!====", "invalid base64"),
        "data-uri-short": ("data:application/octet-stream;base64," + payload[: len(payload) // 2], "byteLength claims"),
        "data-uri-no-comma": ("data:application/octet-stream;base64", "must be base64-encoded"),
    }
    for name, (uri, problem) in uris.items():
        where = "buffers[0]" if name == "data-uri-short" else "buffers[0].uri"
        c.edit("buffers", name, r, setting("buffers[0].uri", uri), where, problem)
    c.edit("buffers", "no-uri-in-gltf", r, deleting("buffers[0].uri"), "buffers[0]", "a buffer without uri")


def uris(c: Corpus) -> None:
    """Buffer URIs that leave the model's folder, absolute paths and schemes: refused, never read.

    (An image behind such a URI is refused too, but the model loads without that texture: see
    ``tests/io/test_malformed_corpus.py``.)
    """
    refused = "must be a relative path inside the model's folder"
    escapes = {
        "parent-etc-passwd": "../../etc/passwd",
        "parent-sibling": "../skinned.bin",
        "nested-escape": "sub/../../skinned.bin",
        "percent-encoded-dots": "%2E%2E/%2E%2E/etc/passwd",
        "percent-encoded-slash": "..%2F..%2Fetc%2Fpasswd",
        "backslashes": "..\\..\\etc\\passwd",
        "absolute-posix": "/etc/passwd",
        "absolute-windows": "C:\\Windows\\win.ini",
        "unc-share": "\\\\server\\share\\skinned.bin",
        "file-url": "file:///etc/passwd",
        "http-url": "https://example.com/skinned.bin",
        "protocol-relative": "//example.com/skinned.bin",
        "dot-dot-only": "..",
    }
    for name, uri in escapes.items():
        c.edit("uris", f"buffer-{name}", "skinned", setting("buffers[0].uri", uri), "buffers[0].uri", refused)
    c.edit(
        "uris", "buffer-nul-byte", "skinned", setting("buffers[0].uri", "skinned.bin\0.png"), "buffers[0].uri", "NUL"
    )


def huge_claims(c: Corpus) -> None:
    """Lengths and counts of a gigabyte or more: refused before anything that size is allocated."""
    s, r = "skinned", "rigged_simple"
    small = "data:application/octet-stream;base64,AAAAAAAAAAA="
    c.edit(
        "huge-claims",
        "buffer-1gib-data-uri",
        s,
        setting("buffers[0]", {"byteLength": GIB, "uri": small}),
        "buffers[0]",
        f"byteLength claims {GIB} bytes but the data has 8",
    )
    c.edit(
        "huge-claims",
        "buffer-1gib-file",
        s,
        setting("buffers[0].byteLength", GIB),
        "buffers[0].uri",
        f"has \\d+ bytes but byteLength claims {GIB}",
    )
    c.edit(
        "huge-claims",
        "buffer-2pow53",
        s,
        setting("buffers[0].byteLength", 2**53),
        "buffers[0].uri",
        f"byteLength claims {2**53}",
    )
    c.edit(
        "huge-claims",
        "view-1gib",
        r,
        setting("bufferViews[4].byteLength", GIB),
        "bufferViews[4]",
        f"byteLength {GIB} exceeds",
    )
    c.edit(
        "huge-claims",
        "accessor-count-1g",
        r,
        setting("accessors[5].count", GIB),
        "accessors[5]",
        f"{GIB} elements of 4 bytes",
    )
    c.edit(
        "huge-claims",
        "accessor-offset-1gib",
        r,
        setting("accessors[5].byteOffset", GIB),
        "accessors[5]",
        f"from byteOffset {GIB}",
    )
    c.edit("huge-claims", "sparse-count-1g", s, sparse_edit(count=GIB), "accessors[12].sparse.count", f"got {GIB}")
    for name, accessor, count in (("zero-filled-1g-times", 5, GIB), ("zero-filled-16m-positions", 3, 1 << 24)):
        c.edit(
            "huge-claims",
            name,
            r,
            edits(deleting(f"accessors[{accessor}].bufferView"), setting(f"accessors[{accessor}].count", count)),
            f"accessors[{accessor}].count",
            f"count {count} without a bufferView would zero-fill",
        )
    box = c.bases["box_animated"]
    good = glb_of(box)
    (json_at, _, _), (bin_at, _, _) = chunks(good)
    c.glb("huge-claims", "glb-header-1gib", with_u32(good, 8, GIB), "GLB header", f"claims {GIB} bytes")
    c.glb("huge-claims", "glb-bin-chunk-1gib", with_u32(good, bin_at, GIB), "GLB chunk 1", f"claims {GIB} bytes")
    c.glb(
        "huge-claims",
        "glb-json-chunk-4gib",
        with_u32(good, json_at, 0xFFFFFFFF),
        "GLB chunk 0",
        f"claims {0xFFFFFFFF} bytes",
    )
    doc = copy.deepcopy(box.json)
    doc["buffers"][0]["byteLength"] = GIB
    c.glb("huge-claims", "glb-buffer-1gib", glb_of(box, doc), "buffers[0]", f"byteLength claims {GIB} bytes")


def sparse_edit(
    indices: list[int] | None = None,
    values: Any = None,
    *,
    count: int | None = None,
    index_type: int = 5123,
    index_bytes: bytes | None = None,
    value_bytes: bytes | None = None,
    drop: str | None = None,
) -> Edit:
    """Replace the first clip's rotation output (skinned: 3 keys) by a copy with sparse storage.

    The new accessor is ``accessors[12]``; its base is the original rotations.
    """
    indices = [1] if indices is None else indices
    values = [quat_z(0.5)] * len(indices) if values is None else values

    def apply(d: Doc) -> None:
        output = d.get("animations[0].samplers[0].output")
        original = d.get(f"accessors[{output}]")
        index_view = d.view(index_bytes if index_bytes is not None else pack_elements(indices, index_type, "SCALAR"))
        value_view = d.view(value_bytes if value_bytes is not None else pack_elements(values, 5126, "VEC4"))
        sparse = {
            "count": len(indices) if count is None else count,
            "indices": {"bufferView": index_view, "componentType": index_type},
            "values": {"bufferView": value_view},
        }
        if drop is not None:
            del sparse[drop]
        d.json["accessors"].append({**original, "sparse": sparse})
        assert len(d.json["accessors"]) == 13
        d.set("animations[0].samplers[0].output", 12)

    return apply


def sparse(c: Corpus) -> None:
    """Sparse indices out of range, unsorted or repeated; counts and storage that do not fit."""
    w = "accessors[12].sparse"
    cases: list[tuple[str, Edit, str, str]] = [
        ("index-out-of-range", sparse_edit([0, 3]), f"{w}.indices", "index 3 is out of range for an accessor of 3"),
        ("index-max-uint32", sparse_edit([4294967295], index_type=5125), f"{w}.indices", "index 4294967295"),
        ("indices-unsorted", sparse_edit([2, 0]), f"{w}.indices", "strictly increasing, got 2 then 0"),
        ("indices-repeated", sparse_edit([1, 1]), f"{w}.indices", "strictly increasing, got 1 then 1"),
        ("count-zero", sparse_edit(count=0), f"{w}.count", r"integer in \[1, 3\], got 0"),
        ("count-above-accessor", sparse_edit([0, 1, 2, 2], count=4), f"{w}.count", r"integer in \[1, 3\], got 4"),
        (
            "indices-float",
            sparse_edit(index_type=5126, index_bytes=struct.pack("<f", 1.0)),
            f"{w}.indices.componentType",
            "must be 5121, 5123 or 5125, got 5126",
        ),
        ("indices-signed", sparse_edit(index_type=5122), f"{w}.indices.componentType", "got 5122"),
        ("indices-view-short", sparse_edit([0, 1], index_bytes=struct.pack("<H", 0)), f"{w}.indices", "do not fit"),
        (
            "values-view-short",
            sparse_edit([0, 1], value_bytes=struct.pack("<4f", 0, 0, 0, 1)),
            f"{w}.values",
            "do not fit",
        ),
        ("no-indices", sparse_edit(drop="indices"), w, "needs both indices and values"),
        ("no-values", sparse_edit(drop="values"), w, "needs both indices and values"),
        (
            "value-nan",
            sparse_edit([1], [[0.0, 0.0, float("nan"), 1.0]]),
            "animations[0].samplers[0].output",
            "value 1 is not finite",
        ),
        (
            "value-zero-quaternion",
            sparse_edit([2], [[0.0, 0.0, 0.0, 0.0]]),
            "animations[0].samplers[0].output",
            "quaternion 2 is zero",
        ),
    ]
    for name, edit, where, problem in cases:
        c.edit("sparse", name, "skinned", edit, where, problem)


def index_range(c: Corpus) -> None:
    """An index past the end (or negative) everywhere the format has one."""
    s = "skinned"
    places = [
        ("scene", "scene", "scenes", 1),
        ("scene-node", "scenes[0].nodes[0]", "nodes", 5),
        ("node-child", "nodes[1].children[0]", "nodes", 5),
        ("node-mesh", "nodes[3].mesh", "meshes", 1),
        ("node-skin", "nodes[3].skin", "skins", 1),
        ("skin-joint", "skins[0].joints[2]", "nodes", 5),
        ("skin-skeleton", "skins[0].skeleton", "nodes", 5),
        ("skin-inverse-binds", "skins[0].inverseBindMatrices", "accessors", 12),
        ("channel-sampler", "animations[0].channels[0].sampler", "samplers in animations[0]", 2),
        ("channel-target-node", "animations[0].channels[0].target.node", "nodes", 5),
        ("sampler-input", "animations[0].samplers[0].input", "accessors", 12),
        ("sampler-output", "animations[0].samplers[1].output", "accessors", 12),
        ("attribute-position", "meshes[0].primitives[0].attributes.POSITION", "accessors", 12),
        ("attribute-joints", "meshes[0].primitives[0].attributes.JOINTS_0", "accessors", 12),
        ("attribute-weights", "meshes[0].primitives[0].attributes.WEIGHTS_1", "accessors", 12),
        ("primitive-indices", "meshes[0].primitives[0].indices", "accessors", 12),
        ("primitive-material", "meshes[0].primitives[0].material", "materials", 0),
        ("accessor-view", "accessors[7].bufferView", "bufferViews", 12),
        ("view-buffer", "bufferViews[7].buffer", "buffers", 1),
    ]
    for name, path, what, size in places:
        for label, value in (("past-end", size), ("negative", -1)):
            c.edit(
                "index-range",
                f"{name}-{label}",
                s,
                setting(path, value),
                path,
                f"index {value} is out of range: the file has {size} {re.escape(what)}",
            )
    c.edit(
        "index-range",
        "node-child-2pow31",
        s,
        setting("nodes[1].children[0]", 2**31),
        "nodes[1].children[0]",
        f"index {2**31} is out of range",
    )
    texture = edits(
        setting("materials", [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]),
        setting("meshes[0].primitives[0].material", 0),
    )
    c.edit(
        "index-range",
        "material-texture",
        s,
        texture,
        "materials[0].pbrMetallicRoughness.baseColorTexture.index",
        "index 0 is out of range: the file has 0 textures",
    )
    source = edits(texture, setting("textures", [{"source": 3}]))
    c.edit("index-range", "texture-source", s, source, "textures[0].source", "index 3 is out of range")
    image_view = edits(
        source, setting("textures", [{"source": 0}]), setting("images", [{"bufferView": 40, "mimeType": "image/png"}])
    )
    c.edit("index-range", "image-view", s, image_view, "images[0].bufferView", "index 40 is out of range")
    sparse_view = edits(sparse_edit([1]), lambda d: d.set("accessors[12].sparse.values.bufferView", 99))
    c.edit(
        "index-range",
        "sparse-values-view",
        s,
        sparse_view,
        "accessors[12].sparse.values.bufferView",
        "index 99 is out of range",
    )
    c.edit(
        "index-range",
        "rigged-joint",
        "rigged_simple",
        setting("skins[0].joints[0]", 5),
        "skins[0].joints[0]",
        "index 5 is out of range: the file has 5 nodes",
    )
    c.edit(
        "index-range",
        "box-target-node",
        "box_animated",
        setting("animations[0].channels[1].target.node", 4),
        "animations[0].channels[1].target.node",
        "index 4 is out of range: the file has 4 nodes",
    )


def hierarchy(c: Corpus) -> None:
    """Two parents, cycles, scene roots that are not roots, skins whose joints are not one tree."""
    s, r = "skinned", "rigged_simple"
    cases: list[tuple[str, str, Edit, str, str]] = [
        (
            "two-parents",
            s,
            setting("nodes[3].children", [4]),
            "nodes[3].children[0]",
            r"node 4 has two parents \(nodes 2 and 3\)",
        ),
        (
            "child-listed-twice",
            s,
            setting("nodes[2].children", [4, 4]),
            "nodes[2].children[1]",
            "node 4 is listed twice",
        ),
        (
            "rigged-two-parents",
            r,
            setting("nodes[0].children", [1, 4]),
            "nodes[3].children[0]",
            r"node 4 has two parents \(nodes 0 and 3\)",
        ),
        ("self-child", s, setting("nodes[1].children", [1]), "nodes[1].children[0]", "lists itself as a child"),
        (
            "cycle-2",
            s,
            edits(setting("nodes[0].children", [3]), setting("nodes[2].children", [1])),
            "nodes",
            r"cycle: nodes\[1\] → nodes\[2\] → nodes\[1\]",
        ),
        (
            "cycle-3",
            s,
            edits(setting("nodes[0].children", [3]), setting("nodes[4].children", [1])),
            "nodes",
            r"cycle: nodes\[1\] → nodes\[4\] → nodes\[2\] → nodes\[1\]",
        ),
        ("rigged-cycle-through-root", r, setting("nodes[4].children", [0]), "nodes", "has a cycle"),
        (
            "scene-node-not-root",
            s,
            setting("scenes[0].nodes", [0, 2]),
            "scenes[0].nodes[1]",
            "node 2 is not a root: it is a child of node 1",
        ),
        ("scene-node-twice", s, setting("scenes[0].nodes", [0, 0]), "scenes[0].nodes[1]", "listed twice"),
        (
            "joints-no-common-root",
            s,
            edits(
                lambda d: d.json["nodes"].append({"name": "loose"}),
                setting("scenes[0].nodes", [0, 5]),
                setting("skins[0].joints", [4, 1, 5]),
                deleting("skins[0].skeleton"),
            ),
            "skins[0].joints",
            r"joints must have a common root, but they lie in separate trees \(root nodes \[0, 5\]\)",
        ),
        ("joints-repeated", s, setting("skins[0].joints", [4, 1, 1]), "skins[0].joints", "more than once"),
        ("joints-empty", s, setting("skins[0].joints", []), "skins[0].joints", "at least one joint"),
    ]
    for name, base, edit, where, problem in cases:
        c.edit("hierarchy", name, base, edit, where, problem)


def ibm_edit(count: int, matrices: Any = None) -> Edit:
    """New inverse bind matrices for skin 0: ``count`` identities, or ``matrices``."""
    values = [np.eye(4)] * count if matrices is None else matrices
    return lambda d: d.set("skins[0].inverseBindMatrices", d.accessor(values, 5126, "MAT4"))


def skins(c: Corpus) -> None:
    """Inverse bind matrices: too few, singular, not affine, not finite, wrong type."""
    w = "skins[0].inverseBindMatrices"
    scaled = np.diag([0.0, 1.0, 1.0, 1.0])
    flat = np.eye(4)
    flat[:3, 2] = flat[:3, 0] + flat[:3, 1]  # third column in the plane of the first two
    projective = np.eye(4)
    projective[3] = [0.0, 0.0, 0.5, 1.0]
    nan = np.eye(4)
    nan[1, 3] = np.nan
    cases: list[tuple[str, str, Edit, str, str]] = [
        ("too-few", "skinned", ibm_edit(2), w, "has 2 matrices for 3 joints"),
        ("rigged-too-few", "rigged_simple", setting("accessors[9].count", 1), w, "has 1 matrices for 2 joints"),
        ("one", "skinned", ibm_edit(1), w, "has 1 matrices for 3 joints"),
        ("zero-matrix", "skinned", ibm_edit(3, [np.eye(4), np.zeros((4, 4)), np.eye(4)]), w, "matrix 1"),
        ("zero-scale", "skinned", ibm_edit(3, [np.eye(4), np.eye(4), scaled]), w, "matrix 2 is singular"),
        ("coplanar-columns", "skinned", ibm_edit(3, [flat, np.eye(4), np.eye(4)]), w, "matrix 0 is singular"),
        (
            "projective",
            "skinned",
            ibm_edit(3, [np.eye(4), projective, np.eye(4)]),
            w,
            r"matrix 1 is not affine \(last row",
        ),
        ("nan", "skinned", ibm_edit(3, [np.eye(4), np.eye(4), nan]), w, "must be finite"),
        (
            "inf",
            "rigged_simple",
            lambda d: d.set(w, d.accessor([np.full((4, 4), np.inf)] * 2, 5126, "MAT4")),
            w,
            "must be finite",
        ),
        ("mat3", "rigged_simple", setting("accessors[9].type", "MAT3"), w, "must be a FLOAT MAT4 accessor"),
        (
            "unsigned-short",
            "skinned",
            lambda d: d.set(w, d.accessor([np.eye(4, dtype=int)] * 3, 5123, "MAT4")),
            w,
            "must be a FLOAT MAT4 accessor, got componentType 5123",
        ),
    ]
    for name, base, edit, where, problem in cases:
        c.edit("skins", name, base, edit, where, problem)


def animations(c: Corpus) -> None:
    """Key times not increasing, NaN, infinite or negative; output counts; bad quaternion keys."""
    s, r = "skinned", "rigged_simple"
    rig = c.bases[r]
    rig_times = rig.read(5)[:, 0].astype(np.float64)
    win = "animations[0].samplers[0].input"
    out = "animations[0].samplers[0].output"

    def times(values: Any) -> Edit:
        return lambda d: d.set(win, d.accessor(np.asarray(values, dtype=np.float64), 5126, "SCALAR"))

    def rotations(values: Any) -> Edit:
        return lambda d: d.set(out, d.accessor(np.asarray(values, dtype=np.float64), 5126, "VEC4"))

    swapped = rig_times.copy()
    swapped[[10, 11]] = swapped[[11, 10]]
    shifted = rig_times - 1.0
    nan_t, inf_t = float("nan"), float("inf")
    cases: list[tuple[str, str, Edit, str, str]] = [
        ("times-decreasing", s, times([0.0, 2.0, 1.0]), win, r"non-decreasing, got times\[1\] = 2 > times\[2\] = 1"),
        ("times-reversed", s, times([2.0, 1.0, 0.0]), win, r"times\[0\] = 2 > times\[1\] = 1"),
        ("rigged-times-swapped", r, times(swapped), win, r"got times\[10\] = .* > times\[11\]"),
        ("times-nan-first", s, times([nan_t, 1.0, 2.0]), win, "key time 0 is nan"),
        ("times-nan-last", s, times([0.0, 1.0, nan_t]), win, "key time 2 is nan"),
        ("times-inf", s, times([0.0, 1.0, inf_t]), win, "key time 2 is inf"),
        ("times-minus-inf", s, times([-inf_t, 1.0, 2.0]), win, "key time 0 is -inf"),
        ("times-negative-first", s, times([-0.5, 1.0, 2.0]), win, r"key times must be ≥ 0, got times\[0\] = -0.5"),
        ("rigged-times-negative", r, times(shifted), win, r"key times must be ≥ 0, got times\[0\] = -0.958"),
        (
            "output-linear-short",
            s,
            rotations([quat_z(0), quat_z(1)]),
            out,
            r"LINEAR needs 1 value\(s\) per key: 3 for 3 key times, got 2",
        ),
        (
            "output-step-long",
            s,
            setting("animations[0].samplers[1].output", 8),
            "animations[0].samplers[1].output",
            r"translation values must be VEC3, got VEC4",
        ),
        (
            "output-step-count",
            s,
            lambda d: d.set("animations[0].samplers[1].output", d.accessor([[0.0, 0.0, 0.0]] * 4, 5126, "VEC3")),
            "animations[0].samplers[1].output",
            r"STEP needs 1 value\(s\) per key: 3 for 3 key times, got 4",
        ),
        (
            "output-cubic-x1",
            s,
            setting("animations[0].samplers[0].interpolation", "CUBICSPLINE"),
            out,
            r"CUBICSPLINE needs 3 value\(s\) per key: 9 for 3 key times, got 3",
        ),
        (
            "rigged-output-cubic-x1",
            r,
            setting("animations[0].samplers[2].interpolation", "CUBICSPLINE"),
            "animations[0].samplers[2].output",
            r"CUBICSPLINE needs 3 value\(s\) per key: 150 for 50 key times, got 50",
        ),
        (
            "output-cubic-x3-plus-1",
            s,
            edits(setting("animations[0].samplers[0].interpolation", "CUBICSPLINE"), rotations([quat_z(0)] * 10)),
            out,
            "9 for 3 key times, got 10",
        ),
        ("rotation-zero-key", s, rotations([quat_z(0), [0, 0, 0, 0], quat_z(1)]), out, "quaternion 1 is zero"),
        ("rotation-nan-key", s, rotations([quat_z(0), quat_z(1), [0, 0, nan_t, 1]]), out, "value 2 is not finite"),
        ("rotation-inf-key", s, rotations([[inf_t, 0, 0, 1], quat_z(1), quat_z(2)]), out, "value 0 is not finite"),
        (
            "rotation-cubic-zero-key",
            s,
            edits(
                setting("animations[0].samplers[0].interpolation", "CUBICSPLINE"),
                rotations([[0, 0, 0, 0], quat_z(0), [0, 0, 0, 0]] + [[0, 0, 0, 0]] * 6),
            ),
            out,
            "quaternion 1 is zero",
        ),
        (
            "rotation-integer-unnormalized",
            s,
            lambda d: d.set(out, d.accessor([[0, 0, 0, 127]] * 3, 5120, "VEC4")),
            out,
            "must be FLOAT or normalized integers, got componentType 5120",
        ),
        (
            "translation-nan-value",
            r,
            lambda d: d.set("animations[0].samplers[0].output", d.accessor([[0.0, nan_t, 0.0]] * 50, 5126, "VEC3")),
            "animations[0].samplers[0].output",
            "value 0 is not finite",
        ),
        (
            "interpolation-unknown",
            s,
            setting("animations[0].samplers[0].interpolation", "SMOOTH"),
            "animations[0].samplers[0].interpolation",
            "interpolation must be one of",
        ),
        (
            "interpolation-lowercase",
            r,
            setting("animations[0].samplers[1].interpolation", "linear"),
            "animations[0].samplers[1].interpolation",
            "got 'linear'",
        ),
        (
            "path-unknown",
            s,
            setting("animations[0].channels[0].target.path", "color"),
            "animations[0].channels[0].target.path",
            "got 'color'",
        ),
        (
            "path-capitalised",
            r,
            setting("animations[0].channels[1].target.path", "Rotation"),
            "animations[0].channels[1].target.path",
            "got 'Rotation'",
        ),
        (
            "path-missing",
            r,
            deleting("animations[0].channels[2].target.path"),
            "animations[0].channels[2].target.path",
            "got None",
        ),
        (
            "target-missing",
            s,
            deleting("animations[0].channels[0].target"),
            "animations[0].channels[0]",
            "a channel needs a target",
        ),
        (
            "duplicate-target",
            r,
            setting("animations[0].channels[2].target.path", "rotation"),
            "animations[0].channels[2].target",
            "channels 1 and 2 both animate rotation of node 4",
        ),
        (
            "input-missing",
            s,
            deleting("animations[0].samplers[0].input"),
            win,
            "expected an integer index of accessors, got None",
        ),
        (
            "input-integer-accessor",
            r,
            setting("animations[0].samplers[0].input", 0),
            win,
            "key times must be a FLOAT SCALAR accessor, got componentType 5123",
        ),
        (
            "box-input-vec3",
            "box_animated",
            setting("animations[0].samplers[1].input", 9),
            "animations[0].samplers[1].input",
            "FLOAT SCALAR accessor, got componentType 5126 type VEC3",
        ),
        (
            "weights-without-morph-targets",
            s,
            setting("animations[0].channels[1].target.path", "weights"),
            "animations[0].channels[1].target",
            "animates the morph weights of node 1, whose mesh has no morph targets",
        ),
        (
            "weights-output-count",
            s,
            edits(
                two_morph_targets,
                lambda d: d.json["animations"][0]["channels"].append(
                    {"sampler": 2, "target": {"node": 3, "path": "weights"}}
                ),
                lambda d: d.json["animations"][0]["samplers"].append(
                    {"input": d.get("animations[0].samplers[0].input"), "output": d.accessor([0.0, 0.5, 1.0])}
                ),
            ),
            "animations[0].samplers[2].output",
            r"LINEAR needs 1 value\(s\) per key × 2 morph targets: 6 for 3 key times, got 3",
        ),
        (
            "weights-output-vec2",
            s,
            edits(
                two_morph_targets,
                lambda d: d.json["animations"][0]["channels"].append(
                    {"sampler": 2, "target": {"node": 3, "path": "weights"}}
                ),
                lambda d: d.json["animations"][0]["samplers"].append(
                    {
                        "input": d.get("animations[0].samplers[0].input"),
                        "output": d.accessor([[0.0, 1.0]] * 3, 5126, "VEC2"),
                    }
                ),
            ),
            "animations[0].samplers[2].output",
            "weights values must be SCALAR, got VEC2",
        ),
    ]
    for name, base, edit, where, problem in cases:
        c.edit("animations", name, base, edit, where, problem)


def two_morph_targets(d: Doc) -> None:
    """Give the skinned base's strip two morph targets that move its vertices up and to the side."""
    d.set(
        "meshes[0].primitives[0].targets",
        [
            {"POSITION": d.accessor([[0.0, 0.1, 0.0]] * 4, 5126, "VEC3")},
            {"POSITION": d.accessor([[0.2, 0.0, 0.0]] * 4, 5126, "VEC3")},
        ],
    )


def influences(c: Corpus) -> None:
    """JOINTS past the skin's joint count; negative, NaN and all-zero weights; unpaired sets."""
    r, s = "rigged_simple", "skinned"
    rig = c.bases[r]
    joints, weights = rig.read(1).astype(np.int64), rig.read(4).astype(np.float64)
    jw = "meshes[0].primitives[0].attributes.JOINTS_0"
    ww = "meshes[0].primitives[0].attributes.WEIGHTS_0"

    def rig_joints(vertex: int, value: int) -> Edit:
        changed = joints.copy()
        changed[vertex, 1] = value
        return lambda d: d.set(jw, d.accessor(changed, 5123, "VEC4"))

    def rig_weights(vertex: int, row: list[float]) -> Edit:
        changed = weights.copy()
        changed[vertex] = row
        return lambda d: d.set(ww, d.accessor(changed, 5126, "VEC4"))

    nan = float("nan")
    cases: list[tuple[str, str, Edit, str, str]] = [
        ("joint-equal-to-count", r, rig_joints(7, 2), jw, "vertex 7 uses joint 2 but skin 0 has 2 joints"),
        ("joint-65535", r, rig_joints(159, 65535), jw, "vertex 159 uses joint 65535"),
        (
            "skinned-joint-3",
            s,
            lambda d: d.set(jw, d.accessor([[0, 0, 0, 0], [0, 0, 3, 0], [0, 0, 0, 0], [0, 0, 0, 0]], 5121, "VEC4")),
            jw,
            "vertex 1 uses joint 3 but skin 0 has 3 joints",
        ),
        (
            "skinned-joint-second-set",
            s,
            lambda d: d.set(
                "meshes[0].primitives[0].attributes.JOINTS_1",
                d.accessor([[0, 0, 0, 0], [2, 1, 0, 0], [0, 0, 0, 0], [1, 9, 0, 0]], 5123, "VEC4"),
            ),
            "meshes[0].primitives[0].attributes.JOINTS_1",
            "vertex 3 uses joint 9",
        ),
        ("weight-negative", r, rig_weights(3, [1.25, -0.25, 0.0, 0.0]), ww, "vertex 3 has"),
        ("weight-nan", r, rig_weights(4, [nan, 1.0, 0.0, 0.0]), ww, "weights must be finite and ≥ 0, vertex 4"),
        ("weight-inf", r, rig_weights(5, [float("inf"), 0.0, 0.0, 0.0]), ww, "vertex 5"),
        (
            "weights-all-zero-one-vertex",
            r,
            rig_weights(6, [0.0, 0.0, 0.0, 0.0]),
            ww,
            "1 of 160 vertices have all weights 0 .first: vertex 6.",
        ),
        (
            "weights-all-zero-every-vertex",
            r,
            lambda d: d.set(ww, d.accessor(np.zeros((160, 4)), 5126, "VEC4")),
            ww,
            "160 of 160 vertices have all weights 0",
        ),
        (
            "weights-all-zero-two-sets",
            s,
            edits(
                lambda d: d.set(ww, d.accessor(np.zeros((4, 4)), 5126, "VEC4")),
                lambda d: d.set(
                    "meshes[0].primitives[0].attributes.WEIGHTS_1", d.accessor(np.zeros((4, 4)), 5126, "VEC4")
                ),
            ),
            ww,
            "4 of 4 vertices have all weights 0",
        ),
        (
            "weights-unnormalized-bytes",
            r,
            lambda d: d.set(ww, d.accessor(np.full((160, 4), 64), 5121, "VEC4")),
            ww,
            "must be VEC4 of FLOAT or normalized UNSIGNED_BYTE/SHORT",
        ),
        ("weights-vec3", r, setting("accessors[4].type", "VEC3"), ww, "must be VEC4 of FLOAT"),
        ("joints-float", r, setting("accessors[1].componentType", 5126), jw, "must be VEC4 of UNSIGNED_BYTE"),
        ("joints-normalized", r, setting("accessors[1].normalized", True), jw, "not normalized"),
        (
            "unpaired-weights",
            s,
            deleting("meshes[0].primitives[0].attributes.WEIGHTS_1"),
            "meshes[0].primitives[0].attributes",
            r"got JOINTS \[0, 1\] and WEIGHTS \[0\]",
        ),
        (
            "set-gap",
            s,
            edits(
                lambda d: d.set(
                    "meshes[0].primitives[0].attributes.JOINTS_2", d.get("meshes[0].primitives[0].attributes.JOINTS_1")
                ),
                lambda d: d.set(
                    "meshes[0].primitives[0].attributes.WEIGHTS_2",
                    d.get("meshes[0].primitives[0].attributes.WEIGHTS_1"),
                ),
                deleting("meshes[0].primitives[0].attributes.JOINTS_1"),
                deleting("meshes[0].primitives[0].attributes.WEIGHTS_1"),
            ),
            "meshes[0].primitives[0].attributes",
            r"got JOINTS \[0, 2\]",
        ),
        (
            "no-influences",
            r,
            edits(
                deleting("meshes[0].primitives[0].attributes.JOINTS_0"),
                deleting("meshes[0].primitives[0].attributes.WEIGHTS_0"),
            ),
            "meshes[0].primitives[0].attributes",
            "needs JOINTS_0 and WEIGHTS_0",
        ),
        ("joints-count-short", r, setting("accessors[1].count", 159), jw, "JOINTS_0 has 159 elements"),
    ]
    for name, base, edit, where, problem in cases:
        c.edit("influences", name, base, edit, where, problem)


def extensions(c: Corpus) -> None:
    """``extensionsRequired`` naming what Ossa cannot do (instancing places geometry; unknown names)."""
    for name, required in {
        "instancing": ["EXT_mesh_gpu_instancing"],
        "made-up": ["OSSA_not_an_extension"],
        "one-of-two": ["KHR_mesh_quantization", "EXT_mesh_gpu_instancing"],
        "empty-name": [""],
    }.items():
        for base in ("skinned", "rigged_simple"):
            c.edit(
                "extensions",
                f"{base}-{name}",
                base,
                edits(setting("extensionsUsed", required), setting("extensionsRequired", required)),
                "extensionsRequired",
                "requires extensions Ossa does not support",
            )


def nodes_meshes(c: Corpus) -> None:
    """Node transforms that are not finite or not TRS; meshes with missing or inconsistent data."""
    s, r, b = "skinned", "rigged_simple", "box_animated"
    shear = [1, 0, 0, 0, 0.5, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    zero_column = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    positions = c.bases[r].read(3).astype(np.float64)
    positions[17, 1] = np.nan
    normals = c.bases[b].read(1).astype(np.float64)
    normals[3, 0] = np.nan

    def scale_chain(d: Doc) -> None:
        """Nine nodes under the head, each scaled by 3e38 (within float32): their product overflows."""
        d.set("nodes[4].children", [5])
        for k in range(5, 14):
            d.json["nodes"].append({"scale": [3e38] * 3, **({"children": [k + 1]} if k < 13 else {})})

    p = "meshes[0].primitives[0]"
    cases: list[tuple[str, str, Edit, str, str]] = [
        (
            "translation-short",
            s,
            setting("nodes[1].translation", [0, 1]),
            "nodes[1].translation",
            "expected 3 finite numbers",
        ),
        (
            "rotation-five",
            s,
            setting("nodes[2].rotation", [0, 0, 0, 1, 0]),
            "nodes[2].rotation",
            "expected 4 finite numbers",
        ),
        ("rotation-zero", s, setting("nodes[2].rotation", [0, 0, 0, 0]), "nodes[2].rotation", "quaternion 0 is zero"),
        (
            "box-rotation-zero",
            b,
            setting("nodes[0].rotation", [0.0, 0.0, 0.0, 0.0]),
            "nodes[0].rotation",
            "quaternion 0 is zero",
        ),
        ("matrix-shear", r, setting("nodes[1].matrix", shear), "nodes[1].matrix", "not decomposable"),
        (
            "matrix-projective",
            r,
            setting("nodes[0].matrix", [1, 0, 0, 0.5, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
            "nodes[0].matrix",
            "must be affine",
        ),
        ("matrix-zeros", r, setting("nodes[3].matrix", [0] * 16), "nodes[3].matrix", "must be affine"),
        ("matrix-zero-column", r, setting("nodes[3].matrix", zero_column), "nodes[3].matrix", "zero-length basis"),
        (
            "matrix-fifteen",
            r,
            setting("nodes[0].matrix", [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0]),
            "nodes[0].matrix",
            "expected 16 finite numbers",
        ),
        ("matrix-and-trs", r, setting("nodes[3].translation", [0, 0, 0]), "nodes[3]", "not both"),
        (
            "positions-nan",
            r,
            lambda d: d.set(f"{p}.attributes.POSITION", d.accessor(positions, 5126, "VEC3")),
            f"{p}.attributes.POSITION",
            "positions must be finite",
        ),
        (
            "normals-nan",
            b,
            lambda d: d.set(f"{p}.attributes.NORMAL", d.accessor(normals, 5126, "VEC3")),
            f"{p}.attributes.NORMAL",
            "normals must be finite",
        ),
        (
            "texcoords-inf",
            b,
            lambda d: d.set(f"{p}.attributes.TEXCOORD_0", d.accessor([[0.0, float("inf")]] * 96, 5126, "VEC2")),
            f"{p}.attributes.TEXCOORD_0",
            "texture coordinates must be finite",
        ),
        (
            "rotation-overflow",
            s,
            setting("nodes[2].rotation", [0.0, 0.0, 1e308, 1e308]),
            "nodes[2].rotation",
            "exceeds the float32 range",
        ),
        (
            "matrix-overflow",
            r,
            setting("nodes[3].matrix", [1e308, 0, 0, 0, 1e308, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]),
            "nodes[3].matrix",
            "exceeds the float32 range",
        ),
        (
            "world-overflow",
            s,
            scale_chain,
            "nodes[13]",
            "rest world transform overflows",
        ),
        (
            "normal-count",
            b,
            setting("accessors[1].count", 95),
            f"{p}.attributes.NORMAL",
            "NORMAL has 95 elements but POSITION has 96",
        ),
        ("mode-unknown", r, setting(f"{p}.mode", 7), f"{p}.mode", "mode must be one of"),
        (
            "index-past-vertices",
            r,
            lambda d: d.set(f"{p}.indices", d.accessor([0, 1, 160], 5123, "SCALAR")),
            f"{p}.indices",
            "index 2 is 160 but the primitive has 160 vertices",
        ),
        ("indices-float", b, setting("accessors[0].componentType", 5126), f"{p}.indices", "UNSIGNED_BYTE/SHORT/INT"),
        ("mesh-without-primitives", s, setting("meshes[0].primitives", []), "meshes[0].primitives", "at least one"),
        (
            "targets-differ-between-primitives",
            s,
            edits(
                two_morph_targets,
                lambda d: d.json["meshes"][0]["primitives"].append({"attributes": {"POSITION": 0}}),
            ),
            "meshes[0].primitives[1].targets",
            "has 0 morph targets but primitive 0 has 2",
        ),
        (
            "target-attribute-not-in-primitive",
            s,
            lambda d: d.set(f"{p}.targets", [{"TANGENT": d.accessor([[0.0, 0.1, 0.0]] * 4, 5126, "VEC3")}]),
            f"{p}.targets[0].TANGENT",
            "the primitive has no TANGENT attribute",
        ),
        (
            "target-count",
            s,
            lambda d: d.set(f"{p}.targets", [{"POSITION": d.accessor([[0.0, 0.1, 0.0]] * 3, 5126, "VEC3")}]),
            f"{p}.targets[0].POSITION",
            "has 3 elements but POSITION has 4",
        ),
        (
            "target-vec4",
            s,
            lambda d: d.set(f"{p}.targets", [{"POSITION": d.accessor([[0.0, 0.1, 0.0, 0.0]] * 4, 5126, "VEC4")}]),
            f"{p}.targets[0].POSITION",
            "POSITION displacements must be VEC3, got VEC4",
        ),
        (
            "target-nan",
            s,
            lambda d: d.set(f"{p}.targets", [{"NORMAL": d.accessor([[0.0, np.nan, 0.0]] * 4, 5126, "VEC3")}]),
            f"{p}.targets[0].NORMAL",
            "NORMAL displacements must be finite",
        ),
        (
            "mesh-weights-length",
            s,
            edits(two_morph_targets, setting("meshes[0].weights", [0.5])),
            "meshes[0].weights",
            "has 1 entries but mesh 0 has 2 morph targets",
        ),
        (
            "node-weights-length",
            s,
            edits(two_morph_targets, setting("nodes[3].weights", [0.5, 0.5, 0.5])),
            "nodes[3].weights",
            "has 3 entries but mesh 0 has 2 morph targets",
        ),
        (
            "node-weights-without-mesh",
            s,
            setting("nodes[1].weights", [0.5]),
            "nodes[1].weights",
            "weights need a mesh with morph targets on the same node",
        ),
    ]
    # Not here, because the Khronos validator only warns about them and the loader reads them as a
    # GPU draws them (tests/io/test_gltf_validation.py): a primitive without POSITION
    # (MESH_PRIMITIVE_NO_POSITION, skipped) and index counts that leave a triangle or line
    # incomplete (MESH_PRIMITIVE_INCOMPATIBLE_MODE, the incomplete element dropped).
    for name, base, edit, where, problem in cases:
        c.edit("nodes-meshes", name, base, edit, where, problem)


def views_accessors(c: Corpus) -> None:
    """Views shorter than their accessors, byteStride smaller than an element, unknown types."""
    r, b = "rigged_simple", "box_animated"
    cases: list[tuple[str, str, Edit, str, str]] = [
        (
            "count-one-past",
            r,
            setting("accessors[3].count", 161),
            "accessors[3]",
            r"161 elements of 12 bytes \(stride 12\) from byteOffset 1920 need 3852 bytes but "
            r"bufferViews\[2\] has 3840",
        ),
        ("offset-past", r, setting("accessors[5].byteOffset", 4), "accessors[5]", "need 204 bytes"),
        (
            "offset-negative",
            r,
            setting("accessors[5].byteOffset", -4),
            "accessors[5].byteOffset",
            "must be a non-negative integer",
        ),
        ("ibm-count-past", r, setting("accessors[9].count", 3), "accessors[9]", "need 192 bytes"),
        ("box-times-past", b, setting("accessors[8].count", 5), "accessors[8]", "need 28 bytes"),
        (
            "stride-8-vec3",
            r,
            setting("bufferViews[2].byteStride", 8),
            "accessors[3]",
            "byteStride 8 of bufferViews.2. is smaller than one VEC3 element",
        ),
        ("stride-4-vec4", r, setting("bufferViews[3].byteStride", 4), "accessors[4]", "smaller than one VEC4"),
        ("stride-4-joints", r, setting("bufferViews[1].byteStride", 4), "accessors[1]", "smaller than one VEC4"),
        (
            "stride-256",
            r,
            setting("bufferViews[3].byteStride", 256),
            "bufferViews[3].byteStride",
            r"in \[4, 252\] and a multiple of 4, got 256",
        ),
        ("stride-0", r, setting("bufferViews[3].byteStride", 0), "bufferViews[3].byteStride", "got 0"),
        (
            "stride-14",
            r,
            setting("bufferViews[2].byteStride", 14),
            "bufferViews[2].byteStride",
            "multiple of 4, got 14",
        ),
        ("normalized-float", r, setting("accessors[3].normalized", True), "accessors[3].normalized", "may only"),
        ("count-zero", r, setting("accessors[5].count", 0), "accessors[5].count", "positive integer, got 0"),
        ("count-negative", r, setting("accessors[5].count", -50), "accessors[5].count", "positive integer, got -50"),
        ("count-missing", r, deleting("accessors[5].count"), "accessors[5].count", "positive integer, got None"),
        (
            "position-vec2",
            r,
            setting("accessors[3].type", "VEC2"),
            "meshes[0].primitives[0].attributes.POSITION",
            "POSITION must be VEC3, got VEC2",
        ),
        (
            "rotation-output-vec3",
            r,
            setting("accessors[7].type", "VEC3"),
            "animations[0].samplers[1].output",
            "rotation values must be VEC4, got VEC3",
        ),
    ]
    cases.extend(
        (
            f"component-type-{ctype}",
            r,
            setting("accessors[3].componentType", ctype),
            "accessors[3].componentType",
            f"componentType must be one of .*, got {ctype}",
        )
        for ctype in (0, 5124, 5127, 5130, -5126)
    )
    cases.extend(
        (
            f"type-{atype.strip().lower() or 'empty'}{'-space' if atype.endswith(' ') else ''}",
            r,
            setting("accessors[3].type", atype),
            "accessors[3].type",
            f"type must be one of .*, got {re.escape(repr(atype))}",
        )
        for atype in ("VEC5", "vec3", "MAT5", "", "SCALAR ")
    )
    for name, base, edit, where, problem in cases:
        c.edit("views-accessors", name, base, edit, where, problem)


# ---------------------------------------------------------------------------------------------
# BVH


BVH = """HIERARCHY
ROOT hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT chest
  {
    OFFSET 0 10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 10 0
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.0333333
0 90 0 0 0 0 0 0 0
0 91 0 5 0 0 10 0 0
0 92 0 10 0 0 20 0 0
"""


def bvh(c: Corpus) -> None:
    """BVH files beyond tests/io/test_bvh.py: bytes that are not text, overflow, absurd nesting and counts."""
    good = BVH.encode()

    def add(name: str, data: bytes, line: int, problem: str) -> None:
        c.add("bvh", name, ".bvh", data, f"line {line}", problem)

    rng = np.random.default_rng(11)
    add("binary-noise", rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(), 1, "expected 'HIERARCHY'")
    add("utf16", BVH.encode("utf-16"), 1, "expected 'HIERARCHY'")
    add("nul-bytes", good.replace(b"OFFSET 0 10 0\n    CHANNELS", b"OFFSET 0 10 0\0\n    CHANNELS", 1), 8, "OFFSET z")
    add("truncated-in-hierarchy", good[: good.index(b"End Site")], 10, "unexpected end of HIERARCHY")
    add("truncated-in-frame", good[:-6], 21, "expected 9 numbers")
    add("value-overflow", good.replace(b"0 91 0 5", b"0 91 0 5e999", 1), 20, "frame value 4 is '5e999'")
    add("value-minus-overflow", good.replace(b"0 92 0 10", b"-1e400 92 0 10", 1), 21, "frame value 1")
    add("offset-overflow", good.replace(b"OFFSET 0 10 0", b"OFFSET 0 1e999 0", 1), 8, "OFFSET y must be finite")
    add("frame-time-inf", good.replace(b"0.0333333", b"inf"), 18, "positive number of seconds, got inf")
    add("frame-time-overflow", good.replace(b"0.0333333", b"1e999"), 18, "positive number of seconds, got inf")
    add(
        "frames-one-billion",
        good.replace(b"Frames: 3", b"Frames: 1000000000"),
        22,
        "'Frames: 1000000000' .line 17. does not match the 3 frame lines",
    )
    add(
        "channels-four-billion",
        good.replace(b"CHANNELS 3", b"CHANNELS 4000000000"),
        10,
        "unknown channel 'End' of joint 'chest'",
    )
    depth = 1000  # past Python's recursion limit; the reader stops at 512 levels below the root
    deep = "HIERARCHY\nROOT j0\n{\n OFFSET 0 0 0\n CHANNELS 3 Zrotation Xrotation Yrotation\n"
    deep += "".join(f"JOINT j{k}\n{{\n OFFSET 0 1 0\n" for k in range(1, depth))
    deep += "}\n" * depth + "MOTION\nFrames: 1\nFrame Time: 0.1\n0 0 0\n"
    add(f"nesting-{depth}", deep.encode(), 6 + 3 * 512, "joints nested more than 512 levels deep")  # JOINT j513


# ---------------------------------------------------------------------------------------------
# fuzz regressions: documents hypothesis found (tests/io/test_fuzz_gltf.py), kept as cases


def fuzz_regressions(c: Corpus) -> None:
    """Failing examples tests/io/test_fuzz_gltf.py found, replayed as explicit edits."""
    found: list[tuple[str, str, Edit, str, str]] = [
        (
            "primitive-without-attributes",
            "box_animated",
            deleting("meshes[1].primitives[0].attributes"),
            "meshes[1].primitives[0].attributes",
            "the required property 'attributes' is missing",
        ),
        ("meshes-null", "rigged_simple", setting("meshes", None), "meshes", "expected an array, got null"),
        ("matrix-entry-1e308", "rigged_simple", setting("nodes[3].matrix[10]", 1e308), "nodes[3].matrix", "float32"),
        (
            "rotation-component-1e308",
            "rigged_simple",
            setting("nodes[4].rotation[3]", 1e308),
            "nodes[4].rotation",
            "float32",
        ),
        ("scale-component-1e308", "skinned", setting("nodes[4].scale[2]", 1e308), "nodes[4].scale", "float32"),
    ]
    for name, base, edit, where, problem in found:
        c.edit("fuzz-regressions", name, base, edit, where, problem)


FAMILIES: tuple[Callable[[Corpus], None], ...] = (
    json_syntax,
    json_types,
    glb,
    buffers,
    uris,
    huge_claims,
    views_accessors,
    sparse,
    index_range,
    hierarchy,
    skins,
    animations,
    influences,
    extensions,
    nodes_meshes,
    fuzz_regressions,
    bvh,
)


def build() -> Corpus:
    """Every base and case, in memory."""
    bases = {
        b.name: b for b in (skinned_base(), scene_base(), khronos_base("rigged_simple"), khronos_base("box_animated"))
    }
    corpus = Corpus(bases)
    for base in bases.values():
        corpus.files[f"gltf/{base.name}.bin"] = base.blob
        corpus.files[f"gltf/base-{base.name}.gltf"] = json.dumps(base.json).encode()
    for family in FAMILIES:
        family(corpus)
    manifest = {
        "bases": sorted(f"gltf/base-{name}.gltf" for name in bases),
        "cases": [vars(case) for case in corpus.cases],
    }
    corpus.files["manifest.json"] = (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode()
    corpus.files["README.md"] = readme(corpus).encode()
    return corpus


def readme(corpus: Corpus) -> str:
    counts: dict[str, int] = {}
    for case in corpus.cases:
        counts[case.family] = counts.get(case.family, 0) + 1
    docs = {f.__name__.replace("_", "-"): (f.__doc__ or "").strip().replace("``", "`") for f in FAMILIES}
    rows = "\n".join(f"| `{name}` | {count} | {docs.get(name, '')} |" for name, count in counts.items())
    return f"""# Malformed-asset corpus

Generated by `python -m tests.data.make_malformed` (tests/data/make_malformed.py); do not edit by
hand. Each file breaks one rule of glTF 2.0 or BVH; `manifest.json` lists, for each case, its family,
the location the loader must name (a JSON path, a GLB chunk or a BVH line, as a regular expression)
and a regular expression of the problem. `tests/io/test_malformed_corpus.py` loads every case and
checks that it raises an `AssetError` naming the file, the location and the problem, within 1 s of
CPU time and 16 MiB of traced memory (so the gigabyte claims are refused before any allocation).

The cases are edits of valid bases, `gltf/base-*.gltf`, whose buffers are the `.bin` files
next to them: `skinned` and `scene` (hand-made, tests/io/gltf_builder.py) and the Khronos sample models
`rigged_simple` (RiggedSimple) and `box_animated` (BoxAnimated), © Cesium, CC BY 4.0
(https://github.com/KhronosGroup/glTF-Sample-Models), JSON as published with the base64 buffer
moved into a `.bin`. Cases needing new binary data carry it in a `data:` buffer of their own.

| family | cases | what it breaks |
| --- | --- | --- |
{rows}

{len(corpus.cases)} cases in all.
"""


def write(corpus: Corpus, out: Path) -> None:
    """Replace ``out`` by the corpus files."""
    if out.exists():
        shutil.rmtree(out)
    for name, data in sorted(corpus.files.items()):
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else OUT
    corpus = build()
    write(corpus, out)
    print(f"{len(corpus.cases)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
