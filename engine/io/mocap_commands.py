"""What ``ossa inspect`` and ``ossa evaluate`` compute for BVH files, and what ``ossa retarget`` writes.

``ossa inspect TAKE.bvh`` and ``ossa evaluate TAKE.bvh --times …`` answer as for glTF files, with
the joints as nodes (index = joint index in file order, world = model space, metres) and no
skins or meshes. :func:`retarget_file` is ``ossa retarget`` without its printing (the programs'
retarget contact sheet and the tests call it too): a BVH take or a glTF clip onto a glTF
character, written as that character with the clip (:func:`clip_on_nodes`). The argument parsing
of every ``ossa`` subcommand is in :mod:`engine.cli`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.retarget import RetargetPlan, plan_retarget, propose_joint_map, retarget_clip
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skin_vertices, skinning_palette
from engine.errors import AssetError, InvalidInputError
from engine.io.build import SkinData
from engine.io.bvh import BvhAnimation, load_bvh
from engine.io.character import Character, load_character
from engine.io.gltf_writer import save_gltf_with_clips
from engine.math import trusted
from engine.math._checks import FloatArray, IntArray


def summarize_bvh(anim: BvhAnimation, path: Path) -> str:
    """The text ``ossa inspect`` prints for a BVH take."""
    skeleton = anim.skeleton
    lines = [
        f"{path}",
        f"BVH: {skeleton.num_joints} joints ({sum(1 for c in anim.channel_names if c)} with channels), "
        f"{anim.motion.shape[1]} channels, {anim.num_frames} frames every {anim.frame_time:g} s "
        f"({anim.clip.duration:g} s)",
        f"lengths in metres: file units × {anim.scale:.6g}, {anim.unit}",
        *([f"note: {anim.calibration_note}"] if anim.calibration_note else []),
        "",
        "joints (depth-first; [index] channels):",
    ]
    for j, name in enumerate(skeleton.names):
        indent = "  " * (int(skeleton.depths[j]) + 1)
        channels = " ".join(anim.channel_names[j]) or "no channels"
        lines.append(f"{indent}{name} [{j}] {channels}")
    lines += ["", "skins: 0", "meshes: 0", "clips: 1", f"  0 {anim.clip.name!r}: {len(anim.clip.channels)} channels"]
    return "\n".join(lines)


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


def clip_on_nodes(clip: Clip, skin: SkinData, node_count: int) -> Clip:
    """``clip`` (over ``skin.skeleton``'s joints) with its channels retargeted to the skin's glTF nodes.

    The result targets node indices of the file (``num_targets = node_count``), ready for
    :func:`~engine.io.gltf_writer.save_gltf_with_clips`.
    """
    with trusted():
        channels = tuple(
            Channel(int(skin.joint_nodes[c.target]), c.path, c.interpolation, c.times, c.values) for c in clip.channels
        )
    return Clip(clip.name, channels, node_count, clip.markers)


@dataclass(frozen=True, eq=False)
class RetargetSource:
    """What a retarget plays: the skeleton, the clip, the model-space up axis, and notes to say."""

    skeleton: Skeleton
    clip: Clip
    up: FloatArray
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Retargeted:
    """What :func:`retarget_file` did: the source, the target, the plan, the clip over the target, the file."""

    source: RetargetSource
    target: Character
    target_up: FloatArray
    plan: RetargetPlan
    clip: Clip
    path: Path


def retarget_character(path: Path, role: str) -> Character:
    """The glTF character at ``path`` (warnings ignored); without a skin, an :class:`AssetError` naming ``role``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. CesiumMan's clip moving a node above its skeleton
        try:
            return load_character(path, textures=False)
        except AssetError as exc:
            if exc.problem.startswith("skin 0 requested"):
                raise AssetError(f"{role} has no skin: nothing to retarget", file=str(path)) from None
            raise


def model_up(character: Character) -> FloatArray:
    """The skeleton's model-space up: world +Y through the node above the skeleton."""
    up = np.linalg.solve(character.root_transform[:3, :3], [0.0, 1.0, 0.0])
    return up / np.linalg.norm(up)


def retarget_source(path: Path, *, scale: float | None = None, clip: str | None = None) -> RetargetSource:
    """A ``.bvh`` take (its captured frames, the unit read or ``scale``) or a clip of a glTF character (``clip``)."""
    if path.suffix.lower() == ".bvh":
        if clip is not None:
            raise InvalidInputError(f"--clip {clip!r}: a .bvh SOURCE has one clip; leave --clip out")
        anim = load_bvh(path, scale=scale)
        notes = (anim.calibration_note,) if anim.calibration_note else ()
        return RetargetSource(anim.skeleton, anim.captured_clip, np.array([0.0, 1.0, 0.0]), notes)
    character = retarget_character(path, "SOURCE")
    if not character.clips:
        raise AssetError("SOURCE has no clips to retarget", file=str(path))
    name = clip if clip is not None else next(iter(character.clips))
    if name not in character.clips:
        raise InvalidInputError(f"--clip {name!r}: SOURCE's clips are {list(character.clips)}")
    return RetargetSource(character.skeleton, character.clips[name], model_up(character))


def rest_mesh(character: Character) -> tuple[FloatArray, IntArray] | None:
    """The character's skinned vertices ``(V, 3)`` in the rest pose (model space) and the joint each follows most.

    ``None`` without a skinned mesh. What :func:`~engine.anim.retarget.plan_retarget` takes as
    ``target_mesh`` to keep the soles, not only the foot joints, on the ground.
    """
    skeleton = character.skeleton
    palette = skinning_palette(skeleton, model_from_pose(skeleton, skeleton.rest_pose))
    vertices, followed = [], []
    for mesh in character.meshes:
        if mesh.joints is None or mesh.weights is None:
            continue
        vertices.append(skin_vertices(mesh, palette)[0])
        followed.append(np.take_along_axis(mesh.joints, np.argmax(mesh.weights, axis=1)[:, None], 1)[:, 0])
    if not vertices:
        return None
    return np.concatenate(vertices), np.concatenate(followed).astype(np.intp)


def retarget_file(
    source: RetargetSource,
    target_path: Path,
    out: Path,
    *,
    joint_map: Mapping[str, str] | None = None,
    map_name: str = "the proposed joint map",
    align_bones: bool = True,
) -> Retargeted:
    """Play ``source`` on the character at ``target_path`` and write it, with that clip only, to ``out``.

    ``joint_map`` ``None`` proposes one (:func:`~engine.anim.retarget.propose_joint_map`); the
    file keeps every node, mesh, skin, material and texture of the target
    (:func:`~engine.io.gltf_writer.save_gltf_with_clips`); the clip is named
    ``<source clip>_retargeted``.
    """
    character = retarget_character(target_path, "TARGET")
    target, target_up = character.skeleton, model_up(character)
    if joint_map is None:
        joint_map = propose_joint_map(
            source.skeleton, target, source_up=source.up, target_up=target_up, map_name="--map MAP.json"
        )
    plan = plan_retarget(
        source.skeleton,
        target,
        joint_map,
        source_up=source.up,
        target_up=target_up,
        align_bones=align_bones,
        target_mesh=rest_mesh(character),
        map_name=map_name,
    )
    clip = retarget_clip(plan, source.clip, name=f"{source.clip.name}_retargeted")
    path = save_gltf_with_clips(target_path, out, [clip_on_nodes(clip, character.skin, character.asset.node_count)])
    return Retargeted(source, character, target_up, plan, clip, path)
