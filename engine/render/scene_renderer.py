"""Every mesh of a scene on the GPU for many characters: two uploads, one instanced draw per primitive.

The uploads are one palette (every character's records) and one block of morph weights.

Record layout
-------------
A character's palette records (:class:`SceneRecords`, one
:class:`~engine.render.storage_buffers.PaletteBuffer` for the whole scene) are the scene's node
hierarchy — record ``n`` is node ``n``'s world matrix times the inverse bind matrix of the skin
joint at that node (identity elsewhere) — then extra records only where a skin's joints are not a
contiguous run of nodes, two skins bind a node differently, or a rigid mesh sits on a bound
joint. So each skin's palette is a contiguous run of records, and a **rigid** mesh instance is
drawn as a mesh skinned 100 % to its node's record (:class:`~engine.render.skinned_mesh.SkinnedMesh`):
a helmet under a head joint, a prop under an animated node and a skinned body go through the
same shaders, instanced the same way, in the same pass; a morph target works the same on all of
them. The records are a skeleton's palette (:attr:`SceneRecords.skeleton`: the hierarchy with the
binds, plus one child joint at identity per extra record), so a player over that skeleton writes
them in one pass, ready to upload (:meth:`SceneRenderer.draw_records`); :meth:`SceneRenderer.draw`
makes them from a :class:`~engine.anim.scene.SceneFrame` the same way. The demo's crowd uses the
same layout.

Morph weights are laid out likewise: each character's block holds every morphed instance's
``T`` weights (:class:`~engine.render.storage_buffers.MorphWeightBuffer`,
:class:`engine.player.MorphTargets`).

World space is the scene's (:class:`~engine.anim.scene.SceneFrame`); ``instance_transforms``
place each character in the game world on top of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import moderngl
import numpy as np

from engine.anim.clip import Clip
from engine.anim.mesh import MeshData
from engine.anim.scene import Scene, SceneFrame
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray
from engine.render.skinned_mesh import SkinnedMesh
from engine.render.storage_buffers import MorphWeightBuffer, PaletteBuffer, SkinningMethod


@dataclass(frozen=True, eq=False)
class SceneRecords:
    """Where each mesh instance of a scene finds its palette records (see the module docstring).

    Attributes
    ----------
    skeleton
        The scene's hierarchy with skin inverse binds at the skins' joints, then one extra joint
        per extra record (a child of its node at identity, carrying that record's inverse bind).
    offsets
        First record of each mesh instance (the ``joint_offset`` of its draws).
    nodes
        ``N``, the hierarchy's nodes (the first ``N`` records).
    """

    skeleton: Skeleton
    offsets: tuple[int, ...]
    nodes: int

    @property
    def count(self) -> int:
        """``R``, records per character."""
        return self.skeleton.num_joints

    def clip(self, clip: Clip) -> Clip:
        """``clip`` (over the hierarchy's ``N`` nodes) over the records' ``R`` joints (the extras never move)."""
        if clip.num_targets != self.nodes:
            raise SkeletonMismatchError(
                f"clip {clip.name!r} animates {clip.num_targets} nodes, the scene has {self.nodes}"
            )
        return clip if self.count == self.nodes else Clip(clip.name, clip.channels, self.count, clip.markers)

    def of_frame(self, frame: SceneFrame) -> FloatArray:
        """``(C, R, 4, 4)`` the records of a frame: ``world @ inverse_bind``, the extras' worlds their nodes'."""
        extra = self.skeleton.parents[self.nodes :]
        world = np.concatenate((frame.world, frame.world[..., extra, :, :]), axis=-3)
        return world @ self.skeleton.inverse_bind_matrices


def scene_records(scene: Scene) -> SceneRecords:
    """The palette records of ``scene`` (skins first, then rigid instances) as :class:`SceneRecords`."""
    hierarchy = scene.hierarchy
    count = hierarchy.num_joints
    binds = np.tile(np.eye(4), (count, 1, 1))
    claimed = np.zeros(count, dtype=bool)
    extra_nodes: list[int] = []
    extra_binds: list[FloatArray] = []

    def place(nodes: np.ndarray, node_binds: FloatArray) -> int:
        start = int(nodes[0])
        contiguous = np.array_equal(nodes, np.arange(start, start + nodes.size))
        clash = claimed[nodes] & np.any(binds[nodes] != node_binds, axis=(1, 2))
        if contiguous and not clash.any():
            binds[nodes], claimed[nodes] = node_binds, True
            return start
        first = count + len(extra_nodes)
        extra_nodes.extend(int(n) for n in nodes)
        extra_binds.extend(node_binds)
        return first

    skins = [place(np.asarray(skin.joints), skin.inverse_bind_matrices) for skin in scene.skins]
    offsets = tuple(
        skins[instance.skin] if instance.skin is not None else place(np.array([instance.node]), np.eye(4)[None])
        for instance in scene.instances
    )
    extra = len(extra_nodes)
    skeleton = Skeleton(
        (*hierarchy.names, *(f"#record{k}" for k in range(extra))),
        np.concatenate((hierarchy.parents, np.array(extra_nodes, dtype=np.intp))),
        np.concatenate((hierarchy.rest_translations, np.zeros((extra, 3)))),
        np.concatenate((hierarchy.rest_rotations, np.tile([0.0, 0.0, 0.0, 1.0], (extra, 1)))),
        np.concatenate((hierarchy.rest_scales, np.ones((extra, 3)))),
        np.concatenate((binds, np.reshape(extra_binds, (extra, 4, 4)))),
    )
    return SceneRecords(skeleton, offsets, count)


class SceneRenderer:
    """GPU resources of every mesh instance of a :class:`~engine.anim.scene.Scene`.

    Parameters
    ----------
    ctx
        The OpenGL context.
    scene
        The scene; its instances' primitives are uploaded once (primitives shared by several
        instances are uploaded once too).
    method
        ``"lbs"`` or ``"dqs"`` skinning.

    Attributes
    ----------
    records
        The :class:`SceneRecords` layout of the palette.
    weight_offsets
        ``{instance: first weight}`` of each morphed instance in a character's weight block.
    drawn_mesh_nodes, drawn_primitives
        How many instances (mesh nodes) and primitives the last draw drew (a primitive with no
        whole triangle, line or point to draw does not count).

    Examples
    --------
    One frame of ``C`` characters::

        renderer = SceneRenderer(ctx, scene)
        frame = scene.sample("Walk", times)                  # times (C,)
        renderer.draw(frame, view, projection, placements)   # placements (C, 4, 4)
        assert renderer.drawn_mesh_nodes == len(scene.instances)
    """

    def __init__(self, ctx: moderngl.Context, scene: Scene, *, method: SkinningMethod = "lbs") -> None:
        if not isinstance(scene, Scene):
            raise InvalidInputError(f"scene must be a Scene, got {type(scene).__name__}")
        self.ctx = ctx
        self.scene = scene
        self.records = scene_records(scene)
        self.weight_offsets: dict[int, int] = {}
        weight = 0
        for i, instance in enumerate(scene.instances):
            if instance.num_targets:
                self.weight_offsets[i] = weight
                weight += instance.num_targets
        self.palette = PaletteBuffer(ctx, self.records.count, method=method)
        self.weights = MorphWeightBuffer(ctx, weight) if weight else None
        shared: dict[int, SkinnedMesh] = {}
        self.meshes: tuple[tuple[SkinnedMesh, ...], ...] = tuple(
            tuple(self._gpu_mesh(shared, primitive) for primitive in instance.primitives)
            for instance in scene.instances
        )
        self.drawn_mesh_nodes = 0
        self.drawn_primitives = 0

    def _gpu_mesh(self, shared: dict[int, SkinnedMesh], primitive: MeshData) -> SkinnedMesh:
        if id(primitive) not in shared:
            shared[id(primitive)] = SkinnedMesh(self.ctx, primitive)
        return shared[id(primitive)]

    def _check_frame(self, frame: SceneFrame) -> None:
        if not isinstance(frame, SceneFrame) or len(frame.batch) != 1:
            got = frame.batch if isinstance(frame, SceneFrame) else type(frame).__name__
            raise InvalidInputError(f"frame must be a SceneFrame of one batch axis (C characters), got {got}")
        if frame.world.shape[-3] != self.scene.hierarchy.num_joints or len(frame.skin_palettes) != len(
            self.scene.skins
        ):
            raise SkeletonMismatchError("frame belongs to another scene (node or skin count differs)")

    def upload(self, frame: SceneFrame) -> None:
        """Upload the palette records and morph weights of every character of ``frame`` (two writes)."""
        self._check_frame(frame)
        morph = None
        if self.weights is not None:
            morph = np.concatenate([frame.morph_weights[i] for i in self.weight_offsets], axis=1)
        self.upload_records(self.records.of_frame(frame), morph)

    def upload_records(self, records: Any, morph_weights: Any = None) -> None:
        """Upload records ``(C, R, 4, 4)`` and morph weights ``(C, W)`` as they are (two writes).

        ``records`` in float32 C-contiguous with each matrix column-major (what
        :meth:`engine.player.Player.finalize` writes into its ``records``) go without a
        conversion or copy; any other ``(C, R, 4, 4)`` array is packed first.
        """
        array = np.asarray(records)
        packed = array.dtype == np.float32 and array.flags.c_contiguous
        self.palette.upload(array, packed=packed)
        if self.weights is not None:
            if morph_weights is None:
                raise InvalidInputError("this scene has morph targets: morph_weights (C, W) must be given")
            self.weights.upload(morph_weights)

    def _each(self) -> Any:
        """``(instance, primitive index, GPU mesh, joint offset, weight offset)`` of every primitive."""
        for i in range(len(self.scene.instances)):
            for p, gpu in enumerate(self.meshes[i]):
                yield i, p, gpu, self.records.offsets[i], self.weight_offsets.get(i, 0)

    def draw(
        self,
        frame: SceneFrame,
        view: Any,
        projection: Any,
        instance_transforms: Any = None,
        **lighting: Any,
    ) -> None:
        """Upload ``frame`` and draw every primitive of every instance, one instanced call each.

        ``instance_transforms`` ``(C, 4, 4)`` place the characters (identity when ``None``);
        ``lighting`` is passed to :meth:`SkinnedMesh.draw` (``light_direction``, ``light_color``,
        ``ambient``). Sets :attr:`drawn_mesh_nodes` and :attr:`drawn_primitives`.
        """
        self.upload(frame)
        self.draw_uploaded(view, projection, instance_transforms, **lighting)

    def draw_records(
        self,
        records: Any,
        morph_weights: Any,
        view: Any,
        projection: Any,
        instance_transforms: Any = None,
        **lighting: Any,
    ) -> None:
        """:meth:`upload_records` then draw (a player's records: no scene frame made, no palette recomputed)."""
        self.upload_records(records, morph_weights)
        self.draw_uploaded(view, projection, instance_transforms, **lighting)

    def draw_uploaded(self, view: Any, projection: Any, instance_transforms: Any = None, **lighting: Any) -> None:
        """Draw every primitive of every instance from what was uploaded last, one instanced call each."""
        drawn_nodes: set[int] = set()
        primitives = 0
        for i, _, gpu, joint_offset, weight_offset in self._each():
            gpu.draw(
                self.palette,
                view,
                projection,
                instance_transforms,
                joint_offset=joint_offset,
                morph_weights=self.weights,
                weight_offset=weight_offset,
                **lighting,
            )
            if gpu.mesh.num_elements:
                drawn_nodes.add(i)
                primitives += 1
        self.drawn_mesh_nodes = len(drawn_nodes)
        self.drawn_primitives = primitives

    def skin(self, frame: SceneFrame, instance_transforms: Any = None) -> list[list[tuple[FloatArray, FloatArray]]]:
        """World-space vertices of every primitive, read back by transform feedback.

        Returns
        -------
        list
            Per instance, per primitive: ``(positions, normals)``, each ``(C, V, 3)``, the GPU
            counterpart of :func:`engine.anim.scene.instance_vertices` (times the placement).
        """
        self.upload(frame)
        out: list[list[tuple[FloatArray, FloatArray]]] = [[] for _ in self.scene.instances]
        for i, _, gpu, joint_offset, weight_offset in self._each():
            out[i].append(
                gpu.skin(
                    self.palette,
                    instance_transforms,
                    joint_offset=joint_offset,
                    morph_weights=self.weights,
                    weight_offset=weight_offset,
                )
            )
        return out

    def release(self) -> None:
        """Free every GPU resource of the scene."""
        for gpu in {id(m): m for meshes in self.meshes for m in meshes}.values():
            gpu.release()
        self.palette.release()
        if self.weights is not None:
            self.weights.release()
