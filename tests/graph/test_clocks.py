"""The array forms of the graph's per-frame logic against the per-leaf and per-state code they replace.

:class:`~engine.graph.clocks.LeafClocks` computes every leaf of a machine at once; each entry
must equal :meth:`Leaf.times <engine.graph.flat.Leaf.times>` exactly (same operations, same
order). The machines' phase rates are kept per state and character between frames and must
follow parameter changes; :func:`~engine.player.synced_rate` must round the same for one
character as for a batch (it is computed for varying groups of characters).
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import InvalidInputError
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.graph.clocks import LeafClocks
from engine.graph.machine import present
from engine.player import Player
from engine.player.sync import _clip_sum, synced_rate
from tests.graph.documents import locomotion, mannequin_clips, strafing
from tests.graph.test_flat import sub_machines


@pytest.fixture(scope="module")
def character():
    return mannequin_clips()


def mixed() -> dict:
    """A state with synced, unsynced, held and sped-up clips, and a play-once state."""
    return {
        "parameters": {"go": {"type": "trigger"}},
        "masks": {"upper": {"joints": ["spine"]}},
        "start": "a",
        "states": {
            "a": {
                "speed": 1.3,
                "motion": {
                    "additive": {"clip": "lean_look", "sync": False, "speed": 0.7},
                    "base": {
                        "layer": {"clip": "wave", "sync": False, "loop": False},
                        "base": {"clip": "walk"},
                        "mask": "upper",
                    },
                    "weight": 0.5,
                },
                "transitions": [{"to": "b", "duration": 0.2, "conditions": [{"parameter": "go"}]}],
            },
            "b": {"motion": {"clip": "jump", "loop": False, "speed": 2.0}},
        },
    }


@pytest.mark.parametrize("document", [mixed(), locomotion(), strafing(), sub_machines()], ids=lambda d: d["start"])
def test_leaf_clocks_equal_each_leaf_exactly(character, document):
    mannequin, clips = character
    graph = bind_graph(parse_graph(document), mannequin.skeleton, clips)
    rng = np.random.default_rng(1)
    count = 40
    phase, rate = rng.uniform(0.0, 1.0, count), rng.uniform(-1.0, 3.0, count)
    elapsed = np.concatenate((rng.uniform(0.0, 9.0, count - 2), [0.0, 100.0]))
    for name, machine in graph.machines.items():
        clocks = LeafClocks.of(graph, name)
        leaves = [leaf for leaf in graph.leaves if leaf.machine == name]
        assert np.array_equal(np.arange(len(graph.leaves))[clocks.index], [leaf.index for leaf in leaves])
        times, rates = clocks.times(phase, elapsed), clocks.rates(elapsed, rate)
        raw, travel = clocks.raw(phase, elapsed), clocks.travel(phase, elapsed)
        for row, leaf in enumerate(leaves):
            state_speed = machine.states[leaf.state].speed
            expected_time, expected_rate = leaf.times(phase, elapsed, rate, state_speed)
            assert np.array_equal(times[row], expected_time)
            assert np.array_equal(rates[row], expected_rate)
            assert np.array_equal(raw[row], leaf.raw(phase, elapsed, state_speed))
            expected_travel = phase * leaf.duration if leaf.sync else elapsed * leaf.speed * state_speed
            assert np.array_equal(travel[row], expected_travel)
            states = rng.integers(0, len(machine.states), count)
            assert np.array_equal(clocks.played(states)[row], states == leaf.state)


def test_phase_rates_follow_parameter_changes(character):
    mannequin, clips = character
    graph = bind_graph(parse_graph(strafing()), mannequin.skeleton, clips)
    runtime = GraphRuntime(graph, 6)
    machine = runtime.root
    everyone = np.arange(6)
    strafe = np.zeros(6, dtype=np.intp)

    def fresh() -> np.ndarray:
        state = graph.root.states[0]
        leaves = state.tree.timing(runtime.parameters, everyone, state.synced)
        weights = np.stack([w for _, w in leaves])
        cycles = np.array([leaf.cycle_rate(state.speed) for leaf, _ in leaves])[:, None]
        return synced_rate(weights, cycles)

    runtime.parameters.set_float("vz", 1.0)
    runtime.update(1 / 60)
    assert np.array_equal(machine.rates(strafe, everyone), fresh())
    runtime.parameters.set_float("vx", [0.0, 0.5, -0.5, 0.0, 1.0, 0.0])  # changed between frames
    assert np.array_equal(machine.rates(strafe, everyone), fresh())
    runtime.parameters.set_float("vz", 2.5, [1, 3])
    assert np.array_equal(machine.rates(strafe[:2], np.array([3, 0])), fresh()[[3, 0]])


def test_synced_rate_rounds_one_character_as_a_batch():
    rng = np.random.default_rng(4)
    weights = rng.uniform(0.0, 1.0, (9, 50)) * (rng.random((9, 50)) < 0.6)
    cycles = rng.uniform(0.5, 2.0, (9, 1))
    batch = synced_rate(weights, cycles)
    for c in range(50):
        assert synced_rate(weights[:, c : c + 1], cycles)[0] == batch[c]
    assert np.array_equal(_clip_sum(weights), np.add.reduce(weights, axis=0))  # numpy's own order for a batch


def test_present_is_unique_by_counting():
    values = np.random.default_rng(2).integers(0, 7, 300)
    assert np.array_equal(present(values, 9), np.unique(values))
    assert present(np.zeros(0, dtype=np.intp), 3).size == 0


def test_set_time_where_writes_only_the_chosen_entries(character):
    mannequin, clips = character
    player = Player(mannequin.skeleton, 5)
    for name in ("idle", "walk", "run"):
        player.add_layer(clips[name])
    player.advance_layers(slice(0, 3), np.full((3, 5), 0.1), np.ones((3, 5), dtype=bool))  # no fresh flags left
    before = np.array(player.raw_times)
    where = np.random.default_rng(3).random((2, 5)) < 0.5
    values = np.arange(10.0).reshape(2, 5) / 20.0
    player.set_time(slice(1, 3), values, where=where)
    after = np.array(player.raw_times)
    assert np.array_equal(after[1:], np.where(where, values, before[1:]))
    assert np.array_equal(after[0], before[0])
    assert np.array_equal(player._table.fresh[1:3], where)
    picked = np.array([0, 2])
    player.set_time(np.array([0, 2]), values[:, :2], picked, fresh=False, where=where[:, :2])
    final = np.array(player.raw_times)
    assert np.array_equal(
        final[np.ix_([0, 2], picked)], np.where(where[:, :2], values[:, :2], after[np.ix_([0, 2], picked)])
    )


@pytest.mark.parametrize("kind", ["crossfade", "inertialize", "synced"])
def test_held_machines_catch_up_exactly_with_their_accumulated_dt(character, kind):
    """Logic LOD: characters run every third frame with three frames' dt end where every frame leads.

    The parameters change only on frames where everyone runs (a held character reads them once,
    at the start of its accumulated step); exit times and chains of transitions inside the held
    frames fire at their exact instants.
    """
    mannequin, clips = character
    # a duration off the frame grid: a transition ending exactly on a frame would end by rounding on either side
    graph = bind_graph(parse_graph(locomotion(kind, 0.23)), mannequin.skeleton, clips)
    count, dt = 8, 1 / 60
    every, lod = GraphRuntime(graph, count), GraphRuntime(graph, count)
    held = np.arange(count) % 2 == 1  # these run every third frame
    pending = np.zeros(count)
    rng = np.random.default_rng(6)
    for frame in range(120):
        if frame % 3 == 0:  # everyone runs on the frame after this one's parameters change
            speed, jump = rng.uniform(0.0, 3.0, count), np.flatnonzero(rng.random(count) < 0.3)
            for runtime in (every, lod):
                runtime.parameters.set_float("speed", speed)
                runtime.parameters.set_trigger("jump", jump)
        every.update(dt)
        pending += dt
        due = np.flatnonzero(~held | (frame % 3 == 2))
        step = np.zeros(count)
        step[due] = pending[due]
        lod.update(step, due, hold=True)
        pending[due] = 0.0
        if frame % 3 == 2:  # both caught up
            for name, machine in every.machines.items():
                other = lod.machines[name]
                assert np.array_equal(machine.state, other.state)
                assert np.array_equal(machine.kind, other.kind)
                np.testing.assert_allclose(other.phase, machine.phase, rtol=0, atol=1e-12)
                busy = machine.kind != 0  # a finished transition's progress is not read again
                np.testing.assert_allclose(other.progress[busy], machine.progress[busy], rtol=0, atol=1e-12)
            # a layer no state plays keeps the time it last had, whenever that was: the played ones
            played = (every.player.weights > 0.0) | (lod.player.weights > 0.0)
            np.testing.assert_allclose(lod.player.raw_times[played], every.player.raw_times[played], rtol=0, atol=1e-12)
            np.testing.assert_allclose(lod.player.weights, every.player.weights, rtol=0, atol=1e-12)
            np.testing.assert_allclose(lod.local_pose.rotations, every.local_pose.rotations, rtol=0, atol=1e-12)


def test_a_held_character_must_not_move(character):
    mannequin, clips = character
    runtime = GraphRuntime(bind_graph(parse_graph(locomotion()), mannequin.skeleton, clips), 3)
    with pytest.raises(InvalidInputError, match="frame step of 0"):
        runtime.update(1 / 60, [0, 1], hold=True)
    runtime.update(np.array([1 / 60, 1 / 60, 0.0]), [0, 1], hold=True)
