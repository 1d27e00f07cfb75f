"""Run a program's ``main`` in this process and keep the program object it made.

The tests replace the program class (``DemoGame``, ``CrowdDemo``, ``CameraLab``) with a recording
subclass, load models through a cached loader and run in a scratch directory (screenshots land
there).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest

from game import app

P = TypeVar("P")


def run_recorded(
    main: Callable[[Sequence[str]], int],
    module: ModuleType,
    name: str,
    program: Callable[[argparse.Namespace], P],
    directory: Path,
    argv: Sequence[str],
    load: Callable[..., Any],
) -> tuple[int, list[P]]:
    """``main(argv)`` in ``directory`` with ``module.name`` made by ``program`` and models read by ``load``.

    Returns the exit code and the program objects made (one per run of the loop).
    """
    made: list[P] = []

    def factory(args: argparse.Namespace) -> P:
        made.append(program(args))
        return made[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        patch.setattr(app, "load_model", load)
        patch.setattr(module, name, factory)
        code = main(list(argv))
    return code, made


def but_kernels(lines: list[str]) -> list[str]:
    """``lines`` (a program's stderr) without its notes about compiling its kernels (:data:`game.app.COMPILING`)."""
    return [line for line in lines if app.COMPILING not in line and ": note: kernels ready in " not in line]
