"""The ``ossa`` command line: one module per subcommand, listed here by plain imports.

Each subcommand module (:mod:`~engine.cli.inspect`, :mod:`~engine.cli.evaluate`,
:mod:`~engine.cli.convert`, :mod:`~engine.cli.retarget`, :mod:`~engine.cli.make_mannequin`,
:mod:`~engine.cli.graph`, :mod:`~engine.cli.mm`, :mod:`~engine.cli.compress`, :mod:`~engine.cli.decompress`,
:mod:`~engine.cli.build`) has ``add_parser(subcommands)``, which adds its parser and sets ``run``
as the handler; the computations live in the library (``engine.io``, ``engine.anim``,
``engine.procedural``, ``engine.graph``, ``engine.motion_matching``, ``engine.compress``,
``engine.pipeline``). Errors
Ossa raises on purpose print as one line, ``ossa COMMAND: error: …``, with exit status 2 (as
argparse does for bad arguments); Ossa warnings print as ``ossa COMMAND: warning: …``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence

import engine
from engine.backend import backend_description
from engine.cli import build, compress, convert, decompress, evaluate, graph, inspect, make_mannequin, mm, retarget
from engine.errors import OssaError, OssaWarning

Handler = Callable[[argparse.Namespace], int]

#: The subcommand modules, in the order ``ossa --help`` lists them.
COMMANDS = (inspect, evaluate, convert, retarget, make_mannequin, graph, mm, compress, decompress, build)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="ossa", description="Ossa skeletal-animation runtime tools.")
    parser.add_argument(
        "--version", action="version", version=f"ossa {engine.__version__} (backend: {backend_description()})"
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ossa`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OssaWarning)
        try:
            status = handler(args)
        except OssaError as exc:
            status = 2
            error: OssaError | None = exc
        else:
            error = None
    for warning in caught:
        if issubclass(warning.category, OssaWarning):
            print(f"ossa {args.command}: warning: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if error is not None:
        print(f"ossa {args.command}: error: {error}", file=sys.stderr)
    return status
