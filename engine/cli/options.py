"""Argument types and options shared by several ``ossa`` subcommands."""

from __future__ import annotations

import argparse
import errno
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.errors import InvalidInputError
from engine.io.bvh import UNITS

#: Short unit names ``--scale`` accepts → the unit's name in :data:`engine.io.bvh.UNITS`.
UNIT_NAMES = {
    "mm": "millimetres",
    "cm": "centimetres",
    "in": "inches",
    "cmu": "CMU units (inches / 0.45)",
    "ft": "feet",
    "m": "metres",
}


def scale(text: str) -> float:
    """``--scale``: metres per file unit (``0.01``) or a unit name (``cm``), as a positive number.

    >>> scale("cm"), round(scale("cmu"), 5), scale("0.5")
    (0.01, 0.05644, 0.5)
    """
    if text.lower() in UNIT_NAMES:
        return UNITS[UNIT_NAMES[text.lower()]]
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(
            f"expected metres per file unit (a positive number such as 0.01) or a unit ({', '.join(UNIT_NAMES)}), "
            f"got {text!r}"
        )
    return value


def add_scale(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--scale`` (BVH length unit) to ``parser``; ``what`` names the file it applies to."""
    parser.add_argument(
        "--scale",
        type=scale,
        default=None,
        metavar="UNIT",
        help=f"length unit of {what}: metres per file unit (0.01) or {'/'.join(UNIT_NAMES)} "
        "(default: detected from the skeleton's height, a warning says when it is not cm)",
    )


def add_clips(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--clips FILE...``: glTF files whose clips bind to ``what`` by node name."""
    parser.add_argument(
        "--clips",
        type=Path,
        nargs="+",
        default=[],
        metavar="FILE",
        help=f"glTF files whose clips to add to {what}, bound by node name (an asset pack's animation files)",
    )


def gltf_path(text: str) -> Path:
    """An output path ending in ``.glb`` or ``.gltf``."""
    path = Path(text)
    if path.suffix.lower() not in {".glb", ".gltf"}:
        raise argparse.ArgumentTypeError(f"expected a .glb or .gltf file name, got {text!r}")
    return path


def is_bvh(path: Path) -> bool:
    """Whether ``path`` names a BVH file (by its suffix)."""
    return path.suffix.lower() == ".bvh"


def refuse_scale_for_gltf(args: argparse.Namespace, path: Path) -> None:
    """``--scale`` only means something for BVH files (glTF is in metres)."""
    if getattr(args, "scale", None) is not None and not is_bvh(path):
        raise InvalidInputError(f"--scale applies to .bvh files; {path.name} is glTF, whose lengths are metres")


def write_json(document: Any, out: Path | None, flag: str = "--out") -> None:
    """Print ``document`` as JSON, or write it to ``out`` (an unwritable ``out`` is named by ``flag``)."""
    text = json.dumps(document)
    if out is None:
        print(text)
        return
    write_text(out, text + "\n", flag)


def write_text(path: Path, text: str, flag: str) -> None:
    """Write ``text`` to ``path``, naming ``flag`` when that fails."""
    with writing(path, flag):
        path.write_text(text)


@contextmanager
def writing(path: Path, flag: str) -> Iterator[None]:
    """Turn a failure to write ``path`` into one line naming ``flag`` (``--out``, ``OUT``).

    A missing folder is such a failure for every output (no folder is made behind the user's back;
    the programs' ``--screenshot`` and the contact sheet's ``--out`` say the same before they run).
    """
    try:
        if not path.parent.is_dir():
            code = errno.ENOTDIR if path.parent.exists() else errno.ENOENT
            raise OSError(code, os.strerror(code), str(path.parent))
        yield
    except OSError as exc:
        raise InvalidInputError(f"{flag} {path}: cannot write: {exc.strerror or exc}") from None
