"""Every character and animated object on the ground and in frame: units, motion bounds, grounding and framing.

The checks are independent of :mod:`game.bounds`' own arithmetic: the vertices are those the
programs draw — every mesh node of the scene, computed by the engine's CPU reference
(:func:`engine.anim.scene.scene_vertices`, checked against the glTF specification in
``tests/io/test_scene.py``) from the scene frame each program draws — placed with the matrices
the programs draw with (``Player.world()``, the testbed's world transforms) and projected with
the programs' own cameras (``Camera.view_matrix`` / ``projection_matrix``), step by step over the
whole clip as the program plays it. "Fills the frame" is the projected height of those vertices
over the frame height. The bounds themselves are checked against a skinned character read the
old way (:func:`engine.io.load_character`, one skin, CPU skinning) and against the slow
per-vertex glTF reference of ``tests/io/test_scene.py`` for rigid, multi-skin and morphed scenes.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from engine.anim.local_to_model import model_from_pose
from engine.anim.rootmotion import remove_planar
from engine.anim.sampling import sample
from engine.anim.scene import SceneFrame, scene_vertices
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skin_vertices, skinning_palette
from engine.anim.units import UNITS
from engine.errors import AssetError, InvalidInputError
from engine.io import load_character
from engine.io.bvh import detect_unit
from engine.io.gltf_writer import save_gltf
from engine.math import transform_points
from engine.procedural.mannequin import build_mannequin
from game.app import Controls, parse_args
from game.blend_testbed.testbed import BlendTestbed
from game.blend_testbed.testbed import build_parser as build_testbed_parser
from game.bounds import MAX_SAMPLES, clip_motion, frame_boxes, sample_times
from game.camera_lab.lab import RUN_SPEED, CameraLab
from game.camera_lab.lab import build_parser as build_lab_parser
from game.camera_lab.scenes import Figure
from game.demo.game import DemoGame
from game.demo.game import make_parser as demo_parser
from game.demo.player import Player
from game.demo.world import Terrain
from game.measure import FIGURE_HEIGHTS, guess_unit
from game.model import DEFAULT_MODEL, Model, load_model
from tests.anim.test_gltf_conformance import Reference
from tests.game.characters import CHARACTERS, SHARED, cached_model, cached_models, character_path, params
from tests.game.scenes import generated_path
from tests.io.test_scene import reference_positions

STEP = 1.0 / 60.0
GROUND_TOLERANCE = 0.02
"""Metres: the lowest point over the clip sits this close to the ground."""
CHECK_SECONDS = 8.0
"""Seconds of a clip the programs are stepped through. A longer clip (a 38 s mocap take) is
checked whole by :func:`test_every_clip_stands_on_the_ground_over_its_whole_length`; stepping
through its first seconds checks that nothing sinks (its lowest point may come later)."""


def assert_on_ground(lowest: list[float], floor: float, whole: bool, what: object) -> None:
    """The lowest point over the steps is on ``floor`` ± 2 cm (``whole`` clip), or at least not below it."""
    if whole:
        assert min(lowest) == pytest.approx(floor, abs=GROUND_TOLERANCE), what
    else:
        assert min(lowest) >= floor - GROUND_TOLERANCE, what


GRAPH_START_DIP = 0.025
"""Metres: how far below the ground the mannequin's lowest point may go as the graph starts the walk."""
FILL_RANGE = (0.2, 0.8)
"""Fraction of the frame height the projected character fills."""


@pytest.fixture(params=params(CHARACTERS))
def character(request: pytest.FixtureRequest) -> Path | None:
    """The file of each character (``None``: the mannequin), skipping the shared ones without the assets."""
    shared = request.getfixturevalue("shared_assets") if request.param in SHARED else None
    return character_path(request.param, shared)


def drawn(model: Model, frame: SceneFrame, placements: np.ndarray) -> np.ndarray:
    """Every vertex ``(V, 3)`` of every mesh node drawn for ``frame`` (batch ``(K,)``) at ``placements`` ``(K, 4, 4)``.

    The engine's CPU reference of what the :class:`~engine.render.SceneRenderer` draws: morphed,
    then skinned or moved by the node, then placed.
    """
    placed = model.scene.frame(np.asarray(placements)[:, None] @ frame.world, frame.morph_weights)
    return scene_vertices(model.scene, placed).reshape(-1, 3)


