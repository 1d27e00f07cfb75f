"""The compiled start and application of inertialized and spring transitions against the numpy reference.

:meth:`engine.player.offsets.Offsets.start_compiled` computes the offsets of a source capture
from a target, their rates and their decays per animated column on the kernels
(:mod:`engine.backend._start_offset_kernels`); :func:`~engine.anim.inertialization.pose_offsets` and
:meth:`~engine.player.offsets.Offsets.store` are the reference. The decays are compared through
what they produce, the offsets and their rates over the transition: to 1e-12 for offsets of
ordinary size; where source and target agree, rounding at most. (An offset of
about 1e-9 rad is ill-conditioned in its direction — its axis comes from a difference of nearly
equal quaternions — and numpy's own results move by ~1e-9 with the product's summation order,
which its quaternion product switches with the batch size; such joints are left out here.)
:meth:`~engine.player.offsets.Offsets.offset_compiled` adds the stored decays' offsets and rates
to a capture (:meth:`~engine.player.transitions.TransitionStage.apply_captured`); the reference is
:meth:`~engine.player.offsets.Offsets.full` with :func:`~engine.anim.inertialization.offset_pose`
and :func:`~engine.anim.inertialization.offset_velocity`.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim.layout import PoseBuffer
from engine.anim.pose import Pose
from engine.anim.velocity import PoseVelocity
from engine.backend._offset_kernels import SERIES_HALF, half_turn
from engine.backend.stage import INERTIALIZE, SPRING, character_major
from engine.math._checks import trusted
from engine.math.quat import quat_normalize
from engine.player.transitions import Capture, TransitionStage

K, J, C = 30, 12, 50


def capture(rng: np.random.Generator) -> Capture:
    """Random poses and velocities of ``K`` characters."""
    with trusted():
        return Capture(
            Pose(
                rng.normal(size=(K, J, 3)),
                quat_normalize(rng.normal(size=(K, J, 4))),
                1 + 0.1 * rng.normal(size=(K, J, 3)),
            ),
            PoseVelocity(*(rng.normal(size=(K, J, 3)) for _ in range(3))),
            rng.normal(size=(K, 3)),
        )


def character_major_pose() -> tuple[tuple[np.ndarray, ...], PoseBuffer]:
    """The same random pose of ``C`` characters each time, laid out character-major (as the kernels take it)."""
    rng = np.random.default_rng(15)
    arrays = (rng.normal(size=(C, J, 3)), quat_normalize(rng.normal(size=(C, J, 4))), rng.normal(size=(C, J, 3)))
    return arrays, PoseBuffer(*(array.transpose(2, 1, 0) for array in arrays), (C,))


@pytest.mark.parametrize("kind", ["inertialize", "spring"])
def test_compiled_start_equals_the_numpy_reference(kind):
    rng = np.random.default_rng(11)
    source, target = capture(rng), capture(rng)
    source.pose.rotations[:, :2] = target.pose.rotations[:, :2]  # no offset here
    source.pose.translations[:, :2] = target.pose.translations[:, :2]
    source.velocity.angular[:, 1] = target.velocity.angular[:, 1] = 0.0  # and not moving either
    source.pose.rotations[:, 2] = -target.pose.rotations[:, 2]  # the same rotation
    members = rng.choice(C, K, replace=False)
    durations = rng.uniform(0.0, 0.5, K)
    durations[:3] = 0.0
    half_lives = rng.uniform(0.1, 0.4, K)
    stages = [TransitionStage(C, J, compiled=compiled) for compiled in (False, True)]
    for stage in stages:
        stage.animate({"translation": np.arange(0, J, 2), "rotation": np.arange(J), "scale": np.array([1, 5])})
        stage.begin(members, kind, durations, half_lives, source, target, np.zeros(K))
    code = INERTIALIZE if kind == "inertialize" else SPRING
    for elapsed in (0.0, 0.01, 0.05, 0.2, 0.45, 0.6, 3.0):
        (numpy_offsets, numpy_rates), (offsets, rates) = (
            stage._offsets.full(code, members, np.full(K, elapsed), J) for stage in stages
        )
        np.testing.assert_allclose(offsets, numpy_offsets, rtol=0, atol=1e-12)
        np.testing.assert_allclose(rates, numpy_rates, rtol=0, atol=1e-12)
        assert np.abs(offsets[:, 1, 1]).max() < 1e-15, "equal rotations, not moving: rounding at most"


def test_compiled_offsets_on_a_capture_equal_the_numpy_reference():
    """The stage on a capture (pose, velocity, root), from the same stored decays, mid-transition.

    One capture holds characters of every kind (the last rows: none), as a graph's start captures them.
    """
    rng = np.random.default_rng(12)
    source, target = capture(rng), capture(rng)
    members = rng.choice(C, K, replace=False)
    durations, half_lives = rng.uniform(0.05, 0.5, K), rng.uniform(0.1, 0.4, K)
    groups = np.array_split(np.arange(K - 3), 4)  # inertialize, spring, frozen, dead_blend; the last 3 rows none
    stages = [TransitionStage(C, J, compiled=compiled) for compiled in (False, True)]
    for stage in stages:
        stage.animate({"translation": np.arange(0, J, 3), "rotation": np.arange(1, J), "scale": np.array([2])})
        for kind, rows in zip(("inertialize", "spring", "frozen", "dead_blend"), groups, strict=True):
            picked = (source.take(rows), target.take(rows))
            stage.begin(members[rows], kind, durations[rows], half_lives[rows], *picked, np.zeros(rows.size))
    for code, packed in stages[0]._offsets.packed.items():
        stages[1]._offsets.packed[code][:] = packed  # the same decays: only the application differs
    for elapsed in (0.0, 0.02, 0.1, 0.3, 0.7, 5.0):
        captures = [capture(np.random.default_rng(13)) for _ in stages]
        for stage, captured in zip(stages, captures, strict=True):
            stage.apply_captured(captured, members, np.full(K, elapsed))
        numpy_capture, compiled_capture = captures
        for expected, got in zip(
            (*numpy_capture.pose.arrays(), numpy_capture.velocity.linear, numpy_capture.velocity.angular),
            (*compiled_capture.pose.arrays(), compiled_capture.velocity.linear, compiled_capture.velocity.angular),
            strict=True,
        ):
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            compiled_capture.velocity.scaling, numpy_capture.velocity.scaling, rtol=0, atol=1e-12
        )
        np.testing.assert_allclose(compiled_capture.root, numpy_capture.root, rtol=0, atol=1e-12)


def test_the_compiled_offsets_count_the_rows_a_blend_leaves():
    """``offset_compiled`` counts the rows in a frozen or dead-blend transition (numpy's then), not those in none."""
    rng = np.random.default_rng(14)
    source, target = capture(rng), capture(rng)
    members = rng.choice(C, K, replace=False)
    stage = TransitionStage(C, J, compiled=True)
    stage.animate({"translation": np.arange(0, J, 3), "rotation": np.arange(1, J), "scale": np.array([2])})
    for kind, rows in (("inertialize", np.arange(0, 10)), ("frozen", np.arange(10, 14)), ("dead_blend", [14])):
        picked = (source.take(rows), target.take(rows))
        stage.begin(members[rows], kind, np.full(len(rows), 0.3), np.full(len(rows), 0.2), *picked, np.zeros(len(rows)))
    transitions = (stage.start, stage.kind, stage.duration, stage.half_life, stage.root_offset)
    offsets = stage._offsets
    at = np.full(K, 0.1)
    assert offsets.offset_compiled(members, at, transitions, capture(rng)) == 5  # 15 rows to K - 1: none
    assert offsets.offset_compiled(members[:10], at[:10], transitions, capture(rng)) == 0
    assert offsets.offset_compiled(members[15:], at[15:], transitions, capture(rng)) == 0


def test_half_turn_is_libms_sine_and_cosine_to_rounding():
    """The series below SERIES_HALF (and libm's above) against numpy's sin(n)/n and cos(n)."""
    halves = np.concatenate(([0.0, 1e-300, 1e-9, 1e-4], np.linspace(0.0, 2.0, 4001), [np.nextafter(SERIES_HALF, 0.0)]))
    for n in halves:
        sinc, cosine = half_turn(n)
        assert abs(cosine - np.cos(n)) <= 2.3e-16
        assert abs(sinc - (np.sin(n) / n if n > 0.0 else 1.0)) <= 2.3e-16


@pytest.mark.parametrize("size", [0.05, 1.5])
def test_compiled_offsets_on_a_pose_equal_the_numpy_reference(size):
    """The stage on a character-major pose: small offsets (the series) and large ones (libm), both kinds."""
    rng = np.random.default_rng(14)
    source, target = capture(rng), capture(rng)
    source.pose.rotations[:] = quat_normalize(target.pose.rotations + size * rng.normal(size=(K, J, 4)))
    members = rng.choice(C, K, replace=False)
    durations, half_lives = rng.uniform(0.05, 0.5, K), rng.uniform(0.1, 0.4, K)
    stages = [TransitionStage(C, J, compiled=compiled) for compiled in (False, True)]
    for stage in stages:
        stage.animate({"translation": np.arange(0, J, 3), "rotation": np.arange(J), "scale": np.array([2])})
        for kind, half in (("inertialize", slice(0, K // 2)), ("spring", slice(K // 2, K))):
            picked = (members[half], kind, durations[half], half_lives[half], source.take(half), target.take(half))
            stage.begin(*picked, np.zeros(K // 2))
    for code, packed in stages[0]._offsets.packed.items():
        stages[1]._offsets.packed[code][:] = packed  # the same decays: only the application differs
    for elapsed in (0.0, 0.02, 0.1, 0.3, 0.7):
        poses = []
        for stage in stages:
            arrays, pose = character_major_pose()
            assert character_major(pose)
            stage.apply(pose, np.full(C, elapsed), members)
            poses.append(arrays)
        for mine, theirs in zip(*poses, strict=True):
            np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("threads", [2, 3])
def test_the_offsets_on_threads_are_one_threads(threads):
    """apply_offsets over blocks of characters in parallel: the serial numbers, bit for bit."""
    rng = np.random.default_rng(21)
    source, target = capture(rng), capture(rng)
    members = rng.choice(C, K, replace=False)
    stage = TransitionStage(C, J, compiled=True)
    stage.animate({"translation": np.arange(0, J, 3), "rotation": np.arange(J), "scale": np.array([2])})
    for kind, half in (("inertialize", slice(0, K // 2)), ("spring", slice(K // 2, K))):
        stage.begin(members[half], kind, 0.3, 0.2, source.take(half), target.take(half), np.zeros(K // 2))
    poses = []
    for count in (1, threads):
        arrays, pose = character_major_pose()
        stage.apply(pose, np.full(C, 0.1), members, count)
        poses.append(arrays)
    for mine, theirs in zip(*poses, strict=True):
        assert np.array_equal(mine, theirs)


@pytest.mark.parametrize("compiled", [False, True])
def test_decays_keep_their_columns_when_more_joints_are_animated(compiled):
    """A layer added mid-transition animates more joints: the stored decays move with their columns, new ones are 0."""
    rng = np.random.default_rng(22)
    source, target = capture(rng), capture(rng)
    members = rng.choice(C, K, replace=False)
    stage = TransitionStage(C, J, compiled=compiled)
    stage.animate({"translation": np.array([0, 4]), "rotation": np.arange(0, J, 2), "scale": np.zeros(0, int)})
    stage.begin(members, "inertialize", 0.4, 0.2, source, target, np.zeros(K))
    before = stage._offsets.full(INERTIALIZE, members, np.full(K, 0.1), J)
    stage.animate({"translation": np.array([0, 1, 4]), "rotation": np.arange(J), "scale": np.array([3])})
    after = stage._offsets.full(INERTIALIZE, members, np.full(K, 0.1), J)
    for old, new in zip(before, after, strict=True):
        assert np.array_equal(new, old)  # the old columns' offsets and rates, and zeros where nothing was stored
    assert np.abs(before[0][:, 2, 1]).max() > 1e-3  # a stored rotation offset: the test sees decays move
