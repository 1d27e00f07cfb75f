"""Motion-capture commands: ``ossa convert``, ``ossa retarget``, and ``inspect``/``evaluate`` of BVH files.

``ossa convert TAKE.bvh OUT.glb`` writes the BVH skeleton as glTF nodes, its motion as one
animation and (unless ``--no-mesh``) a skinned mesh of one octahedral bone per parent–child pair,
so the take plays in any glTF viewer.

``ossa retarget SOURCE TARGET --out OUT.glb`` plays SOURCE's motion (a ``.bvh`` take, or a clip of
a glTF character) on the glTF character TARGET with :mod:`engine.anim.retarget` and writes
TARGET's skeleton and skinned meshes with the new clip. The joint map is proposed unless
``--map MAP.json`` gives one (``{"source joint": "target joint"}``); ``--save-map`` writes the map
used, to edit and pass back. For example, the mocap pirouette on the project's mannequin::

    ossa retarget ../shared/assets/pirouette_bvh/pirouette.bvh assets/mannequin.glb --out pirouette.glb

``ossa inspect TAKE.bvh`` and ``ossa evaluate TAKE.bvh --times …`` answer as for glTF files, with
the joints as nodes (index = joint index in file order, world = model space, metres) and no
skins or meshes. BVH files are read with the defaults of :func:`~engine.io.bvh.load_bvh`
(centimetres to metres, +Y up, End Sites as leaf joints).
"""

from __future__ import annotations

import argparse
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import local_to_model, model_from_pose
from engine.anim.mesh import MeshData
from engine.anim.retarget import plan_retarget, propose_joint_map, retarget_clip
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, InvalidInputError
from engine.io.bvh import AXES, BvhAnimation, load_bvh
from engine.io.character import Character, load_character
from engine.io.commands import write_json
from engine.io.gltf_writer import save_gltf
from engine.math._checks import FloatArray
from engine.math.mat import trs_from_matrix
from engine.math.vec import any_perpendicular, vec_cross

#: Colour of the generated bone mesh (linear RGBA).
BONE_COLOR = np.array([0.9, 0.75, 0.35, 1.0])


def register(subparsers: Any) -> None:
    """Add the ``convert`` and ``retarget`` subcommands."""
    convert = subparsers.add_parser("convert", help="write a BVH take as glTF 2.0 (skeleton, clip, bone mesh)")
    convert.add_argument("bvh", type=Path, help="a .bvh file")
    convert.add_argument("out", type=Path, help="the .glb or .gltf file to write")
    convert.add_argument("--scale", type=float, default=0.01, help="length factor (default 0.01: cm → m)")
    convert.add_argument("--axes", choices=sorted(AXES), default="y_up", help="the file's up axis (default y_up)")
    convert.add_argument("--no-end-sites", action="store_true", help="drop End Site tips instead of keeping leaves")
    convert.add_argument("--no-mesh", action="store_true", help="skeleton and clip only, no bone mesh")
    convert.set_defaults(handler=run_convert)
    retarget = subparsers.add_parser("retarget", help="play a BVH take or glTF clip on a glTF character")
    retarget.add_argument("source", type=Path, help="a .bvh take or a .gltf/.glb character")
    retarget.add_argument("target", type=Path, help="the .gltf/.glb character to animate")
    retarget.add_argument("--out", type=Path, required=True, help="the .glb or .gltf file to write")
    retarget.add_argument("--clip", default=None, help="source clip name (glTF sources; default: the first)")
    retarget.add_argument("--map", type=Path, default=None, help='JSON {"source joint": "target joint"} to use')
    retarget.add_argument("--save-map", type=Path, default=None, help="write the joint map used to this JSON file")
    retarget.add_argument("--keep-target-rest", action="store_true", help="no rest-bone alignment (align_bones=False)")
    retarget.set_defaults(handler=run_retarget)


# --------------------------------------------------------------------------------------------
# convert


