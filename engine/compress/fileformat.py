"""The clip library file (``.ossalib``): versioned, checksummed, memory-mapped, readable with numpy alone.

Layout (little-endian; ``docs/clip_library_format.md`` is the full specification):

====== ======= =========================================================================
offset bytes   field
====== ======= =========================================================================
0      8       magic ``OSSACLIB``
8      4       format version (u32), :data:`VERSION`
12     4       header size (u32), 96
16     8       file size in bytes (u64)
24     8       offset of the JSON document (u64), 96
32     8       its length in bytes (u64)
40     8       offset of the first array (u64), a multiple of 64
48     32      SHA-256 of the whole file except these 32 bytes
80     16      zero
====== ======= =========================================================================

The JSON document (UTF-8, keys sorted) lists the skeletons (joint names), the clips (name,
skeleton, what the compressor measured) and the arrays (``dtype``, ``shape``, ``offset`` from
the file start, each a multiple of 64): the packed arrays of
:class:`~engine.compress.library.ClipLibrary`. Loading maps the file and makes every clip a set
of views into it. Everything a sampler indexes with is validated first (offsets, counts, bit
positions, levels), so a corrupted file is refused with a :class:`LibraryFormatError` naming
the problem rather than read out of bounds.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.skeleton import Skeleton
from engine.compress.clip import CLIP_ARRAYS, CompressedClip
from engine.compress.library import COLUMN, TABLE_FIELDS, ClipLibrary, clip_views, row_counts
from engine.compress.quantize import (
    ANIMATED,
    CONSTANT,
    DROP_SHIFT,
    LEVEL_BITS,
    LEVEL_MASK,
    NO_DROP,
    ROTATION,
    SEGMENT_SAMPLES,
    component_bits,
)
from engine.errors import AssetError, OssaError
from engine.math._checks import trusted

MAGIC = b"OSSACLIB"
#: The format version this module writes and reads.
VERSION = 1
HEADER = struct.Struct("<8sIIQQQQ32s16s")
ALIGN = 64
#: The file's arrays: name → (dtype, trailing shape); the leading length comes from the document.
ARRAYS: dict[str, tuple[str, tuple[int, ...]]] = {
    "clip_table": ("<i8", (len(TABLE_FIELDS),)),
    "clip_times": ("<f8", (2,)),
    **{name: (np.dtype(dtype).newbyteorder("<").str, tail) for name, (dtype, tail) in CLIP_ARRAYS.items()},
    "rest": ("<f8", (10,)),
    "parents": ("<i8", ()),
    "inverse_binds": ("<f8", (4, 4)),
    "skeleton_rows": ("<i8", ()),
}
#: File name suffix of a clip library.
SUFFIX = ".ossalib"


class LibraryFormatError(AssetError):
    """A clip library file that is truncated, corrupted, of another version, or inconsistent."""


def _align(offset: int) -> int:
    return -(-offset // ALIGN) * ALIGN


#: Passes that settle the array offsets against the JSON document's length (two or three in practice).
LAYOUT_PASSES = 16


def library_bytes(library: ClipLibrary) -> bytes:
    """The file of ``library``: the same library always gives the same bytes."""
    packed = library.packed
    document: dict[str, Any] = {
        "format": "ossa clip library",
        "skeletons": [{"names": list(s.names)} for s in library.skeletons],
        "clips": [
            {"name": c.name, "skeleton": s, "info": c.info}
            for c, s in zip(library.clips, library.skeleton_index, strict=True)
        ],
    }
    # offsets depend on the document's length, which depends on the offsets: from no offsets, each
    # pass can only lengthen the text (more digits) and so move the offsets on, so the passes settle;
    # the text written is the one whose offsets were used
    layout: dict[str, dict[str, Any]] = {}
    text = b""
    for _ in range(LAYOUT_PASSES):
        document["arrays"] = layout
        text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
        offset = _align(HEADER.size + len(text))
        fresh = {}
        for name in ARRAYS:
            array = packed[name]
            fresh[name] = {"dtype": ARRAYS[name][0], "shape": list(array.shape), "offset": offset}
            offset = _align(offset + array.nbytes)
        if fresh == layout:
            break
        layout = fresh
    else:
        raise AssertionError(f"the file layout did not settle in {LAYOUT_PASSES} passes")
    data_offset = layout["clip_table"]["offset"]
    size = _align(max(spec["offset"] + packed[name].nbytes for name, spec in layout.items()))
    blob = bytearray(size)
    blob[HEADER.size : HEADER.size + len(text)] = text
    for name, spec in layout.items():
        raw = np.ascontiguousarray(packed[name], dtype=np.dtype(spec["dtype"])).tobytes()
        blob[spec["offset"] : spec["offset"] + len(raw)] = raw
    header = HEADER.pack(MAGIC, VERSION, HEADER.size, size, HEADER.size, len(text), data_offset, bytes(32), bytes(16))
    blob[: HEADER.size] = header
    digest = hashlib.sha256(bytes(blob[:48]) + bytes(blob[80:])).digest()
    blob[48:80] = digest
    return bytes(blob)


def save_library(library: ClipLibrary, path: str | Path) -> Path:
    """Write ``library`` to ``path`` (atomically: a temporary file renamed into place); returns the path."""
    path = Path(path)
    data = library_bytes(library)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return path


def load_library(path: str | Path, *, verify: bool = True) -> ClipLibrary:
    """Map the library file ``path`` and return its :class:`ClipLibrary` (views into the mapping).

    ``verify`` checks the SHA-256 (reads the whole file once); the structure is validated always.

    Raises
    ------
    LibraryFormatError
        A file that is not a clip library, of another version, truncated, corrupted or
        inconsistent; the message names what is wrong.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        data = np.memmap(path, dtype=np.uint8, mode="r") if size else np.zeros(0, dtype=np.uint8)
    except OSError as exc:
        raise LibraryFormatError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None
    return library_from_buffer(data, file=str(path), verify=verify)


