"""``ossa inspect MODEL`` and ``ossa evaluate MODEL --clip N --times t1,t2,…``.

``inspect`` prints a readable summary of a glTF file as Ossa reads it. ``evaluate`` samples one
clip at the given times (used as given: no looping) and writes JSON::

    {
      "times": [t0, t1, ...],
      "nodes": [{"index": i, "name": str | null, "world": [[16 floats, column-major] per time]}],
      "skins": [{"index": s, "node": n, "joints": [node indices],
                 "jointMatrices": [[[16 floats] per joint] per time]}],
      "meshes": [{"node": n, "primitive": p, "skinned": bool,
                  "skinnedPositions": [[[x, y, z] per vertex] per time]}]
    }

``nodes`` lists every node of the default scene (ascending glTF index); ``skins`` has one entry
per (skin, skinned mesh node) pair, joints in the file's ``skins[s].joints`` order and joint
matrices as the spec defines them, ``inverse(world(mesh node)) · world(joint) · IBM``;
``meshes`` gives each triangle primitive's vertices in world space (skinned ones through their
joints, rigid ones as ``world(node) · v``).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.sampling import sample
from engine.anim.skinning import joint_matrices, skin_vertices
from engine.errors import InvalidInputError
from engine.io.build import GltfAsset, load_gltf
from engine.math._checks import FloatArray
from engine.math.mat import transform_points


def register(subparsers: Any) -> None:
    """Add the ``inspect`` and ``evaluate`` subcommands."""
    inspect = subparsers.add_parser(
        "inspect", help="summarise a glTF/GLB file: scenes, nodes, skins, meshes, clips, warnings"
    )
    inspect.add_argument("model", type=Path, help="a .gltf or .glb file")
    inspect.set_defaults(handler=run_inspect)
    evaluate = subparsers.add_parser(
        "evaluate", help="world matrices, joint matrices and skinned positions of a clip at given times (JSON)"
    )
    evaluate.add_argument("model", type=Path, help="a .gltf or .glb file")
    evaluate.add_argument(
        "--clip", default=None, help="clip index or name (default: 0; the rest pose for a file without clips)"
    )
    evaluate.add_argument(
        "--times",
        type=parse_times,
        required=True,
        help="comma-separated seconds, e.g. 0,0.5,1 (write --times=-1,0 when the first is negative)",
    )
    evaluate.add_argument("--out", type=Path, default=None, help="write the JSON here instead of standard output")
    evaluate.set_defaults(handler=run_evaluate)


def parse_times(text: str) -> FloatArray:
    """``"0, 0.5,1"`` → ``array([0. , 0.5, 1. ])``; raises for empty, non-numeric or non-finite items."""
    try:
        times = np.array([float(item) for item in text.split(",")])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated seconds, got {text!r}") from None
    if not np.isfinite(times).all():
        raise argparse.ArgumentTypeError(f"times must be finite, got {text!r}")
    return times


def _load(path: Path, *, textures: bool) -> GltfAsset:
    """Load ``path``; warnings are collected in the asset instead of being printed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_gltf(path, textures=textures)


# --------------------------------------------------------------------------------------------
# inspect


def summarize(asset: GltfAsset) -> str:
    """The text ``ossa inspect`` prints for ``asset``."""
    hierarchy = asset.hierarchy
    lines = [
        f"{asset.path}",
        f"scenes: {asset.scene_count} (default {asset.scene}), nodes: {asset.node_count} "
        f"({hierarchy.num_joints} in the default scene)",
        "",
        "node hierarchy (depth-first; [glTF index]):",
    ]
    skinned_nodes = {int(n) for skin in asset.skins for n in skin.joint_nodes}
    meshes = {m.node: m for m in asset.mesh_nodes}
    for h in range(hierarchy.num_joints):
        tags = []
        if int(asset.node_indices[h]) in skinned_nodes:
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
        lines.append(
            f"  {skin.index} {skin.name!r}: {skeleton.num_joints} joints, depth {len(skeleton.levels)}, "
            f"root {roots} ({above})"
        )
    lines += ["", f"meshes: {len(asset.mesh_nodes)} mesh node(s)"]
    for mesh_node in asset.mesh_nodes:
        for p, data in zip(mesh_node.primitive_indices, mesh_node.primitives, strict=True):
            triangles = (data.num_vertices if data.indices is None else data.indices.size) // 3
            parts = [f"{data.num_vertices} vertices", f"{triangles} triangles"]
            if data.skinned:
                parts.append(f"skin {mesh_node.skin}, {data.influence_sets} influence set(s)")
            parts.append("normals" if data.normals is not None else "no normals")
            if data.uvs is not None:
                parts.append("uvs")
            lines.append(f"  node [{mesh_node.gltf_node}] primitive {p} {data.name!r}: {', '.join(parts)}")
    lines += ["", f"clips: {len(asset.clips)}"]
    for i, clip in enumerate(asset.clips):
        modes = Counter(c.interpolation for c in clip.channels)
        paths = Counter(c.path for c in clip.channels)
        start = min((c.start for c in clip.channels), default=0.0)
        lines.append(
            f"  {i} {clip.name!r}: {start:.4g}–{clip.duration:.4g} s, {len(clip.channels)} channels "
            f"({', '.join(f'{k} {v}' for k, v in sorted(paths.items()))}; "
            f"{', '.join(f'{k} {v}' for k, v in sorted(modes.items()))}), "
            f"{len({c.target for c in clip.channels})} nodes"
        )
    lines += ["", f"warnings: {len(asset.warnings)}"]
    lines += [f"  {w}" for w in asset.warnings]
    return "\n".join(lines)


