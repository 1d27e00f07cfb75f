"""Per-frame pose pipeline: sample → local-to-model → skinning palette, for C characters × 64 joints.

A generated humanoid-like skeleton (64 joints, 11 depth levels) plays two clips (2.0 s and 1.5 s,
30 keys per second, LINEAR rotations and translations on every joint); half the characters play
each clip, each at its own time. Every stage is timed many times and the median is printed, in ms
per frame and ns per joint, next to a per-joint pure-Python loop that does the same math (binary
search + slerp/lerp per channel, T·R·S, parent product, inverse-bind product).

Columns: ``sample`` (both clips, into one reused :class:`~engine.anim.layout.PoseBuffer`),
``model_from_pose`` and ``palette`` (into reused :class:`~engine.anim.layout.MatrixBuffer` s, one
reused workspace), ``frame (out=)`` (the three in a row, buffers reused), ``frame (new arrays)``
(fresh C-ordered outputs every frame, scratch reused: their page faults and layout changes are
the difference), ``pose.matrices + local_to_model`` (the 4×4 route, from a C-ordered pose into a
new array), the Python loop, and loop time / ``frame (out=)``.

Run: ``python bench/bench_pose.py`` (about a minute; ``--quick`` for a few seconds).
"""

from __future__ import annotations

import argparse
import bisect
import math
import time
from collections.abc import Callable

import numpy as np

from engine.anim import Channel, Clip, Pose, Skeleton, compile_clip, model_from_pose, sample, skinning_palette
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.anim.local_to_model import local_to_model
from engine.math import trusted

JOINTS = 64
KEYS_PER_SECOND = 30


def humanoid() -> Skeleton:
    """Hips, spine ×3, neck, head + 12 face joints, two arms with 5 three-joint fingers, two legs."""
    names: list[str] = []
    parents: list[int] = []

    def add(name: str, parent: int) -> int:
        names.append(name)
        parents.append(parent)
        return len(names) - 1

    hips = add("hips", -1)
    spine = add("spine1", hips)
    spine = add("spine2", spine)
    chest = add("spine3", spine)
    head = add("head", add("neck", chest))
    for i in range(12):
        add(f"face{i}", head)
    for side in "LR":
        hand = add(f"hand{side}", add(f"forearm{side}", add(f"arm{side}", add(f"clavicle{side}", chest))))
        for finger in range(5):
            add(f"finger{side}{finger}c", add(f"finger{side}{finger}b", add(f"finger{side}{finger}a", hand)))
        add(f"toe{side}", add(f"foot{side}", add(f"shin{side}", add(f"thigh{side}", hips))))
    rng = np.random.default_rng(7)
    rest_t = rng.normal(0.0, 0.1, (len(names), 3))
    rest_r = rng.normal(size=(len(names), 4))
    rest_r /= np.linalg.norm(rest_r, axis=1, keepdims=True)
    ibm = np.tile(np.eye(4), (len(names), 1, 1))
    ibm[:, :3, 3] = rng.normal(size=(len(names), 3))
    assert len(names) == JOINTS
    return Skeleton(names, parents, rest_t, rest_r, None, ibm)


def make_clip(name: str, duration: float, seed: int) -> Clip:
    """LINEAR rotation and translation channels on every joint: smooth random motion."""
    rng = np.random.default_rng(seed)
    times = np.arange(round(duration * KEYS_PER_SECOND) + 1) / KEYS_PER_SECOND
    channels = []
    for joint in range(JOINTS):
        phase, speed = rng.uniform(0, 2 * np.pi, 3), rng.uniform(1, 4, 3)
        rotvec = 0.6 * np.sin(speed * times[:, None] + phase)
        angle = np.linalg.norm(rotvec, axis=1, keepdims=True)
        quats = np.concatenate((rotvec / angle * np.sin(angle / 2), np.cos(angle / 2)), axis=1)
        channels.append(Channel(joint, "rotation", "LINEAR", times, quats))
        offsets = rng.normal(0, 0.1, 3) + 0.02 * np.sin(speed * times[:, None] + phase)
        channels.append(Channel(joint, "translation", "LINEAR", times, offsets))
    return Clip(name, channels, JOINTS)


