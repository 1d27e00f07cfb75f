"""``EXT_meshopt_compression``: buffer views stored compressed, decoded with the ``meshoptimizer`` package.

A compressed view keeps its ordinary ``bufferView`` properties (the layout of the data once
decoded, in a buffer that may hold no data: a *fallback* buffer) and names, in its extension
object, where the compressed bytes are (``buffer``, ``byteOffset``, ``byteLength``), how many
elements of how many bytes they decode to (``count``, ``byteStride``), the bitstream (``mode``:
``ATTRIBUTES``, ``TRIANGLES`` or ``INDICES``) and a filter applied after decoding attributes
(``NONE``, ``OCTAHEDRAL`` normals, ``QUATERNION`` rotations, ``EXPONENTIAL`` floats). Every rule
of the extension's specification is checked before anything is decoded; the decoded bytes then
go through the accessors like any view's (strides, quantization, sparse substitution).

The bitstreams are zeux's meshoptimizer's (MIT), whose Python package wraps the reference C++
decoder; Ossa does not implement them itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import meshoptimizer
import numpy as np

from engine.io.extensions import integer, string

if TYPE_CHECKING:
    from engine.io.gltf import GltfDocument

MESHOPT = "EXT_meshopt_compression"
#: The extension's compression modes.
MODES = ("ATTRIBUTES", "TRIANGLES", "INDICES")
#: Post-decoding filters and the byte strides each allows (``None``: any multiple of 4).
FILTERS: dict[str, tuple[int, ...] | None] = {
    "NONE": None,
    "OCTAHEDRAL": (4, 8),
    "QUATERNION": (8,),
    "EXPONENTIAL": None,
}
#: Largest decoded view Ossa allocates (1 GiB): a claim beyond it is refused before decoding.
MAX_DECODED_BYTES = 1 << 30


def decode_view(doc: GltfDocument, index: int, extension: dict[str, Any]) -> bytes:
    """The decompressed bytes of ``bufferViews[index]``, whose ``EXT_meshopt_compression`` object is ``extension``.

    Raises
    ------
    AssetError
        A property breaks the extension's rules (each named with its JSON path), the compressed
        bytes lie outside their buffer, or they do not decode.
    """
    where = f"bufferViews[{index}].extensions.{MESHOPT}"
    view = doc.json["bufferViews"][index]
    source = doc.index(extension.get("buffer"), doc.count("buffers"), f"{where}.buffer", "buffers")
    offset = integer(doc, extension, "byteOffset", where, 0)
    length = integer(doc, extension, "byteLength", where)
    stride = integer(doc, extension, "byteStride", where)
    count = integer(doc, extension, "count", where)
    mode = string(doc, extension, "mode", where)
    filter_name = string(doc, extension, "filter", where, "NONE")
    if mode not in MODES:
        raise doc.error(f"mode must be one of {list(MODES)}, got {mode!r}", f"{where}.mode")
    if filter_name not in FILTERS:
        raise doc.error(f"filter must be one of {list(FILTERS)}, got {filter_name!r}", f"{where}.filter")
    _check_layout(doc, view, where, mode, filter_name, stride, count)
    if count * stride > MAX_DECODED_BYTES:
        raise doc.error(f"{count} elements of {stride} bytes decode to more than {MAX_DECODED_BYTES} bytes", where)
    if doc.is_fallback(source):
        raise doc.error(f"names buffer {source}, a fallback buffer; the compressed data must be elsewhere", where)
    data = doc.buffer(source)
    if offset + length > len(data):
        raise doc.error(
            f"byteOffset {offset} + byteLength {length} exceeds buffers[{source}] ({len(data)} bytes)", where
        )
    compressed = bytes(data[offset : offset + length])
    try:
        decoded = _decode(compressed, mode, filter_name, count, stride)
    except (RuntimeError, ValueError) as exc:
        raise doc.error(f"the {mode} data does not decode: {exc}", where) from None
    return decoded


def _check_layout(
    doc: GltfDocument, view: dict[str, Any], where: str, mode: str, filter_name: str, stride: int, count: int
) -> None:
    """The extension's rules on ``byteStride``, ``count``, ``mode`` and ``filter`` against the parent view."""
    if count < 1:
        raise doc.error("count must be at least 1", f"{where}.count")
    parent_stride = view.get("byteStride")
    if parent_stride is not None and parent_stride != stride:
        raise doc.error(f"byteStride {stride} differs from the bufferView's byteStride {parent_stride}", where)
    if view.get("byteLength") != stride * count:
        raise doc.error(
            f"the bufferView's byteLength {view.get('byteLength')!r} must equal byteStride × count = {stride * count}",
            where,
        )
    if mode == "ATTRIBUTES":
        if stride % 4 or not 4 <= stride <= 256:
            raise doc.error(f"ATTRIBUTES need a byteStride divisible by 4, at most 256; got {stride}", where)
    else:
        if stride not in (2, 4):
            raise doc.error(f"{mode} need a byteStride of 2 or 4, got {stride}", where)
        if filter_name != "NONE":
            raise doc.error(f"{mode} take no filter, got {filter_name!r}", f"{where}.filter")
        if mode == "TRIANGLES" and count % 3:
            raise doc.error(f"TRIANGLES need a count divisible by 3, got {count}", f"{where}.count")
    allowed = FILTERS[filter_name]
    if allowed is not None and stride not in allowed:
        strides = " or ".join(map(str, allowed))
        raise doc.error(f"the {filter_name} filter needs a byteStride of {strides}, got {stride}", where)


def _decode(compressed: bytes, mode: str, filter_name: str, count: int, stride: int) -> bytes:
    """Decode one view's bitstream (and filter): ``count × stride`` bytes."""
    if mode in ("TRIANGLES", "INDICES"):
        # decoded as 4-byte indices whatever the stride (the bitstream does not depend on it; the
        # package returns 2-byte ones packed into its uint32 array), then narrowed
        decode = meshoptimizer.decode_index_buffer if mode == "TRIANGLES" else meshoptimizer.decode_index_sequence
        indices = decode(count, 4, compressed)
        if stride == 2 and indices.max(initial=0) > 0xFFFF:
            raise ValueError(f"an index decodes to {int(indices.max())}, beyond the 2-byte stride's 65535")
        return indices.astype(np.uint16 if stride == 2 else np.uint32).tobytes()
    raw = meshoptimizer.decode_vertex_buffer(count, stride, compressed).view(np.uint8).reshape(-1)
    decoders = {
        "OCTAHEDRAL": meshoptimizer.decode_filter_oct,
        "QUATERNION": meshoptimizer.decode_filter_quat,
        "EXPONENTIAL": meshoptimizer.decode_filter_exp,
    }
    if filter_name in decoders:
        raw = decoders[filter_name](raw, count, stride)
    return raw.tobytes()
