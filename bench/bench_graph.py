"""The animation graph on the player: 1 to 10,000 characters × 64 joints, both backends, 1 and 2 threads.

A locomotion graph (engine.graph): idle, a 2-D directional blend space over the planar velocity
(idle, walk and run in four directions: nine clips) and a jump that plays once, joined by
inertialized transitions and an any-state jump trigger. Every clip keys all 64 joints at 30 keys/s,
LINEAR, like exported mocap. Each frame a random 5 % of the characters get a new velocity, 1 % stop
and 0.3 % of those on the ground jump: about 15 transitions start every 1000 characters and frame.

A frame is ``GraphRuntime.update`` (the machines, the flat layers' weights and times, the player's
``end_frame``: sample, blend, transition stage; local→model and the palette). Its time splits into

- **the pose jobs**: sampling, blending and composing — the compiled kernels
  (``BufferFrame.sample_blend``, with ``compose`` the characters composed in the same pass,
  ``finalize``, and ``CaptureFrame.capture``: a capture's sampling,
  blending and velocity), the numpy passes (``engine.player.evaluate``,
  local→model and palette) and the sampling and blending inside the captures a transition starts
  from: the work any way of posing these characters does;
- **the graph layer**: everything else — parameters, blend-space weights, conditions, clocks,
  transitions and their captures' bookkeeping, the layers' weights and times, root and markers,
  the transition stage's offsets; of it, the column **stage** is the player's transition stage
  on the pose (the inertialized offsets added to the blended pose: on the compiled player inside
  the posing pass, timed by their kernel alone after the frame, :func:`stage_in_pass`, and taken
  out of the pose jobs; ``TransitionStage.apply`` and ``apply_blends`` elsewhere).

Also printed: 2 threads against 1 at 1000 characters by medians and paired (the two runtimes'
frames interleaved), and in the paired frames the time inside the compiled kernels against the
Python around them (:func:`timed_kernels`), which runs on one thread whatever the threads: the
2-thread speed-up it allows; allocations per frame on the compiled path after warm-up (tracemalloc), the calls
a frame there (``sys.setprofile``: counts, which the machine's load does not move), one
character's frame beside the Animator's alone (two actions, the same clips), and 10,000
characters each in its own state machine at 60 FPS with animation LOD (the poses by the LOD mix
of bench_frame: 10 % every frame, 25 % every 2nd, 65 % every 4th; the machines every frame, then
with the poses: a machine runs when its character is posed, with the dt accumulated since), with
the part of the frame spent in the machines and layers and the part in ``Player.end_frame`` (the
pose, local→model and the palette, float64: 16 KB a character written; or, as a crowd that only
draws ends its frame, float32 upload records only: 4 KB, ``end_frame(due, records, model=False)``).

Run: ``python bench/bench_graph.py [--repeat 9] [--quick]`` (a few minutes; ``--quick``: fewer
repeats and no numpy run at 10,000).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

import engine
from engine.anim import Channel, Clip, Skeleton
from engine.animator import Animator
from engine.backend import BufferFrame, UpdateSchedule
from engine.backend.stage import CaptureFrame, apply_offsets
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.math import quat_from_axis_angle
from engine.player import Player, capture, compose, evaluate
from engine.player.transitions import TransitionStage

DT = 1.0 / 60.0
ENGINE = str(Path(engine.__file__).parent)
WALK, RUN = 1.2, 3.0
COUNTS = (1, 100, 1000, 10_000)
#: The pose jobs timed apart from the graph layer: (owner, attribute).
JOBS = [
    (BufferFrame, "sample_blend"),
    (BufferFrame, "finalize"),
    (CaptureFrame, "capture"),
    (evaluate, "sample_blend"),
    (evaluate, "add_layers"),
    (compose, "model_from_pose"),
    (compose, "skinning_palette"),
    (capture, "sample"),
    (capture, "sample_with_velocity"),
    (capture, "blend_joint_weights"),
    (capture, "blend_velocity"),
    (capture, "additive_velocity"),
    (capture, "apply_additive"),
]
#: The player's transition stage on the pose where it runs outside the compiled pass.
STAGE = [(TransitionStage, "apply"), (TransitionStage, "apply_blends")]


def humanoid64() -> Skeleton:
    """64 joints: spine, head, arms with five three-bone fingers each, legs, a tail."""
    names: list[str] = []
    parents: list[int] = []

    def add(name: str, parent: str | None) -> None:
        names.append(name)
        parents.append(-1 if parent is None else names.index(parent))

    add("root", None)
    add("hips", "root")
    for parent, child in itertools.pairwise(["hips", "spine1", "spine2", "spine3", "spine4", "neck", "head", "jaw"]):
        add(child, parent)
    add("eye_l", "head")
    add("eye_r", "head")
    for side in "lr":
        add(f"clavicle_{side}", "spine4")
        add(f"upper_arm_{side}", f"clavicle_{side}")
        add(f"lower_arm_{side}", f"upper_arm_{side}")
        add(f"hand_{side}", f"lower_arm_{side}")
        for finger in range(5):
            previous = f"hand_{side}"
            for bone in range(3):
                add(f"finger{finger}{bone}_{side}", previous)
                previous = f"finger{finger}{bone}_{side}"
        add(f"upper_leg_{side}", "hips")
        add(f"lower_leg_{side}", f"upper_leg_{side}")
        add(f"foot_{side}", f"lower_leg_{side}")
        add(f"toes_{side}", f"foot_{side}")
    previous = "hips"
    for k in range(7):
        add(f"tail{k}", previous)
        previous = f"tail{k}"
    return Skeleton(names, parents, rest_translations=np.tile([0.0, 0.1, 0.0], (len(names), 1)))


def keyed_clip(name: str, num_joints: int, seed: int, duration: float) -> Clip:
    """Rotation keys on every joint at 30 keys/s and a root translation: a seamless loop."""
    rng = np.random.default_rng(seed)
    times = np.linspace(0.0, duration, round(30 * duration) + 1)
    phase = 2.0 * np.pi * times / duration
    channels = [
        Channel(
            j,
            "rotation",
            "LINEAR",
            times,
            quat_from_axis_angle(rng.normal(size=3), 0.4 * np.sin(phase + rng.uniform(0, 6.3))),
        )
        for j in range(num_joints)
    ]
    channels.append(
        Channel(0, "translation", "LINEAR", times, np.stack([0 * times, 0.02 * np.sin(2 * phase), 0 * times], -1))
    )
    return Clip(name, tuple(channels), num_joints, {"left_foot_down": (0.0,), "right_foot_down": (duration / 2,)})


def locomotion_document() -> dict[str, Any]:
    points = [{"at": [0.0, 0.0], "clip": "idle"}]
    for gait, speed in (("walk", WALK), ("run", RUN)):
        for direction, (x, z) in {"forward": (0, 1), "back": (0, -1), "left": (1, 0), "right": (-1, 0)}.items():
            points.append({"at": [x * speed, z * speed], "clip": f"{gait}_{direction}"})
    inertial = {"kind": "inertialize", "duration": 0.25}
    return {
        "parameters": {
            "vx": {"type": "float"},
            "vz": {"type": "float"},
            "moving": {"type": "bool"},
            "jump": {"type": "trigger"},
        },
        "start": "idle",
        "states": {
            "idle": {
                "motion": {"clip": "idle"},
                "transitions": [{"to": "move", "conditions": [{"parameter": "moving"}], **inertial}],
            },
            "move": {
                "motion": {"blend2d": ["vx", "vz"], "mode": "directional", "points": points},
                "transitions": [{"to": "idle", "conditions": [{"parameter": "moving", "value": False}], **inertial}],
            },
            "jump": {
                "motion": {"clip": "jump", "loop": False},
                "transitions": [{"to": "move", "exit_time": 1.0, **inertial}],
            },
        },
        "any_state": [{"to": "jump", "conditions": [{"parameter": "jump"}], **inertial}],
    }


class Inputs:
    """The random parameter stream: a new velocity for 5 %, a stop for 1 %, a jump for 0.3 % each frame."""

    def __init__(self, runtime: GraphRuntime, seed: int) -> None:
        self.runtime, self.rng, self.count = runtime, np.random.default_rng(seed), runtime.num_characters
        self.jumping = runtime.graph.root.state_index("jump")

    def apply(self) -> None:
        rng, count, parameters = self.rng, self.count, self.runtime.parameters
        turning = np.flatnonzero(rng.random(count) < 0.05)
        heading, speed = rng.uniform(0, 2 * np.pi, turning.size), rng.uniform(0.5, RUN, turning.size)
        parameters.set_float("vx", speed * np.sin(heading), turning)
        parameters.set_float("vz", speed * np.cos(heading), turning)
        parameters.set_bool("moving", True, turning)
        parameters.set_bool("moving", False, np.flatnonzero(rng.random(count) < 0.01))
        grounded = self.runtime.root.state != self.jumping  # a trigger waits until taken: no jumping twice
        parameters.set_trigger("jump", np.flatnonzero((rng.random(count) < 0.003) & grounded))


@contextmanager
def timed_jobs(spent: list[float], jobs: list[tuple[Any, str]] = JOBS) -> Iterator[None]:
    """Add the wall time spent inside ``jobs`` (default: the pose jobs, :data:`JOBS`) to ``spent[0]`` while inside."""
    originals = [(owner, name, getattr(owner, name)) for owner, name in jobs]
    depth = [0]

    def wrap(job: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            start = time.perf_counter()
            try:
                return job(*args, **kwargs)
            finally:
                depth[0] -= 1
                if depth[0] == 0:  # a job inside a job counts once
                    spent[0] += time.perf_counter() - start

        return run

    for owner, name, job in originals:
        setattr(owner, name, wrap(job))
    try:
        yield
    finally:
        for owner, name, job in originals:
            setattr(owner, name, job)


def make(graph: Any, count: int, backend: str, threads: int) -> tuple[GraphRuntime, Inputs]:
    player = Player(graph.skeleton, count, backend=backend, threads=threads)
    runtime = GraphRuntime(graph, count, player=player)
    inputs = Inputs(runtime, seed=0)
    for _ in range(60):  # a second in: characters spread over the states and mid-transition
        inputs.apply()
        runtime.update(DT)
    return runtime, inputs


def stage_in_pass(runtime: GraphRuntime, scratch: tuple[np.ndarray, ...]) -> float:
    """Seconds of the transition stage's offsets inside the compiled pass, estimated after the frame.

    On the compiled player the inertialized offsets are added within the posing pass (between a
    character's blend and its compose), where they cannot be timed apart: their kernel alone
    (:func:`engine.backend.stage.apply_offsets`, the same per-character code) on the same
    characters at the same clock, into ``scratch`` (a pose shaped like the player's: its
    numbers do not matter here), right after the frame.
    """
    player = runtime.player
    stage = player.transitions
    busy = stage.active()
    if player.backend != "numba" or not busy.size:
        return 0.0
    clock, transitions, decays, joints, bounds = stage.in_pass(player.clock)
    start = time.perf_counter()
    apply_offsets(busy, clock, transitions, decays[:2], (joints, bounds), scratch, player.threads)
    return time.perf_counter() - start


def frame_split(runtime: GraphRuntime, inputs: Inputs, repeat: int) -> tuple[float, float, float, float, float]:
    """Medians over ``repeat`` frames: ms of a whole frame, of the pose jobs, of the layer and of the stage; the share.

    The layer (frame minus pose jobs) and its share of the frame are taken frame by frame, then
    their medians: a frame that the shared machine slows down slows both parts of it alike. The
    stage's offsets inside the compiled pass (:func:`stage_in_pass`) count in the layer and the
    stage, not in the pose jobs.
    """
    count, joints = runtime.num_characters, runtime.graph.skeleton.num_joints
    identity = np.tile([0.0, 0.0, 0.0, 1.0], (count, joints, 1))
    scratch = (np.zeros((count, joints, 3)), identity, np.ones((count, joints, 3)))
    totals, jobs, stages = [], [], []
    for _ in range(repeat):
        spent, staged = [0.0], [0.0]
        inputs.apply()
        with timed_jobs(spent), timed_jobs(staged, STAGE):
            start = time.perf_counter()
            runtime.update(DT)
            totals.append(time.perf_counter() - start)
        in_pass = stage_in_pass(runtime, scratch)
        jobs.append(spent[0] - in_pass)
        stages.append(staged[0] + in_pass)
    layers = [total - job for total, job in zip(totals, jobs, strict=True)]
    shares = [layer / total for layer, total in zip(layers, totals, strict=True)]
    total, job, layer, stage = (1e3 * statistics.median(values) for values in (totals, jobs, layers, stages))
    return total, job, layer, stage, statistics.median(shares)


def paired_threads(graph: Any, count: int, pairs: int) -> tuple[float, float, list[tuple[float, float]]]:
    """Median and interquartile range of 1-thread / 2-thread frame time, the two runtimes' frames interleaved.

    Both play the same random inputs (the same seed), a frame of one then the same frame of the
    other: each pair gives one ratio, which a drift of the shared machine's speed touches alike.
    Also, per thread count, the medians (ms) of the frame's time inside the compiled kernels and
    outside them (:func:`timed_kernels`: the Python around them, which runs on one thread).
    """
    runtimes = [make(graph, count, "numba", threads) for threads in (1, 2)]
    ratios = []
    split: list[list[tuple[float, float]]] = [[], []]
    with timed_kernels() as inside:
        for _ in range(pairs):
            spent = []
            for (runtime, inputs), parts in zip(runtimes, split, strict=True):
                inputs.apply()
                inside[0] = 0.0
                start = time.perf_counter()
                runtime.update(DT)
                spent.append(time.perf_counter() - start)
                parts.append((inside[0], spent[-1] - inside[0]))
            ratios.append(spent[0] / spent[1])
    quartiles = np.percentile(ratios, [25, 75])
    medians = [
        (1e3 * statistics.median(k for k, _ in parts), 1e3 * statistics.median(o for _, o in parts)) for parts in split
    ]
    return statistics.median(ratios), float(quartiles[1] - quartiles[0]), medians


@contextmanager
def timed_kernels() -> Iterator[list[float]]:
    """Seconds spent in Ossa's compiled kernels (numba dispatchers called from Python) added to the list's item."""
    from numba.core.registry import CPUDispatcher  # noqa: PLC0415 (numba: the compiled runs only)

    inside = [0.0]
    originals = [
        (module, name, value)
        for module in [m for key, m in sys.modules.items() if key.startswith("engine.")]
        for name, value in list(vars(module).items())
        if isinstance(value, CPUDispatcher)
    ]
    wrappers: dict[int, Callable[..., Any]] = {}

    def wrap(kernel: Any) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return kernel(*args, **kwargs)
            finally:
                inside[0] += time.perf_counter() - start

        return run

    for module, name, kernel in originals:
        setattr(module, name, wrappers.setdefault(id(kernel), wrap(kernel)))
    try:
        yield inside
    finally:
        for module, name, kernel in originals:
            setattr(module, name, kernel)


def allocations(runtime: GraphRuntime, inputs: Inputs, frames: int = 5) -> tuple[float, float]:
    """Bytes still held per frame over ``frames`` frames (tracemalloc, garbage collected), and the peak within one.

    Traced from 50 frames before the count: what a frame leaves behind once the caches that fill
    on first use (traced too) are full, not those caches.
    """
    tracemalloc.start()
    for _ in range(50):
        inputs.apply()
        runtime.update(DT)
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    peaks = []
    for _ in range(frames):
        tracemalloc.reset_peak()
        inputs.apply()
        runtime.update(DT)
        peaks.append(tracemalloc.get_traced_memory()[1])
    gc.collect()
    held = (tracemalloc.get_traced_memory()[0] - before) / frames
    tracemalloc.stop()
    return held, statistics.median(peaks) - before


def calls(runtime: GraphRuntime, inputs: Inputs, frames: int = 20) -> tuple[float, float, float]:
    """Calls a frame (``sys.setprofile``): of Ossa's functions, of other Python functions, of C functions.

    The second are numpy's Python-level functions mostly, the third numpy's C functions and array
    methods and the builtins; a ufunc, an index and a numba kernel are not calls here. Counts,
    not times: the same on a loaded machine as on an idle one.
    """
    counts = [0, 0, 0]

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call":
            counts[0 if frame.f_code.co_filename.startswith(ENGINE) else 1] += 1
        elif event == "c_call":
            counts[2] += 1

    for _ in range(frames):
        inputs.apply()
        sys.setprofile(profile)
        runtime.update(DT)
        sys.setprofile(None)
    return counts[0] / frames, counts[1] / frames, counts[2] / frames - 1  # less setprofile(None) itself


def lod_frame(
    graph: Any, count: int, threads: int, repeat: int, hold: bool, records: bool = False
) -> tuple[float, float, float, float, float]:
    """10,000 characters, the poses by distance bands (10 % / 25 % / 65 %); the machines every frame or, with
    ``hold``, with their poses (logic LOD: a character's machine runs when it is posed, with its accumulated dt).

    ``records``: the frame ends as a crowd's does — the palette into float32 upload records, the
    model matrices not stored (``end_frame(due, records, model=False)``) — instead of the float64
    model matrices and palette. Returns the median and best frame, the median machines and layers,
    the median ``end_frame`` (ms) and the characters posed (mean)."""
    runtime, inputs = make(graph, count, "numba", threads)
    upload = np.zeros((count, graph.skeleton.num_joints, 4, 4), np.float32) if records else None
    distances = np.random.default_rng(7).permutation(
        np.concatenate(
            (
                np.linspace(2, 10, count // 10, endpoint=False),
                np.linspace(10, 30, count // 4, endpoint=False),
                np.linspace(30, 80, count - count // 10 - count // 4),
            )
        )
    )
    schedule = UpdateSchedule(count).set_rates_by_distance(distances)
    schedule.due()
    pending = np.zeros(count)
    totals, evaluated, logic, composing = [], [], [], []
    for _ in range(repeat):
        due = schedule.advance().due()
        inputs.apply()
        pending += DT
        step = np.zeros(count)
        step[due] = pending[due]
        start = time.perf_counter()
        runtime.player.begin_frame(step if hold else DT)
        runtime.control(due if hold else None)
        middle = time.perf_counter()
        runtime.player.end_frame(due, upload, model=upload is None)
        totals.append(time.perf_counter() - start)
        pending[due] = 0.0
        logic.append(middle - start)
        composing.append(totals[-1] - (middle - start))
        evaluated.append(due.size)
    median, best, machines = (1e3 * statistics.median(totals), 1e3 * min(totals), 1e3 * statistics.median(logic))
    return median, best, machines, 1e3 * statistics.median(composing), statistics.mean(evaluated)


def one_character(graph: Any, clips: dict[str, Clip], repeat: int) -> tuple[float, float]:
    """µs per frame of one character: the graph (moving, in its blend space), and an Animator of two actions."""
    runtime = GraphRuntime(graph, 1)
    runtime.parameters.set_float("vx", 0.6)
    runtime.parameters.set_float("vz", 1.0)
    runtime.parameters.set_bool("moving", True)
    animator = Animator(graph.skeleton, 1)
    animator.action(clips["walk_forward"]).play().set_weight(0.6)
    animator.action(clips["walk_left"]).play().set_weight(0.4)
    results = []
    for frame in (lambda: runtime.update(DT), lambda: animator.update(DT)):
        for _ in range(30):
            frame()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            frame()
            samples.append(time.perf_counter() - start)
        results.append(1e6 * statistics.median(samples))
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    skeleton = humanoid64()
    joints = skeleton.num_joints
    clips = {"idle": keyed_clip("idle", joints, 1, 3.0), "jump": keyed_clip("jump", joints, 2, 1.2)}
    for k, (gait, direction) in enumerate(itertools.product(("walk", "run"), ("forward", "back", "left", "right"))):
        clips[f"{gait}_{direction}"] = keyed_clip(f"{gait}_{direction}", joints, 10 + k, 1.0 if gait == "walk" else 0.7)
    graph = bind_graph(parse_graph(locomotion_document(), "locomotion"), skeleton, clips)

    print(f"{joints} joints, locomotion graph (9-clip 2-D blend space, inertialized transitions); medians")
    columns = ("frame ms", 10), ("pose jobs", 11), ("graph layer", 13), ("(stage)", 9), ("layer share", 13)
    print(f"{'backend':<18}{'C':>7}" + "".join(f"{name:>{width}}" for name, width in columns))
    split = {}
    for backend, threads in (("numba", 1), ("numba", 2), ("numpy", 1)):
        for count in COUNTS:
            if backend == "numpy" and count == COUNTS[-1] and args.quick:
                continue
            runtime, inputs = make(graph, count, backend, threads)
            repeat = max(3, 3 * args.repeat if count <= 1000 else args.repeat // 3)
            total, jobs, layer, stage, share = frame_split(runtime, inputs, repeat)
            split[(backend, threads, count)] = (total, jobs)
            label = f"{backend}, {threads} thread{'s' if threads > 1 else ''}"
            print(f"{label:<18}{count:>7}{total:>10.2f}{jobs:>11.2f}{layer:>13.2f}{stage:>9.2f}{share:>13.0%}")
    single, double = split[("numba", 1, 1000)][0], split[("numba", 2, 1000)][0]
    print(f"\n2 threads vs 1 at 1000 characters (compiled): {single / double:.2f}× the frame (medians above)")
    ratio, spread, ((kernels_1, outside_1), (kernels_2, outside_2)) = paired_threads(
        graph, 1000, 3 * max(args.repeat, 9)
    )
    print(
        f"  paired, the 1- and 2-thread runtimes' frames interleaved: {ratio:.2f}× (interquartile range {spread:.2f})"
    )
    bound = (kernels_1 + outside_1) / (kernels_1 / 2.0 + outside_1)
    print(
        f"  in those frames, the compiled kernels {kernels_1:.2f} → {kernels_2:.2f} ms ({kernels_1 / kernels_2:.2f}×), "
        f"the Python around them {outside_1:.2f} → {outside_2:.2f} ms (one thread): with it as it is, kernels twice "
        f"as fast give at most {bound:.2f}×"
    )

    runtime, inputs = make(graph, 1000, "numba", 1)
    held, peak = allocations(runtime, inputs, frames=100)
    print(
        f"allocations, compiled path, 1000 characters: {held:.0f} B/frame held after a frame, "
        f"{peak / 1024:.0f} KiB peak within one (numpy temporaries of the machines and layers)"
    )
    ours, others, native = calls(runtime, inputs)
    print(
        f"calls, compiled path, 1000 characters: {ours:.0f} of Ossa's functions, {others:.0f} of other Python "
        f"functions (numpy's), {native:.0f} of C functions and methods a frame (no ufuncs, indexes, kernels)"
    )
    graph_us, animator_us = one_character(graph, clips, 200)
    print(f"one character: the graph's frame {graph_us:.0f} µs, an Animator of two actions alone {animator_us:.0f} µs")

    print("\n10,000 characters, each in its own state machine; LOD 1000 every frame, 2500 every 2nd, 6500 every 4th:")
    for hold, records in ((False, False), (True, False), (True, True)):
        heading = "the machines with their poses (logic LOD)" if hold else "the machines every frame"
        ending = "float32 upload records only" if records else "float64 model matrices and palette"
        print(f"  {heading}, {ending}:")
        for threads in (1, 2):
            median, best, logic, composing, evaluated = lod_frame(
                graph, 10_000, threads, max(6, args.repeat), hold, records
            )
            verdict = "fits 60 FPS" if median < 1000 / 60 else "misses 60 FPS"
            print(
                f"    {threads} thread{'s' if threads > 1 else ''}: {median:.1f} ms [{best:.1f}] per frame, of which "
                f"the machines and layers {logic:.1f} ms, posing and composing {composing:.1f} ms; "
                f"{evaluated:.0f} characters posed: {verdict}"
            )


if __name__ == "__main__":
    main()
