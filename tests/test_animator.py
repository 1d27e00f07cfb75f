"""Tests of engine.animator: time-stepped behaviour, read back from the poses and the callbacks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim import Channel, Clip, Pose, Skeleton, model_from_pose, sample, skinning_palette
from engine.anim.additive import additive_clip, apply_additive
from engine.anim.blending import blend, subtree_mask
from engine.animator import Action, Animator, Loop, MarkerEvent
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.io import load_character
from engine.procedural.mannequin import build_mannequin
from tests.helpers import assert_quat_allclose

SKELETON = Skeleton(["root", "probe"], [-1, 0])


def ramp(name: str = "ramp", duration: float = 1.0, markers: dict | None = None, offset: float = 0.0) -> Clip:
    """The probe joint's x translation reads ``offset + clip time``: the pose shows the time."""
    channel = Channel(1, "translation", "LINEAR", [0.0, duration], [[offset, 0, 0], [offset + duration, 0, 0]])
    return Clip(name, (channel,), 2, markers)


def constant(name: str, x: float) -> Clip:
    return Clip(name, (Channel(1, "translation", "STEP", [0.0, 1.0], [[x, 0, 0], [x, 0, 0]]),), 2)


def probe(animator: Animator) -> np.ndarray:
    return animator.local_pose.translations[:, 1, 0]


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


# --- actions and time ----------------------------------------------------------------------------


def test_every_method_returns_the_action():
    animator = Animator(SKELETON, 2)
    a = animator.action(ramp("a", markers={"m": (0.5,)}))
    b = animator.action(ramp("b"))
    assert animator.action(a.clip) is a
    calls = [
        a.play(),
        a.pause(),
        a.resume(),
        a.set_time(0.2),
        a.set_speed(1.5),
        a.set_loop(Loop.PING_PONG),
        a.set_weight(0.5),
        a.fade_in(0.1),
        a.fade_out(0.1),
        a.warp(1.0, 2.0, 0.5),
        a.crossfade_to(b, 0.2),
        a.crossfade_from(b, 0.2, warp=True),
        a.on_marker("m", lambda event: None),
        a.set_mask([1.0, 0.5]),
        a.reset(),
        a.stop(),
    ]
    assert all(result is a for result in calls)


def test_time_speed_pause_and_per_character_dt():
    animator = Animator(SKELETON, 3)
    action = animator.action(ramp(duration=4.0)).play()
    action.set_speed([1.0, 2.0, -1.0])
    animator.update(0.25)
    np.testing.assert_allclose(action.time, [0.25, 0.5, 3.75])  # backwards wraps from 0 to the end
    np.testing.assert_allclose(probe(animator), action.time)
    action.pause(characters=[0])
    animator.update(np.array([0.5, 0.25, 0.25]))
    np.testing.assert_allclose(action.time, [0.25, 1.0, 3.5])
    action.resume(0)
    animator.update(0.5)
    np.testing.assert_allclose(action.time, [0.75, 2.0, 3.0])
    np.testing.assert_allclose(animator.clock, [1.25, 1.0, 1.0])


def test_reset_rewinds_to_the_end_when_playing_backwards():
    animator = Animator(SKELETON)
    action = animator.action(ramp()).set_loop(Loop.ONCE).set_speed(-1.0).reset()
    assert action.time.tolist() == [1.0]
    animator.update(0.25)
    np.testing.assert_allclose(probe(animator), [0.75])
    animator.update(2.0)
    assert action.time.tolist() == [0.0]
    assert action.finished.tolist() == [True]
    animator.update(0.25)
    np.testing.assert_allclose(probe(animator), [0.0])  # holds the first frame


def test_once_clamps_and_finishes():
    animator = Animator(SKELETON)
    action = animator.action(ramp()).set_loop(Loop.ONCE).play()
    seen = []
    for _ in range(6):
        animator.update(0.25)
        seen.append(float(probe(animator)[0]))
    assert seen == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert action.finished.tolist() == [True]
    assert action.enabled.tolist() == [True]  # clamped, still weighted
    action.set_speed(-1.0)
    animator.update(0.25)
    assert action.finished.tolist() == [False]
    np.testing.assert_allclose(probe(animator), [0.75])


def test_repeat_wraps():
    animator = Animator(SKELETON)
    animator.action(ramp()).play()
    seen = []
    for _ in range(6):
        animator.update(0.375)
        seen.append(float(probe(animator)[0]))
    assert seen == [0.375, 0.75, 0.125, 0.5, 0.875, 0.25]


