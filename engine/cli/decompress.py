"""``ossa decompress LIB --out FILE.glb``: every clip of a library as ordinary glTF, sampled at its source's keys."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.cli.options import gltf_path, writing
from engine.compress import load_library
from engine.compress.export import decompressed
from engine.io.bvh_character import bone_mesh
from engine.io.gltf_writer import save_gltf


def add_parser(subcommands: Any) -> None:
    """Add ``decompress``."""
    parser = subcommands.add_parser(
        "decompress", help="write every clip of a clip library as glTF (one file per skeleton, with a bone mesh)"
    )
    parser.add_argument("library", type=Path, metavar="LIB", help="a clip library (ossa compress / ossa build)")
    parser.add_argument(
        "--out",
        type=gltf_path,
        required=True,
        metavar="FILE.glb",
        help="the glTF file to write; a library of several skeletons writes FILE-1.glb, FILE-2.glb, ... for the others",
    )
    parser.set_defaults(handler=run)


def output_paths(out: Path, count: int) -> list[Path]:
    """``out`` for the first skeleton, ``out`` with ``-1``, ``-2``, ... before the suffix for the others."""
    return [out if s == 0 else out.with_name(f"{out.stem}-{s}{out.suffix}") for s in range(count)]


def run(args: argparse.Namespace) -> int:
    """Decompress ``args.library`` into ``args.out``."""
    library = load_library(args.library)
    for s, (skeleton, path) in enumerate(
        zip(library.skeletons, output_paths(args.out, len(library.skeletons)), strict=True)
    ):
        clips = [
            decompressed(c, skeleton) for c, k in zip(library.clips, library.skeleton_index, strict=True) if k == s
        ]
        with writing(path, "--out"):
            save_gltf(path, skeleton, clips, [bone_mesh(skeleton)])
        print(f"wrote {path}: {skeleton.num_joints} joints, {len(clips)} clips: {', '.join(c.name for c in clips)}")
    return 0
