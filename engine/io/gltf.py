"""Reading a glTF 2.0 document: container (via pygltflib), URIs, buffers and accessors.

The only module of Ossa that imports pygltflib. :class:`GltfDocument` opens a ``.gltf`` (JSON
with external ``.bin`` files or ``data:`` URIs) or a ``.glb``, resolves buffers and decodes
accessors into numpy arrays (strides, every component type, normalised integers, sparse
substitution, matrices), raising :class:`~engine.errors.AssetError` with the file and JSON
path of anything malformed. Building runtime types from the decoded data is
:mod:`engine.io.build`'s job.
"""

from __future__ import annotations

import base64
import binascii
import json
import posixpath
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import numpy as np
import pygltflib

from engine.errors import AssetError
from engine.io.accessors import (
    COMPONENT_DTYPES,
    ELEMENT_SHAPES,
    NORMALIZABLE,
    dequantize,
    element_layout,
    read_elements,
)
from engine.io.extensions import check_required, extension_object
from engine.io.formats import ACCEPTED, foreign_format
from engine.io.glb import GLB_MAGIC, glb_chunks
from engine.io.gltf_schema import check_types
from engine.io.meshopt import MESHOPT, decode_view
from engine.math._checks import FloatArray

#: Accessors without a buffer view are zero-filled; refuse to allocate more bytes than this (64 MiB).
MAX_ZERO_FILLED_BYTES = 1 << 26


class UnreadableFileError(AssetError):
    """A file that a URI names (inside the model's folder) is missing or cannot be read.

    Loaders may treat it as a warning (a missing texture) where a malformed document is an error.
    """


class RefusedUriError(AssetError):
    """A URI that leaves the model's folder (a scheme, an absolute path, ``..``): refused, never read.

    Geometry behind such a URI makes the file unusable (an error); a texture behind one is skipped
    with a warning, as a viewer draws the model without it.
    """


def _items(value: Any) -> list[Any]:
    """A JSON array property as a list (``None`` → empty)."""
    return list(value) if value else []


