"""Root motion from a graph: ``bind_graph(..., root_motion=joint)`` plays the clips in place and reports their travel.

References are independent of the runtime: the clips' own root translations sampled at the ends
of a cycle (how far a cycle carries the character) and the in-place root of
:func:`engine.anim.rootmotion.remove_planar`.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim import sample
from engine.anim.rootmotion import remove_planar
from engine.errors import SkeletonMismatchError
from engine.graph import GraphRuntime, bind_graph, parse_graph
from tests.graph.documents import locomotion, mannequin_clips, strafing
from tests.helpers import assert_quat_allclose


@pytest.fixture(scope="module")
def character():
    return mannequin_clips()


def bound(character, document, root="root"):
    mannequin, clips = character
    return bind_graph(parse_graph(document), mannequin.skeleton, clips, root_motion=root)


def cycle_travel(character, name: str) -> np.ndarray:
    """The root's planar displacement over one cycle of clip ``name``, from its keys."""
    mannequin, clips = character
    clip = clips[name]
    ends = sample(clip, mannequin.skeleton.rest_pose, np.array([0.0, clip.duration]))
    return (ends.translations[1, 0] - ends.translations[0, 0]) * [1.0, 0.0, 1.0]


def test_the_clips_play_in_place(character):
    mannequin, clips = character
    runtime = GraphRuntime(bound(character, locomotion()), 1)
    runtime.parameters.set_float("speed", 1.2)
    for _ in range(50):
        runtime.update(1 / 60)
    assert runtime.state_names() == ["move"]
    assert not runtime.in_transition()[0]
    time = runtime.root.phase[:1] * clips["walk"].duration
    expected = sample(clips["walk"], mannequin.skeleton.rest_pose, time)[0]
    translation, rotation = remove_planar(expected.translations[0], expected.rotations[0])
    np.testing.assert_allclose(runtime.local_pose.translations[0, 0], translation, atol=1e-9)
    assert_quat_allclose(runtime.local_pose.rotations[0, 0], rotation, atol=1e-9)
    np.testing.assert_allclose(runtime.local_pose.translations[0, 1:], expected.translations[1:], atol=1e-9)


@pytest.mark.parametrize("fps", [30, 60, 144])
@pytest.mark.parametrize("clip", ["walk", "walk_left", "run_back"])
def test_a_cycle_travels_as_far_as_the_clip(character, fps, clip):
    """A state on one sample of a 2-D blend space: a whole cycle's travel is the clip's own, at any frame rate."""
    _, clips = character
    runtime = GraphRuntime(bound(character, strafing()), 1)
    document_points = {p["clip"]: p["at"] for p in strafing()["states"]["strafe"]["motion"]["points"]}
    x, z = document_points[clip]
    runtime.parameters.set_float("vx", x)
    runtime.parameters.set_float("vz", z)
    runtime.update(0.0)
    duration = clips[clip].duration
    frames = round(4 * duration * fps)  # four cycles (the step divides them within 1e-12 s)
    travel = np.zeros(3)
    for _ in range(frames):
        runtime.update(4 * duration / frames)
        travel += runtime.root_translation[0]
    expected = 4 * cycle_travel(character, clip)
    assert np.linalg.norm(expected) > 2.0
    np.testing.assert_allclose(travel, expected, atol=2e-3)


@pytest.mark.parametrize("kind", ["inertialize", "crossfade", "dead_blend"])
def test_the_travel_changes_smoothly_through_transitions(character, kind):
    """idle → walk → run → idle with random steps: the root speed changes by a bounded amount per second.

    The speed parameter eases towards each target (half-life 0.12 s, as a game's input does); the
    state changes (idle ↔ move, thresholds 0.1 m/s) are the transitions.
    """
    runtime = GraphRuntime(bound(character, locomotion(kind)), 1)
    rng = np.random.default_rng(4)
    speeds, times = [], []
    clock, speed = 0.0, 0.0
    for target in (0.0, 1.2, 3.0, 0.0):
        for _ in range(90):
            dt = rng.uniform(1 / 144, 1 / 30)
            speed += (target - speed) * (1.0 - 0.5 ** (dt / 0.12))
            runtime.parameters.set_float("speed", speed)
            runtime.update(dt)
            clock += dt
            speeds.append(np.linalg.norm(runtime.root_translation[0]) / dt)
            times.append(clock)
    speeds_array = np.array(speeds)
    assert speeds_array.max() == pytest.approx(3.0, abs=0.1)  # reaches the run's 3 m/s
    acceleration = np.abs(np.diff(speeds_array)) / np.diff(times)
    assert acceleration.max() < 60.0  # m/s² (a cut from run to idle would be 3 m/s in one 1/144 s step: 432)


def test_without_a_root_motion_joint_nothing_travels(character):
    mannequin, clips = character
    runtime = GraphRuntime(bind_graph(parse_graph(locomotion()), mannequin.skeleton, clips), 1)
    runtime.parameters.set_float("speed", 1.2)
    for _ in range(30):
        runtime.update(1 / 60)
    np.testing.assert_array_equal(runtime.root_translation, 0.0)
    assert abs(runtime.local_pose.translations[0, 0, 2]) > 0.0  # the clip's own root translation


@pytest.mark.parametrize(
    ("root", "message"), [("tail", "root_motion: no joint named 'tail'"), (99, "joint index 99 is out of range")]
)
def test_a_bad_root_motion_joint(character, root, message):
    with pytest.raises(SkeletonMismatchError, match=message):
        bound(character, locomotion(), root)
