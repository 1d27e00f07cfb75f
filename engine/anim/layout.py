"""Batch-innermost buffers for the per-frame jobs, and the scratch memory they reuse.

Every public job takes and returns ordinary C-ordered arrays shaped ``(*batch, J, ...)`` (one
row per character, joints next). Inside, the jobs work *batch-innermost*: each component of each
joint is one contiguous run over the ``B = prod(batch)`` characters, so every operation is a long
vectorised pass instead of ``B·J`` tiny 3-, 4- or 4×4-element ones (``bench/bench_pose.py``
measures the difference). That storage is an explicit type here, as ozz-animation's
``SoaTransform`` is: a caller that runs the jobs every frame (the
:class:`~engine.animator.Animator`) keeps its poses and matrices in these buffers, passes them as
inputs and as ``out=``, and converts to ordinary arrays only where it hands results on.

- :class:`PoseBuffer`: local poses, ``translations`` ``(3, J, B)``, ``rotations`` ``(4, J, B)``,
  ``scales`` ``(3, J, B)``, optionally stacked over a leading layer axis ``(N, k, J, B)``.
- :class:`MatrixBuffer`: model matrices or skinning palettes, ``entries`` ``(4, 4, J, B)``:
  ``entries[r, c, j, b]`` is row ``r``, column ``c`` of joint ``j``'s matrix for character ``b``.
- :class:`Workspace`: scratch memory the jobs borrow for their temporaries. Fresh
  multi-megabyte arrays cost page faults on every call (milliseconds per frame at 1000
  characters); a workspace kept by the caller is allocated once. Without one, a job allocates.

The buffers are C-contiguous float64 arrays with no hidden strides: writing into them through
any numpy view behaves as numpy says, and a compiled kernel can take them as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.pose import Pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, trusted

#: Components per joint of each pose array, in the order translations, rotations, scales.
POSE_WIDTHS = (3, 4, 3)
_ALIGN = 8  # workspace arrays start on 64-byte boundaries


def as_slice(indices: IntArray) -> slice | IntArray:
    """``indices`` as a slice when they are consecutive and ascending (a view, not a gather)."""
    if indices.size == 0:
        return indices
    start = int(indices[0])
    if np.array_equal(indices, np.arange(start, start + indices.size)):
        return slice(start, start + indices.size)
    return indices


def _batch_of(batch: int | tuple[int, ...]) -> tuple[int, ...]:
    shape = (int(batch),) if isinstance(batch, int | np.integer) else tuple(int(b) for b in batch)
    if any(b < 0 for b in shape):
        raise InvalidInputError(f"batch must be a non-negative count or shape, got {batch}")
    return shape


def components(array: FloatArray, joints: int, width: tuple[int, ...]) -> FloatArray:
    """View (or copy, when the batch axes cannot merge) of ``(*batch, J, *width)`` as ``(*width, J, B)``."""
    flat = array.reshape(math.prod(array.shape[: array.ndim - 1 - len(width)]), joints, *width)
    return flat.transpose(*range(2, flat.ndim), 1, 0)


def writable_components(array: FloatArray, joints: int, width: tuple[int, ...], name: str) -> FloatArray:
    """Writable view of ``array`` ``(*batch, J, *width)`` as ``(*width, J, B)``.

    Raises :class:`~engine.errors.InvalidInputError` naming ``name`` when the batch axes cannot
    be merged without a copy (writes into a copy would be lost) or the array is read-only.
    """
    count = math.prod(array.shape[: array.ndim - 1 - len(width)])
    flat = array.reshape(count, joints, *width)
    if flat.size and not np.may_share_memory(flat, array):
        raise InvalidInputError(f"{name} must be reshapeable to ({count}, {joints}, ...) without a copy")
    if not array.flags.writeable:
        raise InvalidInputError(f"{name} must be writable")
    return flat.transpose(*range(2, flat.ndim), 1, 0)


class Workspace:
    """Scratch memory the batched jobs borrow for temporaries, reused from call to call.

    Give one to the jobs you run every frame (``sample(..., workspace=ws)``); the
    :class:`~engine.animator.Animator` owns one. It grows to the largest need it has seen and
    then allocates nothing. A workspace serves one thread at a time (the same rule as for any
    numpy array you write into). Jobs never return workspace memory.

    A job takes its temporaries inside :meth:`scope`; they are handed back when the scope ends,
    so two temporaries alive at the same time never overlap, and nothing is named.

    Examples
    --------
    >>> ws = Workspace()
    >>> with ws.scope():
    ...     a, b = ws.empty((2, 3)), ws.empty((4,))
    ...     bool(np.shares_memory(a, b))
    False
    """

    def __init__(self) -> None:
        self._arena = np.empty(0)
        self._used = 0

    def scope(self) -> _Scope:
        """A ``with`` block whose :meth:`empty` arrays are given back at its end."""
        return _Scope(self)

    def empty(self, shape: tuple[int, ...]) -> FloatArray:
        """An uninitialised C-contiguous float64 array of ``shape``, valid until its scope ends."""
        size = math.prod(shape)
        needed = self._used + size
        if needed > self._arena.size:
            # Arrays already handed out keep the old block alive; the new one fits the peak.
            self._arena = np.empty(max(needed, 2 * self._arena.size))
        out = self._arena[self._used : needed].reshape(shape)
        self._used = -(-needed // _ALIGN) * _ALIGN
        return out

    @property
    def nbytes(self) -> int:
        """Bytes held (the largest need so far, or more)."""
        return int(self._arena.nbytes)


class _Scope:
    """The context manager of :meth:`Workspace.scope` (a plain class: it runs per level of a job)."""

    __slots__ = ("_mark", "_workspace")

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        self._mark = 0

    def __enter__(self) -> Workspace:
        self._mark = self._workspace._used
        return self._workspace

    def __exit__(self, *exc: object) -> None:
        self._workspace._used = self._mark


def workspace_or_fresh(workspace: Workspace | None) -> Workspace:
    """``workspace`` itself, or a new one for this call only (its temporaries still share memory)."""
    if workspace is None:
        return Workspace()
    if not isinstance(workspace, Workspace):
        raise InvalidInputError(f"workspace must be a Workspace or None, got {type(workspace).__name__}")
    return workspace


@dataclass(frozen=True, eq=False)
class PoseBuffer:
    """Local poses stored batch-innermost (module docstring): one contiguous run per component and joint.

    Attributes
    ----------
    translations, rotations, scales
        ``(*layers, 3, J, B)``, ``(*layers, 4, J, B)`` unit quaternions ``(x, y, z, w)``,
        ``(*layers, 3, J, B)``; ``layers`` is ``()`` or ``(N,)`` for a stack of ``N`` layers.
    batch
        The characters' batch shape, ``prod(batch) = B`` (usually ``(C,)``).

    Make one with :meth:`empty` or :meth:`from_pose`; read it back with :meth:`to_pose`.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Pose
    >>> pose = Pose(np.zeros((2, 5, 3)), np.tile([0.0, 0, 0, 1], (2, 5, 1)), np.ones((2, 5, 3)))
    >>> buffer = PoseBuffer.from_pose(pose)
    >>> buffer.rotations.shape, buffer.shape
    ((4, 5, 2), (2, 5))
    >>> np.array_equal(buffer.to_pose().rotations, pose.rotations)
    True
    """

    translations: FloatArray
    rotations: FloatArray
    scales: FloatArray
    batch: tuple[int, ...]

    @classmethod
    def empty(cls, batch: int | tuple[int, ...], num_joints: int, *, layers: int | None = None) -> PoseBuffer:
        """An uninitialised buffer for ``batch`` characters (a count or a shape), optionally ``layers`` deep."""
        shape = _batch_of(batch)
        lead = () if layers is None else (int(layers),)
        count = math.prod(shape)
        t, r, s = (np.empty((*lead, width, int(num_joints), count)) for width in POSE_WIDTHS)
        return cls(t, r, s, shape)

    @classmethod
    def scratch(cls, workspace: Workspace, batch: tuple[int, ...], num_joints: int) -> PoseBuffer:
        """An uninitialised single-layer buffer in ``workspace`` memory (valid until its scope ends)."""
        count = math.prod(batch)
        t, r, s = (workspace.empty((width, num_joints, count)) for width in POSE_WIDTHS)
        return cls(t, r, s, batch)

    @classmethod
    def from_pose(cls, pose: Pose) -> PoseBuffer:
        """A buffer holding a copy of ``pose`` ``(*batch, J)``."""
        if not isinstance(pose, Pose):
            raise InvalidInputError(f"pose must be a Pose, got {type(pose).__name__}")
        buffer = cls.empty(pose.shape[:-1], pose.num_joints)
        buffer.assign(pose)
        return buffer

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return int(self.rotations.shape[-2])

    @property
    def count(self) -> int:
        """Number of characters ``B``."""
        return int(self.rotations.shape[-1])

    @property
    def num_layers(self) -> int | None:
        """Layers of a stacked buffer, ``None`` for a single pose."""
        return int(self.rotations.shape[0]) if self.rotations.ndim == 4 else None

    @property
    def shape(self) -> tuple[int, ...]:
        """Leading shape of the pose it holds, ``(*layers, *batch, J)`` (as :attr:`Pose.shape`)."""
        lead = () if self.num_layers is None else (self.num_layers,)
        return (*lead, *self.batch, self.num_joints)

    def __repr__(self) -> str:
        layers = "" if self.num_layers is None else f"{self.num_layers} layers × "
        return f"PoseBuffer({layers}batch {self.batch}, {self.num_joints} joints)"

    def arrays(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(translations, rotations, scales)``."""
        return self.translations, self.rotations, self.scales

    def layer(self, n: int) -> PoseBuffer:
        """Layer ``n`` of a stacked buffer, as a view."""
        if self.num_layers is None:
            raise InvalidInputError("layer() needs a stacked buffer (made with layers=N)")
        return PoseBuffer(self.translations[n], self.rotations[n], self.scales[n], self.batch)

    def first_layers(self, n: int) -> PoseBuffer:
        """The stack of layers ``0 … n-1``, as a view."""
        if self.num_layers is None:
            raise InvalidInputError("first_layers() needs a stacked buffer (made with layers=N)")
        return PoseBuffer(self.translations[:n], self.rotations[:n], self.scales[:n], self.batch)

    def characters(self, index: slice) -> PoseBuffer:
        """Characters ``index`` (a slice of a 1-D batch), as a view: sample half a crowd into it."""
        if len(self.batch) != 1 or not isinstance(index, slice):
            raise InvalidInputError(f"characters() takes a slice of a 1-D batch, got {index!r} for batch {self.batch}")
        count = len(range(*index.indices(self.count)))
        return PoseBuffer(self.translations[..., index], self.rotations[..., index], self.scales[..., index], (count,))

    def assign(self, pose: Pose) -> PoseBuffer:
        """Copy ``pose`` in, broadcast over the layers and batch (a rest pose ``(J,)`` fills every character)."""
        if not isinstance(pose, Pose):
            raise InvalidInputError(f"pose must be a Pose, got {type(pose).__name__}")
        if pose.num_joints != self.num_joints:
            raise SkeletonMismatchError(f"pose has {pose.num_joints} joints but the buffer has {self.num_joints}")
        target = self.shape[:-1]
        try:
            for mine, theirs, width in zip(self.arrays(), pose.arrays(), POSE_WIDTHS, strict=True):
                full = np.broadcast_to(theirs, (*target, self.num_joints, width))
                lead = full.shape[: full.ndim - 2 - len(self.batch)]
                grid = full.reshape(*lead, self.count, self.num_joints, width)
                np.copyto(mine, np.moveaxis(grid, (-3, -1), (-1, -3)))
        except ValueError:
            message = f"pose shaped {pose.shape} does not broadcast to the buffer's {self.shape}"
            raise InvalidInputError(message) from None
        return self

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """Refused: a pose is three arrays (``np.asarray`` would make a 0-d object array); use :meth:`to_pose`."""
        raise InvalidInputError("a PoseBuffer holds three arrays (translations, rotations, scales): use to_pose()")

    def to_pose(self) -> Pose:
        """An ordinary C-ordered :class:`~engine.anim.pose.Pose` ``(*layers, *batch, J)`` holding a copy."""
        arrays = []
        for array in self.arrays():
            moved = np.moveaxis(array, (-3, -1), (-1, -3))  # (*layers, B, J, width)
            copied = np.array(moved, order="C")  # a copy even where the moved axes are C-ordered already
            arrays.append(copied.reshape(*self.shape, array.shape[-3]))
        with trusted():  # finite where they came from
            return Pose(*arrays)

    def gather(self, joints: IntArray) -> Pose:
        """Joints ``joints`` of a single-layer buffer as a C-ordered pose ``(*batch, n)``."""
        arrays = []
        for array in self.arrays():
            picked = array[:, joints].transpose(2, 1, 0)  # (B, n, width)
            arrays.append(np.ascontiguousarray(picked).reshape(*self.batch, len(joints), array.shape[0]))
        with trusted():
            return Pose(*arrays)

    def scatter(self, joints: IntArray, pose: Pose) -> None:
        """Write a pose ``(*batch, n)`` (or broadcastable) into joints ``joints`` of a single-layer buffer."""
        for mine, theirs, width in zip(self.arrays(), pose.arrays(), POSE_WIDTHS, strict=True):
            full = np.broadcast_to(theirs, (*self.batch, len(joints), width)).reshape(self.count, len(joints), width)
            mine[:, joints] = full.transpose(2, 1, 0)


