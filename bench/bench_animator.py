"""``Animator.update`` on the numpy jobs and on the fused kernels, C = 1, 100, 1000 characters.

The mannequin (25 joints) with a game-like action set: walk and run in a sync group crossfading
back and forth (one warped), an upper-body wave on a mask, an additive lean; "+ leg IK" adds a
two_bone_ik stage on the left leg (apply_corrections between advance and finalize); "+ root
motion" builds the animator with ``root_motion="root"`` (those frames sample and blend with numpy
on both paths, the kernels only compose). Cells are wall-clock medians in ms per update at 60 FPS
(the minimum in brackets: the machine is shared); the fused path runs on one thread unless
``OSSA_THREADS`` is set (then on that many, a thread per 32 characters at most).

Run: ``python bench/bench_animator.py`` (about a minute; ``--quick`` for less).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from engine.anim.blending import subtree_mask
from engine.anim.ik import two_bone_ik
from engine.animator import Animator, Loop
from engine.backend import default_threads
from engine.procedural.mannequin import build_mannequin

COUNTS = (1, 100, 1000)
PATHS = ("numpy", "numba")
MANNEQUIN = build_mannequin()


def scene(count: int, backend: str, *, ik: bool, root_motion: bool) -> Animator:
    """The animator of one row, its actions playing and a crossfade scheduled every 40 frames."""
    skeleton, clips = MANNEQUIN.skeleton, MANNEQUIN.clips
    animator = Animator(skeleton, count, backend=backend, root_motion="root" if root_motion else None)
    upper = subtree_mask(skeleton, "spine")
    walk = animator.action(clips["walk"]).play()
    run = animator.action(clips["run"]).play().set_weight(0.0)
    animator.sync_group(walk, run)
    animator.action(clips["wave"], mask=upper).play().set_weight(np.linspace(0.2, 0.8, count))
    animator.action(clips["lean_look"], additive=True).play().set_weight(0.5).set_loop(Loop.PING_PONG)
    walk.set_time(np.random.default_rng(count).uniform(0.0, walk.duration, count))
    if ik:
        foot = skeleton.index("foot_l")

        def leg(animator: Animator) -> None:
            model = animator.update_model()
            target = model.gather(foot)[:, :3, 3] + [0.0, 0.04, 0.04]
            result = two_bone_ik(skeleton, model, "upper_leg_l", "lower_leg_l", "foot_l", target, pole=[0, 0, 1])
            animator.apply_corrections(result)

        animator.stages.append(leg)
    return animator


def timed(animator: Animator, frames: int) -> tuple[float, float]:
    """Median and minimum ms of ``animator.update(1/60)`` over ``frames`` frames (crossfades included)."""
    walk, run = animator.actions[0], animator.actions[1]
    samples = []
    for frame in range(frames + 5):
        if frame % 40 == 0:
            (walk.crossfade_to(run, 0.3, warp=True) if frame % 80 == 0 else run.crossfade_to(walk, 0.3))
        start = time.perf_counter()
        animator.update(1.0 / 60.0)
        if frame >= 5:  # the first frames compile or load the kernels and fill the workspaces
            samples.append(time.perf_counter() - start)
    return 1e3 * statistics.median(samples), 1e3 * min(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer frames per cell")
    args = parser.parse_args()
    budget = 4000 if args.quick else 20000  # characters × frames per cell

    def frames_for(count: int) -> int:
        return int(min(400, max(15, budget // count)))

    rows: dict[str, dict[int, tuple[float, float]]] = {}
    load_before = os.getloadavg()
    for label, ik, root in (("", False, False), (" + leg IK", True, False), (" + root motion", False, True)):
        for backend in PATHS:
            name = f"{'numpy jobs' if backend == 'numpy' else 'fused kernels'}{label}"
            rows[name] = {
                count: timed(scene(count, backend, ik=ik, root_motion=root), frames_for(count)) for count in COUNTS
            }
    load_after = os.getloadavg()

    print(f"Animator.update, mannequin ({MANNEQUIN.skeleton.num_joints} joints), 4 actions, 60 FPS.")
    threads = default_threads() if os.environ.get("OSSA_THREADS") else 1  # the Animator's rule
    print(f"Fused path threads: {threads}. Load average {load_before[0]:.2f} before, {load_after[0]:.2f} after.")
    print("\nms per update, median [minimum]:\n")
    print("| path | " + " | ".join(f"C = {c}" for c in COUNTS) + " |")
    print("|---" * (len(COUNTS) + 1) + "|")
    for name, cells in rows.items():
        print(f"| {name} | " + " | ".join(f"{m:.3f} [{b:.3f}]" for m, b in cells.values()) + " |")
    print("\nSpeed-up of the fused path (numpy median / fused median):")
    for label in ("", " + leg IK", " + root motion"):
        numpy_row, fused_row = rows[f"numpy jobs{label}"], rows[f"fused kernels{label}"]
        ratios = ", ".join(f"C={c}: {numpy_row[c][0] / fused_row[c][0]:.2f}×" for c in COUNTS)
        print(f"  {label.strip(' +') or 'blend + additive'}: {ratios}")


if __name__ == "__main__":
    main()
