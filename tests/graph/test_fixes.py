"""What the graph got wrong before it played on the player, each measured against an independent reference.

- Root motion: the graph integrated a velocity with a trapezoid (first order in ``dt``); now each
  clip's exact keyed travel — checked against the clip's own keys composed loop by loop.
- Synced exit times: predicted with the state's own phase rate while its phase advanced at the
  blended shared rate — checked against the crossing found by integrating the shared rate
  (scipy's ``quad`` and ``brentq``), at 30, 60 and 144 FPS.
- A transition waiting for an uninterruptible one started at the next update — now at the end
  time itself, at any frame rate.
- Batched ≠ single: ``quintic_decay`` took its axis from 1e-19 rounding noise in offsets that
  should be 0 — now the noise counts as 0; a 24-character runtime equals 24 single ones.
- Graph states fired no markers and mixed no morph weights; the same clips played through the
  graph and through the Animator now give the same poses, travel and events.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation

from engine.anim import Channel, Clip, Skeleton
from engine.anim.inertialization import quintic_decay, quintic_offset
from engine.anim.sampling import sample_channel
from engine.animator import Animator
from engine.graph import GraphRuntime, bind_graph, parse_graph
from engine.player import MorphTargets
from tests.graph.documents import chain, locomotion, mannequin_clips

RATES = [30, 60, 144, "random"]


@pytest.fixture(scope="module")
def character():
    return mannequin_clips()


def steps(rate, seconds: float, seed: int = 5) -> list[float]:
    """Frame times summing to ``seconds`` exactly: a fixed rate, or random steps of 1/144–1/20 s."""
    if rate != "random":
        frames = round(seconds * rate)
        return [seconds / frames] * frames
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.uniform(1 / 144, 1 / 20, int(seconds * 60)))
    times = np.concatenate((times[times < seconds], [seconds]))
    return np.diff(np.concatenate(([0.0], times))).tolist()


# --- root motion --------------------------------------------------------------------------------


ARC = Skeleton(["root", "probe"], [-1, 0])


def arc_clip(duration: float = 1.0) -> Clip:
    """The root walks a quarter circle of radius 1 and turns with it (a 90° arc), keyed 30 times a second."""
    keys = np.linspace(0.0, duration, round(30 * duration) + 1)
    angle = 0.5 * np.pi * keys / duration
    path = np.stack((1.0 - np.cos(angle), np.zeros_like(angle), np.sin(angle)), axis=-1)
    turn = Rotation.from_rotvec(np.outer(angle, [0.0, 1.0, 0.0])).as_quat()
    channels = (Channel(0, "translation", "LINEAR", keys, path), Channel(0, "rotation", "LINEAR", keys, turn))
    return Clip("arc", channels, 2, {"step": (0.25, 0.75)})


def keyed_travel(clip: Clip, loops: int) -> tuple[np.ndarray, float]:
    """Where ``loops`` loops of the clip take the character: its root's first and last keys, composed."""
    translation = clip.channel(0, "translation").values
    rotation = clip.channel(0, "rotation").values
    yaw = Rotation.from_quat(rotation[[0, -1]]).as_rotvec()[:, 1]
    step, turn = translation[-1] - translation[0], yaw[1] - yaw[0]
    step = Rotation.from_rotvec([0.0, -yaw[0], 0.0]).apply(step)  # in the clip's heading at its start
    position, heading = np.zeros(3), 0.0
    for _ in range(loops):
        position = position + Rotation.from_rotvec([0.0, heading, 0.0]).apply(step)
        heading += turn
    return position * [1.0, 0.0, 1.0], heading


def walk(runtime_or_animator, frames: list[float]) -> tuple[np.ndarray, float]:
    """Integrate the per-frame root motion: move by the heading applied to the travel, then turn."""
    position, heading = np.zeros(3), 0.0
    for dt in frames:
        runtime_or_animator.update(dt)
        motion = runtime_or_animator.player.root_motion
        position = position + Rotation.from_rotvec([0.0, heading, 0.0]).apply(motion.translation[0])
        heading += float(motion.yaw[0])
    return position, heading


ONE_CLIP = {"start": "arc", "states": {"arc": {"motion": {"clip": "arc"}}}}


@pytest.mark.parametrize("rate", RATES)
def test_graph_root_motion_is_the_keyed_travel_at_any_frame_rate(rate) -> None:
    """Two loops of the 90° arc: (2, 0, 0) and 180° from the keys, at 30/60/144 FPS and random steps (to 1e-9 m)."""
    clip = arc_clip()
    runtime = GraphRuntime(bind_graph(parse_graph(ONE_CLIP), ARC, {"arc": clip}, root_motion="root"), 1)
    position, heading = walk(runtime, steps(rate, 2.0))
    expected, turn = keyed_travel(clip, 2)
    np.testing.assert_allclose(expected, [2.0, 0.0, 0.0], atol=1e-12)  # the reference itself
    np.testing.assert_allclose(position, expected, atol=1e-9)
    assert heading == pytest.approx(turn, abs=1e-9)