# --- the per-joint pure-Python baseline -----------------------------------------------------------


def _slerp(a: list[float], b: list[float], u: float) -> list[float]:
    d = sum(x * y for x, y in zip(a, b, strict=True))
    if d < 0:
        b, d = [-x for x in b], -d
    angle = 2.0 * math.atan2(
        math.sqrt(sum((y - x) ** 2 for x, y in zip(a, b, strict=True))),
        math.sqrt(sum((y + x) ** 2 for x, y in zip(a, b, strict=True))),
    )
    if angle < 1e-12:
        return list(a)
    s = math.sin(angle)
    wa, wb = math.sin((1 - u) * angle) / s, math.sin(u * angle) / s
    return [wa * x + wb * y for x, y in zip(a, b, strict=True)]


def _channel_value(times: list[float], values: list[list[float]], t: float, rotation: bool) -> list[float]:
    if t <= times[0]:
        return values[0]
    if t >= times[-1]:
        return values[-1]
    k = bisect.bisect_right(times, t) - 1
    u = (t - times[k]) / (times[k + 1] - times[k])
    if rotation:
        return _slerp(values[k], values[k + 1], u)
    return [x + u * (y - x) for x, y in zip(values[k], values[k + 1], strict=True)]


def _trs(t: list[float], q: list[float], s: list[float]) -> list[list[float]]:
    x, y, z, w = q
    return [
        [(1 - 2 * (y * y + z * z)) * s[0], 2 * (x * y - z * w) * s[1], 2 * (x * z + y * w) * s[2], t[0]],
        [2 * (x * y + z * w) * s[0], (1 - 2 * (x * x + z * z)) * s[1], 2 * (y * z - x * w) * s[2], t[1]],
        [2 * (x * z - y * w) * s[0], 2 * (y * z + x * w) * s[1], (1 - 2 * (x * x + y * y)) * s[2], t[2]],
        [0.0, 0.0, 0.0, 1.0],
    ]


def _matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    return [[sum(a[i][k] * b[k][j] for k in range(4)) for j in range(4)] for i in range(4)]


class Baseline:
    """The same frame, one joint at a time, in plain Python floats."""

    def __init__(self, skeleton: Skeleton, clips: list[Clip]) -> None:
        self.parents = skeleton.parents.tolist()
        self.rest = (
            skeleton.rest_translations.tolist(),
            skeleton.rest_rotations.tolist(),
            skeleton.rest_scales.tolist(),
        )
        self.ibm = skeleton.inverse_bind_matrices.tolist()
        self.tracks = []
        for clip in clips:
            by_joint: dict[tuple[int, str], tuple[list[float], list[list[float]]]] = {}
            for c in clip.channels:
                by_joint[c.target, c.path] = (c.times.tolist(), c.values.tolist())
            self.tracks.append(by_joint)

    def frame(self, clip_of: list[int], times: list[float]) -> list[list[list[list[float]]]]:
        palettes = []
        for c, t in enumerate(times):
            tracks = self.tracks[clip_of[c]]
            model: list[list[list[float]]] = []
            for j, parent in enumerate(self.parents):
                trs = []
                for path, rest in zip(("translation", "rotation", "scale"), self.rest, strict=True):
                    track = tracks.get((j, path))
                    trs.append(rest[j] if track is None else _channel_value(*track, t, path == "rotation"))
                local = _trs(trs[0], trs[1], trs[2])
                model.append(local if parent < 0 else _matmul(model[parent], local))
            palettes.append([_matmul(m, b) for m, b in zip(model, self.ibm, strict=True)])
        return palettes


# --- timing --------------------------------------------------------------------------------------


