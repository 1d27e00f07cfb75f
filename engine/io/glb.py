"""The GLB container: a 12-byte header, a JSON chunk and an optional BIN chunk (glTF 2.0 §4.4), read and written."""

from __future__ import annotations

import struct
from collections.abc import Callable

#: The first four bytes of a GLB file.
GLB_MAGIC = b"glTF"
_CHUNK_JSON = 0x4E4F534A
_CHUNK_BIN = 0x004E4942


def glb_chunks(raw: bytes, error: Callable[[str, str], Exception]) -> tuple[bytes, bytes | None]:
    """The JSON chunk and the BIN chunk (if any) of the GLB file ``raw``, header and chunk bounds checked.

    pygltflib trusts the lengths, and a second JSON or BIN chunk silently replaces the first.
    ``error(problem, where)`` makes the exception raised (``where``: ``"GLB header"``, ``"GLB chunk k"``).
    """
    header = "GLB header"
    if len(raw) < 20:
        raise error(f"GLB file is truncated: {len(raw)} bytes, expected at least 20", header)
    version, length = struct.unpack_from("<II", raw, 4)
    if version != 2:
        raise error(f"GLB version must be 2, got {version}", header)
    if length > len(raw):
        raise error(f"GLB header claims {length} bytes but the file has {len(raw)}", header)
    if length < 20:
        raise error(f"GLB header length {length} is less than the 20 bytes of a header and a chunk", header)
    json_chunk: bytes | None = None
    bin_chunk: bytes | None = None
    offset, k = 12, 0
    while offset < length:
        where = f"GLB chunk {k}"
        if offset + 8 > length:
            raise error(f"GLB chunk header at byte {offset} runs past the end ({length} bytes)", where)
        chunk_length, chunk_type = struct.unpack_from("<II", raw, offset)
        if offset + 8 + chunk_length > length:
            raise error(
                f"GLB chunk at byte {offset} claims {chunk_length} bytes but only "
                f"{length - offset - 8} remain in the file",
                where,
            )
        data = raw[offset + 8 : offset + 8 + chunk_length]
        if k == 0 and chunk_type != _CHUNK_JSON:
            raise error(f"the first GLB chunk must be JSON (0x{_CHUNK_JSON:08X}), got 0x{chunk_type:08X}", where)
        if chunk_type == _CHUNK_JSON:
            if json_chunk is not None:
                raise error("a GLB file holds one JSON chunk; this is a second JSON chunk", where)
            json_chunk = data
        elif chunk_type == _CHUNK_BIN:
            if bin_chunk is not None:
                raise error("a GLB file holds at most one BIN chunk; this is a second BIN chunk", where)
            bin_chunk = data
        offset += 8 + chunk_length
        k += 1
    assert json_chunk is not None  # the first chunk is JSON and length >= 20 means there is one
    return json_chunk, bin_chunk


def glb_bytes(json_text: str, blob: bytes) -> bytes:
    """A GLB file of the JSON document ``json_text`` (padded with spaces) and the BIN chunk ``blob`` (with zeros)."""
    text = json_text.encode("utf-8")
    text += b" " * (-len(text) % 4)
    chunks = struct.pack("<II", len(text), _CHUNK_JSON) + text
    if blob:
        data = blob + b"\0" * (-len(blob) % 4)
        chunks += struct.pack("<II", len(data), _CHUNK_BIN) + data
    return struct.pack("<4sII", GLB_MAGIC, 2, 12 + len(chunks)) + chunks