@pytest.mark.parametrize("rate", RATES)
def test_the_graph_and_the_animator_play_a_clip_alike(rate, character) -> None:
    """The same walk through a graph state and an Animator action: poses, travel and markers to 1e-12."""
    mannequin, clips = character
    document = {"start": "walk", "states": {"walk": {"motion": {"clip": "walk"}}}}
    graph = GraphRuntime(bind_graph(parse_graph(document), mannequin.skeleton, clips, root_motion="root"), 1)
    animator = Animator(mannequin.skeleton, 1, root_motion="root")
    animator.action(clips["walk"]).play()
    events: dict[str, list[tuple[str, int]]] = {"graph": [], "animator": []}
    names = sorted(clips["walk"].markers or {})
    frame = [0]
    for name in names:
        graph.on_marker(name, lambda event: events["graph"].append((event.marker, frame[0])))
        animator.actions[0].on_marker(name, lambda event: events["animator"].append((event.marker, frame[0])))
    for k, dt in enumerate(steps(rate, 2.3)):
        frame[0] = k
        graph.update(dt)
        animator.update(dt)
        np.testing.assert_allclose(graph.local_pose.rotations, animator.local_pose.rotations, atol=1e-12)
        np.testing.assert_allclose(graph.local_pose.translations, animator.local_pose.translations, atol=1e-12)
        np.testing.assert_allclose(graph.root_translation, animator.root_motion.translation, atol=1e-12)
    assert events["graph"] == events["animator"]
    assert len(events["graph"]) == 2 * len(names) + 1  # 2.3 cycles: each marker once per crossing


def test_markers_fire_once_per_crossing_in_every_clip_of_a_blend(character) -> None:
    """walk and run synced in a 1-D blend space at 2.1 m/s: each clip's footsteps, once per crossing, with weights."""
    mannequin, clips = character
    runtime = GraphRuntime(bind_graph(parse_graph(locomotion()), mannequin.skeleton, clips), 1)
    runtime.parameters.set_float("speed", 2.1)  # half walk, half run
    runtime.update(1 / 60)
    seen: list[tuple[str, str, float]] = []
    runtime.on_marker("left_foot_down", lambda e: seen.append((e.clip, e.state, float(e.weights[0]))))
    for dt in steps("random", 3.0):
        runtime.update(dt)
    rate = 0.5 / clips["walk"].duration + 0.5 / clips["run"].duration  # the shared phase rate
    cycles = int(3.0 * rate)
    for clip in ("walk", "run"):
        found = [s for s in seen if s[0] == clip]
        assert cycles <= len(found) <= cycles + 1
        assert {state for _, state, _ in found} == {"move"}
        np.testing.assert_allclose([w for *_, w in found], 0.5, atol=1e-12)
    with pytest.raises(Exception, match="no clip of the graph has a marker 'nope'"):
        runtime.on_marker("nope", print)


def test_morph_weight_clips_play_in_graph_states() -> None:
    """A clip with ``weights`` channels on a node: the player mixes them in the renderer's layout."""
    skeleton = Skeleton(["root", "face"], [-1, 0])
    blink = Channel(1, "weights", "LINEAR", [0.0, 1.0], [[0.0, 0.2], [1.0, 0.6]])
    clip = Clip("blink", (Channel(0, "translation", "LINEAR", [0.0, 1.0], [[0, 0, 0], [0, 1, 0]]), blink), 2)
    morph = MorphTargets(np.array([1]), np.array([0, 2]), np.array([0.5, 0.5]))
    graph = bind_graph(
        parse_graph({"start": "s", "states": {"s": {"motion": {"clip": "blink"}}}}), skeleton, {"blink": clip}
    )
    runtime = GraphRuntime(graph, 3, morph=morph)
    for dt in (0.1, 0.25, 0.3):
        runtime.update(dt)
    np.testing.assert_allclose(runtime.player.morph_weights, sample_channel(blink, np.full(3, 0.65)), atol=1e-12)


# --- exit times and waiting transitions ----------------------------------------------------------


SYNCED = {
    "parameters": {"fast": {"type": "bool"}},
    "start": "walk",
    "states": {
        "walk": {
            "motion": {"clip": "walk"},
            "transitions": [{"to": "run", "kind": "synced", "duration": 0.5, "conditions": [{"parameter": "fast"}]}],
        },
        "run": {"motion": {"clip": "run"}, "transitions": [{"to": "idle", "duration": 0.2, "exit_time": 0.9}]},
        "idle": {"motion": {"clip": "idle"}},
    },
}


