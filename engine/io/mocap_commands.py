"""What ``ossa inspect`` and ``ossa evaluate`` compute for BVH files, and retargeted clips as glTF node clips.

``ossa inspect TAKE.bvh`` and ``ossa evaluate TAKE.bvh --times …`` answer as for glTF files, with
the joints as nodes (index = joint index in file order, world = model space, metres) and no
skins or meshes. The argument parsing of every ``ossa`` subcommand is in :mod:`engine.cli`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.sampling import sample
from engine.io.build import SkinData
from engine.io.bvh import BvhAnimation
from engine.math import trusted
from engine.math._checks import FloatArray


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
