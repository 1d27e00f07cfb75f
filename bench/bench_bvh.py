"""Parse time of pirouette.bvh (≈760 KB, 592 frames × 132 channels) against numpy's own reader.

Rows: ``np.loadtxt`` of the MOTION block alone (the baseline, numbers only), ``parse_bvh`` (text
→ skeleton + clip with quaternions, all validation included) and ``load_bvh`` (plus reading the
file). The issue's bar: ``parse_bvh`` at most 2× the baseline.

Run: ``python bench/bench_bvh.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import numpy as np
from _timing import median_ms

from engine.io.bvh import load_bvh, parse_bvh

PIROUETTE = Path(__file__).resolve().parents[2] / "shared" / "assets" / "pirouette_bvh" / "pirouette.bvh"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=25)
    parser.add_argument("--file", type=Path, default=PIROUETTE)
    args = parser.parse_args()
    text = args.file.read_text()
    start = text.index("\n", text.index("Frame Time")) + 1
    motion = text[start:]
    rows = [
        ("np.loadtxt(MOTION block)", lambda: np.loadtxt(io.StringIO(motion))),
        ("parse_bvh(text)", lambda: parse_bvh(text)),
        ("load_bvh(path)", lambda: load_bvh(args.file)),
    ]
    print(f"{args.file.name}: {len(text)} characters, median of {args.repeat} interleaved runs")
    print(f"{'what':<28}{'median ms':>10}{'× loadtxt':>11}")
    medians = median_ms([fn for _, fn in rows], args.repeat)
    for (name, _), ms in zip(rows, medians, strict=True):
        print(f"{name:<28}{ms:>10.2f}{ms / medians[0]:>11.2f}")


if __name__ == "__main__":
    main()
