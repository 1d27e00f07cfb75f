"""A player's compiled work on several threads gives the one-thread numbers, bit for bit.

Captures (sampling, blending and the velocity over blocks of captures) and the transition stage
(inertialized offsets over blocks of characters) of a player on 2 threads against the same player
on 1: the pose, velocity and planar root velocity of a capture, and the pose after the stage.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.player import Loop, Player
from engine.procedural.mannequin import build_mannequin

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def player(mannequin, threads: int) -> Player:
    made = Player(mannequin.skeleton, 40, backend="numba", threads=threads, root_motion="root")
    clips = mannequin.clips
    rows = [made.add_layer(clips["walk"]), made.add_layer(clips["run"]), made.add_layer(clips["jump"], loop=Loop.ONCE)]
    rng = np.random.default_rng(3)
    made.set_weights(rows, rng.uniform(0.0, 1.0, (3, 40)))
    made.set_time(rows, rng.uniform(0.0, 1.0, (3, 40)))
    return made


def test_two_threads_give_one_threads_numbers(mannequin) -> None:
    players = [player(mannequin, threads) for threads in (1, 2)]
    characters = np.arange(3, 40, 2)
    captures = []
    for made in players:
        made.begin_frame(1 / 60)
        made.pose()
        made.switch(characters, "inertialize", 0.3, lambda made=made: made.set_weights(0, 1.0, characters))
        captures.append(made.capture(characters))
        made.begin_frame(1 / 60)
        made.pose()
    first, second = captures
    for mine, theirs in zip(
        (*first.pose.arrays(), first.velocity.linear, first.velocity.angular, first.velocity.scaling, first.root),
        (*second.pose.arrays(), second.velocity.linear, second.velocity.angular, second.velocity.scaling, second.root),
        strict=True,
    ):
        assert np.array_equal(mine, theirs)
    for mine, theirs in zip(players[0].local_pose.arrays(), players[1].local_pose.arrays(), strict=True):
        assert np.array_equal(mine, theirs)
