"""CPU time of the demo's per-frame character work: ``Player.update`` for one character, no rendering.

The demo's player (``game/demo/player.py``) is driven through a fixed input script at 60 steps per
second on the demo's terrain: run forwards for 2 s while the head looks at a point ahead and to
the left, jump, stand still (idle, feet on the slope), turn and walk. Each step is one call of
``Player.update(dt, move, run, jump, look_at)``: the locomotion graph and the wave (the
controllers), the engine player's pose and root motion, the hips drop, two-bone foot IK, the
neck/head aim, the final model matrices and the palette records with the morph weights.
The script is replayed ``--repeat`` times; the table gives the median and the minimum, over all
replays, of the CPU time per step (this thread), and the wall-clock median.

Run: ``python bench/bench_player.py [--model PATH] [--repeat 5]`` (default: the mannequin).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from game.demo.player import Player
from game.demo.world import Terrain
from game.model import load_model

STEP = 1.0 / 60.0


def script() -> list[tuple[np.ndarray, bool, bool, np.ndarray | None]]:
    """``(move, run, jump, look_at)`` for each of 360 steps (6 s)."""
    steps: list[tuple[np.ndarray, bool, bool, np.ndarray | None]] = []
    ahead = np.array([0.0, 0.0, 1.0])
    left = np.array([0.7, 0.0, 0.7])
    for k in range(360):
        if k < 120:
            steps.append((ahead, True, False, np.array([3.0, 1.0, 6.0])))
        elif k < 180:
            steps.append((ahead, False, k == 120, None))
        elif k < 260:
            steps.append((np.zeros(3), False, False, np.array([-2.0, 1.5, 2.0])))
        else:
            steps.append((left, False, False, np.array([6.0, 0.5, 8.0])))
    return steps


def run(model_path: str | None, repeat: int) -> tuple[list[float], list[float]]:
    """CPU and wall milliseconds of every step of every replay."""
    model = load_model(model_path)
    terrain = Terrain()
    steps = script()
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(repeat + 1):  # the first replay warms up (first-use compilation, caches)
        player = Player(model, terrain)
        times_cpu, times_wall = [], []
        for move, running, jump, look in steps:
            start_cpu, start_wall = time.thread_time(), time.perf_counter()
            player.update(STEP, move, running, jump, look)
            times_cpu.append(time.thread_time() - start_cpu)
            times_wall.append(time.perf_counter() - start_wall)
        cpu.extend(times_cpu)
        wall.extend(times_wall)
    warm = len(steps)
    return [1e3 * t for t in cpu[warm:]], [1e3 * t for t in wall[warm:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="glTF character (default: assets/mannequin.glb)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cpu, wall = run(args.model, args.repeat)
    print(f"Player.update, one character, {len(cpu)} steps ({args.repeat} replays of 360), ms per step")
    print(f"{'CPU median':<16}{statistics.median(cpu):>8.3f}")
    print(f"{'CPU minimum':<16}{min(cpu):>8.3f}")
    print(f"{'wall median':<16}{statistics.median(wall):>8.3f}")


if __name__ == "__main__":
    main()
