"""glTF meshes → :class:`~engine.anim.mesh.MeshData` per primitive, for each mesh node of the scene.

Every primitive mode is read: triangle strips and fans become triangle lists, line strips and
loops become line lists, points stay points (glTF skins and morphs every mode). What the Khronos
validator only warns about is read the way a GPU draws it, with an
:class:`~engine.errors.OssaWarning`: a primitive without ``POSITION`` is skipped (the spec says
so), and an index or vertex count that does not fill its last triangle or line
(``MESH_PRIMITIVE_INCOMPATIBLE_MODE``) drops that incomplete element. Skinned
primitives get all their ``JOINTS_n``/``WEIGHTS_n`` sets, remapped to the skin skeleton's order
and L1-normalised; morph targets' ``POSITION`` and ``NORMAL`` displacements are kept, and each
mesh node carries its default morph weights (``node.weights``, else ``mesh.weights``, else 0).
Materials give a base colour factor and, when asked, the decoded base-colour texture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.mesh import MeshData
from engine.io.draco import decode_draco
from engine.io.fields import numbers
from engine.io.gltf import GltfDocument, _items
from engine.io.materials import Materials
from engine.io.skins import SkinData
from engine.math._checks import FloatArray, IntArray, readonly_copy

#: Weights whose per-vertex sum is further than this from 1 (beyond quantisation) are reported.
WEIGHT_SUM_TOLERANCE = 1e-3

MODE_NAMES = {
    0: "POINTS",
    1: "LINES",
    2: "LINE_LOOP",
    3: "LINE_STRIP",
    4: "TRIANGLES",
    5: "TRIANGLE_STRIP",
    6: "TRIANGLE_FAN",
}
"""glTF primitive modes."""

#: Morph-target attributes that change what Ossa draws; other target attributes are not applied.
MORPHED_ATTRIBUTES = ("POSITION", "NORMAL")


@dataclass(frozen=True, eq=False)
class MeshNode:
    """A node of the scene that instantiates a mesh.

    Attributes
    ----------
    node
        Hierarchy index of the node (into :attr:`GltfAsset.hierarchy`).
    gltf_node
        The node's index in the file.
    mesh
        glTF mesh index.
    skin
        glTF skin index, or ``None`` for a rigid mesh.
    primitives
        One :class:`MeshData` per primitive (every mode), in the node's space; skinned
        primitives' joint indices refer to ``skins[skin].skeleton``.
    primitive_indices
        The glTF primitive index of each entry of ``primitives`` (a primitive without
        ``POSITION`` is skipped with a warning, so indices may have gaps).
    weights
        ``(T,)`` default morph-target weights of this instance (``node.weights``, else
        ``mesh.weights``, else zeros); ``T`` is 0 for a mesh without morph targets.
    """

    node: int
    gltf_node: int
    mesh: int
    skin: int | None
    primitives: tuple[MeshData, ...]
    primitive_indices: tuple[int, ...]
    weights: FloatArray


def mesh_target_counts(doc: GltfDocument) -> tuple[int, ...]:
    """Number of morph targets of each mesh; every primitive of a mesh must have as many (glTF 2.0)."""
    counts = []
    for m, mesh in enumerate(_items(doc.gltf.meshes)):
        primitives = _items(mesh.primitives)
        if not primitives:
            raise doc.error("a mesh needs at least one primitive", f"meshes[{m}].primitives")
        targets = [len(_items(p.targets)) for p in primitives]
        for p, count in enumerate(targets):
            if count != targets[0]:
                raise doc.error(
                    f"has {count} morph targets but primitive 0 has {targets[0]}; every primitive of a mesh "
                    "needs the same number",
                    f"meshes[{m}].primitives[{p}].targets",
                )
        counts.append(targets[0])
    return tuple(counts)


def node_target_counts(doc: GltfDocument, mesh_targets: Sequence[int]) -> tuple[int, ...]:
    """Number of morph targets of each node's mesh (0 for a node without a mesh)."""
    counts = []
    for n, node in enumerate(_items(doc.gltf.nodes)):
        if node.mesh is None:
            counts.append(0)
        else:
            counts.append(mesh_targets[doc.index(node.mesh, len(mesh_targets), f"nodes[{n}].mesh", "meshes")])
    return tuple(counts)


