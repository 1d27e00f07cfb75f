"""The Animator on the fused kernels (backend="numba") equals the Animator on the numpy jobs.

One scenario per rig, played frame by frame on both paths and compared after every frame to
1e-12 (float64): crossfades (one warped), a sync group, a masked layer, an additive layer, IK
corrections between advance and finalize (two_bone_ik on the legs through apply_corrections),
action times put one float ulp either side of the clip ends (np.nextafter) and on them, at
30/60/144 FPS and at random per-character dt; with and without root motion (the kernels blend
every joint, then numpy makes the root joint again, in place per layer, and the travel, as the
numpy path does). The numpy path is the reference the rest of the suite already checks against
the bare engine.anim functions (tests/test_animator.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.anim import Channel, Clip, Skeleton
from engine.anim.blending import subtree_mask
from engine.anim.ik import two_bone_ik
from engine.animator import Animator, Loop
from engine.backend import buffers, select
from engine.errors import InvalidInputError
from engine.io import load_character
from engine.procedural.mannequin import build_mannequin

FPS_STEPS = {"30fps": 1 / 30, "60fps": 1 / 60, "144fps": 1 / 144, "random-dt": None}
FRAMES = 40


def edge_times(duration: float, count: int) -> np.ndarray:
    """Times on and one ulp either side of the clip's ends (0 and ``duration``), then spread over the clip."""
    special = np.array(
        [0.0, np.nextafter(0.0, 1.0), np.nextafter(duration, -np.inf), duration, np.nextafter(duration, np.inf)]
    )
    spread = np.linspace(0.0, duration, count)
    spread[: min(count, special.size)] = special[: min(count, special.size)]
    return spread


class Rig:
    """A skeleton, four clips (two locomotion cycles, an upper-body one, an additive one) and a leg chain."""

    def __init__(self, skeleton: Skeleton, clips: dict[str, Clip], upper: str, leg: tuple[str, str, str]) -> None:
        self.skeleton, self.clips, self.upper, self.leg = skeleton, clips, upper, leg


def mannequin_rig() -> Rig:
    m = build_mannequin()
    clips = {"walk": m.clips["walk"], "run": m.clips["run"], "upper": m.clips["wave"], "add": m.clips["lean_look"]}
    return Rig(m.skeleton, clips, "spine", ("upper_leg_l", "lower_leg_l", "foot_l"))


def fox_rig(shared_assets: Path) -> Rig:
    fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", textures=False)
    survey = fox.clips["Survey"]
    clips = {"walk": fox.clips["Walk"], "run": fox.clips["Run"], "upper": survey, "add": survey}
    return Rig(fox.skeleton, clips, "b_Neck_04", ("b_LeftLeg01_015", "b_LeftLeg02_016", "b_LeftFoot01_017"))


def leg_ik(rig: Rig) -> Callable[[Animator], None]:
    """A post-blend stage: pull the foot 4 cm up and forward with two_bone_ik, applied in place."""
    start, mid, end = rig.leg
    foot = rig.skeleton.index(end)

    def stage(animator: Animator) -> None:
        model = animator.update_model()
        target = model.gather(foot)[:, :3, 3] + [0.0, 0.04, 0.04]
        animator.apply_corrections(two_bone_ik(rig.skeleton, model, start, mid, end, target, pole=[0.0, 0.0, 1.0]))

    return stage


def play(rig: Rig, backend: str, count: int, step: float | None, *, root_motion: Any = None) -> list[dict[str, Any]]:
    """The scenario on ``backend``: every frame's pose, matrices, palette, root motion and times."""
    skeleton, clips = rig.skeleton, rig.clips
    animator = Animator(skeleton, count, backend=backend, root_motion=root_motion)
    assert animator.backend == backend
    upper = subtree_mask(skeleton, rig.upper)
    walk = animator.action(clips["walk"]).play()
    run = animator.action(clips["run"]).play().set_weight(0.0)
    animator.sync_group(walk, run)
    wave = animator.action(clips["upper"], mask=upper).play().set_weight(np.linspace(0.0, 0.9, count))
    lean = animator.action(clips["add"], additive=True).play().set_weight(np.linspace(1.0, 0.2, count))
    lean.set_loop(Loop.PING_PONG)
    animator.stages.append(leg_ik(rig))
    walk.set_time(edge_times(walk.duration, count))
    wave.set_time(edge_times(wave.duration, count)[::-1].copy())
    rng = np.random.default_rng(count)
    frames = []
    for frame in range(FRAMES):
        if frame == 4:
            walk.crossfade_to(run, 0.2, warp=True, characters=slice(0, None, 2))
        if frame == 12:
            run.crossfade_to(walk, 0.15, characters=slice(0, None, 2))
            wave.set_time(edge_times(wave.duration, count))  # back on the ends, mid-play
        if frame == 20:
            lean.set_mask(upper)
        if frame == 30:
            wave.crossfade_to(walk, 0.1)  # the masked layer fades out for good
        dt = rng.uniform(0.0, 0.05, count) if step is None else step
        animator.update(dt)
        frames.append(
            {
                "rotations": animator.local_pose.rotations,
                "translations": animator.local_pose.translations,
                "scales": animator.local_pose.scales,
                "model": animator.model,
                "palette": animator.palette,
                "root_translation": animator.root_motion.translation,
                "root_yaw": animator.root_motion.yaw,
                "times": np.stack([walk.time, run.time, wave.time, lean.time]),
            }
        )
    return frames