def test_ping_pong_reverses_at_both_ends():
    animator = Animator(SKELETON, 2)
    action = animator.action(ramp()).set_loop(Loop.PING_PONG).play()
    action.set_speed([1.0, -1.0])
    action.reset(1)  # character 1 starts at the end, going back
    seen = []
    for _ in range(9):
        animator.update(0.25)
        seen.append(probe(animator).tolist())
    assert [s[0] for s in seen] == [0.25, 0.5, 0.75, 1.0, 0.75, 0.5, 0.25, 0.0, 0.25]
    assert [s[1] for s in seen] == [0.75, 0.5, 0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 0.75]


def test_stop_returns_to_rest_and_rewinds():
    animator = Animator(SKELETON, 2)
    action = animator.action(ramp(offset=5.0)).play()
    animator.update(0.5)
    np.testing.assert_allclose(probe(animator), [5.5, 5.5])
    action.stop(characters=np.array([False, True]))
    animator.update(0.25)
    np.testing.assert_allclose(probe(animator), [5.75, 0.0])  # character 1: rest pose
    action.play(1)
    animator.update(0.25)
    np.testing.assert_allclose(probe(animator), [5.0, 5.25])


# --- fades and warps -------------------------------------------------------------------------------


def test_fade_in_and_out_follow_the_linear_curve():
    animator = Animator(SKELETON)
    action = animator.action(constant("one", 1.0)).fade_in(1.0)
    weights, poses = [], []
    for _ in range(5):
        animator.update(0.25)
        weights.append(float(action.effective_weight[0]))
        poses.append(float(probe(animator)[0]))
    assert weights == [0.25, 0.5, 0.75, 1.0, 1.0]
    assert poses == weights  # alone with rest_threshold 1: lerp(rest x = 0, clip x = 1, weight)
    action.fade_out(0.5)
    weights = []
    for _ in range(3):
        animator.update(0.125)
        weights.append(float(action.effective_weight[0]))
    assert weights == [0.75, 0.5, 0.25]
    animator.update(0.25)
    assert action.effective_weight.tolist() == [0.0]
    assert action.enabled.tolist() == [False]  # a finished fade-out stops the action


def test_crossfade_weights_and_pose_follow_the_fade_curve():
    animator = Animator(SKELETON, 2)
    a = animator.action(constant("a", 0.0)).play()
    b = animator.action(constant("b", 2.0))
    animator.update(0.1)
    a.crossfade_to(b, 0.4, characters=[1])
    expected = [0.25, 0.5, 0.75, 1.0, 1.0]
    for value in expected:
        animator.update(0.1)
        np.testing.assert_allclose(b.effective_weight, [0.0, value], atol=1e-12)
        np.testing.assert_allclose(a.effective_weight, [1.0, 1.0 - value], atol=1e-12)
        np.testing.assert_allclose(probe(animator), [0.0, 2.0 * value], atol=1e-12)
    assert a.enabled.tolist() == [True, False]


def test_interrupted_fade_continues_from_the_current_weight():
    animator = Animator(SKELETON)
    action = animator.action(constant("a", 1.0)).play()
    action.fade_out(1.0)
    animator.update(0.5)
    action.fade_in(1.0)
    animator.update(0.25)
    np.testing.assert_allclose(action.effective_weight, [0.625])  # 0.5 → 1 over 1 s, a quarter in


def test_set_weight_stops_fading():
    animator = Animator(SKELETON)
    action = animator.action(constant("a", 1.0)).fade_in(1.0)
    animator.update(0.25)
    action.set_weight(0.6)
    np.testing.assert_allclose(action.effective_weight, [0.6])
    animator.update(0.25)
    np.testing.assert_allclose(action.effective_weight, [0.6])


def test_crossfade_warp_matches_cycle_periods():
    animator = Animator(SKELETON)
    slow = animator.action(ramp("slow", 1.0)).play()
    fast = animator.action(ramp("fast", 0.5))
    slow.crossfade_to(fast, 1.0, warp=True)
    speeds = []
    for _ in range(5):
        animator.update(0.25)
        speeds.append((float(slow.speed[0]), float(fast.speed[0])))
    # slow: 1 → D_slow / D_fast = 2 (ends at fast's period); fast: D_fast / D_slow = 0.5 → 1
    assert speeds[:4] == [(1.25, 0.625), (1.5, 0.75), (1.75, 0.875), (2.0, 1.0)]
    assert slow.enabled.tolist() == [False]
    assert fast.speed.tolist() == [1.0]


# --- layers ------------------------------------------------------------------------------------------


