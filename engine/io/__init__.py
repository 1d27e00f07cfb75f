"""Offline side: reading files (glTF/GLB, BVH) into validated, read-only runtime data.

Start with :func:`load_character` (one skinned character) or :func:`load_gltf` (the whole file;
``load_gltf(path).scene`` is every mesh, skin and animated node as one runtime
:class:`~engine.anim.scene.Scene`).
"""

from engine.io.build import GltfAsset, MeshNode, SkinData, load_gltf
from engine.io.bvh import load_bvh
from engine.io.character import Character, load_character

__all__ = ["Character", "GltfAsset", "MeshNode", "SkinData", "load_bvh", "load_character", "load_gltf"]