def ndc(view_projection: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Normalised device x, y ``(V, 2)`` of world ``points``."""
    clip = np.concatenate((points, np.ones((len(points), 1))), axis=1) @ view_projection.T
    return clip[:, :2] / clip[:, 3:]


class FlatTerrain(Terrain):
    """The demo's ground without its waves: the ground the clip's feet are measured against."""

    def height(self, x: object, z: object) -> np.ndarray:
        return np.zeros(np.broadcast(np.asarray(x), np.asarray(z)).shape)

    def normal(self, x: object, z: object) -> np.ndarray:
        shape = np.broadcast(np.asarray(x), np.asarray(z)).shape
        return np.broadcast_to(np.array([0.0, 1.0, 0.0]), (*shape, 3))


# --- motion bounds --------------------------------------------------------------------------------


def character_boxes(
    path: Path, clip: str, times: np.ndarray, space: np.ndarray, *, in_place: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Per-time box ``(T, 3)``, ``(T, 3)`` of a one-skin character read the old way, in ``space``.

    :func:`load_character` (skin 0, its own skeleton and ``root_transform``) and CPU skinning;
    ``in_place`` zeroes joint 0's ground travel (as ``remove_planar`` does for a clip without yaw).
    """
    character = load_character(path)
    skeleton = character.skeleton
    pose = sample(character.clips[clip], skeleton.rest_pose, times)
    if in_place:
        pose.translations[:, 0, [0, 2]] = 0.0
    model = space @ character.root_transform @ model_from_pose(skeleton, pose)
    points = np.concatenate([skin_vertices(m, skinning_palette(skeleton, model))[0] for m in character.meshes], axis=1)
    return points.min(axis=1), points.max(axis=1)


def test_frame_boxes_of_a_skinned_character_are_its_skinned_vertices() -> None:
    model = cached_model()
    times = np.array([0.0, 0.1, 0.4, 0.65])
    world = model_from_pose(model.skeleton, sample(model.clips["run"], model.skeleton.rest_pose, times))
    lows, highs = character_boxes(DEFAULT_MODEL, "run", times, model.frame)
    np.testing.assert_allclose(
        frame_boxes(model.scene, model.scene.frame(model.frame @ world)), (lows, highs), atol=1e-12
    )


def test_clip_bounds_hold_the_skinned_extremes_at_every_sample() -> None:
    model = cached_model()
    motion = clip_motion(model.scene, model.clips["jump"], model.frame, root=model.root, in_place=True)
    lows, highs = character_boxes(DEFAULT_MODEL, "jump", motion.times, model.frame, in_place=True)
    np.testing.assert_allclose(motion.lows, lows, atol=1e-9)
    np.testing.assert_allclose(motion.highs, highs, atol=1e-9)
    assert motion.height == pytest.approx(float((highs - lows)[:, 1].max()))


@pytest.mark.parametrize("name", ["box_animated", "scene-document"])
def test_a_scene_of_rigid_skinned_and_morphed_meshes_is_measured_like_the_specification(
    name: str, request: pytest.FixtureRequest
) -> None:
    """Every clip's per-sample boxes equal the spec's per-vertex evaluation of every mesh node (JSON reference).

    BoxAnimated: two rigid meshes under animated nodes, no skin. The generated scene: rigid meshes
    under a joint and under a plain node, two skins, a non-joint node between joints, skinned
    points and lines, morph targets with animated weights.
    """
    path = character_path(name, request.getfixturevalue("shared_assets") if name in SHARED else None)
    assert path is not None
    model = cached_model(path)
    reference = Reference(path)
    mesh_nodes = [n for n, node in enumerate(reference.nodes) if "mesh" in node]
    for index, animation in enumerate(reference.json["animations"]):
        clip = list(model.clips.values())[index]
        motion = clip_motion(model.scene, clip, np.eye(4))
        for k in np.linspace(0, len(motion.times) - 1, 7).round().astype(int):
            points = np.concatenate(
                [
                    reference_positions(reference, node, p, animation, float(motion.times[k]))
                    for node in mesh_nodes
                    for p in range(len(reference.json["meshes"][reference.nodes[node]["mesh"]]["primitives"]))
                ]
            )
            np.testing.assert_allclose(motion.lows[k], points.min(axis=0), atol=1e-6, err_msg=f"{clip.name} {k}")
            np.testing.assert_allclose(motion.highs[k], points.max(axis=0), atol=1e-6, err_msg=f"{clip.name} {k}")


def test_a_character_of_rigid_parts_is_measured_whole_not_by_its_skinned_hands() -> None:
    """The mannequin as rigid parts under its bones with two skinned hands: as tall and grounded as the mannequin.

    Before the programs drew the whole scene they read skin 0 only: a figure one hand tall,
    scaled up as if in centimetres, floating. Every clip's bounds here are the skinned
    mannequin's within 2 cm (rigid parts follow their main joint where skinning blends two).
    """
    rigid, skinned = cached_model(generated_path("rigid-mannequin")), cached_model()
    assert rigid.mesh_nodes == 22
    assert len(rigid.scene.skins) == 2
    assert rigid.skeleton.names[rigid.root] == "root"
    assert (rigid.unit, rigid.root_motion, rigid.notes) == ("metres", True, ())
    assert rigid.height == pytest.approx(skinned.height, abs=1e-6)
    for name, bounds in rigid.bounds.items():  # the mannequin's clips (the file has its strafe gaits too)
        np.testing.assert_allclose(bounds.low, skinned.bounds[name].low, atol=0.02, err_msg=name)
        np.testing.assert_allclose(bounds.high, skinned.bounds[name].high, atol=0.02, err_msg=name)


def test_sample_times_hold_every_key_and_at_least_30_per_second() -> None:
    clip = cached_model().clips["walk"]
    times = sample_times(clip)
    keys = np.unique(np.concatenate([c.times for c in clip.channels]))
    assert np.abs(keys[:, None] - times[None]).min(axis=1).max() <= 1e-3
    assert times[0] == 0.0
    assert times[-1] == pytest.approx(clip.duration)
    assert np.diff(times).max() <= 1.0 / 30.0 + 1e-3  # float32 keys beside the grid merge
    assert sample_times(None).tolist() == [0.0]


@pytest.mark.assets
def test_a_long_take_is_sampled_at_most_max_samples_times(shared_assets: Path) -> None:
    take = cached_model(shared_assets / "pirouette_bvh" / "pirouette.bvh").clips["pirouette"]
    assert len(sample_times(take)) == min(MAX_SAMPLES, 591)  # 592 frames of 120 Hz mocap, the first a calibration pose


# --- units ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("height", "upright", "scale", "unit"),
    [
        (1.8, True, 1.0, "metres"),
        (0.8, False, 1.0, "metres"),
        (175.0, True, 0.01, "centimetres"),  # a human in cm
        (70.0, True, 0.0254, "inches"),  # a human in inches: 0.70 m in cm would be a child-sized guess
        (30.0, True, 0.0254 / 0.45, "CMU units (inches / 0.45)"),  # a CMU mocap skeleton
        (6.0, True, 0.3048, "feet"),  # a human in feet (the BVH reader's units, shared)
        (1750.0, True, 0.001, "millimetres"),
        (79.9, False, 0.01, "centimetres"),  # the Fox: not upright, the first unit that fits
        (9.18, True, 1.0, "metres"),  # RiggedSimple: no unit makes it a figure; kept
    ],
)
def test_guess_unit(height: float, upright: bool, scale: float, unit: str) -> None:
    guessed, name, note = guess_unit(height, upright)
    assert guessed == pytest.approx(scale)
    assert name == unit
    assert bool(note) == (height > FIGURE_HEIGHTS[1])  # metres in range are said nothing about
    if unit != "metres":
        assert note == (
            f"{height:.3g} units tall, {'upright' if upright else 'not upright'}: read as {unit}"
            + (f", a {height * scale:.2f} m human" if upright else f" ({height * scale:.2f} m)")
        )


