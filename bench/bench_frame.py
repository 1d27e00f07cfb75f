"""One crowd frame against ozz-animation, three.js and Panda3D: sample 2 clips, blend, local→model, palette.

The workload of issue 17: a 64-joint humanoid (bench_pose's skeleton, 11 depth levels), two
clips (2.0 s and 1.5 s, 30 keys/s, LINEAR rotations and translations on every joint), every
character samples both at its own times, blends them 0.5/0.5, composes model matrices and writes
the palette (model × inverse bind) as float32 column-major ``mat4`` into a caller-owned buffer.

Rows: ozz-animation, three.js and Panda3D as measured in issue 17 (same machine kind, another day:
history, not compared with), the issue's "Ossa numpy today", then this run: the same numpy jobs
(engine.anim into reused buffers, no float32 packing: the anchor, since the machine's speed
drifts; ozz is compared as :data:`OZZ_PER_JOBS` times them), the numpy backend (those jobs plus
cursors and the float32 column-major write), the numba backend on 1 thread and on every thread.
Cells are wall-clock medians in ms per frame (the minimum in brackets: the machine is shared).

Also printed: every thread's speed-up at C = 1000 beside compute-only kernels' in the same run
(:func:`thread_scaling`), allocations per frame (tracemalloc), compile and cache-load times of the kernels
(fresh processes with an empty and a warm ``NUMBA_CACHE_DIR``), float32 vs float64 clip tables,
and 10,000 characters under animation LOD at 60 FPS.

Run: ``python bench/bench_frame.py`` (a few minutes; ``--quick`` for about one).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
from bench_pose import humanoid, make_clip
from numba import get_num_threads, njit, prange, set_num_threads

from engine.anim import Pose, blend, model_from_pose, sample, skinning_palette
from engine.backend import ClipBank, FrameState, UpdateSchedule, default_threads, evaluate_frame
from engine.math import trusted

COUNTS = (1, 10, 100, 1000, 10000)
ISSUE_ROWS = {  # ms per frame, single thread, from issue 17 (measured side by side on this machine kind)
    "ozz-animation 0.16 (C++, SSE2)": (0.0023, 0.26, 6.0, 59.0),
    "three.js r187": (0.030, 8.5, 80.0, None),
    "Panda3D 1.10": (0.042, 4.9, 50.0, None),
    "Ossa numpy (issue 17, 'today')": (0.42, 1.08, 8.2, 95.0),
}
ISSUE_COUNTS = (1, 100, 1000, 10000)
#: ozz-animation's time per frame over the numpy jobs' (:func:`jobs_frame`) measured side by side in one run
#: (issue 21: ozz 0.0029 / 0.45 / 10.3-12.1 ms, the jobs 1.06 / 2.6 / 23 ms at C = 1 / 100 / 1000): ozz
#: estimated for this run is this ratio times this run's numpy jobs, never a figure from another day.
OZZ_PER_JOBS = {1: 0.0029 / 1.06, 100: 0.17, 1000: 0.45}
ROOT = Path(__file__).resolve().parents[1]


def crowd(bank: ClipBank, count: int, threads: int) -> tuple[FrameState, np.ndarray, np.ndarray, np.ndarray]:
    """State (layer 0 walks, layer 1 waves), times ``(2, C)``, weights 0.5/0.5 and a float32 palette."""
    state = FrameState(bank, 2, count, threads=threads).play(0, 0).play(1, 1)
    times = np.random.default_rng(count).uniform(0.0, 1.5, (2, count))
    return state, times, np.full((2, count), 0.5), state.new_palette()


def timed(frame: Callable[[], object], times: np.ndarray, repeat: int) -> tuple[float, float]:
    """Median and minimum wall time (ms) of ``frame``, the clock advancing 1/60 s between calls."""
    frame()
    samples = []
    for _ in range(repeat):
        times += 1.0 / 60.0
        np.remainder(times, 1.5, out=times)
        start = time.perf_counter()
        frame()
        samples.append(time.perf_counter() - start)
    return 1e3 * statistics.median(samples), 1e3 * min(samples)


def jobs_frame(bank: ClipBank, count: int) -> tuple[Callable[[], object], np.ndarray]:
    """The issue's "Ossa numpy today" path: engine.anim's jobs into reused batch-innermost buffers."""
    skeleton, (walk, wave) = bank.skeleton, bank.clips
    times = np.random.default_rng(count).uniform(0.0, 1.5, (2, count))
    weights = np.full((2, count), 0.5)
    with trusted():
        stacked = Pose(*(np.empty((2, k, skeleton.num_joints, count)).transpose(0, 3, 2, 1) for k in (3, 4, 3)))
        local = Pose(*(np.empty((k, skeleton.num_joints, count)).transpose(2, 1, 0) for k in (3, 4, 3)))
    model = np.empty((4, 4, skeleton.num_joints, count)).transpose(3, 2, 0, 1)
    palette = np.empty_like(model)

    def frame() -> None:
        with trusted():
            sample(walk, skeleton.rest_pose, times[0], out=stacked[0])
            sample(wave, skeleton.rest_pose, times[1], out=stacked[1])
            blend(skeleton.rest_pose, stacked, weights, out=local)
            model_from_pose(skeleton, local, out=model)
            skinning_palette(skeleton, model, out=palette)

    return frame, times


def measure(bank: ClipBank, repeat_for: Callable[[int], int]) -> dict[str, dict[int, tuple[float, float]]]:
    threads = default_threads()
    rows: dict[str, dict[int, tuple[float, float]]] = {"Ossa numpy jobs (this run, the anchor)": {}}
    for count in COUNTS:
        frame, times = jobs_frame(bank, count)
        rows["Ossa numpy jobs (this run, the anchor)"][count] = timed(frame, times, max(3, repeat_for(count) // 10))
    for label, backend, workers in (
        ("Ossa numpy backend (this run)", "numpy", 1),
        ("Ossa numba, 1 thread", "numba", 1),
        (f"Ossa numba, {threads} threads", "numba", threads),
    ):
        rows[label] = {}
        for count in COUNTS:
            state, times, weights, palette = crowd(bank, count, workers)
            repeat = max(3, repeat_for(count) // (10 if backend == "numpy" else 1))

            def frame(state=state, times=times, weights=weights, palette=palette, backend=backend) -> None:
                evaluate_frame(state, times, weights, out=palette, backend=backend)

            rows[label][count] = timed(frame, times, repeat)
    return rows


def paired_ratios(bank: ClipBank, pairs: int) -> dict[int, tuple[float, float]]:
    """Per C of :data:`OZZ_PER_JOBS` (C > 1): median and spread of numpy jobs / compiled frame (1 thread), interleaved.

    The two frames alternate, ``pairs`` times, and each pair gives one ratio: a drift of the
    shared machine's speed touches both sides of a pair alike, unlike two medians taken minutes apart.
    """
    result = {}
    for count in (c for c in OZZ_PER_JOBS if c > 1):
        jobs, jobs_times = jobs_frame(bank, count)
        state, times, weights, palette = crowd(bank, count, 1)

        def compiled(state=state, times=times, weights=weights, palette=palette) -> None:
            evaluate_frame(state, times, weights, out=palette, backend="numba")

        ratios = [timed(jobs, jobs_times, 1)[0] / timed(compiled, times, 3)[0] for _ in range(pairs)]
        quartiles = np.percentile(ratios, [25, 75])
        result[count] = (statistics.median(ratios), float(quartiles[1] - quartiles[0]))
    return result


@njit(cache=True, parallel=True)
def _spin(blocks: int, rounds: int, chained: bool, out: np.ndarray) -> None:
    """Compute only, ``out.size`` items in ``blocks`` contiguous blocks: ``rounds`` sines each, chained or not.

    Chained, each sine waits for the one before (latency-bound: a core's second hardware thread
    doubles it); not chained, the sines overlap in the core's pipelines (throughput-bound, as the
    frame's arithmetic: only a second core doubles it).
    """
    items = out.size
    for b in prange(blocks):
        for i in range(b * items // blocks, (b + 1) * items // blocks):
            x, total = float(i), 0.0
            for k in range(rounds):
                if chained:
                    x = math.sin(x) + 1.0
                else:
                    total += math.sin(x + k)
            out[i] = x + total


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def thread_scaling(bank: ClipBank, threads: int, pairs: int) -> np.ndarray:
    """At C = 1000: the compiled frame's speed-up on ``threads`` threads over 1, beside the machine's own now.

    The machine's: compute-only kernels (:func:`_spin`, throughput- and latency-bound) as long
    as the frame on 1 thread, split into ``threads`` contiguous blocks as the frame kernels split
    characters (no memory traffic, no serial part): what ``threads`` threads of this shared
    machine give at the moment. The six runs alternate ``pairs`` times (the order reversed every
    other round), each round giving one ratio of each pair, so a drift of the machine's speed
    touches them alike. Returns the 25th, 50th and 75th percentiles (rows) of the frame's, the
    throughput-bound and the latency-bound kernels' ratios (columns).
    """

    def frame(workers: int) -> Callable[[], object]:
        state, times, weights, palette = crowd(bank, 1000, workers)

        def run() -> None:
            times[...] = np.remainder(times + 1.0 / 60.0, 1.5)
            evaluate_frame(state, times, weights, out=palette, backend="numba")

        run()
        return run

    runs = [frame(1), frame(threads)]
    set_num_threads(max(threads, get_num_threads()))
    out = np.empty(1000)
    target = statistics.median(_seconds(runs[0]) for _ in range(5))
    for chained in (False, True):
        rounds = 16
        while _seconds(partial(_spin, 1, rounds, chained, out)) < target:
            rounds *= 2
        runs += [partial(_spin, 1, rounds, chained, out), partial(_spin, threads, rounds, chained, out)]
    took = np.empty((pairs, len(runs)))
    for k in range(pairs):
        for index in range(len(runs)) if k % 2 else reversed(range(len(runs))):
            took[k, index] = _seconds(runs[index])
    return np.percentile(took[:, 0::2] / took[:, 1::2], [25, 50, 75], axis=0)


def allocations(bank: ClipBank) -> list[tuple[str, int]]:
    """Peak bytes traced during a frame of 1000 characters (after a warm-up frame)."""
    result = []
    for label, backend, threads in (
        ("numba, 1 thread", "numba", 1),
        (f"numba, {default_threads()} threads", "numba", default_threads()),
        ("numpy", "numpy", 1),
    ):
        state, times, weights, palette = crowd(bank, 1000, threads)
        evaluate_frame(state, times, weights, out=palette, backend=backend)
        tracemalloc.start()
        evaluate_frame(state, times, weights, out=palette, backend=backend)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        result.append((label, peak))
    return result


_STARTUP = """
import time
start = time.perf_counter()
import numpy as np, sys
sys.path.insert(0, "bench")
from bench_pose import humanoid, make_clip
from engine.backend import ClipBank, FrameState, evaluate_frame
bank = ClipBank(humanoid(), [make_clip("walk", 2.0, 1), make_clip("wave", 1.5, 2)])
ready = time.perf_counter()
for threads in (1, 2):
    state = FrameState(bank, 2, 64, threads=threads).play(1, 1)
    evaluate_frame(state, np.zeros((2, 64)), np.full((2, 64), 0.5), out=state.new_palette())
