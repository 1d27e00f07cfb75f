"""GPU skinning: one palette upload and one instanced draw for many characters of one mesh.

The palettes (and morph weights) of all characters live in one storage buffer each
(:mod:`engine.render.storage_buffers`, which explains the layout and the DQS records); the vertex
shader reads record ``gl_InstanceID · J + joint``, so one instanced draw call renders every
character that shares the mesh; the per-instance model → world transform is an instanced ``mat4``
attribute.

Scale under dual-quaternion skinning
------------------------------------
Rather than falling back to linear blending for vertices near a joint with non-uniform scale
(which leaves a seam where neighbouring vertices switch method), both the shader and the CPU
reference :func:`engine.anim.skinning.skin_vertices_dq` use Kavan et al.'s two-phase skinning:
stretch the bind-space vertex by the weighted sum of the joints' stretches (identity for rigid
joints, ``s·I`` for uniform scale), then move it by the blended rigid dual quaternion. For
rotation × uniform scale palettes this is exactly classic DQS.

Vertices whose weights sum to zero keep their bind position, as in the CPU reference.
"""

from __future__ import annotations

from typing import Any

import moderngl
import numpy as np

from engine.anim.mesh import MeshData
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import gl_pack, trusted, vec_normalize
from engine.math._checks import FloatArray, as_array
from engine.render.programs import cached_program
from engine.render.shaders import uniform
from engine.render.storage_buffers import (
    RECORD_FLOATS,
    MorphWeightBuffer,
    PaletteBuffer,
    SkinningMethod,
    _check_finite_packed,
    _check_method,
    _grow,
    pack_palette,
)

__all__ = [
    "MAX_INFLUENCE_SETS",
    "RECORD_FLOATS",
    "MorphWeightBuffer",
    "PaletteBuffer",
    "SkinnedMesh",
    "SkinningMethod",
    "pack_palette",
    "vertex_normals",
]

MAX_INFLUENCE_SETS = 2
"""The skinning shaders read up to two ``JOINTS_n``/``WEIGHTS_n`` sets: 8 influences per vertex."""

_VERTEX_SHADERS = {"lbs": "skinning.vert", "dqs": "skinning_dq.vert"}
_CAPTURED = ("v_world_position", "v_world_normal")


def vertex_normals(positions: FloatArray, indices: np.ndarray | None) -> FloatArray:
    """Area-weighted smooth vertex normals ``(V, 3)`` for meshes that come without normals.

    Vertices on no triangle (such as the 1 or 2 left over at the end of a non-indexed list), or
    only on degenerate ones, get ``(0, 1, 0)``.
    """
    listed = np.arange(len(positions) - len(positions) % 3) if indices is None else np.asarray(indices)
    triangles = listed.reshape(-1, 3)
    a, b, c = (positions[triangles[:, k]] for k in range(3))
    face = np.cross(b - a, c - a)
    normals = np.zeros_like(positions)
    for k in range(3):
        np.add.at(normals, triangles[:, k], face)
    length = np.linalg.norm(normals, axis=-1, keepdims=True)
    return np.where(length > 1e-20, normals / np.maximum(length, 1e-20), np.array([0.0, 1.0, 0.0]))


_MODES = {"TRIANGLES": moderngl.TRIANGLES, "LINES": moderngl.LINES, "POINTS": moderngl.POINTS}


