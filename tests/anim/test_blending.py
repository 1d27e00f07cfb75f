"""Tests of engine.anim.blending against a slow per-joint oracle, scipy and real clips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from engine.anim import Pose, Skeleton, sample
from engine.anim.blending import REST_THRESHOLD, blend, interpolate_poses, slerp_chain, subtree_mask
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.io import load_character
from engine.procedural.mannequin import build_mannequin
from tests.helpers import assert_quat_allclose


def random_pose(rng: np.random.Generator, shape: tuple[int, ...]) -> Pose:
    q = rng.normal(size=(*shape, 4))
    return Pose(
        rng.normal(size=(*shape, 3)), q / np.linalg.norm(q, axis=-1, keepdims=True), rng.uniform(0.5, 2, (*shape, 3))
    )


def nearby_pose(rng: np.random.Generator, base: Pose, angle: float) -> Pose:
    """``base`` with every rotation turned by up to ``angle`` radians and a random sign."""
    turn = Rotation.from_rotvec(rng.uniform(-1, 1, (*base.shape, 3)).reshape(-1, 3) * angle / np.sqrt(3))
    rotations = (turn * Rotation.from_quat(base.rotations.reshape(-1, 4))).as_quat().reshape(base.rotations.shape)
    signs = rng.choice([-1.0, 1.0], size=(*base.shape, 1))
    return Pose(base.translations + rng.normal(size=base.translations.shape), rotations * signs, base.scales * 1.1)


def oracle_blend(poses: list[Pose], weights: np.ndarray, masks: np.ndarray, rest: Pose, threshold: float) -> Pose:
    """Slow, obvious per-character, per-joint blend: the documented algorithm written out."""
    C, J = poses[0].shape
    out_t, out_r, out_s = np.zeros((C, J, 3)), np.zeros((C, J, 4)), np.zeros((C, J, 3))
    for c in range(C):
        for j in range(J):
            w = [weights[n, c] * masks[n, j] for n in range(len(poses))]
            total = sum(w)
            rest_w = max(threshold - total, 0.0)
            reference = next((poses[n].rotations[c, j] for n in range(len(poses)) if w[n] > 0), rest.rotations[j])
            items = [(w[n], p.translations[c, j], p.rotations[c, j], p.scales[c, j]) for n, p in enumerate(poses)]
            items.append((rest_w, rest.translations[j], rest.rotations[j], rest.scales[j]))
            q_sum = np.zeros(4)
            t_sum, s_sum = np.zeros(3), np.zeros(3)
            for wn, t, q, s in items:
                q_sum += wn * (q if np.dot(q, reference) >= 0 else -q)
                t_sum += wn * t
                s_sum += wn * s
            out_t[c, j] = t_sum / (total + rest_w)
            out_r[c, j] = q_sum / np.linalg.norm(q_sum)
            out_s[c, j] = s_sum / (total + rest_w)
    return Pose(out_t, out_r, out_s)


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


@pytest.fixture
def skeleton() -> Skeleton:
    # hips ─ spine ─ chest ─ head, hips ─ leg_l ─ foot_l, hips ─ leg_r
    return Skeleton(["hips", "spine", "chest", "head", "leg_l", "foot_l", "leg_r"], [-1, 0, 1, 2, 0, 4, 0])


# --- the sign bug and exact reproduction -------------------------------------------------------


def test_blend_of_sign_flipped_copies_is_that_pose(rng):
    pose = random_pose(rng, (4, 6))
    flipped = Pose(pose.translations, -pose.rotations, pose.scales)
    for weights in ([0.5, 0.5], [0.2, 0.8], [1.0, 1e-3]):
        out = blend(Skeleton([f"j{i}" for i in range(6)], [-1] * 6).rest_pose, [pose, flipped], weights)
        assert_quat_allclose(out.rotations, pose.rotations, atol=1e-12)
        np.testing.assert_allclose(out.translations, pose.translations, atol=1e-12)


def test_naive_sum_of_sign_flipped_copies_would_cancel(rng):
    """The seed's bug, shown on the same data: without alignment the sum is zero."""
    q = random_pose(rng, (5,)).rotations
    assert np.allclose(0.5 * q + 0.5 * -q, 0.0)
    out = blend(
        Skeleton([str(i) for i in range(5)], [-1] * 5).rest_pose,
        [Pose(np.zeros((5, 3)), q, np.ones((5, 3))), Pose(np.zeros((5, 3)), -q, np.ones((5, 3)))],
        [1, 1],
    )
    np.testing.assert_allclose(np.linalg.norm(out.rotations, axis=-1), 1.0)


