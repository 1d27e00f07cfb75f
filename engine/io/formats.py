"""Files that are not glTF, told apart by their first bytes (or suffix) so that an error can say what they are.

A user hands ``load_character`` or ``ossa inspect`` whatever they have: a BVH take, an FBX or OBJ
export, a texture. Parsing such a file as glTF JSON would report "not valid JSON at line 1";
:func:`foreign_format` names the format instead, and :data:`ACCEPTED` says what is read.
"""

from __future__ import annotations

from pathlib import Path

#: What the glTF loaders read.
ACCEPTED = "glTF 2.0: .gltf (JSON), .glb or .vrm (binary glTF)"

#: Leading bytes of formats users mistake for glTF, and what to say about each.
_MAGIC = (
    (b"HIERARCHY", "a BVH motion-capture take (read it with engine.io.load_bvh or load_bvh_character)"),
    (b"Kaydara FBX Binary", "an FBX file (convert it to glTF first: FBX2glTF, Blender or assimp)"),
    (b"; FBX", "an ASCII FBX file (convert it to glTF first: FBX2glTF, Blender or assimp)"),
    (b"xof ", "a DirectX .x file (convert it to glTF first, e.g. with assimp)"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"PK\x03\x04", "a zip archive (unpack it: the .gltf/.glb is inside)"),
    (b"BLENDER", "a Blender file (export it as glTF from Blender)"),
)
#: Suffixes of text formats without a reliable magic, and what to say about them.
_SUFFIXES = {
    ".bvh": "a BVH motion-capture take (read it with engine.io.load_bvh or load_bvh_character)",
    ".fbx": "an FBX file (convert it to glTF first: FBX2glTF, Blender or assimp)",
    ".obj": "a Wavefront OBJ file (no skeleton or animation; convert it to glTF first)",
    ".dae": "a COLLADA file (convert it to glTF first, e.g. with assimp or Blender)",
    ".x": "a DirectX .x file (convert it to glTF first, e.g. with assimp)",
}


def foreign_format(path: Path, raw: bytes) -> str | None:
    r"""What ``raw`` (the bytes of ``path``) is when it is recognisably not glTF, else ``None``.

    >>> foreign_format(Path("walk.bvh"), b"HIERARCHY\nROOT Hips")
    'a BVH motion-capture take (read it with engine.io.load_bvh or load_bvh_character)'
    >>> foreign_format(Path("model.gltf"), b'{"asset": {}}') is None
    True
    """
    start = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    if start[:1] == b"{":
        return None  # JSON: glTF or not, the JSON reader says what is wrong with it
    for magic, what in _MAGIC:
        if start.startswith(magic):
            return what
    return _SUFFIXES.get(path.suffix.lower())
