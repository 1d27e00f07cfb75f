"""Every program draws every mesh node of the file: skinned (every skin), rigid, node-animated, morphed.

For each character file (the mannequin, the generated scenes, the shared assets, the fetched
corpus) the demo, the blend testbed, the camera lab and the contact sheet are built as they run
headless, stepped once and rendered; the :class:`~engine.render.SceneRenderer` each draws with
counts the mesh nodes and primitives it drew. The expected numbers come from the file itself, read
without the engine: the mesh nodes of its default scene in the glTF JSON (and their primitives),
or the one bone mesh a BVH take is drawn with.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import moderngl
import numpy as np
import pytest

from engine.errors import GLContextError, InvalidInputError
from engine.render import create_context, release_context
from game.app import Controls, parse_args
from game.blend_testbed.testbed import BlendTestbed
from game.blend_testbed.testbed import build_parser as bed_parser
from game.camera_lab.lab import CameraLab
from game.camera_lab.lab import build_parser as lab_parser
from game.contact_sheet import Renderer
from game.demo.game import DemoGame
from game.demo.game import make_parser as demo_parser
from game.model import DEFAULT_MODEL, Model
from tests.conftest import require_or_skip
from tests.corpus.test_corpus_inspect import gltf_json, scene_nodes
from tests.game.characters import DRAWN, SHARED, cached_model, cached_models, character_path, params

SIZE = (320, 180)
STEP = 1.0 / 60.0


@pytest.fixture(scope="module")
def gl() -> Iterator[tuple[moderngl.Context, moderngl.Framebuffer]]:
    """One headless context and offscreen target for the module, unbound and freed at the end."""
    try:
        context = create_context(standalone=True)
    except GLContextError as exc:
        require_or_skip(f"no OpenGL 4.3 context for the headless runs: {exc}", "OSSA_REQUIRE_GL")
    target = context.simple_framebuffer(SIZE)
    yield context, target
    release_context(context)


@pytest.fixture(params=params(DRAWN))
def character(request: pytest.FixtureRequest) -> Path:
    """The file of each character (the mannequin's own file too), skipping the shared ones without the assets."""
    shared = request.getfixturevalue("shared_assets") if request.param in SHARED else None
    return character_path(request.param, shared) or DEFAULT_MODEL


def expected_counts(path: Path) -> tuple[int, int]:
    """Mesh nodes and primitives the file's default scene draws, from the file: its JSON, or one bone mesh (BVH)."""
    if path.suffix.lower() == ".bvh":
        return 1, 1
    doc = gltf_json(path)
    meshes = [doc["nodes"][n]["mesh"] for n in scene_nodes(doc) if "mesh" in doc["nodes"][n]]
    return len(meshes), sum(len(doc["meshes"][m]["primitives"]) for m in meshes)


def render_once(
    program: DemoGame | BlendTestbed | CameraLab, ctx: moderngl.Context, target: moderngl.Framebuffer
) -> None:
    """Set ``program`` up in ``ctx``, step it once and draw one frame into ``target``, as ``game.app.run`` does."""
    program.setup(ctx, SIZE)
    program.update(STEP, Controls())
    target.use()
    program.render(ctx, target)
    assert ctx.error == "GL_NO_ERROR"


def test_every_program_draws_every_mesh_node_of_the_file(
    character: Path, gl: tuple[moderngl.Context, moderngl.Framebuffer]
) -> None:
    ctx, target = gl
    nodes, primitives = expected_counts(character)
    argv = ["--model", str(character)]
    clipless = not cached_model(character).clips  # the VALID human: the testbed refuses it in one line
    with cached_models():
        demo = DemoGame(parse_args(demo_parser(), argv))
        if clipless:
            with pytest.raises(InvalidInputError, match="the model has no animation clips"):
                BlendTestbed(parse_args(bed_parser(), argv))
        bed = None if clipless else BlendTestbed(parse_args(bed_parser(), argv))
        lab = CameraLab(parse_args(lab_parser(), argv))
    drawn = []
    for program in (demo, lab) if bed is None else (demo, bed, lab):
        render_once(program, ctx, target)
        drawn.append((type(program).__name__, program.character.drawn_mesh_nodes, program.character.drawn_primitives))
    sheet = Renderer(ctx, SIZE)
    shot = sheet.shoot(cached_model(character))
    drawn.append(("contact sheet", sheet.drawn_mesh_nodes, None))
    assert drawn == [
        ("DemoGame", nodes, primitives),
        *([] if clipless else [("BlendTestbed", nodes, primitives)]),
        ("CameraLab", nodes, primitives),
        ("contact sheet", nodes, None),
    ]
    assert shot.label[-1].startswith(f"{nodes} mesh node{'' if nodes == 1 else 's'}; ")
    assert np.asarray(shot.image, dtype=float).std() > 10.0  # a picture, not a blank tile


def test_the_model_keeps_every_mesh_node_and_skin_of_the_file(character: Path) -> None:
    model: Model = cached_model(character)
    nodes, _ = expected_counts(character)
    assert model.mesh_nodes == nodes
    if character.suffix.lower() != ".bvh":
        assert len(model.scene.skins) == len(gltf_json(character).get("skins", []))
        assert model.is_object == (not gltf_json(character).get("skins"))
