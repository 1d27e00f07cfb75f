"""Write glTF 2.0 files (``.glb`` or ``.gltf``): new ones, or an existing one with new animations.

:func:`save_gltf` writes a skeleton, its clips and skinned meshes in the plainest valid layout:
one node per joint (rest TRS), one skin, one node per mesh at the scene root (a skinned mesh's own
transform is ignored by the spec), one animation per clip with a sampler per channel, and every
array in one binary buffer, each accessor in its own 4-byte-aligned buffer view.

:func:`save_gltf_with_clips` copies a whole glTF document (every node, mesh, skin, material,
texture, sampler, camera, extension and extra as it is) and replaces its animations with new
clips whose channels target the file's nodes: what ``ossa retarget`` writes. Its buffers become
one (the GLB's BIN chunk, or one ``.bin`` beside a ``.gltf``), nodes keep their default morph
weights (which pygltflib's object model drops), ``EXT_meshopt_compression`` views
are written decompressed (the extension and its fallback buffer dropped) and external or
``data:`` images are embedded as buffer views, so the result is self-contained.

Clip markers travel in ``animations[i].extras.markers``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pygltflib

from engine.anim.clip import Clip
from engine.anim.mesh import MeshData
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, InvalidInputError
from engine.io.glb import glb_bytes
from engine.io.gltf import GltfDocument
from engine.io.meshopt import MESHOPT

_ARRAY_BUFFER = 34962
_ELEMENT_ARRAY_BUFFER = 34963
_COMPONENT = {
    np.dtype(np.float32): pygltflib.FLOAT,
    np.dtype(np.uint8): pygltflib.UNSIGNED_BYTE,
    np.dtype(np.uint16): pygltflib.UNSIGNED_SHORT,
    np.dtype(np.uint32): pygltflib.UNSIGNED_INT,
}
_TYPE = {1: pygltflib.SCALAR, 2: pygltflib.VEC2, 3: pygltflib.VEC3, 4: pygltflib.VEC4, 16: pygltflib.MAT4}


class _BufferBuilder:
    """Accumulates accessors into one binary blob."""

    def __init__(self, gltf: pygltflib.GLTF2) -> None:
        self.gltf = gltf
        self.blob = bytearray()

    def append(self, data: bytes) -> int:
        """Append raw ``data`` (padded to 4 bytes) and return the byte offset it starts at."""
        offset = len(self.blob)
        self.blob += data
        self.blob += b"\0" * (-len(self.blob) % 4)
        return offset

    def view(self, data: bytes, target: int | None = None) -> int:
        """Append ``data`` as a new buffer view and return its index."""
        offset = self.append(data)
        view = pygltflib.BufferView(buffer=0, byteOffset=offset, byteLength=len(data), target=target)
        self.gltf.bufferViews.append(view)
        return len(self.gltf.bufferViews) - 1

    def add(self, data: np.ndarray, *, target: int | None = None, min_max: bool = False) -> int:
        """Append ``data`` (rows = elements) as a new accessor and return its index."""
        data = np.ascontiguousarray(data)
        width = int(np.prod(data.shape[1:])) if data.ndim > 1 else 1
        self.view(data.tobytes(), target)
        flat = data.reshape(len(data), width)
        accessor = pygltflib.Accessor(
            bufferView=len(self.gltf.bufferViews) - 1,
            componentType=_COMPONENT[data.dtype],
            count=len(data),
            type=_TYPE[width],
            min=flat.min(axis=0).tolist() if min_max else None,
            max=flat.max(axis=0).tolist() if min_max else None,
        )
        self.gltf.accessors.append(accessor)
        return len(self.gltf.accessors) - 1


def _joint_index_dtype(count: int) -> type[np.unsignedinteger]:
    return np.uint8 if count <= 256 else np.uint16


def _add_mesh(gltf: pygltflib.GLTF2, buffers: _BufferBuilder, mesh: MeshData, num_joints: int) -> int:
    attributes = pygltflib.Attributes(
        POSITION=buffers.add(mesh.positions.astype(np.float32), target=_ARRAY_BUFFER, min_max=True)
    )
    if mesh.normals is not None:
        attributes.NORMAL = buffers.add(mesh.normals.astype(np.float32), target=_ARRAY_BUFFER)
    if mesh.uvs is not None:
        attributes.TEXCOORD_0 = buffers.add(mesh.uvs.astype(np.float32), target=_ARRAY_BUFFER)
    if mesh.joints is not None and mesh.weights is not None:
        if mesh.joints.max(initial=0) >= num_joints:
            raise InvalidInputError(
                f"mesh {mesh.name!r} references joint {mesh.joints.max()} of a {num_joints}-joint skeleton"
            )
        for k in range(mesh.influence_sets):
            weights = mesh.weights[:, 4 * k : 4 * k + 4].astype(np.float32)
            joints = np.where(weights > 0, mesh.joints[:, 4 * k : 4 * k + 4], 0)  # unused slots: joint 0
            joints = joints.astype(_joint_index_dtype(num_joints))
            setattr(attributes, f"JOINTS_{k}", buffers.add(joints, target=_ARRAY_BUFFER))
            setattr(attributes, f"WEIGHTS_{k}", buffers.add(weights, target=_ARRAY_BUFFER))
    indices = None
    if mesh.indices is not None:
        dtype = np.uint16 if mesh.num_vertices <= 65535 else np.uint32
        indices = buffers.add(mesh.indices.astype(dtype), target=_ELEMENT_ARRAY_BUFFER)
    color = [float(c) for c in mesh.base_color]
    gltf.materials.append(
        pygltflib.Material(
            name=mesh.name or None,
            pbrMetallicRoughness=pygltflib.PbrMetallicRoughness(
                baseColorFactor=color, metallicFactor=0.0, roughnessFactor=0.8
            ),
        )
    )
    primitive = pygltflib.Primitive(attributes=attributes, indices=indices, material=len(gltf.materials) - 1)
    gltf.meshes.append(pygltflib.Mesh(name=mesh.name or None, primitives=[primitive]))
    return len(gltf.meshes) - 1


def _add_clip(gltf: pygltflib.GLTF2, buffers: _BufferBuilder, clip: Clip, node_count: int, what: str) -> None:
    if clip.num_targets != node_count:
        raise InvalidInputError(f"clip {clip.name!r} targets {clip.num_targets} joints, the {what} has {node_count}")
    samplers, channels = [], []
    for channel in clip.channels:
        times = buffers.add(channel.times.astype(np.float32), min_max=True)
        values = channel.values.reshape(-1, channel.values.shape[-1]).astype(np.float32)
        samplers.append(
            pygltflib.AnimationSampler(input=times, output=buffers.add(values), interpolation=channel.interpolation)
        )
        target = pygltflib.AnimationChannelTarget(node=channel.target, path=channel.path)
        channels.append(pygltflib.AnimationChannel(sampler=len(samplers) - 1, target=target))
    extras = {"markers": {k: list(v) for k, v in (clip.markers or {}).items()}} if clip.markers else {}
    gltf.animations.append(pygltflib.Animation(name=clip.name, samplers=samplers, channels=channels, extras=extras))


def save_gltf(
    path: str | Path, skeleton: Skeleton, clips: Sequence[Clip] = (), meshes: Sequence[MeshData] = ()
) -> Path:
    """Write ``skeleton`` (joints as nodes 0..J-1), ``clips`` and skinned ``meshes`` to ``path``.

    ``.glb`` writes one binary file; ``.gltf`` writes JSON plus a ``.bin`` beside it. Returns the
    path written. Rotations are written as stored (unit quaternions, x y z w).
    """
    path = _checked_path(path)
    gltf = pygltflib.GLTF2(asset=pygltflib.Asset(version="2.0", generator="Ossa"))
    buffers = _BufferBuilder(gltf)
    children: list[list[int]] = [[] for _ in range(skeleton.num_joints)]
    for j, parent in enumerate(skeleton.parents):
        if parent >= 0:
            children[parent].append(j)
    for j, name in enumerate(skeleton.names):
        gltf.nodes.append(
            pygltflib.Node(
                name=name,
                children=children[j] or None,
                translation=[float(v) for v in skeleton.rest_translations[j]],
                rotation=[float(v) for v in skeleton.rest_rotations[j]],
                scale=[float(v) for v in skeleton.rest_scales[j]],
            )
        )
    roots = [int(j) for j in skeleton.levels[0]]
    scene_nodes = list(roots)
    if meshes:
        ibm = buffers.add(skeleton.inverse_bind_matrices.transpose(0, 2, 1).reshape(-1, 16).astype(np.float32))
        gltf.skins.append(
            pygltflib.Skin(joints=list(range(skeleton.num_joints)), inverseBindMatrices=ibm, skeleton=roots[0])
        )
        for mesh in meshes:
            index = _add_mesh(gltf, buffers, mesh, skeleton.num_joints)
            gltf.nodes.append(
                pygltflib.Node(name=mesh.name or f"mesh{index}", mesh=index, skin=0 if mesh.skinned else None)
            )
            scene_nodes.append(len(gltf.nodes) - 1)
    for clip in clips:
        _add_clip(gltf, buffers, clip, skeleton.num_joints, "skeleton")
    gltf.scenes.append(pygltflib.Scene(nodes=scene_nodes))
    gltf.scene = 0
    return _write(gltf, bytes(buffers.blob), path)


def _checked_path(path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in {".glb", ".gltf"}:
        raise InvalidInputError(f"path must end in .glb or .gltf, got {path.name!r}")
    return path


def _write(gltf: pygltflib.GLTF2, blob: bytes, path: Path, node_weights: dict[int, list[float]] | None = None) -> Path:
    """Save ``gltf`` with ``blob`` as its one buffer: a GLB, or JSON and a ``.bin`` beside it.

    ``node_weights`` are the nodes' default morph weights, which pygltflib's object model lacks:
    they are written into its JSON.
    """
    gltf.buffers = [pygltflib.Buffer(byteLength=len(blob))] if blob else []
    path.parent.mkdir(parents=True, exist_ok=True)
    glb = path.suffix.lower() == ".glb"
    if blob and not glb:
        bin_path = path.with_suffix(".bin")
        bin_path.write_bytes(blob)
        gltf.buffers[0].uri = bin_path.name
    if not node_weights:
        if glb:
            gltf.set_binary_blob(blob)
            gltf.save_binary(str(path))
        else:
            gltf.save_json(str(path))
        return path
    document = json.loads(gltf.to_json())
    for node, weights in node_weights.items():
        document["nodes"][node]["weights"] = weights
    text = json.dumps(document, separators=(",", ":"))
    if glb:
        path.write_bytes(glb_bytes(text, blob))
    else:
        path.write_text(text)
    return path


#: Image formats recognised by their first bytes → MIME type (glTF core, KHR_texture_basisu, EXT_texture_webp).
_IMAGE_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"\xabKTX 20\xbb", "image/ktx2"),
)


def _mime_type(data: bytes, given: str | None, where: str, file: str) -> str:
    if given:
        return given
    for signature, mime in _IMAGE_SIGNATURES:
        if data.startswith(signature):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise AssetError("cannot tell the image's format (not PNG, JPEG, KTX2 or WebP) to embed it", file=file, where=where)


def save_gltf_with_clips(source: str | Path, path: str | Path, clips: Sequence[Clip]) -> Path:
    """Write the glTF file ``source`` to ``path`` with its animations replaced by ``clips``.

    Everything else of the document is kept as it is (module docstring). Each clip's channels
    target glTF node indices of ``source`` (``clip.num_targets`` = its node count); markers go to
    ``extras.markers``. The animations' old data stays in the buffer, unreferenced.

    Raises
    ------
    AssetError
        If ``source`` cannot be read (see :class:`~engine.io.gltf.GltfDocument`), or an image to
        embed has an unknown format and no ``mimeType``.
    InvalidInputError
        If ``path`` does not end in ``.glb``/``.gltf`` or a clip does not target the file's nodes.
    """
    path = _checked_path(path)
    doc = GltfDocument(source)
    gltf = copy.deepcopy(doc.gltf)
    buffers = _BufferBuilder(gltf)
    compressed = {k for k, view in enumerate(doc.json.get("bufferViews", [])) if MESHOPT in view.get("extensions", {})}
    read = {view.buffer for k, view in enumerate(gltf.bufferViews or []) if k not in compressed}
    read |= {doc.json["bufferViews"][k]["extensions"][MESHOPT].get("buffer") for k in compressed}
    starts = {i: buffers.append(doc.buffer(i)) for i in range(doc.count("buffers")) if i in read}
    for k, view in enumerate(gltf.bufferViews or []):
        if k in compressed:  # written decompressed: the copy needs no decoder and no fallback buffer
            decoded, _ = doc.buffer_view(k, f"bufferViews[{k}]")
            view.byteOffset = buffers.append(bytes(decoded))
            del view.extensions[MESHOPT]
        else:
            view.byteOffset = starts[view.buffer] + (view.byteOffset or 0)
        view.buffer = 0
    if compressed:
        gltf.extensionsUsed = [name for name in gltf.extensionsUsed or [] if name != MESHOPT]
        gltf.extensionsRequired = [name for name in gltf.extensionsRequired or [] if name != MESHOPT]
    for i, image in enumerate(gltf.images or []):
        if image.uri is not None:
            data, _ = doc.image_bytes(i)
            image.mimeType = _mime_type(data, image.mimeType, f"images[{i}]", doc.file)
            image.bufferView = buffers.view(data)
            image.uri = None
    gltf.animations = []
    for clip in clips:
        _add_clip(gltf, buffers, clip, doc.count("nodes"), "file")
    weights = {n: node["weights"] for n, node in enumerate(doc.json.get("nodes", [])) if "weights" in node}
    return _write(gltf, bytes(buffers.blob), path, weights)