@pytest.mark.parametrize(
    ("height", "upright", "scale", "note"),
    [
        (10.1, True, 1.0, "10.1 units tall, no skin: an object, kept in metres"),  # InterpolationTest
        (79.9, False, 1.0, "79.9 units tall, no skin: an object, kept in metres"),
        (175.0, True, 0.01, "175 units tall, upright: read as centimetres, a 1.75 m human"),  # rigid parts, no skin
        (2.0, False, 1.0, ""),
    ],
)
def test_guess_unit_of_an_object_keeps_metres_unless_it_is_a_human(
    height: float, upright: bool, scale: float, note: str
) -> None:
    assert guess_unit(height, upright, character=False)[::2] == (pytest.approx(scale), note)


@pytest.mark.parametrize("unit", [u for u in UNITS if u != "metres"])
def test_a_glb_character_and_a_bvh_skeleton_in_one_unit_are_read_alike(unit: str) -> None:
    """The programs (animated height) and the BVH reader (rest joint span) share the rule and its unit names."""
    metres = UNITS[unit]
    mannequin = build_mannequin().skeleton
    skeleton = Skeleton(
        mannequin.names,
        mannequin.parents,
        mannequin.rest_translations / metres,
        mannequin.rest_rotations,
        mannequin.rest_scales,
    )
    found = detect_unit(skeleton)
    assert found is not None
    assert found[:2] == (unit, metres)
    assert guess_unit(cached_model().height / metres, True)[:2] == (metres, unit)


