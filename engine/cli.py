"""The ``ossa`` command line: one subcommand per task (``ossa --help`` lists them)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

import engine
from engine.errors import OssaError

Handler = Callable[[argparse.Namespace], int]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(prog="ossa", description="Ossa skeletal-animation runtime tools.")
    parser.add_argument("--version", action="version", version=f"ossa {engine.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ossa`` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    try:
        return handler(args)
    except OssaError as exc:
        print(f"ossa {args.command}: error: {exc}", file=sys.stderr)
        return 2


#: Modules providing ``register(subparsers)``, which adds a subcommand and sets ``handler``.
COMMAND_MODULES: tuple[str, ...] = ("engine.procedural.commands", "engine.io.commands", "engine.io.mocap_commands")


if __name__ == "__main__":
    raise SystemExit(main())
