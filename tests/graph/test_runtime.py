"""The graph runtime: transition tables, every transition kind, interruptions, frame rates, batching."""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim import Channel, Clip, additive_pose, apply_additive, blend, sample, subtree_mask
from engine.errors import InvalidInputError
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.graph.transitions import KIND_CODES, marker_phase
from engine.player.transitions import SPRING_SETTLE
from tests.graph.documents import chain, edited, locomotion, mannequin_clips, strafing
from tests.helpers import assert_quat_allclose

KINDS = list(KIND_CODES)


@pytest.fixture(scope="module")
def character():
    return mannequin_clips()


def runtime(character, document, count=1):
    mannequin, clips = character
    return GraphRuntime(bind_graph(parse_graph(document), mannequin.skeleton, clips), count)


def clip_pose(character, name, time):
    mannequin, clips = character
    return sample(clips[name], mannequin.skeleton.rest_pose, np.atleast_1d(time))


def two_states(transition: dict, parameters: dict | None = None, clips=("idle", "walk")) -> dict:
    """States a and b (one clip each) and one transition a -> b."""
    return {
        "parameters": parameters or {"x": {"type": "float"}, "flag": {"type": "bool"}, "go": {"type": "trigger"}},
        "start": "a",
        "states": {
            "a": {"motion": {"clip": clips[0]}, "transitions": [{"to": "b", **transition}]},
            "b": {"motion": {"clip": clips[1]}},
        },
    }


# --- conditions ---------------------------------------------------------------------------------


V = 1.25
BELOW, ABOVE = np.nextafter(V, -np.inf), np.nextafter(V, np.inf)
OPS = [
    ("<", [True, False, False]),
    ("<=", [True, True, False]),
    (">", [False, False, True]),
    (">=", [False, True, True]),
    ("==", [False, True, False]),
    ("!=", [True, False, True]),
]


@pytest.mark.parametrize(("op", "fires"), OPS)
def test_float_conditions_an_ulp_either_side(character, op, fires):
    machine = runtime(character, two_states({"conditions": [{"parameter": "x", "op": op, "value": V}]}), 3)
    machine.parameters.set_float("x", [BELOW, V, ABOVE])
    machine.update(1 / 60)
    assert [s == "b" for s in machine.state_names()] == fires


@pytest.mark.parametrize(
    ("op", "value", "fires"), [("==", True, [False, True]), ("!=", True, [True, False]), ("==", False, [True, False])]
)
def test_bool_conditions(character, op, value, fires):
    machine = runtime(character, two_states({"conditions": [{"parameter": "flag", "op": op, "value": value}]}), 2)
    machine.parameters.set_bool("flag", np.array([False, True]))
    machine.update(1 / 60)
    assert [s == "b" for s in machine.state_names()] == fires


def test_all_conditions_must_hold(character):
    conditions = [{"parameter": "x", "op": ">", "value": 0.0}, {"parameter": "flag"}, {"parameter": "go"}]
    machine = runtime(character, two_states({"conditions": conditions}), 4)
    machine.parameters.set_float("x", [1.0, 1.0, 1.0, -1.0])
    machine.parameters.set_bool("flag", np.array([True, True, False, True]))
    machine.parameters.set_trigger("go", [0, 2, 3])
    machine.update(1 / 60)
    assert machine.state_names() == ["b", "a", "a", "a"]


def test_triggers_are_consumed_once(character):
    document = edited(locomotion("crossfade", 0.1), "states.jump.transitions[0].exit_time", 0.5)
    machine = runtime(character, document, 2)
    machine.parameters.set_trigger("jump", 0)
    machine.update(1 / 60)
    assert machine.state_names() == ["jump", "idle"]
    assert machine.parameters.get("jump").tolist() == [False, False]  # consumed by the transition
    for _ in range(60):  # through the jump to its exit time and back to idle: no second jump
        machine.update(1 / 60)
    assert machine.state_names() == ["idle", "idle"]


