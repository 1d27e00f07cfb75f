"""Fuzzing the glTF loader: a mutated small valid document loads as a valid asset or raises an OssaError.

The documents are the bases of the malformed corpus (tests/data/make_malformed.py): the
hand-made ``skinned`` and ``scene`` documents (the latter with rigid parts, two skins, points,
lines and morph targets) and the Khronos ``rigged_simple`` and ``box_animated`` models.
Hypothesis mutates their JSON (delete a key or an array item, put a value of another JSON type,
push a number out of range, shuffle an index array, swap two indices, duplicate an array item) or
the bytes of their GLB form (overwrite a 32-bit word or a float, flip a byte, truncate; in the
header, the JSON chunk or the BIN chunk). Each mutated file
must either raise an :class:`~engine.errors.AssetError` naming the file and a location, or load
as an asset that the runtime can use: finite rest poses, key times and values, sample-able clips
with finite poses and model matrices, invertible inverse bind matrices, in-range indices and
weights that sum to 1.

Example counts come from the hypothesis profile (tests/conftest.py): :data:`FUZZ_EXAMPLES` per
test, 200 in the default ``dev`` and ``ci`` profiles. For a long run::

    HYPOTHESIS_PROFILE=long python -m pytest tests/io/test_fuzz_gltf.py   # 5000 examples per test

A failing example found this way is kept: one that must raise goes into ``fuzz_regressions`` in
tests/data/make_malformed.py (then regenerate the corpus), one that must load becomes an
``@example`` here (an empty default scene, which crashed ``local_to_model``).
"""

from __future__ import annotations

import copy
import json
import shutil
import struct
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.anim import Clip, Skeleton, model_from_pose, sample
from engine.errors import AssetError, OssaError, OssaWarning
from engine.io import GltfAsset, load_gltf
from tests.data import make_malformed
from tests.io.gltf_builder import glb_bytes

CORPUS_GLTF = Path(make_malformed.__file__).parent / "malformed" / "gltf"
BASES = ("skinned", "scene", "rigged_simple", "box_animated")
FUZZ_EXAMPLES = max(200, settings().max_examples)
FUZZ = settings(max_examples=FUZZ_EXAMPLES)

#: Values of every JSON type, put in place of whatever a mutation picks.
JSON_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    255,
    65536,
    2**31,
    2**64,
    0.5,
    -0.0,
    1e308,
    float("nan"),
    "",
    "0",
    "12",
    "VEC3",
    "LINEAR",
    "rotation",
    [],
    [0],
    [0, 1, 2],
    [[0]],
    {},
    {"a": 1},
]
#: float32 values written over GLB bytes.
FLOATS = [float("nan"), float("inf"), float("-inf"), 0.0, -1.0, 1e-45, 3.4e38, -3.4e38, 1e10, 0.5]
#: 32-bit words written over GLB bytes.
WORDS = [0, 1, 2, 3, 4, 0x7F, 0xFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x4E4F534A, 0x004E4942, 0x7FC00000]


def base_document(name: str) -> dict[str, Any]:
    return json.loads((CORPUS_GLTF / f"base-{name}.gltf").read_text())


def base_glb(name: str) -> bytes:
    doc = base_document(name)
    del doc["buffers"][0]["uri"]
    return glb_bytes(doc, (CORPUS_GLTF / f"{name}.bin").read_bytes())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the bases' .bin files, where each example is written."""
    folder = tmp_path_factory.mktemp("fuzz")
    for name in BASES:
        shutil.copy(CORPUS_GLTF / f"{name}.bin", folder / f"{name}.bin")
    return folder


# ---------------------------------------------------------------------------------------------
# mutations