def read_mesh_nodes(
    doc: GltfDocument,
    order: Sequence[int],
    drawn: int,
    skins: Sequence[SkinData],
    mesh_targets: Sequence[int],
    *,
    textures: bool,
) -> tuple[MeshNode, ...]:
    """The mesh nodes among the first ``drawn`` of ``order`` (the hierarchy: the scene's nodes first).

    Their primitives are read once per (mesh, skin) (:func:`engine.io.nodes.joint_trees` put
    every joint of their skins in ``order``).
    """
    materials = Materials(doc, textures)
    result = []
    cache: dict[tuple[int, int | None], tuple[tuple[int, MeshData], ...]] = {}
    for h, n in enumerate(order[:drawn]):
        node = doc.gltf.nodes[n]
        if node.mesh is None:
            if "weights" in doc.json["nodes"][n]:  # pygltflib drops node.weights
                raise doc.error("weights need a mesh with morph targets on the same node", f"nodes[{n}].weights")
            continue
        mesh = doc.index(node.mesh, len(mesh_targets), f"nodes[{n}].mesh", "meshes")
        skin = None if node.skin is None else doc.index(node.skin, len(skins), f"nodes[{n}].skin", "skins")
        if (mesh, skin) not in cache:
            skin_data = None if skin is None else skins[skin]
            primitives = _items(doc.gltf.meshes[mesh].primitives)
            read = [
                (p, _primitive(doc, mesh, p, primitive, skin_data, mesh_targets[mesh], materials))
                for p, primitive in enumerate(primitives)
            ]
            cache[mesh, skin] = tuple((p, data) for p, data in read if data is not None)
        weights = _default_weights(doc, n, mesh, mesh_targets[mesh])
        kept = cache[mesh, skin]
        result.append(MeshNode(h, n, mesh, skin, tuple(d for _, d in kept), tuple(p for p, _ in kept), weights))
    return tuple(result)


def _default_weights(doc: GltfDocument, n: int, m: int, targets: int) -> FloatArray:
    """``node.weights``, else ``mesh.weights``, else zeros: ``(targets,)``."""
    candidates = (  # from the JSON: pygltflib drops node.weights and turns a missing mesh.weights into []
        (doc.json["nodes"][n].get("weights"), f"nodes[{n}].weights"),
        (doc.json["meshes"][m].get("weights"), f"meshes[{m}].weights"),
    )
    for value, where in candidates:
        if value is None:
            continue
        if len(value) != targets:
            raise doc.error(f"has {len(value)} entries but mesh {m} has {targets} morph targets; one per target", where)
        return readonly_copy(numbers(doc, value, targets, where, None)) if targets else readonly_copy(np.zeros(0))
    return readonly_copy(np.zeros(targets))


def _primitive(
    doc: GltfDocument,
    m: int,
    p: int,
    primitive: Any,
    skin: SkinData | None,
    targets: int,
    materials: Materials,
) -> MeshData | None:
    """``meshes[m].primitives[p]`` as :class:`MeshData`, or ``None`` (with a warning) without ``POSITION``."""
    where = f"meshes[{m}].primitives[{p}]"
    mode = 4 if primitive.mode is None else primitive.mode
    if mode not in MODE_NAMES:
        raise doc.error(f"mode must be one of {sorted(MODE_NAMES)}, got {mode!r}", f"{where}.mode")
    decode_draco(doc, doc.json["meshes"][m]["primitives"][p], mode, where)
    raw = primitive.attributes  # pygltflib leaves an empty object as a dict
    attributes = {k: v for k, v in (raw if isinstance(raw, dict) else vars(raw)).items() if v is not None}
    if "POSITION" not in attributes:
        doc.warn("the primitive has no POSITION attribute, so nothing to draw; skipped", f"{where}.attributes")
        return None

    def attribute(name: str, types: tuple[str, ...]) -> tuple[Any, str]:
        awhere = f"{where}.attributes.{name}"
        meta = doc.accessor_meta(attributes[name], awhere)
        if meta.type not in types:
            raise doc.error(f"{name} must be {' or '.join(types)}, got {meta.type}", awhere)
        return meta, awhere

    meta, pwhere = attribute("POSITION", ("VEC3",))
    positions = doc.floats(attributes["POSITION"], pwhere)
    count = meta.count
    for name, index in attributes.items():
        other = doc.accessor_meta(index, f"{where}.attributes.{name}")
        if other.count != count:
            raise doc.error(
                f"{name} has {other.count} elements but POSITION has {count}; every attribute needs one per vertex",
                f"{where}.attributes.{name}",
            )
    if not np.isfinite(positions).all():
        raise doc.error("positions must be finite", pwhere)
    normals = None
    if "NORMAL" in attributes:
        _, nwhere = attribute("NORMAL", ("VEC3",))
        normals = doc.floats(attributes["NORMAL"], nwhere)
        if not np.isfinite(normals).all():
            raise doc.error("normals must be finite", nwhere)
    material = materials.read(primitive.material, where)
    uvs = None
    uv_name = f"TEXCOORD_{material.texcoord}"
    if uv_name in attributes:
        _, uwhere = attribute(uv_name, ("VEC2",))
        uvs = doc.floats(attributes[uv_name], uwhere)
        if not np.isfinite(uvs).all():
            raise doc.error("texture coordinates must be finite", uwhere)
        if material.uv_transform is not None:
            uvs = uvs @ material.uv_transform[:, :2].T + material.uv_transform[:, 2]
    kind, indices = _indices(doc, primitive.indices, mode, count, where)
    joints, weights = (None, None) if skin is None else _influences(doc, attributes, count, skin, where)
    morph_positions, morph_normals = _morph_targets(
        doc, primitive, attributes, count, targets, normals is not None, where
    )
    return MeshData(
        positions=positions,
        indices=indices,
        normals=normals,
        uvs=uvs,
        joints=joints,
        weights=weights,
        base_color=material.base_color,
        texture=material.texture,
        emissive=material.emissive,
        unlit=material.unlit,
        name=f"{doc.gltf.meshes[m].name or f'mesh{m}'}/{p}",
        mode=kind,
        morph_positions=morph_positions,
        morph_normals=morph_normals,
    )


