"""``ossa make-mannequin``: write the generated character to a glTF file."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.io.gltf_writer import save_gltf
from engine.procedural.mannequin import build_mannequin

#: Where the programs look for the character by default (generated, not hand-made).
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "assets" / "mannequin.glb"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``make-mannequin`` subcommand."""
    parser = subparsers.add_parser("make-mannequin", help="generate the humanoid mannequin as glTF 2.0")
    parser.add_argument(
        "out", nargs="?", type=Path, default=DEFAULT_PATH, help=f"output .glb/.gltf (default {DEFAULT_PATH})"
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    mannequin = build_mannequin()
    path = save_gltf(args.out, mannequin.skeleton, list(mannequin.clips.values()), [mannequin.mesh])
    clips = ", ".join(f"{c.name} ({c.duration:g} s)" for c in mannequin.clips.values())
    print(
        f"wrote {path}: {mannequin.skeleton.num_joints} joints, {mannequin.mesh.num_vertices} vertices, clips: {clips}"
    )
    return 0
