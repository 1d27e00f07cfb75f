"""Batch-innermost storage for per-joint arrays (shared by sampling, local-to-model and skinning).

Poses and matrices are shaped ``(*batch, J, *tail)`` as everywhere in Ossa, but the arrays these
jobs return are transposed views of ``(*tail, J, B)`` buffers, ``B = prod(batch)``: each component
of each joint is one contiguous run over the characters. Numpy semantics are unchanged; only the
speed of component-wise arithmetic differs (long contiguous runs instead of 3- or 4-element ones).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray


def as_slice(indices: IntArray) -> slice | IntArray:
    """``indices`` as a slice when they are consecutive and ascending (a view, not a gather)."""
    if indices.size == 0:
        return indices
    start = int(indices[0])
    if np.array_equal(indices, np.arange(start, start + indices.size)):
        return slice(start, start + indices.size)
    return indices


def batch_last_empty(batch: tuple[int, ...], joints: int, tail: tuple[int, ...]) -> tuple[FloatArray, FloatArray]:
    """An uninitialised array ``(*batch, joints, *tail)`` stored batch-innermost, and its storage view.

    Returns ``(array, storage)``; ``storage`` is the same memory as a C-contiguous
    ``(*tail, joints, prod(batch))`` array.
    """
    storage = np.empty((*tail, joints, math.prod(batch)))
    order = (storage.ndim - 1, storage.ndim - 2, *range(len(tail)))
    return storage.transpose(order).reshape(*batch, joints, *tail), storage


def storage_view(array: FloatArray, joints: int, tail: tuple[int, ...], name: str) -> FloatArray:
    """Writable view of ``array`` ``(*batch, joints, *tail)`` as ``(*tail, joints, prod(batch))``.

    Raises :class:`~engine.errors.InvalidInputError` naming ``name`` when the batch axes cannot
    be merged without a copy (writes into a copy would be lost) or the array is read-only.
    """
    count = math.prod(array.shape[: array.ndim - 1 - len(tail)])
    flat = array.reshape(count, joints, *tail)
    if flat.size and not np.may_share_memory(flat, array):
        raise InvalidInputError(f"{name} must be reshapeable to ({count}, {joints}, ...) without a copy")
    if not array.flags.writeable:
        raise InvalidInputError(f"{name} must be writable")
    return flat.transpose(*range(2, flat.ndim), 1, 0)


def components(array: FloatArray, joints: int, tail: tuple[int, ...]) -> FloatArray:
    """Read-side view (or copy) of ``array`` ``(*batch, joints, *tail)`` as ``(*tail, joints, prod(batch))``."""
    flat = array.reshape(math.prod(array.shape[: array.ndim - 1 - len(tail)]), joints, *tail)  # -1 fails for J = 0
    return flat.transpose(*range(2, flat.ndim), 1, 0)


def matrices_out(out: FloatArray | None, batch: tuple[int, ...], joints: int) -> tuple[FloatArray, FloatArray]:
    """The result ``(*batch, J, 4, 4)`` of a matrix job and its ``(4, 4, J, B)`` storage view.

    A new batch-innermost array when ``out`` is ``None``; otherwise ``out`` itself, checked.
    """
    if out is None:
        return batch_last_empty(batch, joints, (4, 4))
    if not isinstance(out, np.ndarray) or out.shape != (*batch, joints, 4, 4) or out.dtype != np.float64:
        got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise InvalidInputError(f"out must be a float64 array shaped {(*batch, joints, 4, 4)}, got {got}")
    return out, storage_view(out, joints, (4, 4), "out")


class _Workspace(threading.local):
    """Per-thread scratch memory, kept between calls (see :func:`scratch`)."""

    def __init__(self) -> None:
        self.buffers: dict[str, FloatArray] = {}


_WORKSPACE = _Workspace()


def scratch(name: str, shape: tuple[int, ...]) -> FloatArray:
    """An uninitialised float64 array of ``shape`` for temporaries, reused by later calls.

    Fresh multi-megabyte arrays cost page faults on every call (several milliseconds per frame at
    1000 characters); these buffers are allocated once per thread and grow to the largest size
    asked for under ``name``. A job must never return scratch memory, and two arrays alive at
    the same time need two names.
    """
    size = math.prod(shape)
    buffer = _WORKSPACE.buffers.get(name)
    if buffer is None or buffer.size < size:
        buffer = _WORKSPACE.buffers[name] = np.empty(size)
    return buffer[:size].reshape(shape)
