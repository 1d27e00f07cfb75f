"""Switches within one update (engine.graph.pending): a chain at one instant is one switch.

A character whose transition's conditions hold as soon as the last one started (a -> b -> c at one
instant) switches once, from the output before a to c's layers with b -> c's kind: the same
output as a graph that goes a -> c directly. Switches at different instants within one update
are handed over in order (the same poses at every frame rate); a cut at the instant of a switch
drops it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.anim import sample
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.player.transitions import KINDS
from tests.graph.documents import mannequin_clips
from tests.helpers import assert_quat_allclose

STAGE_KINDS = sorted(KINDS)
BACKENDS = ["numpy", "numba"]


@pytest.fixture(scope="module")
def character():
    return mannequin_clips()


def three_states(first: dict[str, Any], second: dict[str, Any], *, direct: bool = False) -> dict[str, Any]:
    """a (idle) -> b (run) on trigger ``go`` with ``first``, b -> c (walk) while ``on`` with ``second``.

    ``direct``: a -> c on ``go`` with ``second`` instead (what the chain shows).
    """
    to_b = {"to": "c" if direct else "b", "conditions": [{"parameter": "go"}], **(second if direct else first)}
    return {
        "parameters": {"go": {"type": "trigger"}, "on": {"type": "bool"}},
        "start": "a",
        "states": {
            "a": {"motion": {"clip": "idle"}, "transitions": [to_b]},
            "b": {
                "motion": {"clip": "run"},
                "transitions": [{"to": "c", "conditions": [{"parameter": "on"}], **second}],
            },
            "c": {"motion": {"clip": "walk"}},
        },
    }


def make(character, document: dict[str, Any], backend: str, count: int = 1) -> GraphRuntime:
    mannequin, clips = character
    return GraphRuntime(bind_graph(parse_graph(document), mannequin.skeleton, clips), count, backend=backend)


def timing(kind: str, duration: float) -> dict[str, Any]:
    return {"kind": kind} if kind == "spring" else {"kind": kind, "duration": duration}


def counted(runtime: GraphRuntime) -> list[int]:
    """The characters of each switch the runtime hands to its player, as they come."""
    calls: list[int] = []
    player = runtime.player
    switch_between = player.switch_between

    def spy(characters, *args, **kwargs):
        calls.append(len(characters))
        return switch_between(characters, *args, **kwargs)

    player.switch_between = spy  # type: ignore[method-assign]
    return calls


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("second", STAGE_KINDS)
@pytest.mark.parametrize("first", STAGE_KINDS)
def test_a_chain_at_one_instant_is_one_switch(character, backend, first, second):
    chained = make(character, three_states(timing(first, 0.3), timing(second, 0.4)), backend, count=3)
    direct = make(character, three_states(timing(first, 0.3), timing(second, 0.4), direct=True), backend, count=3)
    calls = counted(chained)
    for runtime in (chained, direct):
        runtime.parameters.set_bool("on", [True, False, True])
        runtime.update(0.37)
        runtime.parameters.set_trigger("go")
    for frame in range(12):
        chained.update(1 / 30)
        direct.update(1 / 30)
        if frame == 0:
            assert chained.state_names() == ["c", "b", "c"]
            assert calls == ([3] if first == second else [1, 2])  # one player switch per kind, a -> b's first
        for k in (0, 2):  # b -> c at the instant a -> b started: a -> c to rounding
            mine, theirs = chained.local_pose[k], direct.local_pose[k]
            np.testing.assert_allclose(mine.translations, theirs.translations, rtol=0.0, atol=1e-12)
            assert_quat_allclose(mine.rotations, theirs.rotations, atol=1e-12)
            np.testing.assert_allclose(chained.root_translation[k], direct.root_translation[k], rtol=0.0, atol=1e-12)
    assert len(calls) == (1 if first == second else 2)


def exit_chain(kind: str) -> dict[str, Any]:
    """a -> b on ``go``, then b -> c at b's exit time 0.05 (both ``kind``, 0.3 s)."""
    document = three_states(timing(kind, 0.3), timing(kind, 0.3))
    to_c = document["states"]["b"]["transitions"][0]
    to_c["exit_time"], to_c["conditions"] = 0.05, []
    return document


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", STAGE_KINDS)
def test_switches_at_two_instants_of_one_update_play_in_order(character, backend, kind):
    # at 10 FPS both switches fall in one update, at 240 FPS in different ones: the same poses
    slow, fast = make(character, exit_chain(kind), backend), make(character, exit_chain(kind), backend)
    calls = counted(slow)
    for runtime in (slow, fast):
        runtime.update(0.3)
        runtime.parameters.set_trigger("go")
    for _ in range(6):
        slow.update(0.1)
        for _ in range(24):
            fast.update(0.1 / 24)
        np.testing.assert_allclose(slow.local_pose.translations, fast.local_pose.translations, rtol=0.0, atol=1e-9)
        assert_quat_allclose(slow.local_pose.rotations, fast.local_pose.rotations, atol=1e-9)
    assert slow.state_names() == ["c"]
    assert calls == [1, 1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", STAGE_KINDS)
def test_a_cut_at_the_instant_of_a_switch_drops_it(character, backend, kind):
    runtime = make(character, three_states(timing(kind, 0.3), {"kind": "inertialize", "duration": 0.0}), backend)
    calls = counted(runtime)
    runtime.parameters.set_bool("on", True)
    runtime.update(0.37)
    runtime.parameters.set_trigger("go")
    runtime.update(0.1)
    assert runtime.state_names() == ["c"]
    assert not runtime.in_transition()[0]
    assert calls == []
    assert not np.any(runtime.player.transitions.kind)
    mannequin, clips = character
    expected = sample(
        clips["walk"], mannequin.skeleton.rest_pose, np.atleast_1d(runtime.root.phase * clips["walk"].duration)
    )
    np.testing.assert_allclose(runtime.local_pose.translations, expected.translations, rtol=0.0, atol=1e-15)
    assert_quat_allclose(runtime.local_pose.rotations, expected.rotations, atol=5e-16)