def test_animator_equals_the_bare_functions(mannequin):
    skeleton, clips = mannequin.skeleton, mannequin.clips
    animator = Animator(skeleton, 3)
    upper = subtree_mask(skeleton, "spine")
    walk = animator.action(clips["walk"], mask=1.0 - upper).play()
    idle = animator.action(clips["idle"]).play().set_weight([0.2, 0.5, 1.0])
    wave = animator.action(clips["wave"], mask=upper).play().set_weight(0.7)
    lean = animator.action(clips["lean_look"], additive=True).play().set_weight([0.0, 0.5, 1.0])
    for _ in range(3):
        animator.update(0.3)
    times = [walk.time, idle.time, wave.time]
    layers = [
        sample(c, skeleton.rest_pose, t)
        for c, t in zip((clips["walk"], clips["idle"], clips["wave"]), times, strict=True)
    ]
    weights = np.stack([np.ones(3), [0.2, 0.5, 1.0], np.full(3, 0.7)])
    masks = np.stack([1.0 - upper, np.ones(skeleton.num_joints), upper])
    base = blend(skeleton.rest_pose, layers, weights, masks, threshold=1.0)
    delta = sample(additive_clip(clips["lean_look"], skeleton), Pose.identity(skeleton.num_joints), lean.time)
    expected = apply_additive(base, delta, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(animator.local_pose.translations, expected.translations, atol=1e-12)
    assert_quat_allclose(animator.local_pose.rotations, expected.rotations, atol=1e-12)
    np.testing.assert_allclose(animator.model, model_from_pose(skeleton, expected), atol=1e-12)
    np.testing.assert_allclose(animator.palette, skinning_palette(skeleton, animator.model), atol=1e-12)


def test_set_mask_at_runtime_limits_an_additive_layer(mannequin):
    skeleton, clips = mannequin.skeleton, mannequin.clips
    animator = Animator(skeleton, 1)
    animator.action(clips["walk"]).play()
    lean = animator.action(clips["lean_look"], additive=True).play()
    animator.update(1.0)
    full = animator.local_pose.copy()
    head = subtree_mask(skeleton, "neck")
    lean.set_mask(head)
    animator.update(0.0)
    changed = np.abs(np.sum(full.rotations[0] * animator.local_pose.rotations[0], -1)) < 1.0 - 1e-12
    assert changed.any()
    assert not changed[head > 0].any()  # the head keeps the full lean, the spine loses it
    lean.set_mask(None)
    animator.update(0.0)
    assert_quat_allclose(animator.local_pose.rotations, full.rotations, atol=1e-15)


@pytest.mark.assets
@pytest.mark.filterwarnings("ignore::engine.errors.OssaWarning")  # CesiumMan's weights do not sum to 1
def test_cesium_man_walk_plays_like_sampling_with_wrapped_time(shared_assets: Path):
    man = load_character(shared_assets / "khronos" / "cesium_man.gltf", textures=False)
    clip = next(iter(man.clips.values()))
    animator = Animator(man.skeleton, 2)
    animator.action(clip).play().set_speed([1.0, -0.5])
    for _ in range(7):
        animator.update(0.37)
    times = np.mod([7 * 0.37, -0.5 * 7 * 0.37], clip.duration)
    expected = sample(clip, man.skeleton.rest_pose, times)
    np.testing.assert_allclose(animator.local_pose.translations, expected.translations, atol=1e-9)
    assert_quat_allclose(animator.local_pose.rotations, expected.rotations, atol=1e-9)
    np.testing.assert_allclose(
        animator.palette, skinning_palette(man.skeleton, model_from_pose(man.skeleton, expected)), atol=1e-9
    )


@pytest.mark.assets
def test_fox_walk_to_run_warped_crossfade_and_blend_space(shared_assets: Path):
    fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", textures=False)
    animator = Animator(fox.skeleton, 2)
    survey, walk, run = (animator.action(fox.clips[n]) for n in ("Survey", "Walk", "Run"))
    walk.play()
    animator.update(0.2)
    walk.crossfade_to(run, 0.5, warp=True)
    for _ in range(5):
        animator.update(0.1)
    np.testing.assert_allclose(run.effective_weight, 1.0)
    np.testing.assert_allclose(walk.speed, walk.duration / run.duration)  # ends at Run's period
    expected = sample(fox.clips["Run"], fox.skeleton.rest_pose, run.time)
    assert_quat_allclose(animator.local_pose.rotations, expected.rotations, atol=1e-12)
    # blend space: Walk and Run phase-locked, Survey free
    space = animator.blend_space_1d([(0.0, survey), (1.0, walk), (3.0, run)], sync=[walk, run])
    space.set_parameter([0.5, 2.0])
    for dt in (0.05, 0.3, 0.011, 1.7):
        animator.update(dt)
        np.testing.assert_allclose(walk.time / walk.duration, run.time / run.duration, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(animator.local_pose.rotations, axis=-1), 1.0)


# --- events -----------------------------------------------------------------------------------------

MARKERS = {"start": (0.0,), "a": (0.25,), "b": (0.75,)}


@pytest.mark.parametrize(
    ("dt", "speed", "loop", "updates", "expected"),
    [
        (0.1, 1.0, Loop.REPEAT, 25, {"start": 3, "a": 3, "b": 2}),  # 0..2.5: start at 0 (fresh), 1, 2
        (2.6, 1.0, Loop.REPEAT, 1, {"start": 3, "a": 3, "b": 2}),  # the same in one large step
        (0.125, 2.0, Loop.REPEAT, 8, {"start": 3, "a": 2, "b": 2}),  # ends exactly on a loop boundary
        (0.1, -1.0, Loop.REPEAT, 25, {"start": 3, "a": 2, "b": 3}),  # 1 → -1.5 backwards
        (3.3, -1.0, Loop.REPEAT, 1, {"start": 4, "a": 3, "b": 4}),  # 1 → -2.3 in one step
        (0.3, 1.0, Loop.PING_PONG, 10, {"start": 2, "a": 3, "b": 3}),  # up, down, up: 0 → 3
        (2.5, 1.0, Loop.PING_PONG, 1, {"start": 2, "a": 3, "b": 2}),
        (0.3, 1.0, Loop.ONCE, 10, {"start": 1, "a": 1, "b": 1}),
        (5.0, -1.0, Loop.ONCE, 1, {"start": 1, "a": 1, "b": 1}),
        (0.25, 0.0, Loop.REPEAT, 4, {"start": 1, "a": 0, "b": 0}),  # not moving: only the fresh start
    ],
)
def test_events_fire_once_per_crossing(dt, speed, loop, updates, expected):
    animator = Animator(SKELETON, 2)
    action = animator.action(ramp(markers=MARKERS)).set_loop(loop).set_speed(speed).reset()
    action.stop(1)  # character 1 is not playing: never fires
    calls: dict[str, list[MarkerEvent]] = {name: [] for name in MARKERS}
    for name in MARKERS:
        action.on_marker(name, calls[name].append)
    for _ in range(updates):
        animator.update(dt)
    assert {name: len(events) for name, events in calls.items()} == expected
    for events in calls.values():
        for event in events:
            assert event.characters.tolist() == [0]
            assert event.action is action
            assert event.weights.tolist() == [1.0]


def test_events_per_character_in_one_update():
    animator = Animator(SKELETON, 3)
    action = animator.action(ramp(markers={"a": (0.5,)})).play()
    animator.update(0.1)
    events: list[MarkerEvent] = []
    action.on_marker("a", events.append)
    animator.update(np.array([0.2, 0.5, 2.5]))  # from 0.1: misses, crosses once, crosses 3 times
    assert [e.characters.tolist() for e in events] == [[1, 2], [2], [2]]
    assert events[0].time == 0.5


def test_zero_length_clip_holds_its_pose_and_fires_its_marker_once():
    clip = Clip("pose", (Channel(1, "translation", "STEP", [0.0], [[3.0, 0, 0]]),), 2, {"hit": (0.0,)})
    animator = Animator(SKELETON)
    action = animator.action(clip).play()
    events: list[MarkerEvent] = []
    action.on_marker("hit", events.append)
    for _ in range(3):
        animator.update(0.5)
    assert len(events) == 1
    np.testing.assert_allclose(probe(animator), [3.0])
    assert action.time.tolist() == [0.0]


def test_zero_weight_action_fires_no_events():
    animator = Animator(SKELETON)
    action = animator.action(ramp(markers={"a": (0.5,)})).play().set_weight(0.0)
    events: list[MarkerEvent] = []
    action.on_marker("a", events.append)
    animator.update(2.0)
    assert events == []


# --- root motion ----------------------------------------------------------------------------------------


def matrix(yaw: float, translation: np.ndarray) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_rotvec([0.0, yaw, 0.0]).as_matrix()
    m[:3, 3] = translation
    return m


def turning_clip(duration: float = 1.0) -> Clip:
    """Root moves from (0.3, 0, 0.1) to (0.5, 0.9, 1.2) while turning 0.1 → 0.7 rad: a curved walk."""
    turn = Rotation.from_rotvec([[0.0, 0.1, 0.0], [0.0, 0.7, 0.0]]).as_quat()
    channels = (
        Channel(0, "translation", "LINEAR", [0.0, duration], [[0.3, 0.0, 0.1], [0.5, 0.9, 1.2]]),
        Channel(0, "rotation", "LINEAR", [0.0, duration], turn),
    )
    return Clip("turn", channels, 2, {"step": (0.5,)})


def loop_matrix() -> np.ndarray:
    first = matrix(0.1, np.array([0.3, 0.0, 0.1]))
    last = matrix(0.7, np.array([0.5, 0.0, 1.2]))
    return np.linalg.inv(first) @ last


def accumulate(animator: Animator, steps: list[float]) -> list[np.ndarray]:
    """Apply every update's root motion to a game transform per character, as a game would."""
    transforms = [np.eye(4) for _ in range(animator.num_characters)]
    for dt in steps:
        animator.update(dt)
        motion = animator.root_motion
        transforms = [g @ matrix(motion.yaw[c], motion.translation[c]) for c, g in enumerate(transforms)]
    return transforms


@pytest.mark.parametrize(
    ("steps", "speed", "loops"),
    [([0.1] * 30, 1.0, 3), ([2.0, 0.5, 1.5], 1.0, 4), ([0.25] * 8, -1.0, -2), ([3.0], -1.0, -3)],
)
def test_root_motion_over_n_loops_is_n_times_one_loop(steps, speed, loops):
    animator = Animator(SKELETON, 1, root_motion="root")
    action = animator.action(turning_clip()).set_speed(speed).reset()
    (transform,) = accumulate(animator, steps)
    expected = np.linalg.matrix_power(loop_matrix() if loops > 0 else np.linalg.inv(loop_matrix()), abs(loops))
    np.testing.assert_allclose(transform, expected, atol=1e-9)
    root = animator.local_pose
    np.testing.assert_allclose(root.translations[0, 0, [0, 2]], 0.0, atol=1e-12)  # in place
    np.testing.assert_allclose(root.translations[0, 0, 1], 0.9 * action.time[0], atol=1e-12)  # height kept


def test_root_motion_mid_loop_and_ping_pong():
    animator = Animator(SKELETON, 2, root_motion=0)
    action = animator.action(turning_clip()).set_loop(Loop.PING_PONG).play()
    forward = accumulate(animator, [0.3, 0.3])  # clip time 0 → 0.6
    # at 0.6: translation lerp (0.42, 0.54, 0.76), yaw lerp 0.1 → 0.7 = 0.46 (one axis: slerp is linear in angle)
    first = matrix(0.1, np.array([0.3, 0.0, 0.1]))
    at = matrix(0.46, np.array([0.42, 0.0, 0.76]))
    np.testing.assert_allclose(forward[0], np.linalg.inv(first) @ at, atol=1e-9)
    np.testing.assert_allclose(animator.local_pose.translations[:, 0], [[0.0, 0.54, 0.0]] * 2, atol=1e-12)
    assert action.time.tolist() == pytest.approx([0.6, 0.6])
    back = accumulate(animator, [0.4, 1.0])  # up to the end, then all the way back to clip time 0
    assert action.time.tolist() == pytest.approx([0.0, 0.0])
    np.testing.assert_allclose(forward[0] @ back[0], np.eye(4), atol=1e-9)  # no net travel


def test_mannequin_walk_root_motion_is_straight_and_in_place(mannequin):
    animator = Animator(mannequin.skeleton, 2, root_motion="root")
    walk = animator.action(mannequin.clips["walk"]).play()
    transforms = accumulate(animator, [1 / 60] * 180)  # 3 s = 3 loops
    per_loop = mannequin.clips["walk"].channel(0, "translation").values[[0, -1]]
    distance = per_loop[1] - per_loop[0]
    np.testing.assert_allclose(transforms[0][:3, 3], 3 * distance, atol=1e-9)
    np.testing.assert_allclose(animator.local_pose.translations[:, 0, [0, 2]], 0.0, atol=1e-12)
    assert walk.time.tolist() == pytest.approx([0.0, 0.0], abs=1e-9)


def test_blended_root_motion_is_the_weighted_mean(mannequin):
    animator = Animator(mannequin.skeleton, 1, root_motion="root")
    walk = animator.action(mannequin.clips["walk"]).play().set_weight(0.25)
    run = animator.action(mannequin.clips["run"]).play().set_weight(0.75)
    animator.update(0.1)
    np.testing.assert_allclose(walk.time, run.time)
    speed_walk, speed_run = 1.2, 3.0  # metres per second, from the mannequin's docstring
    np.testing.assert_allclose(
        animator.root_motion.translation[0, 2], 0.1 * (0.25 * speed_walk + 0.75 * speed_run), rtol=1e-6
    )


# --- sync groups and blend spaces ---------------------------------------------------------------------------


def test_sync_group_keeps_phase_equal_and_interpolates_the_period(mannequin):
    animator = Animator(mannequin.skeleton, 3)
    walk = animator.action(mannequin.clips["walk"]).play()  # 1.0 s
    run = animator.action(mannequin.clips["run"]).play()  # 0.7 s
    group = animator.sync_group(walk, run)
    walk.set_weight([1.0, 0.5, 0.0])
    run.set_weight([0.0, 0.5, 1.0])
    rng = np.random.default_rng(3)
    for dt in rng.uniform(0.0, 0.4, 20):
        before = group.phase.copy()
        animator.update(dt)
        np.testing.assert_allclose(walk.time / 1.0, run.time / 0.7, atol=1e-12)
        rates = np.array([1.0, 0.5 / 1.0 + 0.5 / 0.7, 1 / 0.7])
        np.testing.assert_allclose((group.phase - before) % 1.0, (dt * rates) % 1.0, atol=1e-12)
    frame = [0]
    steps: dict[str, list[int]] = {"walk": [], "run": []}
    walk.on_marker("right_foot_down", lambda e: steps["walk"].append(frame[0]) if 1 in e.characters else None)
    run.on_marker("right_foot_down", lambda e: steps["run"].append(frame[0]) if 1 in e.characters else None)
    for frame[0] in range(40):
        animator.update(1 / 30)
    assert len(steps["walk"]) >= 2
    assert steps["walk"] == steps["run"]  # character 1's feet land in the same frames in both clips


def test_synced_root_motion_follows_the_group_phase(mannequin):
    animator = Animator(mannequin.skeleton, 2, root_motion="root")
    walk = animator.action(mannequin.clips["walk"]).play().set_weight([0.5, 1.0])  # 1.2 m per 1.0 s cycle
    run = animator.action(mannequin.clips["run"]).play().set_weight([0.5, 0.0])  # 2.1 m per 0.7 s cycle
    animator.sync_group(walk, run)
    for dt in (0.1, 0.45, 1.3):  # the last step wraps both clips
        animator.update(dt)
        phase_step = dt * np.array([0.5 / 1.0 + 0.5 / 0.7, 1.0])
        expected = phase_step * np.array([0.5 * 1.2 + 0.5 * 2.1, 1.2])
        np.testing.assert_allclose(animator.root_motion.translation[:, 2], expected, rtol=1e-9)


def test_blend_space_weights_and_sync(mannequin):
    animator = Animator(mannequin.skeleton, 5)
    idle, walk, run = (animator.action(mannequin.clips[n]) for n in ("idle", "walk", "run"))
    space = animator.blend_space_1d([(0.0, idle), (1.2, walk), (3.0, run)], sync=[walk, run])
    space.set_parameter([-1.0, 0.3, 1.2, 2.4, 9.0])
    expected = np.array([[1, 0.75, 0, 0, 0], [0, 0.25, 1, 1 / 3, 0], [0, 0, 0, 2 / 3, 1]])
    np.testing.assert_allclose(space.weights, expected)
    np.testing.assert_allclose(np.stack([idle.weight, walk.weight, run.weight]), expected)
    for _ in range(10):
        animator.update(0.07)
        np.testing.assert_allclose(walk.time / walk.duration, run.time / run.duration, atol=1e-12)
    assert space.sync is not None
    assert idle.time[0] == pytest.approx(0.7)
    space.set_parameter(2.4, characters=[0, 1], weight=[0.5, 0.0])  # fading the whole space
    np.testing.assert_allclose(space.weights[:, :2], [[0, 0], [1 / 6, 0], [1 / 3, 0]])
    np.testing.assert_allclose(walk.effective_weight, [1 / 6, 0, 1, 1 / 3, 0])


# --- bad input ------------------------------------------------------------------------------------------------


def test_bad_input_raises(mannequin):
    animator = Animator(SKELETON, 2)
    action = animator.action(ramp(markers={"m": (0.5,)}))
    with pytest.raises(SkeletonMismatchError, match="clip 'walk' targets 25 joints but the animator's skeleton has 2"):
        animator.action(mannequin.clips["walk"])
    with pytest.raises(SkeletonMismatchError, match=r"mask must have shape \(2,\) for this skeleton, got \(3,\)"):
        animator.action(ramp("other"), mask=np.ones(3))
    with pytest.raises(InvalidInputError, match="mask must be non-negative"):
        animator.action(ramp("other"), mask=[1.0, -1.0])
    with pytest.raises(SkeletonMismatchError, match="no joint named 'pelvis'"):
        Animator(SKELETON, root_motion="pelvis")
    with pytest.raises(SkeletonMismatchError, match="joint index 7 is out of range for 2 joints"):
        Animator(SKELETON, root_motion=7)
    with pytest.raises(InvalidInputError, match="num_characters must be at least 1, got 0"):
        Animator(SKELETON, 0)
    with pytest.raises(InvalidInputError, match="dt must be >= 0 seconds"):
        animator.update(-0.1)
    with pytest.raises(InvalidInputError, match="dt must be finite, got nan"):
        animator.update(np.nan)
    with pytest.raises(InvalidInputError, match="characters must index 2 characters"):
        action.play(characters=5)
    with pytest.raises(InvalidInputError, match=r"clip 'ramp' has no marker 'x'; it has \['m'\]"):
        action.on_marker("x", print)
    with pytest.raises(InvalidInputError, match="weight must be non-negative, got -1"):
        action.set_weight(-1.0)
    with pytest.raises(InvalidInputError, match="duration must be a finite number of seconds >= 0, got -1"):
        action.fade_in(-1.0)
    with pytest.raises(InvalidInputError, match="a sync group needs at least 2 actions, got 1"):
        animator.sync_group(action)
    other = Animator(SKELETON).action(ramp("elsewhere"))
    with pytest.raises(InvalidInputError, match="belongs to another animator"):
        animator.sync_group(action, other)
    with pytest.raises(InvalidInputError, match="crossfade_to needs an action of the same animator"):
        action.crossfade_to(other, 0.1)
    with pytest.raises(InvalidInputError, match=r"positions must be strictly increasing, got \[1\.0, 1\.0\]"):
        animator.blend_space_1d([(1.0, action), (1.0, animator.action(ramp("b")))])
    with pytest.raises(InvalidInputError, match=r"marker 'late' of clip 'ramp' has times \(2\.0,\) outside"):
        animator.action(ramp(markers={"late": (2.0,)}))
    second = animator.action(ramp("c"))
    animator.sync_group(action, second)
    with pytest.raises(InvalidInputError, match=r"is in a sync group, which needs Loop\.REPEAT, got ONCE"):
        action.set_loop(Loop.ONCE)
    assert isinstance(action, Action)


def straight_clip(duration: float = 1.0, speed: float = 0.46) -> Clip:
    """The root walks along +Z at ``speed`` m/s (LINEAR, so its travel is speed × clip time)."""
    channel = Channel(0, "translation", "LINEAR", [0.0, duration], [[0.0, 0.0, 0.0], [0.0, 0.0, speed * duration]])
    return Clip("straight", (channel,), 2)


@pytest.mark.parametrize("loop", list(Loop))
@pytest.mark.parametrize("direction", [1.0, -1.0])
@pytest.mark.parametrize("duration", [1.0, 0.75, 2.0])
def test_root_motion_of_a_step_ending_an_ulp_around_a_loop_boundary(loop, direction, duration):
    """A step that lands one ulp before, on, or after the start or end of the clip travels ``speed · dt``.

    Backwards playback landing an ulp below 0 used to wrap with a whole extra loop of root
    motion (0.46 m at this clip's speed). Reference: the root moves at a constant 0.46 m/s along
    +Z, so a step that moves the clip time by ``Δ`` (unwrapped; for ping-pong and once: the
    net clip-time change) travels exactly ``0.46 · Δ``.
    """
    speed = 0.46
    for boundary in (0.0, duration):
        for start in (0.25, 0.5 * duration, np.nextafter(duration, 0.0)):
            distance = (boundary - start) * direction
            if distance <= 0.0:
                continue
            for dt in (np.nextafter(distance, 0.0), distance, np.nextafter(distance, np.inf)):
                animator = Animator(SKELETON, 1, root_motion="root")
                action = animator.action(straight_clip(duration, speed)).set_loop(loop).play()
                action.set_speed(direction).set_time(start)
                before = float(action.time[0])
                animator.update(dt)
                after = float(action.time[0])
                travel = animator.root_motion.translation[0]
                expected = speed * direction * dt if loop == Loop.REPEAT else speed * (after - before)
                assert travel[2] == pytest.approx(expected, abs=1e-9), (boundary, start, dt, before, after)
                assert 0.0 <= after <= duration


def test_mannequin_walk_backwards_an_ulp_past_the_start_moves_an_ulp(mannequin):
    """The walk played backwards: a step from 0.25 s to one ulp below 0 travels 0.25 s of walk, not a loop more."""
    animator = Animator(mannequin.skeleton, 1, root_motion="root")
    walk = animator.action(mannequin.clips["walk"]).play().set_speed(-1.0).set_time(0.25)
    animator.update(np.nextafter(0.25, 1.0))  # raw time 0.25 - dt = -ulp(0.25)
    assert walk.time[0] == pytest.approx(0.0, abs=1e-12) or walk.time[0] == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(animator.root_motion.translation[0], [0.0, 0.0, -1.2 * 0.25], atol=1e-9)


def _warped_crossfade_run(steps: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 1 s clip crossfading with warp into a 0.5 s clip over 0.7 s, stepped by ``steps``.

    Returns both clip times and the probe joint's pose (the two clips' x translations blended)
    after every step.
    """
    animator = Animator(SKELETON)
    slow = animator.action(ramp("slow", 1.0)).play()
    fast = animator.action(ramp("fast", 0.5, offset=10.0))
    slow.crossfade_to(fast, 0.7, warp=True)
    times, poses = [], []
    for dt in steps:
        animator.update(dt)
        times.append((float(slow.time[0]), float(fast.time[0])))
        poses.append(float(probe(animator)[0]))
    return np.array(times), np.array(poses), animator.clock.copy()


def _warped_times(clock: float) -> tuple[float, float]:
    """Closed form: speeds ramp linearly over 0.7 s (slow 1 → 2, fast 0.5 → 1), then hold."""
    ramp_end = min(clock, 0.7)
    slow = ramp_end + 0.5 * ramp_end**2 / 0.7  # ∫ 1 + τ/0.7 dτ; the slow clip stops with its fade
    fast = 0.5 * ramp_end + 0.25 * ramp_end**2 / 0.7 + max(clock - 0.7, 0.0)
    return slow % 1.0, fast % 0.5


@pytest.mark.parametrize("fps", [30, 60, 144, "random"])
def test_warped_crossfade_integrates_the_speed_ramp_exactly(fps):
    """Clip times under a warp are the integral of the linear speed ramp, whatever the frame rate.

    They used to advance by the end-of-step speed × dt, so 30 and 144 FPS drifted apart.
    """
    total = 1.5
    if fps == "random":
        rng = np.random.default_rng(3)
        cuts = np.sort(rng.uniform(0.0, total, 70))
        steps = np.diff(np.concatenate(([0.0], cuts, [total]))).tolist()
    else:
        steps = [1.0 / fps] * round(total * fps)
    times, poses, clock = _warped_crossfade_run(steps)
    ends = np.cumsum(steps)
    expected = np.array([_warped_times(t) for t in ends])
    fading = ends < 0.7 - 1e-12
    np.testing.assert_allclose(times[fading], expected[fading], atol=1e-9)  # both clips while both play
    np.testing.assert_allclose(times[:, 1], expected[:, 1], atol=1e-9)
    weight = np.clip(ends / 0.7, 0.0, 1.0)
    np.testing.assert_allclose(poses, (1.0 - weight) * expected[:, 0] + weight * (10.0 + expected[:, 1]), atol=1e-9)
    assert clock[0] == pytest.approx(total)


# --- the staged frame: advance → post-blend stages → finalize ----------------------------------------


def test_staged_frame_equals_update_and_recomposes_only_what_a_stage_edits(mannequin):
    """A stage's in-place IK corrections end up in model and palette exactly as a full recomposition has them."""
    skeleton, clips = mannequin.skeleton, mannequin.clips
    staged, whole = Animator(skeleton, 3), Animator(skeleton, 3)
    for animator in (staged, whole):
        animator.action(clips["walk"]).play().set_speed([1.0, 0.5, -1.0])
    neck = skeleton.index("neck")
    turn = np.tile(Rotation.from_rotvec([0.0, 0.4, 0.0]).as_quat(), (3, 1, 1))
    seen: list[np.ndarray] = []

    def look_aside(animator: Animator) -> None:  # a post-blend stage: reads the model, corrects the neck
        seen.append(animator.model_buffer.gather(neck).copy())
        animator.apply_corrections([neck], turn)

    whole.stages.append(lambda animator: seen.append(animator.update_model().gather(neck).copy()))
    whole.stages.append(look_aside)
    for _ in range(4):
        staged.advance(0.1)
        model_before = staged.update_model().to_array()
        staged.apply_corrections([neck], turn)
        np.testing.assert_array_equal(staged.model_buffer.to_array(), model_before)  # nothing recomposed yet
        staged.finalize()
        whole.update(0.1)
        local = staged.local_pose
        np.testing.assert_array_equal(local.rotations, whole.local_pose.rotations)
        expected = model_from_pose(skeleton, local)  # a fresh full composition of the corrected pose
        np.testing.assert_allclose(staged.model, expected, atol=1e-12)
        np.testing.assert_allclose(staged.palette, skinning_palette(skeleton, expected), atol=1e-12)
        np.testing.assert_allclose(whole.model, expected, atol=1e-12)
    assert len(seen) == 8  # the stages ran in order, once per update


def test_pose_changed_recomputes_the_subtree_and_model_reads_are_current(mannequin):
    skeleton = mannequin.skeleton
    animator = Animator(skeleton, 2)
    animator.action(mannequin.clips["idle"]).play()
    animator.advance(0.3)
    np.testing.assert_allclose(animator.model, model_from_pose(skeleton, animator.local_pose), atol=1e-12)  # lazily
    hips = skeleton.index("hips")
    animator.pose_buffer.translations[1, hips, :] -= 0.2  # lower the hips of both characters
    animator.pose_changed("hips")
    np.testing.assert_allclose(animator.model, model_from_pose(skeleton, animator.local_pose), atol=1e-12)
    np.testing.assert_allclose(
        animator.palette, skinning_palette(skeleton, model_from_pose(skeleton, animator.local_pose)), atol=1e-12
    )
    with pytest.raises(SkeletonMismatchError, match="no joint named 'pelvis'"):
        animator.pose_changed("pelvis")
