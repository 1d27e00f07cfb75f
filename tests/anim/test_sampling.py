"""sample / sample_channel: glTF STEP, LINEAR and CUBICSPLINE against closed forms, scipy and the spec oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from engine.anim import Channel, Clip, CompiledClip, Pose, Skeleton, compile_clip, sample, sample_channel
from engine.anim.compiled_clip import compiled
from engine.errors import InvalidInputError, SkeletonMismatchError
from tests.helpers import assert_quat_allclose
from tests.reference import interpolate_gltf
from tests.strategies import unit_quaternions


def chain(count: int) -> Skeleton:
    """A chain of ``count`` joints with distinct rest values (to see which joints keep them)."""
    rest_t = np.arange(count * 3, dtype=float).reshape(count, 3)
    rest_r = Rotation.from_rotvec(np.linspace(0.1, 0.5, count * 3).reshape(count, 3)).as_quat()
    rest_s = 1.0 + np.arange(count * 3, dtype=float).reshape(count, 3) / 10
    return Skeleton([f"j{i}" for i in range(count)], np.arange(count) - 1, rest_t, rest_r, rest_s)


def one_channel(channel: Channel) -> tuple[Clip, Skeleton]:
    return Clip("c", [channel], channel.target + 1), chain(channel.target + 1)


# --- closed forms -------------------------------------------------------------------------------


def test_linear_translation_on_and_between_keys() -> None:
    channel = Channel(0, "translation", "LINEAR", [1.0, 2.0, 4.0], [[0, 0, 0], [2, 4, 6], [4, 0, 6]])
    clip, skeleton = one_channel(channel)
    pose = sample(clip, skeleton.rest_pose, [1.0, 1.25, 2.0, 3.0, 4.0])
    expected = [[0, 0, 0], [0.5, 1, 1.5], [2, 4, 6], [3, 2, 6], [4, 0, 6]]
    np.testing.assert_allclose(pose.translations[:, 0], expected, atol=1e-15)


def test_step_holds_the_previous_key() -> None:
    channel = Channel(0, "scale", "STEP", [0.0, 1.0, 2.0], [[1, 1, 1], [2, 2, 2], [3, 3, 3]])
    clip, skeleton = one_channel(channel)
    pose = sample(clip, skeleton.rest_pose, [0.0, 0.999, 1.0, 1.5, 2.0, 7.0])
    np.testing.assert_array_equal(pose.scales[:, 0, 0], [1, 1, 2, 2, 3, 3])


def test_clamps_before_the_first_and_after_the_last_key() -> None:
    for mode in ("STEP", "LINEAR"):
        channel = Channel(0, "translation", mode, [1.0, 3.0], [[1, 2, 3], [4, 5, 6]])
        clip, skeleton = one_channel(channel)
        pose = sample(clip, skeleton.rest_pose, [-100.0, 0.0, 1.0, 3.0, 3.5, 1e9])
        np.testing.assert_array_equal(pose.translations[:, 0], [[1, 2, 3]] * 3 + [[4, 5, 6]] * 3)


def test_cubicspline_reproduces_a_cubic_polynomial_exactly() -> None:
    # Hermite segments whose tangents are f'(t) reproduce any cubic f, whatever the key spacing.
    times = np.array([0.0, 0.3, 1.0, 2.5])

    def f(t: np.ndarray) -> np.ndarray:
        return np.stack((t**3 - 2 * t, 0.5 * t**2 + 1, -(t**3) + t**2 - t + 4), axis=-1)

    def df(t: np.ndarray) -> np.ndarray:
        return np.stack((3 * t**2 - 2, t, -3 * t**2 + 2 * t - 1), axis=-1)

    values = np.stack((df(times), f(times), df(times)), axis=1)
    clip, skeleton = one_channel(Channel(0, "translation", "CUBICSPLINE", times, values))
    t = np.linspace(0.0, 2.5, 41)
    np.testing.assert_allclose(sample(clip, skeleton.rest_pose, t).translations[:, 0], f(t), atol=1e-12)
    # clamped outside, to the key values (not the polynomial)
    outside = sample(clip, skeleton.rest_pose, [-1.0, 3.0]).translations[:, 0]
    np.testing.assert_allclose(outside, f(np.array([0.0, 2.5])), atol=1e-15)


def test_cubicspline_tangents_are_scaled_by_the_key_interval() -> None:
    # One segment of length 2 from 0 to 0 with out-tangent 1 and in-tangent 0: p(u) = 2 (u³ - 2u² + u).
    values = np.array([[[0.0] * 3, [0.0] * 3, [1.0] * 3], [[0.0] * 3, [0.0] * 3, [0.0] * 3]])
    clip, skeleton = one_channel(Channel(0, "scale", "CUBICSPLINE", [0.0, 2.0], values))
    u = np.array([0.25, 0.5, 0.75])
    scales = sample(clip, skeleton.rest_pose, 2 * u).scales[:, 0, 1]
    np.testing.assert_allclose(scales, 2 * (u**3 - 2 * u**2 + u), atol=1e-15)


def test_cubicspline_rotation_output_is_normalised() -> None:
    q0 = Rotation.from_rotvec([0, 0, 0.2]).as_quat()
    q1 = Rotation.from_rotvec([0, 1.0, 0]).as_quat()
    tangent = np.array([0.3, -0.2, 0.5, 0.1])
    values = np.stack(([tangent, q0, tangent], [tangent, q1, -tangent]))
    channel = Channel(0, "rotation", "CUBICSPLINE", [0.0, 1.0], values)
    clip, skeleton = one_channel(channel)
    t = np.linspace(-0.5, 1.5, 21)
    rotations = sample(clip, skeleton.rest_pose, t).rotations[:, 0]
    np.testing.assert_allclose(np.linalg.norm(rotations, axis=-1), 1.0, atol=1e-15)
    expected = [interpolate_gltf(channel.times, channel.values, "CUBICSPLINE", "rotation", x) for x in t]
    np.testing.assert_allclose(rotations, expected, atol=1e-12)


def test_one_key_channels_are_constant() -> None:
    q = Rotation.from_rotvec([0.3, 0.2, 0.1]).as_quat()
    for mode, values in (("STEP", [q]), ("LINEAR", [q]), ("CUBICSPLINE", [[q * 0, q, q * 0]])):
        clip, skeleton = one_channel(Channel(0, "rotation", mode, [0.5], values))
        rotations = sample(clip, skeleton.rest_pose, [-1.0, 0.5, 2.0]).rotations[:, 0]
        np.testing.assert_allclose(rotations, [q] * 3, atol=1e-15)


def test_repeated_key_time_jumps_to_the_later_key() -> None:
    channel = Channel(0, "translation", "LINEAR", [0.0, 1.0, 1.0, 2.0], [[0] * 3, [1] * 3, [5] * 3, [6] * 3])
    clip, skeleton = one_channel(channel)
    np.testing.assert_allclose(sample(clip, skeleton.rest_pose, [0.5, 1.0, 1.5]).translations[:, 0, 0], [0.5, 5, 5.5])


# --- rotations ----------------------------------------------------------------------------------


def test_linear_rotation_matches_scipy_slerp(rng: np.random.Generator) -> None:
    times = np.cumsum(rng.uniform(0.1, 1.0, 8))
    keys = Rotation.random(8, random_state=rng)
    quats = keys.as_quat()
    channel = Channel(0, "rotation", "LINEAR", times, quats)
    clip, skeleton = one_channel(channel)
    t = np.linspace(times[0], times[-1], 97)
    # scipy's Slerp follows the shortest arc between the quaternions as given: flip keys to be sure.
    aligned = quats.copy()
    for k in range(1, len(aligned)):
        if np.dot(aligned[k], aligned[k - 1]) < 0:
            aligned[k] = -aligned[k]
    expected = Slerp(times, Rotation.from_quat(aligned))(t).as_quat()
    assert_quat_allclose(sample(clip, skeleton.rest_pose, t).rotations[:, 0], expected, atol=1e-12)


def test_slerp_takes_the_shortest_arc() -> None:
    a = Rotation.from_rotvec([0, 0, 0.1]).as_quat()
    b = -Rotation.from_rotvec([0, 0, 0.3]).as_quat()  # same rotation as +q, stored in the far hemisphere
    clip, skeleton = one_channel(Channel(0, "rotation", "LINEAR", [0.0, 1.0], [a, b]))
    middle = sample(clip, skeleton.rest_pose, 0.5).rotations[0]
    assert_quat_allclose(middle, Rotation.from_rotvec([0, 0, 0.2]).as_quat(), atol=1e-15)


def test_slerp_of_nearly_equal_keys_moves_with_t() -> None:
    a = Rotation.from_rotvec([0, 0, 1.0]).as_quat()
    b = Rotation.from_rotvec([0, 0, 1.0 + 2e-7]).as_quat()
    clip, skeleton = one_channel(Channel(0, "rotation", "LINEAR", [0.0, 1.0], [a, b]))
    rotations = sample(clip, skeleton.rest_pose, [0.0, 0.25, 1.0]).rotations[:, 0]
    angles = Rotation.from_quat(rotations).as_rotvec()[:, 2]
    np.testing.assert_allclose(angles, [1.0, 1.0 + 0.5e-7, 1.0 + 2e-7], rtol=0, atol=1e-14)


def test_rotation_keys_are_normalised() -> None:
    q = Rotation.from_rotvec([0.2, 0.0, 0.0]).as_quat()
    clip, skeleton = one_channel(Channel(0, "rotation", "STEP", [0.0], [3.0 * q]))
    np.testing.assert_allclose(sample(clip, skeleton.rest_pose, 0.0).rotations[0], q, atol=1e-15)


# --- whole clips ---------------------------------------------------------------------------------


def random_channel(rng: np.random.Generator, target: int, path: str, mode: str) -> Channel:
    count = int(rng.integers(1, 7))
    times = np.sort(rng.choice(np.arange(0, 40) / 8.0, count, replace=False))
    width = 4 if path == "rotation" else 3
    values = rng.normal(size=(count, 3, width) if mode == "CUBICSPLINE" else (count, width))
    return Channel(target, path, mode, times, values)


def reference_pose(clip: Clip, skeleton: Skeleton, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rest = {
        "translation": skeleton.rest_translations,
        "rotation": skeleton.rest_rotations,
        "scale": skeleton.rest_scales,
    }
    out = {path: values.copy() for path, values in rest.items()}
    for c in clip.channels:
        out[c.path][c.target] = interpolate_gltf(c.times, c.values, c.interpolation, c.path, t)
    return out["translation"], out["rotation"], out["scale"]


def test_mixed_clip_matches_the_spec_oracle_on_a_merged_timeline(rng: np.random.Generator) -> None:
    # Channels with unrelated key times: every key of one channel is a merged key for the others.
    skeleton = chain(6)
    channels = []
    for target in range(5):  # joint 5 stays at rest
        for path in ("translation", "rotation", "scale"):
            mode = ("STEP", "LINEAR", "CUBICSPLINE")[int(rng.integers(3))]
            if rng.random() < 0.8:
                channels.append(random_channel(rng, target, path, mode))
    clip = Clip("mixed", channels, 6)
    keys = np.unique(np.concatenate([c.times for c in channels]))
    times = np.concatenate((keys, (keys[:-1] + keys[1:]) / 2, rng.uniform(-1, 6, 50), [-5.0, 100.0]))
    pose = sample(clip, skeleton.rest_pose, times)
    for i, t in enumerate(times):
        translations, rotations, scales = reference_pose(clip, skeleton, float(t))
        np.testing.assert_allclose(pose.translations[i], translations, atol=1e-12, rtol=1e-12)
        assert_quat_allclose(pose.rotations[i], rotations, atol=1e-12)
        np.testing.assert_allclose(pose.scales[i], scales, atol=1e-12, rtol=1e-12)


@given(
    st.lists(unit_quaternions(), min_size=2, max_size=5),
    st.lists(st.floats(0.05, 2.0), min_size=5, max_size=5),
    st.floats(-1.0, 12.0),
)
def test_linear_rotation_property_matches_the_spec(keys: list[np.ndarray], gaps: list[float], t: float) -> None:
    times = np.cumsum(gaps[: len(keys)])
    channel = Channel(1, "rotation", "LINEAR", times, np.stack(keys))
    # a second channel with other key times forces re-keying of the first
    other = Channel(0, "translation", "LINEAR", times[:1] + np.array([0.01, 0.7, 3.3]), np.eye(3))
    clip = Clip("p", [channel, other], 2)
    got = sample(clip, chain(2).rest_pose, t).rotations[1]
    assert_quat_allclose(got, interpolate_gltf(times, channel.values, "LINEAR", "rotation", t), atol=1e-12)


def test_joints_without_channels_keep_their_rest_values() -> None:
    skeleton = chain(4)
    clip = Clip("one", [Channel(2, "rotation", "LINEAR", [0.0, 1.0], [[0, 0, 0, 1], [0, 1, 0, 0]])], 4)
    pose = sample(clip, skeleton.rest_pose, [0.0, 0.5])
    np.testing.assert_array_equal(pose.translations, np.broadcast_to(skeleton.rest_translations, (2, 4, 3)))
    np.testing.assert_array_equal(pose.scales, np.broadcast_to(skeleton.rest_scales, (2, 4, 3)))
    keep = [0, 1, 3]
    np.testing.assert_array_equal(pose.rotations[:, keep], np.broadcast_to(skeleton.rest_rotations[keep], (2, 3, 4)))


def test_clip_without_channels_gives_the_rest_pose() -> None:
    skeleton = chain(3)
    pose = sample(Clip("empty", [], 3), skeleton.rest_pose, 1.0)
    np.testing.assert_array_equal(pose.rotations, skeleton.rest_rotations)


# --- shapes, out=, caching -----------------------------------------------------------------------


def test_scalar_vector_and_grid_times_give_matching_batch_shapes() -> None:
    skeleton = chain(3)
    clip = Clip("c", [Channel(1, "translation", "LINEAR", [0.0, 1.0], [[0] * 3, [1] * 3])], 3)
    assert sample(clip, skeleton.rest_pose, 0.5).shape == (3,)
    assert sample(clip, skeleton.rest_pose, [0.5, 0.7]).shape == (2, 3)
    grid = sample(clip, skeleton.rest_pose, [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    assert grid.shape == (2, 3, 3)
    np.testing.assert_allclose(grid.translations[1, 2, 1], [0.6] * 3)


def test_out_is_filled_in_place_and_returned() -> None:
    skeleton = chain(3)
    clip = Clip("c", [Channel(1, "translation", "LINEAR", [0.0, 1.0], [[0] * 3, [1] * 3])], 3)
    out = Pose(np.zeros((2, 3, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (2, 3, 1)), np.zeros((2, 3, 3)))
    arrays = (out.translations, out.rotations, out.scales)
    result = sample(clip, skeleton.rest_pose, [0.25, 0.75], out=out)
    assert result is out
    assert all(a is b for a, b in zip(arrays, (out.translations, out.rotations, out.scales), strict=True))
    fresh = sample(clip, skeleton.rest_pose, [0.25, 0.75])
    np.testing.assert_array_equal(out.translations, fresh.translations)
    np.testing.assert_array_equal(out.scales, fresh.scales)


def test_sample_channel_matches_sample() -> None:
    channel = Channel(
        3, "rotation", "LINEAR", [0.0, 1.0, 2.0], Rotation.from_rotvec([[0, 0, 0], [1, 0, 0], [1, 1, 0]]).as_quat()
    )
    clip, skeleton = one_channel(channel)
    t = np.array([[-0.5, 0.3], [1.7, 4.0]])
    values = sample_channel(channel, t)
    assert values.shape == (2, 2, 4)
    np.testing.assert_array_equal(values, sample(clip, skeleton.rest_pose, t).rotations[..., 3, :])
    assert sample_channel(channel, 0.3).shape == (4,)


def test_compiled_clip_is_built_once_and_accepted_directly() -> None:
    skeleton = chain(2)
    clip = Clip("c", [Channel(0, "scale", "STEP", [0.0, 1.0], [[1] * 3, [2] * 3])], 2)
    assert compiled(clip) is compiled(clip)
    explicit = compile_clip(clip)
    assert isinstance(explicit, CompiledClip)
    rest = skeleton.rest_pose
    np.testing.assert_array_equal(sample(explicit, rest, 1.5).scales, sample(clip, rest, 1.5).scales)


# --- bad input -----------------------------------------------------------------------------------


def test_clip_for_another_skeleton_is_rejected() -> None:
    clip = Clip("c", [Channel(0, "scale", "STEP", [0.0], [[1] * 3])], 5)
    with pytest.raises(SkeletonMismatchError, match=r"clip 'c' animates 5 targets but the rest pose has 3 joints"):
        sample(clip, chain(3).rest_pose, 0.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, [0.0, np.nan]])
def test_non_finite_times_are_rejected(bad: object) -> None:
    clip = Clip("c", [Channel(0, "scale", "STEP", [0.0], [[1] * 3])], 1)
    with pytest.raises(InvalidInputError, match=r"times must be finite"):
        sample(clip, chain(1).rest_pose, bad)
    with pytest.raises(InvalidInputError, match=r"times must be finite"):
        sample_channel(clip.channels[0], bad)


def test_non_numeric_times_are_rejected() -> None:
    clip = Clip("c", [Channel(0, "scale", "STEP", [0.0], [[1] * 3])], 1)
    with pytest.raises(InvalidInputError, match=r"times must be numeric"):
        sample(clip, chain(1).rest_pose, "soon")


def test_wrong_out_is_rejected() -> None:
    clip = Clip("c", [Channel(0, "scale", "STEP", [0.0], [[1] * 3])], 2)
    with pytest.raises(InvalidInputError, match=r"out must be a Pose or PoseBuffer shaped \(3, 2\) .* got \(2, 2\)"):
        sample(clip, chain(2).rest_pose, [0.0, 1.0, 2.0], out=chain(2).rest_pose.broadcast_to((2,)))
    with pytest.raises(InvalidInputError, match=r"out must be a Pose or PoseBuffer shaped \(2,\) .* got ndarray"):
        sample(clip, chain(2).rest_pose, 0.0, out=np.zeros((2, 3)))  # type: ignore[arg-type]


def test_not_a_clip_or_channel_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match=r"clip must be a Clip or CompiledClip, got dict"):
        sample({}, chain(1).rest_pose, 0.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"channel must be a Channel, got list"):
        sample_channel([], 0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("degrees", [1e-6, 30.0, 120.0, 179.0, 179.999])
def test_slerp_is_exact_for_small_and_wide_arcs(degrees: float) -> None:
    # Wide rotations give 4-D arcs near 90°: the longest the series for sine and cosine must cover.
    a = Rotation.from_rotvec([0.3, -0.2, 0.1]).as_quat()
    b = (Rotation.from_rotvec(np.radians(degrees) * np.array([0.0, 0.6, 0.8])) * Rotation.from_quat(a)).as_quat()
    channel = Channel(0, "rotation", "LINEAR", [0.0, 1.0], [a, b])
    clip, skeleton = one_channel(channel)
    t = np.linspace(0.0, 1.0, 33)
    expected = Slerp([0.0, 1.0], Rotation.from_quat([a, b]))(t).as_quat()
    assert_quat_allclose(sample(clip, skeleton.rest_pose, t).rotations[:, 0], expected, atol=1e-13)
