"""The animation graph on 1000 characters × 64 joints: its logic, its poses, and transitions' costs.

A locomotion graph (engine.graph): idle, a 2-D directional blend space over the planar velocity
(idle, walk and run in four directions: nine clips) and a jump that plays once, joined by
inertialized transitions and an any-state jump trigger. Every clip keys all 64 joints at 30 keys/s,
LINEAR, like exported mocap. Each frame a random 5 % of the characters get a new velocity, 1 % stop
and 0.3 % of those on the ground jump: about 15 transitions start every frame.

Rows of the first table, per frame (``dt`` = 1/60 s):

- ``graph logic``: ``GraphRuntime.advance`` — conditions, exit times, clocks, and starting the
  transitions (which captures the current output and its velocity);
- ``graph poses``: ``GraphRuntime.evaluate`` — the blend trees and transitions in progress;
- ``model_from_pose``; ``whole frame``: ``GraphRuntime.update``, all three;
- ``of which in the pose jobs``: the part of the whole frame spent inside ``sample``, ``blend``,
  the additive jobs and ``model_from_pose`` (timed around the runtime's calls to them, all in
  ``engine.graph._jobs``): the work any way of posing these characters does;
- ``the graph layer``: the rest — parameters, weights, conditions, clocks, transitions (their
  captures, offsets and blends' bookkeeping), gathers and scatters of character subsets.

The second table compares one transition between the same two clips (walk into run, all
characters half way through it) made as a crossfade (two clips sampled and blended) and as an
inertialization (one clip sampled, plus a decaying offset): ``GraphRuntime.evaluate``.

Timings are medians of interleaved runs, wall and CPU (process) time.

Run: ``python bench/bench_graph.py [--characters 1000] [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.anim import Channel, Clip, Skeleton, blend, model_from_pose, sample
from engine.graph import GraphRuntime, _jobs, bind_graph, parse_graph
from engine.math import quat_from_axis_angle, trusted

DT = 1.0 / 60.0
#: The pose jobs of engine.graph._jobs: sampling, velocities, blending, additive, model matrices.
JOBS = ("sample_pose", "sample_pose_velocity", "blend_layers", "add_pose", "model_matrices")
WALK, RUN = 1.2, 3.0


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


def pair_document(kind: str) -> dict[str, Any]:
    return {
        "parameters": {"go": {"type": "trigger"}},
        "start": "walk",
        "states": {
            "walk": {
                "motion": {"clip": "walk_forward"},
                "transitions": [{"to": "run", "kind": kind, "duration": 1.0, "conditions": [{"parameter": "go"}]}],
            },
            "run": {"motion": {"clip": "run_forward"}},
        },
    }


def median_ms(fns: list[Callable[[], object]], repeat: int) -> tuple[list[float], list[float]]:
    """Median wall and CPU time of each function in ms, runs interleaved (load spikes hit every row alike)."""
    wall: list[list[float]] = [[] for _ in fns]
    cpu: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for fn, w, c in zip(fns, wall, cpu, strict=True):
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            c.append(time.process_time() - start_cpu)
            w.append(time.perf_counter() - start)
    return [1e3 * statistics.median(b) for b in wall], [1e3 * statistics.median(b) for b in cpu]


class Inputs:
    """The random parameter stream: a new velocity for 5 %, a stop for 1 %, a jump for 0.3 % each frame."""

    def __init__(self, runtime: GraphRuntime, seed: int) -> None:
        self.runtime, self.rng, self.count = runtime, np.random.default_rng(seed), runtime.num_characters
        self.jumping = runtime.graph.root.state_index("jump")

    def apply(self) -> None:
        rng, count, parameters = self.rng, self.count, self.runtime.parameters
        turning = np.nonzero(rng.random(count) < 0.05)[0]
        heading, speed = rng.uniform(0, 2 * np.pi, turning.size), rng.uniform(0.5, RUN, turning.size)
        parameters.set_float("vx", speed * np.sin(heading), turning)
        parameters.set_float("vz", speed * np.cos(heading), turning)
        parameters.set_bool("moving", True, turning)
        parameters.set_bool("moving", False, np.nonzero(rng.random(count) < 0.01)[0])
        grounded = self.runtime.root.state != self.jumping  # a trigger waits until taken: no jumping twice
        parameters.set_trigger("jump", np.nonzero((rng.random(count) < 0.003) & grounded)[0])


def time_in_jobs(frame: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median wall and CPU ms per ``frame`` spent inside the pose jobs the graph calls (engine.graph._jobs)."""
    spent = [0.0, 0.0]
    originals = {name: getattr(_jobs, name) for name in JOBS}

    def timed(job: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            start, start_cpu = time.perf_counter(), time.process_time()
            try:
                return job(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start
                spent[1] += time.process_time() - start_cpu

        return run

    walls, cpus = [], []
    try:
        for name, job in originals.items():
            setattr(_jobs, name, timed(job))
        frame()
        for _ in range(repeat):
            spent[:] = [0.0, 0.0]
            frame()
            walls.append(spent[0])
            cpus.append(spent[1])
    finally:
        for name, job in originals.items():
            setattr(_jobs, name, job)
    return 1e3 * statistics.median(walls), 1e3 * statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--characters", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    count = args.characters
    skeleton = humanoid64()
    joints = skeleton.num_joints
    clips = {"idle": keyed_clip("idle", joints, 1, 3.0), "jump": keyed_clip("jump", joints, 2, 1.2)}
    for k, (gait, direction) in enumerate(itertools.product(("walk", "run"), ("forward", "back", "left", "right"))):
        clips[f"{gait}_{direction}"] = keyed_clip(f"{gait}_{direction}", joints, 10 + k, 1.0 if gait == "walk" else 0.7)

    graph = bind_graph(parse_graph(locomotion_document(), "locomotion"), skeleton, clips)
    runtime = GraphRuntime(graph, count)
    inputs = Inputs(runtime, seed=0)
    for _ in range(120):  # two seconds in: characters spread over the states and mid-transition
        inputs.apply()
        runtime.update(DT)
    states = runtime.state_names()
    busy = int(runtime.in_transition().sum())

    model = model_from_pose(skeleton, runtime.local_pose)

    def graph_logic() -> None:
        inputs.apply()
        runtime.advance(DT)

    def whole_frame() -> None:
        inputs.apply()
        runtime.update(DT)

    def trusted_call(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            with trusted():
                return fn()

        return run

    rows = [
        ("graph logic (advance)", graph_logic),
        ("graph poses (evaluate)", runtime.evaluate),
        ("model_from_pose", lambda: model_from_pose(skeleton, runtime.local_pose, out=model)),
        ("whole frame (update)", whole_frame),
    ]
    wall, cpu = median_ms([trusted_call(fn) for _, fn in rows], args.repeat)
    inside_wall, inside_cpu = time_in_jobs(trusted_call(whole_frame), args.repeat)
    print(
        f"{count} characters × {joints} joints, locomotion graph (9-clip 2-D blend space, inertialized "
        f"transitions); after 2 s: {states.count('idle')} idle, {states.count('move')} moving, "
        f"{states.count('jump')} jumping, {busy} mid-transition; median of {args.repeat} interleaved runs"
    )
    print(f"{'what':<34}{'wall ms':>10}{'CPU ms':>10}")
    for (name, _), w, c in zip(rows, wall, cpu, strict=True):
        print(f"{name:<34}{w:>10.2f}{c:>10.2f}")
    print(f"{'  of which in the pose jobs':<34}{inside_wall:>10.2f}{inside_cpu:>10.2f}")
    graph_wall, graph_cpu = wall[3] - inside_wall, cpu[3] - inside_cpu
    print(f"{'  the graph layer (the rest)':<34}{graph_wall:>10.2f}{graph_cpu:>10.2f}")
    print(f"{'graph layer / pose jobs':<34}{graph_wall / inside_wall:>10.0%}{graph_cpu / inside_cpu:>10.0%}")

    pair_rows = []
    for kind in ("crossfade", "inertialize"):
        pair = GraphRuntime(bind_graph(parse_graph(pair_document(kind), kind), skeleton, clips), count)
        pair.update(0.3)
        pair.parameters.set_trigger("go")
        pair.update(0.5)  # half way through a 1 s transition
        assert all(pair.in_transition())
        pair_rows.append((kind, pair.evaluate))
    walk_forward, run_forward = clips["walk_forward"], clips["run_forward"]
    times = np.random.default_rng(1).uniform(0.0, 0.7, count)
    pair_rows.append(
        (
            "bare: sample + sample + blend",
            lambda: blend(
                skeleton.rest_pose,
                [sample(walk_forward, skeleton.rest_pose, times), sample(run_forward, skeleton.rest_pose, times)],
                [0.5, 0.5],
            ),
        )
    )
    pair_rows.append(("bare: sample one clip", lambda: sample(run_forward, skeleton.rest_pose, times)))
    wall, cpu = median_ms([trusted_call(fn) for _, fn in pair_rows], args.repeat)
    print()
    print(f"one transition, walk into run, {count} characters half way through (GraphRuntime.evaluate)")
    print(f"{'what':<32}{'wall ms':>10}{'CPU ms':>10}")
    for (name, _), w, c in zip(pair_rows, wall, cpu, strict=True):
        print(f"{name:<32}{w:>10.2f}{c:>10.2f}")
    print(f"{'inertialize / crossfade':<32}{wall[1] / wall[0]:>10.2f}{cpu[1] / cpu[0]:>10.2f}")


if __name__ == "__main__":
    main()