def _indices(doc: GltfDocument, accessor: Any, mode: int, count: int, where: str) -> tuple[str, IntArray | None]:
    """The primitive's kind (``TRIANGLES``/``LINES``/``POINTS``) and its index list in that kind.

    An incomplete last element (a count that is not a multiple of 3 for triangles, of 2 for lines,
    or a strip, fan or loop too short for one) is left out with a warning, as a GPU draws it.
    """
    iwhere = where if accessor is None else f"{where}.indices"
    if accessor is None:
        indices = np.arange(count, dtype=np.intp)
    else:
        meta = doc.accessor_meta(accessor, iwhere)
        if meta.type != "SCALAR" or meta.componentType not in (5121, 5123, 5125) or meta.normalized:
            raise doc.error(
                f"indices must be UNSIGNED_BYTE/SHORT/INT SCALAR, got componentType {meta.componentType} "
                f"type {meta.type}",
                iwhere,
            )
        indices = doc.accessor(accessor, iwhere).astype(np.intp)
        if indices.max() >= count:
            k = int(np.argmax(indices))
            raise doc.error(f"index {k} is {indices[k]} but the primitive has {count} vertices", iwhere)
    what = "indices" if accessor is not None else "vertices"
    name = MODE_NAMES[mode]
    if mode in (0, 1, 4):
        per = {0: 1, 1: 2, 4: 3}[mode]
        extra = indices.size % per
        if extra:
            doc.warn(
                f"{indices.size} {what} do not make whole {name.lower()} ({per} each); the last {extra} are not drawn",
                iwhere,
            )
            indices = indices[: indices.size - extra]
        kind = {0: "POINTS", 1: "LINES", 4: "TRIANGLES"}[mode]
        return kind, None if accessor is None and not extra else indices
    least = 2 if mode in (2, 3) else 3
    if indices.size < least:
        doc.warn(f"a {name} of {indices.size} {what} draws nothing (it needs {least})", iwhere)
        return ("LINES" if mode in (2, 3) else "TRIANGLES"), np.zeros(0, dtype=np.intp)
    if mode in (2, 3):
        ends = np.roll(indices, -1) if mode == 2 else indices[1:]  # a loop closes back to its first vertex
        return "LINES", np.stack((indices[: ends.size], ends), axis=1).reshape(-1)
    i = np.arange(indices.size - 2)
    # strip: p_i = (v_i, v_{i+1+i%2}, v_{i+2-i%2}); fan: p_i = (v_{i+1}, v_{i+2}, v_0)
    corners = (i, i + 1 + i % 2, i + 2 - i % 2) if mode == 5 else (i + 1, i + 2, np.zeros_like(i))
    return "TRIANGLES", np.stack([indices[c] for c in corners], axis=1).reshape(-1)


