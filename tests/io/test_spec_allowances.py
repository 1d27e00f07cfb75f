"""What the glTF spec allows loads: ``skin.skeleton`` as a hint, joints outside the default scene,
zero-length clips (Godot's ``RESET``), skin joints no vertex is weighted to (IK and control bones)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.anim import model_from_pose, sample, skinning_palette
from engine.anim.scene import instance_vertices
from engine.errors import AssetError
from engine.io import load_character, load_gltf
from tests.io.gltf_builder import DocBuilder, quat_z, skinned_document


def skinned() -> DocBuilder:
    """``skinned_document`` without its clip of the armature (a node above the skeleton: load_character warns)."""
    b = skinned_document()
    del b.doc["animations"][1]
    return b


def test_a_skeleton_hint_beside_the_joints_root_is_read_as_a_hint(tmp_path: Path) -> None:
    """FBX2glTF names a node that is not an ancestor of the joints' common root; three.js and the validator read it."""
    b = skinned()
    b.doc["skins"][0]["skeleton"] = 3  # the mesh node: a sibling of the joints' root, not an ancestor
    hinted = load_character(b.write(tmp_path / "hinted.gltf"))
    plain = load_character(skinned().write(tmp_path / "plain.gltf"))
    assert hinted.skeleton.names == plain.skeleton.names
    np.testing.assert_array_equal(hinted.root_transform, plain.root_transform)


def test_a_skeleton_hint_out_of_range_is_still_an_error(tmp_path: Path) -> None:
    b = skinned()
    b.doc["skins"][0]["skeleton"] = 40
    with pytest.raises(AssetError, match=r"skins\[0\]\.skeleton: index 40 is out of range: the file has 5 nodes"):
        load_gltf(b.write(tmp_path / "bad.gltf"))


def skin_outside_scene() -> DocBuilder:
    """The Asset Generator's Animation_Skin_03: the scene lists the mesh node only; the joints are a root apart."""
    b = skinned()
    b.doc["nodes"][0]["children"] = [1]  # armature keeps the joints; the mesh node becomes a scene root
    b.doc["scenes"] = [{"nodes": [3]}]
    return b


def test_joints_outside_the_default_scene_move_the_mesh(tmp_path: Path) -> None:
    asset = load_gltf(skin_outside_scene().write(tmp_path / "skin03.gltf"))
    scene = asset.scene
    assert len(scene.instances) == 1
    assert len(scene.skins) == 1
    assert [asset.node_indices[h] for h in range(asset.hierarchy.num_joints)] == [3, 0, 1, 2, 4]
    inside = load_gltf(skinned_document().write(tmp_path / "inside.gltf"))
    for t in (0.0, 0.6, 1.7):  # the same skinned vertices as when the joints are in the scene
        ours = instance_vertices(scene, scene.sample("wave", t), 0, 0)[0]
        theirs = instance_vertices(inside.scene, inside.scene.sample("wave", t), 0, 0)[0]
        np.testing.assert_allclose(ours, theirs, atol=1e-12)
    assert asset.warnings == ()


def test_joints_outside_the_scene_draw_none_of_their_meshes(tmp_path: Path) -> None:
    b = skin_outside_scene()
    b.add("nodes", {"name": "prop", "mesh": 0})  # a mesh node inside the joints' tree, outside the scene
    b.doc["nodes"][2]["children"] = [4, 5]
    asset = load_gltf(b.write(tmp_path / "skin03.gltf"))
    assert [m.gltf_node for m in asset.mesh_nodes] == [3]


def test_a_zero_length_clip_holds_its_pose(tmp_path: Path) -> None:
    """Godot writes a one-key ``RESET`` clip (duration 0): it samples to that key at every time."""
    b = skinned()
    key = b.accessor([0.0], 5126, "SCALAR", min=[0.0], max=[0.0])
    pose = b.accessor([quat_z(0.2)], 5126, "VEC4")
    reset = {
        "samplers": [{"input": key, "output": pose}],
        "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}],
    }
    b.doc["animations"].insert(0, {"name": "RESET", **reset})
    character = load_character(b.write(tmp_path / "reset.gltf"))
    clip = character.clips["RESET"]
    assert clip.duration == 0.0
    spine = character.skeleton.names.index("spine")
    rotations = sample(clip, character.skeleton.rest_pose, np.array([0.0, 0.5, 30.0])).rotations[:, spine]
    np.testing.assert_allclose(rotations, [quat_z(0.2)] * 3, atol=1e-15)


def test_unweighted_control_joints_load_and_skin(tmp_path: Path) -> None:
    """A joint no vertex follows (an IK target, a control bone) is a joint like any other."""
    b = skinned()
    b.add("nodes", {"name": "ik_target", "translation": [0.5, 0.0, 0.0]})
    b.doc["nodes"][0]["children"].append(5)
    b.doc["skins"][0]["joints"].append(5)
    binds = []
    for height in (3.5, 0.5, 1.5, 0.0):
        m = np.eye(4)
        m[1, 3] = -height
        binds.append(m)
    b.doc["skins"][0]["inverseBindMatrices"] = b.accessor(binds, 5126, "MAT4")
    character = load_character(b.write(tmp_path / "control.gltf"))
    assert "ik_target" in character.skeleton.names
    assert character.skeleton.levels[0].size == 2  # hip and the control joint are both roots under the armature
    pose = sample(character.clips["wave"], character.skeleton.rest_pose, np.array([0.5]))
    palette = skinning_palette(character.skeleton, model_from_pose(character.skeleton, pose))
    assert np.isfinite(palette).all()
    assert not np.isin(
        character.skeleton.names.index("ik_target"), character.meshes[0].joints[character.meshes[0].weights > 0]
    )