def test_guess_unit_at_the_edges_of_the_figure_range() -> None:
    low, high = FIGURE_HEIGHTS
    for inside in (low, high):
        assert guess_unit(inside, True) == (1.0, "metres", "")
    for outside in (np.nextafter(low, 0.0), np.nextafter(high, np.inf)):
        assert guess_unit(float(outside), True)[2] != ""


def scaled_bvh(text: str, factor: float) -> str:
    """``text`` (a BVH take whose only position channels are the root's first three) with every length × ``factor``."""
    head, motion = text.split("MOTION")

    def offset(match: re.Match[str]) -> str:
        return "OFFSET " + " ".join(f"{float(v) * factor:.6g}" for v in match.group(1).split())

    lines = motion.strip().split("\n")
    frames = []
    for line in lines[2:]:
        values = line.split()
        frames.append(" ".join([f"{float(v) * factor:.6g}" for v in values[:3]] + values[3:]))
    return (
        re.sub(r"OFFSET\s+([-\d.eE+\s]+?)\n", lambda m: offset(m) + "\n", head)
        + "MOTION\n"
        + "\n".join([*lines[:2], *frames])
    )


@pytest.mark.assets
@pytest.mark.parametrize(
    ("factor", "unit"), [(1 / 2.54, "inches"), (0.45 / 2.54, "CMU units (inches / 0.45)"), (10.0, "millimetres")]
)
def test_a_take_in_other_units_is_the_same_figure_in_metres(
    shared_assets: Path, tmp_path: Path, factor: float, unit: str
) -> None:
    """The pirouette rewritten in inches, CMU units and millimetres: detected, and placed where the cm take is."""
    source = shared_assets / "pirouette_bvh" / "pirouette.bvh"
    reference = cached_model(source)
    path = tmp_path / "pirouette.bvh"
    path.write_text(scaled_bvh(source.read_text(), factor))
    model = load_model(path)
    assert model.unit == unit
    assert model.height == pytest.approx(reference.height, rel=1e-4)
    rest = model_from_pose(model.skeleton, model.skeleton.rest_pose)[:, :3, 3]
    expected = model_from_pose(reference.skeleton, reference.skeleton.rest_pose)[:, :3, 3]
    np.testing.assert_allclose(
        transform_points(model.frame, rest), transform_points(reference.frame, expected), atol=1e-4
    )
    assert any(f"read as {unit}" in note for note in model.notes)


def mannequin_in(tmp_path: Path, units_per_metre: float) -> Path:
    """The mannequin written again with every length × ``units_per_metre`` (a file in other units)."""
    mannequin = build_mannequin()
    k = units_per_metre
    skeleton = mannequin.skeleton
    inverse_binds = skeleton.inverse_bind_matrices.copy()
    inverse_binds[:, :3, 3] *= k
    scaled = Skeleton(
        skeleton.names,
        skeleton.parents,
        skeleton.rest_translations * k,
        skeleton.rest_rotations,
        skeleton.rest_scales,
        inverse_binds,
    )
    clips = [
        dataclasses.replace(
            clip,
            channels=tuple(
                dataclasses.replace(c, values=c.values * k) if c.path == "translation" else c for c in clip.channels
            ),
        )
        for clip in mannequin.clips.values()
    ]
    mesh = dataclasses.replace(mannequin.mesh, positions=mannequin.mesh.positions * k)
    return save_gltf(tmp_path / f"mannequin_x{k:g}.glb", scaled, clips, [mesh])