def _influences(
    doc: GltfDocument, attributes: dict[str, Any], count: int, skin: SkinData, where: str
) -> tuple[IntArray, FloatArray]:
    """All JOINTS_n/WEIGHTS_n sets concatenated ``(V, 4·S)``, remapped and L1-normalised."""
    sets = sorted(int(k.split("_")[1]) for k in attributes if k.startswith("JOINTS_") and k[7:].isdigit())
    weight_sets = sorted(int(k.split("_")[1]) for k in attributes if k.startswith("WEIGHTS_") and k[8:].isdigit())
    if not sets:
        raise doc.error("the node has a skin, so the primitive needs JOINTS_0 and WEIGHTS_0", f"{where}.attributes")
    if sets != weight_sets or sets != list(range(len(sets))):
        raise doc.error(
            f"JOINTS_n and WEIGHTS_n must come in pairs numbered 0, 1, …; got JOINTS {sets} and WEIGHTS {weight_sets}",
            f"{where}.attributes",
        )
    joint_blocks, weight_blocks = [], []
    tolerance = WEIGHT_SUM_TOLERANCE
    for n in sets:
        jwhere, wwhere = f"{where}.attributes.JOINTS_{n}", f"{where}.attributes.WEIGHTS_{n}"
        jmeta = doc.accessor_meta(attributes[f"JOINTS_{n}"], jwhere)
        if jmeta.type != "VEC4" or jmeta.componentType not in (5121, 5123) or jmeta.normalized:
            raise doc.error(
                f"must be VEC4 of UNSIGNED_BYTE or UNSIGNED_SHORT (not normalized), got componentType "
                f"{jmeta.componentType} type {jmeta.type}",
                jwhere,
            )
        wmeta = doc.accessor_meta(attributes[f"WEIGHTS_{n}"], wwhere)
        if wmeta.type != "VEC4" or not (
            wmeta.componentType == 5126 or (wmeta.componentType in (5121, 5123) and wmeta.normalized)
        ):
            raise doc.error(
                f"must be VEC4 of FLOAT or normalized UNSIGNED_BYTE/SHORT, got componentType "
                f"{wmeta.componentType} type {wmeta.type} normalized {bool(wmeta.normalized)}",
                wwhere,
            )
        if wmeta.componentType != 5126:
            tolerance += 4 * 0.5 / (255.0 if wmeta.componentType == 5121 else 65535.0)
        joints = doc.accessor(attributes[f"JOINTS_{n}"], jwhere).astype(np.intp)
        if joints.max() >= skin.from_gltf_order.size:
            v = int(np.argmax(joints.max(axis=1)))
            raise doc.error(
                f"vertex {v} uses joint {joints[v].max()} but skin {skin.index} has {skin.from_gltf_order.size} joints",
                jwhere,
            )
        weights = doc.floats(attributes[f"WEIGHTS_{n}"], wwhere)
        bad = ~np.isfinite(weights) | (weights < 0)
        if bad.any():
            v = int(np.argmax(bad.any(axis=1)))
            raise doc.error(f"weights must be finite and ≥ 0, vertex {v} has {weights[v].tolist()}", wwhere)
        joint_blocks.append(skin.from_gltf_order[joints])
        weight_blocks.append(weights)
    joints_all = np.concatenate(joint_blocks, axis=1)
    weights_all = np.concatenate(weight_blocks, axis=1)
    sums = weights_all.sum(axis=1)
    zero = sums <= 0
    if zero.any():
        raise doc.error(
            f"{int(zero.sum())} of {count} vertices have all weights 0 (first: vertex {int(np.argmax(zero))}); "
            "a skinned vertex needs a positive weight",
            f"{where}.attributes.WEIGHTS_0",
        )
    off = np.abs(sums - 1.0) > tolerance
    if off.any():
        v = int(np.argmax(np.where(off, np.abs(sums - 1.0), -1.0)))
        doc.warn(
            f"{int(off.sum())} of {count} vertices have weights not summing to 1 (worst: vertex {v}, "
            f"sum {sums[v]:.6g}); L1-normalised",
            f"{where}.attributes.WEIGHTS_0",
        )
    return joints_all, weights_all / sums[:, None]


def _morph_targets(
    doc: GltfDocument,
    primitive: Any,
    attributes: dict[str, Any],
    count: int,
    targets: int,
    has_normals: bool,
    where: str,
) -> tuple[FloatArray | None, FloatArray | None]:
    """``(T, V, 3)`` POSITION and NORMAL displacements of the primitive's morph targets (``None`` when absent)."""
    if targets == 0:
        return None, None
    positions = np.zeros((targets, count, 3))
    normals = np.zeros((targets, count, 3)) if has_normals else None
    for t, target in enumerate(_items(primitive.targets)):
        twhere = f"{where}.targets[{t}]"
        if not isinstance(target, dict):
            raise doc.error(f"a morph target maps attribute names to accessors, got {target!r}", twhere)
        for name, accessor in target.items():
            awhere = f"{twhere}.{name}"
            if name not in attributes:
                raise doc.error(f"the primitive has no {name} attribute for this morph target to displace", awhere)
            meta = doc.accessor_meta(accessor, awhere)
            if meta.count != count:
                raise doc.error(f"has {meta.count} elements but POSITION has {count}; one per vertex", awhere)
            if name not in MORPHED_ATTRIBUTES:
                if name != "TANGENT":  # Ossa uses no tangents at all
                    doc.warn(f"morph targets of {name} are not applied", awhere)
                continue
            if meta.type != "VEC3":
                raise doc.error(f"{name} displacements must be VEC3, got {meta.type}", awhere)
            values = doc.floats(accessor, awhere)
            if not np.isfinite(values).all():
                raise doc.error(f"{name} displacements must be finite", awhere)
            if name == "POSITION":
                positions[t] = values
            elif normals is not None:
                normals[t] = values
    return positions, normals
