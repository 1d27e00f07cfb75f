"""JSON types of the glTF 2.0 properties, checked before pygltflib builds its objects.

pygltflib (through dataclasses_json) converts whatever it finds instead of refusing it:
``"children": "12"`` becomes ``[1, 2]``, ``"mesh": 0.5`` becomes ``0``, ``"count": "50"``
becomes ``50``, ``"translation": [true, "1", 2]`` becomes ``[1.0, 1.0, 2.0]``, and a ``null``
node crashes later with an ``AttributeError``. :func:`check_types` walks the parsed JSON first
and reports the first value of the wrong type with its JSON path. It checks types only: ranges,
counts, references and (but for :data:`REQUIRED`) presence are checked where they are used
(:mod:`engine.io.gltf`, :mod:`engine.io.build`). Unknown properties (extensions' data,
``extras``) are not checked; a known property set to ``null`` is an error, as in the glTF schema
(pygltflib fails on ``"meshes": null``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

#: Scalar kinds, then compound ones: ``("object", name)``, ``("array", item)``, ``("map", value)``.
INTEGER, NUMBER, STRING, BOOLEAN, ANY = "integer", "number", "string", "boolean", "any"

_NUMBERS = ("array", NUMBER)
_INDICES = ("array", INTEGER)
_TEXTURE_INFO = ("object", "textureInfo")

#: Properties of each glTF object type that have a fixed JSON type.
OBJECTS: dict[str, dict[str, Any]] = {
    "glTF": {
        "asset": ("object", "asset"),
        "scene": INTEGER,
        "scenes": ("array", ("object", "scene")),
        "nodes": ("array", ("object", "node")),
        "meshes": ("array", ("object", "mesh")),
        "skins": ("array", ("object", "skin")),
        "animations": ("array", ("object", "animation")),
        "accessors": ("array", ("object", "accessor")),
        "bufferViews": ("array", ("object", "bufferView")),
        "buffers": ("array", ("object", "buffer")),
        "materials": ("array", ("object", "material")),
        "textures": ("array", ("object", "texture")),
        "images": ("array", ("object", "image")),
        "samplers": ("array", ("object", "sampler")),
        "cameras": ("array", ("object", "camera")),
        "extensionsUsed": ("array", STRING),
        "extensionsRequired": ("array", STRING),
    },
    "asset": {"version": STRING, "minVersion": STRING, "generator": STRING, "copyright": STRING},
    "scene": {"nodes": _INDICES, "name": STRING},
    "node": {
        "children": _INDICES,
        "mesh": INTEGER,
        "skin": INTEGER,
        "camera": INTEGER,
        "translation": _NUMBERS,
        "rotation": _NUMBERS,
        "scale": _NUMBERS,
        "matrix": _NUMBERS,
        "weights": _NUMBERS,
        "name": STRING,
    },
    "mesh": {"primitives": ("array", ("object", "primitive")), "weights": _NUMBERS, "name": STRING},
    "primitive": {
        "attributes": ("map", INTEGER),
        "indices": INTEGER,
        "material": INTEGER,
        "mode": INTEGER,
        "targets": ("array", ("map", INTEGER)),
    },
    "skin": {"joints": _INDICES, "skeleton": INTEGER, "inverseBindMatrices": INTEGER, "name": STRING},
    "animation": {
        "channels": ("array", ("object", "channel")),
        "samplers": ("array", ("object", "animationSampler")),
        "name": STRING,
    },
    "channel": {"sampler": INTEGER, "target": ("object", "target")},
    "target": {"node": INTEGER, "path": STRING},
    "animationSampler": {"input": INTEGER, "output": INTEGER, "interpolation": STRING},
    "accessor": {
        "bufferView": INTEGER,
        "byteOffset": INTEGER,
        "componentType": INTEGER,
        "normalized": BOOLEAN,
        "count": INTEGER,
        "type": STRING,
        "max": _NUMBERS,
        "min": _NUMBERS,
        "sparse": ("object", "sparse"),
        "name": STRING,
    },
    "sparse": {"count": INTEGER, "indices": ("object", "sparseIndices"), "values": ("object", "sparseValues")},
    "sparseIndices": {"bufferView": INTEGER, "byteOffset": INTEGER, "componentType": INTEGER},
    "sparseValues": {"bufferView": INTEGER, "byteOffset": INTEGER},
    "bufferView": {
        "buffer": INTEGER,
        "byteOffset": INTEGER,
        "byteLength": INTEGER,
        "byteStride": INTEGER,
        "target": INTEGER,
        "name": STRING,
    },
    "buffer": {"uri": STRING, "byteLength": INTEGER, "name": STRING},
    "material": {
        "pbrMetallicRoughness": ("object", "pbrMetallicRoughness"),
        "normalTexture": _TEXTURE_INFO,
        "occlusionTexture": _TEXTURE_INFO,
        "emissiveTexture": _TEXTURE_INFO,
        "emissiveFactor": _NUMBERS,
        "alphaMode": STRING,
        "alphaCutoff": NUMBER,
        "doubleSided": BOOLEAN,
        "name": STRING,
    },
    "pbrMetallicRoughness": {
        "baseColorFactor": _NUMBERS,
        "baseColorTexture": _TEXTURE_INFO,
        "metallicFactor": NUMBER,
        "roughnessFactor": NUMBER,
        "metallicRoughnessTexture": _TEXTURE_INFO,
    },
    "textureInfo": {"index": INTEGER, "texCoord": INTEGER, "scale": NUMBER, "strength": NUMBER},
    "texture": {"sampler": INTEGER, "source": INTEGER, "name": STRING},
    "image": {"uri": STRING, "mimeType": STRING, "bufferView": INTEGER, "name": STRING},
    "sampler": {"magFilter": INTEGER, "minFilter": INTEGER, "wrapS": INTEGER, "wrapT": INTEGER, "name": STRING},
    "camera": {
        "type": STRING,
        "perspective": ("map", NUMBER),
        "orthographic": ("map", NUMBER),
        "name": STRING,
    },
}

#: Required properties pygltflib cannot do without (it fails on a primitive without attributes) or
#: would invent (a missing ``asset`` becomes version "2.0"); the loader checks the other required
#: properties where it reads them.
REQUIRED: dict[str, tuple[str, ...]] = {"glTF": ("asset",), "asset": ("version",), "primitive": ("attributes",)}

_SCALARS: dict[str, tuple[Callable[[Any], bool], str]] = {
    INTEGER: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    NUMBER: (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "a finite number",
    ),
    STRING: (lambda v: isinstance(v, str), "a string"),
    BOOLEAN: (lambda v: isinstance(v, bool), "true or false"),
}


def describe(value: Any) -> str:
    """A JSON value as a message shows it: ``string '12'``, ``number 0.5``, ``Infinity``, ``null``.

    Examples
    --------
    >>> [describe(v) for v in (None, True, 3, 0.5, float("-inf"), "12", [1, 2], {})]
    ['null', 'boolean true', 'integer 3', 'number 0.5', '-Infinity', "string '12'", 'array of 2 items', 'object']
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value[:40]!r}" + ("…" if len(value) > 40 else "")
    if isinstance(value, list):
        return f"array of {len(value)} items"
    return "object" if isinstance(value, dict) else type(value).__name__