@dataclass(frozen=True, eq=False)
class MatrixBuffer:
    """4×4 matrices per joint and character stored batch-innermost (module docstring).

    ``entries`` ``(4, 4, J, B)`` holds row ``r``, column ``c`` of joint ``j``'s matrix for
    character ``b`` at ``entries[r, c, j, b]``; ``batch`` is the characters' batch shape.
    """

    entries: FloatArray
    batch: tuple[int, ...]

    @classmethod
    def empty(cls, batch: int | tuple[int, ...], num_joints: int) -> MatrixBuffer:
        """An uninitialised buffer for ``batch`` characters and ``num_joints`` joints."""
        shape = _batch_of(batch)
        return cls(np.empty((4, 4, int(num_joints), math.prod(shape))), shape)

    @classmethod
    def scratch(cls, workspace: Workspace, batch: tuple[int, ...], num_joints: int) -> MatrixBuffer:
        """An uninitialised buffer in ``workspace`` memory (valid until its scope ends)."""
        return cls(workspace.empty((4, 4, num_joints, math.prod(batch))), batch)

    @classmethod
    def from_array(cls, matrices: Any) -> MatrixBuffer:
        """A buffer holding a copy of ``matrices`` ``(*batch, J, 4, 4)``."""
        array = as_array(matrices, "matrices", (4, 4))
        if array.ndim < 3:
            raise InvalidInputError(f"matrices must have shape (..., J, 4, 4), got {array.shape}")
        buffer = cls.empty(array.shape[:-3], array.shape[-3])
        np.copyto(buffer.entries, components(array, array.shape[-3], (4, 4)))
        return buffer

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return int(self.entries.shape[2])

    @property
    def count(self) -> int:
        """Number of characters ``B``."""
        return int(self.entries.shape[3])

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the matrices it holds as an array, ``(*batch, J, 4, 4)``."""
        return (*self.batch, self.num_joints, 4, 4)

    def __repr__(self) -> str:
        return f"MatrixBuffer(batch {self.batch}, {self.num_joints} joints)"

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """``np.asarray(buffer)``: the matrices as an ordinary C-ordered array ``(*batch, J, 4, 4)`` (a copy)."""
        array = self.to_array()
        return array if dtype is None else array.astype(dtype)

    def to_array(self, out: FloatArray | None = None) -> FloatArray:
        """The matrices as an ordinary C-ordered array ``(*batch, J, 4, 4)`` (a copy, or into ``out``)."""
        if out is None:
            out = np.empty(self.shape)
        elif not isinstance(out, np.ndarray) or out.shape != self.shape or out.dtype != np.float64:
            got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
            raise InvalidInputError(f"out must be a float64 array shaped {self.shape}, got {got}")
        np.copyto(writable_components(out, self.num_joints, (4, 4), "out"), self.entries)
        return out

    def gather(self, joints: Any) -> FloatArray:
        """Matrices of ``joints`` (an index or indices) as a C-ordered array ``(*batch, [n,] 4, 4)``."""
        picked = self.entries[:, :, joints]  # (4, 4, [n,] B)
        moved = np.moveaxis(picked, (0, 1), (-2, -1))  # ([n,] B, 4, 4)
        if moved.ndim == 4:
            moved = moved.transpose(1, 0, 2, 3)
        tail = moved.shape[1:]
        return np.ascontiguousarray(moved).reshape(*self.batch, *tail)


def matrices_destination(
    out: FloatArray | MatrixBuffer | None, batch: tuple[int, ...], joints: int, workspace: Workspace
) -> tuple[FloatArray, FloatArray | None]:
    """Where to compute (``(4, 4, J, B)`` entries) and, for an array result, that array's entry view.

    A :class:`MatrixBuffer` ``out`` is computed in place. Arrays are computed in workspace memory
    (contiguous: fast) and copied into the result's view by :func:`deliver_matrices`.
    """
    count = math.prod(batch)
    if isinstance(out, MatrixBuffer):
        if out.batch != batch or out.num_joints != joints:
            raise InvalidInputError(f"out must be a MatrixBuffer for batch {batch} and {joints} joints, got {out!r}")
        return out.entries, None
    if out is None:
        return workspace.empty((4, 4, joints, count)), None
    return workspace.empty((4, 4, joints, count)), matrix_array_view(out, batch, joints)


def matrix_array_view(out: Any, batch: tuple[int, ...], joints: int) -> FloatArray:
    """The ``(4, 4, J, B)`` view of an ``out`` array ``(*batch, J, 4, 4)``, after checking it fits and is writable."""
    if not isinstance(out, np.ndarray) or out.shape != (*batch, joints, 4, 4) or out.dtype != np.float64:
        got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise InvalidInputError(
            f"out must be a float64 array shaped {(*batch, joints, 4, 4)} or a MatrixBuffer, got {got}"
        )
    return writable_components(out, joints, (4, 4), "out")


def deliver_matrices(
    out: FloatArray | MatrixBuffer | None,
    m: FloatArray,
    view: FloatArray | None,
    batch: tuple[int, ...],
    written: slice | IntArray,
) -> FloatArray | MatrixBuffer:
    """The job's result: ``out`` (a buffer computed in place, or an array filled from ``m``) or a new array."""
    if isinstance(out, MatrixBuffer):
        return out
    if out is None:
        return MatrixBuffer(m, batch).to_array()
    assert view is not None
    view[:, :, written] = m[:, :, written]
    return out