def test_weights_zero_one_reproduce_one_clip_exactly(mannequin):
    skeleton, clips = mannequin.skeleton, mannequin.clips
    times = np.linspace(0.0, 0.9, 7)
    walk = sample(clips["walk"], skeleton.rest_pose, times)
    run = sample(clips["run"], skeleton.rest_pose, times * 0.7)
    for weights, expected in (([0.0, 1.0], run), ([1.0, 0.0], walk), ([0.0, 3.0], run)):
        out = blend(skeleton.rest_pose, [walk, run], weights)
        np.testing.assert_allclose(out.translations, expected.translations, rtol=0, atol=1e-15)
        np.testing.assert_allclose(out.scales, expected.scales, rtol=0, atol=1e-15)
        assert_quat_allclose(out.rotations, expected.rotations, atol=1e-15)


@pytest.mark.assets
def test_fox_walk_run_blend_matches_oracle(shared_assets: Path):
    fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", textures=False)
    skeleton, clips = fox.skeleton, fox.clips
    times = np.linspace(0.0, 0.7, 5)
    layers = [sample(clips[name], skeleton.rest_pose, times) for name in ("Survey", "Walk", "Run")]
    weights = np.array([[0.2, 0.0, 0.5, 1.0, 0.05], [0.3, 1.0, 0.5, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0, 0.0]])
    head = subtree_mask(skeleton, "b_Neck_04")
    masks = np.stack([np.ones(skeleton.num_joints), 1.0 - head, np.ones(skeleton.num_joints)])
    out = blend(skeleton.rest_pose, layers, weights, masks)
    expected = oracle_blend(layers, weights, masks, skeleton.rest_pose, REST_THRESHOLD)
    np.testing.assert_allclose(out.translations, expected.translations, atol=1e-12)
    np.testing.assert_allclose(out.scales, expected.scales, atol=1e-12)
    assert_quat_allclose(out.rotations, expected.rotations, atol=1e-12)
    # weights (0, 1, 0) on real clips: the Walk clip exactly
    exact = blend(skeleton.rest_pose, layers, [0.0, 1.0, 0.0])
    assert_quat_allclose(exact.rotations, layers[1].rotations, atol=1e-15)


# --- against the oracle and scipy --------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0.1, REST_THRESHOLD])
def test_blend_matches_slow_oracle_with_masks_and_rest(rng, skeleton, threshold):
    C, J = 5, skeleton.num_joints
    base = random_pose(rng, (C, J))
    layers = [base, nearby_pose(rng, base, 1.0), random_pose(rng, (C, J))]
    weights = rng.uniform(0.0, 1.0, (3, C))
    weights[:, 0] = 0.0  # character 0: no weight at all → rest pose
    weights[:, 1] = [0.01, 0.02, 0.0]  # character 1: below the threshold → partly rest
    weights[0, 2] = 0.0  # character 2: the reference is layer 1
    masks = np.stack(
        [subtree_mask(skeleton, "spine"), np.ones(J), subtree_mask(skeleton, "hips", 0.5, exclude=["spine"])]
    )
    out = blend(skeleton.rest_pose, layers, weights, masks, threshold=threshold)
    expected = oracle_blend(layers, weights, masks, skeleton.rest_pose, threshold)
    np.testing.assert_allclose(out.translations, expected.translations, atol=1e-12)
    np.testing.assert_allclose(out.scales, expected.scales, atol=1e-12)
    assert_quat_allclose(out.rotations, expected.rotations, atol=1e-12)
    rest = skeleton.rest_pose
    np.testing.assert_allclose(out.translations[0], rest.translations, atol=1e-15)
    assert_quat_allclose(out.rotations[0], rest.rotations)


