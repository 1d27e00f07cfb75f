"""The per-character storage buffers the skinning shaders read: palettes and morph weights.

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
"""

from __future__ import annotations

from typing import Any, Literal

import moderngl
import numpy as np

from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import gl_pack, trusted, validating
from engine.math._checks import as_array
from engine.render.programs import cached_compute
from engine.render.shaders import uniform

SkinningMethod = Literal["lbs", "dqs"]

RECORD_FLOATS = {"lbs": 16, "dqs": 20}
"""float32 values per joint in the storage block the vertex shader reads, by skinning method."""


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

    Several :class:`~engine.render.SkinnedMesh` objects (the primitives of one character) can draw from the
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
        self._convert = cached_compute(ctx, "palette_dq.comp") if self.method == "dqs" else None

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


class MorphWeightBuffer:
    """Morph-target weights of many characters in one storage buffer (``std430`` binding 3).

    Each character owns ``stride`` consecutive floats; a mesh reads its ``T`` weights from
    ``weight_offset`` on (:meth:`~engine.render.SkinnedMesh.draw`), so one upload serves every morphed mesh of
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