def test_a_trigger_waits_until_a_transition_takes_it(character):
    document = two_states({"conditions": [{"parameter": "go"}, {"parameter": "flag"}]})
    machine = runtime(character, document)
    machine.parameters.set_trigger("go")
    machine.update(1 / 60)
    assert machine.state_names() == ["a"]
    assert machine.parameters.get("go").tolist() == [True]
    machine.parameters.set_bool("flag", True)
    machine.update(1 / 60)
    assert machine.state_names() == ["b"]
    assert machine.parameters.get("go").tolist() == [False]
    machine.parameters.set_trigger("go")
    machine.parameters.reset_trigger("go")
    assert machine.parameters.get("go").tolist() == [False]


def test_any_state_first_then_document_order(character):
    document = {
        "parameters": {"p": {"type": "bool"}, "q": {"type": "bool"}},
        "start": "a",
        "states": {
            "a": {
                "motion": {"clip": "idle"},
                "transitions": [
                    {"to": "b", "conditions": [{"parameter": "p"}]},
                    {"to": "c", "conditions": [{"parameter": "p"}]},
                ],
            },
            "b": {"motion": {"clip": "walk"}},
            "c": {"motion": {"clip": "run"}},
        },
        "any_state": [{"to": "c", "conditions": [{"parameter": "q"}]}],
    }
    machine = runtime(character, document, 3)
    machine.parameters.set_bool("p", np.array([True, True, False]))
    machine.parameters.set_bool("q", np.array([False, True, True]))
    machine.update(1 / 60)
    assert machine.state_names() == ["b", "c", "c"]


def test_any_state_never_reenters_the_current_state(character):
    machine = runtime(character, locomotion("crossfade", 0.1))
    machine.parameters.set_trigger("jump")
    machine.update(1 / 60)
    elapsed = machine.root.elapsed.copy()
    machine.parameters.set_trigger("jump")
    machine.update(1 / 60)
    assert machine.state_names() == ["jump"]
    assert machine.root.elapsed[0] == pytest.approx(elapsed[0] + 1 / 60)  # not restarted
    assert machine.parameters.get("jump").tolist() == [True]  # not consumed: it fires once it can


# --- exit times ---------------------------------------------------------------------------------


def test_exit_time_fires_at_the_crossing_instant(character):
    machine = runtime(character, two_states({"exit_time": 0.5, "duration": 0.25}, clips=("walk", "idle")))
    machine.update(0.3)
    assert machine.state_names() == ["a"]
    assert machine.root.phase[0] == pytest.approx(0.3)
    machine.update(0.3)  # walk lasts 1 s: phase 0.5 is crossed 0.2 s into this update
    assert machine.state_names() == ["b"]
    assert machine.root.elapsed[0] == pytest.approx(0.1)
    assert machine.root.progress[0] == pytest.approx(0.1)


def test_exit_time_with_a_false_condition_waits_for_the_next_loop(character):
    document = two_states({"exit_time": 0.5, "conditions": [{"parameter": "flag"}]}, clips=("walk", "idle"))
    machine = runtime(character, document)
    machine.update(0.6)
    machine.parameters.set_bool("flag", True)
    machine.update(0.6)  # from phase 0.6: the next crossing of 0.5 is after 0.9 s
    assert machine.state_names() == ["a"]
    machine.update(0.4)
    assert machine.state_names() == ["b"]
    assert machine.root.elapsed[0] == pytest.approx(0.1)


def test_exit_time_of_a_state_played_once_fires_any_time_after(character):
    document = locomotion("crossfade", 0.1)
    machine = runtime(character, document)
    machine.parameters.set_bool("grounded", False)
    machine.parameters.set_trigger("jump")
    for _ in range(100):  # the jump (1.2 s) ends, the character is not grounded: it holds
        machine.update(1 / 50)
    assert machine.state_names() == ["jump"]
    assert machine.root.phase[0] == 1.0
    machine.parameters.set_bool("grounded", True)
    machine.update(1 / 50)
    assert machine.state_names() == ["idle"]
    assert machine.root.elapsed[0] == pytest.approx(1 / 50)


