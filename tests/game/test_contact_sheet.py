"""The contact sheet: which characters it finds, the pose it shows, and the picture it writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from engine.anim.local_to_model import model_from_pose
from engine.anim.sampling import sample
from engine.anim.skinning import skin_vertices, skinning_palette
from engine.io import load_character
from game import contact_sheet
from game.contact_sheet import (
    CONTACT,
    LABEL_HEIGHT,
    RETARGET_LABEL,
    RETARGET_TILE,
    TILE,
    clip_companions,
    contact_pose,
    default_sources,
    main,
    with_clip_files,
)
from game.model import DEFAULT_MODEL, load_model
from tests.game.characters import cached_model


def test_default_sources_are_the_mannequin_then_one_file_per_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("fox/glTF-Binary/Fox.glb", "fox/glTF/Fox.gltf", "take/walk.bvh", "notes/readme.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    monkeypatch.setenv("OSSA_SHARED_ASSETS", str(tmp_path))
    sources = default_sources()
    assert sources[0] == DEFAULT_MODEL
    shared = [p.relative_to(tmp_path).as_posix() for p in sources if tmp_path in p.parents]
    assert len(shared) == 2
    assert shared[1] == "take/walk.bvh"
    assert shared[0] in ("fox/glTF-Binary/Fox.glb", "fox/glTF/Fox.gltf")


def test_a_clip_file_goes_with_the_one_character_nearest_to_it_in_the_folder_tree() -> None:
    """KayKit's layout (``pack/mannequin/…``, ``pack/anim/…``) pairs; a clip file as near to two stays alone."""
    root = Path("/assets")
    meshes = {
        root / "fox" / "Fox.glb": True,
        root / "pack" / "anim" / "general.glb": False,
        root / "pack" / "mannequin" / "manny.gltf": True,
        root / "pack" / "anim" / "movement.glb": False,
        root / "lone" / "clips.glb": False,  # as near to the fox as to the mannequin
        root / "duo" / "a" / "one.glb": True,
        root / "duo" / "b" / "two.glb": True,
        root / "duo" / "anim" / "both.glb": False,  # as near to one.glb as to two.glb
    }
    assert clip_companions(meshes) == {
        root / "pack" / "mannequin" / "manny.gltf": [
            root / "pack" / "anim" / "general.glb",
            root / "pack" / "anim" / "movement.glb",
        ]
    }
    assert clip_companions({root / "pack" / "anim" / "general.glb": False}) == {}
    assert clip_companions({root / "a.glb": True, root / "b.glb": False}) == {root / "a.glb": [root / "b.glb"]}


