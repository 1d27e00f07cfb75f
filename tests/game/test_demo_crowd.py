"""The demo's crowd mode (``python -m game.demo --crowd N``): headless runs, its palettes, its LOD, the packed upload.

The palettes are checked against :mod:`engine.anim` evaluated one character at a time (sample
both clips, take the root's horizontal travel out of the samples, blend, compose, times the
skin's inverse binds); the LOD against the same crowd evaluated in full every frame.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import moderngl
import numpy as np
import pytest
from PIL import Image

from engine.anim.blending import blend
from engine.anim.local_to_model import model_from_pose
from engine.anim.sampling import sample
from engine.anim.scene import SceneFrame
from engine.anim.skinning import skin_vertices
from engine.errors import GLContextError, InvalidInputError, SkeletonMismatchError
from engine.render import PaletteBuffer, create_context, pack_palette, release_context
from game.demo import game as demo_game
from game.demo.crowd import LOD_LIMITS, MAX_CROWD, Crowd, CrowdDemo
from game.model import Model
from tests.conftest import require_or_skip
from tests.game.characters import cached_model
from tests.game.programs import run_recorded
from tests.game.scenes import GENERATED, generated_path

STEP = 1.0 / 60.0


@pytest.fixture(scope="module")
def mannequin() -> Model:
    return cached_model()


def run_crowd(directory: Path, *options: str) -> SimpleNamespace:
    """``main --crowd ...`` headless at 160x90 in ``directory``; the exit code, the program and the screenshot."""
    argv = ["--headless", "--size", "160x90", "--screenshot", "shot.png", *options]
    code, made = run_recorded(demo_game.main, demo_game, "CrowdDemo", CrowdDemo, directory, argv, cached_model)
    with Image.open(directory / "shot.png") as image:
        pixels = np.asarray(image, dtype=float)
    return SimpleNamespace(code=code, program=made[0], pixels=pixels)


def reference_frame(model: Model, crowd: Crowd, characters: list[int]) -> SceneFrame:
    """The scene frame of ``characters`` from :mod:`engine.anim`, one character at a time, stacked."""
    skeleton = model.skeleton
    worlds = []
    for c in characters:
        layers = []
        for k, name in enumerate(crowd.clip_names):
            pose = sample(model.scene.clips[name].nodes, skeleton.rest_pose, np.array([crowd.times[k, c]]))
            if model.root_motion:
                pose.translations[:, model.root, [0, 2]] = 0.0  # played in place
            layers.append(pose)
        local = blend(skeleton.rest_pose, layers, crowd.weights[:, c])
        worlds.append(model_from_pose(skeleton, local)[0])
    return model.scene.frame(np.array(worlds))


# --- headless runs ----------------------------------------------------------------------------


@pytest.mark.gl
def test_a_headless_crowd_draws_every_character_in_one_call(
    egl: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_crowd(tmp_path, "--crowd", "64", "--frames", "5")
    assert run.code == 0  # 3 would be a GL error left in the context
    program = run.program
    assert program.drawn_instances == 64
    assert program.draw_calls == 1  # the mannequin has one primitive
    assert all(len(values) == 5 for values in program.timings.values())
    middle = run.pixels[20:80, 20:140]  # below the overlay panels
    figures = middle[..., 0] > middle[..., 1] + 10.0  # tan figures; sky and grass are bluer or greener
    assert figures.sum() > 50
    notes = [line for line in capsys.readouterr().err.splitlines() if "note: crowd of 64" in line]
    assert len(notes) == 1  # the run's medians, said once at the end
    assert "median ms per frame over 5 frames: animation" in notes[0]


@pytest.mark.gl
def test_a_crowd_beyond_one_storage_block_is_split(egl: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PaletteBuffer, "max_characters", property(lambda self: 24))
    run = run_crowd(tmp_path, "--crowd", "64", "--frames", "2")
    assert run.code == 0
    assert [chunk.stop - chunk.start for chunk in run.program.chunks] == [24, 24, 16]
    assert run.program.draw_calls == 3
    assert run.program.drawn_instances == 64


@pytest.mark.gl
def test_a_crowd_of_a_model_with_many_mesh_nodes_draws_each_primitive_once(egl: None, tmp_path: Path) -> None:
    path = generated_path("rigid-mannequin")
    run = run_crowd(tmp_path, "--crowd", "16", "--frames", "2", "--model", str(path))
    assert run.code == 0
    primitives = sum(len(instance.primitives) for instance in cached_model(path).scene.instances)
    assert primitives > 20
    assert run.program.draw_calls == primitives
    assert run.program.drawn_instances == 16


@pytest.mark.parametrize("value", ["0", "-3", str(MAX_CROWD + 1)])
def test_bad_crowd_sizes_are_one_line_errors(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo_game.main(["--crowd", value, "--headless", "--frames", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"python -m game.demo: error: --crowd must be a number of characters from 1 to {MAX_CROWD}, got {value}"
    ]


def test_a_crowd_size_that_is_not_a_number_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        demo_game.main(["--crowd", "many"])
    assert exit_info.value.code == 2
    assert "argument --crowd: invalid int value: 'many'" in capsys.readouterr().err


# --- the palettes -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mannequin", *GENERATED])
def test_the_uploaded_palettes_match_engine_anim(name: str) -> None:
    model = cached_model(None if name == "mannequin" else generated_path(name))
    crowd = Crowd(model, 64)
    for _ in range(7):
        crowd.step(STEP)
    crowd.animate(np.zeros(3))  # the first frame: everyone is evaluated
    assert crowd.evaluated == 64
    if name == "mannequin":  # one skin over nodes 0-24: the hierarchy's own records, no extra ones
        assert crowd.records.skeleton.num_joints == model.skeleton.num_joints
    characters = [0, 17, 42, 63]
    expected = reference_frame(model, crowd, characters)
    got = np.swapaxes(crowd.palettes[characters], -1, -2)  # stored column-major
    assert got.dtype == np.float32
    for instance, offset in zip(model.scene.instances, crowd.records.offsets, strict=True):
        if instance.skin is None:  # a rigid mesh: its node's world matrix
            np.testing.assert_allclose(got[:, offset], expected.world[:, instance.node], atol=1e-5)
        else:  # a skinned one: its skin's palette, contiguous from its offset
            skin = expected.skin_palettes[instance.skin]
            np.testing.assert_allclose(got[:, offset : offset + skin.shape[1]], skin, atol=1e-5)
    assert np.ptp(crowd.times[0, characters]) > 0.1  # the characters really are at different phases
    assert np.ptp(crowd.weights[1, characters]) > 0.1  # and run weights


def test_the_characters_walk_in_place_on_the_ground(mannequin: Model) -> None:
    crowd = Crowd(mannequin, 9)
    mesh = mannequin.scene.instances[0].primitives[0]
    joints = mannequin.scene.skins[0].num_joints
    lows, middles = [], []
    for _ in range(40):  # 1.3 s: more than a walk or run cycle
        crowd.step(2.0 * STEP)
        crowd.animate(np.zeros(3))
        palettes = np.swapaxes(crowd.palettes[:, :joints], -1, -2).astype(np.float64)
        vertices = skin_vertices(mesh, palettes)[0] @ crowd.worlds[:, :3, :3].transpose(0, 2, 1)
        vertices += crowd.worlds[:, None, :3, 3]
        lows.append(vertices[..., 1].min(axis=1))
        middles.append(vertices[..., [0, 2]].mean(axis=1))
    assert np.abs(np.min(lows, axis=0)).max() < 0.05  # the feet touch y = 0, none sinks or floats
    drift = np.linalg.norm(np.array(middles) - crowd.positions[:, [0, 2]], axis=-1)
    assert drift.max() < 0.25 * mannequin.height  # each stays on its spot: no walking off, no snapping back


# --- animation LOD ----------------------------------------------------------------------------


def test_lod_keeps_skipped_palettes_and_never_pops(mannequin: Model) -> None:
    lod, full = Crowd(mannequin, 64), Crowd(mannequin, 64)
    height = mannequin.height
    far = 1.5 * LOD_LIMITS[1] * height
    eyes = [np.array([0.0, 1.0, z]) for z in (*np.linspace(0.0, far, 20), *np.linspace(far, 0.0, 20))]
    shown, truth, rates = [], [], []
    for eye in eyes:
        for crowd in (lod, full):
            crowd.step(STEP)
        before = lod.palettes.copy()
        due = lod.animate(eye)
        full.animate(eye, lod=False)
        skipped = np.setdiff1d(np.arange(64), due)
        np.testing.assert_array_equal(lod.palettes[skipped], before[skipped])  # kept as they were
        np.testing.assert_allclose(lod.palettes[due], full.palettes[due], atol=1e-6)  # the current time, exactly
        shown.append(lod.palettes.copy())
        truth.append(full.palettes.copy())
        rates.append(lod.schedule.rates.copy())
    rates_seen = np.array(rates)
    assert set(np.unique(rates_seen)) == {1, 2, 4}
    changes = np.diff(rates_seen, axis=0)
    assert np.any(changes > 0)  # N of "every Nth frame" grew as the eye moved away
    assert np.any(changes < 0)  # and shrank as it came back
    # no pop: each character shows the full-rate pose of one of its last `rate` frames, also
    # across a rate change, so a displayed step is never larger than `rate` frames of motion
    for f in range(len(eyes)):
        stale = [np.abs(shown[f] - truth[f - k]).max(axis=(1, 2, 3)) for k in range(min(4, f + 1))]
        age = np.argmax(np.array(stale) < 1e-6, axis=0)
        assert np.all(np.min(stale, axis=0) < 1e-6)
        assert np.all(age < rates_seen[f])


# --- the packed upload ------------------------------------------------------------------------


@pytest.fixture
def gl() -> Iterator[moderngl.Context]:
    """A context of its own for each test (the program runs make and release theirs), no GL error left."""
    try:
        ctx = create_context(standalone=True)
    except GLContextError as exc:
        require_or_skip(f"no OpenGL 4.3 context: {exc}", "OSSA_REQUIRE_GL")
    yield ctx
    error = ctx.error
    release_context(ctx)
    assert error == "GL_NO_ERROR"


@pytest.mark.gl
def test_a_packed_upload_equals_the_gl_pack_path(gl: moderngl.Context, mannequin: Model) -> None:
    crowd = Crowd(mannequin, 5)
    crowd.step(0.3)
    crowd.animate(np.zeros(3))
    joints = crowd.palettes.shape[1]
    matrices = np.swapaxes(crowd.palettes, -1, -2).astype(np.float64)  # row-major float64, as engine.anim has them
    plain, packed, flat = (PaletteBuffer(gl, joints) for _ in range(3))
    plain.upload(matrices)
    packed.upload(crowd.palettes, packed=True)
    flat.upload(pack_palette(matrices), packed=True)
    np.testing.assert_array_equal(packed.records(), plain.records())
    np.testing.assert_array_equal(flat.records(), plain.records())
    assert packed.characters == 5


@pytest.mark.gl
@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda p: p[:, :, :3], InvalidInputError, "palettes must have shape (C, J, 16) or (C, J, 4, 4)"),
        (lambda p: p.reshape(5, -1, 8), InvalidInputError, "palettes must have shape (C, J, 16) or (C, J, 4, 4)"),
        (lambda p: p[:, :-1].copy(), SkeletonMismatchError, "palettes have 25 joints per character"),
        (lambda p: p.astype(np.float64), InvalidInputError, "packed palettes must be a C-contiguous float32 array"),
        (lambda p: p[:, :, :, ::-1], InvalidInputError, "packed palettes must be a C-contiguous float32 array"),
    ],
)
def test_a_packed_upload_refuses_bad_arrays(
    gl: moderngl.Context,
    mannequin: Model,
    make: Callable[[np.ndarray], np.ndarray],
    error: type[Exception],
    message: str,
) -> None:
    crowd = Crowd(mannequin, 5)
    crowd.animate(np.zeros(3))
    buffer = PaletteBuffer(gl, crowd.palettes.shape[1])
    with pytest.raises(error) as raised:
        buffer.upload(make(crowd.palettes), packed=True)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
    assert buffer.characters == 0  # nothing uploaded


@pytest.mark.gl
def test_a_packed_upload_refuses_nan(gl: moderngl.Context, mannequin: Model) -> None:
    crowd = Crowd(mannequin, 5)
    crowd.animate(np.zeros(3))
    palettes = crowd.palettes.copy()
    palettes[3, 7, 2, 1] = np.nan
    buffer = PaletteBuffer(gl, palettes.shape[1])
    with pytest.raises(
        InvalidInputError,
        match=r"^palettes must be finite in float32, got NaN or inf at \(character, joint\) = \(3, 7\)$",
    ):
        buffer.upload(palettes, packed=True)
