"""The layers' clocks on the kernel (engine.backend._clock_kernels) against the numpy path: bit for bit.

Both players get the same layers (every loop mode, a clip of zero length, a root-motion joint)
and the same frames (steps of 0, forwards and backwards, jumps over several loops, ends an ulp
from a loop boundary); raw times, rates, root travel and marker calls must be identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim import Channel, Clip
from engine.player import Loop, Player
from engine.procedural.mannequin import build_mannequin

pytest.importorskip("numba")


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def players(mannequin) -> tuple[list[Player], list[list]]:
    clips = mannequin.clips
    joints = mannequin.skeleton.num_joints
    still = Clip("still", (Channel(0, "translation", "LINEAR", np.array([0.0]), np.zeros((1, 3))),), joints)
    made, calls = [], []
    for backend in ("numba", "numpy"):
        player = Player(mannequin.skeleton, 12, backend=backend, root_motion="root")
        rows = [
            player.add_layer(clips["walk"]),
            player.add_layer(clips["run"], loop=Loop.PING_PONG),
            player.add_layer(clips["wave"], loop=Loop.ONCE),
            player.add_layer(still),
        ]
        player.set_weights(rows, np.random.default_rng(1).uniform(0.0, 1.0, (4, 12)))
        found: list = []
        for row, marker in ((0, "left_foot_down"), (1, "right_foot_down")):
            player.on_marker(
                row,
                marker,
                lambda name, time, who, w, found=found: found.append((name, time, who.tolist(), w.tolist())),
            )
        made.append(player)
        calls.append(found)
    return made, calls


def test_the_compiled_clocks_are_numpys(mannequin) -> None:
    (compiled, reference), (compiled_calls, reference_calls) = players(mannequin)
    rng = np.random.default_rng(7)
    for frame in range(80):
        dt = rng.choice([0.0, 1 / 60, 0.5, 3.7]) * np.where(rng.random(12) < 0.8, 1.0, 0.0)
        ends = compiled.raw_times + rng.choice([1.0, -1.0, 0.0]) * dt
        if frame % 9 == 0:  # an ulp from a loop's end
            ends = np.nextafter(np.ceil(ends), -np.inf)
        running = rng.random((4, 12)) < 0.9
        for player in (compiled, reference):
            player.begin_frame(dt)
            player.advance_layers(slice(None), ends, running)
        assert np.array_equal(compiled.raw_times, reference.raw_times), frame
        assert np.array_equal(compiled.rates, reference.rates), frame
        compiled.pose()
        reference.pose()
        assert np.array_equal(compiled.root_motion.translation, reference.root_motion.translation), frame
        assert np.array_equal(compiled.root_motion.yaw, reference.root_motion.yaw), frame
    assert compiled_calls == reference_calls
    assert compiled_calls
