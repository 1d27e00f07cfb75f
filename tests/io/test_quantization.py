"""KHR_mesh_quantization: every component type, normalized or not, of every accessor kind it allows.

One small scene is written twice, with float accessors and with one kind of accessor quantized
the way gltfpack and glTF-Transform write it: positions and morph displacements as integers
whose scale and offset go into the node's transform, texture coordinates whose scale and offset
go into ``KHR_texture_transform``, unit normals as normalized integers, weights and animation
keys as normalized integers. What Ossa reads of the quantized file must agree with the float
file to the quantization step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from engine.errors import AssetError
from engine.io import load_gltf
from engine.io.commands import evaluate
from tests.helpers import assert_quat_allclose
from tests.io.gltf_builder import DocBuilder, quat_z

FLOAT = (5126, False)
#: Largest magnitude of each integer component type.
LIMITS = {5120: 127, 5121: 255, 5122: 32767, 5123: 65535}
SIGNED = {5120: True, 5121: False, 5122: True, 5123: False}
#: The morph-displacement type of each position type (KHR_mesh_quantization: signed, same size).
LIFT_TYPES = {5120: 5120, 5121: 5120, 5122: 5122, 5123: 5122, 5126: 5126}


@dataclass(frozen=True)
class Storage:
    """(componentType, normalized) of each accessor kind of the test scene."""

    position: tuple[int, bool] = FLOAT
    normal: tuple[int, bool] = FLOAT
    texcoord: tuple[int, bool] = FLOAT
    weights: tuple[int, bool] = FLOAT
    joints: int = 5121
    rotation_keys: tuple[int, bool] = FLOAT
    weight_keys: tuple[int, bool] = FLOAT


RNG = np.random.default_rng(11)
POSITIONS = RNG.uniform(-0.4, 0.6, size=(12, 3)) + np.array([0.0, 1.0, 0.0])
NORMALS = RNG.normal(size=(12, 3))
NORMALS /= np.linalg.norm(NORMALS, axis=1, keepdims=True)
UVS = RNG.uniform(0.1, 0.9, size=(12, 2))
LIFT = RNG.uniform(-0.05, 0.05, size=(12, 3))
WEIGHTS = RNG.dirichlet([1.0, 1.0], size=12)
ROTATIONS = np.array([quat_z(a) for a in (0.0, 0.9, -0.4)])
MORPH_KEYS = np.array([0.0, 1.0, 0.25])


def steps(component_type: int, normalized: bool, low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Offset and scale mapping the integers of ``component_type`` onto [low, high] (decoded values if normalized)."""
    if component_type == 5126:
        return np.zeros_like(low), np.ones_like(low)
    span = LIMITS[component_type] * (2 if SIGNED[component_type] else 1)
    scale = np.full_like(low, float(np.max(high - low)) / span)
    offset = (low + high) / 2 if SIGNED[component_type] else low
    return offset, scale * (LIMITS[component_type] if normalized else 1.0)


def stored(
    values: np.ndarray,
    component_type: int,
    normalized: bool,
    offset: float | np.ndarray = 0.0,
    scale: float | np.ndarray = 1.0,
) -> np.ndarray:
    """``values`` as stored: ``(values - offset) / scale`` rounded to integers (× the limit if normalized)."""
    if component_type == 5126:
        return np.asarray(values, dtype=float)
    unit = (np.asarray(values) - offset) / scale
    return np.round(unit * (LIMITS[component_type] if normalized else 1.0)).astype(int)


