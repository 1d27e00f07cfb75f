"""Generated glTF scenes for the programs' tests: the shapes of character files the corpus lacks.

- :func:`rigid_mannequin_document`: the mannequin rebuilt the way many low-poly characters are
  made: every body part a **rigid mesh parented to its bone node**, only the hands skinned, each
  hand by **its own skin** over its two joints. A program that draws only skin 0 shows one
  floating hand, and one that measures only skinned vertices reads a figure a hand tall.
- :func:`tests.io.gltf_builder.scene_document`: rigid meshes under a joint and a plain animated
  node, two skins, a non-joint node between joints, skinned points and lines, morph targets with
  animated weights.

Both are written with :class:`tests.io.gltf_builder.DocBuilder` (JSON and ``struct``, no engine
code). :func:`generated_path` writes each once per session.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import numpy as np

from engine.procedural.mannequin import build_mannequin
from tests.io.gltf_builder import DocBuilder, scene_document

HAND_JOINTS = (("hand_l", "fingers_l"), ("hand_r", "fingers_r"))
"""The joints of each hand skin, in palette order."""
BODY_COLOR = [0.85, 0.55, 0.3, 1.0]
HAND_COLOR = [0.3, 0.55, 0.85, 1.0]


def rigid_mannequin_document() -> tuple[DocBuilder, int]:
    """The mannequin as rigid parts under its joint nodes plus two skinned hands; the document and its mesh-node count.

    Nodes ``0..24`` are the mannequin's joints (same names, rest transforms and clips, file
    order); each triangle of the mannequin goes to the joint that weighs most on its first
    vertex: a hand's triangles to that hand's skinned mesh (each vertex fully on its own main
    joint), every other joint's to a rigid mesh node under that joint, its vertices taken from
    bind space into the joint's space by the joint's inverse bind matrix.
    """
    mannequin = build_mannequin()
    skeleton, mesh = mannequin.skeleton, mannequin.mesh
    names = list(skeleton.names)
    b = DocBuilder()

    def floats(values: np.ndarray, kind: str) -> int:
        array = np.asarray(values, dtype=np.float32)
        flat = array.reshape(len(array), -1)
        return b.accessor(array, 5126, kind, min=flat.min(0).tolist(), max=flat.max(0).tolist())

    for j, name in enumerate(names):
        node = {
            "name": name,
            "translation": skeleton.rest_translations[j].tolist(),
            "rotation": skeleton.rest_rotations[j].tolist(),
            "scale": skeleton.rest_scales[j].tolist(),
        }
        children = [int(c) for c in np.nonzero(skeleton.parents == j)[0]]
        if children:
            node["children"] = children
        b.add("nodes", node)
    b.add("materials", {"name": "body", "pbrMetallicRoughness": {"baseColorFactor": BODY_COLOR}})
    b.add("materials", {"name": "hands", "pbrMetallicRoughness": {"baseColorFactor": HAND_COLOR}})

    assert mesh.indices is not None
    assert mesh.joints is not None
    assert mesh.weights is not None
    triangles = mesh.indices.reshape(-1, 3)
    main = mesh.joints[np.arange(mesh.num_vertices), mesh.weights.argmax(axis=1)]
    owner = main[triangles[:, 0]]
    roots: list[int] = [0]
    mesh_nodes = 0
    for j, name in enumerate(names):
        if any(name in hand for hand in HAND_JOINTS) or not (owner == j).any():
            continue
        corners = triangles[owner == j].reshape(-1)
        inverse_bind = skeleton.inverse_bind_matrices[j]
        positions = mesh.positions[corners] @ inverse_bind[:3, :3].T + inverse_bind[:3, 3]
        normals = mesh.normals[corners] @ inverse_bind[:3, :3].T
        primitive = {
            "attributes": {"POSITION": floats(positions, "VEC3"), "NORMAL": floats(normals, "VEC3")},
            "material": 0,
        }
        index = b.add("meshes", {"name": f"{name}_part", "primitives": [primitive]})
        part = b.add("nodes", {"name": f"{name}_part", "mesh": index})
        b.doc["nodes"][j].setdefault("children", []).append(part)
        mesh_nodes += 1
    for hand in HAND_JOINTS:
        joints = [names.index(name) for name in hand]
        corners = triangles[np.isin(owner, joints)].reshape(-1)
        slots = np.array([joints.index(int(j)) for j in main[corners]])
        influences = np.zeros((len(corners), 4), dtype=np.uint8)
        influences[:, 0] = slots
        weights = np.zeros((len(corners), 4))
        weights[:, 0] = 1.0
        primitive = {
            "attributes": {
                "POSITION": floats(mesh.positions[corners], "VEC3"),
                "NORMAL": floats(mesh.normals[corners], "VEC3"),
                "JOINTS_0": b.accessor(influences, 5121, "VEC4"),
                "WEIGHTS_0": b.accessor(weights, 5126, "VEC4"),
            },
            "material": 1,
        }
        index = b.add("meshes", {"name": hand[0], "primitives": [primitive]})
        skin = b.add(
            "skins",
            {
                "name": hand[0],
                "joints": joints,
                "inverseBindMatrices": b.accessor(skeleton.inverse_bind_matrices[joints], 5126, "MAT4"),
            },
        )
        roots.append(b.add("nodes", {"name": f"{hand[0]}_mesh", "mesh": index, "skin": skin}))
        mesh_nodes += 1
    for clip in mannequin.clips.values():
        samplers, channels = [], []
        for channel in clip.channels:
            samplers.append(
                {
                    "input": floats(channel.times[:, None], "SCALAR"),
                    "output": b.accessor(
                        np.asarray(channel.values, dtype=np.float32),
                        5126,
                        "VEC3" if channel.path != "rotation" else "VEC4",
                    ),
                    "interpolation": channel.interpolation,
                }
            )
            channels.append({"sampler": len(samplers) - 1, "target": {"node": channel.target, "path": channel.path}})
        b.add("animations", {"name": clip.name, "samplers": samplers, "channels": channels})
    b.doc["scenes"] = [{"nodes": roots}]
    b.doc["scene"] = 0
    return b, mesh_nodes


GENERATED = {
    "rigid-mannequin": lambda: rigid_mannequin_document()[0],
    "scene-document": scene_document,
}
"""Generated scene name → its document builder."""


@functools.cache
def generated_path(name: str) -> Path:
    """The ``.glb`` of generated scene ``name``, written once per session into a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="ossa-game-scenes-"))
    return GENERATED[name]().write(folder / f"{name}.glb", form="glb")
