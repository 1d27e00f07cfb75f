"""Locomotion quality of the demo's characters: foot sliding, trajectory error, switches (bench_motion_matching.py).

The same input drives the graph-driven character (:class:`game.demo.player.Player`, the demo's
state machine) and the motion-matching one (:class:`game.demo.motion_matching.MatchingPlayer`):

- **scripted tours**: the demo's own key scripts played through :class:`game.demo.game.DemoGame`
  (camera-relative keys; no camera input, so both get the same world directions);
- **standing still**: no key for 10 s (after a second to settle);
- **random paths**: a new random waypoint when one is reached, walked or run, fed to the
  characters' ``update`` as world directions.

Measured every 60 Hz step on what is drawn (after the foot IK, on the uneven ground):

- **foot sliding**: the horizontal drift of each ankle and toe joint over the steps where it
  stays within :data:`STANCE` m of its standing height above the ground under it, in cm per
  second of play, the mean of the four joints;
- **trajectory error**: over every 1 s window, the distance between where the character went
  and where the desired trajectory went — the request (the key direction times the
  controller's own walk or run speed) through the critically damped springs of
  :mod:`engine.motion_matching.trajectory`, the same springs for both — in cm;
- **switches per second**: the controller's database jumps (motion matching) or the graph's
  state changes (the state machine).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.anim.local_to_model import model_from_pose
from engine.motion_matching import Trajectory, advance_trajectory
from game.app import FIXED_DT, Controls, apply_script, read_script
from game.demo.game import DemoGame, make_parser
from game.demo.motion_matching import RUN_SPEED, WALK_SPEED, MatchingGame, MatchingPlayer
from game.demo.player import Player, find_body

STANCE = 0.02
"""Metres above its standing height within which a foot joint counts as planted."""
WINDOW = 1.0
"""Seconds of the trajectory-error windows."""
ARRIVED = 1.0
"""Metres from a random path's waypoint at which the next one is taken."""


@dataclass
class Recording:
    """One run: per step the root, the four foot joints and the desired world velocity; the switches."""

    positions: np.ndarray
    feet: np.ndarray
    grounds: np.ndarray
    standing: np.ndarray
    desired: np.ndarray
    switches: int
    seconds: float


@dataclass(frozen=True)
class Quality:
    """The three measures of one run."""

    sliding: float
    trajectory: float
    switches: float


def foot_joints(player: Player) -> list[int]:
    """Ankle and toe joints of both legs (those the body has)."""
    body = find_body(player.model.skeleton)
    assert body is not None
    return [j for side in "lr" for j in body.leg(side).joints[2:4]]


class Recorder:
    """Wraps a character's ``update`` to record its input and what it draws after each step."""

    def __init__(self, player: Player) -> None:
        self.player = player
        self.joints = foot_joints(player)
        rest = model_from_pose(player.skeleton, player.skeleton.rest_pose)[self.joints]
        placed = player.world().copy()
        placed[:3, 3] = 0.0  # standing on y = 0
        self.standing = (placed @ rest)[:, 1, 3]
        self.rows: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.states = 0
        self._state = player.graph.state if player.graph is not None else None
        self._update = player.update
        player.update = self.update  # type: ignore[method-assign]

    def speed(self, run: bool, amount: float) -> float:
        """The controller's own speed for a key held (the graph's gait, the matcher's walk or run)."""
        player = self.player
        if isinstance(player, MatchingPlayer):
            return (RUN_SPEED if run else WALK_SPEED) * amount
        assert player.graph is not None
        return player.graph.gait_speed(np.array([0.0, 0.0, amount]), run)

    def update(self, dt: float, move: np.ndarray, run: bool, jump: bool, look_at=None, strafe: bool = False) -> None:
        self._update(dt, move, run, jump, look_at, strafe=strafe)
        player = self.player
        amount = min(float(np.linalg.norm(move)), 1.0)
        desired = move / max(amount, 1e-12) * self.speed(run, amount) if amount > 0 else np.zeros(3)
        feet = (player.world() @ player.model_matrices[self.joints])[:, :3, 3]
        grounds = player.terrain.height(feet[:, 0], feet[:, 2])
        self.rows.append((player.position.copy(), feet, grounds, desired))
        if player.graph is not None and player.graph.state != self._state:
            self.states += 1
            self._state = player.graph.state

    def recording(self) -> Recording:
        positions, feet, grounds, desired = (np.array(column) for column in zip(*self.rows, strict=True))
        player = self.player
        switches = int(player.matcher.switches[0]) if isinstance(player, MatchingPlayer) else self.states
        return Recording(positions, feet, grounds, self.standing, desired, switches, len(self.rows) * FIXED_DT)