def test_equal_weights_give_the_slerp_midpoint(rng):
    a = random_pose(rng, (40,))
    b = nearby_pose(rng, a, 2.5)
    out = blend(Skeleton([str(i) for i in range(40)], [-1] * 40).rest_pose, [a, b], [0.7, 0.7])
    for j in range(40):  # scipy, joint by joint
        mid = Slerp([0, 1], Rotation.from_quat([a.rotations[j], b.rotations[j]]))(0.5)
        assert_quat_allclose(out.rotations[j], mid.as_quat(), atol=1e-12)
    np.testing.assert_allclose(out.translations, 0.5 * (a.translations + b.translations), atol=1e-12)


@given(st.integers(2, 4), st.integers(0, 2**32 - 1))
def test_blend_is_close_to_scipy_weighted_mean_for_nearby_layers(count, seed):
    rng = np.random.default_rng(seed)
    base = random_pose(rng, (8,))
    layers = [nearby_pose(rng, base, 0.2) for _ in range(count)]
    weights = rng.uniform(0.1, 1.0, count)
    out = blend(Skeleton([str(i) for i in range(8)], [-1] * 8).rest_pose, layers, weights, threshold=0.1)
    for j in range(8):
        mean = Rotation.from_quat([p.rotations[j] for p in layers]).mean(weights=weights)
        assert (Rotation.from_quat(out.rotations[j]) * mean.inv()).magnitude() < 2e-3


@given(st.integers(0, 2**32 - 1), st.lists(st.booleans(), min_size=3, max_size=3))
def test_blend_is_invariant_to_quaternion_signs(seed, flips):
    rng = np.random.default_rng(seed)
    layers = [random_pose(rng, (3, 5)) for _ in range(3)]
    weights = rng.uniform(0.0, 1.0, (3, 3))
    rest = Skeleton([str(i) for i in range(5)], [-1] * 5).rest_pose
    flipped = [
        Pose(p.translations, -p.rotations if f else p.rotations, p.scales) for p, f in zip(layers, flips, strict=True)
    ]
    a = blend(rest, layers, weights)
    b = blend(rest, flipped, weights)
    assert_quat_allclose(a.rotations, b.rotations, atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(a.rotations, axis=-1), 1.0, atol=1e-12)


def test_weights_are_normalised(rng):
    layers = [random_pose(rng, (2, 4)) for _ in range(3)]
    rest = Skeleton(list("abcd"), [-1, 0, 1, 2]).rest_pose
    a = blend(rest, layers, [0.2, 0.3, 0.5])
    b = blend(rest, layers, [2.0, 3.0, 5.0])
    np.testing.assert_allclose(a.translations, b.translations, atol=1e-12)
    assert_quat_allclose(a.rotations, b.rotations, atol=1e-12)


def test_rest_fills_in_continuously_below_threshold(rng):
    pose = random_pose(rng, (1, 3))
    skeleton = Skeleton(["a", "b", "c"], [-1, 0, 1], rest_translations=np.ones((3, 3)))
    at = [blend(skeleton.rest_pose, [pose], [w], threshold=0.1).translations for w in (0.1, 0.1 - 1e-9, 0.05, 0.0)]
    np.testing.assert_allclose(at[0], pose.translations)
    np.testing.assert_allclose(at[1], at[0], atol=1e-7)
    np.testing.assert_allclose(at[2], 0.5 * pose.translations + 0.5, atol=1e-12)
    np.testing.assert_allclose(at[3][0], skeleton.rest_translations)