def bone_mesh(skeleton: Skeleton, *, width: float = 0.12) -> MeshData:
    """A flat-shaded octahedral bone from every joint with a parent to that parent, rigidly skinned.

    Each bone spans the two joints' rest model positions, is ``width`` × its length wide at a
    tenth of the way from the parent, and follows the parent joint (weight 1). Bones of zero length
    are skipped. Returns a non-indexed triangle list in the skeleton's bind (rest model) space.
    """
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())[:, :3, 3]
    child = np.nonzero(skeleton.parents >= 0)[0]
    parent = skeleton.parents[child]
    bone = model[child] - model[parent]
    length = np.linalg.norm(bone, axis=-1)
    keep = length > 1e-9
    child, parent, bone, length = child[keep], parent[keep], bone[keep], length[keep]
    u = any_perpendicular(bone) * (width * length)[:, None]
    v = vec_cross(bone / length[:, None], u)
    base, tip = model[parent], model[child]
    ring = base[:, None] + 0.1 * bone[:, None] + np.stack((u, v, -u, -v), axis=1)  # (B, 4, 3)
    nxt = np.roll(ring, -1, axis=1)
    faces = np.concatenate(
        (
            np.stack((np.broadcast_to(base[:, None], ring.shape), nxt, ring), axis=2),
            np.stack((ring, nxt, np.broadcast_to(tip[:, None], ring.shape)), axis=2),
        ),
        axis=1,
    )  # (B, 8, 3 corners, 3)
    normals = vec_cross(faces[..., 1, :] - faces[..., 0, :], faces[..., 2, :] - faces[..., 0, :])
    normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
    count = faces.shape[0] * 24
    joints = np.zeros((count, 4), dtype=np.intp)
    joints[:, 0] = np.repeat(parent, 24)
    weights = np.zeros((count, 4))
    weights[:, 0] = 1.0
    return MeshData(
        positions=faces.reshape(-1, 3),
        normals=np.repeat(normals, 3, axis=-2).reshape(-1, 3),
        joints=joints,
        weights=weights,
        base_color=BONE_COLOR,
        name="bones",
    )


def run_convert(args: argparse.Namespace) -> int:
    """Handler of ``ossa convert``."""
    anim = load_bvh(args.bvh, scale=args.scale, axes=args.axes, end_sites=not args.no_end_sites)
    meshes = [] if args.no_mesh else [bone_mesh(anim.skeleton)]
    path = save_gltf(args.out, anim.skeleton, [anim.clip], meshes)
    print(
        f"wrote {path}: {anim.skeleton.num_joints} joints, clip {anim.clip.name!r} "
        f"({anim.num_frames} frames, {anim.clip.duration:g} s)" + ("" if args.no_mesh else ", bone mesh")
    )
    return 0


# --------------------------------------------------------------------------------------------
# retarget


def _character(path: Path) -> Character:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. CesiumMan's clip moving a node above its skeleton
        return load_character(path, textures=False)


def with_root_transform(skeleton: Skeleton, root_transform: Any) -> Skeleton:
    """``skeleton`` with ``root_transform`` ``(4, 4)`` folded into its roots' rest transforms.

    Model space of the result is the world space of the original (``world = root_transform @
    model``); inverse bind matrices stay as they are, so skinning gives the same world positions.
    """
    matrix = np.asarray(root_transform, dtype=np.float64)
    roots = skeleton.levels[0]
    local = skeleton.rest_pose.matrices()
    translations, rotations, scales = (
        skeleton.rest_translations.copy(),
        skeleton.rest_rotations.copy(),
        skeleton.rest_scales.copy(),
    )
    translations[roots], rotations[roots], scales[roots] = trs_from_matrix(matrix @ local[roots])
    return Skeleton(skeleton.names, skeleton.parents, translations, rotations, scales, skeleton.inverse_bind_matrices)


def _source(args: argparse.Namespace) -> tuple[Skeleton, Clip, FloatArray]:
    """Source skeleton, clip and model-space up axis."""
    if args.source.suffix.lower() == ".bvh":
        anim = load_bvh(args.source)
        return anim.skeleton, anim.clip, np.array([0.0, 1.0, 0.0])
    character = _character(args.source)
    if not character.clips:
        raise AssetError("the source character has no clips to retarget", file=str(args.source))
    name = args.clip if args.clip is not None else next(iter(character.clips))
    if name not in character.clips:
        raise InvalidInputError(f"--clip {name!r}: the source's clips are {list(character.clips)}")
    up = np.linalg.solve(character.root_transform[:3, :3], [0.0, 1.0, 0.0])
    return character.skeleton, character.clips[name], up / np.linalg.norm(up)