def assert_same(fused: list[dict[str, Any]], reference: list[dict[str, Any]]) -> None:
    for frame, (mine, theirs) in enumerate(zip(fused, reference, strict=True)):
        for key, value in theirs.items():
            np.testing.assert_allclose(mine[key], value, rtol=0.0, atol=1e-12, err_msg=f"frame {frame}: {key}")


@pytest.fixture(scope="module")
def mannequin() -> Rig:
    return mannequin_rig()


@pytest.fixture(scope="module")
def fox(shared_assets: Path) -> Rig:
    return fox_rig(shared_assets)


@pytest.mark.parametrize("step", FPS_STEPS.values(), ids=FPS_STEPS.keys())
@pytest.mark.parametrize("count", [1, 70])
def test_mannequin_fused_equals_numpy(mannequin: Rig, step: float | None, count: int) -> None:
    assert_same(play(mannequin, "numba", count, step), play(mannequin, "numpy", count, step))


@pytest.mark.assets
@pytest.mark.parametrize("step", FPS_STEPS.values(), ids=FPS_STEPS.keys())
@pytest.mark.parametrize("root", [None, "b_Root_00"], ids=["in-place", "root-motion"])
def test_fox_fused_equals_numpy(fox: Rig, step: float | None, root: str | None) -> None:
    assert_same(play(fox, "numba", 9, step, root_motion=root), play(fox, "numpy", 9, step, root_motion=root))


