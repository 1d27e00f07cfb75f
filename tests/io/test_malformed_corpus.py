"""The malformed-asset corpus, tests/data/malformed (written by ``python -m tests.data.make_malformed``).

Every case must raise an :class:`~engine.errors.AssetError` (an ``OssaError``) whose message names
the file, the location (JSON path, GLB chunk or BVH line) and the problem the generator stated for
it; no other exception type may escape; each case must finish within :data:`CPU_SECONDS` of CPU
time and allocate at most :data:`PEAK_BYTES` (``tracemalloc`` peak, numpy buffers included),
which also shows that the gigabyte claims are refused before anything that size is allocated.
"""

from __future__ import annotations

import base64
import contextlib
import json
import pathlib
import re
import signal
import struct
import time
import tracemalloc
import warnings
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import PIL.Image
import pytest

from engine.anim import sample
from engine.errors import AssetError, OssaError, OssaWarning
from engine.io import load_gltf
from engine.io.bvh import load_bvh
from tests.data import make_malformed

CORPUS = Path(make_malformed.__file__).parent / "malformed"
MANIFEST: dict[str, Any] = json.loads((CORPUS / "manifest.json").read_text())
CASES: list[dict[str, str]] = MANIFEST["cases"]

#: Upper bounds per case: CPU seconds and traced bytes (the largest case needs about 1.2 MB).
CPU_SECONDS = 1.0
PEAK_BYTES = 16 * 2**20
#: A case still running after this many wall-clock seconds has hung: fail instead of waiting.
HANG_SECONDS = 20

#: The families the issue asks for, with at least this many cases each.
REQUIRED_FAMILIES = (
    "json-syntax",
    "json-types",
    "glb",
    "buffers",
    "uris",
    "huge-claims",
    "views-accessors",
    "sparse",
    "index-range",
    "hierarchy",
    "skins",
    "animations",
    "influences",
    "extensions",
    "nodes-meshes",
    "bvh",
)
MIN_CASES = 8


class Hung(Exception):
    """Raised by the alarm when a case runs past :data:`HANG_SECONDS`."""


@contextlib.contextmanager
def hang_guard(seconds: int) -> Iterator[None]:
    def alarm(signum: int, frame: Any) -> None:
        raise Hung(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def load(case: dict[str, str], path: Path) -> object:
    return load_bvh(path) if case["loader"] == "bvh" else load_gltf(path)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['family']}/{c['name']}" for c in CASES])
def test_case_raises_an_asset_error_naming_file_location_and_problem(case: dict[str, str]) -> None:
    path = CORPUS / case["file"]
    escaped: BaseException | None = None
    error: OssaError | None = None
    tracemalloc.start()
    started = time.process_time()
    try:
        with hang_guard(HANG_SECONDS), warnings.catch_warnings():
            warnings.simplefilter("ignore", OssaWarning)  # a case may warn before it fails
            load(case, path)
    except OssaError as exc:
        error = exc
    except Exception as exc:  # anything else is a failure of this test, reported below
        escaped = exc
    finally:
        cpu = time.process_time() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert escaped is None, f"{type(escaped).__name__} escaped: {escaped}"
    assert error is not None, "the malformed file loaded without an error"
    assert isinstance(error, AssetError), type(error)
    assert error.file == str(path)
    assert error.where is not None, error
    assert re.fullmatch(case["where"], error.where), f"location {error.where!r} is not {case['where']!r}"
    assert re.search(case["problem"], error.problem), f"problem {error.problem!r} lacks {case['problem']!r}"
    assert str(error) == f"{path}: {error.where}: {error.problem}"
    assert cpu < CPU_SECONDS, f"{cpu:.2f} s of CPU"
    assert peak < PEAK_BYTES, f"{peak / 2**20:.1f} MiB traced"


# ---------------------------------------------------------------------------------------------
# the corpus itself


def test_the_bases_load_without_errors_or_warnings() -> None:
    """Each case's error comes from its edit: the documents they are edited from are clean."""
    for base in MANIFEST["bases"]:
        asset = load_gltf(CORPUS / base)
        assert asset.warnings == (), base
        assert asset.clips, base


def test_every_family_has_many_cases_and_every_file_is_listed() -> None:
    counts = Counter(case["family"] for case in CASES)
    assert {family: counts[family] for family in REQUIRED_FAMILIES if counts[family] < MIN_CASES} == {}
    listed = {case["file"] for case in CASES} | set(MANIFEST["bases"]) | {"manifest.json", "README.md"}
    present = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    assert {p for p in present - listed if not p.endswith(".bin")} == set()
    assert listed - present == set()
    assert sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file()) < 4 * 2**20


@pytest.mark.assets
def test_the_committed_corpus_is_what_the_generator_writes(shared_assets: Path) -> None:
    """No hand-edited blobs: regenerating (from the shared Khronos files) reproduces every committed byte."""
    corpus = make_malformed.build()
    present = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*") if p.is_file()}
    assert present == set(corpus.files)
    changed = [name for name, data in corpus.files.items() if (CORPUS / name).read_bytes() != data]
    assert changed == []


