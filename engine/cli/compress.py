"""``ossa compress IN... --out LIB``: every clip of BVH and glTF files into one error-bounded clip library."""

from __future__ import annotations

import argparse
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.cli.options import add_scale, writing
from engine.compress import DEFAULT_SHELL, DEFAULT_TOLERANCE, SUFFIX, ClipLibrary, compress_clip, save_library
from engine.errors import InvalidInputError, OssaWarning
from engine.io.clip_sources import find_clip_files, read_clip_sources


def centimetres(text: str) -> float:
    """A positive length in centimetres, as metres."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0.0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive number of centimetres, got {text!r}")
    return value / 100.0


def effector(text: str) -> tuple[str, float]:
    """``NAME=CM``: a joint and its shell radius in centimetres."""
    name, _, radius = text.rpartition("=")
    if not name:
        raise argparse.ArgumentTypeError(f"expected JOINT=CM (a joint name and a radius in cm), got {text!r}")
    return name, centimetres(radius)


def add_shell_options(parser: argparse.ArgumentParser) -> None:
    """``--tolerance``, ``--shell``, ``--effector``, ``--mesh-shells`` (shared with ``ossa build``)."""
    parser.add_argument(
        "--tolerance",
        type=centimetres,
        default=DEFAULT_TOLERANCE,
        metavar="CM",
        help=f"largest displacement of any shell vertex, guaranteed (default {DEFAULT_TOLERANCE * 100:g} cm)",
    )
    parser.add_argument(
        "--shell",
        type=centimetres,
        default=DEFAULT_SHELL,
        metavar="CM",
        help=f"radius of the virtual vertices around every joint (default {DEFAULT_SHELL * 100:g} cm)",
    )
    parser.add_argument(
        "--effector",
        type=effector,
        action="append",
        default=[],
        metavar="JOINT=CM",
        help="a larger shell for an end effector (repeatable), e.g. RightHand=15",
    )
    parser.add_argument(
        "--mesh-shells",
        action="store_true",
        help="size each joint's shell by its farthest skinned vertex (glTF characters with a mesh)",
    )


def add_parser(subcommands: Any) -> None:
    """Add ``compress``."""
    parser = subcommands.add_parser("compress", help="compress every clip of BVH/glTF files into a clip library")
    parser.add_argument("inputs", type=Path, nargs="+", metavar="IN", help=".bvh, .glb or .gltf files (or folders)")
    parser.add_argument("--out", type=Path, required=True, metavar="LIB", help=f"the library to write ({SUFFIX})")
    add_shell_options(parser)
    add_scale(parser, "the .bvh inputs")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Compress every clip of ``args.inputs`` into ``args.out``."""
    entries = []
    seen: dict[str, Path] = {}
    effectors = dict(args.effector)
    for path in find_clip_files(args.inputs):
        sources, notes = read_clip_sources(path, scale=args.scale)
        for note in notes:
            warnings.warn(note, OssaWarning, stacklevel=2)
        for source in sources:
            if source.name in seen:
                raise InvalidInputError(f"two inputs give a clip named {source.name!r}: {seen[source.name]} and {path}")
            seen[source.name] = path
            clip = compress_clip(
                source.skeleton,
                source.clip,
                tolerance=args.tolerance,
                shell=args.shell,
                meshes=source.meshes if args.mesh_shells else (),
                effectors={k: v for k, v in effectors.items() if k in source.skeleton.names},
                metres_per_unit=source.metres_per_unit,
            )
            clip.info["source"] = {"file": str(path), "clip": source.clip.name, "unit": source.unit}
            entries.append((source.skeleton, replace(clip, name=source.name)))
            info = clip.info
            print(
                f"{source.name}: {info['ratio']:.2f}:1 ({info['compressed_bytes']} bytes), max error "
                f"{info['max_error_m'] * 100:.4f} cm, p99 {info['p99_error_m'] * 100:.4f} cm"
            )
    missing = [name for name in effectors if not any(name in s.names for s, _ in entries)]
    if missing:
        raise InvalidInputError(f"--effector names joints no input has: {missing}")
    library = ClipLibrary(entries)
    with writing(args.out, "--out"):
        path = save_library(library, args.out)
    print(f"wrote {path}: {len(library)} clips, {path.stat().st_size} bytes")
    return 0
