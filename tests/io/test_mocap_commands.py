"""``ossa convert``, ``retarget``, BVH ``inspect``/``evaluate``, BVH characters: files written and read back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.anim import Skeleton, model_from_pose, sample
from engine.anim.retarget import plan_retarget, propose_joint_map, retarget_pose
from engine.anim.scene import Scene, SceneSkin
from engine.cli import main
from engine.errors import AssetError, OssaWarning
from engine.io import load_character, load_gltf
from engine.io.bvh import load_bvh
from engine.io.bvh_character import bone_mesh, load_bvh_character, skin_bones
from engine.io.gltf_writer import save_gltf_with_clips
from engine.io.mocap_commands import clip_on_nodes, rest_mesh
from tests.anim.rigs import rig, to_bvh, walk
from tests.conftest import ROOT, require_or_skip
from tests.helpers import assert_quat_allclose

TINY = """HIERARCHY
ROOT hips
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT spine
  {
    OFFSET 0 20 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 30 0
    }
  }
  JOINT leg
  {
    OFFSET 10 0 0
    CHANNELS 3 Xrotation Yrotation Zrotation
    End Site
    {
      OFFSET 0 -40 0
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.5
0 90 0 0 0 0 10 20 30 0 0 0
5 91 0 0 45 0 -10 0 5 30 0 0
10 92 1 10 90 0 -20 0 0 60 0 10
"""

MANNEQUIN = ROOT / "assets" / "mannequin.glb"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.bvh"
    path.write_text(TINY)
    return path


def validator_issues(path: Path) -> dict:
    """The Khronos glTF validator's report (skips when it is not installed)."""
    module, node = os.environ.get("OSSA_GLTF_VALIDATOR"), shutil.which("node")
    if not module or not node:
        require_or_skip(
            "set OSSA_GLTF_VALIDATOR to an npm gltf-validator folder (see README)", "OSSA_REQUIRE_VALIDATOR"
        )
    script = (
        "const v = require(process.argv[1]); const fs = require('fs');"
        "v.validateBytes(new Uint8Array(fs.readFileSync(process.argv[2])))"
        ".then(r => console.log(JSON.stringify(r.issues)));"
    )
    out = subprocess.run([node, "-e", script, str(module), str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def validate(path: Path) -> None:
    """The Khronos glTF validator finds no error and no warning (skips when it is not installed)."""
    issues = validator_issues(path)
    assert (issues["numErrors"], issues["numWarnings"]) == (0, 0), issues["messages"][:5]


def problems(path: Path) -> list[tuple[str, str]]:
    """The validator's errors and warnings as ``(code, JSON pointer)``."""
    return sorted((m["code"], m["pointer"]) for m in validator_issues(path)["messages"] if m["severity"] <= 1)


def quiet_character(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_character(path, textures=False)


# --- convert --------------------------------------------------------------------------------------


def test_convert_writes_a_glb_that_reads_back_as_the_same_motion(tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "tiny.glb"
    assert main(["convert", str(tiny), str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    anim = load_bvh(tiny)
    back = load_character(out)
    assert back.skeleton.names == anim.skeleton.names
    np.testing.assert_array_equal(back.skeleton.parents, anim.skeleton.parents)
    np.testing.assert_allclose(back.skeleton.inverse_bind_matrices, anim.skeleton.inverse_bind_matrices, atol=1e-7)
    times = np.array([0.0, 0.25, 0.5, 0.8, 1.0])
    expected = model_from_pose(anim.skeleton, sample(anim.clip, anim.skeleton.rest_pose, times))
    got = model_from_pose(back.skeleton, sample(back.clips["tiny"], back.skeleton.rest_pose, times))
    np.testing.assert_allclose(got, expected, atol=2e-6)
    assert back.meshes[0].num_vertices == 24 * 4  # four bones, eight triangles each
    validate(out)


def test_convert_without_mesh_or_tips(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "bare.gltf"
    assert main(["convert", str(tiny), str(out), "--no-mesh", "--no-end-sites", "--scale", "1"]) == 0
    asset = load_gltf(out)
    assert asset.hierarchy.names == ("hips", "spine", "leg")
    assert asset.skins == ()
    np.testing.assert_allclose(asset.hierarchy.rest_translations[1], [0, 20, 0])
    assert [c.name for c in asset.clips] == ["tiny"]


@pytest.mark.assets
def test_convert_pirouette_is_valid_gltf(shared_assets: Path, tmp_path: Path) -> None:
    out = tmp_path / "pirouette.glb"
    assert main(["convert", str(shared_assets / "pirouette_bvh" / "pirouette.bvh"), str(out)]) == 0
    back = load_character(out)
    assert back.skeleton.num_joints == 57
    assert back.clips["pirouette"].duration == pytest.approx(590 * 0.00833333, rel=1e-6)  # frame 0: calibration
    validate(out)


def test_bone_mesh_follows_the_parents_and_faces_outwards(tiny: Path) -> None:
    skeleton = load_bvh(tiny).skeleton
    mesh = bone_mesh(skeleton)
    triangles = mesh.positions.reshape(-1, 3, 3)
    normals = mesh.normals.reshape(-1, 3, 3)[:, 0]
    np.testing.assert_allclose(np.linalg.norm(normals, axis=-1), 1.0)
    bones = np.repeat(np.nonzero(skeleton.parents >= 0)[0], 8)  # child joint of each triangle
    model = model_from_pose(skeleton, skeleton.rest_pose)[:, :3, 3]
    start, end = model[skeleton.parents[bones]], model[bones]
    centroid = triangles.mean(axis=1)
    axis = (end - start) / np.linalg.norm(end - start, axis=-1, keepdims=True)
    foot = start + np.sum((centroid - start) * axis, axis=-1, keepdims=True) * axis  # nearest point on the bone
    assert np.all(np.sum(normals * (centroid - foot), axis=-1) > 0)
    np.testing.assert_array_equal(mesh.joints[:, 0], np.repeat(skeleton.parents[bones], 3))
    np.testing.assert_array_equal(mesh.weights[:, 0], 1.0)


def test_a_skins_bones_join_each_joint_to_its_nearest_ancestor_in_the_skin() -> None:
    """root → hip → bend (not a joint) → chest → hat; the skin [chest, hat, hip] (palette order is not hierarchy order).

    Bones hip → chest (past ``bend``) and chest → hat, each skinned to its upper joint, at the bind
    pose (the inverse bind matrices inverted by numpy; the bind pose is not the rest pose here), within
    ``width`` × its length of the segment; the hip, whose ancestors are not in the skin, starts none.
    """
    turn = [0.0, 0.0, np.sin(0.2), np.cos(0.2)]
    skeleton = Skeleton(
        ["root", "hip", "bend", "chest", "hat"],
        [-1, 0, 1, 2, 3],
        rest_translations=[[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.5, 0.0], [0.3, 0.4, 0.0]],
        rest_rotations=[turn, turn, turn, [0.0, 0.0, 0.0, 1.0], turn],
    )
    bind_pose = skeleton.rest_pose.copy()
    bind_pose.translations[4] = [0.0, 0.6, 0.2]  # the hat bound elsewhere than it rests
    bind = model_from_pose(skeleton, bind_pose)
    joints = [3, 4, 1]
    scene = Scene(skeleton, (SceneSkin("body", np.array(joints), np.linalg.inv(bind[joints])),), ())
    mesh = skin_bones(scene, 0, width=0.12)
    at = bind[joints, :3, 3]  # palette order: chest, hat, hip
    assert mesh.positions.shape == (48, 3)
    for k, (upper, lower) in enumerate(((2, 0), (0, 1))):  # hip → chest, chest → hat
        positions = mesh.positions[24 * k : 24 * (k + 1)]
        np.testing.assert_array_equal(mesh.joints[24 * k : 24 * (k + 1), 0], upper)
        start, bone = at[upper], at[lower] - at[upper]
        along = (positions - start) @ bone / (bone @ bone)
        across = np.linalg.norm(positions - start - along[:, None] * bone, axis=-1)
        assert along.min() == pytest.approx(0.0, abs=1e-12)
        assert along.max() == pytest.approx(1.0, abs=1e-12)
        assert across.max() == pytest.approx(0.12 * np.linalg.norm(bone), rel=1e-12)
    np.testing.assert_array_equal(mesh.weights[:, 0], 1.0)


# --- inspect / evaluate of .bvh -------------------------------------------------------------------


def test_inspect_bvh(tiny: Path, capsys) -> None:
    assert main(["inspect", str(tiny)]) == 0
    text = capsys.readouterr().out
    assert "BVH: 5 joints (3 with channels), 12 channels, 3 frames every 0.5 s (1 s)" in text
    assert "    leg [3] Xrotation Yrotation Zrotation" in text
    assert "      leg_End [4] no channels" in text


def test_evaluate_bvh_gives_the_gltf_json_shape(tiny: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "eval.json"
    assert main(["evaluate", str(tiny), "--times", "0,0.75", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert sorted(document) == ["meshes", "nodes", "skins", "times"]
    assert document["skins"] == document["meshes"] == []
    assert [n["name"] for n in document["nodes"]] == ["hips", "spine", "spine_End", "leg", "leg_End"]
    assert [n["index"] for n in document["nodes"]] == [0, 1, 2, 3, 4]
    anim = load_bvh(tiny)
    model = model_from_pose(anim.skeleton, sample(anim.clip, anim.skeleton.rest_pose, np.array([0.0, 0.75])))
    world = np.array([n["world"] for n in document["nodes"]])  # (J, T, 16) column-major
    np.testing.assert_allclose(world.reshape(5, 2, 4, 4).transpose(1, 0, 3, 2), model, atol=1e-12)
    assert main(["evaluate", str(tiny), "--times", "0", "--clip", "tiny"]) == 0
    assert json.loads(capsys.readouterr().out)["times"] == [0.0]


def test_evaluate_bvh_has_one_clip(tiny: Path, capsys) -> None:
    assert main(["evaluate", str(tiny), "--times", "0", "--clip", "1"]) == 2
    assert "a BVH file has one clip, 0 or 'tiny'" in capsys.readouterr().err


def test_bad_bvh_is_reported_with_its_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.bvh"
    path.write_text(TINY.replace("Frames: 3", "Frames: 4"))
    assert main(["inspect", str(path)]) == 2
    frames_line = TINY.splitlines().index("Frames: 3") + 1
    message = f"{path}: line {frames_line + 5}: 'Frames: 4' (line {frames_line}) does not match the 3 frame lines"
    assert message in capsys.readouterr().err


# --- retarget --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pirouette_path(shared_assets: Path) -> Path:
    return shared_assets / "pirouette_bvh" / "pirouette.bvh"


@pytest.mark.assets
def test_retarget_onto_the_mannequin_file(pirouette_path: Path, tmp_path: Path, capsys) -> None:
    out, saved = tmp_path / "dance.glb", tmp_path / "map.json"
    assert main(["retarget", str(pirouette_path), str(MANNEQUIN), "--out", str(out), "--save-map", str(saved)]) == 0
    assert "21 mapped" in capsys.readouterr().out
    anim, character = load_bvh(pirouette_path), load_character(MANNEQUIN)
    mannequin = character.skeleton
    joint_map = json.loads(saved.read_text())
    assert joint_map == propose_joint_map(anim.skeleton, mannequin)
    back = load_character(out)
    assert back.skeleton.names == mannequin.names
    assert list(back.clips) == ["pirouette_retargeted"]
    times = np.array([0.0, 1.3, 4.0])
    plan = plan_retarget(anim.skeleton, mannequin, joint_map, target_mesh=rest_mesh(character))  # the soles too
    expected = retarget_pose(plan, sample(anim.captured_clip, anim.skeleton.rest_pose, times))
    got = sample(back.clips["pirouette_retargeted"], back.skeleton.rest_pose, times)
    assert_quat_allclose(got.rotations, expected.rotations, atol=1e-6)
    np.testing.assert_allclose(got.translations, expected.translations, atol=1e-6)
    validate(out)


@pytest.mark.assets
def test_an_edited_map_is_used(pirouette_path: Path, tmp_path: Path) -> None:
    mannequin = load_character(MANNEQUIN).skeleton
    joint_map = propose_joint_map(load_bvh(pirouette_path).skeleton, mannequin)
    legs_only = {s: t for s, t in joint_map.items() if "leg" in t or "foot" in t or "toes" in t or t == "hips"}
    path, out = tmp_path / "legs.json", tmp_path / "legs.glb"
    path.write_text(json.dumps(legs_only))
    assert main(["retarget", str(pirouette_path), str(MANNEQUIN), "--out", str(out), "--map", str(path)]) == 0
    clip = load_character(out).clips["pirouette_retargeted"]
    animated = {mannequin.names[c.target] for c in clip.channels}
    assert animated == set(legs_only.values()) | {"root"}  # the root joint carries the travel


@pytest.mark.assets
def test_retarget_onto_cesium_man_stands_up(pirouette_path: Path, shared_assets: Path, tmp_path: Path) -> None:
    out = tmp_path / "cesium_dance.glb"
    man = quiet_character(shared_assets / "khronos" / "cesium_man.gltf")
    assert main(["retarget", str(pirouette_path), str(man.asset.path), "--out", str(out)]) == 0
    back = quiet_character(out)
    np.testing.assert_allclose(back.root_transform, man.root_transform, atol=1e-7)  # the Z-up node is kept
    pose = sample(back.clips["pirouette_retargeted"], back.skeleton.rest_pose, [0.0, 2.0])
    model = model_from_pose(back.skeleton, pose)
    world = back.root_transform @ model
    hips, head = world[:, 0, :3, 3], world[:, back.skeleton.index("node20"), :3, 3]
    assert np.all(head[:, 1] - hips[:, 1] > 0.35)


@pytest.mark.assets
def test_retargeted_file_keeps_every_mesh_skin_material_and_texture(
    pirouette_path: Path, shared_assets: Path, tmp_path: Path
) -> None:
    """CesiumMan's textured mesh (a data: URI JPEG) comes out embedded, every array equal, the skin intact."""
    source = shared_assets / "khronos" / "cesium_man.gltf"
    out, text = tmp_path / "dance.glb", tmp_path / "dance.gltf"
    for path in (out, text):
        assert main(["retarget", str(pirouette_path), str(source), "--out", str(path)]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CesiumMan's weights (not summing to 1) are reported, in both files
        before, after = load_gltf(source), load_gltf(out)
    assert [c.name for c in after.clips] == ["pirouette_retargeted"]
    assert after.node_names == before.node_names
    np.testing.assert_array_equal(after.node_indices, before.node_indices)
    assert len(after.mesh_nodes) == len(before.mesh_nodes) == 1
    for old, new in zip(before.mesh_nodes, after.mesh_nodes, strict=True):
        assert (old.gltf_node, old.mesh, old.skin) == (new.gltf_node, new.mesh, new.skin)
        for a, b in zip(old.primitives, new.primitives, strict=True):
            for field in ("positions", "indices", "normals", "uvs", "joints", "weights", "base_color", "texture"):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
            assert b.texture is not None
            assert b.texture.shape == (1024, 1024, 4)
    for old_skin, new_skin in zip(before.skins, after.skins, strict=True):
        np.testing.assert_array_equal(old_skin.joint_nodes, new_skin.joint_nodes)
        np.testing.assert_allclose(
            old_skin.skeleton.inverse_bind_matrices, new_skin.skeleton.inverse_bind_matrices, atol=0
        )
    document = json.loads(text.read_text())
    assert len(document["buffers"]) == 1
    assert document["buffers"][0]["uri"] == "dance.bin"
    assert "uri" not in document["images"][0]
    assert document["images"][0]["mimeType"] == "image/jpeg"
    assert problems(out) == problems(source)  # the source's own validator findings, nothing new


@pytest.mark.assets
def test_new_clips_in_a_gltf_with_external_buffer_and_texture(shared_assets: Path, tmp_path: Path) -> None:
    """The Fox .gltf (external .bin and .png) written as one GLB with a new clip on its nodes."""
    source = shared_assets / "fox" / "glTF" / "Fox.gltf"
    fox = load_character(source)
    clip = clip_on_nodes(fox.clips["Run"].with_markers({"step": (0.2,)}), fox.skin, fox.asset.node_count)
    out = save_gltf_with_clips(source, tmp_path / "fox_run.glb", [clip])
    back = load_character(out)
    assert list(back.clips) == ["Run"]
    assert back.clips["Run"].markers == {"step": (0.2,)}
    times = np.linspace(0, fox.clips["Run"].duration, 7)
    expected = sample(fox.clips["Run"], fox.skeleton.rest_pose, times)
    got = sample(back.clips["Run"], back.skeleton.rest_pose, times)
    assert_quat_allclose(got.rotations, expected.rotations, atol=1e-6)
    np.testing.assert_allclose(got.translations, expected.translations, atol=1e-4)
    np.testing.assert_array_equal(back.meshes[0].texture, fox.meshes[0].texture)
    np.testing.assert_array_equal(back.meshes[0].uvs, fox.meshes[0].uvs)
    validate(out)


@pytest.mark.assets
def test_the_fox_is_refused_by_the_command(pirouette_path: Path, shared_assets: Path, tmp_path: Path, capsys) -> None:
    fox = shared_assets / "fox" / "glTF-Binary" / "Fox.glb"
    assert main(["retarget", str(pirouette_path), str(fox), "--out", str(tmp_path / "x.glb")]) == 2
    err = capsys.readouterr().err
    assert "ossa retarget: error: cannot propose a joint map" in err
    assert "is 68° from up" in err
    assert err.rstrip().endswith("Give --map MAP.json by hand to map only what corresponds")
    assert not (tmp_path / "x.glb").exists()


def test_a_malformed_map_file_is_an_asset_error(tiny: Path, tmp_path: Path, capsys) -> None:
    path = tmp_path / "map.json"
    path.write_text('{"hips": 3}')
    assert main(["retarget", str(tiny), str(MANNEQUIN), "--out", str(tmp_path / "o.glb"), "--map", str(path)]) == 2
    assert '--map: the joint map must be a JSON object {"source joint": "target joint", ...}' in capsys.readouterr().err


# --- BVH takes as characters --------------------------------------------------------------------------


def test_a_bvh_file_is_a_character(tiny: Path) -> None:
    anim = load_bvh(tiny)
    character = load_bvh_character(tiny)
    assert character.skeleton.names == anim.skeleton.names
    np.testing.assert_allclose(character.skeleton.rest_translations, anim.skeleton.rest_translations, atol=1e-7)
    times = np.array([0.0, 0.3, 1.0])
    np.testing.assert_allclose(
        model_from_pose(character.skeleton, sample(character.clips["tiny"], character.skeleton.rest_pose, times)),
        model_from_pose(anim.skeleton, sample(anim.clip, anim.skeleton.rest_pose, times)),
        atol=2e-6,
    )
    assert character.meshes[0].num_vertices == 24 * 4
    np.testing.assert_array_equal(character.root_transform, np.eye(4))
    assert load_bvh_character(tiny, scale=1.0).skeleton.rest_translations[1].tolist() == pytest.approx([0, 20, 0])


def test_a_cmu_take_becomes_a_person_sized_character(tmp_path: Path) -> None:
    cmu = rig("cmu")
    path = tmp_path / "walk.bvh"
    path.write_text(to_bvh(cmu, *walk(cmu, np.arange(12) / 24), frame_time=1 / 24))
    with pytest.warns(OssaWarning, match=r"lengths read as CMU units \(inches / 0.45\) \(× 0.0564444 m\)"):
        character = load_bvh_character(path)
    rest = model_from_pose(character.skeleton, character.skeleton.rest_pose)[:, :3, 3]
    assert 1.3 < np.ptp(rest[:, 1]) < 1.5  # metres, not the 27 cm a ×0.01 reading gives
    assert list(character.clips) == ["walk"]


def test_load_bvh_character_errors(tmp_path: Path) -> None:
    with pytest.raises(AssetError, match="cannot read the file"):
        load_bvh_character(tmp_path / "absent.bvh")