def run_inspect(args: argparse.Namespace) -> int:
    """Handler of ``ossa inspect``."""
    if args.model.suffix.lower() == ".bvh":
        from engine.io.mocap_commands import run_inspect_bvh  # noqa: PLC0415 (mocap_commands imports this module)

        return run_inspect_bvh(args)
    print(summarize(_load(args.model, textures=True)))
    return 0


# --------------------------------------------------------------------------------------------
# evaluate


def _column_major(matrices: FloatArray) -> list[Any]:
    """``(..., 4, 4)`` → nested lists ending in 16 floats, column-major (glTF's order)."""
    flat = np.swapaxes(matrices, -1, -2).reshape(*matrices.shape[:-2], 16)
    return list(flat.tolist())


def _pick_clip(asset: GltfAsset, clip: str | None) -> Clip | None:
    if clip is None:
        return asset.clips[0] if asset.clips else None
    if clip.lstrip("-").isdigit():
        index = int(clip)
        if not 0 <= index < len(asset.clips):
            raise InvalidInputError(f"--clip {index} is out of range: the file has {len(asset.clips)} clip(s)")
        return asset.clips[index]
    return asset.clips[asset.clip_index(clip)]


def evaluate(asset: GltfAsset, clip: Clip | None, times: FloatArray) -> dict[str, Any]:
    """The JSON document of ``ossa evaluate`` as Python objects (see the module docstring)."""
    times = np.asarray(times, dtype=np.float64).reshape(-1)
    hierarchy = asset.hierarchy
    pose = hierarchy.rest_pose.broadcast_to(times.shape) if clip is None else sample(clip, hierarchy.rest_pose, times)
    world = model_from_pose(hierarchy, pose)  # (T, H, 4, 4): scene roots have no parent
    nodes = [
        {"index": int(asset.node_indices[h]), "name": asset.node_names[h], "world": _column_major(world[:, h])}
        for h in np.argsort(asset.node_indices, kind="stable")
    ]
    skins, meshes = [], []
    for mesh_node in asset.mesh_nodes:
        node_world = world[:, mesh_node.node]
        palette = None
        if mesh_node.skin is not None:
            skin = asset.skins[mesh_node.skin]
            joint_world = world[:, [asset.hierarchy_index(int(n)) for n in skin.joint_nodes]]
            matrices = joint_matrices(joint_world, node_world, skin.skeleton.inverse_bind_matrices)
            palette = joint_world @ skin.skeleton.inverse_bind_matrices  # bind space → world
            skins.append(
                {
                    "index": skin.index,
                    "node": mesh_node.gltf_node,
                    "joints": skin.joint_nodes[skin.from_gltf_order].tolist(),
                    "jointMatrices": _column_major(matrices[:, skin.from_gltf_order]),
                }
            )
        for p, data in zip(mesh_node.primitive_indices, mesh_node.primitives, strict=True):
            if palette is not None and data.skinned:
                positions = skin_vertices(data, palette)[0]
            else:
                positions = transform_points(node_world[:, None], data.positions)
            meshes.append(
                {
                    "node": mesh_node.gltf_node,
                    "primitive": p,
                    "skinned": bool(palette is not None and data.skinned),
                    "skinnedPositions": positions.tolist(),
                }
            )
    return {"times": times.tolist(), "nodes": nodes, "skins": skins, "meshes": meshes}


def run_evaluate(args: argparse.Namespace) -> int:
    """Handler of ``ossa evaluate``."""
    if args.model.suffix.lower() == ".bvh":
        from engine.io.mocap_commands import run_evaluate_bvh  # noqa: PLC0415 (mocap_commands imports this module)

        return run_evaluate_bvh(args)
    asset = _load(args.model, textures=False)
    for warning in asset.warnings:
        print(f"ossa evaluate: warning: {warning}", file=sys.stderr)
    return write_json(evaluate(asset, _pick_clip(asset, args.clip), args.times), args.out)


def write_json(document: dict[str, Any], out: Path | None) -> int:
    """Print ``document`` as JSON, or write it to ``out``; the exit status of ``ossa evaluate``."""
    text = json.dumps(document)
    if out is None:
        print(text)
        return 0
    try:
        out.write_text(text + "\n")
    except OSError as exc:
        raise InvalidInputError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    return 0