def scene(s: Storage) -> DocBuilder:
    """A rigid part (positions, normals, uvs, a morph target; rotation and weights keys) and a 2-joint skin."""
    b = DocBuilder()
    kinds = {s.position, s.normal, s.texcoord, s.weights, s.rotation_keys, s.weight_keys}
    if kinds != {FLOAT}:
        b.doc["extensionsUsed"] = b.doc["extensionsRequired"] = ["KHR_mesh_quantization", "KHR_texture_transform"]
    low, high = POSITIONS.min(0) - 0.1, POSITIONS.max(0) + 0.1
    offset, scale = steps(*s.position, low, high)
    b.add("nodes", {"name": "part", "mesh": 0, "translation": offset.tolist(), "scale": scale.tolist()})
    b.add("nodes", {"name": "hip", "translation": [0.0, 1.0, 0.0], "children": [2]})
    b.add("nodes", {"name": "knee", "translation": [0.0, 0.5, 0.0]})
    b.add("nodes", {"name": "legs", "mesh": 1, "skin": 0})
    b.doc["scenes"] = [{"nodes": [0, 1, 3]}]
    q = stored(POSITIONS, *s.position, offset, scale)
    decoded = q / (LIMITS[s.position[0]] if s.position[1] else 1.0)
    bounds = {"min": decoded.min(0).tolist(), "max": decoded.max(0).tolist()}
    position = b.accessor(q, s.position[0], "VEC3", **normalized(s.position[1]), **bounds)
    # morph displacements: the signed type of the same size, in the same (dequantizing) node scale
    lift_type = LIFT_TYPES[s.position[0]]
    lift = b.accessor(
        stored(LIFT, lift_type, s.position[1], 0.0, scale), lift_type, "VEC3", **normalized(s.position[1])
    )
    normal = b.accessor(stored(NORMALS, *s.normal), s.normal[0], "VEC3", **normalized(s.normal[1]))
    uv_offset, uv_scale = steps(*s.texcoord, np.zeros(2), np.ones(2))
    uv = b.accessor(stored(UVS, *s.texcoord, uv_offset, uv_scale), s.texcoord[0], "VEC2", **normalized(s.texcoord[1]))
    transform = {"offset": uv_offset.tolist(), "scale": uv_scale.tolist()}
    b.add("textures", {})
    b.add(
        "materials",
        {
            "pbrMetallicRoughness": {
                "baseColorTexture": {"index": 0, "extensions": {"KHR_texture_transform": transform}}
            }
        },
    )
    attributes = {"POSITION": position, "NORMAL": normal, "TEXCOORD_0": uv}
    b.add(
        "meshes",
        {"primitives": [{"attributes": attributes, "targets": [{"POSITION": lift}], "material": 0, "mode": 0}]},
    )
    joints = b.accessor(
        np.stack([np.zeros(12), np.ones(12), np.zeros(12), np.zeros(12)], 1).astype(int), s.joints, "VEC4"
    )
    weights4 = np.concatenate([WEIGHTS, np.zeros((12, 2))], axis=1)
    weights = b.accessor(stored(weights4, *s.weights), s.weights[0], "VEC4", **normalized(s.weights[1]))
    skin_positions = b.accessor(POSITIONS, 5126, "VEC3", min=POSITIONS.min(0).tolist(), max=POSITIONS.max(0).tolist())
    b.add(
        "meshes",
        {
            "primitives": [
                {"attributes": {"POSITION": skin_positions, "JOINTS_0": joints, "WEIGHTS_0": weights}, "mode": 0}
            ]
        },
    )
    binds = [np.eye(4), np.eye(4)]
    binds[0][1, 3], binds[1][1, 3] = -1.0, -1.5
    b.add("skins", {"joints": [1, 2], "inverseBindMatrices": b.accessor(binds, 5126, "MAT4")})
    times = b.accessor([0.0, 1.0, 2.0], 5126, "SCALAR", min=[0.0], max=[2.0])
    rotation = b.accessor(
        stored(ROTATIONS, *s.rotation_keys), s.rotation_keys[0], "VEC4", **normalized(s.rotation_keys[1])
    )
    weight_keys = b.accessor(
        stored(MORPH_KEYS, *s.weight_keys), s.weight_keys[0], "SCALAR", **normalized(s.weight_keys[1])
    )
    b.add(
        "animations",
        {
            "samplers": [{"input": times, "output": rotation}, {"input": times, "output": weight_keys}],
            "channels": [
                {"sampler": 0, "target": {"node": 2, "path": "rotation"}},
                {"sampler": 1, "target": {"node": 0, "path": "weights"}},
            ],
        },
    )
    return b


def normalized(flag: bool) -> dict[str, bool]:
    """The accessor's ``normalized`` property, present only when true."""
    return {"normalized": True} if flag else {}


TIMES = np.array([0.0, 0.5, 1.3, 2.0])


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict:
    asset = load_gltf(scene(Storage()).write(tmp_path_factory.mktemp("q") / "float.gltf"))
    return evaluate(asset, asset.clips[0], TIMES)


def positions_of(document: dict, node: int) -> np.ndarray:
    return np.array(next(m for m in document["meshes"] if m["node"] == node)["skinnedPositions"])


INTEGER_TYPES = [(t, n) for t in (5120, 5121, 5122, 5123) for n in (False, True)]