def test_uninterruptible_transitions_finish_first(character):
    document = chain("crossfade", 0.5)
    document["states"]["a"]["transitions"][0]["interruptible"] = False  # a -> b
    machine = runtime(character, document)
    machine.parameters.set_trigger("go_b")
    machine.update(0.1)
    machine.parameters.set_trigger("go_c")
    machine.update(0.1)
    assert machine.state_names() == ["b"]
    for _ in range(4):
        machine.update(0.1)
    assert machine.state_names() == ["c"]


# --- what each kind plays -------------------------------------------------------------------------------


def kind_document(kind, duration=0.4):
    return chain(kind, duration)


@pytest.mark.parametrize("kind", KINDS)
def test_transition_starts_at_the_source_pose(character, kind):
    machine = runtime(character, kind_document(kind))
    machine.update(0.37)
    before = machine.local_pose.copy()
    machine.parameters.set_trigger("go_b")
    machine.update(0.0)  # starts now, evaluated at the same instant
    assert machine.state_names() == ["b"]
    assert machine.in_transition()[0]
    np.testing.assert_allclose(machine.local_pose.translations, before.translations, atol=1e-12)
    assert_quat_allclose(machine.local_pose.rotations, before.rotations, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_transition_ends_exactly_at_the_target(character, kind):
    machine = runtime(character, kind_document(kind, 0.4))
    machine.update(0.37)
    machine.parameters.set_trigger("go_b")
    end = SPRING_SETTLE * 0.08 if kind == "spring" else 0.4
    steps = int(np.ceil(end / 0.05)) + 1
    for _ in range(steps):
        machine.update(0.05)
    assert not machine.in_transition()[0]
    target = clip_pose(character, "run", machine.root.phase * character[1]["run"].duration)
    # the target itself: the flat blend of its one layer normalises the sampled rotations (<= 2 ulp)
    np.testing.assert_allclose(machine.local_pose.translations, target.translations, rtol=0.0, atol=1e-15)
    np.testing.assert_allclose(machine.local_pose.rotations, target.rotations, rtol=0.0, atol=5e-16)


def test_a_zero_duration_transition_cuts(character):
    machine = runtime(
        character, two_states({"kind": "inertialize", "duration": 0.0, "conditions": [{"parameter": "go"}]})
    )
    machine.update(0.2)
    machine.parameters.set_trigger("go")
    machine.update(0.1)
    assert machine.state_names() == ["b"]
    assert not machine.in_transition()[0]
    _mannequin, clips = character
    expected = clip_pose(character, "walk", machine.root.phase * clips["walk"].duration)
    np.testing.assert_array_equal(machine.local_pose.rotations, expected.rotations)


def test_crossfade_is_the_linear_blend_of_both_clips(character):
    machine = runtime(character, chain("crossfade", 0.4))
    machine.update(0.5)
    machine.parameters.set_trigger("go_b")
    machine.update(0.1)
    mannequin, clips = character
    source = clip_pose(character, "idle", 0.6)
    target = clip_pose(character, "run", machine.root.phase * clips["run"].duration)
    expected = blend(mannequin.skeleton.rest_pose, [source, target], [0.75, 0.25])
    np.testing.assert_allclose(machine.local_pose.rotations, expected.rotations, atol=1e-12)


def test_frozen_blends_from_the_pose_at_the_start(character):
    machine = runtime(character, chain("frozen", 0.4))
    machine.update(0.5)
    source = machine.local_pose.copy()
    machine.parameters.set_trigger("go_b")
    machine.update(0.2)
    mannequin, clips = character
    target = clip_pose(character, "run", machine.root.phase * clips["run"].duration)
    expected = blend(mannequin.skeleton.rest_pose, [source, target], [0.5, 0.5])
    np.testing.assert_allclose(machine.local_pose.rotations, expected.rotations, atol=1e-12)


def test_synced_transition_starts_the_target_at_the_source_phase(character):
    document = {
        "parameters": {"fast": {"type": "bool"}},
        "start": "walk",
        "states": {
            "walk": {
                "motion": {"clip": "walk"},
                "transitions": [
                    {"to": "run", "kind": "synced", "duration": 0.5, "conditions": [{"parameter": "fast"}]}
                ],
            },
            "run": {"motion": {"clip": "run"}},
        },
    }
    machine = runtime(character, document)
    machine.update(0.3)
    machine.parameters.set_bool("fast", True)
    machine.update(0.0)
    assert machine.root.phase[0] == pytest.approx(0.3)  # walk and run markers sit at the same phases
    machine.update(0.1)
    # both advance at the blended rate: (1 - α)/1.0 + α/0.7 per second with α = 0 → 0.2 over the step
    rate_start, rate_end = 1.0, (0.8 / 1.0 + 0.2 / 0.7)
    assert rate_start * 0.1 <= machine.root.phase[0] - 0.3 <= rate_end * 0.1
    assert machine.root.phase[0] == pytest.approx(machine.root.source_phase[0])


def test_marker_phase_maps_between_markers():
    track = [Channel(0, "translation", "LINEAR", [0.0, 1.0], [[0, 0, 0], [1, 0, 0]])]
    source = Clip("s", track, 1, {"left": (0.0,), "right": (0.5,)})
    target = Clip(
        "t",
        [Channel(0, "translation", "LINEAR", [0.0, 2.0], [[0, 0, 0], [1, 0, 0]])],
        1,
        {"left": (0.2,), "right": (1.8,)},
    )
    # source at 0.25 s: half way from left (0) to right (0.5) → target half way from 0.2 to 1.8 = 1.0 s → phase 0.5
    # source at 0.75 s: half way from right (0.5) to left (1.0) → target half way from 1.8 to 2.2 (= 0.2) = 2.0 → 0
    np.testing.assert_allclose(
        marker_phase(source, target, np.array([0.0, 0.25, 0.5, 0.75])), [0.1, 0.5, 0.9, 0.0], atol=1e-12
    )
    unmarked = Clip("u", track, 1)
    np.testing.assert_array_equal(marker_phase(source, unmarked, np.array([0.3])), [0.3])


def test_inertialize_only_evaluates_the_target_plus_a_decaying_offset(character):
    machine = runtime(character, chain("inertialize", 0.4))
    machine.update(0.5)
    machine.parameters.set_trigger("go_b")
    machine.update(0.1)
    machine.update(0.1)
    _mannequin, clips = character
    target = clip_pose(character, "run", machine.root.phase * clips["run"].duration)
    distance = np.abs(machine.local_pose.rotations - target.rotations).max()
    assert 0.0 < distance < np.abs(clip_pose(character, "idle", 0.7).rotations - target.rotations).max()


# --- interruptions --------------------------------------------------------------------------------------


def every_kind_document(duration=0.3):
    """a -> b and b -> c by every kind, each on its own trigger (b_KIND, c_KIND)."""
    states = {"a": "idle", "b": "run", "c": "jump"}
    parameters, transitions = {}, {s: [] for s in states}
    for kind in KINDS:
        timing = {"kind": kind} | ({} if kind == "spring" else {"duration": duration})
        for source, target in (("a", "b"), ("b", "c")):
            parameters[f"{target}_{kind}"] = {"type": "trigger"}
            transitions[source].append({"to": target, "conditions": [{"parameter": f"{target}_{kind}"}], **timing})
    return {
        "parameters": parameters,
        "start": "a",
        "states": {s: {"motion": {"clip": clip}, "transitions": transitions[s]} for s, clip in states.items()},
    }


def joint_angles(a, b):
    return np.degrees(2.0 * np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0.0, 1.0)))


