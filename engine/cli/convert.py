"""``ossa convert TAKE.bvh OUT.glb``: a BVH take as glTF 2.0 (skeleton, clip and a bone mesh).

The take plays in any glTF viewer: joints become nodes, the motion one animation (from the first
captured frame: a converter's calibration T-pose is left out, and a note says so), and (unless
``--no-mesh``) a skinned mesh of one octahedral bone per parent–child pair makes it visible.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.cli.options import add_scale, gltf_path, writing
from engine.io.bvh import AXES, load_bvh
from engine.io.bvh_character import save_bvh_as_gltf


def add_parser(subcommands: Any) -> None:
    """Add ``convert``."""
    parser = subcommands.add_parser("convert", help="write a BVH take as glTF 2.0 (skeleton, clip, bone mesh)")
    parser.add_argument("bvh", type=Path, help="a .bvh file")
    parser.add_argument("out", type=gltf_path, help="the .glb or .gltf file to write")
    add_scale(parser, "the .bvh file")
    parser.add_argument("--axes", choices=sorted(AXES), default="y_up", help="the file's up axis (default y_up)")
    parser.add_argument("--no-end-sites", action="store_true", help="drop End Site tips instead of keeping leaves")
    parser.add_argument("--no-mesh", action="store_true", help="skeleton and clip only, no bone mesh")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Convert ``args.bvh`` to ``args.out``."""
    anim = load_bvh(args.bvh, scale=args.scale, axes=args.axes, end_sites=not args.no_end_sites)
    with writing(args.out, "OUT"):
        path = save_bvh_as_gltf(anim, args.out, mesh=not args.no_mesh)
    clip = anim.captured_clip
    frames = anim.num_frames - anim.calibration_frames
    print(
        f"wrote {path}: {anim.skeleton.num_joints} joints, clip {clip.name!r} "
        f"({frames} frames, {clip.duration:g} s), lengths × {anim.scale:.6g} ({anim.unit})"
        + ("" if args.no_mesh else ", bone mesh")
    )
    if anim.calibration_note:
        print(f"note: {anim.calibration_note}")
    return 0
