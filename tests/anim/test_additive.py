"""Tests of engine.anim.additive: delta poses and clips, checked with scipy and by sampling."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim import Channel, Clip, Pose, Skeleton, sample
from engine.anim.additive import additive_clip, additive_pose, apply_additive, restrict_clip
from engine.anim.blending import subtree_mask
from engine.errors import DegenerateInputError, InvalidInputError, SkeletonMismatchError
from engine.procedural.mannequin import build_mannequin
from tests.helpers import assert_quat_allclose


def random_pose(rng: np.random.Generator, shape: tuple[int, ...]) -> Pose:
    q = rng.normal(size=(*shape, 4))
    return Pose(
        rng.normal(size=(*shape, 3)), q / np.linalg.norm(q, axis=-1, keepdims=True), rng.uniform(0.5, 2, (*shape, 3))
    )


def assert_pose_allclose(actual: Pose, desired: Pose, atol: float = 1e-12) -> None:
    np.testing.assert_allclose(actual.translations, desired.translations, atol=atol, rtol=0)
    np.testing.assert_allclose(actual.scales, desired.scales, atol=atol, rtol=0)
    assert_quat_allclose(actual.rotations, desired.rotations, atol=atol)


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def test_additive_of_the_reference_is_identity(rng):
    reference = random_pose(rng, (6,))
    delta = additive_pose(reference, reference)
    np.testing.assert_allclose(delta.translations, 0.0, atol=1e-15)
    np.testing.assert_allclose(delta.scales, 1.0, atol=1e-15)
    assert_quat_allclose(delta.rotations, np.tile([0.0, 0, 0, 1], (6, 1)), atol=1e-15)
    base = random_pose(rng, (3, 6))
    for weight in (0.0, 0.4, 1.0, 2.0):
        assert_pose_allclose(apply_additive(base, delta, weight), base, atol=1e-14)


def test_full_weight_on_the_reference_gives_the_pose_back(rng):
    pose, reference = random_pose(rng, (4, 5)), random_pose(rng, (5,))
    delta = additive_pose(pose, reference)
    assert_pose_allclose(apply_additive(reference.broadcast_to((4,)), delta, 1.0), pose)


def test_apply_matches_scipy_order_and_partial_weight(rng):
    base, delta = random_pose(rng, (3, 4)), random_pose(rng, (3, 4))
    weight = np.array([0.0, 0.3, 1.0])
    out = apply_additive(base, delta, weight)
    for c in range(3):
        for j in range(4):
            rotvec = Rotation.from_quat(delta.rotations[c, j]).as_rotvec()  # angle in [0, π]: shortest arc
            partial = Rotation.from_rotvec(weight[c] * rotvec)
            expected = partial * Rotation.from_quat(base.rotations[c, j])  # delta applied after the base
            assert_quat_allclose(out.rotations[c, j], expected.as_quat(), atol=1e-12)
    np.testing.assert_allclose(out.translations, base.translations + weight[:, None, None] * delta.translations)
    expected_scales = base.scales * (1.0 + weight[:, None, None] * (delta.scales - 1.0))
    np.testing.assert_allclose(out.scales, expected_scales)


def test_mask_limits_the_additive_layer(mannequin):
    skeleton = mannequin.skeleton
    base = sample(mannequin.clips["walk"], skeleton.rest_pose, np.array([0.2, 0.7]))
    lean = additive_clip(mannequin.clips["lean_look"], skeleton)
    delta = sample(lean, Pose.identity(skeleton.num_joints), np.array([1.0, 1.0]))
    head = subtree_mask(skeleton, "neck")
    out = apply_additive(base, delta, [1.0, 0.5], head)
    outside = head == 0
    np.testing.assert_array_equal(out.rotations[:, outside], base.rotations[:, outside])
    changed = np.abs(np.sum(out.rotations[:, ~outside] * base.rotations[:, ~outside], -1))
    assert np.all(changed < 1.0 - 1e-6)


def test_additive_clip_samples_to_the_delta_of_the_sampled_clip(mannequin):
    skeleton = mannequin.skeleton
    clip = mannequin.clips["walk"]
    times = np.linspace(0.0, clip.duration, 9)
    delta_clip = additive_clip(clip, skeleton)
    first = sample(clip, skeleton.rest_pose, 0.0)
    expected = additive_pose(sample(clip, skeleton.rest_pose, times), first)
    assert_pose_allclose(sample(delta_clip, Pose.identity(skeleton.num_joints), times), expected, atol=1e-12)
    start = sample(delta_clip, Pose.identity(skeleton.num_joints), 0.0)
    assert_pose_allclose(start, Pose.identity(skeleton.num_joints), atol=1e-12)
    assert delta_clip.markers == clip.markers


def test_additive_clip_against_given_reference_covers_unanimated_joints(mannequin, rng):
    skeleton = mannequin.skeleton
    clip = mannequin.clips["wave"]  # animates the right arm only
    reference = sample(mannequin.clips["idle"], skeleton.rest_pose, 1.3)
    delta_clip = additive_clip(clip, skeleton, reference)
    assert len(delta_clip.channels) > len(clip.channels)  # constant channels for the other joints
    times = rng.uniform(0.0, clip.duration, 5)
    expected = additive_pose(sample(clip, skeleton.rest_pose, times), reference)
    assert_pose_allclose(sample(delta_clip, Pose.identity(skeleton.num_joints), times), expected, atol=1e-12)


@pytest.mark.parametrize("interpolation", ["STEP", "LINEAR", "CUBICSPLINE"])
def test_additive_clip_is_exact_for_every_interpolation(rng, interpolation):
    skeleton = Skeleton(["a", "b"], [-1, 0], rest_scales=[[1, 1, 1], [2, 2, 2]])
    times = np.array([0.0, 0.4, 1.0])
    q = Rotation.random(3, random_state=7).as_quat()
    layout = (3, 3) if interpolation != "CUBICSPLINE" else (3, 3, 3)
    if interpolation == "CUBICSPLINE":
        rotations = np.stack([rng.normal(size=(3, 4)) * 0.1, q, rng.normal(size=(3, 4)) * 0.1], axis=1)
    else:
        rotations = q
    channels = (
        Channel(0, "translation", interpolation, times, rng.normal(size=layout)),
        Channel(1, "rotation", interpolation, times, rotations),
        Channel(1, "scale", interpolation, times, rng.uniform(0.5, 2.0, layout)),
    )
    clip = Clip("test", channels, 2)
    reference = random_pose(rng, (2,))
    delta_clip = additive_clip(clip, skeleton, reference)
    at = np.linspace(-0.1, 1.1, 13)
    expected = additive_pose(sample(clip, skeleton.rest_pose, at), reference)
    assert_pose_allclose(sample(delta_clip, Pose.identity(skeleton.num_joints), at), expected, atol=1e-12)


def test_restrict_clip_samples_the_same_values_on_fewer_joints(mannequin):
    skeleton, clip = mannequin.skeleton, mannequin.clips["walk"]
    joints = np.array([skeleton.index(n) for n in ("upper_leg_r", "root", "lower_arm_l")])
    part = restrict_clip(clip, joints)
    small = Skeleton(
        [skeleton.names[j] for j in joints],
        [-1, -1, -1],
        skeleton.rest_translations[joints],
        skeleton.rest_rotations[joints],
        skeleton.rest_scales[joints],
    )
    times = np.array([0.0, 0.33, 0.9])
    full = sample(clip, skeleton.rest_pose, times)
    assert_pose_allclose(sample(part, small.rest_pose, times), full[:, joints], atol=0.0)
    assert part.markers == clip.markers
    assert part.num_targets == 3
    with pytest.raises(
        InvalidInputError, match=r"joints must be distinct indices below 25 \(clip 'walk'\), got \[1, 1\]"
    ):
        restrict_clip(clip, [1, 1])
    with pytest.raises(InvalidInputError, match=r"got \[25\]"):
        restrict_clip(clip, [25])


def test_additive_bad_input(rng):
    skeleton = Skeleton(["a", "b"], [-1, 0])
    pose = random_pose(rng, (2,))
    with pytest.raises(SkeletonMismatchError, match="pose has 2 joints but reference has 3"):
        additive_pose(pose, random_pose(rng, (3,)))
    with pytest.raises(DegenerateInputError, match="reference has a zero scale component"):
        additive_pose(pose, Pose(np.zeros((2, 3)), np.tile([0.0, 0, 0, 1], (2, 1)), np.zeros((2, 3))))
    with pytest.raises(SkeletonMismatchError, match="base has 2 joints but delta has 3"):
        apply_additive(pose, random_pose(rng, (3,)))
    with pytest.raises(InvalidInputError, match="weight must be non-negative, got -1"):
        apply_additive(pose, pose, -1.0)
    with pytest.raises(InvalidInputError, match="weight must be finite, got nan"):
        apply_additive(pose, pose, np.nan)
    with pytest.raises(SkeletonMismatchError, match="mask has 3 joints but the poses have 2"):
        apply_additive(pose, pose, 1.0, np.ones(3))
    with pytest.raises(InvalidInputError, match="mask must be non-negative"):
        apply_additive(pose, pose, 1.0, -np.ones(2))
    clip = Clip("c", (Channel(0, "translation", "LINEAR", [0.0, 1.0], np.zeros((2, 3))),), 3)
    with pytest.raises(SkeletonMismatchError, match="clip 'c' targets 3 joints but the skeleton has 2"):
        additive_clip(clip, skeleton)
    with pytest.raises(
        SkeletonMismatchError, match=r"reference must be one pose of 2 joints, shape \(2,\), got \(1, 2\)"
    ):
        additive_clip(Clip("d", (), 2), skeleton, random_pose(rng, (1, 2)))