def medians_ms(fn: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    """Median wall-clock, median CPU and minimum CPU (this thread) milliseconds of ``fn``."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        start_wall, start_cpu = time.perf_counter(), time.thread_time()
        fn()
        cpu.append(time.thread_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return 1e3 * float(np.median(wall)), 1e3 * float(np.median(cpu)), 1e3 * float(np.min(cpu))


def measure(
    count: int, skeleton: Skeleton, clips: list[Clip], baseline: Baseline, repeats: int
) -> dict[str, tuple[float, float, float]]:
    """Every stage for ``count`` characters, half on each clip, each at its own time."""
    compiled = [compile_clip(c) for c in clips]
    times = np.random.default_rng(count).uniform(-0.1, 2.1, count)
    half = (count + 1) // 2
    ws = Workspace()  # the frame's buffers and scratch, allocated once
    pose = PoseBuffer.empty(count, JOINTS)
    parts, spans = [pose.characters(slice(0, half)), pose.characters(slice(half, count))], [times[:half], times[half:]]
    model = MatrixBuffer.empty(count, JOINTS)
    palette = MatrixBuffer.empty(count, JOINTS)

    def run_sample() -> PoseBuffer:
        for clip, part, span in zip(compiled, parts, spans, strict=True):
            if span.size:
                sample(clip, skeleton.rest_pose, span, out=part, workspace=ws)
        return pose

    def frame() -> MatrixBuffer:
        local = model_from_pose(skeleton, run_sample(), out=model, workspace=ws)
        return skinning_palette(skeleton, local, out=palette, workspace=ws)

    def fresh_frame() -> np.ndarray:  # new C-ordered outputs every frame; the scratch memory is reused
        rest = skeleton.rest_pose
        fresh = [
            sample(clip, rest, span, workspace=ws) for clip, span in zip(compiled, spans, strict=True) if span.size
        ]
        merged = Pose(
            *(np.concatenate([getattr(p, name) for p in fresh]) for name in ("translations", "rotations", "scales"))
        )
        return skinning_palette(skeleton, model_from_pose(skeleton, merged, workspace=ws), workspace=ws)

    run_sample()
    c_ordered = pose.to_pose()
    clip_of = [0] * half + [1] * (count - half)
    with trusted():
        result = {
            "sample": medians_ms(run_sample, repeats),
            "model_from_pose": medians_ms(lambda: model_from_pose(skeleton, pose, out=model, workspace=ws), repeats),
            "palette": medians_ms(lambda: skinning_palette(skeleton, model, out=palette, workspace=ws), repeats),
            "frame (out=)": medians_ms(frame, repeats),
            "frame (new arrays)": medians_ms(fresh_frame, repeats),
            "pose.matrices + local_to_model": medians_ms(
                lambda: local_to_model(skeleton, c_ordered.matrices(), workspace=ws), repeats
            ),
        }
    result["per-joint py loop"] = medians_ms(lambda: baseline.frame(clip_of, times.tolist()), 3 if count < 1000 else 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    skeleton = humanoid()
    clips = [make_clip("walk", 2.0, 1), make_clip("wave", 1.5, 2)]
    baseline = Baseline(skeleton, clips)
    counts = (1, 10, 100, 1000)
    rows = {
        count: measure(
            count,
            skeleton,
            clips,
            baseline,
            (15 if args.quick else 150) if count < 1000 else (10 if args.quick else 60),
        )
        for count in counts
    }
    print(f"{JOINTS} joints, 2 clips × 30 keys/s (LINEAR rotations + translations), half the characters on each.")
    print("Wall-clock medians, CPU-time (this thread) medians and CPU-time minima: ms per frame / ns per joint.")
    print("The machine is shared: CPU time leaves out waiting for a core, the minimum most of the cache contention.")
    stages = list(rows[1])
    for which, label in ((0, "wall-clock median"), (1, "CPU median"), (2, "CPU minimum")):
        print(f"\n{label}:\n")
        print("| C | " + " | ".join(stages) + " | loop / frame |")
        print("|---" * (len(stages) + 2) + "|")
        for count, row in rows.items():
            cells = [f"{row[s][which]:.3f} / {1e6 * row[s][which] / (count * JOINTS):.0f}" for s in stages]
            ratio = row["per-joint py loop"][which] / row["frame (out=)"][which]
            print(f"| {count} | " + " | ".join(cells) + f" | {ratio:.0f}× |")


if __name__ == "__main__":
    main()
