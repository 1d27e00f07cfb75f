r"""``ossa mm build CLIPS... --out DB`` and ``ossa mm inspect DB``: motion-matching databases.

``build`` reads BVH takes and glTF clips (:func:`~engine.motion_matching.load_sources`, with an
optional ``--tags`` sidecar), builds a database (:func:`~engine.motion_matching.build_database`),
optionally on a character (``--character``: every clip is retargeted onto its skeleton), writes it
(:func:`~engine.motion_matching.save_database`) and prints what is in it. ``inspect`` prints the
same summary for a database file. For example, the CMU locomotion takes on the mannequin::

    ossa mm build ../shared/assets/cmu_locomotion_bvh/*.bvh --character assets/mannequin.glb \\
        --tags game/demo/cmu_locomotion.toml --skip-unusable --out cmu.npz
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from engine.anim.skeleton import Skeleton
from engine.cli.options import add_scale, is_bvh, refuse_scale_for_gltf
from engine.io.bvh import load_bvh
from engine.io.character import load_character
from engine.motion_matching import BuildOptions, build_database, load_database, load_sources, save_database
from engine.motion_matching.layout import DEFAULT_FPS, DEFAULT_HORIZONS, check_horizons


def _weights(text: str) -> dict[str, float]:
    """``--weights name=value,...``."""
    out = {}
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise argparse.ArgumentTypeError(f"expected group=weight pairs separated by commas, got {item!r}")
    return out


def _horizons(text: str) -> tuple[int, ...]:
    try:
        return check_horizons([int(h) for h in text.split(",")])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ascending frame counts such as 20,40,60, got {text!r}") from None


def add_parser(subcommands: Any) -> None:
    """Add ``mm``."""
    parser = subcommands.add_parser("mm", help="motion matching: 'build CLIPS... --out DB' and 'inspect DB'")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = actions.add_parser("build", help="build a database from .bvh/.gltf/.glb clips")
    build.add_argument("clips", type=Path, nargs="+", help=".bvh takes and .gltf/.glb files (every clip)")
    build.add_argument("--out", type=Path, required=True, help="the database file to write (.npz)")
    build.add_argument("--character", type=Path, default=None, help="retarget onto this .gltf/.glb/.bvh skeleton")
    build.add_argument("--tags", type=Path, default=None, help="a .toml/.json sidecar: tags and time ranges per clip")
    build.add_argument("--fps", type=float, default=DEFAULT_FPS, help=f"frames per second (default {DEFAULT_FPS:g})")
    build.add_argument(
        "--horizons",
        type=_horizons,
        default=DEFAULT_HORIZONS,
        help=f"trajectory horizons in frames (default {','.join(map(str, DEFAULT_HORIZONS))})",
    )
    build.add_argument("--weights", type=_weights, default={}, help="group=weight,... (e.g. foot_positions=0.75)")
    build.add_argument("--hands", action="store_true", help="add the hands' positions and velocities")
    build.add_argument("--no-mirror", action="store_true", help="do not add mirrored copies")
    build.add_argument("--end-margin", type=int, default=20, help="frames at each range's end never matched")
    build.add_argument("--skip-unusable", action="store_true", help="leave out clips that cannot be retargeted")
    add_scale(build, "the .bvh clips")
    build.set_defaults(handler=run_build)
    inspect = actions.add_parser("inspect", help="print what a database holds")
    inspect.add_argument("database", type=Path, help="a database file written by 'ossa mm build'")
    inspect.set_defaults(handler=run_inspect)


def _character(path: Path) -> Skeleton:
    if is_bvh(path):
        return load_bvh(path).skeleton
    return load_character(path, textures=False).skeleton


def run_build(args: argparse.Namespace) -> int:
    """Build, write and summarise a database."""
    for path in args.clips:
        refuse_scale_for_gltf(args, path)
    started = time.perf_counter()
    sources = load_sources(args.clips, tags_file=args.tags, scale=args.scale)
    target = None if args.character is None else _character(args.character)
    options = BuildOptions(
        fps=args.fps,
        horizons=args.horizons,
        weights=args.weights,
        hands=args.hands,
        mirror=not args.no_mirror,
        end_margin=args.end_margin,
        skip_unusable=args.skip_unusable,
    )
    database = build_database(sources, target, options)
    path = save_database(database, args.out)
    print(database.summary())
    print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB) in {time.perf_counter() - started:.2f} s")
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    """Print a database file's summary."""
    database = load_database(args.database)
    print(f"{args.database}: Ossa motion-matching database")
    print(database.summary())
    return 0
