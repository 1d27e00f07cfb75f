"""``Player.warm_up`` and ``GraphRuntime.warm_up``: the kernels a transition calls are ready before it; nothing changes.

A transition's kernels (captures, the offsets' start, the stage in the pass, the frozen and dead
blends, the graph's layer state at a switch) are first called at the first transition: on a
fresh machine numba compiled them there (a demo froze for 90 s when the character first moved),
and every run loaded them there (a 0.25 s hitch). ``warm_up`` rehearses every transition kind and
puts the stage back: two players given the same frames, one warmed up between two of them, stay
equal bit for bit; and in a fresh process no kernel gains a signature at the transitions after it.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.anim import subtree_mask
from engine.player import Player
from engine.procedural.mannequin import build_mannequin

COUNT = 7
SWITCHES = {1: ([1, 4, 5], "inertialize"), 2: ([2], "dead_blend"), 3: ([6, 0], "spring"), 4: ([5], "frozen")}
LATER = {6: ([0, 3], "inertialize"), 7: ([4], "frozen"), 8: ([1, 2], "spring")}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def made(mannequin, backend: str, threads: int, stages: bool) -> tuple[Player, list[int], list[int]]:
    """Walk and run blended, the wave over the upper body (an override of them); a counting post-blend stage."""
    player = Player(mannequin.skeleton, COUNT, backend=backend, root_motion="root", threads=threads)
    rows = [player.add_layer(mannequin.clips[name]) for name in ("walk", "run")]
    upper = subtree_mask(mannequin.skeleton, "spine")
    rows.append(player.add_layer(mannequin.clips["wave"], mask=upper))
    override = player.add_override(range(rows[0], rows[1] + 1), upper)
    player.set_weights(rows, np.random.default_rng(5).uniform(0.1, 1.0, (len(rows), COUNT)))
    player.set_override_weights(override, player.weights[rows[2]])
    calls: list[int] = []
    if stages:
        player.stages.append(lambda _: calls.append(1))
    return player, rows, calls


def frame(player: Player, rows: list[int], number: int, switches: dict, records: np.ndarray) -> list[np.ndarray]:
    """One frame at 60 FPS with the switch of ``number`` (if any); its outputs."""
    player.begin_frame(1 / 60)
    player.advance_layers(rows, player.raw_times[rows] + 1 / 60, True)
    if number in switches:
        characters, kind = switches[number]
        new = np.random.default_rng(number).uniform(0.1, 1.0, (len(rows), len(characters)))
        player.switch(characters, kind, 0.25, functools.partial(player.set_weights, rows, new, characters))
    player.end_frame(None, records)
    return [records.copy(), *player.pose_buffer.arrays(), player.root_motion.translation, player.root_motion.yaw]


def state(player: Player) -> list[np.ndarray]:
    """What the player holds between frames: its transitions, its decays, pose, matrices, root motion."""
    stage = player.transitions
    decays = [stage._offsets.packed[kind] for kind in sorted(stage._offsets.packed)]
    kept = (stage.kind, stage.start, stage.duration, stage.half_life, stage.root_offset, *decays)
    shown = (player.model, player.palette, player.root_motion.translation, player.morph_weights)
    return [np.array(array) for array in (*kept, *player.pose_buffer.arrays(), *shown)]


@pytest.mark.parametrize(
    ("backend", "threads"), [("numba", 1), ("numba", 2), ("numpy", 1)], ids=["numba-1", "numba-2", "numpy"]
)
@pytest.mark.parametrize("stages", [False, True], ids=["one-pass", "stages"])
def test_warm_up_changes_nothing(mannequin, backend, threads, stages) -> None:
    if backend == "numba":
        pytest.importorskip("numba")
    (warmed, rows, calls), (plain, _, _) = (made(mannequin, backend, threads, stages) for _ in range(2))
    records = [np.zeros((COUNT, mannequin.skeleton.num_joints, 4, 4), np.float32) for _ in range(2)]
    for number in range(5):  # every kind in progress, the frozen and dead-blend snapshots taken
        for player, out in zip((warmed, plain), records, strict=True):
            frame(player, rows, number, SWITCHES, out)
    ran = len(calls)
    assert warmed.warm_up(records[0]) > 0.0
    assert len(calls) == ran  # the post-blend stages do not run
    assert len(warmed.transitions._offsets.packed) == len(plain.transitions._offsets.packed)
    for mine, theirs in zip(state(warmed), state(plain), strict=True):
        np.testing.assert_array_equal(mine, theirs)
    plain.finalize(records[1])
    np.testing.assert_array_equal(records[0], records[1])
    for number in range(5, 10):  # and the frames after it, new switches of every kind among them
        shown = [frame(player, rows, number, LATER, out) for player, out in zip((warmed, plain), records, strict=True)]
        for mine, theirs in zip(*shown, strict=True):
            np.testing.assert_array_equal(mine, theirs)


FRESH_PROCESS = """
import functools, json, sys
import numpy as np
from numba.core.registry import CPUDispatcher
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.player import Player
from engine.player.transitions import NONE
from tests.graph.documents import locomotion, mannequin_clips


