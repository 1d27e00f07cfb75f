"""Small clip files for the command and pipeline tests: BVH takes of the CMU-named test rig."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.anim.rigs import rig, to_bvh, walk


def write_take(path: Path, *, frames: int = 16, rate: float = 30.0, period: float = 1.0) -> Path:
    """A walk of ``frames`` frames as a BVH file in the rig's units (CMU-like); returns the path."""
    cmu = rig("cmu")
    times = np.arange(frames) / rate
    translations, rotations = walk(cmu, times, period=period)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_bvh(cmu, translations, rotations, 1.0 / rate))
    return path