@pytest.mark.parametrize(("units_per_metre", "unit"), [(100.0, "centimetres"), (1 / 0.0254, "inches")])
def test_a_gltf_character_in_other_units_is_the_same_figure_in_metres(
    tmp_path: Path, units_per_metre: float, unit: str
) -> None:
    reference = cached_model()
    model = load_model(mannequin_in(tmp_path, units_per_metre))
    assert model.unit == unit
    assert model.scale == pytest.approx(1.0 / units_per_metre)
    assert model.height == pytest.approx(reference.height, rel=1e-5)
    for name, bounds in model.bounds.items():  # the mannequin's clips (the file has its strafe gaits too)
        np.testing.assert_allclose(bounds.low, reference.bounds[name].low, atol=1e-4)
        np.testing.assert_allclose(bounds.high, reference.bounds[name].high, atol=1e-4)
    assert f"read as {unit}, a {reference.height:.2f} m human" in model.notes[0]


@pytest.mark.assets
def test_the_shared_characters_units(shared_assets: Path) -> None:
    fox = cached_model(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    assert (fox.unit, fox.scale) == ("centimetres", 0.01)
    assert 0.7 < fox.height < 0.9
    dancer = cached_model(shared_assets / "pirouette_bvh" / "pirouette.bvh")
    assert (dancer.unit, dancer.scale) == ("centimetres", 0.01)
    assert 1.6 < dancer.height < 1.9
    assert dancer.notes[0] == "a BVH take, converted in memory (57 joints, bone mesh)"
    assert cached_model(shared_assets / "khronos" / "cesium_man.gltf").unit == "metres"
    given = cached_model(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", scale=0.0254)
    assert given.unit == "--scale"
    assert given.height == pytest.approx(fox.height * 2.54, rel=1e-9)


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        (
            "character.fbx",
            InvalidInputError,
            "--model character.fbx: expected a .gltf, .glb, .vrm or .bvh file, got '.fbx'",
        ),
        ("no/such/take.bvh", AssetError, "no/such/take.bvh: model file not found"),
    ],
)
def test_model_files_that_cannot_be_read(path: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}"):
        load_model(path)


def test_a_scale_must_be_positive() -> None:
    for scale in (0.0, -1.0, float("nan")):
        with pytest.raises(InvalidInputError, match=r"^--scale must be a positive number of metres per unit, got "):
            load_model(None, scale=scale)


def test_a_malformed_take_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.bvh"
    path.write_text(
        "HIERARCHY\nROOT hips\n{\n OFFSET 0 0 0\n CHANNELS 1 Wrotation\n}\nMOTION\nFrames: 1\nFrame Time: 0.1\n0\n"
    )
    with pytest.raises(AssetError, match="line 5"):
        load_model(path)


# --- the demo: on the ground, in frame --------------------------------------------------------------


