"""What ``ossa inspect MODEL`` and ``ossa evaluate MODEL --clip N --times t1,t2,…`` compute for glTF files.

``inspect`` prints a readable summary of a glTF file as Ossa reads it (:func:`summarize`): its
nodes, skins, meshes and clips, the clip files bound to it, every extension it declares or uses
with what Ossa did with each, and the loader's warnings.
``evaluate`` samples one clip at the given times (used as given: no looping) into JSON
(:func:`evaluate`); the command line itself is :mod:`engine.cli`::

    {
      "times": [t0, t1, ...],
      "nodes": [{"index": i, "name": str | null, "world": [[16 floats, column-major] per time]}],
      "skins": [{"index": s, "node": n, "joints": [node indices],
                 "jointMatrices": [[[16 floats] per joint] per time]}],
      "meshes": [{"node": n, "primitive": p, "mode": "TRIANGLES" | "LINES" | "POINTS",
                  "skinned": bool, "morphWeights": [[w per target] per time],
                  "skinnedPositions": [[[x, y, z] per vertex] per time]}]
    }

``nodes`` lists every node of the default scene (ascending glTF index); ``skins`` has one entry
per (skin, skinned mesh node) pair, joints in the file's ``skins[s].joints`` order and joint
matrices as the spec defines them, ``inverse(world(mesh node)) · world(joint) · IBM``;
``meshes`` gives every primitive's vertices in world space, whatever its mode: morphed by the
instance's weights first (the clip's ``weights`` channel, else ``node.weights``, else
``mesh.weights``, else 0), then skinned through their joints, or placed as ``world(node) · v``
for rigid meshes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.anim.scene import instance_vertices
from engine.anim.skinning import joint_matrices
from engine.io.build import GltfAsset
from engine.math._checks import FloatArray

# --------------------------------------------------------------------------------------------
# inspect


def summarize(asset: GltfAsset) -> str:
    """The text ``ossa inspect`` prints for ``asset``."""
    hierarchy = asset.hierarchy
    lines = [
        f"{asset.path}",
        f"scenes: {asset.scene_count} (default {asset.scene_index}), nodes: {asset.node_count} "
        f"({hierarchy.num_joints} in the default scene)",
        "",
        "node hierarchy (depth-first; [glTF index]):",
    ]
    joint_nodes = {int(n) for skin in asset.skins for n in skin.joint_nodes[skin.is_joint]}
    meshes = {m.node: m for m in asset.mesh_nodes}
    for h in range(hierarchy.num_joints):
        tags = []
        if int(asset.node_indices[h]) in joint_nodes:
            tags.append("joint")
        if h in meshes:
            skin_index = meshes[h].skin
            tags.append(f"mesh {meshes[h].mesh}" + ("" if skin_index is None else f" skinned by skin {skin_index}"))
        suffix = f"  ({', '.join(tags)})" if tags else ""
        indent = "  " * (int(hierarchy.depths[h]) + 1)
        lines.append(f"{indent}{hierarchy.names[h]} [{asset.node_indices[h]}]{suffix}")
    lines += ["", f"skins: {len(asset.skins)}"]
    for skin in asset.skins:
        skeleton = skin.skeleton
        roots = ", ".join(f"{skeleton.names[r]} [{skin.joint_nodes[r]}]" for r in skeleton.levels[0])
        above = "a scene root" if skin.root_parent < 0 else f"under node [{skin.root_parent}]"
        between = int((~skin.is_joint).sum())
        extra = f" (+{between} non-joint node(s) between joints)" if between else ""
        lines.append(
            f"  {skin.index} {skin.name!r}: {int(skin.is_joint.sum())} joints{extra}, depth {len(skeleton.levels)}, "
            f"root {roots} ({above})"
        )
    lines += ["", f"meshes: {len(asset.mesh_nodes)} mesh node(s)"]
    for mesh_node in asset.mesh_nodes:
        for p, data in zip(mesh_node.primitive_indices, mesh_node.primitives, strict=True):
            element = {"TRIANGLES": "triangles", "LINES": "lines", "POINTS": "points"}[data.mode]
            parts = [f"{data.num_vertices} vertices", f"{data.num_elements} {element}"]
            if data.skinned:
                parts.append(f"skin {mesh_node.skin}, {data.influence_sets} influence set(s)")
            if data.num_targets:
                parts.append(f"{data.num_targets} morph targets")
            parts.append("normals" if data.normals is not None else "no normals")
            if data.uvs is not None:
                parts.append("uvs")
            lines.append(f"  node [{mesh_node.gltf_node}] primitive {p} {data.name!r}: {', '.join(parts)}")
    lines += ["", f"clips: {len(asset.clips)}"]
    for i, clip in enumerate(asset.scene.clips.values()):
        channels = (*clip.nodes.channels, *clip.weights)
        modes = Counter(c.interpolation for c in channels)
        paths = Counter(c.path for c in channels)
        start = min((c.start for c in channels), default=0.0)
        lines.append(
            f"  {i} {clip.name!r}: {start:.4g}–{clip.duration:.4g} s, {len(channels)} channels "
            f"({', '.join(f'{k} {v}' for k, v in sorted(paths.items()))}; "
            f"{', '.join(f'{k} {v}' for k, v in sorted(modes.items()))}), "
            f"{len({c.target for c in channels})} nodes"
        )
    if asset.clip_files:
        lines += ["", f"clip files: {len(asset.clip_files)}"]
        lines += [f"  {clip_file.report()}" for clip_file in asset.clip_files]
    lines += ["", f"extensions: {len(asset.extensions)}"]
    lines += [f"  {e.name}{' (required)' if e.required else ''}: {e.did}" for e in asset.extensions]
    lines += ["", f"warnings: {len(asset.warnings)}"]
    lines += [f"  {w}" for w in asset.warnings]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# evaluate


def _column_major(matrices: FloatArray) -> list[Any]:
    """``(..., 4, 4)`` → nested lists ending in 16 floats, column-major (glTF's order)."""
    flat = np.swapaxes(matrices, -1, -2).reshape(*matrices.shape[:-2], 16)
    return list(flat.tolist())


def evaluate(asset: GltfAsset, clip: Clip | None, times: FloatArray) -> dict[str, Any]:
    """The JSON document of ``ossa evaluate`` as Python objects (see the module docstring).

    ``clip`` is one of ``asset.clips`` (its morph weights come from the scene clip of the same
    index), or ``None`` for the rest pose with default morph weights.
    """
    times = np.asarray(times, dtype=np.float64).reshape(-1)
    scene = asset.scene
    if clip is None:
        frame = scene.rest_frame(times.shape)
    else:
        frame = scene.sample(list(scene.clips.values())[asset.clips.index(clip)], times)
    world = frame.world  # (T, H, 4, 4): scene roots have no parent
    nodes = [
        {"index": int(asset.node_indices[h]), "name": asset.node_names[h], "world": _column_major(world[:, h])}
        for h in np.argsort(asset.node_indices, kind="stable")
    ]
    skins, meshes = [], []
    for i, (mesh_node, instance) in enumerate(zip(asset.mesh_nodes, scene.instances, strict=True)):
        if mesh_node.skin is not None and instance.skin is not None:
            skin, scene_skin = asset.skins[mesh_node.skin], scene.skins[instance.skin]
            matrices = joint_matrices(
                world[:, scene_skin.joints], world[:, mesh_node.node], skin.skeleton.inverse_bind_matrices
            )
            skins.append(
                {
                    "index": skin.index,
                    "node": mesh_node.gltf_node,
                    "joints": skin.joint_nodes[skin.from_gltf_order].tolist(),
                    "jointMatrices": _column_major(matrices[:, skin.from_gltf_order]),
                }
            )
        for k, (p, data) in enumerate(zip(mesh_node.primitive_indices, mesh_node.primitives, strict=True)):
            positions, _ = instance_vertices(scene, frame, i, k)
            meshes.append(
                {
                    "node": mesh_node.gltf_node,
                    "primitive": p,
                    "mode": data.mode,
                    "skinned": data.skinned,
                    "morphWeights": np.asarray(frame.morph_weights[i]).tolist(),
                    "skinnedPositions": positions.tolist(),
                }
            )
    return {"times": times.tolist(), "nodes": nodes, "skins": skins, "meshes": meshes}
