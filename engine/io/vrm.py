"""VRM humanoids (``.vrm``: binary glTF with the ``VRM`` 0.x or ``VRMC_vrm`` 1.0 extension): the bone map.

A VRM file says which node is each humanoid bone (``hips``, ``leftUpperArm``, …), whatever the
nodes are named. :func:`read_humanoid` reads that map and turns it into Ossa's body roles
(:data:`engine.anim.humanoid.ROLES`), which the skeletons built from the file carry
(:attr:`Skeleton.humanoid <engine.anim.skeleton.Skeleton.humanoid>`) so that humanoid detection
and retargeting take them before any name guessing. The chest is VRM's ``upperChest``, else its
``chest``, else its ``spine`` (where the arms branch off); fingers, eyes and the jaw have no
Ossa role. Everything else of VRM (materials, spring bones, expressions) is not read.
"""

from __future__ import annotations

from typing import Any

from engine.io.extensions import extension_object, integer, string
from engine.io.gltf import GltfDocument

#: VRM humanoid bone → Ossa role, both sides (``left``/``right`` is the character's own side).
_SIDED = {
    "Shoulder": "clavicle",
    "UpperArm": "upper_arm",
    "LowerArm": "lower_arm",
    "Hand": "hand",
    "UpperLeg": "upper_leg",
    "LowerLeg": "lower_leg",
    "Foot": "foot",
    "Toes": "toes",
}
BONE_ROLES = {
    "hips": "hips",
    "neck": "neck",
    "head": "head",
    **{
        f"{word}{bone}": f"{part}_{side}"
        for bone, part in _SIDED.items()
        for word, side in (("left", "l"), ("right", "r"))
    },
}
#: VRM bones that may be Ossa's chest, the first present wins.
CHEST_BONES = ("upperChest", "chest", "spine")


def read_humanoid(doc: GltfDocument) -> dict[int, str]:
    """Each glTF node → its Ossa role, from the file's VRM 1.0 or 0.x humanoid bone map (empty without one).

    Raises
    ------
    AssetError
        The bone map is malformed (not an object or list of the VRM schema's shape, a node index
        out of range, a bone listed twice).
    """
    bones, name = _bone_nodes(doc)
    if not bones:
        return {}
    roles: dict[int, str] = {}
    chest = next((bone for bone in CHEST_BONES if bone in bones), None)
    named: dict[int, str] = {}
    for bone, node in bones.items():
        if node in named:
            raise doc.error(
                f"node {node} is both {named[node]!r} and {bone!r}", f"extensions.{name}.humanoid.humanBones"
            )
        named[node] = bone
        role = "chest" if bone == chest else BONE_ROLES.get(bone)
        if role is not None:
            roles[node] = role
    doc.note_extension(name, f"humanoid bone map read: {len(roles)} of its {len(bones)} bones are Ossa roles")
    return roles


def _bone_nodes(doc: GltfDocument) -> tuple[dict[str, int], str]:
    """VRM bone name → node index, and the extension it came from."""
    nodes = doc.count("nodes")
    vrm1 = extension_object(doc, doc.json, "VRMC_vrm", "document")
    if vrm1 is not None:
        where = "extensions.VRMC_vrm.humanoid.humanBones"
        humanoid = vrm1.get("humanoid", {})
        human_bones = humanoid.get("humanBones", {}) if isinstance(humanoid, dict) else None
        if not isinstance(human_bones, dict):
            raise doc.error("expected an object of bone name → {node}", where)
        return {
            bone: doc.index(_node(doc, entry, f"{where}.{bone}"), nodes, f"{where}.{bone}.node", "nodes")
            for bone, entry in human_bones.items()
        }, "VRMC_vrm"
    vrm0 = extension_object(doc, doc.json, "VRM", "document")
    if vrm0 is None:
        return {}, ""
    where = "extensions.VRM.humanoid.humanBones"
    humanoid = vrm0.get("humanoid", {})
    human_bones = humanoid.get("humanBones", []) if isinstance(humanoid, dict) else None
    if not isinstance(human_bones, list):
        raise doc.error("expected an array of {bone, node}", where)
    bones: dict[str, int] = {}
    for k, entry in enumerate(human_bones):
        bone = string(doc, entry if isinstance(entry, dict) else {}, "bone", f"{where}[{k}]")
        if bone in bones:
            raise doc.error(f"bone {bone!r} is listed twice", f"{where}[{k}].bone")
        bones[bone] = doc.index(_node(doc, entry, f"{where}[{k}]"), nodes, f"{where}[{k}].node", "nodes")
    return bones, "VRM"


def _node(doc: GltfDocument, entry: Any, where: str) -> int:
    if not isinstance(entry, dict):
        raise doc.error("expected an object with a node", where)
    return integer(doc, entry, "node", where)