def test_the_fused_path_runs_the_kernels(mannequin: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"sample_blend": 0, "finalize": 0}
    for name in calls:
        original = getattr(buffers.BufferFrame, name)

        def counted(self: Any, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(buffers.BufferFrame, name, counted)
    play(mannequin, "numba", 3, 1 / 60)
    assert calls["sample_blend"] == FRAMES
    assert calls["finalize"] == FRAMES  # the IK stage's model; the corrected leg and the palette: numpy
    calls.update(sample_blend=0, finalize=0)
    play(mannequin, "numpy", 3, 1 / 60)
    assert calls == {"sample_blend": 0, "finalize": 0}


@pytest.mark.parametrize("step", [1 / 60, None], ids=["60fps", "random-dt"])
@pytest.mark.parametrize("count", [1, 70])
def test_root_motion_on_the_fused_path(mannequin: Rig, step: float | None, count: int) -> None:
    """The kernels blend every joint, numpy makes the root again in place: the numpy path's pose and travel."""
    reference = play(mannequin, "numpy", count, step, root_motion="root")
    fused = play(mannequin, "numba", count, step, root_motion="root")
    assert np.abs(reference[-1]["root_translation"]).max() > 1e-3  # the characters did travel
    assert_same(fused, reference)


def test_root_motion_of_a_masked_root(mannequin: Rig) -> None:
    """A layer whose mask weighs the root less: its share of the root and of the travel, on both paths."""
    results = []
    for backend in ("numba", "numpy"):
        animator = Animator(mannequin.skeleton, 5, backend=backend, root_motion="root")
        mask = np.ones(mannequin.skeleton.num_joints)
        mask[0] = 0.3
        animator.action(mannequin.clips["walk"]).play()
        animator.action(mannequin.clips["run"], mask=mask).play().set_weight(0.6)
        for _ in range(10):
            animator.update(1 / 30)
        results.append((animator.local_pose.translations, animator.palette, animator.root_motion.translation))
    for fused, numpy in zip(*results, strict=True):
        np.testing.assert_allclose(fused, numpy, rtol=0.0, atol=1e-12)


def test_backend_rule(mannequin: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    skeleton, many = mannequin.skeleton, 1000
    monkeypatch.setitem(select._state, "name", "numba")
    monkeypatch.setitem(select._state, "forced", False)
    assert Animator(skeleton, 1).backend == "numba"  # numba installed: fused from one character up
    assert Animator(skeleton, many).backend == "numba"
    monkeypatch.setitem(select._state, "name", "numpy")  # OSSA_BACKEND=numpy: today's path
    assert Animator(skeleton, many).backend == "numpy"
    assert Animator(skeleton, many, backend="numba").backend == "numba"
    with pytest.raises(InvalidInputError, match="backend must be one of"):
        Animator(skeleton, 1, backend="cuda")


def test_no_blended_action_and_additive_only(mannequin: Rig) -> None:
    """No weighted layer: the rest pose plus the additive layer, on both paths."""
    results = []
    for backend in ("numba", "numpy"):
        animator = Animator(mannequin.skeleton, 20, backend=backend)
        animator.action(mannequin.clips["add"], additive=True).play()
        animator.action(mannequin.clips["walk"])  # made, never played
        animator.update(0.4)
        results.append((animator.local_pose.rotations, animator.palette))
    for fused, numpy in zip(*results, strict=True):
        np.testing.assert_allclose(fused, numpy, rtol=0.0, atol=1e-12)


def test_clips_with_morph_weight_channels(mannequin: Rig) -> None:
    """A clip that also animates morph weights (a scene's clip) plays its pose on both paths alike."""
    walk = mannequin.clips["walk"]
    times = np.linspace(0.0, walk.duration, 5)
    morph = Channel(6, "weights", "LINEAR", times, np.random.default_rng(1).uniform(0.0, 1.0, (5, 2)))
    clip = Clip("walk_and_blink", [*walk.channels, morph], walk.num_targets)
    results = []
    for backend in ("numba", "numpy"):
        animator = Animator(mannequin.skeleton, 4, backend=backend)
        animator.action(clip).play()
        animator.update(np.array([0.1, 0.35, 0.6, 0.95]))
        results.append((animator.local_pose.rotations, animator.palette))
    for fused, numpy in zip(*results, strict=True):
        np.testing.assert_allclose(fused, numpy, rtol=0.0, atol=1e-12)


def test_one_thread_unless_ossa_threads_says(mannequin: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSSA_THREADS", raising=False)
    animator = Animator(mannequin.skeleton, 100, backend="numba")
    animator.action(mannequin.clips["walk"]).play()
    animator.update(0.1)
    assert animator.player.threads == 1
    monkeypatch.setenv("OSSA_THREADS", "2")
    animator.action(mannequin.clips["run"])  # a new action: the kernels' state is made again
    animator.update(0.1)
    assert animator.player.threads == 2


def test_actions_added_and_masks_changed_mid_play(mannequin: Rig) -> None:
    """The kernels' state follows new actions and runtime masks (made again / updated in place)."""
    results = []
    upper = subtree_mask(mannequin.skeleton, "spine")
    for backend in ("numba", "numpy"):
        animator = Animator(mannequin.skeleton, 20, backend=backend)
        walk = animator.action(mannequin.clips["walk"]).play()
        frames = []
        for frame in range(12):
            if frame == 3:
                animator.action(mannequin.clips["upper"], mask=upper).play().set_weight(0.8)
            if frame == 6:
                walk.set_mask(1.0 - 0.5 * upper)
            if frame == 9:
                animator.action(mannequin.clips["add"], additive=True).play()
            animator.update(1 / 60)
            frames.append(animator.palette)
        results.append(frames)
    for fused, numpy in zip(*results, strict=True):
        np.testing.assert_allclose(fused, numpy, rtol=0.0, atol=1e-12)


@pytest.mark.parametrize("threshold", [0.1, 1.0, 3.0])
def test_rest_threshold(mannequin: Rig, threshold: float) -> None:
    """Small total weights let the rest pose fill in below ``rest_threshold``, alike on both paths."""
    results = []
    for backend in ("numba", "numpy"):
        animator = Animator(mannequin.skeleton, 6, backend=backend, rest_threshold=threshold)
        animator.action(mannequin.clips["walk"]).play().set_weight(np.linspace(0.0, 0.5, 6))
        animator.action(mannequin.clips["run"]).play().set_weight(np.linspace(0.5, 2.0, 6))
        animator.update(0.37)
        results.append((animator.local_pose.rotations, animator.local_pose.translations, animator.palette))
    for fused, numpy in zip(*results, strict=True):
        np.testing.assert_allclose(fused, numpy, rtol=0.0, atol=1e-12)


def test_an_update_into_records_alone(mannequin: Rig) -> None:
    """Animator.update(dt, records=..., model=False): the records are the palette, the model comes when asked."""
    animators = [Animator(mannequin.skeleton, 6, backend="numba") for _ in range(2)]
    for animator in animators:
        animator.action(mannequin.clips["walk"]).play().set_weight(0.7)
        animator.action(mannequin.clips["run"]).play().set_weight(0.3)
    records = np.zeros((6, mannequin.skeleton.num_joints, 4, 4))
    for _ in range(5):
        animators[0].update(1 / 60, records=records, model=False)
        animators[1].update(1 / 60)
        assert np.array_equal(np.swapaxes(records, -1, -2), animators[1].player.palette)
    assert np.array_equal(animators[0].model, animators[1].model)