def test_refused_uris_are_never_opened() -> None:
    """A URI leaving the model's folder is refused before the filesystem is touched."""
    touched: list[Path] = []
    cases = [c for c in CASES if c["family"] == "uris"]
    assert len(cases) >= 10
    with pytest.MonkeyPatch.context() as patch:
        for method in ("stat", "read_bytes"):
            original = getattr(pathlib.Path, method)

            def spy(self: Path, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                touched.append(Path(self))
                return _original(self, *args, **kwargs)

            patch.setattr(pathlib.Path, method, spy)
        for case in cases:
            with pytest.raises(AssetError, match=r"must be a relative path inside|NUL byte"):
                load_gltf(CORPUS / case["file"])
    folder = (CORPUS / "gltf").resolve()
    assert touched
    assert [p for p in touched if folder not in p.resolve().parents] == []


# ---------------------------------------------------------------------------------------------
# suspicious but readable: a warning, and the data repaired


def edited(tmp_path: Path, edit: make_malformed.Edit) -> Path:
    """The corpus base ``skinned`` with ``edit`` applied, written next to a copy of its .bin."""
    doc = make_malformed.Doc(make_malformed.skinned_base())
    edit(doc)
    (tmp_path / "skinned.bin").write_bytes(doc.base.blob)
    path = tmp_path / "skinned.gltf"
    path.write_bytes(doc.text())
    return path


@pytest.mark.parametrize(
    "uri", ["../../etc/passwd", "/etc/passwd", "file:///etc/passwd", "D:\\projects\\models\\OBJ\\wood.jpg"]
)
def test_a_texture_outside_the_folder_is_never_read_and_the_model_loads_without_it(
    tmp_path: Path, uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Converters write absolute texture paths (assimp's spider.fbx → glTF): warn, skip, draw the rest."""

    def textured(d: make_malformed.Doc) -> None:
        d.set("images", [{"uri": uri}])
        d.set("textures", [{"source": 0}])
        d.set("materials", [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}])
        d.set("meshes[0].primitives[0].material", 0)

    path = edited(tmp_path, textured)
    opened: list[Path] = []
    original = pathlib.Path.read_bytes

    def spy(self: Path) -> bytes:
        opened.append(self)
        return original(self)

    monkeypatch.setattr(pathlib.Path, "read_bytes", spy)
    refused = r"images\[0\]\.uri: URI .* must be a relative path inside .*; texture skipped"
    with pytest.warns(OssaWarning, match=refused):
        asset = load_gltf(path)
    assert [p.name for p in opened] == ["skinned.gltf", "skinned.bin"]
    assert asset.mesh_nodes[0].primitives[0].positions.shape[0] > 0


def test_weights_summing_to_0_9_are_normalised_with_a_warning(tmp_path: Path) -> None:
    weights = [[0.45, 0.45, 0.0, 0.0], [0.25, 0.25, 0.0, 0.0], [0.9, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0]]
    path = edited(
        tmp_path,
        lambda d: d.set("meshes[0].primitives[0].attributes.WEIGHTS_0", d.accessor(weights, 5126, "VEC4")),
    )
    with pytest.warns(OssaWarning, match=r"WEIGHTS_0: 2 of 4 vertices have weights not summing to 1 .*sum 0\.9\)"):
        asset = load_gltf(path)
    normalised = asset.mesh_nodes[0].primitives[0].weights
    np.testing.assert_allclose(normalised.sum(axis=1), 1.0)
    np.testing.assert_allclose(normalised[0, :2], [0.5, 0.5])


def test_unnormalised_rotation_keys_are_normalised_with_a_warning(tmp_path: Path) -> None:
    keys = np.array([make_malformed.quat_z(0.0), make_malformed.quat_z(1.0), make_malformed.quat_z(2.0)])
    keys[0] *= 1.1
    path = edited(tmp_path, lambda d: d.set("animations[0].samplers[0].output", d.accessor(keys, 5126, "VEC4")))
    with pytest.warns(OssaWarning, match=r"samplers\[0\].output: quaternion 0 has norm 1.1, not 1; normalised"):
        asset = load_gltf(path)
    np.testing.assert_allclose(np.linalg.norm(asset.clips[0].channels[0].values, axis=-1), 1.0)


def test_repeated_key_times_warn_and_sample_as_a_jump(tmp_path: Path) -> None:
    path = edited(
        tmp_path,
        lambda d: d.set("animations[0].samplers[1].input", d.accessor([0.0, 1.0, 1.0], 5126, "SCALAR")),
    )
    with pytest.warns(OssaWarning, match=r"samplers\[1\].input: key times should be strictly increasing, got "):
        asset = load_gltf(path)
    clip = asset.clips[0]
    hip = asset.hierarchy.names.index("hip")
    before, at = sample(clip, asset.hierarchy.rest_pose, [0.999, 1.0]).translations[:, hip]
    np.testing.assert_allclose(before, [0.0, 0.5, 0.0])  # STEP: the first key holds until t = 1
    np.testing.assert_allclose(at, [1.0, 1.5, 0.0])  # at t = 1 the last of the equal keys wins


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width × height`` grey pixels, followed by a few bytes of data."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(64))) + chunk(b"IEND", b"")
    )


def test_a_texture_claiming_81_million_pixels_is_skipped_before_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 300-byte PNG must not make the loader allocate 9000 × 9000 × 4 bytes (Pillow itself warns only past 89 M)."""
    uri = "data:image/png;base64," + base64.b64encode(png_header_only(9000, 9000)).decode()

    def textured(d: make_malformed.Doc) -> None:
        d.set("images", [{"uri": uri}])
        d.set("textures", [{"source": 0}])
        d.set("materials", [{"pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}])
        d.set("meshes[0].primitives[0].material", 0)

    def never(self: Any, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("the image was decoded")

    monkeypatch.setattr(PIL.Image.Image, "load", never)
    with pytest.warns(
        OssaWarning, match=r"images\[0\]: .*9000×9000 pixels is more than the 67108864 .*texture skipped"
    ):
        asset = load_gltf(edited(tmp_path, textured))
    assert asset.mesh_nodes[0].primitives[0].texture is None
