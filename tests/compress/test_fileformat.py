"""The library file: round trips byte for byte, maps without copying, and refuses every malformed file with a reason."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.anim import sample
from engine.compress import ClipLibrary, LibraryFormatError, is_library, load_library, save_library
from engine.compress.fileformat import HEADER, library_bytes, library_from_buffer
from engine.compress.library import COLUMN
from tests.compress.conftest import Walk


@pytest.fixture(scope="module")
def library(walking: Walk, looping: Walk) -> ClipLibrary:
    return ClipLibrary([(walking.skeleton, walking.compressed), (looping.skeleton, looping.compressed)])


@pytest.fixture(scope="module")
def blob(library: ClipLibrary) -> bytes:
    return library_bytes(library)


def test_a_library_round_trips_byte_for_byte(library: ClipLibrary, blob: bytes, tmp_path: Path) -> None:
    path = save_library(library, tmp_path / "walks.ossalib")
    assert path.read_bytes() == blob
    loaded = load_library(path)
    assert loaded.names == library.names
    assert library_bytes(loaded) == blob
    assert isinstance(loaded.clips[0].words.base, np.memmap) or isinstance(loaded.packed["words"].base, np.memmap)
    assert not loaded.clips[0].words.flags.writeable
    times = np.linspace(-0.1, 1.1, 40)
    for before, after in zip(library.clips, loaded.clips, strict=True):
        a = sample(before, library.skeletons[0].rest_pose, times)
        b = sample(after, loaded.skeletons[0].rest_pose, times)
        for x, y in zip(a.arrays(), b.arrays(), strict=True):
            np.testing.assert_array_equal(x, y)
        assert after.info == before.info
    assert is_library(path)
    assert not is_library(tmp_path / "missing.glb")


def test_a_long_info_document_still_says_where_the_arrays_are(walking: Walk) -> None:
    # the array offsets lengthen the document, which moves the offsets: every padding length, also
    # those that take more than three passes to settle (2921, 2985, ... here: a build's stored root
    # track did), loads back
    for padding in range(4096):
        clip = dataclasses.replace(walking.compressed, info={**walking.compressed.info, "note": "x" * padding})
        loaded = library_from_buffer(library_bytes(ClipLibrary([(walking.skeleton, clip)])))
        assert loaded.clips[0].info["note"] == "x" * padding
        np.testing.assert_array_equal(loaded.skeletons[0].parents, walking.skeleton.parents)


def test_the_file_is_deterministic_and_aligned(library: ClipLibrary, blob: bytes) -> None:
    assert library_bytes(library) == blob
    document = _document(blob)
    assert all(spec["offset"] % 64 == 0 for spec in document["arrays"].values())
    assert blob[:8] == b"OSSACLIB"
    assert len(blob) % 64 == 0


def test_verify_false_skips_only_the_checksum(blob: bytes) -> None:
    broken = bytearray(blob)
    broken[-70] ^= 0xFF  # inside the last array's bytes: the checksum catches it...
    with pytest.raises(LibraryFormatError, match="checksum mismatch"):
        library_from_buffer(bytes(broken))
    library_from_buffer(bytes(broken), verify=False)  # ...and the structure is still valid


# --- a corpus of malformed files: each refused with a typed error naming the problem ----------------


def _header(blob: bytes) -> list[Any]:
    return list(HEADER.unpack(blob[: HEADER.size]))


def _rehash(blob: bytes | bytearray) -> bytes:
    data = bytearray(blob)
    data[48:80] = hashlib.sha256(bytes(data[:48]) + bytes(data[80:])).digest()
    return bytes(data)


def _with_header(blob: bytes, index: int, value: Any) -> bytes:
    fields = _header(blob)
    fields[index] = value
    return _rehash(HEADER.pack(*fields) + blob[HEADER.size :])


def _document(blob: bytes) -> dict[str, Any]:
    fields = _header(blob)
    return json.loads(blob[fields[4] : fields[4] + fields[5]])


def _with_document(change: Callable[[dict[str, Any]], Any]) -> Callable[[bytes], bytes]:
    def mutate(blob: bytes) -> bytes:
        document = _document(blob)
        change(document)
        text = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        fields = _header(blob)
        first = min(spec["offset"] for spec in _document(blob)["arrays"].values())
        assert HEADER.size + len(text) <= first, "the changed document must fit before the first array"
        data = bytearray(blob)
        data[HEADER.size : first] = text.ljust(first - HEADER.size, b" ")
        fields[5] = len(text)
        data[: HEADER.size] = HEADER.pack(*fields)
        return _rehash(data)

    return mutate


def _with_text(text: bytes) -> Callable[[bytes], bytes]:
    def mutate(blob: bytes) -> bytes:
        fields = _header(blob)
        data = bytearray(blob)
        data[fields[4] : fields[4] + fields[5]] = text.ljust(fields[5])
        return _rehash(data)

    return mutate


def _with_array(name: str, change: Callable[[np.ndarray], None]) -> Callable[[bytes], bytes]:
    """Edit array ``name`` in place (same size), then fix the checksum: only the structure check can catch it."""

    def mutate(blob: bytes) -> bytes:
        spec = _document(blob)["arrays"][name]
        data = bytearray(blob)
        array = (
            np.frombuffer(data, dtype=np.dtype(spec["dtype"]), count=int(np.prod(spec["shape"])), offset=spec["offset"])
            .reshape(spec["shape"])
            .copy()
        )
        change(array)
        data[spec["offset"] : spec["offset"] + array.nbytes] = array.tobytes()
        return _rehash(data)

    return mutate


def _cell(name: str, index: Any, value: Any) -> Callable[[bytes], bytes]:
    def change(array: np.ndarray) -> None:
        array[index] = value

    return _with_array(name, change)


def _table(field: str, value: int, clip: int = 0) -> Callable[[bytes], bytes]:
    return _cell("clip_table", (clip, COLUMN[field]), value)


def _flip_bit(offset: int) -> Callable[[bytes], bytes]:
    def mutate(blob: bytes) -> bytes:
        data = bytearray(blob)
        data[offset] ^= 0x10
        return bytes(data)

    return mutate


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        node = document
        for key in path[:-1]:
            node = node[key]
        if value is _DELETE:
            del node[path[-1]]
        else:
            node[path[-1]] = value

    return change


_DELETE = object()


def _same_width(value: int, change: int) -> int:
    """``value`` moved by ``change`` the way that keeps its number of digits (the document keeps its length)."""
    moved = value + change
    return moved if len(str(moved)) == len(str(value)) else value - change


#: (joint row, path) of an animated track of the first clip (its third joint's rotation).
_ANIMATED_CELL = (2, 1)


def _first_animated(kinds: np.ndarray) -> np.ndarray:
    """A one-element view of the first animated track's kind."""
    row, path = np.argwhere(kinds == 2)[0]
    return kinds[row, path : path + 1]