def signatures():
    found = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("engine."):
            for attr, value in vars(module).items():
                if isinstance(value, CPUDispatcher):
                    found[name + "." + attr] = len(value.signatures)
    return found


def gained(before):
    return {name: count - before.get(name, 0) for name, count in signatures().items() if count != before.get(name, 0)}


mannequin, clips = mannequin_clips()
player = Player(mannequin.skeleton, 6, backend="numba", root_motion="root", threads=2)
rows = [player.add_layer(clips[name]) for name in ("walk", "run")]
records = np.zeros((6, mannequin.skeleton.num_joints, 4, 4), np.float32)
before, kinds = {}, set()
switches = {2: ([1, 4, 5], "inertialize"), 3: ([2], "dead_blend"), 4: ([0, 3], "spring"), 5: ([5], "frozen")}
for number in range(8):
    if number == 1:  # after a program's first frame (the controller's own kernels: the clocks')
        player.warm_up(records)
        before = signatures()
    player.begin_frame(1 / 60)
    player.advance_layers(rows, player.raw_times[rows] + 1 / 60, True)
    if number in switches:
        characters, kind = switches[number]
        new = np.random.default_rng(number).uniform(0.1, 1.0, (2, len(characters)))
        player.switch(characters, kind, 0.25, functools.partial(player.set_weights, rows, new, characters))
    kinds |= set(player.transitions.kind.tolist())
    if number % 2:
        player.end_frame(None, records)
    else:
        player.pose([0, 2, 5])
        player.update_model()
        player.finalize(records)
from engine.backend import _kernels

first = {"player": gained(before), "player kinds": sorted(kinds - {NONE})}
first["frame kernel types"] = len(_kernels.run_serial.signatures)

graph = bind_graph(parse_graph(locomotion("inertialize", 0.25)), mannequin.skeleton, clips, root_motion="root")
runtime = GraphRuntime(graph, 5)
runtime.update(1 / 60)  # a program's first frame: the graph's own kernels
runtime.warm_up()
before, switched = signatures(), 0
for number in range(20):
    runtime.parameters.set_float("speed", np.full(5, 2.0 if number < 10 else 0.0))
    runtime.update(1 / 60)
    switched += int(np.count_nonzero(runtime.player.transitions.kind != NONE))
first.update({"graph": gained(before), "graph switched": switched})
print(json.dumps(first))
"""


@pytest.mark.slow
def test_no_kernel_is_compiled_or_loaded_at_the_first_transition_after_warm_up() -> None:
    pytest.importorskip("numba")
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))}
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS], cwd=ROOT, env=environment, capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["player kinds"] == [1, 2, 3, 4]  # frozen, inertialize, spring, dead blend: all of them played
    assert found["graph switched"] > 0
    assert found["player"] == {}
    assert found["frame kernel types"] == 2  # with and without the stage: one type for every index array
    assert found["graph"] == {}
