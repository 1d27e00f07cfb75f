"""CCD and FABRIK: convergence, rigid bones, rest-relative swing/twist limits, edge cases, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton, local_to_model
from engine.anim.ik import ccd_ik, fabrik_ik
from engine.errors import InvalidInputError, SkeletonMismatchError
from tests.anim.ik_reference import bone_lengths, chain_skeleton, perturbed_pose, positions
from tests.helpers import assert_quat_allclose

SOLVERS = pytest.mark.parametrize("solve", [ccd_ik, fabrik_ik], ids=["ccd", "fabrik"])


def reachable_problem(seed: int, links: int, characters: int, spread: float = 1.0):
    """A random chain, a random pose of it, and targets that another random pose reaches."""
    rng = np.random.default_rng(seed)
    skeleton = chain_skeleton(rng, links)
    pose = perturbed_pose(skeleton, rng, characters, spread)
    goal = perturbed_pose(skeleton, rng, characters, float(rng.uniform(0.2, 3.0)))
    target = positions(skeleton, goal)[:, -1]
    return skeleton, pose, target


def swing_and_twist(deviation: Rotation, axis: np.ndarray):
    """Swing angle (how far ``axis`` moves) and signed twist about ``axis``, computed independently."""
    moved = deviation.apply(axis)
    swing_angle = np.arctan2(np.linalg.norm(np.cross(axis, moved), axis=-1), np.sum(axis * moved, axis=-1))
    cross = np.cross(axis, moved)
    sine = np.linalg.norm(cross, axis=-1, keepdims=True)
    swing_axis = np.where(sine > 1e-12, cross / np.where(sine > 1e-12, sine, 1.0), [1.0, 0.0, 0.0])
    swing = Rotation.from_rotvec(swing_axis * swing_angle[:, None])
    twist = (swing.inv() * deviation).as_rotvec()
    return swing_angle, np.sum(twist * axis, axis=-1)


@SOLVERS
@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), links=st.integers(1, 7))
def test_hypothesis_converges_on_reachable_targets_with_rigid_bones(solve, seed, links):
    skeleton, pose, target = reachable_problem(seed, links, characters=2)
    model = local_to_model(skeleton, pose.matrices())
    result = solve(skeleton, model, list(range(links + 1)), target, max_iterations=1000, tolerance=1e-4)
    assert result.reached.all()
    solved = positions(skeleton, result.apply(pose))
    assert np.all(np.linalg.norm(solved[:, -1] - target, axis=-1) <= 1e-4)
    np.testing.assert_allclose(
        bone_lengths(skeleton, solved), bone_lengths(skeleton, positions(skeleton, pose)), rtol=1e-9
    )
    np.testing.assert_allclose(np.linalg.norm(result.corrections, axis=-1), 1.0, atol=1e-12)


@SOLVERS
@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    links=st.integers(1, 6),
    swing=st.floats(0.0, np.pi),
    twist=st.floats(0.0, np.pi),
    iterations=st.integers(1, 30),
)
def test_hypothesis_limits_are_never_violated(solve, seed, links, swing, twist, iterations):
    skeleton, pose, target = reachable_problem(seed, links, characters=3, spread=2.0)
    rng = np.random.default_rng(seed)
    max_swing = rng.uniform(0.0, swing, size=links)
    max_twist = rng.uniform(0.0, twist, size=links)
    model = local_to_model(skeleton, pose.matrices())
    result = solve(
        skeleton,
        model,
        list(range(links + 1)),
        target,
        max_iterations=iterations,
        max_swing=max_swing,
        max_twist=max_twist,
    )
    local = Rotation.from_quat(result.apply(pose).rotations[:, :-1].reshape(-1, 4))
    rest = Rotation.from_quat(np.tile(skeleton.rest_rotations[:-1], (3, 1)))
    axes = skeleton.rest_translations[1:] / np.linalg.norm(skeleton.rest_translations[1:], axis=-1, keepdims=True)
    swing_angle, twist_angle = swing_and_twist(rest.inv() * local, np.tile(axes, (3, 1)))
    assert np.all(swing_angle <= np.tile(max_swing, 3) + 1e-9)
    assert np.all(np.abs(twist_angle) <= np.tile(max_twist, 3) + 1e-9)
    end = positions(skeleton, result.apply(pose))[:, -1]
    np.testing.assert_array_equal(result.reached, np.linalg.norm(end - target, axis=-1) <= 1e-4 + 1e-12)


@SOLVERS
def test_limits_pull_an_input_pose_inside_even_when_the_target_is_already_reached(solve, rng):
    skeleton = chain_skeleton(rng, 3)
    pose = perturbed_pose(skeleton, rng, 2, 2.5)
    model = local_to_model(skeleton, pose.matrices())
    target = model[:, -1, :3, 3]
    result = solve(skeleton, model, [0, 1, 2, 3], target, max_swing=0.1, max_twist=0.05)
    local = Rotation.from_quat(result.apply(pose).rotations[:, :-1].reshape(-1, 4))
    rest = Rotation.from_quat(np.tile(skeleton.rest_rotations[:-1], (2, 1)))
    axes = np.tile(
        skeleton.rest_translations[1:] / np.linalg.norm(skeleton.rest_translations[1:], axis=-1)[:, None], (2, 1)
    )
    swing_angle, twist_angle = swing_and_twist(rest.inv() * local, axes)
    assert np.all(swing_angle <= 0.1 + 1e-9)
    assert np.all(np.abs(twist_angle) <= 0.05 + 1e-9)


def test_fabrik_straightens_towards_an_unreachable_target_in_one_iteration(rng):
    skeleton = chain_skeleton(rng, 5)
    pose = perturbed_pose(skeleton, rng, 4, 1.0)
    model = local_to_model(skeleton, pose.matrices())
    root = model[:, 0, :3, 3]
    lengths = bone_lengths(skeleton, positions(skeleton, pose))
    direction = rng.normal(size=(4, 3))
    direction /= np.linalg.norm(direction, axis=-1, keepdims=True)
    target = root + direction * lengths.sum(-1, keepdims=True) * 1.5
    result = fabrik_ik(skeleton, model, list(range(6)), target, max_iterations=1)
    solved = positions(skeleton, result.apply(pose))
    expected = (
        root[:, None]
        + np.cumsum(np.concatenate((np.zeros((4, 1)), lengths), axis=-1), axis=-1)[..., None] * (direction[:, None])
    )
    np.testing.assert_allclose(solved, expected, atol=1e-12)
    assert not result.reached.any()


def test_ccd_stretches_towards_an_unreachable_target(rng):
    skeleton = chain_skeleton(rng, 4)
    pose = perturbed_pose(skeleton, rng, 3, 0.5)
    model = local_to_model(skeleton, pose.matrices())
    root = model[:, 0, :3, 3]
    total = bone_lengths(skeleton, positions(skeleton, pose)).sum(-1)
    direction = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.6, 0.8]])
    target = root + direction * 2.0 * total[:, None]
    result = ccd_ik(skeleton, model, list(range(5)), target, max_iterations=300)
    end = positions(skeleton, result.apply(pose))[:, -1]
    np.testing.assert_allclose(end, root + direction * total[:, None], atol=1e-3 * total.max())
    assert not result.reached.any()


@SOLVERS
def test_end_already_on_target_gives_identity(solve, rng):
    skeleton = chain_skeleton(rng, 4)
    pose = perturbed_pose(skeleton, rng, 3, 1.0)
    model = local_to_model(skeleton, pose.matrices())
    result = solve(skeleton, model, list(range(5)), model[:, -1, :3, 3])
    assert_quat_allclose(result.corrections, [0, 0, 0, 1], atol=1e-15)
    assert result.reached.all()


@SOLVERS
def test_batch_results_do_not_depend_on_the_other_characters(solve):
    skeleton, pose, target = reachable_problem(7, 5, characters=6)
    model = local_to_model(skeleton, pose.matrices())
    batch = solve(skeleton, model, list(range(6)), target, max_iterations=40, max_swing=2.0)
    for c in range(6):
        alone = solve(skeleton, model[c], list(range(6)), target[c], max_iterations=40, max_swing=2.0)
        np.testing.assert_allclose(batch.corrections[c], alone.corrections, atol=1e-12)
        assert batch.reached[c] == alone.reached


@SOLVERS
def test_weight_zero_gives_the_input_and_one_the_solved_pose(solve):
    skeleton, pose, target = reachable_problem(3, 4, characters=4)
    model = local_to_model(skeleton, pose.matrices())
    solved = solve(skeleton, model, list(range(5)), target)
    weight = np.array([0.0, 1.0, 0.0, 1.0])
    mixed = solve(skeleton, model, list(range(5)), target, weight=weight)
    assert_quat_allclose(mixed.corrections[weight == 0], [0, 0, 0, 1], atol=0)
    np.testing.assert_array_equal(mixed.corrections[weight == 1], solved.corrections[weight == 1])


@SOLVERS
def test_zero_length_bone_in_the_chain(solve):
    rng = np.random.default_rng(5)
    skeleton = chain_skeleton(rng, 4, zero_bone=2)
    pose = perturbed_pose(skeleton, rng, 3, 1.0)
    goal = perturbed_pose(skeleton, rng, 3, 1.0)
    model = local_to_model(skeleton, pose.matrices())
    target = positions(skeleton, goal)[:, -1]
    result = solve(skeleton, model, list(range(5)), target, max_iterations=500, max_swing=np.pi)
    assert np.isfinite(result.corrections).all()
    assert result.reached.all()


@SOLVERS
def test_chain_may_skip_joints_that_keep_their_local_rotations(solve):
    skeleton, pose, _ = reachable_problem(11, 6, characters=3)
    model = local_to_model(skeleton, pose.matrices())
    chain = [0, 2, 3, 6]
    goal = pose.copy()
    goal.rotations[:, [0, 2, 3]] = Rotation.random(9, random_state=4).as_quat().reshape(3, 3, 4)
    target = positions(skeleton, goal)[:, 6]
    result = solve(skeleton, model, chain, target, max_iterations=1000)
    np.testing.assert_array_equal(result.joints, [0, 2, 3])
    solved = result.apply(pose)
    untouched = [1, 4, 5, 6]
    np.testing.assert_array_equal(solved.rotations[:, untouched], pose.rotations[:, untouched])
    np.testing.assert_allclose(positions(skeleton, solved)[:, 6], target, atol=1e-4)
    assert result.reached.all()


def test_centimetre_rig_under_a_scaled_root():
    rng = np.random.default_rng(2)
    inner = chain_skeleton(rng, 4)
    skeleton = Skeleton(
        ["root", *inner.names],
        [-1, 0, 1, 2, 3, 4],
        np.concatenate(([[0.0, 0.0, 0.0]], inner.rest_translations * 100.0)),
        np.concatenate(([Rotation.from_euler("x", -90, degrees=True).as_quat()], inner.rest_rotations)),
        np.concatenate(([[0.01, 0.01, 0.01]], inner.rest_scales)),
    )
    pose = perturbed_pose(skeleton, rng, 3, 1.0)
    goal = perturbed_pose(skeleton, rng, 3, 1.0)
    target = positions(skeleton, goal)[:, -1]
    model = local_to_model(skeleton, pose.matrices())
    for solve in (ccd_ik, fabrik_ik):
        result = solve(skeleton, model, list(range(1, 6)), target, max_iterations=500, tolerance=1e-6)
        solved = positions(skeleton, result.apply(pose))
        assert np.all(np.linalg.norm(solved[:, -1] - target, axis=-1) <= 1e-6)
        np.testing.assert_allclose(
            bone_lengths(skeleton, solved), bone_lengths(skeleton, positions(skeleton, pose)), rtol=1e-9
        )


@SOLVERS
@pytest.mark.parametrize(
    ("chain", "kwargs", "error", "match"),
    [
        ([0, 1, 2], {"target": [np.nan, 0, 0]}, InvalidInputError, "target must be finite"),
        ([0], {}, InvalidInputError, "chain must list at least 2 joints, got 1"),
        ([0, 2, 1], {}, SkeletonMismatchError, r"joint 2 \('j2'\) is not an ancestor of joint 1 \('j1'\)"),
        ([0, 1, 2], {"max_swing": [0.1]}, InvalidInputError, r"max_swing must have shape \(2,\)"),
        ([0, 1, 2], {"max_twist": [0.1, 4.0]}, InvalidInputError, r"max_twist must lie in \[0, π\]"),
        ([0, 1, 2], {"max_swing": -0.1}, InvalidInputError, r"max_swing must lie in \[0, π\]"),
        ([0, 1, 2], {"max_iterations": -1}, InvalidInputError, "max_iterations must be an integer >= 0, got -1"),
        ([0, 1, 2], {"max_iterations": 2.5}, InvalidInputError, "max_iterations must be an integer >= 0"),
        ([0, 1, 2], {"tolerance": np.nan}, InvalidInputError, "tolerance must be a finite number >= 0"),
        ([0, 1, 2], {"weight": [0.5, 1.5]}, InvalidInputError, r"weight must lie in \[0, 1\]"),
    ],
)
def test_bad_input_raises_typed_errors(solve, chain, kwargs, error, match):
    skeleton = chain_skeleton(np.random.default_rng(0), 3)
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    args = {"target": [0.1, 0.2, 0.3]} | kwargs
    with pytest.raises(error, match=match):
        solve(skeleton, model, chain, args.pop("target"), **args)
