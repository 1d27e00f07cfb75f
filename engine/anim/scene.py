"""A whole scene at run time: every node's world matrix, every skin, every mesh instance, per frame.

A :class:`Scene` is a node hierarchy stored as a depth-first :class:`~engine.anim.skeleton.Skeleton`
(``parents[i] < i``, roots are scene roots), its skins (joints as hierarchy indices with inverse
bind matrices), its mesh instances (a node, the primitives it draws, the skin deforming them or
``None``, default morph weights) and its clips. One frame of ``C`` characters, evaluated in one
place for everything that is drawn::

    pose (C, N) ──model_from_pose──▶ world (C, N, 4, 4)        every node, scene world space
                 └─ per skin: world[joints] @ inverse_bind ──▶ skin palettes (C, J, 4, 4)
    clip weights channels (or defaults) ──▶ morph weights per instance (C, T)

Drawing then follows glTF 2.0: a **skinned** instance's vertices are morphed, then skinned by its
skin's palette (its own node's transform is ignored, as the specification says); a **rigid**
instance's vertices are morphed, then moved by its node's world matrix — a rigid mesh under a
joint follows that joint, a mesh under an animated node moves with it.
:func:`instance_vertices` is the CPU reference of exactly that; ``engine.render`` draws the same
on the GPU.

The world space is the scene's: place a character with a ``(4, 4)`` transform on top of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.anim.clip import WEIGHTS_PATH, Channel, Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.mesh import MeshData
from engine.anim.morph import check_morph_weights, morph_vertices
from engine.anim.pose import Pose
from engine.anim.sampling import sample, sample_channel
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skin_vertices, skin_vertices_dq
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, readonly_copy
from engine.math.mat import transform_points


@dataclass(frozen=True, eq=False)
class SceneSkin:
    """One skin of a scene.

    Attributes
    ----------
    name
        The skin's name.
    joints
        ``(J,)`` hierarchy index of each palette entry, in the order the skinned meshes' joint
        indices refer to.
    inverse_bind_matrices
        ``(J, 4, 4)``; the palette is ``world[joints] @ inverse_bind_matrices``.
    """

    name: str
    joints: IntArray
    inverse_bind_matrices: FloatArray

    def __post_init__(self) -> None:
        joints = np.asarray(self.joints)
        if joints.ndim != 1 or joints.size == 0 or not np.issubdtype(joints.dtype, np.integer):
            raise InvalidInputError(f"joints must be a non-empty 1-D integer array, got shape {joints.shape}")
        ibm = as_array(self.inverse_bind_matrices, "inverse_bind_matrices", (4, 4))
        if ibm.shape != (joints.size, 4, 4):
            raise InvalidInputError(f"inverse_bind_matrices must have shape ({joints.size}, 4, 4), got {ibm.shape}")
        object.__setattr__(self, "joints", readonly_copy(joints.astype(np.intp)))
        object.__setattr__(self, "inverse_bind_matrices", readonly_copy(ibm))

    @property
    def num_joints(self) -> int:
        """Palette entries ``J``."""
        return int(self.joints.size)


@dataclass(frozen=True, eq=False)
class MeshInstance:
    """A node that draws a mesh.

    Attributes
    ----------
    node
        Hierarchy index of the node.
    skin
        Index into :attr:`Scene.skins` of the skin deforming the primitives, or ``None`` for a
        rigid instance (drawn with its node's world matrix).
    primitives
        The mesh's primitives, in the node's (bind) space; skinned ones index the skin's
        palette, and all have ``T`` morph targets.
    weights
        ``(T,)`` default morph-target weights (``T`` may be 0).
    name
        A label for messages and overlays.
    """

    node: int
    skin: int | None
    primitives: tuple[MeshData, ...]
    weights: FloatArray = field(default_factory=lambda: np.zeros(0))
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "primitives", tuple(self.primitives))
        weights = as_array(self.weights, "weights")
        if weights.ndim != 1:
            raise InvalidInputError(f"weights must be 1-D (one per morph target), got shape {weights.shape}")
        for p, primitive in enumerate(self.primitives):
            if not isinstance(primitive, MeshData):
                raise InvalidInputError(f"primitives[{p}] must be a MeshData, got {type(primitive).__name__}")
            if primitive.num_targets != weights.size:
                raise InvalidInputError(
                    f"primitives[{p}] ({primitive.name!r}) has {primitive.num_targets} morph targets but the "
                    f"instance has {weights.size} weights"
                )
            if primitive.skinned != (self.skin is not None):
                state = "skinned" if primitive.skinned else "not skinned"
                raise InvalidInputError(
                    f"primitives[{p}] ({primitive.name!r}) is {state} but the instance's skin is {self.skin}"
                )
        object.__setattr__(self, "weights", readonly_copy(weights))

    @property
    def num_targets(self) -> int:
        """Morph targets ``T`` of the instance's mesh."""
        return int(self.weights.size)


@dataclass(frozen=True, eq=False)
class SceneClip:
    """One animation of a scene: node transforms and morph-target weights.

    Attributes
    ----------
    name
        The clip's name.
    nodes
        Translation/rotation/scale channels over the hierarchy (``num_targets`` = nodes);
        sample it like any clip (:func:`~engine.anim.sampling.sample`).
    weights
        ``"weights"`` channels, each targeting the hierarchy index of a mesh instance's node, one
        value per morph target.
    """

    name: str
    nodes: Clip
    weights: tuple[Channel, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", tuple(self.weights))
        for k, channel in enumerate(self.weights):
            if channel.path != WEIGHTS_PATH:
                raise InvalidInputError(f"weights[{k}] must be a {WEIGHTS_PATH!r} channel, got {channel.path!r}")

    @property
    def duration(self) -> float:
        """Last key time over all channels."""
        return max([self.nodes.duration, *(c.end for c in self.weights)])


@dataclass(frozen=True, eq=False)
class SceneFrame:
    """One evaluated frame of a :class:`Scene` for a batch ``B`` of characters (usually ``(C,)``).

    Attributes
    ----------
    world
        ``(*B, N, 4, 4)`` world matrix of every hierarchy node.
    skin_palettes
        Per skin ``(*B, J, 4, 4)``: ``world[joints] @ inverse_bind``, bind space → world.
    morph_weights
        Per instance ``(*B, T)`` morph-target weights (``T`` may be 0).
    """

    world: FloatArray
    skin_palettes: tuple[FloatArray, ...]
    morph_weights: tuple[FloatArray, ...]

    @property
    def batch(self) -> tuple[int, ...]:
        """The leading batch shape ``B``."""
        return tuple(self.world.shape[:-3])


@dataclass(frozen=True, eq=False)
class Scene:
    """A node hierarchy with its skins, mesh instances and clips (see the module docstring).

    Attributes
    ----------
    hierarchy
        Every node, depth-first; its rest pose is the nodes' rest transforms.
    skins
        The skins; :attr:`MeshInstance.skin` indexes this tuple.
    instances
        Every node that draws a mesh, in hierarchy order.
    clips
        Clip name → :class:`SceneClip` (read-only mapping, file order).
    name
        A label (the file's name for loaded scenes).

    Examples
    --------
    Evaluate a clip for 3 characters at once and skin everything on the CPU::

        scene = load_gltf("Fox.glb").scene
        frame = scene.sample(scene.clips["Walk"], np.array([0.0, 0.3, 0.6]))
        for i, instance in enumerate(scene.instances):
            for p in range(len(instance.primitives)):
                positions, normals = instance_vertices(scene, frame, i, p)   # (3, V, 3) world
    """

    hierarchy: Skeleton
    skins: tuple[SceneSkin, ...]
    instances: tuple[MeshInstance, ...]
    clips: Mapping[str, SceneClip] = field(default_factory=dict)
    name: str = ""
    instance_of_node: Mapping[int, int] = field(init=False, repr=False)
    """Hierarchy index → index of the instance drawn at that node."""

    def __post_init__(self) -> None:
        count = self.hierarchy.num_joints
        object.__setattr__(self, "skins", tuple(self.skins))
        object.__setattr__(self, "instances", tuple(self.instances))
        for s, skin in enumerate(self.skins):
            if skin.joints.max() >= count or skin.joints.min() < 0:
                raise InvalidInputError(f"skins[{s}].joints must be hierarchy indices below {count}")
        nodes: dict[int, int] = {}
        for i, instance in enumerate(self.instances):
            if not 0 <= instance.node < count:
                raise InvalidInputError(f"instances[{i}].node = {instance.node} is not a hierarchy index below {count}")
            if instance.node in nodes:
                raise InvalidInputError(f"instances {nodes[instance.node]} and {i} share node {instance.node}")
            nodes[instance.node] = i
            if instance.skin is None:
                continue
            if not 0 <= instance.skin < len(self.skins):
                raise InvalidInputError(
                    f"instances[{i}].skin = {instance.skin} but the scene has {len(self.skins)} skins"
                )
            used = max((int(p.joints.max(initial=0)) for p in instance.primitives if p.joints is not None), default=0)
            if used >= self.skins[instance.skin].num_joints:
                raise SkeletonMismatchError(
                    f"instances[{i}] uses joint {used} but skin {instance.skin} has "
                    f"{self.skins[instance.skin].num_joints}"
                )
        object.__setattr__(self, "instance_of_node", MappingProxyType(nodes))
        clips = dict(self.clips)
        for clip in clips.values():
            self._check_clip(clip)
        object.__setattr__(self, "clips", MappingProxyType(clips))

    def _check_clip(self, clip: SceneClip) -> None:
        """Raise unless ``clip`` animates this hierarchy and weights of this scene's morphed instances."""
        count = self.hierarchy.num_joints
        if clip.nodes.num_targets != count:
            raise SkeletonMismatchError(
                f"clip {clip.name!r} animates {clip.nodes.num_targets} targets but the hierarchy has {count} nodes"
            )
        for channel in clip.weights:
            slot = self.instance_of_node.get(channel.target)
            if slot is None:
                raise InvalidInputError(
                    f"clip {clip.name!r} animates weights of node {channel.target}, which draws no mesh"
                )
            if channel.values.shape[-1] != self.instances[slot].num_targets:
                raise InvalidInputError(
                    f"clip {clip.name!r} animates {channel.values.shape[-1]} weights of node {channel.target}, "
                    f"whose mesh has {self.instances[slot].num_targets} morph targets"
                )

    # ------------------------------------------------------------------------------ evaluation

    def frame(self, world: Any, morph_weights: Sequence[Any] | None = None) -> SceneFrame:
        """A :class:`SceneFrame` from world matrices ``(*B, N, 4, 4)`` of every node.

        Use it when something else computed the world matrices (e.g. an ``Animator`` over
        :attr:`hierarchy`, whose model matrices are the scene's world matrices).

        Parameters
        ----------
        world
            ``(*B, N, 4, 4)`` world matrices.
        morph_weights
            Per instance ``(*B, T)`` (or broadcastable) weights; ``None`` takes the defaults.
        """
        world = as_array(world, "world", (4, 4))
        count = self.hierarchy.num_joints
        if world.ndim < 3 or world.shape[-3] != count:
            raise SkeletonMismatchError(f"world must have shape (..., {count}, 4, 4), got {world.shape}")
        batch = world.shape[:-3]
        palettes = tuple(world[..., skin.joints, :, :] @ skin.inverse_bind_matrices for skin in self.skins)
        if morph_weights is None:
            weights = self.default_morph_weights(batch)
        else:
            if len(morph_weights) != len(self.instances):
                raise InvalidInputError(
                    f"morph_weights must hold one array per instance ({len(self.instances)}), got {len(morph_weights)}"
                )
            weights = tuple(
                np.broadcast_to(
                    check_morph_weights(w, inst.num_targets, f"morph_weights[{i}]"), (*batch, inst.num_targets)
                )
                for i, (w, inst) in enumerate(zip(morph_weights, self.instances, strict=True))
            )
        return SceneFrame(world, palettes, weights)

    def evaluate(self, pose: Pose, morph_weights: Sequence[Any] | None = None) -> SceneFrame:
        """A :class:`SceneFrame` from a local pose ``(*B, N)`` of every node (see :meth:`frame`)."""
        return self.frame(model_from_pose(self.hierarchy, pose), morph_weights)

    def sample(self, clip: SceneClip | str, times: Any) -> SceneFrame:
        """Node transforms and morph weights of ``clip`` at ``times`` ``(*B,)`` (used as given), evaluated."""
        clip = self._clip(clip)
        return self.evaluate(
            sample(clip.nodes, self.hierarchy.rest_pose, times), self.sample_morph_weights(clip, times)
        )

    def rest_frame(self, batch: tuple[int, ...] = ()) -> SceneFrame:
        """The rest pose and default morph weights, repeated over ``batch``."""
        return self.evaluate(self.hierarchy.rest_pose.broadcast_to(batch))

    def default_morph_weights(self, batch: tuple[int, ...] = ()) -> tuple[FloatArray, ...]:
        """Per instance its default weights broadcast to ``(*batch, T)`` (read-only views)."""
        return tuple(np.broadcast_to(instance.weights, (*batch, instance.num_targets)) for instance in self.instances)

    def sample_morph_weights(self, clip: SceneClip | str, times: Any) -> tuple[FloatArray, ...]:
        """Per instance ``(*B, T)`` weights at ``times`` ``(*B,)``: the clip's channel, else the defaults.

        ``weights`` channels interpolate like translations (STEP, LINEAR, CUBICSPLINE by the glTF
        rules, clamped outside the keys).
        """
        clip = self._clip(clip)
        batch = np.shape(times)
        weights = list(self.default_morph_weights(batch))
        for channel in clip.weights:
            weights[self.instance_of_node[channel.target]] = sample_channel(channel, times)
        return tuple(weights)

    def pose_with_skin(self, skin: int, skin_pose: Pose, base: Pose | None = None) -> Pose:
        """A hierarchy pose ``(*B, N)``: ``base`` (default: the rest pose) with ``skin``'s joints from ``skin_pose``.

        ``skin_pose`` ``(*B, J)`` is a local pose over the skin's palette order (a loaded
        character's skeleton): each joint's parent there is its parent in the hierarchy, so the
        local transforms carry over unchanged.
        """
        joints = self.skins[skin].joints
        batch = skin_pose.shape[:-1]
        if skin_pose.shape[-1] != joints.size:
            raise SkeletonMismatchError(f"skin_pose must have shape (..., {joints.size}), got {skin_pose.shape}")
        pose = self.hierarchy.rest_pose.broadcast_to(batch) if base is None else base.copy()
        pose.translations[..., joints, :] = skin_pose.translations
        pose.rotations[..., joints, :] = skin_pose.rotations
        pose.scales[..., joints, :] = skin_pose.scales
        return pose

    def _clip(self, clip: SceneClip | str) -> SceneClip:
        if isinstance(clip, SceneClip):
            if clip is not self.clips.get(clip.name):
                self._check_clip(clip)
            return clip
        try:
            return self.clips[clip]
        except KeyError:
            raise InvalidInputError(f"no clip named {clip!r}; the scene's clips are {list(self.clips)}") from None


def instance_vertices(
    scene: Scene, frame: SceneFrame, instance: int, primitive: int, *, method: str = "lbs"
) -> tuple[FloatArray, FloatArray | None]:
    """World-space vertices of one primitive of one instance: morph, then skin or place (CPU reference).

    Parameters
    ----------
    scene, frame
        The scene and a frame of it, batch ``B``.
    instance, primitive
        Which :class:`MeshInstance` and which of its primitives.
    method
        ``"lbs"`` (linear blend) or ``"dqs"`` (dual quaternion) for skinned instances.

    Returns
    -------
    tuple
        Positions ``(*B, V, 3)`` and unit normals ``(*B, V, 3)`` (``None`` without normals).
    """
    if method not in ("lbs", "dqs"):
        raise InvalidInputError(f"method must be 'lbs' or 'dqs', got {method!r}")
    item = scene.instances[instance]
    mesh = item.primitives[primitive]
    positions, normals = morph_vertices(mesh, frame.morph_weights[instance])
    if item.skin is not None:
        skin = skin_vertices if method == "lbs" else skin_vertices_dq
        return skin(mesh, frame.skin_palettes[item.skin], positions=positions, normals=normals)
    world = frame.world[..., item.node, :, :]
    placed = transform_points(world[..., None, :, :], positions)
    if normals is None:
        return placed, None
    # the cofactor matrix (det · inverse transpose) times sign(det): defined for singular matrices too
    a, b, c = world[..., :3, 0], world[..., :3, 1], world[..., :3, 2]
    cofactor = np.stack((np.cross(b, c), np.cross(c, a), np.cross(a, b)), axis=-1)
    sign = np.where(np.sum(a * np.cross(b, c), axis=-1) < 0, -1.0, 1.0)[..., None, None]
    turned = sign * np.einsum("...ij,...vj->...vi", cofactor, normals)
    length = np.linalg.norm(turned, axis=-1, keepdims=True)
    return placed, turned / np.where(length > 0, length, 1.0)


def scene_vertices(scene: Scene, frame: SceneFrame, *, method: str = "lbs") -> FloatArray:
    """``(*B, P, 3)`` world positions of every vertex of every primitive of every instance.

    The concatenation of :func:`instance_vertices` in instance and primitive order: what a
    program measures to ground or frame a character from its animated shape.
    """
    parts = [
        instance_vertices(scene, frame, i, p, method=method)[0]
        for i, instance in enumerate(scene.instances)
        for p in range(len(instance.primitives))
    ]
    if not parts:
        return np.zeros((*frame.batch, 0, 3))
    return np.concatenate(parts, axis=-2)
