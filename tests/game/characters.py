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

import pytest

from game import app
from game.contact_sheet import corpus_files
from game.model import SUFFIXES, load_model
from tests.game.scenes import GENERATED, generated_path

SHARED = {
    "cesium_man": "khronos/cesium_man.gltf",
    "fox": "fox/glTF-Binary/Fox.glb",
    "rigged_simple": "khronos/rigged_simple.gltf",
    "pirouette": "pirouette_bvh/pirouette.bvh",
    "box_animated": "khronos/box_animated.gltf",
    "interpolation_test": "khronos/interpolation_test.gltf",
}
"""Character name → path under ``../shared/assets``."""
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

cached_model = functools.cache(load_model)


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
