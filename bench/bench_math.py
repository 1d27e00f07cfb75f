"""Median time per element of Ossa's batched quaternion math against scipy's ``Rotation``.

Run: ``python bench/bench_math.py [N] [REPEATS]`` (defaults 10**6 quaternions, 5 repeats).

Each operation is timed ``REPEATS`` times on the same ``N`` random inputs and the median is
reported in nanoseconds per element. The clock is the process's CPU time (``time.process_time``):
on a shared, loaded machine it varies far less than wall time, and every operation timed here
runs on one thread. ``ossa`` runs with input validation on (the default), ``trusted`` inside
:func:`engine.math.trusted` (no NaN/inf scans). scipy's ``Rotation`` objects are built outside the
timed region, so scipy is timed on the operation alone. scipy has no element-wise slerp of pairs;
its equivalent is the formula its ``Slerp`` class evaluates,
``a * Rotation.from_rotvec((a⁻¹ b).as_rotvec() * t)``. ``ratio`` is ossa / scipy (below 1: Ossa
is faster).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from engine.math import (
    matrix_from_quat,
    quat_from_matrix,
    quat_multiply,
    quat_rotate,
    quat_slerp,
    trusted,
)


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    """Median CPU time of ``fn`` over ``repeats`` back-to-back calls after one warm-up call.

    Back to back, each function finds the allocator in the state its own previous call left
    (interleaving with another library's calls would charge it for their page faults).
    """
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def trusted_call(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with trusted():
            return fn()

    return run


def main(n: int = 10**6, repeats: int = 5) -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(n, 4))
    a /= np.linalg.norm(a, axis=-1, keepdims=True)
    b = rng.normal(size=(n, 4))
    b /= np.linalg.norm(b, axis=-1, keepdims=True)
    v = rng.normal(size=(n, 3))
    t = rng.uniform(0.0, 1.0, n)
    m = matrix_from_quat(a)
    ra, rb = Rotation.from_quat(a), Rotation.from_quat(b)

    def scipy_slerp() -> Rotation:
        return ra * Rotation.from_rotvec((ra.inv() * rb).as_rotvec() * t[:, None])

    cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
        ("multiply", lambda: quat_multiply(a, b), lambda: ra * rb),
        ("rotate", lambda: quat_rotate(a, v), lambda: ra.apply(v)),
        ("slerp", lambda: quat_slerp(a, b, t), scipy_slerp),
        ("matrix_from_quat", lambda: matrix_from_quat(a), ra.as_matrix),
        ("quat_from_matrix", lambda: quat_from_matrix(m), lambda: Rotation.from_matrix(m)),
    ]
    per_element = 1e9 / n
    print(f"N = {n:,} quaternions, median of {repeats} runs, ns per element")
    print(f"{'operation':<18} {'ossa':>8} {'trusted':>8} {'scipy':>8} {'ratio':>6}")
    for name, ossa, scipy in cases:
        ossa_s, trusted_s, scipy_s = (median_seconds(fn, repeats) for fn in (ossa, trusted_call(ossa), scipy))
        print(
            f"{name:<18} {ossa_s * per_element:8.1f} {trusted_s * per_element:8.1f} "
            f"{scipy_s * per_element:8.1f} {ossa_s / scipy_s:6.2f}"
        )


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
