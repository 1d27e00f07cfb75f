"""Every corpus file through the loaders, ``ossa inspect``, ``ossa evaluate`` and the programs' loader.

The expected numbers come from the files themselves, read here without the engine: the glTF JSON
(node, skin, mesh and animation counts, morph targets, scene membership), a small BVH text reader
(joints, End Sites, frame count and time, rest height from the OFFSETs), an independent
per-vertex morph evaluation (numpy + scipy), and the manifest, whose ``covers`` block is checked
against the same readings so it cannot drift from the files.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import struct
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.cli import main
from engine.io import load_gltf
from engine.io.bvh import load_bvh
from game.model import load_model
from tests.corpus.corpus import BVH, GLTF, Corpus, entry_id

# --------------------------------------------------------------------------------------------
# independent readers


def gltf_json(path: Path) -> dict[str, Any]:
    """The JSON of a ``.gltf``, or of a ``.glb``'s first chunk."""
    raw = path.read_bytes()
    if raw[:4] != b"glTF":
        document: dict[str, Any] = json.loads(raw)
        return document
    length, kind = struct.unpack_from("<II", raw, 12)
    assert kind == 0x4E4F534A, "first GLB chunk must be JSON"
    chunk: dict[str, Any] = json.loads(raw[20 : 20 + length])
    return chunk


def scene_nodes(doc: dict[str, Any]) -> list[int]:
    """Nodes of the default scene (``scene``, else scene 0), every descendant included."""
    scene = doc["scenes"][doc.get("scene", 0)]
    stack, seen = list(scene.get("nodes", [])), []
    while stack:
        node = stack.pop()
        seen.append(node)
        stack.extend(doc["nodes"][node].get("children", []))
    return seen


def parents_of(doc: dict[str, Any]) -> dict[int, int]:
    """Child node → parent node."""
    return {c: p for p, node in enumerate(doc["nodes"]) for c in node.get("children", [])}


def non_joint_between_joints(doc: dict[str, Any]) -> bool:
    """True when some skin joint reaches its nearest joint ancestor through a node that is not a joint."""
    parents = parents_of(doc)
    for skin in doc.get("skins", []):
        joints = set(skin["joints"])
        for joint in joints:
            node, crossed = parents.get(joint), False
            while node is not None and node not in joints:
                node, crossed = parents.get(node), True
            if node is not None and crossed:
                return True
    return False


def accessor(doc: dict[str, Any], base: Path, index: int) -> np.ndarray:
    """A float32 accessor read from an external ``.bin`` (tightly packed; enough for the corpus)."""
    meta = doc["accessors"][index]
    view = doc["bufferViews"][meta["bufferView"]]
    assert meta["componentType"] == 5126, "float32 accessors only"
    assert "byteStride" not in view, "tightly packed views only"
    assert "sparse" not in meta, "dense accessors only"
    data = (base / doc["buffers"][view["buffer"]]["uri"]).read_bytes()
    width = {"SCALAR": 1, "VEC3": 3, "VEC4": 4}[meta["type"]]
    start = view.get("byteOffset", 0) + meta.get("byteOffset", 0)
    values = np.frombuffer(data, dtype="<f4", count=meta["count"] * width, offset=start)
    return values.astype(np.float64).reshape(meta["count"], width)