def check_types(document: Any, error: Callable[[str, str], Exception]) -> None:
    """Raise ``error(problem, json_path)`` at the first value of ``document`` of the wrong type.

    Parameters
    ----------
    document
        The parsed JSON of a glTF file.
    error
        Makes the exception to raise from a problem (``"expected an integer, got string '0'"``)
        and a JSON path (``"nodes[3].mesh"``; ``"document"`` for the top level).
    """
    _check(document, ("object", "glTF"), "document", error)


def _check(value: Any, kind: Any, where: str, error: Callable[[str, str], Exception]) -> None:
    if isinstance(kind, str):
        if kind == ANY:
            return
        accepts, expected = _SCALARS[kind]
        if not accepts(value):
            raise error(f"expected {expected}, got {describe(value)}", where)
        return
    form, inner = kind
    if form == "array":
        if not isinstance(value, list):
            raise error(f"expected an array, got {describe(value)}", where)
        for i, item in enumerate(value):
            _check(item, inner, f"{where}[{i}]", error)
        return
    if not isinstance(value, dict):
        raise error(f"expected an object, got {describe(value)}", where)
    prefix = "" if where == "document" else f"{where}."
    if form == "map":
        for key, item in value.items():
            _check(item, inner, f"{prefix}{key}", error)
        return
    properties = OBJECTS[inner]
    for key in REQUIRED.get(inner, ()):
        if value.get(key) is None:
            raise error(f"the required property {key!r} is missing", f"{prefix}{key}")
    for key, item in value.items():
        if key in properties:
            _check(item, properties[key], f"{prefix}{key}", error)
        elif key == "extensions":
            _check(item, ("map", ANY), f"{prefix}{key}", error)
