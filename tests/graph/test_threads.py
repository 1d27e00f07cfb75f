"""A graph on a player of 2 threads gives the 1-thread numbers, bit for bit.

The compiled write-back runs in blocks of characters on the player's threads (the leaves'
weights and times, ``engine.graph._machine_kernels.write_layers_parallel``, and the player's clock
``engine.backend._clock_kernels.advance_layers_parallel``), as do the captures and the stage:
the same parameter stream through both, every frame's layer times, weights, root travel, pose
and markers must be identical — with animation LOD (some characters per frame) and without.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.player import Player
from tests.graph.documents import locomotion, mannequin_clips

pytest.importorskip("numba")

COUNT = 48


def runtime(threads: int) -> tuple[GraphRuntime, list[tuple[str, str, list[int], list[float]]]]:
    mannequin, clips = mannequin_clips()
    graph = bind_graph(parse_graph(locomotion("inertialize", 0.25)), mannequin.skeleton, clips, root_motion="root")
    player = Player(graph.skeleton, COUNT, backend="numba", threads=threads, root_motion="root")
    made = GraphRuntime(graph, COUNT, player=player)
    events: list[tuple[str, str, list[int], list[float]]] = []
    for name in ("left_foot_down", "right_foot_down"):
        if any(name in (leaf.clip.markers or {}) for leaf in graph.leaves):
            made.on_marker(
                name,
                lambda event: events.append(
                    (event.clip, event.marker, event.characters.tolist(), event.weights.tolist())
                ),
            )
    return made, events


@pytest.mark.parametrize("lod", [False, True], ids=["everyone", "lod"])
def test_two_threads_give_one_threads_numbers(lod) -> None:
    (one, one_events), (two, two_events) = runtime(1), runtime(2)
    rng = np.random.default_rng(11)
    waiting = np.zeros(COUNT)
    for frame in range(40):
        speed, grounded = rng.uniform(0.0, 3.5, COUNT), rng.uniform(size=COUNT) > 0.1
        jumping = np.flatnonzero(rng.uniform(size=COUNT) < 0.05)
        characters = np.flatnonzero((np.arange(COUNT) + frame) % 3 == 0) if lod else None
        waiting += 1 / 60
        step = waiting.copy() if lod else 1 / 60
        if lod:
            posed = np.zeros(COUNT, dtype=bool)
            posed[characters] = True
            step[~posed] = 0.0
            waiting[posed] = 0.0
        for made in (one, two):
            made.parameters.set_float("speed", speed)
            made.parameters.set_bool("grounded", grounded)
            if jumping.size:
                made.parameters.set_trigger("jump", jumping)
            made.player.begin_frame(step)
            made.control(characters)
            made.player.pose(characters)
            made.player.finalize()
        for mine, theirs in (
            (one.player.raw_times, two.player.raw_times),
            (one.player.weights, two.player.weights),
            (one.root_translation, two.root_translation),
            (one.root_yaw, two.root_yaw),
            *zip(one.local_pose.arrays(), two.local_pose.arrays(), strict=True),
        ):
            assert np.array_equal(mine, theirs)
        assert one_events == two_events
    assert one_events  # markers crossed
