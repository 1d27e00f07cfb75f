"""glTF materials → what Ossa draws: base colour and its texture, emissive colour, unlit shading.

A primitive's :class:`Material` is read once per material index:

- ``pbrMetallicRoughness.baseColorFactor`` and ``baseColorTexture`` (the texture decoded from its
  image once per load; ``EXT_texture_webp`` and ``EXT_texture_avif`` sources are decoded by
  Pillow, a ``KHR_texture_basisu`` (KTX2) source cannot be, so its texture falls back to the
  core ``source`` when there is one and is otherwise left out, with one warning per file);
- ``KHR_texture_transform`` on the base-colour texture as a 2-D affine map of the texture
  coordinates (:func:`uv_transform`), which the mesh reader applies to the coordinates once
  (exact: they serve that texture only) along with the extension's ``texCoord`` override;
- ``emissiveFactor`` times ``KHR_materials_emissive_strength`` (only without an
  ``emissiveTexture``, which Ossa does not draw: a factor meant to tint a texture would light the
  whole surface);
- ``KHR_materials_unlit``: drawn with the base colour, no lighting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.io.extensions import extension_object, integer, number, number_list
from engine.io.fields import numbers
from engine.io.gltf import GltfDocument, RefusedUriError, UnreadableFileError
from engine.io.images import decode_image
from engine.math._checks import FloatArray

#: Texture extensions whose ``source`` replaces the core one, with whether Pillow decodes it.
IMAGE_EXTENSIONS = {"EXT_texture_webp": True, "EXT_texture_avif": True, "KHR_texture_basisu": False}


@dataclass(frozen=True, eq=False)
class Material:
    """What Ossa draws of one glTF material.

    Attributes
    ----------
    base_color
        ``(4,)`` linear RGBA factor.
    texture
        ``(H, W, 4)`` uint8 RGBA base-colour image, or ``None``.
    texcoord
        The ``TEXCOORD_n`` set the texture reads.
    uv_transform
        ``(2, 3)`` affine map of the texture coordinates (``KHR_texture_transform``): ``uv' = A @ (u, v, 1)``;
        ``None`` for none.
    emissive
        ``(3,)`` linear RGB light the surface emits.
    unlit
        Whether it is drawn without lighting (``KHR_materials_unlit``).
    """

    base_color: FloatArray = field(default_factory=lambda: np.ones(4))
    texture: np.ndarray | None = None
    texcoord: int = 0
    uv_transform: FloatArray | None = None
    emissive: FloatArray = field(default_factory=lambda: np.zeros(3))
    unlit: bool = False


def uv_transform(offset: Any, rotation: float, scale: Any) -> FloatArray:
    """``(2, 3)`` affine map of ``KHR_texture_transform``: scale, then rotate, then offset.

    The rotation turns the coordinates by ``rotation`` radians counter-clockwise in the texture's
    (u right, v down) frame, ``u' = u cos r + v sin r``, ``v' = v cos r − u sin r`` (the spec's
    example: offset ``(0, 1)``, rotation π/2 and scale ½ reads the lower-left quadrant).

    Examples
    --------
    >>> a = uv_transform([0.0, 1.0], np.pi / 2, [0.5, 0.5])
    >>> (a @ [[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]).round(12).T.tolist()
    [[0.0, 1.0], [0.0, 0.5], [0.5, 0.5], [0.5, 1.0]]
    """
    c, s = np.cos(rotation), np.sin(rotation)
    rotate = np.array([[c, s], [-s, c]])
    return np.concatenate([rotate * np.asarray(scale, dtype=np.float64), np.asarray(offset, float)[:, None]], axis=1)


class Materials:
    """The materials of a document, each read (and its image decoded) once per load."""

    def __init__(self, doc: GltfDocument, textures: bool) -> None:
        self.doc = doc
        self.textures = textures
        self._images: dict[int, np.ndarray | None] = {}
        self._materials: dict[int, Material] = {}

    def read(self, index: Any, where: str) -> Material:
        """The material ``index`` of a primitive at ``where`` (``None``: the default material)."""
        if index is None:
            return Material()
        m = self.doc.index(index, self.doc.count("materials"), f"{where}.material", "materials")
        if m not in self._materials:
            self._materials[m] = self._read(m)
        return self._materials[m]

    def _read(self, m: int) -> Material:
        doc = self.doc
        json = doc.json["materials"][m]
        where = f"materials[{m}]"
        pbr = json.get("pbrMetallicRoughness", {})
        base = numbers(doc, pbr.get("baseColorFactor"), 4, f"{where}.pbrMetallicRoughness.baseColorFactor", [1.0] * 4)
        texture, texcoord, transform = None, 0, None
        info = pbr.get("baseColorTexture")
        if info is not None:
            iwhere = f"{where}.pbrMetallicRoughness.baseColorTexture"
            t = doc.index(info.get("index"), doc.count("textures"), f"{iwhere}.index", "textures")
            texcoord = info.get("texCoord", 0)
            moved = extension_object(doc, info, "KHR_texture_transform", iwhere)
            if moved is not None:
                twhere = f"{iwhere}.extensions.KHR_texture_transform"
                texcoord = integer(doc, moved, "texCoord", twhere, texcoord)
                transform = uv_transform(
                    number_list(doc, moved, "offset", twhere, [0.0, 0.0]),
                    number(doc, moved, "rotation", twhere, 0.0),
                    number_list(doc, moved, "scale", twhere, [1.0, 1.0]),
                )
            texture = self._texture(t) if self.textures else None
        emissive = numbers(doc, json.get("emissiveFactor"), 3, f"{where}.emissiveFactor", [0.0] * 3)
        strength = extension_object(doc, json, "KHR_materials_emissive_strength", where)
        if strength is not None:
            emissive = emissive * number(
                doc, strength, "emissiveStrength", f"{where}.extensions.KHR_materials_emissive_strength", 1.0
            )
        if "emissiveTexture" in json:
            emissive = np.zeros(3)
        unlit = extension_object(doc, json, "KHR_materials_unlit", where) is not None
        return Material(base, texture, texcoord, transform, emissive, unlit)

    def _texture(self, t: int) -> np.ndarray | None:
        """The decoded image of ``textures[t]``: its extension's source when Pillow decodes it, else the core one."""
        doc = self.doc
        where = f"textures[{t}]"
        texture = doc.json["textures"][t]
        source = texture.get("source")
        for name, decodable in IMAGE_EXTENSIONS.items():
            extension = extension_object(doc, texture, name, where)
            if extension is None:
                continue
            if decodable:
                source = extension.get("source")
                break
            if source is None:
                doc.warn(f"{name}: its KTX2 images cannot be decoded here; textures without a fallback are not drawn")
                doc.note_extension(name, "KTX2 images not decoded (no decoder installed): drawn untextured")
                return None
            doc.note_extension(name, "KTX2 images not decoded (no decoder installed): the fallback images are drawn")
        if source is None:
            return None
        image = doc.index(source, doc.count("images"), f"{where}.source", "images")
        if image not in self._images:
            self._images[image] = self._image(image)
        return self._images[image]

    def _image(self, image: int) -> np.ndarray | None:
        doc = self.doc
        try:
            data, origin = doc.image_bytes(image)
        except (UnreadableFileError, RefusedUriError) as exc:  # a missing or unreadable texture warns
            doc.warn(f"{exc.problem}; texture skipped", exc.where)
            return None
        try:
            return decode_image(data)
        except ValueError as exc:
            doc.warn(f"cannot decode the image from {origin}: {exc}; texture skipped", f"images[{image}]")
            return None