def test_interrupted_transitions_never_jump(character):
    mannequin, clips = character
    pairs = [(first, second) for first in KINDS for second in KINDS]
    machine = runtime(character, every_kind_document(0.3), len(pairs))
    rng = np.random.default_rng(11)
    interrupt = 20 + rng.integers(1, 18, len(pairs))  # during the first transition (18 frames)
    dt = 1.0 / 60.0
    previous, worst = None, np.zeros(len(pairs))
    for frame in range(80):
        if frame == 20:
            for c, (first, _) in enumerate(pairs):
                machine.parameters.set_trigger(f"b_{first}", c)
        for c in np.nonzero(interrupt == frame)[0]:
            machine.parameters.set_trigger(f"c_{pairs[c][1]}", c)
        machine.update(dt)
        rotations = machine.local_pose.rotations.copy()
        if previous is not None:
            worst = np.maximum(worst, joint_angles(rotations, previous).max(axis=1))
        previous = rotations
    assert machine.state_names() == ["c"] * len(pairs)
    # the bound: the fastest clip's own motion per frame, plus the largest difference between any
    # two of the clips' poses spread over a transition (× 1.875, the quintic's steepest slope)
    speed = max(
        joint_angles(r[1:], r[:-1]).max()
        for r in (
            sample(clips[n], mannequin.skeleton.rest_pose, np.arange(0, clips[n].duration, dt)).rotations
            for n in ("idle", "run", "jump")
        )
    )
    poses = [
        sample(clips[n], mannequin.skeleton.rest_pose, np.linspace(0, clips[n].duration, 40)).rotations
        for n in ("idle", "run", "jump")
    ]
    spread = max(joint_angles(a[:, None], b[None, :]).max() for a in poses for b in poses)
    bound = speed + spread * dt / 0.3 * 1.875
    assert spread > 4.0 * bound  # a cut between two clips would break the bound by far
    assert worst.max() < bound, dict(zip(pairs, worst.round(2), strict=True))


