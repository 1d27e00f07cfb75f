"""The characters the programs' tests run on, and one cached loader for all test modules.

:data:`SHARED` names the files under ``../shared/assets`` (the tests that read them take the
``shared_assets`` fixture, so they skip, or fail under ``OSSA_REQUIRE_SHARED=1``, without them),
characters and animated objects alike; the generated mannequin is always there, and so are the
generated scenes of :mod:`tests.game.scenes` (:data:`GENERATED`: a character of rigid parts with
two skinned hands, a scene of rigid, multi-skin, morphed and point/line meshes); :data:`CORPUS`
is every glTF/BVH file of the fetched character corpus (``python3 -m tests.corpus.fetch``; none
when it was not fetched: the corpus's own tests say so), named ``corpus-<file stem>``.
:func:`cached_model` stands in for :func:`game.model.load_model` (patched into :mod:`game.app`,
which every program loads through), so each file is read and measured once per test session.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from game import app
from game.contact_sheet import corpus_files
from game.model import SUFFIXES, Model, load_model
from tests.game.scenes import GENERATED, generated_path

SHARED = {
    "cesium_man": "khronos/cesium_man.gltf",
    "fox": "fox/glTF-Binary/Fox.glb",
    "rigged_simple": "khronos/rigged_simple.gltf",
    "pirouette": "pirouette_bvh/pirouette.bvh",
    "box_animated": "khronos/box_animated.gltf",
    "interpolation_test": "khronos/interpolation_test.gltf",
    "gdquest_mannequiny": "gdquest_mannequiny/mannequiny.glb",
    "kaykit_mannequin": "kaykit_mannequin_rig_medium/mannequin_v2/manny_med_mod.gltf",
    "valid_avatar": "valid_avatar_mixamo_names_cm/Asian_M_1_Casual.glb",
    "animate_all_the_things": "animate_all_the_things_pointer/24_animation_pointer.gltf",
    "morph_stress_test": "morph_stress_test_weights/MorphStressTest.gltf",
    "blender_morphed_cube": "blender_io_morph_weights_tests/01_morphed_cube.gltf",
    "blender_multi_prim": "blender_io_morph_weights_tests/23_multi_prim_vertex_attribute.gltf",
    "cmu_16_01": "cmu_locomotion_bvh/16_01.bvh",
    "pymo_walk": "pymo_av_walk_bvh/AV_8Walk_Meredith_HVHA_Rep1.bvh",
    **{
        f"cmu_{take}": f"cmu_locomotion_bvh/{take}.bvh"
        for take in ("02_01", "02_02", "02_03", "07_01", "07_06", "08_01", "09_01", "09_12", "16_11", "16_15")
    },
    **{f"cmu_{take}": f"cmu_locomotion_bvh/{take}.bvh" for take in ("16_31", "35_01", "131_02")},
}
"""Character name → path under ``../shared/assets``."""
CLIP_FILES = {
    "kaykit_mannequin": (
        "kaykit_mannequin_rig_medium/anim/Med_General.glb",
        "kaykit_mannequin_rig_medium/anim/Med_MovementBasic.glb",
    ),
}
"""Character name → its clip files under ``../shared/assets``, loaded with it (as ``--clips``)."""
SLOW = {"kaykit_mannequin", "valid_avatar", "animate_all_the_things", *(n for n in SHARED if n.startswith("cmu_"))}
"""Characters whose program tests are ``slow`` (KayKit's 26 clips, the VALID human's 7 skins, the
CMU takes: 5-15 s each a test); the default run keeps one of each kind (16_01, the PyMO walk)."""
SLOW -= {"cmu_16_01"}
CORPUS = {
    f"corpus-{path.stem.lower()}": path
    for path in sorted(corpus_files().rglob("*"))
    if path.suffix.lower() in SUFFIXES and corpus_files().is_dir()
}
"""Character name → path of each file of the fetched corpus."""
CHARACTERS = ("mannequin", "rigid-mannequin", *SHARED, *CORPUS)
"""Every character the grounding and framing tests check.

The generated ``scene-document`` is drawn and measured (``test_drawing.py``, the bounds against the
specification) but not stood on the ground by the programs: its ``move`` clip reaches its lowest
point only at its last key, through a STEP channel, an instant a looping clip never shows."""
DRAWN = ("mannequin", *GENERATED, *SHARED, *CORPUS)
"""Every file whose mesh nodes the programs' drawing tests count."""


@functools.cache
def cached_model(
    path: str | Path | None = None, *, scale: float | None = None, clips: tuple[str | Path, ...] = ()
) -> Model:
    """:func:`load_model`, once per arguments; a shared character of :data:`CLIP_FILES` gets its clip files."""
    if not clips and path is not None:
        name = next((n for n, p in SHARED.items() if Path(path).as_posix().endswith(p)), None)
        clips = (
            tuple(Path(path).parents[len(Path(SHARED[name]).parts) - 1] / c for c in CLIP_FILES.get(name, ()))
            if name
            else ()
        )
    return load_model(path, scale=scale, clips=clips)


def params(names: tuple[str, ...]) -> list[Any]:
    """Fixture params of ``names``, those in :data:`SLOW` marked ``slow``."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


def character_path(name: str, shared_assets: Path | None) -> Path | None:
    """The file of character ``name`` (``None``: the default mannequin)."""
    if name == "mannequin":
        return None
    if name in GENERATED:
        return generated_path(name)
    if name in CORPUS:
        return CORPUS[name]
    assert shared_assets is not None
    return shared_assets / SHARED[name]


@contextmanager
def cached_models() -> Iterator[None]:
    """Within the block every program loads its ``--model`` through :func:`cached_model`."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app, "load_model", cached_model)
        yield
