"""``ossa graph check FILE --model M``: validate an animation graph against a character and print it.

The document is read and checked (:func:`~engine.graph.definition.load_graph`), then bound to the
character's skeleton and clips (:func:`~engine.graph.runtime.bind_graph`); any error is one line
naming the file and the path in it. On success the graph is printed (parameters, masks, states
with their motions, transitions), with the character's clips it uses and warnings about states
no transition reaches (:mod:`engine.graph.check`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.graph.check import MANNEQUIN, character, summary, unreachable_states
from engine.graph.definition import load_graph
from engine.graph.runtime import bind_graph


def add_parser(subcommands: Any) -> None:
    """Add ``graph``."""
    parser = subcommands.add_parser("graph", help="animation graphs: 'check FILE --model M' validates and prints one")
    parser.add_argument("action", choices=["check"], help="check: validate FILE against the model and print it")
    parser.add_argument("file", type=Path, help="the graph document (.json or .toml)")
    parser.add_argument(
        "--model",
        required=True,
        help=f"the character: a .gltf/.glb/.bvh file, or {MANNEQUIN!r} (the generated mannequin with strafe clips)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check ``args.file`` against ``args.model`` and print the graph."""
    definition = load_graph(args.file)
    name, skeleton, clips = character(args.model)
    graph = bind_graph(definition, skeleton, clips)
    print(definition.describe())
    print(summary(graph, name, sorted(clips)))
    for warning in unreachable_states(definition):
        print(f"warning: {warning}")
    print("ok")
    return 0
