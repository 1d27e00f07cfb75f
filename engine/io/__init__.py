"""Offline side: reading files (glTF/GLB, BVH) into validated, read-only runtime data.

Start with :func:`load_character` (one skinned character) or :func:`load_gltf` (the whole file;
``load_gltf(path).scene`` is every mesh, skin and animated node as one runtime
:class:`~engine.anim.scene.Scene`).
"""

from engine.io.build import GltfAsset, MeshNode, SkinData, load_gltf
from engine.io.bvh import load_bvh
from engine.io.bvh_character import load_bvh_character
from engine.io.character import Character, load_character
from engine.io.clip_files import ClipFile
from engine.io.clip_sources import ClipSource, read_clip_sources

__all__ = [
    "Character",
    "ClipFile",
    "ClipSource",
    "GltfAsset",
    "MeshNode",
    "SkinData",
    "load_bvh",
    "load_bvh_character",
    "load_character",
    "load_gltf",
    "read_clip_sources",
]
