"""One animation frame for 1000 characters × 64 joints: Animator.update against the bare functions.

Three layers, as the issue asks: two override clips (a full-body "walk" and an upper-body "wave"
under a mask, the walk with the complementary mask) and one additive clip (spine/head lean).
Every clip keys every joint it animates at 30 keys/s, LINEAR, like exported mocap.

Rows: each engine function the frame is made of, timed alone on the same data (inside
``trusted()``, as the animator runs them), their sum, then ``Animator.update`` doing all of it
plus the playback bookkeeping (times, fades, loop wrap, layer selection). The ratio in the last
column is update / sum: the object layer's overhead. The issue's target: full frame < 8 ms.

The additive clip is sampled and applied only on the joints it moves (its delta is the identity
elsewhere), as the animator does.

Run: ``python bench/bench_blend.py [--characters 1000] [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable

import numpy as np

from engine.anim import Channel, Clip, Pose, Skeleton, model_from_pose, sample, skinning_palette
from engine.anim.additive import add_into, additive_clip, restrict_clip
from engine.anim.blending import blend, subtree_mask
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.animator import Animator
from engine.math import quat_from_axis_angle, trusted


def humanoid64() -> Skeleton:
    """64 joints, 13 depth levels: spine, head, two arms with 5 three-bone fingers, legs, a tail."""
    names: list[str] = []
    parents: list[int] = []

    def add(name: str, parent: str | None) -> None:
        names.append(name)
        parents.append(-1 if parent is None else names.index(parent))

    add("root", None)
    add("hips", "root")
    chain = ["hips", "spine1", "spine2", "spine3", "spine4", "neck", "head", "jaw"]
    for parent, child in itertools.pairwise(chain):
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
    offsets = np.tile([0.0, 0.1, 0.0], (len(names), 1))
    return Skeleton(names, parents, rest_translations=offsets)


def keyed_clip(name: str, joints: np.ndarray, num_joints: int, seed: int, duration: float = 1.0) -> Clip:
    """Rotation keys at 30/s on ``joints`` (plus root translation), seamless loop."""
    rng = np.random.default_rng(seed)
    times = np.linspace(0.0, duration, int(30 * duration) + 1)
    phase = 2.0 * np.pi * times / duration
    channels = []
    for j in joints:  # build time
        axis = rng.normal(size=3)
        angle = 0.4 * np.sin(phase + rng.uniform(0, 2 * np.pi))
        channels.append(Channel(int(j), "rotation", "LINEAR", times, quat_from_axis_angle(axis, angle)))
    root = np.stack([np.zeros_like(times), 0.02 * np.sin(2 * phase), 1.2 * times], axis=-1)
    channels.append(Channel(0, "translation", "LINEAR", times, root))
    return Clip(name, tuple(channels), num_joints)


def median_ms(fns: list[Callable[[], object]], repeat: int) -> tuple[list[float], list[float]]:
    """Median wall and CPU (process) time of each function in ms, runs interleaved.

    The machine is shared: CPU time is what a call costs when it has a core to itself, wall time
    what it cost today; interleaving makes load spikes hit every row alike.
    """
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--characters", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    count = args.characters
    skeleton = humanoid64()
    joints = skeleton.num_joints
    upper = subtree_mask(skeleton, "spine1")
    walk = keyed_clip("walk", np.arange(joints), joints, seed=1)
    wave = keyed_clip("wave", np.nonzero(upper)[0], joints, seed=2, duration=2.0)
    lean = keyed_clip("lean", np.array([skeleton.index(n) for n in ("spine2", "spine3", "neck", "head")]), joints, 3)

    animator = Animator(skeleton, count)
    animator.action(walk, mask=1.0 - upper).play()
    animator.action(wave, mask=upper).play().set_weight(0.8)
    animator.action(lean, additive=True).play().set_weight(np.linspace(0.0, 1.0, count))
    animator.update(0.01)

    rng = np.random.default_rng(0)
    t_walk, t_wave, t_lean = (rng.uniform(0.0, d, count) for d in (1.0, 2.0, 1.0))
    moved = np.array(sorted({c.target for c in lean.channels}))  # the joints the additive layer moves
    lean_delta = restrict_clip(additive_clip(lean, skeleton), moved)
    weights = np.stack([np.ones(count), np.full(count, 0.8)])
    masks = np.stack([1.0 - upper, upper])
    additive_weights = np.linspace(0.0, 1.0, count)
    # The bare functions get the same buffers as the animator: batch-innermost (engine/anim/layout.py),
    # filled in place with out=, and one reused workspace.
    ws = Workspace()
    stacked = PoseBuffer.empty(count, joints, layers=2)
    walk_pose, wave_pose = stacked.layer(0), stacked.layer(1)
    base, local = PoseBuffer.empty(count, joints), PoseBuffer.empty(count, joints)
    rest = skeleton.rest_pose
    identity = Pose.identity(moved.size)
    sample(walk, rest, t_walk, out=walk_pose, workspace=ws)
    sample(wave, rest, t_wave, out=wave_pose, workspace=ws)
    d = sample(lean_delta, identity, t_lean, out=PoseBuffer.empty(count, moved.size), workspace=ws)
    blend(rest, stacked, weights, masks, threshold=1.0, out=base, workspace=ws)
    for mine, theirs in zip(local.arrays(), base.arrays(), strict=True):
        mine[...] = theirs

    def add_lean() -> None:  # the additive layer on the joints it moves, in the buffer layout, written back
        t, r, s = (a[:, moved] for a in base.arrays())
        add_into((t, r, s), d.arrays(), np.broadcast_to(additive_weights, r.shape[1:]), axis=0)
        for array, values in zip(local.arrays(), (t, r, s), strict=True):
            array[:, moved] = values

    add_lean()
    model = model_from_pose(skeleton, local, out=MatrixBuffer.empty(count, joints), workspace=ws)
    palette = skinning_palette(skeleton, model, out=MatrixBuffer.empty(count, joints), workspace=ws)

    def trusted_call(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            with trusted():
                return fn()

        return run

    rows = [
        ("sample walk (all joints)", lambda: sample(walk, rest, t_walk, out=walk_pose, workspace=ws)),
        ("sample wave (upper body)", lambda: sample(wave, rest, t_wave, out=wave_pose, workspace=ws)),
        (
            "blend 2 layers + masks",
            lambda: blend(rest, stacked, weights, masks, threshold=1.0, out=base, workspace=ws),
        ),
        (f"sample additive ({moved.size} joints)", lambda: sample(lean_delta, identity, t_lean, out=d, workspace=ws)),
        ("add_into + write back", add_lean),
        ("model_from_pose", lambda: model_from_pose(skeleton, local, out=model, workspace=ws)),
        ("skinning_palette", lambda: skinning_palette(skeleton, model, out=palette, workspace=ws)),
        ("Animator.update(dt)", lambda: animator.update(1 / 60)),
    ]
    wall, cpu = median_ms([trusted_call(fn) for _, fn in rows], args.repeat)
    print(
        f"{count} characters × {joints} joints ({len(skeleton.levels)} depth levels), 3 layers "
        f"(2 clips + 1 additive, masks), median of {args.repeat} interleaved runs"
    )
    print(f"{'what':<30}{'wall ms':>10}{'CPU ms':>10}")
    for (name, _), w, c in zip(rows[:-1], wall[:-1], cpu[:-1], strict=True):
        print(f"{name:<30}{w:>10.2f}{c:>10.2f}")
    bare_wall, bare_cpu = sum(wall[:-1]), sum(cpu[:-1])
    print(f"{'sum of bare functions':<30}{bare_wall:>10.2f}{bare_cpu:>10.2f}")
    print(f"{'Animator.update (full frame)':<30}{wall[-1]:>10.2f}{cpu[-1]:>10.2f}")
    print(f"{'update / bare sum':<30}{wall[-1] / bare_wall:>10.2f}{cpu[-1] / bare_cpu:>10.2f}")


if __name__ == "__main__":
    main()