def test_per_character_weights_match_one_call_per_character(rng):
    layers = [random_pose(rng, (4, 5)) for _ in range(2)]
    weights = rng.uniform(0.0, 1.0, (2, 4))
    rest = Skeleton(list("abcde"), [-1, 0, 0, 1, 1]).rest_pose
    batched = blend(rest, layers, weights)
    for c in range(4):
        single = blend(rest, [p[c] for p in layers], weights[:, c])
        np.testing.assert_allclose(batched.translations[c], single.translations, atol=1e-14)
        assert_quat_allclose(batched.rotations[c], single.rotations, atol=1e-14)


def test_stacked_pose_equals_list_of_poses(rng):
    layers = [random_pose(rng, (3, 4)) for _ in range(3)]
    stacked = Pose(*(np.stack([getattr(p, f) for p in layers]) for f in ("translations", "rotations", "scales")))
    rest = Skeleton(list("abcd"), [-1, 0, 1, 2]).rest_pose
    a = blend(rest, layers, [1, 2, 3])
    b = blend(rest, stacked, [1, 2, 3])
    np.testing.assert_allclose(a.rotations, b.rotations, rtol=0, atol=1e-15)


def test_blend_into_out(rng):
    layers = [random_pose(rng, (3, 4)) for _ in range(2)]
    rest = Skeleton(list("abcd"), [-1, 0, 1, 2]).rest_pose
    out = random_pose(rng, (3, 4))
    result = blend(rest, layers, [[1, 0, 0.05], [1, 1, 0.0]], out=out)
    assert result is out
    expected = blend(rest, layers, [[1, 0, 0.05], [1, 1, 0.0]])
    np.testing.assert_allclose(out.rotations, expected.rotations, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out.translations, expected.translations, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out.scales, expected.scales, rtol=0, atol=1e-15)
    with pytest.raises(InvalidInputError, match=r"out must be a Pose or PoseBuffer shaped \(3, 4\), got \(4,\)"):
        blend(rest, layers, [1, 1], out=random_pose(rng, (4,)))


# --- masks ---------------------------------------------------------------------------------------


def test_masks_change_only_the_masked_joints(mannequin):
    skeleton, clips = mannequin.skeleton, mannequin.clips
    walk = sample(clips["walk"], skeleton.rest_pose, np.array([0.1, 0.6]))
    wave = sample(clips["wave"], skeleton.rest_pose, np.array([0.5, 1.5]))
    arm = subtree_mask(skeleton, "upper_arm_r")
    out = blend(skeleton.rest_pose, [walk, wave], [1.0, 1.0], [1.0 - arm, arm])
    inside = arm > 0
    np.testing.assert_array_equal(out.translations[:, ~inside], walk.translations[:, ~inside])
    assert_quat_allclose(out.rotations[:, ~inside], walk.rotations[:, ~inside], atol=1e-15)
    assert_quat_allclose(out.rotations[:, inside], wave.rotations[:, inside], atol=1e-15)
    assert not np.allclose(np.abs(np.sum(walk.rotations[:, inside] * wave.rotations[:, inside], -1)), 1.0)


def test_subtree_mask_matches_parent_walk(mannequin):
    skeleton = mannequin.skeleton

    def under(j: int, root: str) -> bool:
        while j >= 0:
            if skeleton.names[j] == root:
                return True
            j = int(skeleton.parents[j])
        return False

    upper = subtree_mask(skeleton, "spine")
    lower = subtree_mask(skeleton, "root", 0.25, exclude=["spine"])
    for j in range(skeleton.num_joints):
        assert upper[j] == (1.0 if under(j, "spine") else 0.0)
        assert lower[j] == (0.0 if under(j, "spine") else 0.25)
    both = subtree_mask(skeleton, ["hand_l", skeleton.index("hand_r")])
    assert int(both.sum()) == 4