def test_every_clip_stands_on_the_ground_over_its_whole_length(character: Path | None) -> None:
    """Each clip alone, at every key and 60 times a second, placed as the programs place it.

    The programs draw a clip playing alone with ``frame`` lowered by ``ground({clip: 1})`` and,
    for root-motion models, the root joint without its planar motion (the engine's
    ``remove_planar``); the lowest vertex of the whole scene (morph weights of the clip) over the
    whole clip is on ``y = 0``.
    """
    model = cached_model(character)
    for name, clip in model.clips.items():
        keys = np.concatenate([channel.times for channel in clip.channels] or [np.zeros(1)])
        times = np.unique(np.concatenate((keys, np.arange(0.0, clip.duration, 1.0 / 60.0))))
        lowered = model.frame.copy()
        lowered[1, 3] -= model.ground({name: 1.0})
        lowest = np.inf
        for chunk in np.array_split(times, max(1, len(times) // 120)):  # bounded memory for long takes
            pose = sample(clip, model.skeleton.rest_pose, chunk)
            if model.root_motion:
                root = model.root
                pose.translations[:, root], pose.rotations[:, root] = remove_planar(
                    pose.translations[:, root], pose.rotations[:, root]
                )
            world = lowered @ model_from_pose(model.skeleton, pose)
            frame = model.scene.frame(world, model.scene.sample_morph_weights(name, chunk))
            lowest = min(lowest, float(scene_vertices(model.scene, frame)[..., 1].min()))
        assert lowest == pytest.approx(0.0, abs=GROUND_TOLERANCE), name


def demo_game(path: Path | None) -> DemoGame:
    with cached_models():
        return DemoGame(parse_args(demo_parser(), [] if path is None else ["--model", str(path)]))


def test_the_demo_puts_the_lowest_point_over_the_clip_on_the_ground(character: Path | None) -> None:
    """Standing through the whole first clip, then walking through a whole walk: lowest vertex at ``y = 0`` ± 2 cm.

    A model without an idle clip stands on its gait's lowest point (``Model.standing``): Testwuson,
    whose walk holds every foot 9 cm above the clip's lowest point at its phase 0, stands on the ground.
    """
    model = cached_model(character)
    player = Player(model, FlatTerrain())
    walk = model.roles.walk or model.reference
    for move, clip in (([0.0, 0.0, 0.0], model.reference), ([0.0, 0.0, 1.0], walk)):
        duration = model.clips[clip].duration if clip is not None else 0.5
        lowest = []
        for _ in range(round(min(duration, CHECK_SECONDS) / STEP) + 30):  # past the clip's end, and the blend in
            player.update(STEP, move, run=False, jump=False)
            lowest.append(drawn(model, player.frame, player.world()[None])[:, 1].min())
        if player.graph is not None and move[2]:
            # the locomotion graph's 2-D blend space weighs the walk more than a 1-D one at low speed
            # (gradient bands): the toes of the idle/walk blend dip 2.0-2.1 cm 0.1 s into the walk
            assert min(lowest) >= -GRAPH_START_DIP, (clip, move)
            lowest = lowest[30:]
        assert_on_ground(lowest, 0.0, duration <= CHECK_SECONDS, (clip, move))


def test_the_demo_frames_the_character(character: Path | None) -> None:
    """The follow camera shows the whole character, its bounds filling 20-80 % of the frame, standing, then walking.

    Every vertex drawn is in frame at every step; the projected motion bounds of the clips that
    can play (the reference clip, then the walk too) fill 20-80 % of the frame's height or width,
    whichever they fill more (the Blender armature cube lies 11 times wider than tall), and so do
    the vertices at most (an object that grows over its clip, BoxAnimated's box flying up, fills
    less of the frame while it is small: the camera frames what it will do).
    """
    game = demo_game(character)
    model = game.model
    controls = Controls()
    fills, bound_fills = [], []
    for step in range(120):
        if step == 40:
            controls.down("w")
        game.update(STEP, controls)
        controls.end_step()
        view_projection = game.camera.projection_matrix(960 / 540) @ game.camera.view_matrix()
        xy = ndc(view_projection, drawn(model, game.player.frame, game.player.world()[None]))
        assert np.abs(xy).max() < 1.0, step
        fills.append(float(np.ptp(xy, axis=0).max()) / 2.0)
        playing = [n for n in dict.fromkeys((model.reference, model.roles.walk if step >= 40 else None)) if n]
        placement = game.player.world() @ np.linalg.inv(model.frame)  # character frame -> world
        corners = ndc(view_projection, transform_points(placement, model.motion_bounds(playing).corners()))
        bound_fills.append(float(np.ptp(corners, axis=0).max()) / 2.0)
    assert max(fills) <= FILL_RANGE[1]
    assert FILL_RANGE[0] <= min(bound_fills)
    assert max(bound_fills) <= FILL_RANGE[1]


# --- the testbed: on the ground, in frame ----------------------------------------------------------


def make_bed(path: Path | None, *options: str) -> BlendTestbed:
    with cached_models():
        args = parse_args(build_testbed_parser(), [*options] + ([] if path is None else ["--model", str(path)]))
        made = BlendTestbed(args)
    made.size = (960, 540)
    return made


def bed_vertices(bed: BlendTestbed) -> np.ndarray:
    """World vertices of what the testbed draws (one character, or the three side by side)."""
    _, offsets = bed._layout()
    worlds = bed.world_transforms(offsets)
    return drawn(bed.model, bed.scene_frame(bed.node_matrices()), worlds)


def test_the_testbed_stands_each_clip_on_the_floor_and_frames_it(character: Path | None) -> None:
    """Each blended clip alone at weight 1 for its whole length: lowest vertex on the floor, in frame.

    The camera frames the clips playing: the clip's motion bounds fill 20-80 % of the frame and its
    vertices at most 80 %, at every step (a clip that travels, GDQuest's 4.5 m dash, fills less
    while far off: the camera frames what it will do). A fill is the larger of the projected
    height and width (as fractions of the frame's): the assimp Blender cube is 11 times wider than
    tall, so its width, not its height, limits it.
    """
    if not cached_model(character).clips:  # the VALID human has none: the testbed refuses it in one line
        with pytest.raises(InvalidInputError, match="the model has no animation clips"):
            make_bed(character)
        return
    bed = make_bed(character)
    clips = [k for k, name in enumerate(bed.names) if "(additive)" not in name]
    for row in clips:
        for other in clips:
            bed.playback.set_weight(other, 1.0 if other == row else 0.0)
        bed.playback.actions[0][row].reset()
        bed.playback.actions[1][row].reset()
        lowest, fills, bound_fills = [], [], []
        duration = bed.playback.actions[0][row].duration
        for _ in range(round(min(duration, CHECK_SECONDS) / STEP) + 2):
            bed.update(STEP, Controls())
            camera, offsets = bed._layout()
            view_projection = camera.projection_matrix(960 / 540) @ camera.view_matrix()
            points = bed_vertices(bed)
            lowest.append(points[:, 1].min())
            xy = ndc(view_projection, points)
            assert np.abs(xy).max() < 1.0
            fills.append(float(np.ptp(xy, axis=0).max()) / 2.0)
            corners = ndc(view_projection, bed.bounds.corners() + offsets[0])
            bound_fills.append(float(np.ptp(corners, axis=0).max()) / 2.0)
        assert_on_ground(lowest, bed.floor, duration <= CHECK_SECONDS, bed.names[row])
        assert FILL_RANGE[0] <= min(bound_fills), bed.names[row]
        assert max(bound_fills) <= FILL_RANGE[1], bed.names[row]
        assert max(fills) <= FILL_RANGE[1], bed.names[row]


def test_the_testbed_side_by_side_keeps_all_three_in_frame(character: Path | None) -> None:
    if not cached_model(character).clips:  # the VALID human has none: the testbed refuses it in one line
        with pytest.raises(InvalidInputError, match="the model has no animation clips"):
            make_bed(character)
        return
    bed = make_bed(character, "--compare")
    for _ in range(30):
        bed.update(STEP, Controls())
    camera, offsets = bed._layout()
    assert len(offsets) == 3
    points = bed_vertices(bed)
    view_projection = camera.projection_matrix(960 / 540) @ camera.view_matrix()
    homogeneous = np.concatenate((points, np.ones((len(points), 1))), axis=1) @ view_projection.T
    ndc = homogeneous[:, :2] / homogeneous[:, 3:]
    assert np.abs(ndc).max() < 1.0


# --- the camera lab: on the grid --------------------------------------------------------------------


def test_the_camera_lab_stands_the_character_on_its_grid(character: Path | None) -> None:
    """The lab's idle and run figures over their whole clips: lowest vertex on the grid (``y = 0``) ± 2 cm."""
    with cached_models():
        lab = CameraLab(parse_args(build_lab_parser(), [] if character is None else ["--model", str(character)]))
    for role in ("idle", "run"):
        name = lab.clip_for(role)
        duration = lab.model.clips[name].duration if name is not None else 0.0
        gait = lab.model.gaits.get(name) if name is not None else None
        rate = RUN_SPEED / gait.speed if gait is not None and gait.moves else 1.0  # clip seconds per second
        lowest = []
        for time in np.arange(0.0, min(duration, CHECK_SECONDS) / rate + STEP, STEP):  # the figure's clock
            frame, world = lab.figure_pose(Figure(np.zeros(3), 0.3, role, float(time)))
            lowest.append(drawn(lab.model, frame, world[None])[:, 1].min())
        assert_on_ground(lowest, 0.0, duration <= CHECK_SECONDS, role)
