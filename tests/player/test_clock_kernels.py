"""The layers' clocks on the kernel (engine.backend._clock_kernels) against the numpy path: bit for bit.

Both players get the same layers (every loop mode, a clip of zero length, a root-motion joint)
and the same frames (steps of 0, forwards and backwards, jumps over several loops, ends an ulp
from a loop boundary); raw times, rates, root travel and marker calls must be identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim import Channel, Clip
from engine.errors import InvalidInputError
from engine.player import Loop, Player
from engine.procedural.mannequin import build_mannequin

pytest.importorskip("numba")
move_layer = pytest.importorskip("engine.player.kernels").move_layer


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


def python_write(writes: tuple[np.ndarray, ...], ends: np.ndarray, running: np.ndarray):
    """A controller's write for ``Player.advance_with``, entry by entry through the player's ``move_layer``."""
    weights, jump, jumped, exact = writes

    def write(entries, table, out) -> None:
        index, characters, durations, loops, step = entries
        raw, rates, fresh, weight_table = table
        *moved, ran = out
        for r, row in enumerate(index):
            for k, c in enumerate(characters):
                weight_table[row, c] = weights[r, k]
                cell = raw[row, c], fresh[row, c], rates[row, c]
                told = (bool(jumped[r, k]), jump[r, k]), (True, exact[r, k])
                result = move_layer((durations[r], loops[r]), cell, (ends[r, k], running[r, k]), step[c], told)
                for array, value in zip(moved, result[:5], strict=True):
                    array[r, k] = value
                raw[row, c], fresh[row, c], rates[row, c] = result[5:]
                ran[r, k] = running[r, k]

    return write


def test_a_controllers_kernel_moves_the_layers_as_advance_layers_does(mannequin) -> None:
    """``advance_with``, a write through ``move_layer``: advance_layers' raw times, rates, weights, root, markers."""
    (fused, reference), (fused_calls, reference_calls) = players(mannequin)
    rng = np.random.default_rng(3)
    for frame in range(40):
        dt = rng.choice([0.0, 1 / 60, 0.5]) * np.where(rng.random(12) < 0.8, 1.0, 0.0)
        characters = np.flatnonzero(rng.random(12) < 0.7) if frame % 2 else None
        count = 12 if characters is None else characters.size
        rows = [0, 1, 2, 3] if frame % 3 else [2, 0]
        ends = reference.raw_times[rows][:, characters if characters is not None else slice(None)] + 0.9 * rng.normal()
        if frame % 7 == 0:  # an ulp from a loop's end
            ends = np.nextafter(np.ceil(ends), -np.inf)
        shape = (len(rows), count)
        running = rng.random(shape) < 0.8
        writes = (rng.uniform(0, 1, shape), rng.uniform(0, 3, shape), rng.random(shape) < 0.3, rng.uniform(0, 2, shape))
        for player in (fused, reference):
            player.begin_frame(dt)
        fused.advance_with(rows, characters, python_write(writes, ends, running))
        jump = (writes[1], writes[2])
        reference.advance_layers(rows, ends, running, characters, weights=writes[0], jump=jump, exact=writes[3])
        for name in ("raw_times", "rates", "weights"):
            assert np.array_equal(getattr(fused, name), getattr(reference, name)), (frame, name)
        fused.pose()
        reference.pose()
        assert np.array_equal(fused.root_motion.translation, reference.root_motion.translation), frame
    assert fused_calls == reference_calls
    assert fused_calls


def test_advance_with_needs_the_compiled_player(mannequin) -> None:
    player = Player(mannequin.skeleton, 2, backend="numpy")
    player.add_layer(mannequin.clips["walk"])
    with pytest.raises(InvalidInputError, match="numba backend"):
        player.advance_with([0], None, lambda *arrays: None)