@pytest.mark.parametrize("storage", INTEGER_TYPES, ids=lambda s: f"{s[0]}{'n' if s[1] else ''}")
def test_positions_and_morph_targets_to_the_step(storage: tuple[int, bool], reference: dict, tmp_path: Path) -> None:
    asset = load_gltf(scene(Storage(position=storage)).write(tmp_path / "q.gltf"))
    component, norm = storage
    step = float(np.max(POSITIONS.max(0) - POSITIONS.min(0)) + 0.2) / (
        LIMITS[component] * (2 if SIGNED[component] else 1)
    )
    lift_step = step * (LIMITS[component] / LIMITS[LIFT_TYPES[component]] if norm else 1.0)
    ours = positions_of(evaluate(asset, asset.clips[0], TIMES), 0)
    # half a step per coordinate for the position, half a displacement step (times a weight ≤ 1) for the morph
    assert np.abs(ours - positions_of(reference, 0)).max() <= (step + lift_step) / 2 + 1e-9
    assert np.abs(ours - positions_of(reference, 0)).max() > 0.0  # quantized, not the float file


@pytest.mark.parametrize("storage", [(5120, True), (5122, True)], ids=["byte", "short"])
def test_normals_to_the_step(storage: tuple[int, bool], tmp_path: Path) -> None:
    normals = load_gltf(scene(Storage(normal=storage)).write(tmp_path / "q.gltf")).mesh_nodes[0].primitives[0].normals
    assert np.abs(normals - NORMALS).max() <= 0.5 / LIMITS[storage[0]] + 1e-12


@pytest.mark.parametrize("storage", INTEGER_TYPES, ids=lambda s: f"{s[0]}{'n' if s[1] else ''}")
def test_texcoords_dequantized_by_the_texture_transform(storage: tuple[int, bool], tmp_path: Path) -> None:
    uvs = load_gltf(scene(Storage(texcoord=storage)).write(tmp_path / "q.gltf")).mesh_nodes[0].primitives[0].uvs
    step = 1.0 / (LIMITS[storage[0]] * (2 if SIGNED[storage[0]] else 1))
    assert np.abs(uvs - UVS).max() <= step / 2 + 1e-12


@pytest.mark.parametrize("storage", [(5121, True), (5123, True)], ids=["ubyte", "ushort"])
@pytest.mark.parametrize("joints", [5121, 5123])
def test_joints_and_weights_skin_to_the_step(
    storage: tuple[int, bool], joints: int, reference: dict, tmp_path: Path
) -> None:
    asset = load_gltf(scene(Storage(weights=storage, joints=joints)).write(tmp_path / "q.gltf"))
    ours = positions_of(evaluate(asset, asset.clips[0], TIMES), 3)
    # a weight off by half a step moves a vertex by at most that times the distance between its two joints' images
    spread = 2.0 * np.abs(positions_of(reference, 3)).max()
    assert np.abs(ours - positions_of(reference, 3)).max() <= 0.5 / LIMITS[storage[0]] * spread


NORMALIZED_TYPES = [(t, True) for t in (5120, 5121, 5122, 5123)]


@pytest.mark.parametrize("storage", [(5120, True), (5122, True)], ids=["byte", "short"])
def test_rotation_keys_to_the_step(storage: tuple[int, bool], tmp_path: Path) -> None:
    """Rotation keys may be signed normalized integers (the unsigned ones cannot hold a quaternion's signs)."""
    clip = load_gltf(scene(Storage(rotation_keys=storage)).write(tmp_path / "q.gltf")).clips[0]
    keys = next(c for c in clip.channels if c.path == "rotation").values
    assert_quat_allclose(keys, ROTATIONS, atol=1.0 / LIMITS[storage[0]])


@pytest.mark.parametrize("storage", NORMALIZED_TYPES, ids=["byte", "ubyte", "short", "ushort"])
def test_morph_weight_keys_to_the_step(storage: tuple[int, bool], tmp_path: Path) -> None:
    scene_clip = next(
        iter(load_gltf(scene(Storage(weight_keys=storage)).write(tmp_path / "q.gltf")).scene.clips.values())
    )
    np.testing.assert_allclose(scene_clip.weights[0].values[:, 0], MORPH_KEYS, atol=0.5 / LIMITS[storage[0]] + 1e-12)


@pytest.mark.parametrize("kind", ["rotation_keys", "weight_keys"])
def test_integer_keys_that_are_not_normalized_are_refused(kind: str, tmp_path: Path) -> None:
    path = scene(replace(Storage(), **{kind: (5122, False)})).write(tmp_path / "q.gltf")
    path_name = "rotation" if kind == "rotation_keys" else "weights"
    with pytest.raises(
        AssetError, match=rf"{path_name} values must be FLOAT or normalized integers, got componentType 5122"
    ):
        load_gltf(path)