def test_interrupting_inertialization_keeps_the_velocity(character):
    machine = runtime(character, chain("inertialize", 0.4))
    machine.update(0.3)
    machine.parameters.set_trigger("go_b")
    machine.update(0.15)
    before = machine.output_velocity()
    pose = machine.local_pose.copy()
    machine.parameters.set_trigger("go_c")
    machine.update(0.0)
    assert machine.state_names() == ["c"]
    np.testing.assert_allclose(machine.local_pose.translations, pose.translations, atol=1e-12)
    assert_quat_allclose(machine.local_pose.rotations, pose.rotations, atol=1e-12)
    after = machine.output_velocity()
    np.testing.assert_allclose(after.angular, before.angular, atol=1e-8)
    np.testing.assert_allclose(after.linear, before.linear, atol=1e-8)


# --- frame rates and batching ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_frame_rate_independent_at_30_60_144_fps(character, kind):
    # every time all three rates reach is a multiple of 1/6 s, a key time of the 30 Hz clips, where the
    # velocity kinks: idle plays at 0.9 so that the transitions start between keys, where it is defined
    document = edited(locomotion(kind, 0.3), "states.idle.speed", 0.9)
    outputs = {}
    for fps in (30, 60, 144):
        machine = runtime(character, document)
        poses = []
        for frame in range(round(2.5 * fps)):
            time = frame / fps
            if frame == round(0.5 * fps):
                machine.parameters.set_float("speed", 2.0)
            if frame == round(1.0 * fps):
                machine.parameters.set_trigger("jump")
            machine.update(1.0 / fps)
            if (frame + 1) % (fps // 6) == 0:  # every 1/6 s, a time all three rates reach
                poses.append((round((frame + 1) / fps, 9), machine.local_pose.copy()))
        outputs[fps] = dict(poses)
    common = sorted(set(outputs[30]) & set(outputs[60]) & set(outputs[144]))
    assert len(common) >= 12
    for time in common:
        for fps in (60, 144):
            np.testing.assert_allclose(outputs[fps][time].rotations, outputs[30][time].rotations, atol=1e-9)
            np.testing.assert_allclose(outputs[fps][time].translations, outputs[30][time].translations, atol=1e-9)


@pytest.mark.parametrize("count", [200, pytest.param(1000, marks=pytest.mark.slow)])
def test_a_batch_of_characters_matches_as_many_single_machines(character, count):
    document = locomotion("inertialize", 0.25)
    frames = 8
    rng = np.random.default_rng(7)
    speeds = rng.uniform(0.0, 3.5, (frames, count)) * (rng.random((frames, count)) < 0.6)
    jumps = rng.random((frames, count)) < 0.08
    grounded = rng.random((frames, count)) < 0.8
    steps = rng.uniform(1 / 144, 1 / 20, (frames, count))
    mannequin, clips = character
    graph = bind_graph(parse_graph(document), mannequin.skeleton, clips)
    many = GraphRuntime(graph, count)
    singles = [GraphRuntime(graph, 1) for _ in range(count)]
    for frame in range(frames):
        many.parameters.set_float("speed", speeds[frame])
        many.parameters.set_bool("grounded", grounded[frame])
        many.parameters.set_trigger("jump", jumps[frame])
        many.player.begin_frame(steps[frame])
        many.control()
        for c, single in enumerate(singles):
            single.parameters.set_float("speed", speeds[frame, c])
            single.parameters.set_bool("grounded", grounded[frame, c])
            if jumps[frame, c]:
                single.parameters.set_trigger("jump")
            single.player.begin_frame(
                steps[frame, c]
            )  # the logic and layer times: the pose is compared once, at the end
            single.control()
    many.player.pose()
    for single in singles:
        single.player.pose()
    assert sum(name != "idle" for name in many.state_names()) > count // 5  # the streams did move them around
    assert many.in_transition().sum() > count // 10
    np.testing.assert_array_equal(many.root.state, [s.root.state[0] for s in singles])
    np.testing.assert_array_equal(many.root.kind, [s.root.kind[0] for s in singles])
    rotations = np.stack([s.local_pose.rotations[0] for s in singles])
    translations = np.stack([s.local_pose.translations[0] for s in singles])
    np.testing.assert_allclose(many.local_pose.rotations, rotations, atol=1e-12)
    np.testing.assert_allclose(many.local_pose.translations, translations, atol=1e-12)


# --- blend trees ---------------------------------------------------------------------------------------


def test_the_2d_blend_space_gives_each_clip_at_its_point(character):
    document = strafing()
    machine = runtime(character, document, 9)
    points = document["states"]["strafe"]["motion"]["points"]
    machine.parameters.set_float("vx", [p["at"][0] for p in points])
    machine.parameters.set_float("vz", [p["at"][1] for p in points])
    machine.update(0.123)
    mannequin, clips = character
    for c, point in enumerate(points):
        clip = clips[point["clip"]]
        expected = sample(clip, mannequin.skeleton.rest_pose, machine.root.phase[c : c + 1] * clip.duration)
        np.testing.assert_allclose(machine.local_pose.translations[c], expected.translations[0], atol=1e-12)
        assert_quat_allclose(machine.local_pose.rotations[c], expected.rotations[0], atol=1e-12)


def test_blend_space_phase_runs_at_the_weighted_cycle_rate(character):
    machine = runtime(character, locomotion(), 1)
    machine.parameters.set_float("speed", 2.1)  # half walk (1 s cycle), half run (0.7 s)
    machine.update(0.0)
    machine.update(0.35)
    expected = (0.5 / 1.0 + 0.5 / 0.7) * (0.35 - 0.0)
    assert machine.state_names() == ["move"]
    assert machine.root.phase[0] == pytest.approx(expected % 1.0)


def test_layer_and_additive_nodes_match_the_jobs(character):
    mannequin, clips = character
    skeleton = mannequin.skeleton
    document = {
        "parameters": {"lean": {"type": "float", "default": 0.6}},
        "masks": {"upper": {"joints": ["spine"]}},
        "start": "s",
        "states": {
            "s": {
                "motion": {
                    "additive": {"clip": "lean_look", "sync": False},
                    "weight": "lean",
                    "base": {
                        "layer": {"clip": "wave", "sync": False},
                        "base": {"clip": "walk"},
                        "mask": "upper",
                        "weight": 0.7,
                    },
                }
            }
        },
    }
    machine = runtime(character, document)
    machine.update(0.4)
    walk = clip_pose(character, "walk", machine.root.phase * clips["walk"].duration)
    wave = clip_pose(character, "wave", 0.4)
    upper = subtree_mask(skeleton, "spine")
    layered = blend(skeleton.rest_pose, [walk, walk, wave], [1.0, 0.3, 0.7], [1.0 - upper, upper, upper])
    delta = additive_pose(clip_pose(character, "lean_look", 0.4), clip_pose(character, "lean_look", 0.0)[0])
    expected = apply_additive(layered, delta, 0.6)
    np.testing.assert_allclose(machine.local_pose.translations, expected.translations, atol=1e-12)
    assert_quat_allclose(machine.local_pose.rotations, expected.rotations, atol=1e-12)


def test_sub_machines_run_while_their_state_is_current(character):
    document = locomotion("crossfade", 0.1)
    document["parameters"]["tired"] = {"type": "bool"}
    document["machines"] = {
        "resting": {
            "start": "stand",
            "states": {
                "stand": {
                    "motion": {"clip": "idle"},
                    "transitions": [{"to": "wave", "duration": 0.1, "conditions": [{"parameter": "tired"}]}],
                },
                "wave": {"motion": {"clip": "wave"}},
            },
        }
    }
    document["states"]["idle"]["motion"] = {"machine": "resting"}
    machine = runtime(character, document, 2)
    machine.parameters.set_bool("tired", np.array([True, False]))
    machine.update(0.2)
    assert machine.state_names("resting") == ["wave", "stand"]
    machine.parameters.set_float("speed", 2.0)
    machine.update(0.2)
    machine.parameters.set_bool("tired", np.array([False, False]))
    assert machine.state_names() == ["move", "move"]
    machine.parameters.set_float("speed", 0.0)
    machine.update(0.2)  # back to idle: the sub-machine starts over
    assert machine.state_names() == ["idle", "idle"]
    assert machine.state_names("resting") == ["stand", "stand"]


def test_update_validates_dt(character):
    machine = runtime(character, locomotion())
    with pytest.raises(InvalidInputError, match="dt must be >= 0"):
        machine.update(-0.1)
    with pytest.raises(InvalidInputError, match="dt must be finite"):
        machine.update(np.nan)
    with pytest.raises(InvalidInputError, match="unknown parameter 'sped'"):
        machine.parameters.set_float("sped", 1.0)
    with pytest.raises(InvalidInputError, match="is a trigger, not a float"):
        machine.parameters.set_float("jump", 1.0)
    with pytest.raises(InvalidInputError, match="num_characters"):
        GraphRuntime(machine.graph, 0)


def test_offset_starts_the_target_part_way(character):
    document = two_states(
        {"kind": "inertialize", "duration": 0.2, "offset": 0.75, "conditions": [{"parameter": "go"}]},
        clips=("walk", "jump"),
    )
    document["states"]["b"]["motion"]["loop"] = False
    machine = runtime(character, document)
    machine.update(0.1)
    machine.parameters.set_trigger("go")
    machine.update(0.12)  # jump lasts 1.2 s: from 0.9 s, 0.12 s on
    assert machine.state_names() == ["b"]
    assert machine.root.phase[0] == pytest.approx(0.75 + 0.12 / 1.2)
