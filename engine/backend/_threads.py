"""How many blocks a parallel kernel splits its items into, and numba's thread count to run them (numba).

Shared by the backend's kernel drivers (:func:`engine.backend.frame.run` and the ``*_on``
drivers of :mod:`engine.backend._start_offset_kernels`, :mod:`engine.backend._pose_offset_kernels`,
:mod:`engine.backend._capture_kernels`, :mod:`engine.backend._clock_kernels` and
:mod:`engine.backend._offset_kernels`) and, through :func:`engine.player.compose.kernel_blocks`,
the graph's write-back: one block per thread, never more blocks than items or than numba's threads.
"""

from __future__ import annotations

from numba import config, get_num_threads, set_num_threads


def parallel_blocks(threads: int, count: int) -> int:
    """Blocks for ``count`` items on ``threads`` threads (at most one block each); 1 or less: run serially.

    Raises numba's thread count to the blocks when it is below them.
    """
    blocks = min(threads, int(config.NUMBA_NUM_THREADS), count)  # type: ignore[attr-defined]
    if blocks > 1 and get_num_threads() < blocks:
        set_num_threads(blocks)
    return blocks