class GltfDocument:
    """An opened glTF document: the parsed JSON plus lazily loaded, validated binary data.

    Parameters
    ----------
    path
        A ``.gltf`` or ``.glb`` file. GLB is recognised by its magic bytes, not its suffix (a
        ``.glb`` file that is neither GLB nor JSON is reported as a bad GLB header).

    Attributes
    ----------
    gltf
        The pygltflib object model (JSON properties as parsed).
    json
        The document's JSON as :func:`json.loads` read it, type-checked: for properties
        pygltflib drops (``nodes[i].weights``).
    file
        ``str(path)``, used in every error and warning.
    warnings
        Messages of the :class:`~engine.errors.OssaWarning` s found while reading, in order (the
        public loaders emit them when they return: :mod:`engine.io.reporting`).
    extension_notes
        Extension name → what the stages did with it (:mod:`engine.io.extensions`).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.file = str(self.path)
        self.warnings: list[str] = []
        self.extension_notes: dict[str, str] = {}
        self._buffers: dict[int, bytes] = {}
        self._views: dict[int, bytes] = {}
        self._accessors: dict[int, np.ndarray] = {}
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise AssetError(f"cannot read the file: {exc.strerror or exc}", file=self.file) from None
        self._glb_blob: bytes | None = None
        foreign = None if raw[:4] == GLB_MAGIC else foreign_format(self.path, raw)
        if foreign is not None:
            raise AssetError(f"not a glTF file but {foreign}; Ossa reads {ACCEPTED}", file=self.file)
        if raw[:4] == GLB_MAGIC:
            json_chunk, self._glb_blob = glb_chunks(raw, self.error)
            try:
                text = json_chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self.error(
                    f"the JSON chunk is not UTF-8 (byte {exc.start} of the chunk)", "GLB chunk 0"
                ) from None
            self._json(text, "JSON chunk")
        else:
            if self.path.suffix.lower() == ".glb" and raw.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"{":
                raise self.error(f"GLB magic must be b'glTF', got {raw[:4]!r}", "GLB header")
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise self.error(
                    f"expected a glTF JSON document (UTF-8) or a GLB file, got undecodable bytes at offset {exc.start}",
                    f"byte {exc.start}",
                ) from None
            self._json(text, "JSON")
        self.gltf: pygltflib.GLTF2 = self._parse(lambda: pygltflib.GLTF2.gltf_from_json(text))
        self._check_asset()

    # ----------------------------------------------------------------------------------------
    # errors, warnings, indices

    def error(self, message: str, where: str | None = None) -> AssetError:
        """An :class:`AssetError` about this file at JSON path ``where``."""
        return AssetError(message, file=self.file, where=where)

    def warn(self, message: str, where: str | None = None) -> None:
        """Record a warning about this file (at JSON path ``where``); a repeated one is recorded once."""
        text = f"{where}: {message}" if where else message
        if text not in self.warnings:
            self.warnings.append(text)

    def note_extension(self, name: str, did: str) -> None:
        """Record what a stage did with extension ``name`` (``ossa inspect`` lists it)."""
        self.extension_notes[name] = did

    def index(self, value: Any, count: int, where: str, what: str) -> int:
        """``value`` checked to be an integer index into an array of ``count`` ``what``."""
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise self.error(f"expected an integer index of {what}, got {value!r}", where)
        if not 0 <= value < count:
            raise self.error(f"index {value} is out of range: the file has {count} {what}", where)
        return int(value)

    def count(self, name: str) -> int:
        """Number of entries of the top-level array ``name`` (``"nodes"``, ``"accessors"``, …)."""
        return len(_items(getattr(self.gltf, name)))

    # ----------------------------------------------------------------------------------------
    # container

    def _json(self, text: str, where: str) -> None:
        """Parse ``text`` (``where``: ``"JSON"`` or ``"JSON chunk"``) and check the JSON types of its properties.

        Runs before pygltflib parses the text, which converts values of the wrong type silently.
        """
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self.error(f"not valid JSON: {exc.msg}", f"{where} line {exc.lineno} column {exc.colno}") from None
        except RecursionError:
            raise self.error("not valid JSON: arrays or objects nested too deeply", where) from None
        check_types(document, self.error)
        self.json: dict[str, Any] = document

    def _parse(self, parse: Any) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return parse()
        except Exception as exc:  # pygltflib reports what it cannot convert with whatever it hits
            raise AssetError(f"not a valid glTF document: {type(exc).__name__}: {exc}", file=self.file) from None

    def _check_asset(self) -> None:
        asset = self.gltf.asset
        version = getattr(asset, "version", None) if asset is not None else None
        if not isinstance(version, str) or not version.startswith("2."):
            raise self.error(f"expected a glTF 2.x asset, got asset.version = {version!r}", "asset.version")
        check_required(self)

    # ----------------------------------------------------------------------------------------
    # URIs and buffers

    def read_uri(self, uri: str, where: str, expected_length: int | None = None) -> bytes:
        """Bytes of a ``data:`` URI or of a file relative to the document's folder.

        Absolute paths, other schemes and relative paths that leave the folder are refused.
        With ``expected_length``, a file shorter than that is refused before it is read.
        """
        if not isinstance(uri, str):
            raise self.error(f"expected a URI string, got {uri!r}", where)
        if uri.startswith("data:"):
            header, sep, payload = uri.partition(",")
            if not sep or not header.endswith(";base64"):
                raise self.error("data: URIs must be base64-encoded ('data:<type>;base64,<data>')", where)
            try:
                return base64.b64decode(payload, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise self.error(f"invalid base64 in data: URI: {exc}", where) from None
        relative = unquote(uri)
        if "\0" in relative:
            raise self.error(f"URI {uri!r} contains a NUL byte", where)
        scheme = relative.split(":", 1)[0] if ":" in relative.split("/", 1)[0] else ""
        normal = posixpath.normpath(relative.replace("\\", "/"))
        if scheme or relative.startswith(("/", "\\")) or normal == ".." or normal.startswith("../"):
            raise RefusedUriError(
                f"URI {uri!r} must be a relative path inside the model's folder (no scheme, no absolute path, no '..')",
                file=self.file,
                where=where,
            )
        target = self.path.parent / normal
        try:
            size = target.stat().st_size
            if expected_length is not None and size < expected_length:
                raise self.error(f"{uri!r} has {size} bytes but byteLength claims {expected_length}", where)
            return target.read_bytes()
        except OSError as exc:
            raise UnreadableFileError(
                f"cannot read {uri!r}: {exc.strerror or exc}", file=self.file, where=where
            ) from None

    def buffer(self, index: int) -> bytes:
        """Bytes of buffer ``index`` (exactly ``byteLength`` of them)."""
        if index in self._buffers:
            return self._buffers[index]
        where = f"buffers[{index}]"
        buffer = self.gltf.buffers[index]
        length = buffer.byteLength
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise self.error(f"byteLength must be a positive integer, got {length!r}", f"{where}.byteLength")
        if buffer.uri is None and self.is_fallback(index):
            raise self.error(
                f"is a {MESHOPT} fallback buffer without data; only compressed buffer views may refer to it", where
            )
        if buffer.uri is None:
            if index != 0 or self._glb_blob is None:
                raise self.error("a buffer without uri must be buffer 0 of a GLB file with a BIN chunk", where)
            data = self._glb_blob
            if len(data) < length:
                raise self.error(f"byteLength claims {length} bytes but the GLB BIN chunk has {len(data)}", where)
        else:
            data = self.read_uri(buffer.uri, f"{where}.uri", length)
            if len(data) < length:
                raise self.error(f"byteLength claims {length} bytes but the data has {len(data)}", where)
        self._buffers[index] = data[:length]
        return self._buffers[index]

    def is_fallback(self, index: int) -> bool:
        """Whether buffer ``index`` is marked as an ``EXT_meshopt_compression`` fallback (never read)."""
        where = f"buffers[{index}]"
        meshopt = extension_object(self, self.json["buffers"][index], MESHOPT, where)
        return meshopt is not None and meshopt.get("fallback") is True

    def buffer_view(self, index: Any, where: str) -> tuple[memoryview, int | None]:
        """Bytes of buffer view ``index`` (decompressed if need be) and its ``byteStride`` (``None`` when absent)."""
        index = self.index(index, self.count("bufferViews"), where, "bufferViews")
        view_where = f"bufferViews[{index}]"
        view = self.gltf.bufferViews[index]
        buffer_index = self.index(view.buffer, self.count("buffers"), f"{view_where}.buffer", "buffers")
        compressed = extension_object(self, self.json["bufferViews"][index], MESHOPT, view_where)
        if compressed is not None:
            if index not in self._views:
                self._views[index] = decode_view(self, index, compressed)
            return memoryview(self._views[index]), view.byteStride
        data = self.buffer(buffer_index)
        offset = view.byteOffset or 0
        length = view.byteLength
        if not isinstance(length, int) or length < 1 or not isinstance(offset, int) or offset < 0:
            raise self.error(
                f"byteOffset must be ≥ 0 and byteLength ≥ 1, got {view.byteOffset!r} and {view.byteLength!r}",
                view_where,
            )
        if offset + length > len(data):
            raise self.error(
                f"byteOffset {offset} + byteLength {length} exceeds buffers[{buffer_index}] ({len(data)} bytes)",
                view_where,
            )
        stride = view.byteStride
        if stride is not None and (not isinstance(stride, int) or not 4 <= stride <= 252 or stride % 4):
            raise self.error(
                f"byteStride must be an integer in [4, 252] and a multiple of 4, got {stride!r}",
                f"{view_where}.byteStride",
            )
        return memoryview(data)[offset : offset + length], stride

    # ----------------------------------------------------------------------------------------
    # accessors

    def accessor_meta(self, index: Any, where: str) -> pygltflib.Accessor:
        """The accessor object ``index`` after checking its componentType, type and count."""
        index = self.index(index, self.count("accessors"), where, "accessors")
        accessor = self.gltf.accessors[index]
        where = f"accessors[{index}]"
        if accessor.componentType not in COMPONENT_DTYPES:
            raise self.error(
                f"componentType must be one of {sorted(COMPONENT_DTYPES)}, got {accessor.componentType!r}",
                f"{where}.componentType",
            )
        if accessor.type not in ELEMENT_SHAPES:
            raise self.error(f"type must be one of {list(ELEMENT_SHAPES)}, got {accessor.type!r}", f"{where}.type")
        if isinstance(accessor.count, bool) or not isinstance(accessor.count, int) or accessor.count < 1:
            raise self.error(f"count must be a positive integer, got {accessor.count!r}", f"{where}.count")
        if accessor.normalized and accessor.componentType not in NORMALIZABLE:
            raise self.error(
                f"normalized may only be true for BYTE/UNSIGNED_BYTE/SHORT/UNSIGNED_SHORT, "
                f"got componentType {accessor.componentType}",
                f"{where}.normalized",
            )
        return accessor

    def accessor(self, index: Any, where: str) -> np.ndarray:
        """Decoded accessor ``index``: ``(count, *element_shape)`` in its component dtype.

        Strided and packed layouts, matrix column padding and sparse substitution are
        applied; normalisation is not (see :meth:`floats`). The result is read-only.
        """
        accessor = self.accessor_meta(index, where)
        index = int(index)
        if index in self._accessors:
            return self._accessors[index]
        where = f"accessors[{index}]"
        layout = element_layout(accessor.componentType, accessor.type)
        offset = accessor.byteOffset or 0
        if not isinstance(offset, int) or offset < 0:
            raise self.error(f"byteOffset must be a non-negative integer, got {offset!r}", f"{where}.byteOffset")
        if accessor.bufferView is None:
            if accessor.count * layout.size > MAX_ZERO_FILLED_BYTES:
                raise self.error(
                    f"count {accessor.count} without a bufferView would zero-fill more than {MAX_ZERO_FILLED_BYTES} "
                    f"bytes ({accessor.count * layout.size})",
                    f"{where}.count",
                )
            values = np.zeros((accessor.count, *layout.shape), dtype=COMPONENT_DTYPES[accessor.componentType])
        else:
            data, stride = self.buffer_view(accessor.bufferView, f"{where}.bufferView")
            if stride is not None and stride < layout.size:
                raise self.error(
                    f"byteStride {stride} of bufferViews[{accessor.bufferView}] is smaller than one "
                    f"{accessor.type} element of componentType {accessor.componentType} ({layout.size} bytes)",
                    where,
                )
            step = layout.size if stride is None else stride
            end = offset + step * (accessor.count - 1) + layout.size
            if end > len(data):
                raise self.error(
                    f"{accessor.count} elements of {layout.size} bytes (stride {step}) from byteOffset {offset} "
                    f"need {end} bytes but bufferViews[{accessor.bufferView}] has {len(data)}",
                    where,
                )
            values = read_elements(data, offset, accessor.count, accessor.componentType, accessor.type, stride)
        if accessor.sparse is not None:
            self._apply_sparse(values, accessor, where)
        values.flags.writeable = False
        self._accessors[index] = values
        return values

    def _apply_sparse(self, values: np.ndarray, accessor: pygltflib.Accessor, where: str) -> None:
        sparse = accessor.sparse
        where = f"{where}.sparse"
        count = sparse.count
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= accessor.count:
            raise self.error(f"count must be an integer in [1, {accessor.count}], got {count!r}", f"{where}.count")
        indices_info, values_info = sparse.indices, sparse.values
        if indices_info is None or values_info is None:
            raise self.error("sparse storage needs both indices and values", where)
        if indices_info.componentType not in (5121, 5123, 5125):
            raise self.error(
                f"componentType must be 5121, 5123 or 5125, got {indices_info.componentType!r}",
                f"{where}.indices.componentType",
            )
        indices = self._packed(
            indices_info.bufferView,
            indices_info.byteOffset,
            count,
            indices_info.componentType,
            "SCALAR",
            f"{where}.indices",
        ).astype(np.int64)
        if np.any(np.diff(indices) <= 0):
            k = int(np.nonzero(np.diff(indices) <= 0)[0][0])
            raise self.error(
                f"indices must be strictly increasing, got {indices[k]} then {indices[k + 1]} "
                f"at positions {k}, {k + 1}",
                f"{where}.indices",
            )
        if indices[-1] >= accessor.count:
            raise self.error(
                f"index {indices[-1]} is out of range for an accessor of {accessor.count} elements",
                f"{where}.indices",
            )
        substitutes = self._packed(
            values_info.bufferView,
            values_info.byteOffset,
            count,
            accessor.componentType,
            accessor.type,
            f"{where}.values",
        )
        values[indices] = substitutes

    def _packed(
        self, view_index: Any, byte_offset: Any, count: int, component_type: int, accessor_type: str, where: str
    ) -> np.ndarray:
        """Tightly packed elements of a sparse indices/values block."""
        data, _ = self.buffer_view(view_index, f"{where}.bufferView")
        offset = byte_offset or 0
        size = element_layout(component_type, accessor_type).size
        if not isinstance(offset, int) or offset < 0 or offset + count * size > len(data):
            raise self.error(
                f"{count} elements of {size} bytes from byteOffset {offset!r} do not fit in "
                f"bufferViews[{view_index}] ({len(data)} bytes)",
                where,
            )
        return read_elements(data, offset, count, component_type, accessor_type)

    def provide_accessor(self, index: int, values: np.ndarray, where: str) -> None:
        """Make accessor ``index`` read as ``values`` (decoded by an extension: ``KHR_draco_mesh_compression``).

        ``values`` must hold ``count`` elements of the accessor's type; they are cast to its
        component type, which must be of the same kind (integer or float).
        """
        accessor = self.accessor_meta(index, where)
        shape = (accessor.count, *ELEMENT_SHAPES[accessor.type])
        dtype = COMPONENT_DTYPES[accessor.componentType]
        if values.size != int(np.prod(shape)) or values.shape[0] != accessor.count:
            raise self.error(
                f"decodes to {values.shape[0]} elements of {values.size // max(values.shape[0], 1)} "
                f"components, but the accessor holds {accessor.count} {accessor.type}",
                where,
            )
        if (values.dtype.kind == "f") != (dtype.kind == "f"):
            raise self.error(
                f"decodes to {values.dtype} values, but the accessor's componentType {accessor.componentType} is "
                f"{dtype.name}",
                where,
            )
        limits = None if dtype.kind == "f" else np.iinfo(dtype)
        if limits is not None and values.size and (values.min() < limits.min or values.max() > limits.max):
            raise self.error(
                f"decodes to values in [{values.min()}, {values.max()}], beyond the accessor's {dtype.name}", where
            )
        provided = values.reshape(shape).astype(dtype.newbyteorder("="))
        provided.flags.writeable = False
        self._accessors[int(index)] = provided

    def has_accessor(self, index: int) -> bool:
        """Whether accessor ``index`` is decoded already (or was provided)."""
        return int(index) in self._accessors

    def floats(self, index: Any, where: str) -> FloatArray:
        """Accessor ``index`` as float64, normalised integers decoded by the spec's formulas."""
        accessor = self.accessor_meta(index, where)
        return dequantize(self.accessor(index, where), accessor.componentType, bool(accessor.normalized))

    def image_bytes(self, index: int) -> tuple[bytes, str]:
        """Encoded bytes and a description (URI or buffer view) of image ``index``."""
        where = f"images[{index}]"
        image = self.gltf.images[index]
        if image.uri is not None:
            return self.read_uri(image.uri, f"{where}.uri"), "data: URI" if image.uri.startswith("data:") else image.uri
        if image.bufferView is None:
            raise self.error("an image needs a uri or a bufferView", where)
        data, _ = self.buffer_view(image.bufferView, f"{where}.bufferView")
        return bytes(data), f"bufferViews[{image.bufferView}]"
