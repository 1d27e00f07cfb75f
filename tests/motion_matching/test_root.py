"""The root track: smoothing, facing, extension past a range's end, poses in root space."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim.humanoid import find_humanoid
from engine.anim.local_to_model import model_from_pose
from engine.anim.sampling import sample
from engine.errors import DegenerateInputError, InvalidInputError
from engine.motion_matching.root import (
    RootTrack,
    extend_track,
    gaussian_smooth,
    rest_forward,
    root_track,
    to_root_space,
    yaw_quaternions,
)


def test_smoothing_keeps_straight_lines_to_the_last_frame() -> None:
    t = np.arange(50.0)[:, None]
    line = np.hstack((3.0 * t - 2.0, -0.5 * t, np.full_like(t, 7.0)))
    np.testing.assert_allclose(gaussian_smooth(line, 4.0), line, atol=1e-12)


def test_smoothing_damps_a_sine_by_the_kernels_frequency_response() -> None:
    """Inside the signal, frequency f (cycles/sample) is multiplied by Σ w_k cos(2πfk) / Σ w_k, |k| <= ⌈3σ⌉."""
    f, sigma = 1.0 / 40.0, 5.0
    k = np.arange(400.0)
    taps = np.arange(-15.0, 16.0)
    weights = np.exp(-0.5 * (taps / sigma) ** 2)
    gain = np.sum(weights * np.cos(2 * np.pi * f * taps)) / np.sum(weights)
    assert abs(gain - np.exp(-0.5 * (2 * np.pi * f * sigma) ** 2)) < 5e-3  # ≈ the continuous Gaussian's
    smoothed = gaussian_smooth(np.sin(2 * np.pi * f * k)[:, None], sigma)[100:300, 0]
    np.testing.assert_allclose(smoothed, gain * np.sin(2 * np.pi * f * k[100:300]), atol=1e-12)


def test_smoothing_width_zero_is_the_identity_and_bad_widths_are_refused(rng: np.random.Generator) -> None:
    signal = rng.normal(size=(20, 3))
    np.testing.assert_array_equal(gaussian_smooth(signal, 0.0), signal)
    np.testing.assert_array_equal(gaussian_smooth(signal[:1], 5.0), signal[:1])
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(InvalidInputError, match="smoothing width"):
            gaussian_smooth(signal, bad)


def test_smoothing_a_short_signal_reflects_within_it(rng: np.random.Generator) -> None:
    signal = rng.normal(size=(4, 2))
    out = gaussian_smooth(signal, 10.0)  # a kernel far wider than the signal: cut to the signal
    assert out.shape == signal.shape
    assert np.all(np.isfinite(out))


def test_rest_forward_of_the_mannequin_is_plus_z(mannequin) -> None:
    np.testing.assert_allclose(rest_forward(find_humanoid(mannequin.skeleton)), [0.0, 0.0, 1.0], atol=1e-12)


@pytest.mark.assets
def test_rest_forward_of_the_cmu_skeletons_is_plus_z(cmu_sources) -> None:
    for source in cmu_sources:
        if source.name != "16_01":
            forward = rest_forward(find_humanoid(source.skeleton))
            assert forward[2] > 0.99, source.name


def test_root_track_of_hips_walking_a_straight_line_with_sway() -> None:
    """Hips going +X at 1 m/s, swaying ±3 cm and turning ±8° every stride: a straight root facing +X."""
    fps, frames = 60.0, 240
    t = np.arange(frames) / fps
    sway = np.sin(2 * np.pi * 1.0 * t)
    hips = np.stack((t, 0.9 + 0.02 * np.cos(4 * np.pi * t), 0.03 * sway), axis=-1)
    yaw = np.pi / 2 + np.radians(8.0) * sway
    rotations = Rotation.from_rotvec(np.outer(yaw, [0.0, 1.0, 0.0])).as_quat()
    track = root_track(hips, rotations, np.array([0.0, 0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0]), fps)
    assert np.all(track.positions[:, 1] == 0.0)
    inner = slice(60, 180)  # a second from either end: the smoothing is symmetric there
    np.testing.assert_allclose(track.positions[inner, 0], t[inner], atol=1e-9)
    assert np.max(np.abs(track.positions[inner, 2])) < 0.03 * np.exp(-0.5 * (2 * np.pi * 0.2) ** 2) * 1.05
    assert (
        np.max(np.abs(track.yaws[inner] - np.pi / 2)) < np.radians(8.0) * np.exp(-0.5 * (2 * np.pi * 0.3) ** 2) * 1.05
    )


def test_root_track_refuses_hips_facing_straight_up() -> None:
    up = Rotation.from_rotvec([-np.pi / 2, 0.0, 0.0]).as_quat()  # +Z onto +Y
    with pytest.raises(DegenerateInputError, match="frame 1"):
        root_track(
            np.zeros((3, 3)),
            np.stack(([0.0, 0.0, 0.0, 1.0], up, [0.0, 0.0, 0.0, 1.0])),
            np.array([0.0, 0.0, 0.0, 1.0]),
            np.array([0.0, 0.0, 1.0]),
            60.0,
            direction_sigma=0.0,
        )


def test_extend_track_continues_a_circle_exactly() -> None:
    """A root on a circle of radius 2 m turning 0.1 rad a frame continues on the same circle."""
    k = np.arange(30.0)
    yaws = 0.1 * k
    positions = np.stack((2.0 * (1.0 - np.cos(yaws)), np.zeros_like(k), 2.0 * np.sin(yaws)), axis=-1)
    whole = np.arange(45.0)
    longer = extend_track(RootTrack(positions, yaws), 15)
    np.testing.assert_allclose(longer.yaws, 0.1 * whole, atol=1e-12)
    circle = np.stack((2.0 * (1.0 - np.cos(0.1 * whole)), np.zeros_like(whole), 2.0 * np.sin(0.1 * whole)), axis=-1)
    np.testing.assert_allclose(longer.positions, circle, atol=1e-12)
    np.testing.assert_array_equal(extend_track(RootTrack(positions, yaws), 0).positions, positions)
    still = extend_track(RootTrack(positions[:1], yaws[:1]), 3)
    np.testing.assert_array_equal(still.positions, np.repeat(positions[:1], 4, axis=0))


def _check_root_space(skeleton, pose, hips: int) -> None:
    """World = root ∘ root space for every joint but the hips' ancestors, which stand at rest (at the root)."""
    track = RootTrack(np.array([[1.0, 0.0, 2.0], [-3.0, 0.0, 0.5], [0.0, 0.0, 0.0]]), np.array([0.4, -2.0, 3.0]))
    local = to_root_space(skeleton, pose, hips, track)
    above = []
    joint = int(skeleton.parents[hips])
    while joint >= 0:
        above.append(joint)
        joint = int(skeleton.parents[joint])
    body = np.setdiff1d(np.arange(skeleton.num_joints), above)
    world = model_from_pose(skeleton, pose)[:, body][..., :3, 3]
    seen = model_from_pose(skeleton, local)[:, body][..., :3, 3]
    turn = Rotation.from_quat(yaw_quaternions(track.yaws))
    for frame in range(3):
        np.testing.assert_allclose(turn[frame].apply(seen[frame]) + track.positions[frame], world[frame], atol=1e-12)
    for joint in above:
        np.testing.assert_array_equal(local.translations[:, joint], np.tile(skeleton.rest_translations[joint], (3, 1)))
        np.testing.assert_array_equal(local.rotations[:, joint], np.tile(skeleton.rest_rotations[joint], (3, 1)))


def test_to_root_space_puts_the_root_at_the_origin_facing_plus_z(mannequin, turning_source) -> None:
    """The mannequin's turning walk moves its ``root`` joint (above the hips): in root space it stands at rest."""
    skeleton = mannequin.skeleton
    pose = sample(turning_source.clip, skeleton.rest_pose, np.array([0.5, 1.7, 2.9]))
    assert np.ptp(pose.translations[:, 0, 0]) > 0.1  # the source moves the joint above the hips
    _check_root_space(skeleton, pose, find_humanoid(skeleton).roles["hips"])


def test_to_root_space_of_a_skeleton_whose_top_joint_is_the_hips(cmu_sources) -> None:
    source = next(s for s in cmu_sources if s.name == "02_01")
    skeleton = source.skeleton
    hips = find_humanoid(skeleton).roles["hips"]
    assert skeleton.parents[hips] == -1
    _check_root_space(skeleton, sample(source.clip, skeleton.rest_pose, np.array([0.2, 1.1, 2.4])), hips)