def shared_crossing(character, start_phase: float, exit_time: float) -> float:
    """Seconds after the synced start at which the run's phase reaches ``exit_time`` (quad + brentq)."""
    _, clips = character
    walk, run, total = 1.0 / clips["walk"].duration, 1.0 / clips["run"].duration, 0.5

    def phase(t: float) -> float:
        return start_phase + quad(lambda u: walk + min(u / total, 1.0) * (run - walk), 0.0, t, points=[total])[0]

    return float(brentq(lambda t: phase(t) - exit_time, 0.0, 2.0, xtol=1e-14))


@pytest.mark.parametrize("fps", [30, 60, 144])
def test_an_exit_time_in_a_synced_state_fires_at_the_exact_phase(fps, character) -> None:
    mannequin, clips = character
    runtime = GraphRuntime(bind_graph(parse_graph(SYNCED), mannequin.skeleton, clips), 1)
    dt = 1.0 / fps
    for _ in range(round(0.3 * fps)):
        runtime.update(dt)
    start_phase = float(runtime.root.phase[0])
    runtime.parameters.set_bool("fast", True)
    clock = 0.0
    while runtime.state_names() != ["idle"]:
        runtime.update(dt)
        clock += dt
    fired = clock - float(runtime.root.progress[0])  # when the exit transition started, after the synced start
    assert fired == pytest.approx(shared_crossing(character, start_phase, 0.9), abs=1e-9)


@pytest.mark.parametrize("rate", RATES)
def test_a_transition_waiting_for_an_uninterruptible_one_starts_at_its_end(rate, character) -> None:
    mannequin, clips = character
    document = chain("crossfade", 0.25)
    document["states"]["a"]["transitions"][0]["interruptible"] = False  # a -> b
    runtime = GraphRuntime(bind_graph(parse_graph(document), mannequin.skeleton, clips), 1)
    runtime.parameters.set_trigger("go_b")
    runtime.update(0.0)  # a -> b starts at 0
    runtime.parameters.set_trigger("go_c")  # waits for a -> b to end at 0.25 s
    clock = 0.0
    for dt in steps(rate, 0.4):
        runtime.update(dt)
        clock += dt
    assert runtime.state_names() == ["c"]
    assert clock - float(runtime.root.progress[0]) == pytest.approx(0.25, abs=1e-12)


# --- batched = single --------------------------------------------------------------------------------


def test_rounding_noise_in_an_offset_is_no_offset() -> None:
    """An offset of 1e-17 against a velocity of -2 m/s decays like an offset of 0 (it kept 0 before: t1 ≈ 0)."""
    noisy = quintic_offset(quintic_decay([[1e-17, 0.0, 0.0]], [[-2.0, 0.0, 0.0]], 0.3), 0.05)
    clean = quintic_offset(quintic_decay([[0.0, 0.0, 0.0]], [[-2.0, 0.0, 0.0]], 0.3), 0.05)
    np.testing.assert_allclose(noisy, clean, atol=1e-15)
    assert clean[0, 0] == pytest.approx(-0.0868055555, abs=1e-9)


def test_a_batch_equals_single_runtimes(character) -> None:
    """Random inputs, inertialized transitions: each character of a batch equals its own runtime to 1e-12."""
    mannequin, clips = character
    graph = bind_graph(parse_graph(locomotion("inertialize", 0.25)), mannequin.skeleton, clips, root_motion="root")
    count = 12
    many = GraphRuntime(graph, count)
    singles = [GraphRuntime(graph, 1) for _ in range(count)]
    rng = np.random.default_rng(2)
    for _ in range(30):
        speed = rng.uniform(0.0, 3.5, count) * (rng.random(count) < 0.7)
        jump = rng.random(count) < 0.05
        many.parameters.set_float("speed", speed)
        many.parameters.set_trigger("jump", np.flatnonzero(jump))
        many.update(1 / 60)
        for c, single in enumerate(singles):
            single.parameters.set_float("speed", speed[c])
            if jump[c]:
                single.parameters.set_trigger("jump")
            single.update(1 / 60)
    assert many.player.transitions.active().size or np.any(many.in_transition())
    rotations = np.stack([s.local_pose.rotations[0] for s in singles])
    np.testing.assert_allclose(many.local_pose.rotations, rotations, rtol=0.0, atol=1e-12)
    travel = np.stack([s.root_translation[0] for s in singles])
    np.testing.assert_allclose(many.root_translation, travel, rtol=0.0, atol=1e-12)
