"""``ossa evaluate MODEL --clip N --times t1,t2,…``: world matrices, joint matrices and skinned positions as JSON.

The JSON document is described in :mod:`engine.io.commands` (glTF) and
:mod:`engine.io.mocap_commands` (BVH: joints as nodes, no skins or meshes).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.cli.options import add_clips, add_scale, is_bvh, refuse_scale_for_gltf, write_json
from engine.errors import InvalidInputError
from engine.io.build import GltfAsset, load_gltf
from engine.io.bvh import load_bvh
from engine.io.clip_files import refuse_clips_for_bvh
from engine.io.commands import evaluate
from engine.io.mocap_commands import evaluate_bvh
from engine.math._checks import FloatArray


def add_parser(subcommands: Any) -> None:
    """Add ``evaluate``."""
    parser = subcommands.add_parser(
        "evaluate", help="world matrices, joint matrices and skinned positions of a clip at given times (JSON)"
    )
    parser.add_argument("model", type=Path, help="a .gltf, .glb, .vrm or .bvh file")
    parser.add_argument(
        "--clip", default=None, help="clip index or name (default: 0; the rest pose for a file without clips)"
    )
    parser.add_argument(
        "--times",
        type=parse_times,
        required=True,
        help="comma-separated seconds, e.g. 0,0.5,1 (write --times=-1,0 when the first is negative)",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the JSON here instead of standard output")
    add_scale(parser, "a .bvh MODEL")
    add_clips(parser, "MODEL (their clips follow MODEL's own in --clip indices)")
    parser.set_defaults(handler=run)


def parse_times(text: str) -> FloatArray:
    """``"0, 0.5,1"`` → ``array([0. , 0.5, 1. ])``; raises for empty, non-numeric or non-finite items."""
    try:
        times = np.array([float(item) for item in text.split(",")])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated seconds, got {text!r}") from None
    if not np.isfinite(times).all():
        raise argparse.ArgumentTypeError(f"times must be finite, got {text!r}")
    return times


def pick_clip(asset: GltfAsset, clip: str | None) -> Clip | None:
    """The clip ``--clip`` names (an index or a name), the first without ``--clip``, ``None`` without clips."""
    if clip is None:
        return asset.clips[0] if asset.clips else None
    if clip.lstrip("-").isdigit():
        index = int(clip)
        if not 0 <= index < len(asset.clips):
            raise InvalidInputError(f"--clip {index} is out of range: the file has {len(asset.clips)} clip(s)")
        return asset.clips[index]
    return asset.clips[asset.clip_index(clip)]


def run(args: argparse.Namespace) -> int:
    """Write the JSON for ``args.model`` at ``args.times``."""
    refuse_clips_for_bvh(args.model, args.clips)
    if is_bvh(args.model):
        anim = load_bvh(args.model, scale=args.scale)
        if args.clip not in (None, "0", anim.clip.name):
            raise InvalidInputError(f"--clip {args.clip}: a BVH file has one clip, 0 or {anim.clip.name!r}")
        write_json(evaluate_bvh(anim, args.times), args.out)
        return 0
    refuse_scale_for_gltf(args, args.model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # printed below, in the command's own words
        asset = load_gltf(args.model, textures=False, clips=args.clips)
    for warning in asset.warnings:
        print(f"ossa evaluate: warning: {warning}", file=sys.stderr)
    write_json(evaluate(asset, pick_clip(asset, args.clip), args.times), args.out)
    return 0
