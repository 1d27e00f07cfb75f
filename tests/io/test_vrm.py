"""VRM humanoids: the bone map of a ``.vrm`` (0.x ``VRM``, 1.0 ``VRMC_vrm``) wins over the joints' names.

The files are the project's mannequin written as VRM with every joint renamed so that the names
lie: the left arm is called ``RightArm``, the right one ``LeftArm``, the legs likewise, the spine
``Tail``. Name guessing then finds the sides swapped; the bone map says which is which.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from engine.anim.humanoid import ROLES, find_humanoid
from engine.cli import main
from engine.errors import AssetError, SkeletonMismatchError
from engine.io import load_character
from engine.io.vrm import BONE_ROLES
from game.model import load_model
from tests.io.gltf_builder import glb_bytes

MANNEQUIN = Path(__file__).resolve().parents[2] / "assets" / "mannequin.glb"

#: Mannequin joint → (misleading name, VRM bone).
JOINTS = {
    "hips": ("Pelvis_Root", "hips"),
    "spine": ("Tail1", "spine"),
    "chest": ("Tail2", "chest"),
    "upper_chest": ("Tail3", "upperChest"),
    "neck": ("Stalk", "neck"),
    "head": ("Bulb", "head"),
    **{
        f"{part}_{side}": (f"{'Right' if side == 'l' else 'Left'}{word}", f"{'left' if side == 'l' else 'right'}{bone}")
        for side in ("l", "r")
        for part, word, bone in (
            ("clavicle", "Shoulder", "Shoulder"),
            ("upper_arm", "Arm", "UpperArm"),
            ("lower_arm", "ForeArm", "LowerArm"),
            ("hand", "Hand", "Hand"),
            ("upper_leg", "UpLeg", "UpperLeg"),
            ("lower_leg", "Leg", "LowerLeg"),
            ("foot", "Foot", "Foot"),
            ("toes", "ToeBase", "Toes"),
        )
    },
}


def read_glb(path: Path) -> tuple[dict[str, Any], bytes]:
    raw = path.read_bytes()
    length = struct.unpack_from("<I", raw, 12)[0]
    blob_length = struct.unpack_from("<I", raw, 20 + length)[0]
    return json.loads(raw[20 : 20 + length]), raw[28 + length : 28 + length + blob_length]


def lying_vrm(tmp_path: Path, version: int, edit: Any = None) -> Path:
    """The mannequin as a VRM ``version`` (0 or 1) file whose joint names lie, its bone map telling the truth."""
    doc, blob = read_glb(MANNEQUIN)
    index = {node["name"]: i for i, node in enumerate(doc["nodes"])}
    for joint, (name, _) in JOINTS.items():
        doc["nodes"][index[joint]]["name"] = name
    if version == 1:
        bones: Any = {bone: {"node": index[joint]} for joint, (_, bone) in JOINTS.items()}
        doc["extensions"] = {"VRMC_vrm": {"specVersion": "1.0", "humanoid": {"humanBones": bones}}}
        doc["extensionsUsed"] = ["VRMC_vrm"]
    else:
        bones = [{"bone": bone, "node": index[joint], "useDefaultValues": True} for joint, (_, bone) in JOINTS.items()]
        doc["extensions"] = {"VRM": {"exporterVersion": "test", "humanoid": {"humanBones": bones}}}
        doc["extensionsUsed"] = ["VRM"]
    if edit is not None:
        edit(doc, index)
    path = tmp_path / f"lying{version}.vrm"
    path.write_bytes(glb_bytes(doc, blob))
    return path


@pytest.mark.parametrize("version", [0, 1])
def test_the_bone_map_wins_over_the_names(version: int, tmp_path: Path) -> None:
    character = load_character(lying_vrm(tmp_path, version))
    skeleton = character.skeleton
    assert skeleton.humanoid["upper_arm_l"] == "RightArm"  # the map: this joint is the left upper arm
    body = find_humanoid(skeleton)
    names = skeleton.names
    for joint, (name, _) in JOINTS.items():
        role = {"upper_chest": "chest"}.get(joint, joint)
        if joint in ("spine", "chest"):
            continue  # VRM's spine and chest lie between the hips and Ossa's chest (the upper chest)
        assert names[body.roles[role]] == name, role
    assert [names[j] for j in body.spine] == ["Tail1", "Tail2"]
    assert body.reasons["hand_r"] == "declared by the file (humanoid bone map)"
    assert any(e.name == ("VRMC_vrm" if version else "VRM") for e in character.asset.extensions)


def test_without_the_map_the_lying_names_swap_the_sides(tmp_path: Path) -> None:
    """The same file without its bone map: name guessing takes 'RightArm' for the right arm (proof the map matters)."""
    path = lying_vrm(tmp_path, 1, lambda doc, index: doc.pop("extensions"))
    character = load_character(path)
    assert dict(character.skeleton.humanoid) == {}
    body = find_humanoid(character.skeleton)
    assert character.skeleton.names[body.roles["upper_arm_l"]] == "LeftArm"


def test_an_incomplete_or_inconsistent_map_is_refused_by_name(tmp_path: Path) -> None:
    def no_head(doc: dict, index: dict) -> None:
        del doc["extensions"]["VRMC_vrm"]["humanoid"]["humanBones"]["head"]

    skeleton = load_character(lying_vrm(tmp_path, 1, no_head)).skeleton
    assert dict(skeleton.humanoid) == {}  # a map without a required bone is not carried: detection runs
    find_humanoid(skeleton)

    def hips_on_a_finger(doc: dict, index: dict) -> None:
        doc["extensions"]["VRMC_vrm"]["humanoid"]["humanBones"]["hips"] = {"node": index["fingers_l"]}

    skeleton = load_character(lying_vrm(tmp_path, 1, hips_on_a_finger)).skeleton
    with pytest.raises(
        SkeletonMismatchError, match=r"the declared chest 'Tail3' is not below the declared hips 'fingers_l'"
    ):
        find_humanoid(skeleton)

    def hips_on_a_hand(doc: dict, index: dict) -> None:
        doc["extensions"]["VRMC_vrm"]["humanoid"]["humanBones"]["hips"] = {"node": index["hand_l"]}

    with pytest.raises(AssetError, match=r"humanBones: node 10 is both 'hips' and 'leftHand'"):
        load_character(lying_vrm(tmp_path, 1, hips_on_a_hand))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d, i: d["extensions"]["VRM"]["humanoid"].update(humanBones={"hips": 1}),
            r"extensions\.VRM\.humanoid\.humanBones: expected an array of \{bone, node\}",
        ),
        (
            lambda d, i: d["extensions"]["VRM"]["humanoid"]["humanBones"][0].update(node=99),
            r"humanBones\[0\]\.node: index 99 is out of range: the file has 26 nodes",
        ),
        (
            lambda d, i: d["extensions"]["VRM"]["humanoid"]["humanBones"].append({"bone": "hips", "node": 2}),
            r"humanBones\[\d+\]\.bone: bone 'hips' is listed twice",
        ),
    ],
)
def test_malformed_bone_maps_are_named(edit: Any, message: str, tmp_path: Path) -> None:
    with pytest.raises(AssetError, match=message):
        load_character(lying_vrm(tmp_path, 0, edit))


def test_every_ossa_role_has_a_vrm_bone() -> None:
    assert set(BONE_ROLES.values()) | {"chest"} == set(ROLES)


def test_the_programs_and_ossa_read_vrm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = lying_vrm(tmp_path, 1, lambda doc, index: doc.pop("animations"))  # no clips: a quick load
    model = load_model(path)
    assert model.skeleton.humanoid["hips"] == "Pelvis_Root"
    assert main(["inspect", str(path)]) == 0
    assert "VRMC_vrm: humanoid bone map read: 20 of its 22 bones are Ossa roles" in capsys.readouterr().out


def test_retargeting_onto_a_vrm_follows_its_bone_map(
    tmp_path: Path, shared_assets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mocap's left upper arm drives the joint the map calls the left upper arm, named 'RightArm'."""
    path = lying_vrm(tmp_path, 0, lambda doc, index: doc.pop("animations"))
    take = shared_assets / "pirouette_bvh" / "pirouette.bvh"
    assert main(["retarget", str(take), str(path), "--out", str(tmp_path / "out.glb")]) == 0
    out = capsys.readouterr().out
    assert "lShldr → RightArm" in out
    assert "rShldr → LeftArm" in out
