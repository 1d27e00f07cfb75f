"""``ossa make-mannequin [OUT]``: write the generated humanoid mannequin as glTF 2.0."""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli.options import gltf_path, writing
from engine.procedural.commands import DEFAULT_PATH, write_mannequin


def add_parser(subcommands: Any) -> None:
    """Add ``make-mannequin``."""
    parser = subcommands.add_parser("make-mannequin", help="generate the humanoid mannequin as glTF 2.0")
    parser.add_argument(
        "out", nargs="?", type=gltf_path, default=DEFAULT_PATH, help=f"output .glb/.gltf (default {DEFAULT_PATH})"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the mannequin to ``args.out``."""
    with writing(args.out, "OUT"):
        path, mannequin = write_mannequin(args.out)
    clips = ", ".join(f"{c.name} ({c.duration:g} s)" for c in mannequin.clips.values())
    print(
        f"wrote {path}: {mannequin.skeleton.num_joints} joints, {mannequin.mesh.num_vertices} vertices, clips: {clips}"
    )
    return 0
