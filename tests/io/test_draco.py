"""KHR_draco_mesh_compression: a skinned, textured primitive encoded with Google's Draco agrees with its arrays.

The stream is written by the reference encoder (DracoPy, vertex and face order preserved); the
reference is the arrays it was made from, to Draco's quantization (positions 14 bits over the
bounding cube, normals 10 bits, texture coordinates 12 bits; integer attributes exact).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.errors import AssetError
from engine.io import load_gltf
from tests.io.gltf_builder import DocBuilder
from tests.io.gltf_compress import DRACO, draco_primitive

RNG = np.random.default_rng(5)
COUNT = 40
POSITIONS = RNG.uniform(-1.0, 1.0, size=(COUNT, 3))
NORMALS = RNG.normal(size=(COUNT, 3))
NORMALS /= np.linalg.norm(NORMALS, axis=1, keepdims=True)
UVS = RNG.uniform(0.0, 1.0, size=(COUNT, 2))
JOINTS = RNG.integers(0, 2, size=(COUNT, 4))
WEIGHTS = np.concatenate([RNG.dirichlet([1.0, 1.0], size=COUNT), np.zeros((COUNT, 2))], axis=1)
INDICES = RNG.permutation(np.arange(COUNT * 3) % COUNT)


def document(joint_type: int = 5121, edit: Any = None) -> DocBuilder:
    """Two joints, one Draco primitive skinned to them; ``edit(b, primitive)`` breaks it."""
    b = DocBuilder()
    b.add("nodes", {"name": "root", "children": [1]})
    b.add("nodes", {"name": "tip", "translation": [0.0, 1.0, 0.0]})
    b.add("nodes", {"name": "body", "mesh": 0, "skin": 0})
    b.doc["scenes"] = [{"nodes": [0, 2]}]
    joints = JOINTS.astype(np.uint8 if joint_type == 5121 else np.uint16)
    primitive = draco_primitive(
        b,
        POSITIONS,
        INDICES,
        attributes={
            "NORMAL": (NORMALS, 5126, False),
            "TEXCOORD_0": (UVS, 5126, False),
            "JOINTS_0": (joints, joint_type, False),
            "WEIGHTS_0": (WEIGHTS.astype(np.float32), 5126, False),
        },
    )
    if edit is not None:
        edit(b, primitive)
    b.add("meshes", {"primitives": [primitive]})
    b.add("skins", {"joints": [0, 1]})
    return b


@pytest.mark.parametrize("joint_type", [5121, 5123], ids=["ubyte joints", "ushort joints"])
def test_a_draco_primitive_agrees_with_its_arrays(joint_type: int, tmp_path: Path) -> None:
    asset = load_gltf(document(joint_type).write(tmp_path / "draco.glb", "glb"))
    mesh = asset.mesh_nodes[0].primitives[0]
    assert [e.name for e in asset.extensions] == [DRACO]
    assert asset.warnings == ()
    np.testing.assert_array_equal(mesh.indices, INDICES)
    np.testing.assert_allclose(mesh.positions, POSITIONS, atol=2.0 / (2**14 - 1))  # the cube is 2 wide
    assert np.abs(mesh.normals - NORMALS).max() < 4.0 / (2**10 - 1)  # octahedral, 10 bits
    np.testing.assert_allclose(mesh.uvs, UVS, atol=1.0 / (2**12 - 1))
    order = asset.skins[0].from_gltf_order
    np.testing.assert_array_equal(mesh.joints, order[JOINTS])
    np.testing.assert_allclose(mesh.weights, WEIGHTS / WEIGHTS.sum(1, keepdims=True), atol=1e-7)


def rename(name: str, new: str) -> Any:
    def edit(b: DocBuilder, primitive: dict) -> None:
        ids = primitive["extensions"][DRACO]["attributes"]
        ids[new] = ids.pop(name)

    return edit


BAD = {
    "mode": (lambda b, p: p.update(mode=0), r"primitives\[0\]\.mode: Draco-compressed primitives must be TRIANGLES"),
    "attributes": (
        lambda b, p: p["extensions"][DRACO].update(attributes=[1, 2]),
        r"extensions\.KHR_draco_mesh_compression\.attributes: expected an object mapping attribute names to Draco ids",
    ),
    "no such attribute": (rename("NORMAL", "TANGENT"), r"the primitive has no TANGENT attribute for Draco attribute"),
    "no such id": (
        lambda b, p: p["extensions"][DRACO]["attributes"].update(NORMAL=99),
        r"attributes\.NORMAL: the Draco stream has no attribute 99 for NORMAL",
    ),
    "corrupt": (
        lambda b, p: b.blob.__setitem__(slice(len(b.blob) - 8, len(b.blob)), bytes(8)),
        r"bufferView: the Draco stream does not decode",
    ),
    "kind": (
        lambda b, p: b.doc["accessors"][p["attributes"]["WEIGHTS_0"]].update(componentType=5121, normalized=True),
        r"attributes\.WEIGHTS_0: decodes to float32 values, but the accessor's componentType 5121 is uint8",
    ),
    "count": (
        lambda b, p: b.doc["accessors"][p["attributes"]["NORMAL"]].update(count=COUNT - 1),
        rf"attributes\.NORMAL: decodes to {COUNT} elements of 3 components, but the accessor holds {COUNT - 1} VEC3",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_draco_primitives_raise_one_line_errors(case: str, tmp_path: Path) -> None:
    edit, message = BAD[case]
    with pytest.raises(AssetError, match=message) as info:
        load_gltf(document(edit=edit).write(tmp_path / "bad.gltf"))
    assert "meshes[0].primitives[0]" in str(info.value)
    assert "\n" not in str(info.value)
