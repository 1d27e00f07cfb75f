"""``KHR_draco_mesh_compression``: primitives whose vertices and indices are one Draco stream (DracoPy).

The primitive keeps its accessors (count, type, component type, bounds) without data; its
extension object names the buffer view of the Draco stream and the Draco attribute id of each
glTF attribute. :func:`decode_draco` decodes the stream once and provides every named accessor
and the indices to the document (:meth:`GltfDocument.provide_accessor
<engine.io.gltf.GltfDocument.provide_accessor>`), after which the primitive reads like an
uncompressed one (quantized and normalized component types included). Morph targets are not part
of the stream; they are read from their own accessors. Google's Draco decoder (Apache-2.0) does
the decoding, through the DracoPy package.
"""

from __future__ import annotations

from typing import Any

import DracoPy
import numpy as np

from engine.io.extensions import extension_object, integer
from engine.io.gltf import GltfDocument
from engine.io.gltf_schema import describe

DRACO = "KHR_draco_mesh_compression"


def decode_draco(doc: GltfDocument, primitive: dict[str, Any], mode: int, where: str) -> None:
    """Decode the Draco stream of the primitive at ``where`` (JSON ``primitive``) into its accessors, if it has one.

    Raises
    ------
    AssetError
        The extension object is malformed, names an attribute the primitive lacks or an id the
        stream lacks, the stream does not decode, or its contents do not fit the accessors.
    """
    extension = extension_object(doc, primitive, DRACO, where)
    if extension is None:
        return
    ewhere = f"{where}.extensions.{DRACO}"
    if mode != 4:
        raise doc.error(f"Draco-compressed primitives must be TRIANGLES (mode 4), got mode {mode}", f"{where}.mode")
    ids = extension.get("attributes")
    if not isinstance(ids, dict) or not ids:
        raise doc.error(
            f"expected an object mapping attribute names to Draco ids, got {describe(ids)}", f"{ewhere}.attributes"
        )
    accessors = primitive["attributes"]
    wanted = {name: integer(doc, ids, name, f"{ewhere}.attributes") for name in ids}
    for name, draco_id in wanted.items():
        if name not in accessors:
            raise doc.error(
                f"the primitive has no {name} attribute for Draco attribute {draco_id}", f"{ewhere}.attributes.{name}"
            )
    indices = primitive.get("indices")
    if all(doc.has_accessor(accessors[name]) for name in wanted) and (indices is None or doc.has_accessor(indices)):
        return  # the mesh is used by another node with another skin: decoded already
    view = integer(doc, extension, "bufferView", ewhere)
    data, _ = doc.buffer_view(view, f"{ewhere}.bufferView")
    try:
        mesh = DracoPy.decode(bytes(data))
    except Exception as exc:  # DracoPy raises its own exception types, and RuntimeError/ValueError for bad data
        raise doc.error(f"the Draco stream does not decode: {exc}", f"{ewhere}.bufferView") from None
    faces = getattr(mesh, "faces", None)
    if faces is None or not len(faces):
        raise doc.error("the Draco stream holds a point cloud, not a triangle mesh", f"{ewhere}.bufferView")
    for name, draco_id in wanted.items():
        attribute = mesh.get_attribute_by_unique_id(draco_id)
        if attribute is None:
            raise doc.error(f"the Draco stream has no attribute {draco_id} for {name}", f"{ewhere}.attributes.{name}")
        values = np.asarray(attribute["data"])
        doc.provide_accessor(accessors[name], values.reshape(values.shape[0], -1), f"{ewhere}.attributes.{name}")
    if indices is not None:
        doc.provide_accessor(indices, np.asarray(faces).reshape(-1, 1).astype(np.uint32), f"{where}.indices")
    doc.note_extension(DRACO, "compressed primitives decoded (DracoPy)")
