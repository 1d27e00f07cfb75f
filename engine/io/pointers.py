"""``KHR_animation_pointer``: animation channels that target a JSON pointer instead of a node's path.

Ossa plays the pointers that animate what its scene animates — a node's ``translation``,
``rotation``, ``scale`` or ``weights`` (``/nodes/3/rotation``), and a mesh's default morph
weights (``/meshes/2/weights``: the weights of every node that instantiates the mesh without
weights of its own) — as ordinary channels of those nodes. Pointers to anything else (materials,
lights, cameras, texture transforms) are counted and left out, with one warning per file that
says how many of each kind.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.io.extensions import extension_object, string

if TYPE_CHECKING:
    from engine.io.gltf import GltfDocument

POINTER = "KHR_animation_pointer"

_NODE = re.compile(r"/nodes/(\d+)/(translation|rotation|scale|weights)")
_MESH = re.compile(r"/meshes/(\d+)/weights")


@dataclass(frozen=True)
class PointerTarget:
    """What one pointer channel animates.

    Attributes
    ----------
    nodes
        The glTF nodes whose ``path`` it animates (empty when ignored).
    path
        ``"translation"``, ``"rotation"``, ``"scale"`` or ``"weights"``; ``None`` for a pointer
        Ossa does not play.
    pointer
        The JSON pointer as written.
    """

    nodes: tuple[int, ...]
    path: str | None
    pointer: str

    @property
    def kind(self) -> str:
        """The pointer's first segment (``"materials"``, ``"extensions"``, …), for the summary warning."""
        return self.pointer.split("/")[1] if self.pointer.count("/") >= 1 else self.pointer


def resolve_pointer(doc: GltfDocument, target: Any, where: str) -> PointerTarget:
    """The nodes and path of channel target ``target`` (JSON at ``where``) whose path is ``"pointer"``.

    Raises
    ------
    AssetError
        The target has no ``KHR_animation_pointer`` object or pointer string, or a node or mesh
        pointer names an index out of range.
    """
    extension = extension_object(doc, target, POINTER, where)
    if extension is None:
        raise doc.error(f"path 'pointer' needs a {POINTER} extension object", where)
    ewhere = f"{where}.extensions.{POINTER}"
    pointer = string(doc, extension, "pointer", ewhere)
    node = _NODE.fullmatch(pointer)
    if node is not None:
        index = doc.index(int(node[1]), doc.count("nodes"), f"{ewhere}.pointer", "nodes")
        return PointerTarget((index,), node[2], pointer)
    mesh = _MESH.fullmatch(pointer)
    if mesh is not None:
        index = doc.index(int(mesh[1]), doc.count("meshes"), f"{ewhere}.pointer", "meshes")
        nodes = tuple(
            n for n, json in enumerate(doc.json.get("nodes", [])) if json.get("mesh") == index and "weights" not in json
        )
        return PointerTarget(nodes, "weights", pointer)
    return PointerTarget((), None, pointer)


def report_pointers(doc: GltfDocument, played: int, ignored: Sequence[PointerTarget]) -> None:
    """Note what was done with the file's pointer channels; one warning for the ignored ones."""
    if not played and not ignored:
        return
    kinds = Counter(target.kind for target in ignored)
    summary = ", ".join(f"{kind} {count}" for kind, count in sorted(kinds.items()))
    did = f"{played} node/mesh pointer channel(s) played"
    if ignored:
        did += f"; {len(ignored)} others ignored ({summary})"
        doc.warn(
            f"{POINTER}: {len(ignored)} of {played + len(ignored)} pointer channels animate what Ossa does not "
            f"animate ({summary}); ignored",
            "animations",
        )
    doc.note_extension(POINTER, did)
