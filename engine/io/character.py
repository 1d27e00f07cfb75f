"""One skinned character out of a glTF file: the convenience game code starts from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.anim.clip import Clip, Clips
from engine.anim.mesh import MeshData
from engine.anim.scene import Scene
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError
from engine.io.build import GltfAsset, SkinData, load_gltf
from engine.io.reporting import warn_at_caller
from engine.math._checks import FloatArray


@dataclass(frozen=True, eq=False, repr=False)
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

    def __repr__(self) -> str:
        """One line: ``Character('body', 25 joints, 9 clips, 3 meshes, from 'mannequin.glb')``."""
        return (
            f"Character({self.name!r}, {self.skeleton.num_joints} joints, {len(self.clips)} clips, "
            f"{len(self.meshes)} meshes, from {self.asset.path.name!r})"
        )

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


def load_character(
    path: str | Path, skin: int = 0, *, textures: bool = True, clips: Sequence[str | Path] = ()
) -> Character:
    """Load glTF file ``path`` and return skin ``skin`` as a :class:`Character`.

    ``clips`` are glTF files whose clips are added, bound to the character's nodes by name
    (:func:`engine.io.load_gltf`; ``character.asset.clip_files`` reports what bound): the
    animation-only files of an asset pack. A clip file that leaves some of the character's joints
    unanimated warns once. One warning, too, names the clips that move a node above the
    skeleton's root away from its rest transform: the character's ``root_transform`` is the rest
    transform, so that motion is not played.

    Raises
    ------
    AssetError
        If the file is malformed, has no skin ``skin``, or a clip file binds to none of its nodes.

    Examples
    --------
    >>> mannequin = load_character("assets/mannequin.glb")
    >>> mannequin.skeleton.num_joints, sorted(mannequin.clips)[:3]
    (25, ['idle', 'jump', 'lean_look'])
    """
    asset = load_gltf(path, textures=textures, clips=clips)
    if not 0 <= skin < len(asset.skins):
        raise AssetError(f"skin {skin} requested but the file has {len(asset.skins)} skin(s)", file=str(path))
    data = asset.skins[skin]
    for clip_file in asset.clip_files:
        if clip_file.not_animated:
            warn_at_caller(f"{path}: clips from {clip_file.report()}")
    moving, nodes = _moving_above(asset, data)
    if moving:
        names = ", ".join(repr(name) for name in moving[:4])
        names += f" and {len(moving) - 4} more" if len(moving) > 4 else ""
        warn_at_caller(
            f"{path}: clip(s) {names} move nodes {nodes} above the skeleton of skin {skin}; the character keeps "
            "their rest transform"
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


#: A key this close to a node's rest value (translation, scale: relative; rotation: 1 − |q·r|) leaves it at rest.
REST_TOLERANCE = 1e-6


def _moving_above(asset: GltfAsset, skin: SkinData) -> tuple[list[str], list[int]]:
    """The clips that move a node above ``skin``'s skeleton away from its rest transform, and those glTF nodes."""
    position = {int(n): h for h, n in enumerate(asset.node_indices)}
    ancestors: set[int] = set()
    h = position.get(skin.root_parent, -1)
    while h >= 0:
        ancestors.add(h)
        h = int(asset.hierarchy.parents[h])
    rest = asset.hierarchy.rest_pose
    moving: list[str] = []
    nodes: set[int] = set()
    for clip in asset.clips:
        for channel in clip.channels:
            if channel.target not in ancestors:
                continue
            keys = channel.values[:, 1] if channel.interpolation == "CUBICSPLINE" else channel.values
            if channel.path == "rotation":
                away = 1.0 - np.abs(keys @ rest.rotations[channel.target])
            else:
                value = (rest.translations if channel.path == "translation" else rest.scales)[channel.target]
                away = np.linalg.norm(keys - value, axis=-1) / max(1.0, float(np.linalg.norm(value)))
            if away.max() > REST_TOLERANCE:
                nodes.add(int(asset.node_indices[channel.target]))
                if clip.name not in moving:
                    moving.append(clip.name)
    return moving, sorted(nodes)
