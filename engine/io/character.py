"""One skinned character out of a glTF file: the convenience game code starts from."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.anim.clip import Clip, Clips
from engine.anim.mesh import MeshData
from engine.anim.scene import Scene
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, OssaWarning
from engine.io.build import GltfAsset, SkinData, load_gltf
from engine.math._checks import FloatArray


@dataclass(frozen=True, eq=False)
class Character:
    """A skin's skeleton, its clips and the meshes it deforms, with the transforms around them.

    Attributes
    ----------
    name
        The skin's name.
    skeleton
        The skin's joints in depth-first order, rest pose and inverse bind matrices.
    clips
        Clip name → :class:`Clip` over ``skeleton``'s joints (read-only mapping, file order).
        Channels of nodes that are not joints of the skin are left out.
    meshes
        Every primitive skinned by this skin (:class:`MeshData`, joint indices into ``skeleton``).
    root_transform
        ``(4, 4)`` world transform of the node above the skeleton's root (identity when the root
        is a scene root): ``world(joint) = root_transform @ model(joint)``. CesiumMan and Fox
        need it (a Z-up correction node above the skeleton).
    mesh_transforms
        ``(4, 4)`` world transform of the node of each entry of ``meshes``, for the spec's joint
        matrices ``inverse(mesh_transform) @ world(joint) @ inverse_bind``. The spec ignores a
        skinned mesh node's own transform when drawing: skinned world positions are
        ``root_transform @ palette`` applied to the bind-space vertices.
    skin
        The underlying :class:`~engine.io.build.SkinData` (glTF joint order, node indices).
    asset
        The whole loaded file.

    Examples
    --------
    Sample a clip and get world-space skinning matrices (code, not run here)::

        fox = load_character("Fox.glb")
        pose = sample(fox.clips["Walk"], fox.skeleton.rest_pose, 0.25)  # engine.anim.sampling
        model = model_from_pose(fox.skeleton, pose)                     # (J, 4, 4) model space
        palette = fox.root_transform @ skinning_palette(fox.skeleton, model)
        positions, normals = skin_vertices(fox.meshes[0], palette)      # world space
    """

    name: str
    skeleton: Skeleton
    clips: Mapping[str, Clip]
    meshes: tuple[MeshData, ...]
    root_transform: FloatArray
    mesh_transforms: tuple[FloatArray, ...]
    skin: SkinData
    asset: GltfAsset

    @property
    def scene(self) -> Scene:
        """The file's whole default scene (every skin, rigid mesh and animated node): ``asset.scene``."""
        return self.asset.scene

    @property
    def scene_skin(self) -> int:
        """Index of this character's skin in ``scene.skins``.

        ``scene.pose_with_skin(scene_skin, pose)`` turns a pose of :attr:`skeleton` into a pose of
        the whole scene.

        Raises
        ------
        AssetError
            If the skin's joints are not all in the default scene (then the scene has no such skin).
        """
        if not _in_scene(self.asset, self.skin):
            raise AssetError(f"skin {self.skin.index} has joints outside the default scene", file=str(self.asset.path))
        return sum(1 for s in self.asset.skins[: self.skin.index] if _in_scene(self.asset, s))


def _in_scene(asset: GltfAsset, skin: SkinData) -> bool:
    return bool(np.isin(skin.joint_nodes, asset.node_indices).all())


def load_character(path: str | Path, skin: int = 0, *, textures: bool = True) -> Character:
    """Load glTF file ``path`` and return skin ``skin`` as a :class:`Character`.

    Warns (:class:`~engine.errors.OssaWarning`) when a clip animates a node above the
    skeleton's root: the character's ``root_transform`` is the rest transform, so that motion is
    not played.

    Raises
    ------
    AssetError
        If the file is malformed or has no skin ``skin``.

    Examples
    --------
    >>> mannequin = load_character("assets/mannequin.glb")
    >>> mannequin.skeleton.num_joints, sorted(mannequin.clips)[:3]
    (25, ['idle', 'jump', 'lean_look'])
    """
    asset = load_gltf(path, textures=textures)
    if not 0 <= skin < len(asset.skins):
        raise AssetError(f"skin {skin} requested but the file has {len(asset.skins)} skin(s)", file=str(path))
    data = asset.skins[skin]
    scene_index = {int(n): h for h, n in enumerate(asset.node_indices)}
    ancestors: set[int] = set()
    h = scene_index.get(data.root_parent, -1)
    while h >= 0:
        ancestors.add(h)
        h = int(asset.hierarchy.parents[h])
    for clip in asset.clips:
        moved = sorted(int(asset.node_indices[h]) for h in {c.target for c in clip.channels} & ancestors)
        if moved:
            warnings.warn(
                f"{path}: clip {clip.name!r} animates nodes {moved} above the skeleton of skin {skin}; "
                "the character keeps their rest transform",
                OssaWarning,
                stacklevel=2,
            )
    meshes: list[MeshData] = []
    transforms: list[FloatArray] = []
    world = asset.rest_world()
    world.flags.writeable = False
    for mesh_node in asset.mesh_nodes:
        if mesh_node.skin == skin:
            meshes.extend(mesh_node.primitives)
            transforms.extend([world[mesh_node.node]] * len(mesh_node.primitives))
    return Character(
        name=data.name,
        skeleton=data.skeleton,
        clips=Clips(data.clips),
        meshes=tuple(meshes),
        root_transform=data.root_transform,
        mesh_transforms=tuple(transforms),
        skin=data,
        asset=asset,
    )