def locations(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Path (keys and indices) of every value inside ``value``, depth first."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found.append((*path, key))
        found.extend(locations(item, (*path, key)))
    return found


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def out_of_range(value: Any) -> list[Any]:
    """Numbers near and far from ``value``, for the same place."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return [-1, 0, 2**32]
    if isinstance(value, int):
        return [value + 1, value - 1, -1, -value - 1, 2 * value + 1, 2**31, 2**32 + value, 2**53 + 1, 0]
    return [-value, value * 1e30, value + 1e300, 1e308, -1e308, 0.0, 5e-324, 3.5e38, float("inf"), value / 3.0]


@st.composite
def mutated_document(draw: st.DrawFn) -> tuple[str, dict[str, Any], list[str]]:
    """A base document with one to four mutations, and a description of each."""
    name = draw(st.sampled_from(BASES))
    doc = base_document(name)
    done = []
    for _ in range(draw(st.integers(1, 4))):
        places = locations(doc)
        path = places[draw(st.integers(0, len(places) - 1))]
        parent, key = at(doc, path[:-1]), path[-1]
        op = draw(st.sampled_from(["delete", "retype", "number", "shuffle", "swap", "duplicate"]))
        if op == "delete":
            del parent[key]
        elif op == "retype":
            parent[key] = copy.deepcopy(draw(st.sampled_from(JSON_VALUES)))
        elif op == "number":
            parent[key] = draw(st.sampled_from(out_of_range(parent[key])))
        elif op == "shuffle" and isinstance(parent[key], list) and len(parent[key]) > 1:
            parent[key] = draw(st.permutations(parent[key]))
        elif op == "swap":
            ints = [p for p in places if type(at(doc, p)) is int]
            if len(ints) < 2:
                continue
            other = ints[draw(st.integers(0, len(ints) - 1))]
            first, second = at(doc, path[:-1]), at(doc, other[:-1])
            first[key], second[other[-1]] = second[other[-1]], first[key]
        elif op == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
        else:
            continue
        done.append(f"{op} {'.'.join(map(str, path))}")
    return name, doc, done


@st.composite
def mutated_glb(draw: st.DrawFn) -> tuple[str, bytes, list[str]]:
    """A base as GLB with one to four byte-level mutations, each in the header, the JSON or the BIN chunk."""
    name = draw(st.sampled_from(BASES))
    data = bytearray(base_glb(name))
    json_length = struct.unpack_from("<I", data, 12)[0]
    regions = {"header": (0, 20), "json": (20, 20 + json_length), "bin": (28 + json_length, len(data))}
    done = []
    for _ in range(draw(st.integers(1, 4))):
        region = draw(st.sampled_from(["bin", "bin", "bin", "json", "header"]))  # mostly the data
        start, end = regions[region]
        op = draw(st.sampled_from(["float", "word", "byte", "float", "byte", "truncate"]))
        offset = start + draw(st.integers(0, (end - start) // 4 - 1)) * 4
        if offset + 4 > len(data):
            continue
        if op == "word":
            value = draw(st.sampled_from(WORDS))
            data[offset : offset + 4] = struct.pack("<I", value)
        elif op == "float":
            value = draw(st.sampled_from(FLOATS))
            data[offset : offset + 4] = struct.pack("<f", value)
        elif op == "byte":
            offset += draw(st.integers(0, 3))
            value = draw(st.integers(1, 255))
            data[offset] ^= value
        else:
            value = len(data) - offset
            del data[offset:]
        done.append(f"{op} {region} byte {offset}: {value}")
    return name, bytes(data), done


# ---------------------------------------------------------------------------------------------
# the contract


def load_or_refuse(path: Path) -> GltfAsset | None:
    """The asset, or ``None`` after checking that the refusal is a located AssetError."""
    error: OssaError | None = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OssaWarning)
            return load_gltf(path)
    except OssaError as exc:
        error = exc
    assert isinstance(error, AssetError), f"{type(error).__name__}: {error}"
    assert error.file == str(path)
    assert error.where, f"no location in {error}"
    return None


def check_finite(name: str, array: Any) -> None:
    assert np.isfinite(np.asarray(array, dtype=np.float64)).all(), f"{name} is not finite"


def check_clip(clip: Clip, skeleton: Skeleton) -> None:
    for channel in clip.channels:
        check_finite("key times", channel.times)
        assert channel.times[0] >= 0.0
        assert np.all(np.diff(channel.times) >= 0.0)
        check_finite("key values", channel.values)
        if channel.path == "rotation" and channel.interpolation != "CUBICSPLINE":
            np.testing.assert_allclose(np.linalg.norm(channel.values, axis=-1), 1.0, atol=1e-9)
    times = np.array([0.0, 0.5, 1.0]) * clip.duration
    pose = sample(clip, skeleton.rest_pose, times)
    for part in (pose.translations, pose.rotations, pose.scales):
        check_finite(f"sampled pose of {clip.name!r}", part)
    check_finite(f"model matrices of {clip.name!r}", model_from_pose(skeleton, pose))


def check_asset(asset: GltfAsset) -> None:
    """Everything the runtime assumes of a loaded asset."""
    hierarchy = asset.hierarchy
    assert np.all(hierarchy.parents < np.arange(hierarchy.num_joints))
    check_finite("rest translations", hierarchy.rest_translations)
    check_finite("rest scales", hierarchy.rest_scales)
    np.testing.assert_allclose(np.linalg.norm(hierarchy.rest_rotations, axis=-1), 1.0, atol=1e-9)
    check_finite("rest world matrices", asset.rest_world())
    for clip in asset.clips:
        check_clip(clip, hierarchy)
    frame = asset.scene.sample(asset.scene.clips[asset.clips[0].name], 0.5) if asset.clips else asset.scene.rest_frame()
    check_finite("scene world matrices", frame.world)
    for skin in asset.skins:
        skeleton = skin.skeleton
        joints = sorted(skin.from_gltf_order.tolist())  # the file's joints, plus any non-joint node between them
        assert joints == np.nonzero(skin.is_joint)[0].tolist()
        assert len(set(joints)) == len(joints)
        check_finite("root transform", skin.root_transform)
        check_finite("inverse bind matrices", skeleton.inverse_bind_matrices)
        assert np.all(np.abs(np.linalg.det(skeleton.inverse_bind_matrices)) > 0)
        for clip in skin.clips:
            check_clip(clip, skeleton)
    for node in asset.mesh_nodes:
        for mesh in node.primitives:
            count = mesh.num_vertices
            check_finite("positions", mesh.positions)
            for name in ("normals", "uvs"):
                if getattr(mesh, name) is not None:
                    check_finite(name, getattr(mesh, name))
            if mesh.indices is not None:
                assert mesh.indices.max(initial=0) < count
            if mesh.morph_positions is not None:
                check_finite("morph displacements", mesh.morph_positions)
                assert mesh.num_targets == node.weights.size
            if mesh.skinned:
                assert node.skin is not None
                assert mesh.joints.max(initial=0) < asset.skins[node.skin].skeleton.num_joints
                check_finite("weights", mesh.weights)
                assert mesh.weights.min(initial=0.0) >= 0.0
                np.testing.assert_allclose(mesh.weights.sum(axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("name", BASES)
def test_the_unmutated_bases_pass_the_checks(name: str, workdir: Path) -> None:
    path = workdir / f"{name}.gltf"
    path.write_text(json.dumps(base_document(name)))
    asset = load_or_refuse(path)
    assert asset is not None
    check_asset(asset)
    glb = workdir / f"{name}.glb"
    glb.write_bytes(base_glb(name))
    asset = load_or_refuse(glb)
    assert asset is not None
    check_asset(asset)


def without(name: str, *paths: tuple[Any, ...]) -> tuple[str, dict[str, Any], list[str]]:
    """Base ``name`` with the values at ``paths`` deleted, as a fuzz example."""
    doc = base_document(name)
    for path in paths:
        del at(doc, path[:-1])[path[-1]]
    return name, doc, [f"delete {'.'.join(map(str, path))}" for path in paths]


@FUZZ
@given(example=mutated_document())
@example(example=without("box_animated", ("nodes", 1, "children", 0), ("scene",), ("scenes", 0, "nodes")))
@example(example=without("scene", ("nodes", 0, "children", 1)))  # a morphed node left in as a skin's joint only
def test_mutated_json_loads_a_valid_asset_or_raises_an_asset_error(
    example: tuple[str, dict[str, Any], list[str]], workdir: Path
) -> None:
    name, doc, _ = example
    path = workdir / f"{name}.gltf"
    path.write_text(json.dumps(doc))
    asset = load_or_refuse(path)
    if asset is not None:
        check_asset(asset)


@FUZZ
@given(example=mutated_glb())
def test_mutated_glb_bytes_load_a_valid_asset_or_raise_an_asset_error(
    example: tuple[str, bytes, list[str]], workdir: Path
) -> None:
    name, data, _ = example
    path = workdir / f"{name}.glb"
    path.write_bytes(data)
    asset = load_or_refuse(path)
    if asset is not None:
        check_asset(asset)
