"""``ossa convert`` / ``retarget`` and BVH ``inspect`` / ``evaluate``: files written, read back, compared."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim import model_from_pose, sample, skinning_palette
from engine.anim.retarget import plan_retarget, propose_joint_map, retarget_pose
from engine.cli import main
from engine.io import load_character, load_gltf
from engine.io.bvh import load_bvh
from engine.io.mocap_commands import bone_mesh, with_root_transform
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


def validate(path: Path) -> None:
    """The Khronos glTF validator finds no error and no warning (skips when it is not installed)."""
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
    issues = json.loads(out.stdout)
    assert (issues["numErrors"], issues["numWarnings"]) == (0, 0), issues["messages"][:5]


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
    assert back.clips["pirouette"].duration == pytest.approx(591 * 0.00833333, rel=1e-6)
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
    anim, mannequin = load_bvh(pirouette_path), load_character(MANNEQUIN).skeleton
    joint_map = json.loads(saved.read_text())
    assert joint_map == propose_joint_map(anim.skeleton, mannequin)
    back = load_character(out)
    assert back.skeleton.names == mannequin.names
    assert list(back.clips) == ["pirouette_retargeted"]
    times = np.array([0.0, 1.3, 4.0])
    expected = retarget_pose(
        plan_retarget(anim.skeleton, mannequin, joint_map), sample(anim.clip, anim.skeleton.rest_pose, times)
    )
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
    assert animated == set(legs_only.values())


@pytest.mark.assets
def test_retarget_onto_cesium_man_stands_up(pirouette_path: Path, shared_assets: Path, tmp_path: Path) -> None:
    out = tmp_path / "cesium_dance.glb"
    man = quiet_character(shared_assets / "khronos" / "cesium_man.gltf")
    assert main(["retarget", str(pirouette_path), str(man.asset.path), "--out", str(out)]) == 0
    back = load_character(out)
    np.testing.assert_array_equal(back.root_transform, np.eye(4))  # the Z-up node is folded into the joints
    pose = sample(back.clips["pirouette_retargeted"], back.skeleton.rest_pose, [0.0, 2.0])
    model = model_from_pose(back.skeleton, pose)
    hips, head = model[:, 0, :3, 3], model[:, back.skeleton.index("node20"), :3, 3]
    assert np.all(head[:, 1] - hips[:, 1] > 0.35)


@pytest.mark.assets
def test_the_fox_is_refused_by_the_command(pirouette_path: Path, shared_assets: Path, tmp_path: Path, capsys) -> None:
    fox = shared_assets / "fox" / "glTF-Binary" / "Fox.glb"
    assert main(["retarget", str(pirouette_path), str(fox), "--out", str(tmp_path / "x.glb")]) == 2
    err = capsys.readouterr().err
    assert "ossa retarget: error: cannot propose a joint map" in err
    assert "'b_Hip_01' has 4 limbs" in err
    assert not (tmp_path / "x.glb").exists()


def test_a_malformed_map_file_is_an_asset_error(tiny: Path, tmp_path: Path, capsys) -> None:
    path = tmp_path / "map.json"
    path.write_text('{"hips": 3}')
    assert main(["retarget", str(tiny), str(MANNEQUIN), "--out", str(tmp_path / "o.glb"), "--map", str(path)]) == 2
    assert "the joint map must be a JSON object" in capsys.readouterr().err


def test_with_root_transform_keeps_skinned_world_positions(rng: np.random.Generator) -> None:
    skeleton = quiet_character(MANNEQUIN).skeleton
    turn = np.array([[1.0, 0, 0, 0.5], [0, 0, -1, 0], [0, 1, 0, 2.0], [0, 0, 0, 1]])  # Z-up to Y-up, moved
    folded = with_root_transform(skeleton, turn)
    pose = skeleton.rest_pose.broadcast_to((3,))
    pose.rotations[:, 1:] = Rotation.random(3 * 24, random_state=rng).as_quat().reshape(3, 24, 4)
    original = turn @ skinning_palette(skeleton, model_from_pose(skeleton, pose))
    pose.translations[:, 0], pose.rotations[:, 0] = folded.rest_translations[0], folded.rest_rotations[0]
    np.testing.assert_allclose(skinning_palette(folded, model_from_pose(folded, pose)), original, atol=1e-12)
