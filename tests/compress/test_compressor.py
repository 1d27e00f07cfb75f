"""The guarantee: no shell vertex moves by more than the tolerance, measured independently (scipy, 27 shell points)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import Channel, Clip, Pose, Skeleton, sample
from engine.compress import CompressedClip, compress_clip, shell_radii
from engine.compress.quantize import ANIMATED, CONSTANT, DEFAULT, ROTATION, TRANSLATION
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import trusted
from tests.compress.conftest import Walk, walk_clip
from tests.compress.reference import shell_displacement
from tests.strategies import skeletons


def displacement(
    skeleton: Skeleton, clip: Clip, compressed: CompressedClip, times: np.ndarray, shell: float = 0.03
) -> np.ndarray:
    """Largest shell-point displacement ``(T, J)`` of the compressed clip against the source, by scipy."""
    radii = np.full(skeleton.num_joints, shell)
    return shell_displacement(
        skeleton, sample(clip, skeleton.rest_pose, times), sample(compressed, skeleton.rest_pose, times), radii
    )


def checked(clip: Clip, compressed: CompressedClip) -> np.ndarray:
    keys = np.unique(np.concatenate([c.times for c in clip.channels]))
    grid = compressed.start + np.arange(compressed.num_samples) / compressed.rate
    return np.unique(np.concatenate((keys, 0.5 * (keys[1:] + keys[:-1]), grid)))


def test_the_walk_holds_the_tolerance_at_every_key_and_midpoint(walking: Walk) -> None:
    times = checked(walking.clip, walking.compressed)
    moved = displacement(walking.skeleton, walking.clip, walking.compressed, times)
    assert moved.max() <= 1e-4
    assert walking.compressed.info["max_error_m"] <= 1e-4
    # the reported bound covers the scipy measure and is tight (a rotation moves the shell by its chord)
    assert moved.max() <= walking.compressed.info["max_error_m"] * (1 + 1e-9)
    assert moved.max() >= 0.5 * walking.compressed.info["max_error_m"]
    assert walking.compressed.info["ratio"] > 10


@pytest.mark.parametrize("fps", [30.0, 60.0, 144.0])
def test_playback_at_any_frame_rate_stays_within_the_tolerance_of_the_source(walking: Walk, fps: float) -> None:
    times = np.arange(0.0, walking.clip.duration, 1.0 / fps)
    moved = displacement(walking.skeleton, walking.clip, walking.compressed, times)
    # between samples the source slerps and the decoder nlerps: they differ far below the tolerance at 60 Hz keys
    assert moved.max() <= 1.05e-4


def test_random_times_and_the_clip_ends_clamp_like_the_source(walking: Walk, rng: np.random.Generator) -> None:
    end = walking.clip.duration
    edges = np.array([0.0, end, np.nextafter(0.0, -1.0), np.nextafter(end, 2 * end), -5.0, end + 5.0])
    samples = walking.compressed.start + np.arange(walking.compressed.num_samples) / walking.compressed.rate
    around = np.concatenate((np.nextafter(samples, -np.inf), np.nextafter(samples, np.inf)))
    times = np.concatenate((edges, around, rng.uniform(0.0, end, 200)))
    moved = displacement(walking.skeleton, walking.clip, walking.compressed, times)
    assert moved.max() <= 1.05e-4
    before, after = (sample(walking.compressed, walking.skeleton.rest_pose, t) for t in (-5.0, end + 5.0))
    first, last = (sample(walking.compressed, walking.skeleton.rest_pose, t) for t in (0.0, end))
    for a, b in ((before, first), (after, last)):
        for x, y in zip(a.arrays(), b.arrays(), strict=True):
            np.testing.assert_array_equal(x, y)


def test_a_looping_clip_decodes_its_last_sample_as_its_first(looping: Walk) -> None:
    compressed = looping.compressed
    assert compressed.loops
    assert compressed.num_stored == compressed.num_samples - 1
    first = sample(compressed, looping.skeleton.rest_pose, 0.0)
    last = sample(compressed, looping.skeleton.rest_pose, compressed.duration)
    for a, b in zip(first.arrays(), last.arrays(), strict=True):
        np.testing.assert_array_equal(a, b)
    times = checked(looping.clip, compressed)
    assert displacement(looping.skeleton, looping.clip, compressed, times).max() <= 1e-4


def test_a_travelling_walk_does_not_loop(walking: Walk) -> None:
    assert not walking.compressed.loops


def test_tracks_are_classified_default_constant_and_animated() -> None:
    skeleton = Skeleton(["a", "b", "c"], [-1, 0, 1], [[0, 0, 0], [0, 0.3, 0], [0, 0.3, 0]])
    times = np.linspace(0.0, 1.0, 31)
    turn = Rotation.from_rotvec(np.outer(np.sin(2 * np.pi * times), [0.0, 0.0, 0.6])).as_quat()
    held = Rotation.from_rotvec([0.3, 0.0, 0.0]).as_quat()
    with trusted():
        channels = (
            Channel(0, "rotation", "LINEAR", times, turn),  # animated
            Channel(1, "rotation", "LINEAR", times, np.tile(held, (31, 1))),  # constant
            Channel(1, "translation", "LINEAR", times, np.tile([0, 0.3, 0], (31, 1))),  # the rest value
        )
    compressed = compress_clip(skeleton, Clip("c", channels, 3))
    assert compressed.kinds[0, ROTATION] == ANIMATED
    assert compressed.kinds[1, ROTATION] == CONSTANT
    assert compressed.kinds[1, TRANSLATION] == DEFAULT
    assert (compressed.kinds[2] == DEFAULT).all()
    played = sample(compressed, skeleton.rest_pose, 0.5)
    np.testing.assert_allclose(np.abs(played.rotations[1] @ held), 1.0, atol=1e-7)


@given(skeletons(min_joints=1, max_joints=5), st.integers(2, 24), st.floats(10.0, 130.0), st.integers(0, 2**31))
def test_random_skeletons_and_clips_hold_the_tolerance(skeleton: Skeleton, keys: int, rate: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    times = np.arange(keys) / rate
    count = skeleton.num_joints
    rest = skeleton.rest_pose
    # smooth random motion about the rest pose: rotations, translations and scales
    phase = rng.uniform(0, 2 * np.pi, (count, 3))
    wave = np.sin(2 * np.pi * times[:, None, None] + phase)  # (K, J, 3)
    rotations = (
        Rotation.from_rotvec(rng.uniform(0.2, 1.5) * wave.reshape(-1, 3))
        * Rotation.from_quat(np.tile(rest.rotations, (keys, 1)))
    ).as_quat()
    translations = np.asarray(rest.translations) + 0.05 * wave
    scales = np.asarray(rest.scales) * (1.0 + 0.05 * wave)
    with trusted():
        channels = []
        for j in range(count):
            channels.append(Channel(j, "rotation", "LINEAR", times, rotations.reshape(keys, count, 4)[:, j]))
            channels.append(Channel(j, "translation", "LINEAR", times, translations[:, j]))
            channels.append(Channel(j, "scale", "LINEAR", times, scales[:, j]))
    clip = Clip("random", tuple(channels), count)
    compressed = compress_clip(skeleton, clip, tolerance=1e-4, shell=0.05)
    moved = displacement(skeleton, clip, compressed, checked(clip, compressed), shell=0.05)
    assert moved.max() <= 1e-4 * (1 + 1e-9)
    assert compressed.info["max_error_m"] <= 1e-4


@pytest.mark.parametrize("interpolation", ["STEP", "CUBICSPLINE"])
def test_step_and_cubic_sources_hold_the_tolerance_at_their_keys(interpolation: str) -> None:
    skeleton = Skeleton(["root", "arm"], [-1, 0], [[0, 1, 0], [0.5, 0, 0]])
    times = np.linspace(0.0, 1.0, 11)
    q = Rotation.from_rotvec(np.outer(np.sin(3 * times), [0, 0, 1.0])).as_quat()
    values = q if interpolation == "STEP" else np.stack((np.zeros_like(q), q, np.zeros_like(q)), axis=1)
    with trusted():
        clip = Clip("c", (Channel(1, "rotation", interpolation, times, values),), 2)
    compressed = compress_clip(skeleton, clip)
    keys = times if interpolation == "STEP" else checked(clip, compressed)
    assert displacement(skeleton, clip, compressed, keys).max() <= 1e-4


def test_keys_off_a_grid_get_a_grid_that_holds_them() -> None:
    skeleton = Skeleton(["root", "arm"], [-1, 0], [[0, 1, 0], [0.5, 0, 0]])
    times = np.concatenate((np.arange(10) / 24, 9 / 24 + 0.2 + np.arange(10) / 24))  # a 0.2 s gap, as the Fox's Run
    q = Rotation.from_rotvec(np.outer(np.sin(5 * times), [0, 0, 1.0])).as_quat()
    with trusted():
        clip = Clip("gap", (Channel(1, "rotation", "LINEAR", times, q),), 2)
    compressed = compress_clip(skeleton, clip)
    assert compressed.rate == pytest.approx(120.0)
    assert displacement(skeleton, clip, compressed, checked(clip, compressed)).max() <= 1e-4


def test_a_static_clip_and_a_clip_without_channels() -> None:
    skeleton = Skeleton(["root", "arm"], [-1, 0], [[0, 1, 0], [0.5, 0, 0]])
    with trusted():
        held = Clip("held", (Channel(1, "rotation", "LINEAR", [0.5], [[0, 0, 0.6, 0.8]]),), 2)
    for clip in (held, Clip("empty", (), 2)):
        compressed = compress_clip(skeleton, clip)
        assert compressed.num_samples == 1
        pose = sample(compressed, skeleton.rest_pose, [0.0, 3.0])
        expected = sample(clip, skeleton.rest_pose, [0.0, 3.0])
        np.testing.assert_allclose(pose.rotations, expected.rotations, atol=1e-7)


def test_a_larger_tolerance_compresses_more_and_a_mesh_shell_counts(walking: Walk) -> None:
    loose = compress_clip(walking.skeleton, walking.clip, tolerance=1e-3)
    assert loose.nbytes < walking.compressed.nbytes
    assert loose.info["max_error_m"] <= 1e-3
    wide = compress_clip(walking.skeleton, walking.clip, effectors={"LeftHand": 0.3, "RightHand": 0.3})
    assert wide.nbytes > walking.compressed.nbytes
    times = checked(walking.clip, wide)
    radii = shell_radii(walking.skeleton, effectors={"LeftHand": 0.3, "RightHand": 0.3})
    moved = shell_displacement(
        walking.skeleton,
        sample(walking.clip, walking.skeleton.rest_pose, times),
        sample(wide, walking.skeleton.rest_pose, times),
        radii,
    )
    assert moved.max() <= 1e-4


def test_metres_per_unit_scales_the_tolerance(walking: Walk) -> None:
    centimetres = Skeleton(
        walking.skeleton.names, walking.skeleton.parents, np.asarray(walking.skeleton.rest_translations) * 100
    )
    with trusted():
        channels = tuple(
            Channel(c.target, c.path, c.interpolation, c.times, c.values * (100 if c.path == "translation" else 1))
            for c in walking.clip.channels
        )
    clip = Clip("cm", channels, walking.clip.num_targets)
    compressed = compress_clip(centimetres, clip, metres_per_unit=0.01)
    assert compressed.info["max_error_m"] <= 1e-4
    assert compressed.info["tolerance_m"] == pytest.approx(1e-4)
    assert abs(compressed.nbytes - walking.compressed.nbytes) < 0.1 * walking.compressed.nbytes


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tolerance": 0.0}, "tolerance must be a positive number of metres, got 0.0"),
        ({"tolerance": float("nan")}, "tolerance must be a positive number"),
        ({"shell": -1.0}, "shell radius must be a positive number of metres, got -1.0"),
        ({"metres_per_unit": 0}, "metres_per_unit must be a positive number"),
        ({"effectors": {"LeftHand": 0.0}}, "effector 'LeftHand' radius must be a positive number"),
    ],
)
def test_bad_settings_are_refused(walking: Walk, kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        compress_clip(walking.skeleton, walking.clip, **kwargs)


def test_mismatched_skeletons_and_unknown_effectors_are_refused(walking: Walk) -> None:
    with pytest.raises(SkeletonMismatchError, match="no joint named 'Tail'"):
        compress_clip(walking.skeleton, walking.clip, effectors={"Tail": 0.1})
    small = Skeleton(["a"], [-1])
    with pytest.raises(SkeletonMismatchError, match="clip 'walk' animates 38 targets but the skeleton has 1 joints"):
        compress_clip(small, walking.clip)


def test_a_tolerance_below_float32_precision_is_refused_with_a_reason() -> None:
    skeleton, clip = walk_clip(30.0, 0.5)
    with pytest.raises(
        InvalidInputError, match=r"the tolerance cannot be met at joint .*: every track above it is at full precision"
    ):
        compress_clip(skeleton, clip, tolerance=1e-12)


def test_compression_is_deterministic() -> None:
    skeleton, clip = walk_clip(30.0, 0.5)
    a, b = compress_clip(skeleton, clip), compress_clip(skeleton, clip)
    assert a.words.tobytes() == b.words.tobytes()
    assert a.info == b.info


def test_decoded_poses_have_unit_rotations(walking: Walk, rng: np.random.Generator) -> None:
    pose = sample(walking.compressed, walking.skeleton.rest_pose, rng.uniform(0, 1, 50))
    np.testing.assert_allclose(np.linalg.norm(pose.rotations, axis=-1), 1.0, atol=1e-12)
    assert isinstance(pose, Pose)