class SkinnedMesh:
    """GPU buffers of one mesh primitive, skinned, morphed or rigid, drawn instanced for many characters.

    A **rigid** mesh (no joints, e.g. a helmet under a head joint or a prop under an animated
    node) goes through the same shaders as a mesh skinned 100 % to one palette record: its node's
    world matrix. One pipeline therefore draws every mesh of a scene, morph targets included,
    and the GPU-vs-CPU tests cover rigid and skinned meshes alike.

    Parameters
    ----------
    ctx
        The OpenGL context (:func:`engine.render.create_context`).
    mesh
        A :class:`~engine.anim.mesh.MeshData` of any mode (triangles, lines, points), skinned
        with 1 or 2 influence sets or rigid. Weights are L1-normalised per vertex on upload (a
        vertex whose weights are all zero keeps its bind position, as in the CPU reference).
        Missing normals are computed for triangles (area-weighted) and point up (+Y) for lines
        and points; missing UVs read as ``(0, 0)``. Morph targets' displacements go to a storage
        buffer of their own.

    Raises
    ------
    InvalidInputError
        The mesh has more than :data:`MAX_INFLUENCE_SETS` influence sets.

    Examples
    --------
    One frame for ``C`` characters (``palettes`` ``(C, J, 4, 4)``, ``worlds`` ``(C, 4, 4)``)::

        palette = PaletteBuffer(ctx, J, method="dqs")
        mesh = SkinnedMesh(ctx, character.meshes[0])
        palette.upload(palettes)                      # one upload for everyone
        mesh.draw(palette, view, projection, worlds)  # one instanced draw call
    """

    def __init__(self, ctx: moderngl.Context, mesh: MeshData) -> None:
        if mesh.influence_sets > MAX_INFLUENCE_SETS:
            raise InvalidInputError(
                f"mesh {mesh.name!r} has {mesh.influence_sets} influence sets ({4 * mesh.influence_sets} "
                f"influences); the skinning shaders read at most {MAX_INFLUENCE_SETS} sets"
            )
        count = mesh.num_vertices
        self.ctx = ctx
        self.mesh = mesh
        self.num_vertices = count
        self.rigid = not mesh.skinned
        if mesh.joints is None or mesh.weights is None:  # rigid: every vertex 100 % on record 0
            joints = np.zeros((count, 4), dtype=np.uint32)
            weights = np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (count, 1))
        else:
            joints = np.ascontiguousarray(mesh.joints, dtype=np.uint32)
            total = mesh.weights.sum(axis=1, keepdims=True)
            weights = (mesh.weights / np.where(total > 0, total, 1.0)).astype(np.float32)
        self.sets = joints.shape[1] // 4
        self.max_joint = int(joints.max(initial=0))
        if mesh.normals is not None:
            normals = mesh.normals
        elif mesh.mode == "TRIANGLES":
            normals = vertex_normals(mesh.positions, mesh.indices)
        else:
            normals = np.tile([0.0, 1.0, 0.0], (count, 1))
        columns = {
            "in_position": (np.asarray(mesh.positions, dtype=np.float32), "3f"),
            "in_normal": (np.asarray(normals, dtype=np.float32), "3f"),
        }
        if mesh.uvs is not None:
            columns["in_uv"] = (np.asarray(mesh.uvs, dtype=np.float32), "2f")
        for s in range(self.sets):
            columns[f"in_joints{s}"] = (np.ascontiguousarray(joints[:, 4 * s : 4 * s + 4]), "4u")
            columns[f"in_weights{s}"] = (np.ascontiguousarray(weights[:, 4 * s : 4 * s + 4]), "4f")
        self._buffers = {name: (ctx.buffer(np.ascontiguousarray(data)), fmt) for name, (data, fmt) in columns.items()}
        self._instances = ctx.buffer(reserve=64)
        self._index = None
        if mesh.indices is not None:  # an empty list (a strip too short to draw) still needs a buffer
            self._index = (
                ctx.buffer(np.asarray(mesh.indices, dtype=np.uint32)) if mesh.indices.size else ctx.buffer(reserve=4)
            )
        self._morph = None
        if mesh.morph_positions is not None:
            deltas = [mesh.morph_positions] + ([] if mesh.morph_normals is None else [mesh.morph_normals])
            self._morph = ctx.buffer(np.concatenate([d.reshape(-1) for d in deltas]).astype(np.float32))
        self._texture = None
        if mesh.texture is not None:
            image = np.ascontiguousarray(mesh.texture, dtype=np.uint8)
            self._texture = ctx.texture((image.shape[1], image.shape[0]), image.shape[2], image)
            self._texture.build_mipmaps()
            self._texture.filter = (moderngl.LINEAR_MIPMAP_LINEAR, moderngl.LINEAR)
        self._own_palette: PaletteBuffer | None = None
        self._own_weights: MorphWeightBuffer | None = None
        self._vaos: dict[tuple[str, bool], Any] = {}

    @property
    def num_targets(self) -> int:
        """Morph targets ``T`` of the mesh (0 without)."""
        return self.mesh.num_targets

    def _vao(self, method: SkinningMethod, capture: bool) -> Any:
        key = (method, capture)
        if key not in self._vaos:
            vertex = _VERTEX_SHADERS[method]
            morph = self._morph is not None
            program = (
                cached_program(self.ctx, vertex, None, self.sets, _CAPTURED, morph=morph)
                if capture
                else cached_program(self.ctx, vertex, "lit.frag", self.sets, morph=morph)
            )
            content = [(buffer, fmt, name) for name, (buffer, fmt) in self._buffers.items() if name in program]
            content.append((self._instances, "16f/i", "in_world"))
            index = None if capture else self._index
            self._vaos[key] = self.ctx.vertex_array(program, content, index_buffer=index, index_element_size=4)
        return self._vaos[key]

    def _palette(self, palettes: PaletteBuffer | Any, method: SkinningMethod, joint_offset: int) -> PaletteBuffer:
        """A ready palette buffer: the one given, or this mesh's own one after uploading ``palettes``."""
        if isinstance(palettes, PaletteBuffer):
            palette = palettes
        else:
            joints = np.shape(palettes)[1] if np.ndim(palettes) == 4 else 0
            own = self._own_palette
            if own is None or own.method != method or own.joint_count != joints:
                if own is not None:
                    own.release()
                own = self._own_palette = PaletteBuffer(self.ctx, max(joints, 1), method=method)
            own.upload(palettes)
            palette = own
        if palette.characters < 1:
            raise InvalidInputError("the palette buffer is empty: call upload() before drawing")
        if joint_offset < 0 or joint_offset + self.max_joint >= palette.joint_count:
            raise SkeletonMismatchError(
                f"mesh {self.mesh.name!r} uses joint {self.max_joint} from record {joint_offset} on, "
                f"the palette has {palette.joint_count} joints"
            )
        return palette

    def _weights(
        self, morph_weights: MorphWeightBuffer | Any, weight_offset: int, characters: int
    ) -> MorphWeightBuffer:
        """A ready weight buffer for a morphed mesh: the one given, or this mesh's own (zeros when ``None``)."""
        targets = self.num_targets
        if isinstance(morph_weights, MorphWeightBuffer):
            weights = morph_weights
            if weight_offset < 0 or weight_offset + targets > weights.stride:
                raise InvalidInputError(
                    f"weight_offset {weight_offset} + {targets} morph targets exceeds the buffer's {weights.stride} "
                    "weights per character"
                )
        else:
            values = np.zeros((characters, targets)) if morph_weights is None else morph_weights
            if np.shape(values) != (characters, targets):
                raise InvalidInputError(
                    f"morph_weights must have shape ({characters}, {targets}): one weight per morph target "
                    f"of mesh {self.mesh.name!r} for each of {characters} characters, got {np.shape(values)}"
                )
            if self._own_weights is None:
                self._own_weights = MorphWeightBuffer(self.ctx, targets)
            weights = self._own_weights
            weights.upload(values)
            weight_offset = 0
        if weights.characters != characters:
            raise InvalidInputError(
                f"the morph weights hold {weights.characters} characters but the palette {characters}"
            )
        return weights

    def _upload_instances(self, instance_transforms: Any, characters: int) -> None:
        if instance_transforms is None:
            worlds = np.broadcast_to(np.eye(4), (characters, 4, 4))
        else:
            worlds = as_array(instance_transforms, "instance_transforms", (4, 4), finite=False)
            if worlds.shape != (characters, 4, 4):
                raise InvalidInputError(
                    f"instance_transforms must have shape ({characters}, 4, 4), one per palette, got {worlds.shape}"
                )
        with trusted(), np.errstate(over="ignore"):  # scanned below, in float32
            packed = gl_pack(worlds)
        _check_finite_packed(packed, "instance_transforms", "character")
        _grow(self._instances, packed.nbytes)
        self._instances.write(packed)

    def _prepare(
        self,
        palettes: PaletteBuffer | Any,
        method: SkinningMethod,
        instance_transforms: Any,
        capture: bool,
        *,
        joint_offset: int,
        morph_weights: MorphWeightBuffer | Any,
        weight_offset: int,
    ) -> tuple[Any, PaletteBuffer]:
        palette = self._palette(palettes, _check_method(method), int(joint_offset))
        self._upload_instances(instance_transforms, palette.characters)
        vao = self._vao(palette.method, capture)
        program = vao.program
        uniform(program, "u_joint_count").value = palette.joint_count
        uniform(program, "u_joint_offset").value = int(joint_offset)
        palette.bind()
        if self._morph is not None:
            own = not isinstance(morph_weights, MorphWeightBuffer)
            weights = self._weights(morph_weights, int(weight_offset), palette.characters)
            uniform(program, "u_morph_targets").value = self.num_targets
            uniform(program, "u_vertex_count").value = self.num_vertices
            uniform(program, "u_weight_stride").value = weights.stride
            uniform(program, "u_weight_offset").value = 0 if own else int(weight_offset)
            uniform(program, "u_morph_normals").value = self.mesh.morph_normals is not None
            self._morph.bind_to_storage_buffer(2)
            weights.bind()
        return vao, palette

    def draw(
        self,
        palettes: PaletteBuffer | Any,
        view: Any,
        projection: Any,
        instance_transforms: Any = None,
        *,
        method: SkinningMethod = "lbs",
        joint_offset: int = 0,
        morph_weights: MorphWeightBuffer | Any = None,
        weight_offset: int = 0,
        light_direction: Any = (-0.3, -1.0, -0.5),
        light_color: Any = (1.0, 1.0, 1.0),
        ambient: Any = (0.25, 0.25, 0.25),
    ) -> None:
        """Draw every character of the palette with one instanced draw call (depth test enabled).

        Parameters
        ----------
        palettes
            A :class:`PaletteBuffer` already uploaded this frame (its ``method`` chooses the
            shader), or ``(C, J, 4, 4)`` palette matrices, uploaded here with ``method``.
        view, projection
            ``(4, 4)`` world → camera and camera → clip matrices.
        instance_transforms
            ``(C, 4, 4)`` model → world transform per character; identity when ``None``.
        method
            ``"lbs"`` or ``"dqs"``, used only when ``palettes`` is an array.
        joint_offset
            The palette record of this mesh's joint 0 (each character's records may hold several
            skins and rigid nodes; :class:`~engine.render.SceneRenderer` lays them out).
        morph_weights, weight_offset
            For a mesh with morph targets: a :class:`MorphWeightBuffer` and where this mesh's
            weights start in each character's block, or ``(C, T)`` weights uploaded here;
            ``None`` draws the base shape. Ignored by meshes without morph targets.
        light_direction
            ``(3,)`` world-space direction the light travels (normalised here).
        light_color, ambient
            ``(3,)`` linear RGB.

        Raises
        ------
        InvalidInputError, SkeletonMismatchError
            Bad shapes, NaN/inf while validating, or a mesh that uses joints the palette lacks.
        """
        view = as_array(view, "view", (4, 4))
        projection = as_array(projection, "projection", (4, 4))
        if view.shape != (4, 4) or projection.shape != (4, 4):
            raise InvalidInputError(f"view and projection must be (4, 4), got {view.shape} and {projection.shape}")
        direction = vec_normalize(as_array(light_direction, "light_direction", (3,)), "light_direction")
        vao, palette = self._prepare(
            palettes,
            method,
            instance_transforms,
            capture=False,
            joint_offset=joint_offset,
            morph_weights=morph_weights,
            weight_offset=weight_offset,
        )
        program = vao.program
        uniform(program, "u_view").write(gl_pack(view))
        uniform(program, "u_projection").write(gl_pack(projection))
        uniforms = {
            "u_light_direction": direction,
            "u_light_color": as_array(light_color, "light_color", (3,)),
            "u_ambient": as_array(ambient, "ambient", (3,)),
            "u_base_color": self.mesh.base_color,
            "u_emissive": self.mesh.emissive,
        }
        for name, value in uniforms.items():
            uniform(program, name).value = tuple(float(v) for v in value)
        uniform(program, "u_has_texture").value = self._texture is not None
        uniform(program, "u_unlit").value = self.mesh.unlit
        if self._texture is not None:
            uniform(program, "u_base_color_texture").value = 0
            self._texture.use(0)
        self.ctx.enable(moderngl.DEPTH_TEST)
        if self.mesh.num_elements:
            vao.render(_MODES[self.mesh.mode], instances=palette.characters)

    def skin(
        self,
        palettes: PaletteBuffer | Any,
        instance_transforms: Any = None,
        *,
        method: SkinningMethod = "lbs",
        joint_offset: int = 0,
        morph_weights: MorphWeightBuffer | Any = None,
        weight_offset: int = 0,
    ) -> tuple[FloatArray, FloatArray]:
        """Run the vertex shader with transform feedback and read the world-space vertices back.

        Same inputs as :meth:`draw`. Useful for tests, picking and debugging the GPU path.

        Returns
        -------
        positions, normals
            ``(C, V, 3)`` float64 (computed in float32): morphed, skinned world-space positions
            and unit normals, per character in palette order.
        """
        vao, palette = self._prepare(
            palettes,
            method,
            instance_transforms,
            capture=True,
            joint_offset=joint_offset,
            morph_weights=morph_weights,
            weight_offset=weight_offset,
        )
        eye = gl_pack(np.eye(4))
        uniform(vao.program, "u_view").write(eye)
        uniform(vao.program, "u_projection").write(eye)
        output = self.ctx.buffer(reserve=palette.characters * self.num_vertices * 24)
        try:
            vao.transform(output, moderngl.POINTS, vertices=self.num_vertices, instances=palette.characters)
            data = np.frombuffer(output.read(), dtype=np.float32).reshape(palette.characters, self.num_vertices, 6)
        finally:
            output.release()
        vertices = data.astype(np.float64)
        return vertices[..., :3], vertices[..., 3:]

    def release(self) -> None:
        """Free this mesh's GPU buffers, vertex arrays and texture (shared programs stay)."""
        for vao in self._vaos.values():
            vao.release()
        for buffer, _ in self._buffers.values():
            buffer.release()
        self._instances.release()
        for resource in (self._index, self._texture, self._own_palette, self._morph, self._own_weights):
            if resource is not None:
                resource.release()
