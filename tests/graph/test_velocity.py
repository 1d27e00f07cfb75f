"""Tests of engine.anim.velocity against closed forms, scipy Rotation and finite differences of real clips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import Channel, Clip, Pose, Skeleton, additive_pose, apply_additive, blend, sample
from engine.anim.clip_velocity import key_times, sample_velocity, sample_with_velocity, velocity_table
from engine.anim.velocity import (
    PoseVelocity,
    additive_velocity,
    angular_from_rotvec_rate,
    angular_velocity,
    blend_velocity,
    pose_velocity,
    rotvec_rate_from_angular,
)
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.io import load_character
from engine.procedural.mannequin import build_mannequin
from tests import strategies


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def linear_clip() -> tuple[Clip, Skeleton, np.ndarray, np.ndarray, np.ndarray]:
    """One joint: LINEAR translation and rotation keys at 0, 0.5, 0.75, 2 s; returns the key data too."""
    times = np.array([0.0, 0.5, 0.75, 2.0])
    positions = np.array([[0.0, 0, 0], [1.0, 0, 0], [1.0, 2.0, 0], [0.0, 0, 0]])
    angles = np.array([0.0, 1.0, 2.5, 0.5])  # about the fixed axis z: constant ω per segment
    rotations = Rotation.from_rotvec(np.outer(angles, [0.0, 0.0, 1.0])).as_quat()
    clip = Clip(
        "line",
        [Channel(0, "translation", "LINEAR", times, positions), Channel(0, "rotation", "LINEAR", times, rotations)],
        1,
    )
    return clip, Skeleton(["j"], [-1]), times, positions, angles


def segment_rates(times, positions, angles, t):
    """The closed-form left derivative: the rate of the segment (k_i, k_i+1] holding t, 0 outside."""
    k = np.searchsorted(times, t, side="left") - 1
    if k < 0 or k >= len(times) - 1:
        return np.zeros(3), np.zeros(3)
    span = times[k + 1] - times[k]
    return (positions[k + 1] - positions[k]) / span, np.array([0.0, 0.0, (angles[k + 1] - angles[k]) / span])


KEY_EDGES = [0.5, 0.75, 2.0]


@pytest.mark.parametrize(
    "t",
    [
        0.1,
        0.3,
        0.6,
        1.9,
        *KEY_EDGES,
        *(np.nextafter(k, -1.0) for k in KEY_EDGES),
        *(np.nextafter(k, 3.0) for k in KEY_EDGES),
    ],
)
def test_linear_keys_give_the_exact_segment_rate(t):
    clip, skeleton, times, positions, angles = linear_clip()
    velocity = sample_velocity(clip, skeleton, np.array([t]))
    linear, angular = segment_rates(times, positions, angles, t)
    np.testing.assert_allclose(velocity.linear[0, 0], linear, atol=1e-9)
    np.testing.assert_allclose(velocity.angular[0, 0], angular, atol=1e-9)
    np.testing.assert_array_equal(velocity.scaling, 0.0)


@pytest.mark.parametrize("step", [1e-6, 1e-3, 0.05, 1.0, 10.0])
def test_exact_whatever_the_step(step):
    clip, skeleton, times, positions, angles = linear_clip()
    t = np.array([0.01, 0.49, 0.51, 0.7, 1.0, 1.99])
    velocity = sample_velocity(clip, skeleton, t, step=step)
    for k, tk in enumerate(t):
        linear, angular = segment_rates(times, positions, angles, tk)
        np.testing.assert_allclose(velocity.linear[k, 0], linear, atol=1e-7)
        np.testing.assert_allclose(velocity.angular[k, 0], angular, atol=1e-7)


def test_constant_before_the_first_key_and_after_the_last():
    clip, skeleton, *_ = linear_clip()
    velocity = sample_velocity(clip, skeleton, np.array([-1.0, 0.0, 2.0 + 1e-12, 5.0]))
    np.testing.assert_array_equal(velocity.linear[[0, 1, 3]], 0.0)
    np.testing.assert_array_equal(velocity.angular[[0, 1, 3]], 0.0)


def test_loop_seam_takes_the_last_segment():
    clip, skeleton, times, positions, angles = linear_clip()
    velocity = sample_velocity(clip, skeleton, np.array([0.0]), loop=True)
    linear, angular = segment_rates(times, positions, angles, 2.0)
    np.testing.assert_allclose(velocity.linear[0, 0], linear, atol=1e-9)
    np.testing.assert_allclose(velocity.angular[0, 0], angular, atol=1e-9)


def test_key_times_merge_every_channel(mannequin):
    times = key_times(mannequin.clips["walk"])
    assert times[0] == 0.0
    assert times[-1] == pytest.approx(1.0)
    assert np.all(np.diff(times) > 0)


def between_keys(clip, count):
    """``count`` times spread over the clip, each a third of the way into a key segment (away from kinks)."""
    keys = key_times(clip)
    inside = keys[:-1] + (keys[1:] - keys[:-1]) / 3.0
    return inside[np.linspace(0, inside.size - 1, count).round().astype(int)]


def left_difference(clip, skeleton, t, h=1e-7):
    return pose_velocity(sample(clip, skeleton.rest_pose, t - h), sample(clip, skeleton.rest_pose, t), h)


@pytest.mark.parametrize("name", ["walk", "run", "idle", "jump"])
def test_mannequin_clips_match_a_fine_left_difference(mannequin, name):
    clip = mannequin.clips[name]
    t = between_keys(clip, 23)
    velocity = sample_velocity(clip, mannequin.skeleton, t)
    reference = left_difference(clip, mannequin.skeleton, t)
    np.testing.assert_allclose(velocity.linear, reference.linear, atol=1e-5)
    np.testing.assert_allclose(velocity.angular, reference.angular, atol=1e-5)


@pytest.mark.assets
@pytest.mark.parametrize("name", ["Survey", "Walk", "Run"])
def test_fox_clips_match_a_fine_left_difference(shared_assets: Path, name):
    fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    clip = fox.clips[name]
    t = between_keys(clip, 17)
    velocity = sample_velocity(clip, fox.skeleton, t)
    reference = left_difference(clip, fox.skeleton, t)
    np.testing.assert_allclose(velocity.linear, reference.linear, atol=2e-4)
    np.testing.assert_allclose(velocity.angular, reference.angular, atol=2e-4)
    assert np.abs(velocity.angular).max() > 0.5  # the clip does move


@given(strategies.unit_vectors(), st.floats(-20.0, 20.0), st.floats(1e-3, 0.15))
def test_angular_velocity_of_a_constant_spin(axis, speed, dt):
    start = Rotation.from_rotvec([0.3, -0.2, 0.9])
    end = Rotation.from_rotvec(axis * speed * dt) * start  # at most 3 rad per step: no aliasing
    np.testing.assert_allclose(angular_velocity(start.as_quat(), end.as_quat(), dt), axis * speed, atol=1e-8)


def test_angular_velocity_ignores_quaternion_signs():
    a = Rotation.from_rotvec([0.1, 0.2, 0.3]).as_quat()
    b = Rotation.from_rotvec([0.2, 0.2, 0.3]).as_quat()
    np.testing.assert_allclose(angular_velocity(a, -b, 0.1), angular_velocity(-a, b, 0.1), atol=1e-14)


def test_pose_velocity_validates():
    pose = Pose(np.zeros((2, 3)), np.tile([0.0, 0, 0, 1], (2, 1)), np.ones((2, 3)))
    with pytest.raises(InvalidInputError, match="dt must be positive"):
        pose_velocity(pose, pose, 0.0)
    with pytest.raises(SkeletonMismatchError):
        pose_velocity(pose, pose[:1], 0.1)


@given(strategies.unit_vectors(), st.floats(0.0, 3.1), strategies.vectors(5.0))
def test_left_jacobian_against_scipy_differences(axis, angle, rate):
    phi = axis * angle
    h = 1e-6
    ahead = Rotation.from_rotvec(phi + h * rate)
    behind = Rotation.from_rotvec(phi - h * rate)
    reference = (ahead * behind.inv()).as_rotvec() / (2 * h)
    np.testing.assert_allclose(angular_from_rotvec_rate(phi, rate), reference, atol=1e-6)
    np.testing.assert_allclose(rotvec_rate_from_angular(phi, angular_from_rotvec_rate(phi, rate)), rate, atol=1e-9)


@pytest.mark.parametrize("angle", [0.0, 1e-12, np.nextafter(1e-4, 0.0), 1e-4, np.nextafter(1e-4, 1.0), 0.5, np.pi])
def test_jacobians_at_the_series_switch_and_half_turn(angle):
    phi = np.array([0.0, angle, 0.0])
    rate = np.array([0.3, -0.4, 0.5])
    omega = angular_from_rotvec_rate(phi, rate)
    h = 1e-7
    turn = Rotation.from_rotvec(phi + h * rate) * Rotation.from_rotvec(phi - h * rate).inv()
    reference = turn.as_rotvec() / (2 * h)
    np.testing.assert_allclose(omega, reference, atol=1e-6)
    np.testing.assert_allclose(rotvec_rate_from_angular(phi, omega), rate, atol=1e-9)


def blended(layers, weights, rates, dt, masks, rest):
    # blend_velocity assumes the layers' total weight reaches the rest threshold (the rest pose
    # takes no part): these weights total 0.8 to 1.1, so the threshold is set below them
    return blend(rest.rest_pose, [layer(dt) for layer in layers], weights + rates * dt, masks, threshold=0.1)


def test_blend_velocity_is_the_derivative_of_blend(mannequin):
    skeleton = mannequin.skeleton
    times = [np.array([0.21, 0.43, 0.07]), np.array([0.11, 0.31, 0.52]), np.array([1.3, 0.2, 2.9])]
    clips = [mannequin.clips[name] for name in ("walk", "run", "idle")]
    layers = [lambda dt, c=c, t=t: sample(c, skeleton.rest_pose, t + dt) for c, t in zip(clips, times, strict=True)]
    weights = np.array([[0.3, 0.6, 0.0], [0.5, 0.4, 0.2], [0.2, 0.0, 0.8]])
    rates = np.array([[0.5, -1.0, 0.0], [-0.5, 1.0, 0.3], [0.0, 0.0, -0.3]])
    masks = np.ones((3, skeleton.num_joints))
    masks[1, skeleton.subtree("spine")] = 0.25
    velocity = blend_velocity(
        [sample(c, skeleton.rest_pose, t) for c, t in zip(clips, times, strict=True)],
        [sample_velocity(c, skeleton, t) for c, t in zip(clips, times, strict=True)],
        weights,
        mask=masks,
        weight_rates=rates,
    )
    h = 1e-7
    reference = pose_velocity(
        blended(layers, weights, rates, -h, masks, skeleton), blended(layers, weights, rates, 0.0, masks, skeleton), h
    )
    np.testing.assert_allclose(velocity.linear, reference.linear, atol=2e-5)
    np.testing.assert_allclose(velocity.angular, reference.angular, atol=2e-5)
    np.testing.assert_allclose(velocity.scaling, reference.scaling, atol=2e-5)


def test_blend_velocity_is_sign_independent():
    rng = np.random.default_rng(3)
    rotations = Rotation.from_rotvec(rng.normal(size=(2, 4, 3)).reshape(-1, 3) * 0.4).as_quat().reshape(2, 4, 4)
    spin = rng.normal(size=(2, 4, 3))
    poses = [Pose(np.zeros((4, 3)), rotations[n], np.ones((4, 3))) for n in range(2)]
    flipped = [poses[0], Pose(np.zeros((4, 3)), -rotations[1], np.ones((4, 3)))]
    velocities = [PoseVelocity(np.zeros((4, 3)), spin[n], np.zeros((4, 3))) for n in range(2)]
    a = blend_velocity(poses, velocities, [0.4, 0.6])
    b = blend_velocity(flipped, velocities, [0.4, 0.6])
    np.testing.assert_allclose(a.angular, b.angular, atol=1e-12)


def test_one_layer_keeps_its_velocity(mannequin):
    skeleton, walk = mannequin.skeleton, mannequin.clips["walk"]
    t = np.array([0.2, 0.6])
    velocity = sample_velocity(walk, skeleton, t)
    out = blend_velocity([sample(walk, skeleton.rest_pose, t)], [velocity], [1.0])
    np.testing.assert_allclose(out.angular, velocity.angular, atol=1e-12)
    np.testing.assert_allclose(out.linear, velocity.linear, atol=1e-12)


def test_blend_velocity_validates(mannequin):
    skeleton, walk = mannequin.skeleton, mannequin.clips["walk"]
    pose, velocity = sample(walk, skeleton.rest_pose, np.array([0.2])), sample_velocity(walk, skeleton, np.array([0.2]))
    with pytest.raises(InvalidInputError, match="weights must have shape"):
        blend_velocity([pose, pose], [velocity, velocity], [1.0])
    with pytest.raises(InvalidInputError, match="positive total"):
        blend_velocity([pose, pose], [velocity, velocity], [0.0, 0.0])
    with pytest.raises(InvalidInputError, match="non-negative"):
        blend_velocity([pose, pose], [velocity, velocity], [-1.0, 2.0])
    with pytest.raises(SkeletonMismatchError, match="mask must have shape"):
        blend_velocity([pose, pose], [velocity, velocity], [0.5, 0.5], mask=np.ones((2, 3)))
    with pytest.raises(InvalidInputError, match="weight_rates"):
        blend_velocity([pose, pose], [velocity, velocity], [0.5, 0.5], weight_rates=[0.0])
    with pytest.raises(InvalidInputError, match="empty"):
        blend_velocity([], [], [])
    with pytest.raises(InvalidInputError, match="finite"):
        blend_velocity([pose, pose], [velocity, velocity], [np.nan, 0.5])


def test_sample_velocity_validates(mannequin):
    with pytest.raises(InvalidInputError, match="step"):
        sample_velocity(mannequin.clips["walk"], mannequin.skeleton, [0.1], step=0.0)
    with pytest.raises(InvalidInputError, match="times"):
        sample_velocity(mannequin.clips["walk"], mannequin.skeleton, [np.inf])
    with pytest.raises(InvalidInputError, match="scaling must be finite"):
        PoseVelocity(np.zeros((2, 3)), np.zeros((2, 3)), np.full((2, 3), np.nan))
    with pytest.raises(InvalidInputError, match="share one shape"):
        PoseVelocity(np.zeros((2, 3)), np.zeros((3, 3)), np.zeros((2, 3)))


def test_additive_velocity_is_the_derivative_of_apply_additive(mannequin):
    skeleton, walk, lean = mannequin.skeleton, mannequin.clips["walk"], mannequin.clips["lean_look"]
    reference = sample(lean, skeleton.rest_pose, 0.0)
    base_times, lean_times = np.array([0.21, 0.43]), np.array([0.37, 1.1])
    weight, mask = np.array([0.7, 1.3]), np.linspace(0.0, 1.0, skeleton.num_joints)

    def added(dt):
        delta = additive_pose(sample(lean, skeleton.rest_pose, lean_times + dt), reference)
        return apply_additive(sample(walk, skeleton.rest_pose, base_times + dt), delta, weight, mask)

    h = 1e-7
    expected = pose_velocity(added(-h), added(0.0), h)
    lean_velocity = sample_velocity(lean, skeleton, lean_times)
    delta_velocity = PoseVelocity(lean_velocity.linear, lean_velocity.angular, lean_velocity.scaling / reference.scales)
    velocity = additive_velocity(
        sample(walk, skeleton.rest_pose, base_times),
        sample_velocity(walk, skeleton, base_times),
        additive_pose(sample(lean, skeleton.rest_pose, lean_times), reference),
        delta_velocity,
        weight,
        mask,
    )
    assert np.abs(velocity.angular).max() > 1.0
    np.testing.assert_allclose(velocity.angular, expected.angular, atol=2e-5)
    np.testing.assert_allclose(velocity.linear, expected.linear, atol=2e-5)
    np.testing.assert_allclose(velocity.scaling, expected.scaling, atol=2e-5)


def test_velocity_table_matches_sampled_velocities(mannequin):
    skeleton = mannequin.skeleton
    for clip in mannequin.clips.values():
        table = velocity_table(clip, skeleton)
        keys = key_times(clip)
        times = np.concatenate(
            [np.linspace(-0.1, clip.duration + 0.1, 41), keys, np.nextafter(keys, -1.0), np.nextafter(keys, 9.0)]
        )
        for side in ("left", "right"):
            for loop in (False, True):
                expected = sample_velocity(clip, skeleton, times, loop=loop, side=side)
                got = table.at(times, loop=loop, side=side)
                np.testing.assert_allclose(got.linear, expected.linear, atol=1e-9)
                np.testing.assert_allclose(got.angular, expected.angular, atol=1e-9)


def test_velocity_table_of_step_and_cubic_channels():
    skeleton = Skeleton(["j"], [-1])
    step = Clip("step", [Channel(0, "translation", "STEP", [0.0, 1.0, 2.0], [[0, 0, 0], [5, 0, 0], [1, 0, 0]])], 1)
    table = velocity_table(step, skeleton)
    assert table is not None
    np.testing.assert_array_equal(table.at([0.5, 1.0, 1.5]).linear, 0.0)  # held between keys
    cubic = Clip("cubic", [Channel(0, "translation", "CUBICSPLINE", [0.0, 1.0], np.zeros((2, 3, 3)))], 1)
    assert velocity_table(cubic, skeleton) is None


def test_sample_with_velocity_is_sample_and_sample_velocity(mannequin):
    walk, skeleton = mannequin.clips["walk"], mannequin.skeleton
    times = np.array([0.0, 0.31, 0.5, 0.97])
    pose, velocity = sample_with_velocity(walk, skeleton, times, loop=True, side="right")
    np.testing.assert_array_equal(pose.rotations, sample(walk, skeleton.rest_pose, times).rotations)
    expected = sample_velocity(walk, skeleton, times, loop=True, side="right")
    np.testing.assert_allclose(velocity.angular, expected.angular, atol=1e-12)