def is_library(path: str | Path) -> bool:
    """Whether ``path`` starts with the library magic (or, if unreadable, ends in :data:`SUFFIX`)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(MAGIC)) == MAGIC
    except OSError:
        return Path(path).suffix.lower() == SUFFIX


def library_from_buffer(data: Any, *, file: str = "<bytes>", verify: bool = True) -> ClipLibrary:
    """The library held in ``data`` (bytes, or a uint8 array such as a memory map); see :func:`load_library`."""
    buffer = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes | bytearray | memoryview) else data

    def fail(message: str, where: str | None = None) -> LibraryFormatError:
        return LibraryFormatError(message, file=file, where=where)

    if buffer.size >= len(MAGIC) and bytes(buffer[: len(MAGIC)]) != MAGIC:
        raise fail("not an Ossa clip library (no OSSACLIB magic)")
    if buffer.size < HEADER.size:
        raise fail(f"truncated: {buffer.size} bytes, not even a header")
    _magic, version, header_size, size, json_offset, json_size, _, digest, _ = HEADER.unpack(
        bytes(buffer[: HEADER.size])
    )
    if version != VERSION:
        raise fail(f"format version {version}; this Ossa reads version {VERSION}", "header")
    if header_size != HEADER.size:
        raise fail(f"header size {header_size}, expected {HEADER.size}", "header")
    if size != buffer.size:
        what = "truncated" if buffer.size < size else "has trailing bytes"
        raise fail(f"{what}: the file is {buffer.size} bytes, its header says {size}", "header")
    if verify:
        check = hashlib.sha256(buffer[:48].tobytes())
        check.update(np.ascontiguousarray(buffer[80:]).data)
        if check.digest() != digest:
            raise fail("checksum mismatch: the file is corrupted (SHA-256 differs from its header's)", "header")
    if json_offset != HEADER.size or json_offset + json_size > size:
        raise fail(f"the JSON document ({json_size} bytes at {json_offset}) lies outside the file", "header")
    try:
        document = json.loads(bytes(buffer[json_offset : json_offset + json_size]).decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise fail(f"the JSON document does not parse: {exc}", "document") from None
    try:
        return _build(document, buffer, fail)
    except OssaError as exc:
        if isinstance(exc, LibraryFormatError):
            raise
        raise fail(str(exc), "skeletons") from None


def _build(document: Any, buffer: np.ndarray, fail: Any) -> ClipLibrary:
    if not isinstance(document, dict) or not all(
        isinstance(document.get(k), t) for k, t in (("skeletons", list), ("clips", list), ("arrays", dict))
    ):
        raise fail("the document must be an object with lists 'skeletons', 'clips' and an object 'arrays'", "document")
    packed = {name: _array(document["arrays"], name, buffer, fail) for name in ARRAYS}
    skeletons = _skeletons(document["skeletons"], packed, fail)
    metas = document["clips"]
    table = packed["clip_table"]
    if table.shape[0] != len(metas) or packed["clip_times"].shape[0] != len(metas):
        raise fail(f"{len(metas)} clips listed but the clip table has {table.shape[0]} rows", "arrays.clip_table")
    clips: list[CompressedClip] = []
    names: set[str] = set()
    for k, meta in enumerate(metas):
        where = f"clips[{k}]"
        if not (
            isinstance(meta, dict)
            and isinstance(meta.get("name"), str)
            and isinstance(meta.get("skeleton"), int)
            and isinstance(meta.get("info"), dict)
        ):
            raise fail(
                "a clip entry must be an object with a string 'name', an integer 'skeleton' and an object 'info'", where
            )
        if meta["name"] in names:
            raise fail(f"two clips are named {meta['name']!r}", where)
        names.add(meta["name"])
        skeleton = meta["skeleton"]
        if not 0 <= skeleton < len(skeletons) or table[k, COLUMN["skeleton"]] != skeleton:
            raise fail(f"skeleton {skeleton} does not exist or disagrees with the clip table", where)
        clip = _clip(packed, k, meta, skeletons[skeleton], fail, where)
        clips.append(clip)
    return ClipLibrary.from_packed(skeletons, clips, [m["skeleton"] for m in metas], packed)


def _array(layout: dict[str, Any], name: str, buffer: np.ndarray, fail: Any) -> np.ndarray:
    where = f"arrays.{name}"
    spec = layout.get(name)
    dtype, tail = ARRAYS[name]
    if not isinstance(spec, dict) or spec.get("dtype") != dtype:
        raise fail(f"missing, or not of dtype {dtype}", where)
    shape, offset = spec.get("shape"), spec.get("offset")
    if not (
        isinstance(shape, list)
        and all(isinstance(n, int) and n >= 0 for n in shape)
        and tuple(shape[1:]) == tail
        and len(shape) == 1 + len(tail)
    ):
        raise fail(f"shape must be [n, {', '.join(map(str, tail))}]".replace(", ]", "]"), where)
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if not isinstance(offset, int) or offset % ALIGN or offset < HEADER.size or offset + nbytes > buffer.size:
        raise fail(
            f"{nbytes} bytes at offset {offset} do not lie aligned inside the file of {buffer.size} bytes", where
        )
    view = buffer[offset : offset + nbytes].view(np.dtype(dtype)).reshape(shape)
    view.flags.writeable = False
    return view


def _skeletons(specs: list[Any], packed: dict[str, np.ndarray], fail: Any) -> list[Skeleton]:
    rows = packed["skeleton_rows"]
    if (
        rows.shape != (len(specs) + 1,)
        or rows[0] != 0
        or np.any(np.diff(rows) < 0)
        or rows[-1] != packed["rest"].shape[0]
    ):
        raise fail("skeleton rows do not partition the rest table", "arrays.skeleton_rows")
    if packed["parents"].shape[0] != rows[-1] or packed["inverse_binds"].shape[0] != rows[-1]:
        raise fail("parents and inverse binds need one row per rest row", "arrays.parents")
    for name in ("rest", "inverse_binds"):
        if not np.isfinite(packed[name]).all():
            raise fail("holds NaN or infinity", f"arrays.{name}")
    skeletons = []
    for s, spec in enumerate(specs):
        begin, end = int(rows[s]), int(rows[s + 1])
        if not isinstance(spec, dict) or not isinstance(spec.get("names"), list) or len(spec["names"]) != end - begin:
            raise fail(f"needs a list of {end - begin} joint names", f"skeletons[{s}]")
        rest = packed["rest"][begin:end]
        with trusted():
            skeletons.append(
                Skeleton(
                    spec["names"],
                    packed["parents"][begin:end],
                    rest[:, :3],
                    rest[:, 3:7],
                    rest[:, 7:],
                    packed["inverse_binds"][begin:end],
                )
            )
    return skeletons


def _clip(
    packed: dict[str, np.ndarray], k: int, meta: dict[str, Any], skeleton: Skeleton, fail: Any, where: str
) -> CompressedClip:
    row = packed["clip_table"][k]
    joints, samples, loops = (int(row[COLUMN[n]]) for n in ("joints", "samples", "loops"))
    animated, segments = int(row[COLUMN["animated"]]), int(row[COLUMN["segments_count"]])
    start, rate = (float(v) for v in packed["clip_times"][k])
    if joints != skeleton.num_joints or samples < 1 or loops not in (0, 1) or (loops and samples < 3):
        raise fail(
            f"{joints} joints, {samples} samples, loops {loops}: inconsistent with its skeleton or the format", where
        )
    if not (np.isfinite(start) and np.isfinite(rate) and rate > 0.0):
        raise fail(f"start {start} and rate {rate} must be finite, the rate positive", where)
    stored = samples - loops
    if segments != -(-stored // SEGMENT_SAMPLES):
        raise fail(f"{segments} segments for {stored} stored samples of {SEGMENT_SAMPLES} per segment", where)
    counts = row_counts(row)
    for name, count in counts.items():
        first = int(row[COLUMN[f"{name}_row"]])
        if count < 0 or first < 0 or first + count > packed[name].shape[0]:
            raise fail(
                f"its {name} rows [{first}, {first + count}) lie outside the array of {packed[name].shape[0]}", where
            )
    clip = clip_views(packed, k, meta["name"], meta["info"], skeleton)
    kinds = clip.kinds
    if np.any(kinds > ANIMATED):
        raise fail("a track kind is not 0, 1 or 2", where)
    refs = clip.refs.astype(np.int64)
    constant = kinds == CONSTANT
    if np.count_nonzero(kinds == ANIMATED) != animated or np.count_nonzero(constant) != counts["constants"]:
        raise fail("the track kinds disagree with the counts of animated and constant tracks", where)
    if not (
        np.array_equal(np.sort(refs[constant]), np.arange(counts["constants"]))
        and np.array_equal(refs[kinds == ANIMATED], np.arange(animated))
    ):
        raise fail("track references are not the rows of the constant and animated tracks, in order", where)
    if not (
        np.isfinite(clip.constants).all()
        and np.isfinite(clip.clip_ranges).all()
        and np.all(clip.clip_ranges[:, 4:] >= 0)
    ):
        raise fail("constants and clip ranges must be finite, extents non-negative", where)
    level, dropped = clip.formats & LEVEL_MASK, clip.formats >> DROP_SHIFT
    _, path = clip.animated
    if np.any(level >= LEVEL_BITS.size) or np.any(
        (dropped > NO_DROP) | ((path != ROTATION)[None, :] & (dropped != NO_DROP))
    ):
        raise fail("a format byte holds an unknown level, or a dropped component on a vector track", where)
    ranges = clip.ranges.astype(np.int64)
    if np.any(ranges[..., :3] + ranges[..., 3:] > 255):
        raise fail("a segment range leaves its clip range", where)
    per_sample = (
        component_bits(level, clip.ranges[..., 3:]).sum(axis=(1, 2)) if animated else np.zeros(segments, np.int64)
    )
    lengths = np.minimum(SEGMENT_SAMPLES, stored - np.arange(segments) * SEGMENT_SAMPLES)
    first_bit = np.cumsum(per_sample * lengths) - per_sample * lengths
    if not (np.array_equal(clip.segments[:, 1], per_sample) and np.array_equal(clip.segments[:, 0], first_bit)):
        raise fail("segment bit offsets disagree with the segments' formats", where)
    needed = int((per_sample * lengths).sum())
    if counts["words"] < needed // 64 + 2:
        raise fail(
            f"{counts['words']} words hold fewer than the {needed} bits of its samples (plus a spare word)", where
        )
    return clip
