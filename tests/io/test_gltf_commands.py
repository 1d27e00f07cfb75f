"""``ossa inspect`` and ``ossa evaluate`` on glTF files: output format, closed-form values, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from engine.cli import main
from tests.io.gltf_builder import DocBuilder, scene_document, skinned_document

ASSETS = [
    "khronos/cesium_man.gltf",
    "khronos/rigged_simple.gltf",
    "khronos/interpolation_test.gltf",
    "khronos/box_animated.gltf",
    "fox/glTF/Fox.gltf",
    "fox/glTF-Binary/Fox.glb",
]


@pytest.fixture
def skinned(tmp_path: Path) -> Path:
    return skinned_document().write(tmp_path / "skinned.gltf")


def matrix(column_major: list[float]) -> np.ndarray:
    return np.array(column_major).reshape(4, 4).T


def test_inspect_summarises_the_file(skinned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(skinned)]) == 0
    out = capsys.readouterr().out
    expected = [
        "scenes: 1 (default 0), nodes: 5 (5 in the default scene)",
        "  armature [0]\n    mesh [3]  (mesh 0 skinned by skin 0)\n    hip [1]  (joint)\n      spine [2]  (joint)",
        "  0 'body': 3 joints, depth 3, root hip [1] (under node [0])",
        "  node [3] primitive 0 'strip/0': 4 vertices, 2 triangles, skin 0, 2 influence set(s), normals",
        "  0 'wave': 0–2 s, 2 channels (rotation 1, translation 1; LINEAR 1, STEP 1), 2 nodes",
        "  1 'animation1': 0–1 s, 1 channels (translation 1; LINEAR 1), 1 nodes",
        "warnings: 0",
    ]
    for line in expected:
        assert line in out


def test_inspect_lists_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = skinned_document()
    b.doc["skins"][0]["inverseBindMatrices"] = b.accessor([np.eye(4)] * 4, 5126, "MAT4")
    assert main(["inspect", str(b.write(tmp_path / "w.gltf"))]) == 0
    out = capsys.readouterr().out
    assert "warnings: 1\n  skins[0].inverseBindMatrices: has 4 matrices for 3 joints; the extra ones are ignored" in out


def test_evaluate_writes_the_documented_json(skinned: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    assert main(["evaluate", str(skinned), "--clip", "0", "--times=-1,0.5,2,5", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result) == {"times", "nodes", "skins", "meshes"}
    assert result["times"] == [-1.0, 0.5, 2.0, 5.0]
    assert [(n["index"], n["name"]) for n in result["nodes"]] == [
        (0, "armature"),
        (1, "hip"),
        (2, "spine"),
        (3, "mesh"),
        (4, "head"),
    ]
    assert all(np.shape(n["world"]) == (4, 16) for n in result["nodes"])
    hip = [matrix(m) for m in result["nodes"][1]["world"]]
    # STEP translation keys (0, .5, 0), (1, .5, 0), (1, 1.5, 0) at 0, 1, 2 s under the armature at y = 1
    np.testing.assert_allclose([m[:3, 3] for m in hip], [[0, 1.5, 0], [0, 1.5, 0], [1, 2.5, 0], [1, 2.5, 0]])
    spine = [matrix(m) for m in result["nodes"][2]["world"]]
    # LINEAR rotation about z: 0, 1, 2 rad at 0, 1, 2 s → 0.5 rad at 0.5 s; clamps outside
    angles = [np.arctan2(m[1, 0], m[0, 0]) for m in spine]
    np.testing.assert_allclose(angles, [0.0, 0.5, 2.0, 2.0], atol=1e-7)
    (skin,) = result["skins"]
    assert (skin["index"], skin["node"], skin["joints"]) == (0, 3, [4, 1, 2])
    assert np.shape(skin["jointMatrices"]) == (4, 3, 16)
    # joint matrix of the hip (second in the file's order): inverse(world(mesh)) · world(hip) · IBM(hip)
    world_mesh = matrix(result["nodes"][3]["world"][1])
    ibm_hip = np.eye(4)
    ibm_hip[1, 3] = -0.5
    np.testing.assert_allclose(matrix(skin["jointMatrices"][1][1]), np.linalg.inv(world_mesh) @ hip[1] @ ibm_hip)
    (mesh,) = result["meshes"]
    assert (mesh["node"], mesh["primitive"], mesh["skinned"]) == (3, 0, True)
    assert np.shape(mesh["skinnedPositions"]) == (4, 4, 3)
    # vertex 2 follows only glTF joint 2 (the spine) with weight 1: world(spine) · IBM(spine) · v
    ibm_spine = np.eye(4)
    ibm_spine[1, 3] = -1.5
    expected = spine[1] @ ibm_spine @ np.array([0.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(mesh["skinnedPositions"][1][2], expected[:3], atol=1e-12)


def test_evaluate_picks_clips_by_name_and_prints_to_stdout(skinned: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(skinned), "--clip", "animation1", "--times", "0.5"]) == 0
    result = json.loads(capsys.readouterr().out)
    armature = matrix(result["nodes"][0]["world"][0])
    np.testing.assert_allclose(armature[:3, 3], [0, 2, 0])  # lift: y 1 → 3 over 1 s


def test_evaluate_rigid_meshes_and_files_without_clips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = DocBuilder()
    position = b.accessor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], 5126, "VEC3")
    b.add("meshes", {"primitives": [{"attributes": {"POSITION": position}}]})
    b.add("nodes", {"translation": [10.0, 0.0, 0.0], "scale": [2.0, 2.0, 2.0], "children": [1]})
    b.add("nodes", {"mesh": 0})
    assert main(["evaluate", str(b.write(tmp_path / "rigid.gltf")), "--times", "0,1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["skins"] == []
    (mesh,) = result["meshes"]
    assert mesh["skinned"] is False
    np.testing.assert_allclose(mesh["skinnedPositions"], [[[12, 0, 0], [10, 2, 0], [10, 0, 2]]] * 2)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--clip", "7", "--times", "0"], "--clip 7 is out of range: the file has 2 clip"),
        (["--clip", "dance", "--times", "0"], r"no clip named 'dance'; clips are \['wave', 'animation1'\]"),
    ],
)
def test_evaluate_errors(skinned: Path, arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(skinned), *arguments]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ossa evaluate: error:")
    assert re.search(message, err)


@pytest.mark.parametrize("times", ["abc", "0,,1", "0,nan", ""])
def test_evaluate_rejects_bad_times(skinned: Path, times: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["evaluate", str(skinned), f"--times={times}"])
    assert info.value.code == 2
    assert "argument --times:" in capsys.readouterr().err


def test_missing_model_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(tmp_path / "none.glb")]) == 2
    assert "none.glb: cannot read the file" in capsys.readouterr().err


@pytest.mark.assets
@pytest.mark.parametrize("relative", ASSETS)
def test_commands_run_on_every_shared_asset(
    shared_assets: Path, relative: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = shared_assets / relative
    assert main(["inspect", str(path)]) == 0
    assert "clips:" in capsys.readouterr().out
    out = tmp_path / "e.json"
    assert main(["evaluate", str(path), "--times=-1,0,0.5,10", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert len(result["times"]) == 4
    assert result["meshes"]


def test_inspect_and_evaluate_a_whole_scene(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Non-joint nodes between joints, rigid parts, points and lines, morph targets: read, not refused."""
    path = scene_document().write(tmp_path / "scene.gltf")
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    expected = [
        "      bend [3]\n        chest [4]  (joint)\n          hat [5]  (joint, mesh 1)",
        "  0 'torso': 2 joints (+1 non-joint node(s) between joints), depth 3, root hip [2] (under node [0])",
        "  1 'wire': 2 joints (+2 non-joint node(s) between joints), depth 4, root hip [2] (under node [0])",
        "  node [1] primitive 0 'body/0': 6 vertices, 4 triangles, skin 0, 1 influence set(s), 2 morph targets, "
        "normals",
        "  node [6] primitive 0 'wire/0': 3 vertices, 3 points, skin 1, 1 influence set(s), no normals",
        "  node [6] primitive 1 'wire/1': 4 vertices, 4 lines, skin 1, 1 influence set(s), no normals",
        "  0 'move': 0–2 s, 6 channels (rotation 2, translation 2, weights 2; CUBICSPLINE 2, LINEAR 3, STEP 1), "
        "5 nodes",
        "  1 'blink': 0.5–1.5 s, 1 channels (weights 1; STEP 1), 1 nodes",
        "warnings: 0",
    ]
    for line in expected:
        assert line in out
    out_file = tmp_path / "scene.json"
    assert main(["evaluate", str(path), "--clip", "blink", "--times", "0,1.5", "--out", str(out_file)]) == 0
    result = json.loads(out_file.read_text())
    assert [(m["node"], m["mode"], m["skinned"]) for m in result["meshes"]] == [
        (1, "TRIANGLES", True),
        (5, "TRIANGLES", False),
        (6, "POINTS", True),
        (6, "LINES", True),
        (7, "TRIANGLES", False),
    ]
    assert result["meshes"][4]["morphWeights"] == [[0.0], [1.0]]  # STEP keys 0 then 1 at 0.5 and 1.5 s
    assert result["meshes"][0]["morphWeights"] == [[0.25, 0.5], [0.25, 0.5]]  # not in this clip: mesh.weights
    apex = np.array(result["meshes"][4]["skinnedPositions"])[:, 3]
    np.testing.assert_allclose(apex[1] - apex[0], [0.0, 0.5, 0.0], atol=1e-7)  # the spinner's target lifts it
