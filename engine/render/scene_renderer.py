"""Every mesh of a scene on the GPU for many characters: two uploads, one instanced draw per primitive.

The uploads are one palette (every character's records) and one block of morph weights.

Record layout
-------------
Each character's palette records (one :class:`~engine.render.skinned_mesh.PaletteBuffer` for the
whole scene) are, in order: every skin's palette (``world[joints] @ inverse_bind``), then one
record per **rigid** mesh instance, its node's world matrix. A rigid mesh is drawn as a mesh
skinned 100 % to its record (:class:`~engine.render.skinned_mesh.SkinnedMesh`), so a helmet under
a head joint, a prop under an animated node and a skinned body go through the same shaders,
instanced the same way, in the same pass; a morph target works the same on all of them. The
alternative, a static path with a per-draw model-matrix uniform, would need a second shader
family and one draw call per character for every rigid part.

Morph weights are laid out likewise: each character's block holds every morphed instance's
``T`` weights (:class:`~engine.render.skinned_mesh.MorphWeightBuffer`).

World space is the scene's (:class:`~engine.anim.scene.SceneFrame`); ``instance_transforms``
place each character in the game world on top of it.
"""

from __future__ import annotations

from typing import Any

import moderngl
import numpy as np

from engine.anim.mesh import MeshData
from engine.anim.scene import Scene, SceneFrame
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray
from engine.render.skinned_mesh import MorphWeightBuffer, PaletteBuffer, SkinnedMesh, SkinningMethod


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
    skin_offsets
        First palette record of each skin.
    rigid_records
        ``{instance: record}`` of each rigid instance.
    weight_offsets
        ``{instance: first weight}`` of each morphed instance in a character's weight block.
    drawn_mesh_nodes, drawn_primitives
        How many instances (mesh nodes) and primitives the last :meth:`draw` drew (a primitive
        with no whole triangle, line or point to draw does not count).

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
        offsets, record = [], 0
        for skin in scene.skins:
            offsets.append(record)
            record += skin.num_joints
        self.skin_offsets = tuple(offsets)
        self.rigid_records: dict[int, int] = {}
        self.weight_offsets: dict[int, int] = {}
        weight = 0
        for i, instance in enumerate(scene.instances):
            if instance.skin is None:
                self.rigid_records[i] = record
                record += 1
            if instance.num_targets:
                self.weight_offsets[i] = weight
                weight += instance.num_targets
        self._rigid_nodes = np.array([scene.instances[i].node for i in self.rigid_records], dtype=np.intp)
        self.palette = PaletteBuffer(ctx, max(record, 1), method=method)
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

    @property
    def records(self) -> int:
        """Palette records per character."""
        return self.palette.joint_count

    def palette_records(self, frame: SceneFrame) -> FloatArray:
        """``(C, R, 4, 4)`` the records :meth:`upload` sends: skin palettes, then rigid nodes' world matrices."""
        self._check_frame(frame)
        return np.concatenate([*frame.skin_palettes, frame.world[:, self._rigid_nodes]], axis=1)

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
        records = self.palette_records(frame)
        if records.shape[1] == 0:  # a scene without skins or rigid meshes: keep the buffer non-empty
            records = np.broadcast_to(np.eye(4), (frame.batch[0], 1, 4, 4))
        self.palette.upload(records)
        if self.weights is not None:
            blocks = [frame.morph_weights[i] for i in self.weight_offsets]
            self.weights.upload(np.concatenate(blocks, axis=1))

    def _each(self) -> Any:
        """``(instance, primitive index, GPU mesh, joint offset, weight offset)`` of every primitive."""
        for i, instance in enumerate(self.scene.instances):
            joint_offset = self.rigid_records[i] if instance.skin is None else self.skin_offsets[instance.skin]
            for p, gpu in enumerate(self.meshes[i]):
                yield i, p, gpu, joint_offset, self.weight_offsets.get(i, 0)

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