def bvh_reference(path: Path) -> dict[str, Any]:
    """Joint names, End Sites, stated frames, frame lines, frame time and rest Y extent of a BVH, from its text."""
    text = path.read_text(encoding="latin-1")
    head, _, motion = re.split(r"^\s*(MOTION)\s*$", text, maxsplit=1, flags=re.MULTILINE)
    stack: list[np.ndarray] = []  # position of each open block's joint; a child starts at its parent's
    heights, names, end_sites = [], [], 0
    for line in head.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] in ("ROOT", "JOINT"):
            names.append(words[1])
        elif words[0] == "End":
            end_sites += 1
        elif words[0] == "{":
            stack.append(stack[-1] if stack else np.zeros(3))
        elif words[0] == "OFFSET":
            stack[-1] = (stack[-2] if len(stack) > 1 else np.zeros(3)) + np.array([float(w) for w in words[1:4]])
            heights.append(stack[-1][1])
        elif words[0] == "}":
            stack.pop()
    lines = motion.strip().splitlines()
    frames = int(lines[0].split(":")[1])
    frame_time = float(lines[1].split(":")[1])
    frame_lines = sum(1 for line in lines[2:] if line.strip())
    return {
        "joints": len(names),
        "names": names,
        "end_sites": end_sites,
        "frames": frames,
        "frame_lines": frame_lines,
        "frame_time": frame_time,
        "height": max(heights) - min(heights),
    }


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``ossa ARGV`` in-process: exit status, stdout, stderr (warnings tolerated, not printed)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def quiet(function: Any, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with warnings recorded instead of raised."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        return function(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# glTF


@pytest.mark.parametrize("entry", GLTF, ids=entry_id)
def test_manifest_covers_match_the_gltf_file(entry: dict[str, Any], corpus: Corpus) -> None:
    doc = gltf_json(corpus.path(entry))
    covers = entry["covers"]
    nodes = doc["nodes"]
    mesh_nodes = [n for n in scene_nodes(doc) if "mesh" in nodes[n]]
    skinned = [n for n in mesh_nodes if "skin" in nodes[n]]
    joints = {j for skin in doc.get("skins", []) for j in skin["joints"]}
    animated = {
        c["target"]["node"]
        for a in doc.get("animations", [])
        for c in a["channels"]
        if c["target"]["path"] != "weights" and "node" in c["target"]
    }
    morphs = max((len(p.get("targets", [])) for m in doc.get("meshes", []) for p in m["primitives"]), default=0)
    assert len(doc.get("skins", [])) == covers["skins"]
    assert len(skinned) == covers["skinned_mesh_nodes"]
    assert len(mesh_nodes) - len(skinned) == covers["rigid_mesh_nodes"]
    assert morphs == covers["morph_targets"]
    assert bool(animated - joints) == covers["node_animation"]
    assert non_joint_between_joints(doc) == covers["non_joint_nodes_in_joint_hierarchy"]
    assert [a.get("name") for a in doc.get("animations", [])] == covers["clips"]
    assert {j for chain in covers.get("limbs", {}).values() for j in chain} <= joints
    assert sorted(doc.get("extensionsRequired", [])) == covers.get("needs", [])


@pytest.mark.parametrize("entry", GLTF, ids=entry_id)
def test_load_gltf_keeps_every_node_skin_mesh_node_and_clip(entry: dict[str, Any], corpus: Corpus) -> None:
    path = corpus.path(entry)
    doc = gltf_json(path)
    asset = quiet(load_gltf, path)
    scene = scene_nodes(doc)
    assert sorted(int(n) for n in asset.node_indices) == sorted(scene)
    assert len(asset.skins) == len(doc.get("skins", []))
    assert sorted(m.gltf_node for m in asset.mesh_nodes) == sorted(n for n in scene if "mesh" in doc["nodes"][n])
    assert len(asset.clips) == len(doc.get("animations", []))


@pytest.mark.parametrize("entry", GLTF, ids=entry_id)
def test_ossa_inspect_lists_skins_meshes_and_clips(entry: dict[str, Any], corpus: Corpus) -> None:
    path = corpus.path(entry)
    doc = gltf_json(path)
    status, out, err = run_cli("inspect", str(path))
    assert status == 0
    # Only the unit (when it is not centimetres) and a frame count short of the lines are worth a word.
    warned = err.splitlines()
    assert all(line.startswith("ossa inspect: warning: ") for line in warned), err
    assert any("CMU units" in line for line in warned) == (entry["covers"]["unit"] == "cmu"), err
    mesh_nodes = sum("mesh" in doc["nodes"][n] for n in scene_nodes(doc))
    assert f"\nskins: {len(doc.get('skins', []))}\n" in out
    assert f"\nmeshes: {mesh_nodes} mesh node(s)\n" in out
    assert f"\nclips: {len(doc.get('animations', []))}\n" in out
    for name in entry["covers"]["clips"]:
        assert name is None or repr(name) in out


@pytest.mark.parametrize("entry", GLTF, ids=entry_id)
def test_ossa_evaluate_gives_every_mesh_primitive_of_the_scene(entry: dict[str, Any], corpus: Corpus) -> None:
    path = corpus.path(entry)
    doc = gltf_json(path)
    status, out, _ = run_cli("evaluate", str(path), "--times", "0,0.25,1")
    assert status == 0
    result = json.loads(out)
    scene = scene_nodes(doc)
    assert sorted(n["index"] for n in result["nodes"]) == sorted(scene)
    expected = {
        (n, p)
        for n in scene
        if "mesh" in doc["nodes"][n]
        for p in range(len(doc["meshes"][doc["nodes"][n]["mesh"]]["primitives"]))
    }
    assert {(m["node"], m["primitive"]) for m in result["meshes"]} == expected
    for mesh in result["meshes"]:
        positions = np.asarray(mesh["skinnedPositions"])
        assert positions.shape == (3, positions.shape[1], 3)
        assert np.isfinite(positions).all()
        assert mesh["skinned"] == ("skin" in doc["nodes"][mesh["node"]])


MORPHED = [e for e in GLTF if e["covers"]["morph_targets"] > 0 and e["id"] == "animated-morph-cube"]
"""Files the per-vertex reference below reads (external float32 buffers, a LINEAR weights channel, a rigid mesh):
the other morphed files (data URIs, CUBICSPLINE weights, sparse outputs, skins) are tests/io's."""


@pytest.mark.parametrize("entry", MORPHED, ids=entry_id)
def test_ossa_evaluate_applies_morph_weights_like_a_per_vertex_reference(entry: dict[str, Any], corpus: Corpus) -> None:
    # Reference: spec formula base + Σ wᵢ·Δᵢ, weights LINEAR-interpolated from the sampler, then the
    # node's TRS (scipy Rotation for the quaternion). Only rigid (unskinned) morphed nodes here.
    path = corpus.path(entry)
    doc = gltf_json(path)
    (channel,) = [c for a in doc["animations"][:1] for c in a["channels"] if c["target"]["path"] == "weights"]
    sampler = doc["animations"][0]["samplers"][channel["sampler"]]
    assert sampler["interpolation"] == "LINEAR"
    node = doc["nodes"][channel["target"]["node"]]
    primitive = doc["meshes"][node["mesh"]]["primitives"][0]
    key_times = accessor(doc, path.parent, sampler["input"])[:, 0]
    targets = primitive["targets"]
    key_weights = accessor(doc, path.parent, sampler["output"]).reshape(len(key_times), len(targets))
    base = accessor(doc, path.parent, primitive["attributes"]["POSITION"])
    deltas = np.stack([accessor(doc, path.parent, t["POSITION"]) for t in targets])
    times = np.array([0.7, 1.6, 3.1])
    weights = np.stack([np.interp(times, key_times, key_weights[:, k]) for k in range(len(targets))], axis=1)
    local = base[None] + np.einsum("tk,kvc->tvc", weights, deltas)
    rotation = Rotation.from_quat(node.get("rotation", [0, 0, 0, 1]))
    world = rotation.apply(local.reshape(-1, 3) * np.asarray(node.get("scale", [1, 1, 1]))).reshape(local.shape)
    world += np.asarray(node.get("translation", [0, 0, 0]))
    assert np.abs(world - base_world(rotation, node, base)).max() > 1e-3  # the morph moves the shape
    status, out, _ = run_cli("evaluate", str(path), "--times", ",".join(map(str, times)))
    assert status == 0
    (mesh,) = json.load(io.StringIO(out))["meshes"]
    np.testing.assert_allclose(mesh["skinnedPositions"], world, rtol=1e-6, atol=1e-6 * np.abs(world).max())


def base_world(rotation: Rotation, node: dict[str, Any], base: np.ndarray) -> np.ndarray:
    """The unmorphed ``base`` positions in world space under ``node``'s TRS."""
    return rotation.apply(base * np.asarray(node.get("scale", [1, 1, 1]))) + np.asarray(
        node.get("translation", [0, 0, 0])
    )


@pytest.mark.parametrize("entry", GLTF, ids=entry_id)
def test_programs_load_every_gltf_file(entry: dict[str, Any], corpus: Corpus) -> None:
    """The programs take every file as ``--model``: its whole default scene, a file without a skin as an object.

    A file of clips without a mesh (KayKit's) draws each skin of two joints or more as bones.
    """
    path = corpus.path(entry)
    doc = gltf_json(path)
    model = quiet(load_model, path)
    assert model.height > 0
    meshes = sum("mesh" in doc["nodes"][n] for n in scene_nodes(doc))
    boned = [skin for skin in doc.get("skins", []) if len(skin["joints"]) > 1] if not meshes else []
    assert model.bones == bool(boned)
    assert model.mesh_nodes == meshes + len(boned)
    assert model.is_object == (entry["covers"]["skins"] == 0)
    assert len(model.clips) == len(doc.get("animations", []))


# --------------------------------------------------------------------------------------------
# BVH


@pytest.mark.parametrize("entry", BVH, ids=entry_id)
def test_manifest_covers_match_the_bvh_file(entry: dict[str, Any], corpus: Corpus) -> None:
    reference = bvh_reference(corpus.path(entry))
    covers = entry["covers"]
    assert reference["joints"] == covers["joints"]
    assert reference["end_sites"] == covers["end_sites"]
    assert reference["frames"] == covers["frames"]
    assert reference["frame_lines"] == covers.get("frame_lines", covers["frames"])
    assert reference["frame_time"] == covers["frame_time"]
    assert round(1.0 / reference["frame_time"]) == covers["fps"]
    assert reference["height"] == pytest.approx(covers["height_file_units"], abs=5e-4)
    assert {j for chain in covers["limbs"].values() for j in chain} <= set(reference["names"])
    # A standing human is 1.5–2 m: the manifest's unit must make this one so.
    assert 1.2 < reference["height"] * covers["scale_to_metres"] < 2.1


@pytest.mark.parametrize("entry", BVH, ids=entry_id)
def test_load_bvh_agrees_with_the_text(entry: dict[str, Any], corpus: Corpus) -> None:
    path = corpus.path(entry)
    reference = bvh_reference(path)
    anim = quiet(load_bvh, path, scale=1.0)
    skeleton = anim.skeleton
    assert skeleton.num_joints == reference["joints"] + reference["end_sites"]
    assert anim.num_frames == reference["frames"]
    assert anim.frame_time == reference["frame_time"]
    rest = np.zeros((skeleton.num_joints, 3))
    for joint, parent in enumerate(skeleton.parents):
        rest[joint] = skeleton.rest_translations[joint] + (rest[parent] if parent >= 0 else 0.0)
    assert np.ptp(rest[:, 1]) == pytest.approx(reference["height"], rel=1e-12)


@pytest.mark.parametrize("entry", BVH, ids=entry_id)
def test_ossa_inspect_and_evaluate_read_the_bvh_file(entry: dict[str, Any], corpus: Corpus) -> None:
    path = corpus.path(entry)
    reference = bvh_reference(path)
    status, out, err = run_cli("inspect", str(path))
    assert status == 0
    # Only the unit (when it is not centimetres) and a frame count short of the lines are worth a word.
    warned = err.splitlines()
    assert all(line.startswith("ossa inspect: warning: ") for line in warned), err
    assert any("CMU units" in line for line in warned) == (entry["covers"]["unit"] == "cmu"), err
    assert str(reference["frames"]) in out
    status, out, _ = run_cli("evaluate", str(path), "--times", "0,0.5")
    assert status == 0
    nodes = json.loads(out)["nodes"]
    assert len(nodes) == reference["joints"] + reference["end_sites"]
    assert np.isfinite(np.asarray([n["world"] for n in nodes])).all()


@pytest.mark.parametrize("entry", BVH, ids=entry_id)
def test_converted_bvh_figure_is_human_sized(entry: dict[str, Any], corpus: Corpus, tmp_path: Path) -> None:
    out = tmp_path / f"{entry['id']}.glb"
    status, _, err = run_cli("convert", str(corpus.path(entry)), str(out))
    assert status == 0, err
    asset = quiet(load_gltf, out)
    heights = np.asarray(asset.rest_world())[:, 1, 3]
    assert 1.2 < np.ptp(heights) < 2.1, f"{np.ptp(heights):.3f} m tall"


@pytest.mark.parametrize("entry", BVH, ids=entry_id)
def test_programs_take_a_bvh_file_as_model(entry: dict[str, Any], corpus: Corpus) -> None:
    model = load_model(corpus.path(entry))
    assert 1.2 < model.height < 2.1


@pytest.mark.parametrize("entry", BVH, ids=entry_id)
def test_a_converters_calibration_frame_is_told(entry: dict[str, Any], corpus: Corpus) -> None:
    """The reader tells the manifest's ``calibration_frames`` and plays the take from the frame after.

    The manifest's values were read from the texts by hand: in the cgspeed takes' frame 0 all but
    a few rotation channels are exactly 0 (the rest round compensation angles: ±17 and ±5 in
    01_01, ±21, −16, 11 and ±8 in the 2010 MotionBuilder files; Daz's constant finger curls
    −10.3, −7.7, ...), which no captured frame of these files has.
    """
    path = corpus.path(entry)
    anim = quiet(load_bvh, path)
    assert anim.calibration_frames == entry["covers"]["calibration_frames"]
    assert anim.captured_clip.duration == pytest.approx(
        (anim.num_frames - 1 - anim.calibration_frames) * anim.frame_time, rel=1e-6
    )
