"""``ossa inspect MODEL``: a readable summary of a glTF/GLB file, or of a BVH take."""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

from engine.cli.options import add_clips, add_scale, is_bvh, refuse_scale_for_gltf
from engine.compress import is_library, load_library
from engine.compress.report import summarize_library
from engine.errors import InvalidInputError
from engine.io.build import load_gltf
from engine.io.bvh import load_bvh
from engine.io.clip_files import refuse_clips_for_bvh
from engine.io.commands import summarize
from engine.io.mocap_commands import summarize_bvh


def add_parser(subcommands: Any) -> None:
    """Add ``inspect``."""
    parser = subcommands.add_parser(
        "inspect",
        help="summarise a glTF/GLB/VRM file (scenes, nodes, skins, meshes, clips, extensions, warnings), a BVH take "
        "or a clip library",
    )
    parser.add_argument("model", type=Path, help="a .gltf, .glb, .vrm, .bvh or .ossalib file")
    add_scale(parser, "a .bvh MODEL")
    add_clips(parser, "MODEL")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the summary of ``args.model``."""
    if is_library(args.model):  # a clip library (ossa compress / ossa build): its own summary
        if args.scale is not None or args.clips:
            raise InvalidInputError(f"--scale and --clips apply to model files; {args.model.name} is a clip library")
        print(summarize_library(load_library(args.model), args.model))
        return 0
    refuse_clips_for_bvh(args.model, args.clips)
    if is_bvh(args.model):
        print(summarize_bvh(load_bvh(args.model, scale=args.scale), args.model))
        return 0
    refuse_scale_for_gltf(args, args.model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the summary lists the loader's warnings itself
        asset = load_gltf(args.model, textures=True, clips=args.clips)
    print(summarize(asset))
    return 0
