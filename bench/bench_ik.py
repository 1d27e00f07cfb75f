"""IK solver times on batched poses: two-bone feet, aim, CCD and FABRIK.

Rows:

- two-bone IK for 1000 mannequins × 2 legs (one call per leg), with and without the end
  joint kept level, next to ``local_to_model`` of the same batch for scale (4×4 matrices of the
  pose, then composed with a reused :class:`~engine.anim.layout.Workspace`);
- aim of neck + head at a point for 1000 mannequins;
- CCD and FABRIK for 100 random chains of 8 joints (7 rotating), reachable targets: a fixed
  10 iterations (tolerance 0, so no early exit), and "until converged" (tolerance 1e-4 m,
  at most 50 iterations) with the share of chains that converged.

Run: ``python bench/bench_ik.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _timing import median_ms

from engine.anim import Skeleton, Workspace, local_to_model
from engine.anim.ik import aim_ik, ccd_ik, fabrik_ik, two_bone_ik
from engine.anim.pose import Pose
from engine.io import load_character
from engine.math import quat_from_axis_angle, quat_multiply

MANNEQUIN = Path(__file__).resolve().parents[1] / "assets" / "mannequin.glb"


def jitter(pose: Pose, rng: np.random.Generator, angle: float) -> Pose:
    """Every joint of every character turned by up to ``angle`` radians in its own frame."""
    shape = pose.rotations.shape[:-1]
    turns = quat_from_axis_angle(rng.normal(size=(*shape, 3)), rng.uniform(0.0, angle, size=shape))
    return Pose(pose.translations, quat_multiply(pose.rotations, turns), pose.scales)


def chain_skeleton(rng: np.random.Generator, joints: int) -> Skeleton:
    """One chain of ``joints`` joints, random rest rotations, bones 0.1–0.3 m."""
    directions = rng.normal(size=(joints, 3))
    offsets = directions / np.linalg.norm(directions, axis=-1, keepdims=True) * rng.uniform(0.1, 0.3, (joints, 1))
    offsets[0] = 0.0
    rest = quat_from_axis_angle(rng.normal(size=(joints, 3)), rng.uniform(0.0, np.pi, joints))
    return Skeleton([f"j{i}" for i in range(joints)], np.arange(joints) - 1, offsets, rest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(7)

    mannequin = load_character(MANNEQUIN, textures=False).skeleton
    crowd = jitter(mannequin.rest_pose.broadcast_to((1000,)), rng, 0.3)
    workspace = Workspace()  # reused scratch memory, as a per-frame caller keeps one
    model = local_to_model(mannequin, crowd.matrices(), workspace=workspace)
    legs = [tuple(mannequin.index(f"{part}_{side}") for part in ("upper_leg", "lower_leg", "foot")) for side in "lr"]
    feet = [model[:, foot, :3, 3] + rng.normal(scale=0.05, size=(1000, 3)) for _, _, foot in legs]
    forward = np.array([0.0, 0.0, 1.0])
    head = mannequin.index("head")
    look = model[:, head, :3, 3] + rng.normal(size=(1000, 3))

    def feet_ik(keep: bool) -> None:
        for (hip, knee, foot), target in zip(legs, feet, strict=True):
            two_bone_ik(mannequin, model, hip, knee, foot, target, forward, keep_end_rotation=keep)

    chains = 100
    skeleton = chain_skeleton(rng, 8)
    pose = jitter(skeleton.rest_pose.broadcast_to((chains,)), rng, 0.5)
    chain_model = local_to_model(skeleton, pose.matrices())
    goal = jitter(pose, rng, 1.0)
    target = local_to_model(skeleton, goal.matrices())[:, -1, :3, 3]
    joints = list(range(8))

    rows: list[tuple[str, Callable[[], object]]] = [
        (
            "local_to_model, 1000 × 25 joints",
            lambda: local_to_model(mannequin, crowd.matrices(), workspace=workspace),
        ),
        ("two-bone, 1000 × 2 legs", lambda: feet_ik(False)),
        ("two-bone + level feet, 1000 × 2 legs", lambda: feet_ik(True)),
        ("aim neck+head, 1000", lambda: aim_ik(mannequin, model, ["neck", "head"], look, forward, up=[0, 1, 0])),
        (
            "CCD, 100 × 8 joints, 10 iterations",
            lambda: ccd_ik(skeleton, chain_model, joints, target, max_iterations=10, tolerance=0.0),
        ),
        (
            "FABRIK, 100 × 8 joints, 10 iterations",
            lambda: fabrik_ik(skeleton, chain_model, joints, target, max_iterations=10, tolerance=0.0),
        ),
        (
            "CCD + limits, 10 iterations",
            lambda: ccd_ik(
                skeleton, chain_model, joints, target, max_iterations=10, tolerance=0.0, max_swing=1.0, max_twist=0.5
            ),
        ),
        (
            "FABRIK + limits, 10 iterations",
            lambda: fabrik_ik(
                skeleton, chain_model, joints, target, max_iterations=10, tolerance=0.0, max_swing=1.0, max_twist=0.5
            ),
        ),
        ("CCD to 1e-4 m (≤ 50 iterations)", lambda: ccd_ik(skeleton, chain_model, joints, target, max_iterations=50)),
        (
            "FABRIK to 1e-4 m (≤ 50 iterations)",
            lambda: fabrik_ik(skeleton, chain_model, joints, target, max_iterations=50),
        ),
    ]
    converged = {
        "CCD": ccd_ik(skeleton, chain_model, joints, target, max_iterations=50).reached.mean(),
        "FABRIK": fabrik_ik(skeleton, chain_model, joints, target, max_iterations=50).reached.mean(),
    }
    print(f"median of {args.repeat} interleaved runs")
    print(f"{'what':<40}{'median ms':>10}")
    for (name, _), ms in zip(rows, median_ms([fn for _, fn in rows], args.repeat), strict=True):
        print(f"{name:<40}{ms:>10.2f}")
    print("converged within 50 iterations: " + ", ".join(f"{k} {100 * v:.0f}%" for k, v in converged.items()))


if __name__ == "__main__":
    main()