@pytest.mark.assets
def test_kaykits_clip_files_show_as_its_mannequins_clips(
    shared_assets: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not three tiles (the mannequin in its rest pose, two bone figures): the mannequin playing the files' clips."""
    pack = shared_assets / "kaykit_mannequin_rig_medium"
    manny, general, movement = (
        pack / "mannequin_v2" / "manny_med_mod.gltf",
        pack / "anim" / "Med_General.glb",
        pack / "anim" / "Med_MovementBasic.glb",
    )
    alone = {path: load_model(path) for path in (DEFAULT_MODEL, general, manny, movement)}
    assert contact_pose(alone[manny])[2] is None  # on its own: no clip, the rest pose
    for clips in (general, movement):  # clips and a rig, no mesh: alone, the programs draw its bones
        assert alone[clips].bones
        assert alone[clips].notes[0] == "no mesh in the file: its skin drawn as bones"
        (instance,) = alone[clips].scene.instances
        assert instance.skin == 0
        assert instance.primitives[0].name == "bones"
        assert 1.0 < alone[clips].height < 1.5  # its skeleton's height, without the mannequin's big head
    assert not alone[manny].bones
    shown = with_clip_files(alone)
    assert list(shown) == [DEFAULT_MODEL, manny]
    assert shown[DEFAULT_MODEL] is alone[DEFAULT_MODEL]
    assert len(shown[manny].clips) == len(alone[general].clips) + len(alone[movement].clips) == 26
    assert contact_pose(shown[manny])[2] == "Rig_Medium|Idle_A"
    assert capsys.readouterr().err.splitlines() == [
        "python -m game.contact_sheet: note: Med_General.glb, Med_MovementBasic.glb shown as the clips of "
        "manny_med_mod.gltf"
    ]


@pytest.mark.assets
def test_a_clip_file_the_nearest_character_does_not_take_keeps_its_tile(
    shared_assets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """KayKit's clips beside the Fox (``root`` the one node name in common: another rig): both kept, and said."""
    fox, general = tmp_path / "pack" / "fox" / "Fox.glb", tmp_path / "pack" / "anim" / "Med_General.glb"
    for link, target in (
        (fox, shared_assets / "fox" / "glTF-Binary" / "Fox.glb"),
        (general, shared_assets / "kaykit_mannequin_rig_medium" / "anim" / "Med_General.glb"),
    ):
        link.parent.mkdir(parents=True)
        link.symlink_to(target)
    alone = {path: load_model(path) for path in (fox, general)}
    assert with_clip_files(alone) == alone
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "python -m game.contact_sheet: note: Med_General.glb shown apart: Fox.glb has 1 of the 24 nodes its clips "
        "animate"
    )


def skinned_heights(times: np.ndarray, space: np.ndarray) -> np.ndarray:
    """Heights ``(T, V)`` in ``space`` of the mannequin's idle vertices, read the old way (one skin, CPU skinning)."""
    character = load_character(DEFAULT_MODEL)
    skeleton = character.skeleton
    model = (
        space
        @ character.root_transform
        @ model_from_pose(skeleton, sample(character.clips["idle"], skeleton.rest_pose, times))
    )
    return skin_vertices(character.meshes[0], skinning_palette(skeleton, model))[0][..., 1]


def test_the_pose_shown_touches_the_ground() -> None:
    """The idle pose shown: its lowest vertex (the one-skin character, skinned) is the clip's lowest, ± CONTACT."""
    model = cached_model()
    frame, time, clip, lowest = contact_pose(model)
    assert clip == "idle"
    assert frame.batch == (1,)
    shown = float(skinned_heights(np.array([time]), model.frame).min())
    assert shown == pytest.approx(lowest, abs=1e-9)
    clip_lowest = float(skinned_heights(np.linspace(0.0, model.clips["idle"].duration, 181), model.frame).min())
    assert abs(shown - clip_lowest) <= CONTACT + 1e-6
    assert abs(clip_lowest) <= 1e-3  # the idle is the reference: its lowest point is the ground
    assert 0.0 <= time <= model.clips["idle"].duration


@pytest.mark.gl
@pytest.mark.assets
def test_the_sheet_tiles_every_character_given_and_leaves_out_the_rest(
    egl: None, shared_assets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sheet" / "characters.png"
    out.parent.mkdir()
    broken = tmp_path / "broken.gltf"
    broken.write_text("{}")
    files = [
        DEFAULT_MODEL,
        shared_assets / "pirouette_bvh" / "pirouette.bvh",
        broken,
        shared_assets / "khronos" / "box_animated.gltf",  # no skin: an animated object, shown too
    ]
    assert main([*map(str, files), "--out", str(out), "--columns", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"wrote {out}: 3 characters (mannequin.glb, pirouette.bvh, box_animated.gltf)\n"
    assert captured.err.startswith("python -m game.contact_sheet: note: left out broken.gltf: ")
    with Image.open(out) as image:
        assert image.size == (2 * TILE[0], 2 * TILE[1])
        pixels = np.asarray(image.convert("RGB"), dtype=float)
    for row, column in ((0, 0), (0, 1), (1, 0)):
        tile = pixels[row * TILE[1] : (row + 1) * TILE[1], column * TILE[0] : (column + 1) * TILE[0]]
        assert tile[: TILE[1] - LABEL_HEIGHT].std() > 10.0
        assert (tile[TILE[1] - LABEL_HEIGHT :] > 200).any()  # text


def test_a_missing_output_folder_is_said_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As ``ossa``'s outputs and the programs' ``--screenshot``: no folder is made behind the user's back."""
    out = tmp_path / "no" / "sheet.png"
    assert main([str(DEFAULT_MODEL), "--out", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"python -m game.contact_sheet: error: --out {out}: cannot write: No such file or directory"
    ]


@pytest.mark.gl
@pytest.mark.assets
@pytest.mark.slow
def test_the_retargets_sheet_has_a_row_per_take_and_a_column_per_humanoid(
    egl: None, shared_assets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two takes onto the mannequin and CesiumMan (the Fox is no humanoid: left out), mid-clip, labelled."""
    files = [
        shared_assets / "cmu_locomotion_bvh" / "09_01.bvh",
        shared_assets / "cmu_locomotion_bvh" / "02_03.bvh",
        DEFAULT_MODEL,
        shared_assets / "khronos" / "cesium_man.gltf",
        shared_assets / "fox" / "glTF-Binary" / "Fox.glb",
    ]
    out = tmp_path / "retargets.png"
    assert main([*map(str, files), "--retargets", "--out", str(out)]) == 0
    assert capsys.readouterr().out == (
        f"wrote {out}: 4 retargets (09_01 on mannequin, 09_01 on cesium_man, 02_03 on mannequin, 02_03 on cesium_man)\n"
    )
    with Image.open(out) as image:
        assert image.size == (2 * RETARGET_TILE[0], 2 * RETARGET_TILE[1])
        pixels = np.asarray(image.convert("RGB"), dtype=float)
    for row in range(2):
        for column in range(2):
            tile = pixels[row * RETARGET_TILE[1] : (row + 1) * RETARGET_TILE[1]][:, column * RETARGET_TILE[0] :][
                :, : RETARGET_TILE[0]
            ]
            assert tile[: RETARGET_TILE[1] - RETARGET_LABEL].std() > 10.0


def test_the_retargets_sheet_needs_a_take_and_a_humanoid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(DEFAULT_MODEL), "--retargets", "--out", str(tmp_path / "r.png")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "python -m game.contact_sheet: error: no pair to show: 0 takes (.bvh), 1 humanoid characters"
    ]


def test_no_character_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.bvh").write_text("HIERARCHY\n")
    assert main([str(tmp_path / "empty.bvh"), "--out", str(tmp_path / "out.png")]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("python -m game.contact_sheet: note: left out empty.bvh: ")
    assert lines[-1] == "python -m game.contact_sheet: error: no character to show"
    assert not (tmp_path / "out.png").exists()
    assert contact_sheet.PROG == "python -m game.contact_sheet"
