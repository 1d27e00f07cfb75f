"""What ``ossa make-mannequin`` does: write the generated character to a glTF file."""

from __future__ import annotations

from pathlib import Path

from engine.io.gltf_writer import save_gltf
from engine.procedural.mannequin import Mannequin, build_mannequin

#: Where the programs look for the character by default (generated, not hand-made).
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "assets" / "mannequin.glb"


def write_mannequin(path: str | Path = DEFAULT_PATH) -> tuple[Path, Mannequin]:
    """Build the mannequin and write its skeleton, clips and mesh to ``path``; returns the path and the mannequin."""
    mannequin = build_mannequin()
    written = save_gltf(path, mannequin.skeleton, list(mannequin.clips.values()), [mannequin.mesh])
    return written, mannequin