def _read_map(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise AssetError(f"cannot read the joint map: {exc}", file=str(path)) from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise AssetError('the joint map must be a JSON object {"source joint": "target joint", ...}', file=str(path))
    return data


def run_retarget(args: argparse.Namespace) -> int:
    """Handler of ``ossa retarget``."""
    source, clip, source_up = _source(args)
    character = _character(args.target)
    target = with_root_transform(character.skeleton, character.root_transform)
    joint_map = _read_map(args.map) if args.map else propose_joint_map(source, target, source_up=source_up)
    if args.save_map:
        args.save_map.write_text(json.dumps(joint_map, indent=2) + "\n")
    plan = plan_retarget(source, target, joint_map, source_up=source_up, align_bones=not args.keep_target_rest)
    moved = retarget_clip(plan, clip, name=f"{clip.name}_retargeted")
    path = save_gltf(args.out, target, [moved], list(character.meshes))
    print(
        f"wrote {path}: clip {moved.name!r} ({moved.duration:g} s) on {target.num_joints} joints, "
        f"{len(plan.joint_map)} mapped, root scale {plan.root_scale:.3f}"
    )
    return 0


# --------------------------------------------------------------------------------------------
# inspect / evaluate of .bvh files (engine.io.commands hands them over)


def summarize_bvh(anim: BvhAnimation, path: Path) -> str:
    """The text ``ossa inspect`` prints for a BVH take."""
    skeleton = anim.skeleton
    lines = [
        f"{path}",
        f"BVH: {skeleton.num_joints} joints ({sum(1 for c in anim.channel_names if c)} with channels), "
        f"{anim.motion.shape[1]} channels, {anim.num_frames} frames every {anim.frame_time:g} s "
        f"({anim.clip.duration:g} s), lengths in metres (file units × 0.01)",
        "",
        "joints (depth-first; [index] channels):",
    ]
    for j, name in enumerate(skeleton.names):
        indent = "  " * (int(skeleton.depths[j]) + 1)
        channels = " ".join(anim.channel_names[j]) or "no channels"
        lines.append(f"{indent}{name} [{j}] {channels}")
    lines += ["", "skins: 0", "meshes: 0", "clips: 1", f"  0 {anim.clip.name!r}: {len(anim.clip.channels)} channels"]
    return "\n".join(lines)


def run_inspect_bvh(args: argparse.Namespace) -> int:
    """``ossa inspect`` of a ``.bvh`` file."""
    print(summarize_bvh(load_bvh(args.model), args.model))
    return 0


def evaluate_bvh(anim: BvhAnimation, times: FloatArray) -> dict[str, Any]:
    """``ossa evaluate``'s JSON for a BVH take: joints as nodes, world = model space, no skins or meshes."""
    times = np.asarray(times, dtype=np.float64).reshape(-1)
    skeleton = anim.skeleton
    rest = skeleton.rest_pose.broadcast_to(times.shape)  # what a take of zero frames shows
    pose = sample(anim.clip, skeleton.rest_pose, times) if anim.clip.channels else rest
    model = model_from_pose(skeleton, pose)
    columns = np.swapaxes(model, -1, -2).reshape(times.size, skeleton.num_joints, 16)
    nodes = [{"index": j, "name": name, "world": columns[:, j].tolist()} for j, name in enumerate(skeleton.names)]
    return {"times": times.tolist(), "nodes": nodes, "skins": [], "meshes": []}


def run_evaluate_bvh(args: argparse.Namespace) -> int:
    """``ossa evaluate`` of a ``.bvh`` file (``--clip`` may be omitted, 0, or the clip's name)."""
    anim = load_bvh(args.model)
    if args.clip not in (None, "0", anim.clip.name):
        raise InvalidInputError(f"--clip {args.clip}: a BVH file has one clip, 0 or {anim.clip.name!r}")
    return write_json(evaluate_bvh(anim, args.times), args.out)
