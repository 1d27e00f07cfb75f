"""Median time of each engine.camera function on a batch of 10,000 cameras.

Run: ``python bench/bench_camera.py [N] [REPEATS]`` (defaults 10,000 cameras, 7 repeats).

Each row calls one function once on ``N`` cameras (random eyes, targets, orientations, angular
velocities; ``CameraSequence.sample`` gets ``N`` times through a 6-key squad + spline sequence).
Columns: the median µs per call with validation on (the default); the same inside
:func:`engine.math.trusted` (no NaN/inf scans); ns per camera; and ``× slerp``, the call's time
over one ``engine.math.quat_slerp`` on the same ``N`` (one numpy op chain, the issue's yardstick).
The last row calls ``look_at`` once per camera in a Python loop, to show what batching buys.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.camera import (
    CameraSequence,
    cone_clamp,
    kalman_initial,
    kalman_step,
    look_at,
    look_at_matrix,
    one_euro_initial,
    one_euro_step,
    smooth_position,
    smooth_rotation,
    smooth_rotation_naive,
    spring_position,
    spring_rotation,
    swing_twist,
    swing_twist_clamp,
    view_matrix,
)
from engine.math import quat_slerp, trusted


def median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def trusted_call(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with trusted():
            return fn()

    return run


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def main(n: int = 10_000, repeats: int = 7) -> None:
    rng = np.random.default_rng(0)
    eye = rng.normal(size=(n, 3)) * 10
    target = rng.normal(size=(n, 3))
    position, velocity = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    q, goal = unit(rng, n), unit(rng, n)
    omega = rng.normal(size=(n, 3))
    previous = look_at(eye, target + 0.01)
    dt = 1 / 60
    keys = look_at(rng.normal(size=(6, 3)) * 5, np.zeros(3))
    sequence = CameraSequence.from_keys(np.arange(6.0), rng.normal(size=(6, 3)) * 5, keys)
    times = rng.uniform(0.0, 5.0, n)
    euro, kalman = one_euro_initial(q), kalman_initial(q, 0.01)

    cases: list[tuple[str, Callable[[], Any]]] = [
        ("look_at", lambda: look_at(eye, target)),
        ("look_at (previous)", lambda: look_at(eye, target, previous=previous)),
        ("view_matrix", lambda: view_matrix(eye, q)),
        ("look_at_matrix", lambda: look_at_matrix(eye, target)),
        ("cone_clamp", lambda: cone_clamp(q, goal, 0.5)),
        ("swing_twist", lambda: swing_twist(q)),
        ("swing_twist_clamp", lambda: swing_twist_clamp(q, goal, 0.5, 0.2)),
        ("smooth_rotation", lambda: smooth_rotation(q, goal, dt, half_life=0.1)),
        ("smooth_position", lambda: smooth_position(position, target, dt, half_life=0.1)),
        ("smooth_rotation_naive", lambda: smooth_rotation_naive(q, goal, dt, 7.0)),
        ("spring_position", lambda: spring_position(position, velocity, target, dt, half_life=0.1)),
        ("spring_rotation", lambda: spring_rotation(q, omega, goal, dt, half_life=0.1)),
        ("CameraSequence.sample", lambda: sequence.sample(times)),
        ("one_euro_step", lambda: one_euro_step(euro, goal, dt, min_cutoff=1.0, beta=0.5)),
        (
            "kalman_step",
            lambda: kalman_step(kalman, goal, dt, measurement_noise=0.01, process_noise=1.0),
        ),
    ]
    slerp = median_seconds(lambda: quat_slerp(q, goal, 0.3), repeats)
    print(f"N = {n:,} cameras, median of {repeats} runs; quat_slerp on the same N: {slerp * 1e6:.0f} µs")
    print(f"{'function':<24} {'µs/call':>9} {'trusted':>9} {'ns/camera':>10} {'× slerp':>8}")
    for name, fn in cases:
        checked, fast = median_seconds(fn, repeats), median_seconds(trusted_call(fn), repeats)
        print(f"{name:<24} {checked * 1e6:9.0f} {fast * 1e6:9.0f} {checked * 1e9 / n:10.1f} {checked / slerp:8.1f}")

    def loop() -> None:
        for i in range(n):
            look_at(eye[i], target[i])

    looped = median_seconds(loop, 1)
    print(f"{'look_at, Python loop':<24} {looped * 1e6:9.0f} {'':>9} {looped * 1e9 / n:10.1f} {looped / slerp:8.1f}")


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
