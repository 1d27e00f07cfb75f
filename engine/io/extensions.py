"""glTF extensions: which ones Ossa reads, what it does with each, and checked access to their JSON.

:data:`KNOWN` says, for every extension Ossa knows, what it does with it (``ossa inspect`` lists
it per file) and whether a file that **requires** it still loads. Geometry and animation decide
(``extensionsRequired`` naming one Ossa cannot decode is refused, as the spec asks); materials
and lights that the renderer cannot draw are ignored with one warning per file, never refused:
the model still draws with its base colour. The stages that use an extension record what they
did (:meth:`GltfDocument.note_extension <engine.io.gltf.GltfDocument.note_extension>`), which
replaces the default text; :func:`extension_report` closes a load with one entry per extension
the file declares or uses, and one warning for each ignored one.

The JSON of extensions is not type-checked by :mod:`engine.io.gltf_schema` (it holds any
extension's data), so the readers here check each value they take, naming its JSON path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.io.gltf_schema import describe

if TYPE_CHECKING:
    from engine.io.gltf import GltfDocument

#: What the material renderer draws, quoted by the extensions it ignores.
_NOT_DRAWN = "not drawn (Ossa draws base colour, emissive and one light)"


@dataclass(frozen=True)
class Extension:
    """What Ossa does with one glTF extension.

    Attributes
    ----------
    does
        One line for ``ossa inspect``: what Ossa does with it.
    loads_required
        Whether a file that lists it in ``extensionsRequired`` loads.
    ignored
        Whether Ossa ignores it (a file that uses it gets one warning saying so).
    """

    does: str
    loads_required: bool = True
    ignored: bool = False


KNOWN: dict[str, Extension] = {
    "KHR_mesh_quantization": Extension("quantized accessors read (integer and normalized attributes)"),
    "EXT_meshopt_compression": Extension("compressed buffer views decoded (meshoptimizer)"),
    "KHR_draco_mesh_compression": Extension("compressed primitives decoded (DracoPy)"),
    "EXT_texture_webp": Extension("WebP images decoded (Pillow)"),
    "EXT_texture_avif": Extension("AVIF images decoded (Pillow)"),
    "KHR_texture_basisu": Extension("KTX2 images cannot be decoded (no decoder installed): drawn untextured"),
    "KHR_texture_transform": Extension("applied to the base-colour texture coordinates at load"),
    "KHR_materials_unlit": Extension("drawn unlit (base colour only)"),
    "KHR_materials_emissive_strength": Extension("emissive factor scaled by the strength"),
    "KHR_animation_pointer": Extension("node translation/rotation/scale and node/mesh weights pointers played"),
    "KHR_lights_punctual": Extension("lights not used (the programs light the scene)", ignored=True),
    "KHR_materials_variants": Extension("the default material is drawn; variants ignored", ignored=True),
    "KHR_xmp_json_ld": Extension("metadata, not read"),
    "KHR_xmp": Extension("metadata, not read"),
    "EXT_mesh_gpu_instancing": Extension(
        "instances not drawn: each node draws its mesh once", loads_required=False, ignored=True
    ),
    "VRM": Extension("VRM 0.x humanoid bone map read; the rest of VRM ignored"),
    "VRMC_vrm": Extension("VRM 1.0 humanoid bone map read; the rest of VRM ignored"),
    **{
        name: Extension(_NOT_DRAWN + "; ignored", ignored=True)
        for name in (
            "KHR_materials_anisotropy",
            "KHR_materials_clearcoat",
            "KHR_materials_diffuse_transmission",
            "KHR_materials_dispersion",
            "KHR_materials_ior",
            "KHR_materials_iridescence",
            "KHR_materials_pbrSpecularGlossiness",
            "KHR_materials_sheen",
            "KHR_materials_specular",
            "KHR_materials_transmission",
            "KHR_materials_volume",
            "VRMC_materials_mtoon",
            "VRMC_springBone",
            "VRMC_node_constraint",
        )
    },
}


@dataclass(frozen=True)
class ExtensionUse:
    """One extension a file declares or uses, and what Ossa did with it.

    Attributes
    ----------
    name
        The extension's name.
    required
        Whether the file lists it in ``extensionsRequired``.
    did
        What Ossa did (one line).
    """

    name: str
    required: bool
    did: str


def check_required(doc: GltfDocument) -> None:
    """Refuse a file whose ``extensionsRequired`` names an extension Ossa cannot load."""
    required = doc.json.get("extensionsRequired", [])
    supported = sorted(name for name, known in KNOWN.items() if known.loads_required)
    unsupported = sorted({name for name in required if name not in supported})
    if unsupported:
        raise doc.error(
            f"requires extensions Ossa does not support: {unsupported} (supported: {supported})",
            "extensionsRequired",
        )


def extension_report(doc: GltfDocument) -> tuple[ExtensionUse, ...]:
    """Every extension ``doc`` declares or a stage used, with what Ossa did; warns once per ignored one."""
    required = set(doc.json.get("extensionsRequired", []))
    names = dict.fromkeys([*doc.json.get("extensionsUsed", []), *required, *doc.extension_notes])
    report = []
    for name in names:
        known = KNOWN.get(name)
        did = doc.extension_notes.get(name)
        if did is None:
            did = known.does if known is not None else "not known to Ossa; ignored (the file's core data is read)"
            if known is None or known.ignored:
                doc.warn(f"{name}: {did}", "extensionsUsed")
        report.append(ExtensionUse(name, name in required, did))
    return tuple(report)


# --------------------------------------------------------------------------------------------
# checked access to extension JSON


def extension_object(doc: GltfDocument, owner: Any, name: str, where: str) -> dict[str, Any] | None:
    """``owner["extensions"][name]`` (``owner``: the JSON object at ``where``) checked to be an object, or ``None``."""
    if not isinstance(owner, dict):
        return None
    extensions = owner.get("extensions")
    if not isinstance(extensions, dict) or name not in extensions:
        return None
    value = extensions[name]
    if not isinstance(value, dict):
        raise doc.error(f"expected an object, got {describe(value)}", f"{where}.extensions.{name}")
    return value


def integer(doc: GltfDocument, obj: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    """``obj[key]`` as a non-negative integer (``default`` when absent; required when ``None``)."""
    value = obj.get(key, default)
    if value is None:
        raise doc.error(f"the required property {key!r} is missing", f"{where}.{key}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise doc.error(f"expected a non-negative integer, got {describe(value)}", f"{where}.{key}")
    return value


def number(doc: GltfDocument, obj: dict[str, Any], key: str, where: str, default: float) -> float:
    """``obj[key]`` as a finite number (``default`` when absent)."""
    value = obj.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise doc.error(f"expected a finite number, got {describe(value)}", f"{where}.{key}")
    return float(value)


def number_list(doc: GltfDocument, obj: dict[str, Any], key: str, where: str, default: list[float]) -> list[float]:
    """``obj[key]`` as ``len(default)`` finite numbers (``default`` when absent)."""
    value = obj.get(key, default)
    if (
        not isinstance(value, list)
        or len(value) != len(default)
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value)
    ):
        raise doc.error(f"expected {len(default)} finite numbers, got {describe(value)}", f"{where}.{key}")
    return [float(v) for v in value]


def string(doc: GltfDocument, obj: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
    """``obj[key]`` as a string (``default`` when absent; required when ``None``)."""
    value = obj.get(key, default)
    if value is None:
        raise doc.error(f"the required property {key!r} is missing", f"{where}.{key}")
    if not isinstance(value, str):
        raise doc.error(f"expected a string, got {describe(value)}", f"{where}.{key}")
    return value