def test_mask_for_unknown_joint_raises(skeleton):
    with pytest.raises(SkeletonMismatchError, match="no joint named 'tail'"):
        subtree_mask(skeleton, "tail")
    with pytest.raises(SkeletonMismatchError, match="no joint named 'wing'"):
        subtree_mask(skeleton, "hips", exclude=["wing"])
    with pytest.raises(SkeletonMismatchError, match="out of range"):
        subtree_mask(skeleton, 42)
    with pytest.raises(InvalidInputError, match="weight must be finite and non-negative"):
        subtree_mask(skeleton, "hips", -1.0)


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weights", "error", "match"),
    [
        ([1.0], InvalidInputError, r"weights must have one entry per layer, shape \(2, \.\.\.\), got \(1,\)"),
        ([1.0, 2.0, 3.0], InvalidInputError, r"one entry per layer.*got \(3,\)"),
        ([1.0, -0.5], InvalidInputError, r"weights must be non-negative, got -0.5 at index \(1,\)"),
        ([1.0, np.nan], InvalidInputError, r"weights must be finite, got nan"),
        ([1.0, np.inf], InvalidInputError, r"weights must be finite, got inf"),
        (np.ones((2, 5)), InvalidInputError, r"weights must have shape \(2,\) or \(2, \*batch\) with batch \(3,\)"),
        (1.0, InvalidInputError, r"one entry per layer"),
    ],
)
def test_bad_weights_raise(rng, skeleton, weights, error, match):
    layers = [random_pose(rng, (3, 7)) for _ in range(2)]
    with pytest.raises(error, match=match):
        blend(skeleton.rest_pose, layers, weights)


def test_poses_from_different_skeletons_raise(rng, skeleton):
    with pytest.raises(SkeletonMismatchError, match="poses\\[1\\] has 5 joints but poses\\[0\\] has 7"):
        blend(skeleton.rest_pose, [random_pose(rng, (7,)), random_pose(rng, (5,))], [1, 1])
    with pytest.raises(SkeletonMismatchError, match="rest has 7 joints but the poses have 5"):
        blend(skeleton.rest_pose, [random_pose(rng, (5,))], [1])
    with pytest.raises(InvalidInputError, match="batch shape \\(3,\\) but poses\\[0\\] has \\(2,\\)"):
        blend(skeleton.rest_pose, [random_pose(rng, (2, 7)), random_pose(rng, (3, 7))], [1, 1])


def test_bad_masks_and_arguments_raise(rng, skeleton):
    layers = [random_pose(rng, (7,)) for _ in range(2)]
    with pytest.raises(SkeletonMismatchError, match="mask has 5 joints per layer but the poses have 7"):
        blend(skeleton.rest_pose, layers, [1, 1], np.ones((2, 5)))
    with pytest.raises(InvalidInputError, match=r"mask must have shape \(2, J\), got \(7,\)"):
        blend(skeleton.rest_pose, layers, [1, 1], np.ones(7))
    with pytest.raises(InvalidInputError, match="mask must be non-negative"):
        blend(skeleton.rest_pose, layers, [1, 1], [np.ones(7), -np.ones(7)])
    with pytest.raises(InvalidInputError, match="mask must hold one mask \\(or None\\) per layer: 2, got 1"):
        blend(skeleton.rest_pose, layers, [1, 1], [None])
    with pytest.raises(InvalidInputError, match="mask must be finite"):
        blend(skeleton.rest_pose, layers, [1, 1], [None, np.full(7, np.nan)])
    with pytest.raises(InvalidInputError, match="poses must hold at least one pose"):
        blend(skeleton.rest_pose, [], [])
    with pytest.raises(InvalidInputError, match="poses\\[1\\] must be a Pose, got ndarray"):
        blend(skeleton.rest_pose, [layers[0], np.zeros((7, 4))], [1, 1])
    with pytest.raises(InvalidInputError, match="a stacked pose needs a leading layer axis"):
        blend(skeleton.rest_pose, layers[0], [1])
    with pytest.raises(InvalidInputError, match=r"rest must be a Pose \(e\.g\. skeleton\.rest_pose\), got str"):
        blend("rest", layers, [1, 1])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"threshold must be positive, got 0\.0"):
        blend(skeleton.rest_pose, layers, [1, 1], threshold=0.0)