def measure(run: Recording) -> Quality:
    """Foot sliding (cm/s), trajectory error (cm) and switches per second of a recording (module docstring)."""
    height = run.feet[..., 1] - run.grounds  # (T, 4)
    planted = height <= run.standing + STANCE
    both = planted[1:] & planted[:-1]
    drift = np.linalg.norm(np.diff(run.feet[..., [0, 2]], axis=0), axis=-1)
    sliding = 100.0 * float((drift * both).sum(axis=0).mean()) / run.seconds
    state = Trajectory.at_rest(run.positions[:1] * [1.0, 0.0, 1.0], np.zeros(1))
    simulated = [state.positions[0]]
    for velocity in run.desired[1:]:
        state = advance_trajectory(state, velocity[None], np.zeros(1), FIXED_DT)
        simulated.append(state.positions[0])
    went, wanted = run.positions[:, [0, 2]], np.array(simulated)[:, [0, 2]]
    lag = round(WINDOW / FIXED_DT)
    error = np.linalg.norm((went[lag:] - went[:-lag]) - (wanted[lag:] - wanted[:-lag]), axis=-1)
    return Quality(sliding, 100.0 * float(error.mean()), run.switches / run.seconds)


def game_args(*options: str) -> argparse.Namespace:
    args = make_parser().parse_args(["--headless", *options])
    args.prog = "bench"
    return args


def scripted(
    game_class: Callable[[argparse.Namespace], DemoGame], script: Path, frames: int, options: list[str]
) -> Recording:
    """``script`` played through the demo game for ``frames`` 60 Hz steps."""
    game = game_class(game_args(*options))
    recorder = Recorder(game.player)
    events, controls = read_script(script), Controls()
    for frame in range(frames):
        apply_script(events, frame, controls)
        game.update(FIXED_DT, controls)
        controls.end_step()
    return recorder.recording()


def random_path(player: Player, seconds: float, seed: int) -> Recording:
    """``player`` walking (30 %: running) to random waypoints within 15 m of the start for ``seconds``."""
    rng = np.random.default_rng(seed)
    recorder = Recorder(player)
    waypoint, run = rng.uniform(-15.0, 15.0, 2), bool(rng.random() < 0.3)
    for _ in range(round(seconds / FIXED_DT)):
        gap = waypoint - player.position[[0, 2]]
        if np.linalg.norm(gap) < ARRIVED:
            waypoint, run = rng.uniform(-15.0, 15.0, 2), bool(rng.random() < 0.3)
            gap = waypoint - player.position[[0, 2]]
        move = np.array([gap[0], 0.0, gap[1]]) / np.linalg.norm(gap)
        player.update(FIXED_DT, move, run, False)
    return recorder.recording()


def standing(player: Player, seconds: float) -> Recording:
    """``player`` asked to stand still for ``seconds``, after a second to settle."""
    for _ in range(round(1.0 / FIXED_DT)):
        player.update(FIXED_DT, np.zeros(3), False, False)
    recorder = Recorder(player)
    before = int(player.matcher.switches[0]) if isinstance(player, MatchingPlayer) else 0
    for _ in range(round(seconds / FIXED_DT)):
        player.update(FIXED_DT, np.zeros(3), False, False)
    recorded = recorder.recording()
    recorded.switches -= before
    return recorded


TOUR = Path(__file__).resolve().parents[1] / "game" / "demo" / "scripts" / "motion_matching.txt"
TOUR_FRAMES = 1020
"""The tour's 17 s at 60 Hz (its last key is released at frame 840; then it stands)."""
RANDOM_SECONDS = 20.0
STANDING_SECONDS = 10.0
SEEDS = (1, 2, 3)


def quality_table() -> str:
    """The table: foot sliding, trajectory error, switches/s; state machine against motion matching."""
    modes: list[tuple[str, Callable[[argparse.Namespace], DemoGame], list[str]]] = [
        ("state machine", DemoGame, []),
        ("motion matching", MatchingGame, ["--motion-matching"]),
    ]
    lines = [
        "Locomotion quality: the demo's character (mannequin), 60 Hz, on the uneven ground",
        f"  {'paths':<28}{'controller':<18}{'sliding cm/s':>13}{'traj. err. cm':>14}{'switches/s':>11}",
    ]
    for label, game_class, options in modes:
        rows = [("scripted tour (17 s)", measure(scripted(game_class, TOUR, TOUR_FRAMES, options)))]
        randoms = [measure(random_path(game_class(game_args(*options)).player, RANDOM_SECONDS, s)) for s in SEEDS]
        mean = Quality(
            *(float(np.mean([getattr(q, f) for q in randoms])) for f in ("sliding", "trajectory", "switches"))
        )
        rows.append((f"random paths ({len(SEEDS)} × {RANDOM_SECONDS:.0f} s)", mean))
        still = measure(standing(game_class(game_args(*options)).player, STANDING_SECONDS))
        rows.append((f"standing still ({STANDING_SECONDS:.0f} s)", still))
        for paths, q in rows:
            lines.append(f"  {paths:<28}{label:<18}{q.sliding:>13.1f}{q.trajectory:>14.1f}{q.switches:>11.2f}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(quality_table())