MALFORMED: list[tuple[str, Callable[[bytes], bytes], str]] = [
    ("empty", lambda b: b"", "truncated: 0 bytes, not even a header"),
    ("a few bytes", lambda b: b[:10], "truncated: 10 bytes, not even a header"),
    ("another format", lambda b: b"glTF" + b[4:], "not an Ossa clip library"),
    ("version 2", lambda b: _with_header(b, 1, 2), "format version 2; this Ossa reads version 1"),
    ("version 0", lambda b: _with_header(b, 1, 0), "format version 0; this Ossa reads version 1"),
    ("header size", lambda b: _with_header(b, 2, 64), "header size 64, expected 96"),
    ("one byte short", lambda b: b[:-1], r"truncated: the file is \d+ bytes, its header says \d+"),
    ("half a file", lambda b: b[: len(b) // 2], "truncated: the file is"),
    ("trailing bytes", lambda b: b + b"\0", "has trailing bytes"),
    ("a flipped bit in the samples", lambda b: _flip_bit(len(b) - 100)(b), "checksum mismatch: the file is corrupted"),
    ("a flipped bit in the document", _flip_bit(HEADER.size + 5), "checksum mismatch"),
    ("a flipped bit in the checksum", _flip_bit(50), "checksum mismatch"),
    (
        "the document outside the file",
        lambda b: _with_header(b, 5, 10**9),
        "the JSON document .* lies outside the file",
    ),
    ("the document moved", lambda b: _with_header(b, 4, 128), "the JSON document .* lies outside the file"),
    ("a document that is not JSON", _with_text(b"{not json"), "the JSON document does not parse"),
    ("a document that is a list", _with_text(b"[]"), "the document must be an object with lists 'skeletons', 'clips'"),
    ("no clip list", _with_document(_set(["clips"], _DELETE)), "the document must be an object"),
    (
        "an array missing",
        _with_document(_set(["arrays", "words"], _DELETE)),
        r"arrays.words: missing, or not of dtype <u8",
    ),
    (
        "an array of another dtype",
        _with_document(_set(["arrays", "kinds", "dtype"], "<i4")),
        "arrays.kinds: missing, or not of dtype",
    ),
    (
        "an array of another shape",
        _with_document(_set(["arrays", "ranges", "shape"], [10, 5])),
        r"arrays.ranges: shape must be \[n, 6\]",
    ),
    (
        "a misaligned array",
        _with_document(lambda d: d["arrays"]["words"].update(offset=_same_width(d["arrays"]["words"]["offset"], 8))),
        "arrays.words: .* do not lie aligned inside the file",
    ),
    (
        "an array past the end",
        lambda b: _with_document(lambda d: d["arrays"]["words"].update(offset=-(-len(b) // 64) * 64))(b),
        "arrays.words: .* do not lie aligned inside the file",
    ),
    (
        "one clip too few listed",
        _with_document(lambda d: d["clips"].pop()),
        "1 clips listed but the clip table has 2 rows",
    ),
    (
        "a clip without a name",
        _with_document(_set(["clips", 0, "name"], 3)),
        r"clips\[0\]: a clip entry must be an object with a string 'name'",
    ),
    (
        "two clips of one name",
        _with_document(_set(["clips", 1, "name"], "walk")),
        r"clips\[1\]: two clips are named 'walk'",
    ),
    (
        "a clip on no skeleton",
        _with_document(_set(["clips", 0, "skeleton"], 4)),
        r"clips\[0\]: skeleton 4 does not exist",
    ),
    (
        "a skeleton without names",
        _with_document(_set(["skeletons", 0, "names"], ["a"])),
        r"skeletons\[0\]: needs a list of 38 joint names",
    ),
    ("skeleton rows off", _cell("skeleton_rows", 1, 37), "skeleton rows do not partition the rest table"),
    ("a NaN in the rest pose", _cell("rest", (0, 0), np.nan), "arrays.rest: holds NaN or infinity"),
    ("a parent after its child", _cell("parents", 1, 5), r"skeletons: parents\[1\] = 5 must be -1 or a smaller index"),
    ("a track kind 3", _cell("kinds", (0, 0), 3), r"clips\[0\]: a track kind is not 0, 1 or 2"),
    (
        "an animated track made default",
        _with_array("kinds", lambda a: _first_animated(a).__setitem__(0, 0)),
        "the track kinds disagree with the counts",
    ),
    (
        "track references shuffled",
        _with_array("refs", lambda a: a.__setitem__(_ANIMATED_CELL, 5)),
        "track references are not the rows",
    ),
    (
        "an unknown level",
        _cell("formats", 0, 31),
        "a format byte holds an unknown level, or a dropped component on a vector track",
    ),
    (
        "a vector track dropping a component",
        _with_array("formats", lambda a: a.__setitem__(slice(None), a & 0x1F)),
        "a dropped component on a vector track",
    ),
    (
        "a segment range past its clip range",
        _with_array("ranges", lambda a: a.__setitem__((0, slice(0, 4)), [100, 0, 0, 200])),
        "a segment range leaves its clip range",
    ),
    (
        "a segment's first bit moved",
        _cell("segments", (1, 0), 7),
        "segment bit offsets disagree with the segments' formats",
    ),
    ("a segment's bits per sample changed", _cell("segments", (0, 1), 3), "segment bit offsets disagree"),
    ("too few words", _table("words_count", 3), r"3 words hold fewer than the \d+ bits of its samples"),
    (
        "rows past an array",
        _table("kinds_row", 10**6),
        r"its kinds rows \[1000000, 1000038\) lie outside the array of 76",
    ),
    ("no samples", _table("samples", 0), "0 samples, loops 0: inconsistent"),
    (
        "a segment count that does not fit",
        _table("segments_count", 1),
        "1 segments for 61 stored samples of 16 per segment",
    ),
    ("more samples than segments", _table("samples", 200), r"clips\[0\]: 4 segments for 200 stored samples"),
    ("a zero rate", _cell("clip_times", (0, 1), 0.0), r"start 0.0 and rate 0.0 must be finite, the rate positive"),
    ("a NaN start", _cell("clip_times", (1, 0), np.nan), r"clips\[1\]: start nan and rate .* must be finite"),
    (
        "a NaN clip range",
        _cell("clip_ranges", (0, 0), np.nan),
        "constants and clip ranges must be finite, extents non-negative",
    ),
    ("a negative extent", _cell("clip_ranges", (0, 5), -1.0), "extents non-negative"),
    ("a NaN constant", _cell("constants", (0, 0), np.nan), r"clips\[0\]: constants and clip ranges must be finite"),
]


@pytest.mark.parametrize(("what", "mutate", "match"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_file_is_refused_naming_the_problem(
    blob: bytes, what: str, mutate: Callable[[bytes], bytes], match: str, tmp_path: Path
) -> None:
    path = tmp_path / "bad.ossalib"
    path.write_bytes(mutate(blob))
    with pytest.raises(LibraryFormatError, match=match) as caught:
        load_library(path)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_the_corpus_is_large_enough() -> None:
    assert len(MALFORMED) >= 30


def test_an_unreadable_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(LibraryFormatError, match="cannot read"):
        load_library(tmp_path / "nothing.ossalib")


def test_the_header_layout_is_what_the_documentation_says() -> None:
    assert HEADER.size == 96
    assert struct.calcsize("<8sIIQQQQ") == 48
