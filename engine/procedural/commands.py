"""What ``ossa make-mannequin`` does: write the generated character with every clip the programs play."""

from __future__ import annotations

from pathlib import Path

from engine.anim.clip import Clips
from engine.io.gltf_writer import save_gltf
from engine.procedural.mannequin import Mannequin, build_mannequin
from engine.procedural.strafe import build_strafe_clips

#: Where the programs look for the character by default (generated, not hand-made).
DEFAULT_PATH = Path(__file__).resolve().parents[2] / "assets" / "mannequin.glb"


def write_mannequin(path: str | Path = DEFAULT_PATH) -> tuple[Path, Mannequin]:
    """Build the mannequin and write its skeleton, mesh and clips to ``path``; returns the path and the mannequin.

    The file holds :func:`~engine.procedural.mannequin.build_mannequin`'s clips and the sideways
    and backward gaits of :func:`~engine.procedural.strafe.build_strafe_clips`, which the demo's
    locomotion graph (``game/demo/locomotion.toml``) plays too: ``ossa graph check
    game/demo/locomotion.toml --model assets/mannequin.glb`` binds every clip it names. The
    returned mannequin's clips are all of them, in the file's order.
    """
    built = build_mannequin()
    clips = {**built.clips, **build_strafe_clips(built.skeleton)}
    mannequin = Mannequin(built.skeleton, built.mesh, Clips(clips))
    written = save_gltf(path, mannequin.skeleton, list(clips.values()), [mannequin.mesh])
    return written, mannequin
