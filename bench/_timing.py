"""Timing helper shared by the benchmark scripts (run them as ``python bench/NAME.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_ms(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """Median wall time of each function; runs are interleaved so load spikes hit all rows alike."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for fn, bucket in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return [1e3 * statistics.median(bucket) for bucket in times]
