"""glTF document → runtime data: scene hierarchy, skins, clips and meshes, validated once.

:func:`load_gltf` opens a file with :class:`~engine.io.gltf.GltfDocument` and runs the stages in
order, each a function of what the previous ones returned (no shared mutable state):

1. :mod:`engine.io.meshes` counts each mesh's morph targets (animations need them);
2. :mod:`engine.io.nodes`: the node tree, rest transforms and the default scene's nodes
   depth-first;
3. :mod:`engine.io.animations`: every animation's channels, bound here to the hierarchy;
4. :mod:`engine.io.skins`: one skeleton per skin, with its joints' order and clips;
5. :mod:`engine.io.meshes`: the scene's mesh nodes and their primitives.

The result, a :class:`GltfAsset`, holds:

- ``hierarchy``: a :class:`~engine.anim.skeleton.Skeleton` over **every node of the default
  scene** in depth-first order (non-joint nodes matter: CesiumMan's joints sit under a rotated
  node), then the trees of joints its skins use outside it, with the glTF index and name of
  each entry;
- ``clips``: one :class:`~engine.anim.clip.Clip` per animation, translation/rotation/scale
  channels bound to hierarchy indices once, here (never by name at run time);
- ``skins``: per skin a joint :class:`Skeleton` (depth-first, inverse bind matrices), the map
  to glTF nodes, the rest transform above its root, and the clips re-bound to its joints;
- ``mesh_nodes``: each node of the scene that instantiates a mesh, with its primitives as
  :class:`~engine.anim.mesh.MeshData` (joint indices remapped to the skin skeleton's order);
- ``scene``: all of it as one runtime :class:`~engine.anim.scene.Scene` (every mesh instance,
  skinned or rigid, and clips with their morph-weight channels), evaluated per frame in one place.

Everything a runtime function would otherwise have to check is checked here, and every
failure raises :class:`~engine.errors.AssetError` naming the file, the JSON path (e.g.
``animations[0].samplers[2].input``) and what was wrong. Suspicious but readable data (weights
that do not sum to 1, non-unit quaternions, repeated key times) emits an
:class:`~engine.errors.OssaWarning` and is recorded in :attr:`GltfAsset.warnings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.anim.clip import WEIGHTS_PATH, Channel, Clip
from engine.anim.local_to_model import local_to_model
from engine.anim.scene import MeshInstance, Scene, SceneClip, SceneSkin
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError
from engine.io.animations import RawAnimation, bind_clip, read_animations
from engine.io.clip_files import ClipFile, attach_clips
from engine.io.extensions import ExtensionUse, extension_report
from engine.io.gltf import GltfDocument
from engine.io.meshes import MeshNode, mesh_target_counts, node_target_counts, read_mesh_nodes
from engine.io.nodes import joint_trees, read_default_scene, read_nodes, skeleton_over
from engine.io.reporting import warn_at_caller
from engine.io.skins import SkinData, read_skin
from engine.io.vrm import read_humanoid
from engine.math._checks import FloatArray, IntArray, readonly_copy

__all__ = ["GltfAsset", "MeshNode", "SkinData", "load_gltf"]


@dataclass(frozen=True, eq=False, repr=False)
class GltfAsset:
    """Everything Ossa reads from a glTF file, as validated read-only runtime data.

    Attributes
    ----------
    path
        The file read.
    hierarchy
        Every node of the default scene as one :class:`Skeleton` in depth-first order, then the
        trees outside it that hold joints of its skins (further roots, no mesh of theirs drawn);
        its rest pose is the nodes' TRS (matrices decomposed). World matrices are
        ``local_to_model(hierarchy, local)`` since scene roots have no parent.
    node_indices
        ``(H,)`` glTF node index of each hierarchy entry.
    node_names
        Original glTF name of each hierarchy entry (``None`` when unnamed); the hierarchy's
        own ``names`` are unique versions of these (``node<i>`` for unnamed nodes).
    clips
        One :class:`Clip` per glTF animation (same order), its translation/rotation/scale
        channels targeting hierarchy indices (morph weights are in :attr:`scene`'s clips).
    skins
        One :class:`SkinData` per glTF skin (same order).
    mesh_nodes
        The scene's nodes that instantiate meshes, in hierarchy order.
    scene
        The default scene as a runtime :class:`~engine.anim.scene.Scene`: :attr:`hierarchy`, the
        skins, one :class:`~engine.anim.scene.MeshInstance` per entry of :attr:`mesh_nodes`
        (same order) and one :class:`~engine.anim.scene.SceneClip` per animation (same order).
    scene_index
        Index of the scene used (the file's ``scene``, else 0), ``None`` for a file without scenes
        (then every root node is used).
    scene_count, node_count
        Number of scenes and of nodes in the file.
    warnings
        Text of every :class:`~engine.errors.OssaWarning` emitted while loading.
    extensions
        Every extension the file declares or uses, with what Ossa did with it.
    clip_files
        How each clip file given to :func:`load_gltf` (``clips=``) bound (its clips are in
        :attr:`clips`, the skins' clips and the scene's, after the file's own).
    """

    path: Path
    hierarchy: Skeleton
    node_indices: IntArray
    node_names: tuple[str | None, ...]
    clips: tuple[Clip, ...]
    skins: tuple[SkinData, ...]
    mesh_nodes: tuple[MeshNode, ...]
    scene: Scene
    scene_index: int | None
    scene_count: int
    node_count: int
    warnings: tuple[str, ...]
    extensions: tuple[ExtensionUse, ...] = ()
    clip_files: tuple[ClipFile, ...] = ()

    def __repr__(self) -> str:
        """One line: ``GltfAsset('Fox.glb', 24 nodes, 1 skins, 1 mesh nodes, 3 clips)``."""
        return (
            f"GltfAsset({self.path.name!r}, {self.hierarchy.num_joints} nodes, {len(self.skins)} skins, "
            f"{len(self.mesh_nodes)} mesh nodes, {len(self.clips)} clips)"
        )

    def hierarchy_index(self, gltf_node: int) -> int:
        """Hierarchy index of glTF node ``gltf_node``; raises if the node is not in the scene."""
        found = np.nonzero(self.node_indices == gltf_node)[0]
        if found.size == 0:
            raise AssetError(f"node {gltf_node} is not part of the default scene", file=str(self.path))
        return int(found[0])

    def rest_world(self) -> FloatArray:
        """``(H, 4, 4)`` world matrices of the hierarchy in its rest pose."""
        return local_to_model(self.hierarchy, self.hierarchy.rest_pose.matrices())

    def clip_index(self, name: str) -> int:
        """Index of the clip called ``name``."""
        for i, clip in enumerate(self.clips):
            if clip.name == name:
                return i
        raise AssetError(f"no clip named {name!r}; clips are {[c.name for c in self.clips]}", file=str(self.path))


def load_gltf(path: str | Path, *, textures: bool = True, clips: Sequence[str | Path] = ()) -> GltfAsset:
    """Read a ``.gltf`` or ``.glb`` file into a validated :class:`GltfAsset`.

    Parameters
    ----------
    path
        The file. External buffers and images are read relative to its folder.
    textures
        Decode base-colour textures into :attr:`MeshData.texture` (needs Pillow); ``False``
        skips the images (faster when only animation data is wanted).
    clips
        glTF files whose clips to add, bound to this file's nodes by name
        (:mod:`engine.io.clip_files`; :attr:`GltfAsset.clip_files` says what bound).

    Raises
    ------
    AssetError
        For anything malformed; the message names the file, the JSON path and the problem.

    Examples
    --------
    >>> from pathlib import Path
    >>> asset = load_gltf(Path("assets/mannequin.glb"))
    >>> asset.skins[0].skeleton.num_joints, [c.name for c in asset.clips][:2]
    (25, ['idle', 'walk'])
    """
    doc = GltfDocument(path)
    mesh_targets = mesh_target_counts(doc)
    nodes = read_nodes(doc)
    scene_index, scene_nodes = read_default_scene(doc, nodes)
    order = scene_nodes + joint_trees(doc, nodes, scene_nodes)
    humanoid = read_humanoid(doc)
    hierarchy = skeleton_over(nodes, order, humanoid=humanoid)
    position = {n: h for h, n in enumerate(order)}
    animations = read_animations(doc, node_target_counts(doc, mesh_targets))
    own_clips = tuple(_hierarchy_clip(doc, animation, position) for animation in animations)
    skins = tuple(read_skin(doc, i, nodes, animations, humanoid) for i in range(doc.count("skins")))
    mesh_nodes = read_mesh_nodes(doc, order, len(scene_nodes), skins, mesh_targets, textures=textures)
    scene = _scene(doc, hierarchy, position, skins, mesh_nodes, animations, own_clips)
    extensions = extension_report(doc)
    for text in doc.warnings:
        warn_at_caller(f"{doc.file}: {text}")
    asset = GltfAsset(
        path=doc.path,
        hierarchy=hierarchy,
        node_indices=readonly_copy(np.asarray(order, dtype=np.intp)),
        node_names=tuple(doc.gltf.nodes[n].name for n in order),
        clips=own_clips,
        skins=skins,
        mesh_nodes=mesh_nodes,
        scene=scene,
        scene_index=scene_index,
        scene_count=doc.count("scenes"),
        node_count=nodes.count,
        warnings=tuple(doc.warnings),
        extensions=extensions,
    )
    if not clips:
        return asset
    return attach_clips(asset, [load_gltf(file, textures=False) for file in clips])


def _hierarchy_clip(doc: GltfDocument, animation: RawAnimation, position: dict[int, int]) -> Clip:
    """The animation's transform channels on hierarchy indices; channels of nodes outside the scene warn."""
    clip, outside = bind_clip(animation, position, len(position))
    for raw in outside:
        doc.warn(
            f"node {raw.node} is not in the default scene; its {raw.path} channel is skipped",
            f"animations[{animation.index}]",
        )
    return clip


def _scene(
    doc: GltfDocument,
    hierarchy: Skeleton,
    position: dict[int, int],
    skins: tuple[SkinData, ...],
    mesh_nodes: tuple[MeshNode, ...],
    animations: tuple[RawAnimation, ...],
    clips: tuple[Clip, ...],
) -> Scene:
    """The runtime :class:`Scene` of the default scene (morph channels of nodes that draw no mesh in it warn)."""
    in_scene = [skin for skin in skins if all(int(n) in position for n in skin.joint_nodes)]
    skin_slot = {skin.index: k for k, skin in enumerate(in_scene)}  # a skin outside the scene has none
    scene_skins = tuple(
        SceneSkin(
            skin.name,
            np.array([position[int(n)] for n in skin.joint_nodes], dtype=np.intp),
            skin.skeleton.inverse_bind_matrices,
        )
        for skin in in_scene
    )
    instances = tuple(
        MeshInstance(
            node.node,
            None if node.skin is None else skin_slot[node.skin],
            node.primitives,
            node.weights,
            doc.gltf.meshes[node.mesh].name or f"mesh{node.mesh}",
        )
        for node in mesh_nodes
    )
    drawn = {instance.node for instance in instances}
    scene_clips = {}
    for animation, clip in zip(animations, clips, strict=True):
        morph: list[Channel] = []
        for raw in animation.channels:
            if raw.path != WEIGHTS_PATH:
                continue
            if position.get(raw.node) not in drawn:  # outside the scene, or a joint of its skins only
                where = (
                    "is not in the default scene" if raw.node not in position else "draws no mesh in the default scene"
                )
                doc.warn(f"node {raw.node} {where}; its weights channel is skipped", f"animations[{animation.index}]")
                continue
            morph.append(Channel(position[raw.node], raw.path, raw.interpolation, raw.times, raw.values))
        scene_clips[clip.name] = SceneClip(clip.name, clip, tuple(morph))
    return Scene(hierarchy, scene_skins, instances, scene_clips, name=doc.path.name)
