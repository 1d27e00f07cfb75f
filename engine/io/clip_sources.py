"""Every clip of a BVH or glTF file, with the skeleton it plays on: the one reader of clip sources.

:func:`read_clip_sources` is what ``ossa compress``, ``ossa build`` and the tools that gather
clips read. A BVH take is one clip, from its first captured frame on
(:attr:`~engine.io.bvh.BvhAnimation.captured_clip`: a converter's calibration T-pose frame is
left out, :attr:`ClipSource.calibration_frames` says how many; its unit detected from the
skeleton's height unless ``scale`` is given);
a glTF file gives every clip of its first skin, with the meshes that skin deforms (for shells
sized from the mesh). Warnings the loaders raise are returned as text, one line each.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import local_to_model
from engine.anim.mesh import MeshData
from engine.anim.skeleton import Skeleton
from engine.anim.units import unit_for_height
from engine.errors import AssetError, OssaWarning
from engine.io.bvh import load_bvh
from engine.io.character import Character, load_character
from engine.math._checks import FloatArray

#: File suffixes read as clips.
SUFFIXES = (".bvh", ".glb", ".gltf")


@dataclass(frozen=True, eq=False)
class ClipSource:
    """One clip of a file.

    Attributes
    ----------
    path
        The file.
    index, name
        The clip's position in the file and the name it gets in a library: the file's stem for a
        BVH take, ``stem/clip`` for a glTF clip.
    skeleton, clip, meshes
        What plays, on what, over which skinned meshes (none for BVH).
    up
        ``(3,)`` the skeleton's model-space up axis (for retargeting).
    metres_per_unit
        Length of one model-space unit (1 for BVH, converted at import; a glTF character's root
        scale times its detected unit).
    unit
        How lengths were read: the BVH unit (detected or given), or the glTF one.
    calibration_frames
        Frames at the start of a BVH take left out as a converter's calibration pose (0 or 1;
        :attr:`~engine.io.bvh.BvhAnimation.calibration_frames`); 0 for glTF.
    """

    path: Path
    index: int
    name: str
    skeleton: Skeleton
    clip: Clip
    meshes: tuple[MeshData, ...]
    up: FloatArray
    metres_per_unit: float
    unit: str
    calibration_frames: int = 0


def character_up(character: Character) -> FloatArray:
    """The skeleton's model-space up: world +Y through the node above the skeleton."""
    up = np.linalg.solve(character.root_transform[:3, :3], [0.0, 1.0, 0.0])
    return up / np.linalg.norm(up)


#: Joint spans (metres) a glTF figure may have and still be read in metres, as the spec says.
PLAUSIBLE_SPAN = (0.25, 3.0)


def gltf_unit(character: Character) -> tuple[float, str]:
    """Metres per model unit of a glTF character, and how that was decided.

    glTF lengths are metres, but exporters write centimetre or inch figures: when the rest joints
    span (along world up) less than 0.25 m or more than 3 m, the unit of
    :func:`engine.anim.units.unit_for_height` that makes the span a standing 1.6 m is used.
    The root node's scale counts too.
    """
    skeleton = character.skeleton
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    world = np.einsum("ij,kj->ki", character.root_transform[:3, :3], model[:, :3, 3])
    root_scale = float(np.linalg.norm(character.root_transform[:3, :3], ord=2))
    span = float(np.ptp(world[:, 1])) if skeleton.num_joints > 1 else 0.0
    if span == 0.0 or PLAUSIBLE_SPAN[0] <= span <= PLAUSIBLE_SPAN[1]:
        return root_scale, "metres (glTF)"
    name, metres = unit_for_height(span, 1.6)
    return root_scale * metres, f"{name} (detected: the joints span {span * metres:.2f} m)"


def _warnings_text(caught: Sequence[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, OssaWarning)]


def read_clip_sources(path: str | Path, *, scale: float | None = None) -> tuple[list[ClipSource], list[str]]:
    """The clips of ``path`` and the loader's warnings.

    Raises
    ------
    AssetError
        A file that cannot be read, is malformed, has no skin (glTF) or no clip.
    """
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise AssetError(f"not a clip file: expected one of {', '.join(SUFFIXES)}", file=str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OssaWarning)
        if path.suffix.lower() == ".bvh":
            anim = load_bvh(path, scale=scale)
            up = np.array([0.0, 1.0, 0.0])
            calibration = anim.calibration_frames
            clip = anim.captured_clip
            sources = [ClipSource(path, 0, path.stem, anim.skeleton, clip, (), up, 1.0, anim.unit, calibration)]
        else:
            if scale is not None:
                raise AssetError("--scale applies to .bvh files; glTF lengths are metres", file=str(path))
            try:
                character = load_character(path, textures=False)
            except AssetError as exc:
                if exc.problem.startswith("skin 0 requested"):
                    raise AssetError("has no skin: no skeleton to compress clips for", file=str(path)) from None
                raise
            up = character_up(character)
            metres, unit = gltf_unit(character)
            sources = [
                ClipSource(path, k, f"{path.stem}/{name}", character.skeleton, clip, character.meshes, up, metres, unit)
                for k, (name, clip) in enumerate(character.clips.items())
            ]
    if not sources:
        raise AssetError("has no clips", file=str(path))
    return sources, _warnings_text(caught)


def find_clip_files(sources: Sequence[str | Path]) -> list[Path]:
    """Every clip file named, or found under a named folder (recursively), sorted, without repeats.

    Raises
    ------
    AssetError
        A path that does not exist, or a named file that is not a clip file.
    """
    found: set[Path] = set()
    for source in sources:
        path = Path(source)
        if path.is_dir():
            found |= {p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES}
        elif path.is_file():
            if path.suffix.lower() not in SUFFIXES:
                raise AssetError(f"not a clip file: expected one of {', '.join(SUFFIXES)}", file=str(path))
            found.add(path)
        else:
            raise AssetError("no such file or folder", file=str(path))
    return sorted(found)