print(ready - start, time.perf_counter() - ready)
"""


def startup_times() -> list[tuple[str, float, float]]:
    """Import + bank time and first-frame time (compile, or load from cache) in fresh processes."""
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "NUMBA_CACHE_DIR": cache}
        for label in ("empty cache (compiles)", "warm cache (loads)"):
            out = subprocess.run(
                [sys.executable, "-c", _STARTUP], cwd=ROOT, env=env, capture_output=True, text=True, check=True
            )
            ready, first = (float(v) for v in out.stdout.split())
            rows.append((label, ready, first))
    return rows


def table_precision(bank64: ClipBank, bank32: ClipBank, repeat: int) -> list[tuple[str, float, float]]:
    """1000 characters: median ms and worst palette difference of float32 clip tables vs float64."""
    rows = []
    reference = None
    for label, bank in (("float64 tables", bank64), ("float32 tables", bank32)):
        state, times, weights, palette = crowd(bank, 1000, 1)
        wide = state.new_palette(np.float64)
        evaluate_frame(state, times, weights, out=wide)
        reference = wide if reference is None else reference
        error = float(np.abs(wide - reference).max() / np.abs(reference).max())
        median, _ = timed(lambda s=state, t=times, w=weights, p=palette: evaluate_frame(s, t, w, out=p), times, repeat)
        rows.append((label, median, error))
    return rows


def lod_frame(bank: ClipBank, repeat: int) -> list[tuple[str, float, float, float]]:
    """10,000 characters, distances 2..80 m (10 % within 10 m, 25 % within 30 m): rates 1/2/4."""
    count = 10_000
    distances = np.random.default_rng(7).permutation(
        np.concatenate(
            (
                np.linspace(2, 10, 1000, endpoint=False),
                np.linspace(10, 30, 2500, endpoint=False),
                np.linspace(30, 80, count - 3500),
            )
        )
    )
    rows = []
    for threads in sorted({1, default_threads()}):
        state, times, weights, palette = crowd(bank, count, threads)
        schedule = UpdateSchedule(count).set_rates_by_distance(distances)
        evaluate_frame(state, times, weights, out=palette)  # the first frame shows everyone
        schedule.due()
        evaluated: list[int] = []

        def frame(state=state, times=times, weights=weights, palette=palette, schedule=schedule, log=evaluated) -> None:
            due = schedule.advance().due()
            log.append(due.size)
            evaluate_frame(state, times, weights, out=palette, characters=due)

        median, best = timed(frame, times, repeat)
        rows.append((f"{threads} thread{'s' if threads > 1 else ''}", median, best, statistics.mean(evaluated)))
    return rows


def cell(value: float | None) -> str:
    return "—" if value is None else (f"{value:.4f}" if value < 0.1 else f"{value:.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no startup subprocesses")
    args = parser.parse_args()
    budget = 300 if args.quick else 3000  # characters × repeats per row

    def repeat_for(count: int) -> int:
        return int(min(2000, max(7, budget * 20 // count)))

    load_before = os.getloadavg()
    skeleton = humanoid()
    clips = [make_clip("walk", 2.0, 1), make_clip("wave", 1.5, 2)]
    bank = ClipBank(skeleton, clips)
    rows = measure(bank, repeat_for)
    load_after = os.getloadavg()

    print(f"{skeleton.num_joints} joints, 2 clips (30 keys/s, LINEAR), blend 0.5/0.5, float32 column-major palette.")
    print(f"Load average {load_before[0]:.2f} before, {load_after[0]:.2f} after ({os.cpu_count()} CPUs).")
    print("\nms per frame: the issue's figures, then this run (median [minimum]):\n")
    print("| | " + " | ".join(f"C = {c}" for c in COUNTS) + " |")
    print("|---" * (len(COUNTS) + 1) + "|")
    for label, values in ISSUE_ROWS.items():
        by_count = dict(zip(ISSUE_COUNTS, values, strict=True))
        print(f"| {label} | " + " | ".join(cell(by_count.get(c)) for c in COUNTS) + " |")
    for label, by_count in rows.items():
        print(f"| {label} | " + " | ".join(f"{cell(m)} [{cell(b)}]" for m, b in by_count.values()) + " |")
    jobs = rows["Ossa numpy jobs (this run, the anchor)"]
    anchor = jobs[1000][0] / ISSUE_ROWS["Ossa numpy (issue 17, 'today')"][2]
    ozz = {count: ratio * jobs[count][0] for count, ratio in OZZ_PER_JOBS.items()}
    print(f"\nAnchor: this run's numpy jobs at C = 1000 take {anchor:.2f}× the issue's 'Ossa numpy today'.")
    print(
        "ozz-animation estimated for this run (issue 21's side-by-side ratio × this run's numpy jobs): "
        + ", ".join(f"C={c}: {ozz[c]:.4g} ms" for c in ozz)
    )
    for label, by_count in rows.items():
        if "numba" in label:
            ratios = ", ".join(f"C={c}: {ozz[c] / by_count[c][0]:.2f}×" for c in ozz)
            print(f"{label} vs ozz (estimated ozz time / ours, >1 = faster than ozz): {ratios}")
    print("Paired, interleaved (numpy jobs, then the compiled frame on 1 thread, alternating):")
    for count, (ratio, spread) in paired_ratios(bank, 15 if args.quick else 41).items():
        versus = OZZ_PER_JOBS[count] * ratio
        print(
            f"  C={count}: numpy jobs / compiled = {ratio:.2f} (interquartile range {spread:.2f}), "
            f"so estimated ozz / compiled = {versus:.2f}× ({'faster' if versus > 1 else 'slower'} than ozz)"
        )
    single, multi = rows["Ossa numba, 1 thread"][1000], list(rows.values())[-1][1000]
    print(
        f"All threads vs 1 thread at C = 1000: {single[0] / multi[0]:.2f}× (medians), "
        f"{single[1] / multi[1]:.2f}× (minima)"
    )
    threads = default_threads()
    if threads > 1:
        quartiles = thread_scaling(bank, threads, 40 if args.quick else 200)
        print(
            f"Paired, interleaved with compute-only kernels as long (what {threads} threads of this machine give now), "
            f"{threads} threads vs 1 at C = 1000, median [quartiles] of the rounds' ratios:"
        )
        for column, label in enumerate(("the frame", "throughput-bound sines", "latency-bound sines")):
            low, middle, high = quartiles[:, column]
            print(f"  {label}: {middle:.2f}× [{low:.2f}, {high:.2f}]")
        print(f"  the frame gets {quartiles[1, 0] / quartiles[1, 1]:.0%} of the throughput-bound kernel's speed-up")
    print("\nAllocations during one frame of 1000 characters (tracemalloc peak):")
    for label, peak in allocations(bank):
        print(f"  {label}: {peak} bytes")

    print("\nClip tables, 1000 characters, 1 thread:")
    bank32 = ClipBank(skeleton, clips, table_dtype=np.float32)
    for label, median, error in table_precision(bank, bank32, repeat_for(1000)):
        print(f"  {label}: {median:.3f} ms, palette max |difference| / max |palette| = {error:.1e}")

    print("\nLOD: 10,000 characters, 1000 within 10 m (every frame), 2500 within 30 m (every 2nd), 6500 beyond (4th):")
    for label, median, best, evaluated in lod_frame(bank, max(10, repeat_for(4000))):
        verdict = "fits" if median < 1000 / 60 else "misses"
        print(f"  {label}: {median:.2f} ms [{best:.2f}] per frame, {evaluated:.0f} characters evaluated: {verdict}")

    if not args.quick:
        print("\nKernel start-up in a fresh process (import + bank, then the first frames on 1 and 2 threads):")
        for label, ready, first in startup_times():
            print(f"  {label}: import + bank {ready:.2f} s, first frames {first:.2f} s")


if __name__ == "__main__":
    main()
