"""``ossa build SRC... --out DIR``: every BVH/glTF clip under the sources into one library and a manifest.

Local by default (``-j N`` worker processes, a progress bar on a terminal), or on a Dask cluster
(``--scheduler tcp://host:8786``). See :mod:`engine.pipeline.build` for the outputs, the cache
and why the same inputs give the same bytes everywhere.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from engine.cli.compress import add_shell_options
from engine.cli.options import add_scale
from engine.pipeline.build import plan, run_build
from engine.pipeline.executors import Progress, dask_cluster, process_pool
from engine.pipeline.task import Settings


def add_parser(subcommands: Any) -> None:
    """Add ``build``."""
    parser = subcommands.add_parser(
        "build", help="compress every BVH/glTF clip under the sources into a library and a manifest (pool or Dask)"
    )
    parser.add_argument(
        "sources", type=Path, nargs="+", metavar="SRC", help="clip files or folders (searched recursively)"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the output folder")
    parser.add_argument("--target", type=Path, default=None, help="a .glb/.gltf character to retarget every clip onto")
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1),
        help="local worker processes (default: every CPU)",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run on the Dask cluster at ADDRESS (tcp://host:8786) instead of local processes",
    )
    add_shell_options(parser)
    add_scale(parser, "the .bvh sources")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Build ``args.sources`` into ``args.out``."""
    settings = Settings(args.tolerance, args.shell, tuple(sorted(args.effector)), args.mesh_shells, args.scale)
    tasks = plan(args.sources, settings, args.target)
    executor = dask_cluster(args.scheduler) if args.scheduler else process_pool(args.jobs)
    progress = Progress()
    start = time.monotonic()
    report = run_build(tasks, args.out, executor, progress=progress)
    seconds = time.monotonic() - start
    for row in report.rows:
        if row["error"]:
            print(f"{row['name']}: failed: {row['error']}")
    where = f"Dask at {args.scheduler}" if args.scheduler else f"{args.jobs} local process(es)"
    rate = report.built / seconds if seconds > 0 and report.built else 0.0
    print(
        f"wrote {report.library} and {report.manifest}: {len(report.rows)} clips, {report.built} built "
        f"({rate:.2f} clips/s on {where}), {report.reused} reused, {report.failed} failed"
    )
    return 1 if report.failed else 0
