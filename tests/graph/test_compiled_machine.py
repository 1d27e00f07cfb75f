"""The machines on the compiled kernels (engine.graph.compiled) against the numpy reference: bit for bit.

Two runtimes of the same graph and characters — one on the numba backend (its plain machines step
on the kernels), one on numpy (the reference) — get the same parameter stream and frame steps;
after every frame every machine array, the triggers and the player's layer times and weights must
be identical. The documents cover every transition kind, exit times in looping, held and synced
states, uninterruptible and instant transitions, every condition operator, any-state
transitions, state speeds and offsets, a sub-machine, and animation LOD (machines that hold).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.backend.select import compiled_module
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.graph.compiled import CompiledLayers, CompiledStep
from engine.player.sync import synced_rate
from tests.graph.documents import locomotion, mannequin_clips

pytest.importorskip("numba")

MACHINE_ARRAYS = (
    "state",
    "phase",
    "elapsed",
    "kind",
    "transition",
    "progress",
    "duration",
    "half_life",
    "locked",
    "source",
    "source_phase",
    "source_elapsed",
)
SLOT_FIELDS = ("entered", "entry", "phase", "elapsed")


@pytest.fixture(scope="module")
def character():
    return mannequin_clips()


def everything() -> dict[str, Any]:
    """Five states, every kind and condition operator, exit times, locks, instants, speeds and offsets."""
    cond = {"parameter": "speed"}
    return {
        "parameters": {
            "speed": {"type": "float"},
            "lean": {"type": "float"},
            "grounded": {"type": "bool", "default": True},
            "fast": {"type": "bool"},
            "jump": {"type": "trigger"},
            "wave": {"type": "trigger"},
        },
        "start": "idle",
        "states": {
            "idle": {
                "motion": {"clip": "idle", "sync": False, "speed": 0.8},
                "transitions": [
                    {
                        "to": "move",
                        "kind": "inertialize",
                        "duration": 0.3,
                        "conditions": [{**cond, "op": ">", "value": 0.1}],
                    },
                    {"to": "wave", "kind": "frozen", "duration": 0.2, "conditions": [{"parameter": "wave"}]},
                    {
                        "to": "walk",
                        "kind": "dead_blend",
                        "duration": 0.25,
                        "half_life": 0.1,
                        "conditions": [{"parameter": "lean", "op": "==", "value": 1.0}],
                    },
                ],
            },
            "move": {
                "motion": {"blend1d": "speed", "points": [{"at": 1.2, "clip": "walk"}, {"at": 3.0, "clip": "run"}]},
                "speed": 1.3,
                "transitions": [
                    {
                        "to": "idle",
                        "kind": "spring",
                        "half_life": 0.08,
                        "conditions": [{**cond, "op": "<=", "value": 0.1}],
                    },
                    {
                        "to": "walk",
                        "kind": "crossfade",
                        "duration": 0.2,
                        "exit_time": 0.5,
                        "conditions": [{"parameter": "lean", "op": "<", "value": -0.5}],
                    },
                ],
            },
            "walk": {
                "motion": {"clip": "walk"},
                "transitions": [
                    {"to": "run", "kind": "synced", "duration": 0.5, "conditions": [{"parameter": "fast"}]},
                    {
                        "to": "idle",
                        "kind": "crossfade",
                        "duration": 0.15,
                        "interruptible": False,
                        "conditions": [
                            {"parameter": "lean", "op": ">=", "value": 0.5},
                            {**cond, "op": "<", "value": 1.0},
                        ],
                    },
                ],
            },
            "run": {
                "motion": {"clip": "run"},
                "transitions": [
                    {
                        "to": "walk",
                        "kind": "synced",
                        "duration": 0.4,
                        "exit_time": 0.9,
                        "conditions": [{"parameter": "fast", "value": False}],
                    },
                    {
                        "to": "idle",
                        "duration": 0.0,
                        "conditions": [
                            {"parameter": "lean", "op": "!=", "value": 0.0},
                            {"parameter": "grounded", "op": "!=", "value": True},
                        ],
                    },
                ],
            },
            "wave": {
                "motion": {"clip": "jump", "loop": False, "sync": False},
                "transitions": [
                    {"to": "idle", "kind": "crossfade", "duration": 0.2, "exit_time": 0.8, "offset": 0.3},
                ],
            },
        },
        "any_state": [
            {
                "to": "wave",
                "kind": "inertialize",
                "duration": 0.2,
                "interruptible": False,
                "conditions": [{"parameter": "jump"}],
            }
        ],
    }


def with_sub_machine() -> dict[str, Any]:
    """The locomotion graph with its idle a sub-machine (the root steps on numpy, the sub-machine compiled)."""
    document = locomotion("crossfade", 0.2)
    document["parameters"]["tired"] = {"type": "bool"}
    document["machines"] = {
        "resting": {
            "start": "stand",
            "states": {
                "stand": {
                    "motion": {"clip": "idle"},
                    "transitions": [
                        {"to": "wave", "kind": "inertialize", "duration": 0.1, "conditions": [{"parameter": "tired"}]}
                    ],
                },
                "wave": {
                    "motion": {"clip": "wave", "loop": False},
                    "transitions": [{"to": "stand", "duration": 0.1, "exit_time": 0.7}],
                },
            },
        }
    }
    document["states"]["idle"]["motion"] = {"machine": "resting"}
    return document


def drive(runtime: GraphRuntime, rng: np.random.Generator) -> None:
    """A random parameter stream: speeds, leans (some exactly at the thresholds), flags and triggers."""
    count, parameters = runtime.num_characters, runtime.parameters
    specs = parameters.specs
    picked = np.flatnonzero(rng.random(count) < 0.3)
    parameters.set_float("speed", rng.choice([0.0, 0.1, np.nextafter(0.1, 1.0), 0.9, 2.0, 3.5], picked.size), picked)
    if "lean" in specs:
        parameters.set_float("lean", rng.choice([-1.0, 0.0, 0.5, 1.0, 0.3], picked.size), picked)
    for flag in ("fast", "grounded", "tired"):
        if flag in specs:
            parameters.set_bool(flag, rng.random(count) < 0.5, np.arange(count))
    for trigger in ("jump", "wave"):
        if trigger in specs:
            parameters.set_trigger(trigger, np.flatnonzero(rng.random(count) < 0.04))


def assert_same(compiled: GraphRuntime, reference: GraphRuntime, frame: int) -> None:
    for name, machine in compiled.machines.items():
        other = reference.machines[name]
        for field in MACHINE_ARRAYS:
            assert np.array_equal(getattr(machine, field), getattr(other, field)), (frame, name, field)
        for slot in ("current", "previous"):
            for field in SLOT_FIELDS:
                mine, theirs = getattr(getattr(machine, slot), field), getattr(getattr(other, slot), field)
                assert np.array_equal(mine, theirs), (frame, name, slot, field)
    assert np.array_equal(compiled.parameters.triggers, reference.parameters.triggers), frame
    assert np.array_equal(compiled.player.raw_times, reference.player.raw_times), frame
    assert np.array_equal(compiled.player.weights, reference.player.weights), frame
    assert np.array_equal(compiled.player.rates, reference.player.rates), frame


def pair(character, document: dict[str, Any], count: int) -> tuple[GraphRuntime, GraphRuntime]:
    mannequin, clips = character
    graph = bind_graph(parse_graph(document), mannequin.skeleton, clips)
    return GraphRuntime(graph, count, backend="numba"), GraphRuntime(graph, count, backend="numpy")


@pytest.mark.parametrize("document", [everything, with_sub_machine, lambda: locomotion("synced", 0.4)])
@pytest.mark.parametrize("fps", [30, 60, 144, None])
def test_the_compiled_machines_step_as_numpy_does(character, document, fps) -> None:
    compiled, reference = pair(character, document(), 24)
    assert any(machine.compiled is not None for machine in compiled.machines.values())
    assert (compiled._compiled is not None) == (len(compiled.machines) == 1)
    assert all(machine.compiled is None for machine in reference.machines.values())
    streams = np.random.default_rng(5), np.random.default_rng(5)
    steps = np.random.default_rng(11)
    for frame in range(150):
        dt = 1.0 / fps if fps else float(steps.choice([0.0, 1e-6, 1 / 60, 0.05, 0.4, 1.3]))
        for runtime, rng in zip((compiled, reference), streams, strict=True):
            drive(runtime, rng)
            runtime.update(dt)
        assert_same(compiled, reference, frame)


def test_the_compiled_machines_hold_as_numpy_does(character) -> None:
    """Logic LOD: a third of the characters run each frame with their accumulated dt."""
    compiled, reference = pair(character, everything(), 30)
    streams = np.random.default_rng(3), np.random.default_rng(3)
    pending = np.zeros(30)
    for frame in range(120):
        pending += 1 / 60
        due = np.arange(frame % 3, 30, 3)
        step = np.zeros(30)
        step[due] = pending[due]
        for runtime, rng in zip((compiled, reference), streams, strict=True):
            drive(runtime, rng)
            runtime.update(step, due, hold=True)
        pending[due] = 0.0
        assert_same(compiled, reference, frame)


def test_an_update_into_records_alone_keeps_the_frame(character) -> None:
    """update(..., records, model=False): the records are the palette, the model matrices come when asked."""
    mannequin, clips = character
    graph = bind_graph(parse_graph(everything()), mannequin.skeleton, clips)
    drawn, kept = GraphRuntime(graph, 12, backend="numba"), GraphRuntime(graph, 12, backend="numba")
    records = np.zeros((12, mannequin.skeleton.num_joints, 4, 4))
    streams = np.random.default_rng(8), np.random.default_rng(8)
    for frame in range(40):
        due = np.arange(frame % 2, 12, 2)
        for runtime, rng in zip((drawn, kept), streams, strict=True):
            drive(runtime, rng)
        drawn.update(1 / 60, due, records=records, model=False)
        kept.update(1 / 60, due)
        assert np.array_equal(np.swapaxes(records[due], -1, -2), kept.player.palette[due]), frame
        if frame % 5 == 4:
            assert np.array_equal(drawn.model, kept.model), frame


def test_only_plain_machines_compile(character) -> None:
    compiled, _ = pair(character, with_sub_machine(), 2)
    assert compiled.machines["root"].compiled is None
    assert isinstance(compiled.machines["resting"].compiled, CompiledStep)


def test_the_kernels_phase_rates_are_synced_rate() -> None:
    """timing_rates against engine.player.sync.synced_rate, all-zero weights (the plain mean) included.

    The current and source states of the rows given, where the kept rate's stamp is stale; a rate
    kept at the character's stamp, a character not given and a state -1 are left as they are.
    """
    rng = np.random.default_rng(2)
    factors = rng.random((5, 6))
    factors[1, 2:5] = 0.0
    timing = (np.array([0, 2, 5]), np.array([0, 1, 2, 3, 4]), rng.random(5) + 0.5)
    state, source = np.array([0, 1, 0, 1, 0]), np.array([-1, -1, 1, 0, 1])
    rates, stamps = np.full((2, 5), 7.0), np.full((2, 5), -1)
    stamps[0, 2] = 2  # fresh: kept
    rows = np.array([0, 1, 2, 4])  # 3 not given
    compiled_module("engine.graph._machine_kernels").timing_rates(
        rows, (state, source), factors, timing, np.arange(5), rates, stamps
    )
    computed = {(0, 0), (1, 1), (1, 2), (0, 4), (1, 4)}
    for s, c in computed:
        leaves, cycles = timing[1][timing[0][s] : timing[0][s + 1]], timing[2][timing[0][s] : timing[0][s + 1]]
        expected = synced_rate(factors[c, leaves][:, None], cycles[:, None])
        assert rates[s, c] == expected[0]
        assert stamps[s, c] == c
    for s, c in {(0, 2), (0, 1), (0, 3), (1, 3), (1, 0)}:
        assert rates[s, c] == 7.0, (s, c)
    assert stamps[0, 2] == 2
    assert stamps[1, 3] == -1


@pytest.mark.parametrize("document", [everything, lambda: locomotion("synced", 0.4)])
def test_the_compiled_layer_state_is_the_runtimes(character, document, monkeypatch) -> None:
    """CompiledLayers' layer states against the numpy path (``_leaf_state``).

    At every switch of a frame (``switch_states``: the states just before and just after the
    entry, on one kernel with it), and after every frame for everyone (``layer_state``).
    """
    compiled, _ = pair(character, document(), 24)
    layers = compiled._compiled
    assert layers is not None
    checked: dict[str, list[bool]] = {"switch": [], "frame": []}

    def numpy_state(rows: np.ndarray) -> tuple[np.ndarray, ...]:
        return compiled._leaf_state(rows, compiled.player.override_weights[:, rows].copy())

    def same(found: tuple[np.ndarray, ...], expected: tuple[np.ndarray, ...], where: str) -> None:
        for name, mine, theirs in zip(
            ("times", "rates", "weights", "weight_rates", "leaving"), found, expected, strict=True
        ):
            assert np.array_equal(mine, theirs), (where, name)
        checked[where].append(bool(expected[-1].any()))

    def switch(entry: tuple, members: np.ndarray) -> tuple:
        expected = numpy_state(members)
        before, after = CompiledLayers.switch_states(layers, entry, members)
        same(before, expected, "switch")
        same(after, numpy_state(members), "switch")
        return before, after

    monkeypatch.setattr(layers.step, "switching", switch)
    stream, steps = np.random.default_rng(9), np.random.default_rng(4)
    everyone = np.arange(24)
    for _ in range(120):
        drive(compiled, stream)
        compiled.update(float(steps.choice([1 / 30, 1 / 60, 1 / 144, 0.3])))
        same(layers.layer_state(everyone), numpy_state(everyone), "frame")
    assert len(checked["switch"]) > 40
    assert any(checked["switch"])  # states entered at the switch
    assert len(checked["frame"]) == 120


@pytest.mark.parametrize("loop", [True, False])
def test_an_exit_time_at_the_frames_last_instant(character, loop) -> None:
    """Exactly at the end of dt the transition fires; one ulp earlier it waits (both backends)."""
    _, clips = character
    document = {
        "start": "a",
        "states": {
            "a": {"motion": {"clip": "walk", "loop": loop}, "transitions": [{"to": "b", "exit_time": 0.5}]},
            "b": {"motion": {"clip": "idle"}},
        },
    }
    rate = 1.0 / clips["walk"].duration  # the state's phase rate: its clip's cycle rate
    exact = 0.5 / rate
    for dt, expected in ((exact, "b"), (np.nextafter(exact, 0.0), "a"), (np.nextafter(exact, 1.0), "b")):
        compiled, reference = pair(character, document, 1)
        for runtime in (compiled, reference):
            runtime.update(dt)
            assert runtime.state_names() == [expected], (runtime.player.backend, dt)
        assert_same(compiled, reference, 0)


def _machine_arrays(runtime: GraphRuntime) -> list[np.ndarray]:
    """The root machine's arrays, both slots' and the triggers: what entering a state writes."""
    machine = runtime.machines["root"]
    slots = [getattr(slot, field) for slot in (machine.current, machine.previous) for field in SLOT_FIELDS]
    return [*(getattr(machine, field) for field in MACHINE_ARRAYS), *slots, runtime.parameters.triggers]


@pytest.mark.parametrize("document", [everything, lambda: locomotion("synced", 0.4)])
def test_the_compiled_entry_is_the_machines(character, document) -> None:
    """CompiledStep.enter against Machine._enter (numpy) from the states a stream leaves.

    Any transition for any character, live sources or not: ``everything`` has a cut (duration 0),
    both documents a trigger that a transition consumes.
    """
    compiled, _ = pair(character, document(), 40)
    machine = compiled.machines["root"]
    step = machine.compiled
    assert step is not None
    stream, rng = np.random.default_rng(1), np.random.default_rng(7)
    transitions = machine.table.kind.size
    for trial in range(40):
        drive(compiled, stream)
        compiled.update(1 / 60)
        rows = np.sort(rng.choice(40, 15, replace=False))
        chosen = rng.integers(0, transitions, rows.size)
        phase, keep = rng.random(rows.size), rng.random(rows.size) < 0.5
        before = [array.copy() for array in _machine_arrays(compiled)]
        step.enter(rows, chosen, phase, keep)
        entered = [array.copy() for array in _machine_arrays(compiled)]
        for array, saved in zip(_machine_arrays(compiled), before, strict=True):
            array[...] = saved
        machine._enter(rows, chosen, phase, keep)
        for index, (mine, theirs) in enumerate(zip(entered, _machine_arrays(compiled), strict=True)):
            assert mine.dtype == theirs.dtype
            assert np.array_equal(mine, theirs), (trial, index)
