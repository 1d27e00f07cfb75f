"""A BVH take as a drawable character: a bone mesh, a glTF file, or a :class:`Character` in memory.

:func:`bone_mesh` gives a skeleton a skinned mesh of one octahedral bone per parent–child pair
(:func:`skin_bones` a scene's skin, at its bind pose: what the programs draw for a file of clips
without a mesh); :func:`save_bvh_as_gltf` writes a take with it (``ossa convert``); :func:`load_bvh_character`
returns what :func:`~engine.io.character.load_character` returns for a glTF file, so programs can
take ``--model walk.bvh`` like any character.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.local_to_model import local_to_model
from engine.anim.mesh import MeshData
from engine.anim.scene import Scene
from engine.anim.skeleton import Skeleton
from engine.io.bvh import BvhAnimation, load_bvh
from engine.io.character import Character, load_character
from engine.io.gltf_writer import save_gltf
from engine.math import affine_inverse, any_perpendicular, vec_cross

#: Colour of the generated bone mesh (linear RGBA).
BONE_COLOR = np.array([0.9, 0.75, 0.35, 1.0])


def bone_mesh(skeleton: Skeleton, *, width: float = 0.12) -> MeshData:
    """A flat-shaded octahedral bone from every joint with a parent to that parent, rigidly skinned.

    Each bone spans the two joints' rest model positions, is ``width`` × its length wide at a
    tenth of the way from the parent, and follows the parent joint (weight 1). Bones of zero length
    are skipped. Returns a non-indexed triangle list in the skeleton's bind (rest model) space.
    """
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())[:, :3, 3]
    return _bones(model, skeleton.parents, width)


def skin_bones(scene: Scene, skin: int, *, width: float = 0.12) -> MeshData:
    """:func:`bone_mesh` for skin ``skin`` of ``scene``: a bone from each joint to its nearest ancestor in the skin.

    At the bind pose (the inverse bind matrices' inverses), its joint indices the skin's palette
    entries: drawn with the skin, it follows the joints as a skinned mesh of the file would.
    """
    joints = scene.skins[skin].joints
    palette = {int(node): k for k, node in enumerate(joints)}
    parents = scene.hierarchy.parents
    above = np.full(joints.size, -1, dtype=np.intp)
    for k, node in enumerate(joints):  # at load time: one walk up the hierarchy per joint
        parent = int(parents[node])
        while parent >= 0 and parent not in palette:
            parent = int(parents[parent])
        above[k] = palette.get(parent, -1)
    bind = affine_inverse(scene.skins[skin].inverse_bind_matrices)[:, :3, 3]
    return _bones(bind, above, width)


def _bones(positions: np.ndarray, parents: np.ndarray, width: float) -> MeshData:
    """Bones from joints at ``positions`` ``(J, 3)`` to their ``parents`` ``(J,)`` (-1: none), as :func:`bone_mesh`."""
    child = np.nonzero(parents >= 0)[0]
    parent = parents[child]
    bone = positions[child] - positions[parent]
    length = np.linalg.norm(bone, axis=-1)
    keep = length > 1e-9
    child, parent, bone, length = child[keep], parent[keep], bone[keep], length[keep]
    u = any_perpendicular(bone) * (width * length)[:, None]
    v = vec_cross(bone / length[:, None], u)
    base, tip = positions[parent], positions[child]
    ring = base[:, None] + 0.1 * bone[:, None] + np.stack((u, v, -u, -v), axis=1)  # (B, 4, 3)
    nxt = np.roll(ring, -1, axis=1)
    faces = np.concatenate(
        (
            np.stack((np.broadcast_to(base[:, None], ring.shape), nxt, ring), axis=2),
            np.stack((ring, nxt, np.broadcast_to(tip[:, None], ring.shape)), axis=2),
        ),
        axis=1,
    )  # (B, 8, 3 corners, 3)
    normals = vec_cross(faces[..., 1, :] - faces[..., 0, :], faces[..., 2, :] - faces[..., 0, :])
    normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
    count = faces.shape[0] * 24
    joints = np.zeros((count, 4), dtype=np.intp)
    joints[:, 0] = np.repeat(parent, 24)
    weights = np.zeros((count, 4))
    weights[:, 0] = 1.0
    return MeshData(
        positions=faces.reshape(-1, 3),
        normals=np.repeat(normals, 3, axis=-2).reshape(-1, 3),
        joints=joints,
        weights=weights,
        base_color=BONE_COLOR,
        name="bones",
    )


def save_bvh_as_gltf(anim: BvhAnimation, path: str | Path, *, mesh: bool = True) -> Path:
    """Write ``anim``'s skeleton, captured clip and (with ``mesh``) :func:`bone_mesh` as a glTF file; returns the path.

    The clip is :attr:`~engine.io.bvh.BvhAnimation.captured_clip`: a converter's calibration frame
    is left out.
    """
    return save_gltf(path, anim.skeleton, [anim.captured_clip], [bone_mesh(anim.skeleton)] if mesh else [])


def load_bvh_character(path: str | Path, *, scale: float | None = None, axes: str | Any = "y_up") -> Character:
    """The BVH take at ``path`` as a :class:`~engine.io.character.Character` with a bone mesh.

    The take is read by :func:`~engine.io.bvh.load_bvh` (``scale`` ``None``: the unit is detected
    from the skeleton's height, with an :class:`~engine.errors.OssaWarning` when it is not
    centimetres) and made a character by :func:`bvh_as_character`.

    Raises
    ------
    AssetError
        If the file cannot be read or is not valid BVH (with ``where="line N"``).
    InvalidInputError
        For a non-positive ``scale`` or an unknown ``axes``.
    """
    return bvh_as_character(load_bvh(path, scale=scale, axes=axes))


def bvh_as_character(anim: BvhAnimation) -> Character:
    """``anim`` as a :class:`~engine.io.character.Character`: exactly what ``ossa convert`` writes, read back.

    Written as a GLB with :func:`bone_mesh` into a temporary folder and read back by
    :func:`~engine.io.character.load_character`: one skin over the BVH joints (End Sites included),
    the captured take as its one clip (named after the file; a calibration frame left out), the
    bone mesh. ``character.asset.path`` names the temporary file, which is gone.
    """
    with tempfile.TemporaryDirectory(prefix="ossa-bvh-") as folder:
        return load_character(save_bvh_as_gltf(anim, Path(folder) / f"{anim.clip.name}.glb"), textures=False)