# --- two-pose blends -----------------------------------------------------------------------------


def test_interpolate_slerp_matches_scipy(rng):
    a = random_pose(rng, (3, 6))
    b = random_pose(rng, (3, 6))
    t = np.array([0.0, 0.3, 1.0])
    out = interpolate_poses(a, b, t)
    for c in range(3):
        for j in range(6):
            ra, rb = Rotation.from_quat(a.rotations[c, j]), Rotation.from_quat(b.rotations[c, j])
            expected = Slerp([0, 1], Rotation.concatenate([ra, rb]))(t[c])
            assert_quat_allclose(out.rotations[c, j], expected.as_quat(), atol=1e-12)
    np.testing.assert_allclose(out.translations[1], 0.7 * a.translations[1] + 0.3 * b.translations[1])
    np.testing.assert_allclose(out.scales[2], b.scales[2])


def test_interpolate_nlerp_equals_two_layer_blend(rng):
    a = random_pose(rng, (4, 6))
    b = nearby_pose(rng, a, 1.0)
    t = np.array([0.1, 0.4, 0.5, 0.9])
    out = interpolate_poses(a, b, t, method="nlerp")
    expected = blend(Skeleton([str(i) for i in range(6)], [-1] * 6).rest_pose, [a, b], np.stack([1 - t, t]))
    assert_quat_allclose(out.rotations, expected.rotations, atol=1e-12)
    np.testing.assert_allclose(out.translations, expected.translations, atol=1e-12)
    # nlerp and slerp agree at the ends and the middle, differ in between
    slerp = interpolate_poses(a, b, t, method="slerp")
    assert_quat_allclose(out.rotations[2], slerp.rotations[2], atol=1e-12)
    assert not np.allclose(np.abs(np.sum(out.rotations[0] * slerp.rotations[0], -1)), 1.0, atol=1e-12, rtol=0)


def test_slerp_chain(rng):
    layers = [random_pose(rng, (2, 3)) for _ in range(3)]
    two = slerp_chain(layers[:2], [1.0, 3.0])
    expected = interpolate_poses(layers[0], layers[1], 0.75)
    assert_quat_allclose(two.rotations, expected.rotations, atol=1e-12)
    three = slerp_chain(layers, [[0.0, 1.0], [2.0, 1.0], [2.0, 2.0]])
    weights = np.array([[0.0, 1.0], [2.0, 1.0], [2.0, 2.0]])
    average = np.einsum("nc,ncjk->cjk", weights / weights.sum(0), np.stack([p.translations for p in layers]))
    np.testing.assert_allclose(three.translations, average, atol=1e-12)
    # character 0: layer 0 has no weight, so it is an even slerp of layers 1 and 2
    mid = interpolate_poses(layers[1][0], layers[2][0], 0.5)
    assert_quat_allclose(three.rotations[0], mid.rotations, atol=1e-12)
    # order matters for three rotations (the docstring's warning)
    reordered = slerp_chain(layers[::-1], weights[::-1])
    assert not np.allclose(np.abs(np.sum(three.rotations[1] * reordered.rotations[1], -1)), 1.0)


def test_two_pose_blends_bad_input(rng):
    a, b = random_pose(rng, (4,)), random_pose(rng, (5,))
    with pytest.raises(SkeletonMismatchError, match="a has 4 joints but b has 5"):
        interpolate_poses(a, b, 0.5)
    with pytest.raises(InvalidInputError, match="method must be 'slerp' or 'nlerp', got 'cubic'"):
        interpolate_poses(a, a, 0.5, method="cubic")
    with pytest.raises(InvalidInputError, match="t must be finite"):
        interpolate_poses(a, a, np.nan)
    with pytest.raises(InvalidInputError, match="positive total for every character"):
        slerp_chain([a, a], [0.0, 0.0])
    with pytest.raises(InvalidInputError, match="weights must be non-negative"):
        slerp_chain([a, a], [1.0, -1.0])
