"""GPU skinning: one palette upload and one instanced draw for many characters of one mesh.

Palette layout
--------------
All characters' palettes go into **one shader storage buffer** (SSBO, ``std430``) of
``characters × joints`` records, written with one ``buffer.write`` per frame. The vertex shader
reads record ``gl_InstanceID · J + joint``, so one instanced draw call renders every character
that shares the mesh; the per-instance model → world transform is an instanced ``mat4``
attribute.

Why not the alternatives:

- a **uniform block** holds at most ``GL_MAX_UNIFORM_BLOCK_SIZE`` bytes, 16 KiB guaranteed and
  64 KiB typical: 1024 ``mat4`` at best, 13 CesiumMen of 19 joints at worst: far too few for
  instancing;
- a **texture buffer** works from GL 3.1 but moderngl has no texture-buffer object, and fetching
  four ``texelFetch`` per matrix is clumsier than indexing a ``mat4[]``;
- an SSBO (GL 4.3) may be as large as ``GL_MAX_SHADER_STORAGE_BLOCK_SIZE`` (≥ 16 MiB by the spec,
  128 MiB on Mesa and the desktop drivers): 262 144 ``mat4`` at the spec minimum.

Both methods upload the palette matrices as column-major ``mat4`` (64 bytes per joint,
:func:`pack_palette`). ``"lbs"`` draws from them directly. ``"dqs"`` first runs a compute
shader (``shaders/palette_dq.comp``, one invocation per joint) that turns them into 80-byte
records in a second storage buffer: the rigid part as a dual quaternion (8 floats) and the 3×3
"stretch" carrying scale, shear and mirroring (a ``std430`` ``mat3``, 12 floats; see
``shaders/dq_joint.glsl``). Converting on the GPU keeps the CPU cost and the bytes sent the same
as for LBS (in numpy the conversion cost ~40 µs per character of 19 joints on the development
machine, 100× the upload itself).

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

import weakref
from typing import Any, Literal

import moderngl
import numpy as np

from engine.anim.mesh import MeshData
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import gl_pack, trusted, validating, vec_normalize
from engine.math._checks import FloatArray, as_array
from engine.render.shaders import load_compute, load_program, uniform

SkinningMethod = Literal["lbs", "dqs"]

RECORD_FLOATS = {"lbs": 16, "dqs": 20}
"""float32 values per joint in the storage block the vertex shader reads, by skinning method."""

MAX_INFLUENCE_SETS = 2
"""The skinning shaders read up to two ``JOINTS_n``/``WEIGHTS_n`` sets: 8 influences per vertex."""

_VERTEX_SHADERS = {"lbs": "skinning.vert", "dqs": "skinning_dq.vert"}
_CAPTURED = ("v_world_position", "v_world_normal")
_programs: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def _program(
    ctx: moderngl.Context,
    vertex: str,
    fragment: str | None,
    sets: int,
    varyings: tuple[str, ...] = (),
    *,
    morph: bool = False,
) -> moderngl.Program:
    """Compile once per context and reuse: every mesh with the same influence sets and morph switch shares it."""
    cache = _programs.setdefault(ctx, {})
    key = (vertex, fragment, sets, varyings, morph)
    if key not in cache:
        defines = {"INFLUENCE_SETS": sets, "MORPH": int(morph)}
        cache[key] = load_program(ctx, vertex, fragment, defines=defines, varyings=varyings)
    return cache[key]


def _compute(ctx: moderngl.Context, name: str) -> moderngl.ComputeShader:
    """Compile a compute shader once per context."""
    cache = _programs.setdefault(ctx, {})
    if name not in cache:
        cache[name] = load_compute(ctx, name)
    return cache[name]


def _check_method(method: str) -> SkinningMethod:
    if method not in RECORD_FLOATS:
        raise InvalidInputError(f"method must be 'lbs' or 'dqs', got {method!r}")
    return method  # type: ignore[return-value]


def _check_finite_packed(packed: np.ndarray, name: str, axes: str) -> None:
    """Refuse NaN/inf (also float64 values that overflowed to inf in float32) before an upload."""
    if validating() and not np.isfinite(packed).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(packed))[0][: len(axes.split(","))])
        raise InvalidInputError(f"{name} must be finite in float32, got NaN or inf at ({axes}) = {bad}")


def pack_palette(palettes: Any) -> np.ndarray:
    """Palette matrices as the float32 column-major data a :class:`PaletteBuffer` uploads.

    Parameters
    ----------
    palettes
        ``(C, J, 4, 4)`` skinning matrices ``model[j] @ inverse_bind[j]`` for ``C`` characters.

    Returns
    -------
    numpy.ndarray
        ``(C, J, 16)`` float32, C-contiguous, each row one ``mat4`` column by column.

    Raises
    ------
    InvalidInputError
        Wrong shape, or (while :func:`engine.math.validating`) NaN/inf in the float32 data,
        including float64 values too large for float32.
    """
    palettes = as_array(palettes, "palettes", (4, 4), finite=False)
    if palettes.ndim != 4:
        raise InvalidInputError(f"palettes must have shape (C, J, 4, 4), got {palettes.shape}")
    # scanned below, in float32, which also catches float64 values beyond float32's range
    with trusted(), np.errstate(over="ignore"):
        matrices = gl_pack(palettes).reshape(*palettes.shape[:2], 16)
    _check_finite_packed(matrices, "palettes", "character, joint")
    return matrices


def _check_dq_basis(matrices: np.ndarray) -> None:
    """DQS needs a rotation from every matrix: refuse zero-length basis columns (while validating)."""
    if not validating():
        return
    basis = matrices[..., :12].reshape(*matrices.shape[:-1], 3, 4)[..., :3]  # column c = basis[..., c, :]
    columns = np.einsum("...ci,...ci->...c", basis, basis)
    if np.any(columns <= 1e-24):
        bad = tuple(int(i) for i in np.argwhere(columns <= 1e-24)[0][:2])
        raise InvalidInputError(
            f"palettes has a zero-length basis column at (character, joint) = {bad}: DQS needs a rotation"
        )


class PaletteBuffer:
    """The skinning palettes of up to ``max_characters`` characters in one storage buffer.

    Several :class:`SkinnedMesh` objects (the primitives of one character) can draw from the
    same buffer, so a character's palette is uploaded once per frame whatever its mesh count.
    One buffer is one storage block: a crowd of more than :attr:`max_characters` needs several
    buffers, each primitive then drawn once per buffer (``game/demo/crowd.py`` does so). Palettes
    already in the upload layout (:func:`engine.backend.evaluate_frame` writes them so) go in
    with ``upload(palettes, packed=True)``, without a conversion or copy.

    Parameters
    ----------
    ctx
        The OpenGL context.
    joint_count
        ``J``, joints per character (the skeleton's joint count).
    method
        ``"lbs"`` (linear blend) or ``"dqs"`` (dual quaternion); see the module docstring.

    Attributes
    ----------
    record_bytes
        Bytes per joint of the storage block the vertex shader reads (64 LBS, 80 DQS).
    characters
        How many characters the last upload held.

    Raises
    ------
    InvalidInputError
        ``joint_count`` is not positive, or one character's palette alone exceeds
        ``GL_MAX_SHADER_STORAGE_BLOCK_SIZE``.
    """

    def __init__(self, ctx: moderngl.Context, joint_count: int, *, method: SkinningMethod = "lbs") -> None:
        self.method = _check_method(method)
        if int(joint_count) < 1:
            raise InvalidInputError(f"joint_count must be ≥ 1, got {joint_count}")
        self.ctx = ctx
        self.joint_count = int(joint_count)
        self.record_bytes = 4 * RECORD_FLOATS[self.method]
        self.max_block_bytes = int(ctx.info["GL_MAX_SHADER_STORAGE_BLOCK_SIZE"])
        self._check_fits(1)
        self.characters = 0
        self._matrices = ctx.buffer(reserve=self.joint_count * 64)
        self._records = ctx.buffer(reserve=self.joint_count * self.record_bytes) if self.method == "dqs" else None
        self._convert = _compute(ctx, "palette_dq.comp") if self.method == "dqs" else None

    @property
    def max_characters(self) -> int:
        """How many characters fit in one storage block on this context."""
        return self.max_block_bytes // (self.joint_count * self.record_bytes)

    def _check_fits(self, characters: int) -> None:
        size = characters * self.joint_count * self.record_bytes
        if size > self.max_block_bytes:
            raise InvalidInputError(
                f"too many joints for the storage-buffer palette layout: {characters} characters × "
                f"{self.joint_count} joints × {self.record_bytes} B = {size} B, but this context's "
                f"GL_MAX_SHADER_STORAGE_BLOCK_SIZE is {self.max_block_bytes} B "
                f"(at most {self.max_characters} characters per draw)"
            )

    def upload(self, palettes: Any, *, packed: bool = False) -> None:
        """Write all characters' palettes in one buffer upload (DQS: then convert them on the GPU).

        Parameters
        ----------
        palettes
            ``(C, J, 4, 4)`` model-space skinning matrices, float64 or float32; with ``packed``,
            float32 data already in the upload layout (:func:`pack_palette`'s, and
            :func:`engine.backend.evaluate_frame`'s ``out``): C-contiguous ``(C, J, 16)`` or
            ``(C, J, 4, 4)`` with each matrix stored column-major. It is written as it is, without
            a conversion or a copy.
        packed
            Whether ``palettes`` is already packed (see above).

        Raises
        ------
        InvalidInputError
            Wrong shape (or, ``packed``, not C-contiguous float32), more characters than fit
            (checked before any conversion), or (while :func:`engine.math.validating`) NaN/inf
            in the float32 data or, for DQS, a zero-length basis column; nothing is uploaded then.
        SkeletonMismatchError
            ``J`` differs from ``joint_count``.
        """
        shape = np.shape(palettes)
        tail = ((16,), (4, 4)) if packed else ((4, 4),)
        if len(shape) not in (3, 4) or shape[2:] not in tail or shape[0] < 1:
            expected = "(C, J, 16) or (C, J, 4, 4)" if packed else "(C, J, 4, 4)"
            raise InvalidInputError(f"palettes must have shape {expected} with C ≥ 1, got {shape}")
        if shape[1] != self.joint_count:
            raise SkeletonMismatchError(
                f"palettes have {shape[1]} joints per character, this buffer was made for {self.joint_count}"
            )
        self._check_fits(shape[0])
        if packed:
            if not isinstance(palettes, np.ndarray) or palettes.dtype != np.float32 or not palettes.flags.c_contiguous:
                got = f"{palettes.dtype}" if isinstance(palettes, np.ndarray) else type(palettes).__name__
                raise InvalidInputError(f"packed palettes must be a C-contiguous float32 array, got {got}")
            matrices = palettes.reshape(shape[0], shape[1], 16)
            _check_finite_packed(matrices, "palettes", "character, joint")
        else:
            matrices = pack_palette(palettes)
        if self.method == "dqs":
            _check_dq_basis(matrices)
        count = shape[0] * self.joint_count
        _grow(self._matrices, matrices.nbytes)
        self._matrices.write(matrices)
        self.characters = shape[0]
        if self._records is None or self._convert is None:
            return
        _grow(self._records, count * self.record_bytes)
        self._matrices.bind_to_storage_buffer(1, size=matrices.nbytes)
        self._records.bind_to_storage_buffer(0, size=count * self.record_bytes)
        uniform(self._convert, "u_count").value = count
        self._convert.run(group_x=-(-count // 64))
        self.ctx.memory_barrier(moderngl.SHADER_STORAGE_BARRIER_BIT | moderngl.BUFFER_UPDATE_BARRIER_BIT)

    def bind(self) -> None:
        """Bind what the vertex shader reads (matrices or DQ records) to storage binding 0."""
        buffer = self._matrices if self._records is None else self._records
        buffer.bind_to_storage_buffer(0, size=self.characters * self.joint_count * self.record_bytes)

    def records(self) -> np.ndarray:
        """Read back what the vertex shader reads: ``(C, J, 16)`` or ``(C, J, 20)`` float32.

        LBS: the matrices column by column. DQS: ``(real xyzw, dual xyzw, stretch)`` with the
        stretch's three columns each padded to 4 floats (``shaders/dq_joint.glsl``).
        """
        buffer = self._matrices if self._records is None else self._records
        data = buffer.read(size=self.characters * self.joint_count * self.record_bytes)
        return np.frombuffer(data, np.float32).reshape(self.characters, self.joint_count, -1).copy()

    def release(self) -> None:
        """Free the GPU buffers."""
        self._matrices.release()
        if self._records is not None:
            self._records.release()


def _grow(buffer: Any, size: int) -> None:
    """Reallocate ``buffer`` (at least doubling) when ``size`` bytes do not fit."""
    if size > buffer.size:
        buffer.orphan(max(size, 2 * buffer.size))


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


class MorphWeightBuffer:
    """Morph-target weights of many characters in one storage buffer (``std430`` binding 3).

    Each character owns ``stride`` consecutive floats; a mesh reads its ``T`` weights from
    ``weight_offset`` on (:meth:`SkinnedMesh.draw`), so one upload serves every morphed mesh of
    a scene (:class:`engine.render.SceneRenderer`).

    Parameters
    ----------
    ctx
        The OpenGL context.
    stride
        ``W``, weights per character (≥ 1).
    """

    def __init__(self, ctx: moderngl.Context, stride: int) -> None:
        if int(stride) < 1:
            raise InvalidInputError(f"stride must be ≥ 1, got {stride}")
        self.ctx = ctx
        self.stride = int(stride)
        self.characters = 0
        self._buffer = ctx.buffer(reserve=4 * self.stride)

    def upload(self, weights: Any) -> None:
        """Write ``(C, W)`` weights (float64 or float32) in one buffer upload.

        Raises
        ------
        InvalidInputError
            Wrong shape, or (while :func:`engine.math.validating`) NaN/inf in float32.
        """
        shape = np.shape(weights)
        if len(shape) != 2 or shape[1] != self.stride or shape[0] < 1:
            raise InvalidInputError(f"weights must have shape (C ≥ 1, {self.stride}), got {shape}")
        with np.errstate(over="ignore"):
            packed = np.ascontiguousarray(weights, dtype=np.float32)
        _check_finite_packed(packed, "weights", "character, weight")
        _grow(self._buffer, packed.nbytes)
        self._buffer.write(packed)
        self.characters = shape[0]

    def bind(self) -> None:
        """Bind the weights to storage binding 3, where the skinning shaders read them."""
        self._buffer.bind_to_storage_buffer(3, size=max(4, self.characters * self.stride * 4))

    def release(self) -> None:
        """Free the GPU buffer."""
        self._buffer.release()


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
                _program(self.ctx, vertex, None, self.sets, _CAPTURED, morph=morph)
                if capture
                else _program(self.ctx, vertex, "lit.frag", self.sets, morph=morph)
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
