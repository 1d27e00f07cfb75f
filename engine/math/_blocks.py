"""Cache-blocked evaluation of element-wise kernels over large batches.

A kernel written as plain numpy component arithmetic (``out[..., 0] = a[..., 1] * b[..., 2] ...``)
makes one pass over memory per operation. For a million elements every temporary is megabytes,
so the passes run at memory speed and the scattered writes into ``(..., 3, 3)`` outputs cost more
than the arithmetic. :func:`blockwise` runs the same kernel on slices of :data:`BLOCK` elements,
whose temporaries stay in the CPU cache; below that size it is a single direct call. The loop is
over blocks of thousands of elements, never over elements.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from engine.math._checks import FloatArray

#: Elements per block: about thirty float64 temporaries of this length fit in a 2 MiB L2 cache.
BLOCK = 8192


def blockwise(
    kernel: Callable[..., None], out_trailing: tuple[int, ...], *arrays: tuple[FloatArray, int]
) -> FloatArray:
    """Allocate the output and fill it with ``kernel(out, *inputs)``, block by block when large.

    Parameters
    ----------
    kernel
        Writes every element of its first argument from the remaining ones, using only numpy
        broadcasting over the leading axes (no reductions across the batch).
    out_trailing
        Trailing shape of one output element, e.g. ``(3, 3)``.
    *arrays
        ``(array, trailing_ndim)`` pairs: each array's leading axes broadcast to the batch shape.

    Returns
    -------
    FloatArray
        ``batch_shape + out_trailing``.
    """
    batch = np.broadcast_shapes(*(a.shape[: a.ndim - nd] for a, nd in arrays))
    out = np.empty(batch + out_trailing)
    size = math.prod(batch)
    if size <= BLOCK:
        kernel(out, *(a for a, _ in arrays))
        return out
    flat_inputs = [
        np.broadcast_to(a, batch + a.shape[a.ndim - nd :]).reshape(size, *a.shape[a.ndim - nd :]) for a, nd in arrays
    ]
    flat_out = out.reshape(size, *out_trailing)
    for start in range(0, size, BLOCK):
        stop = start + BLOCK
        kernel(flat_out[start:stop], *(a[start:stop] for a in flat_inputs))
    return out
