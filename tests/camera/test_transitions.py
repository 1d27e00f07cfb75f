"""CameraSequence: keys hit, C¹ through intermediate viewpoints (non-uniform squad + Hermite), cuts, holds, easing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation, Slerp

from engine.camera import EASINGS, CameraSequence, ease
from engine.errors import InvalidInputError
from engine.math import quat_angle, quat_conjugate, quat_multiply, quat_squad, rotvec_from_quat, squad_control_points
from tests.helpers import assert_quat_allclose

H = 1e-6


def random_keys(seed: int, count: int = 5) -> tuple[np.ndarray, np.ndarray]:
    positions = np.random.default_rng(seed).normal(size=(count, 3)) * 3
    rotations = Rotation.from_rotvec(np.random.default_rng(seed + 1).normal(size=(count, 3)) * 0.7).as_quat()
    return positions, rotations


def one_sided_velocities(seq: CameraSequence, t: float) -> tuple[np.ndarray, ...]:
    """Linear and world angular velocity just before and just after ``t`` (finite differences)."""
    p, q = seq.sample(np.array([t - H, t, t + H]))
    w_left = rotvec_from_quat(quat_multiply(q[1], quat_conjugate(q[0]))) / H
    w_right = rotvec_from_quat(quat_multiply(q[2], quat_conjugate(q[1]))) / H
    return (p[1] - p[0]) / H, (p[2] - p[1]) / H, w_left, w_right


@given(st.lists(st.floats(0.2, 3.0), min_size=2, max_size=5), st.integers(0, 1000))
def test_c1_through_intermediate_viewpoints_with_unequal_durations(durations, seed):
    positions, rotations = random_keys(seed, len(durations) + 1)
    times = np.concatenate(([0.0], np.cumsum(durations)))
    seq = CameraSequence.from_keys(times, positions, rotations)
    for t in times[1:-1]:
        v_left, v_right, w_left, w_right = one_sided_velocities(seq, t)
        np.testing.assert_allclose(v_left, v_right, atol=2e-3 * (1 + np.abs(v_left).max()))
        np.testing.assert_allclose(w_left, w_right, atol=2e-3 * (1 + np.abs(w_left).max()))


def test_slerp_and_linear_modes_are_only_c0():
    positions, rotations = random_keys(3)
    times = np.array([0.0, 1.0, 1.5, 3.5, 4.0])
    seq = CameraSequence.from_keys(times, positions, rotations, rotation="slerp", path="linear")
    v_left, v_right, w_left, w_right = one_sided_velocities(seq, 1.0)
    assert np.abs(v_left - v_right).max() > 0.1
    assert np.abs(w_left - w_right).max() > 0.1


@given(st.integers(0, 1000))
def test_keys_are_hit_exactly_and_intermediate_samples_are_unit(seed):
    positions, rotations = random_keys(seed)
    times = np.array([0.0, 0.5, 2.0, 2.2, 4.0])
    seq = CameraSequence.from_keys(times, positions, rotations)
    p, q = seq.sample(times)
    np.testing.assert_allclose(p, positions, atol=1e-12)
    assert_quat_allclose(q, rotations, atol=1e-12)
    _, inside = seq.sample(np.linspace(0.0, 4.0, 101))
    np.testing.assert_allclose(np.linalg.norm(inside, axis=-1), 1.0, atol=1e-12)


def test_equal_durations_reduce_to_classic_squad_control_points():
    positions, rotations = random_keys(11, 6)
    seq = CameraSequence.from_keys(np.arange(6.0), positions, rotations)
    control = squad_control_points(seq.orientations)
    _, q = seq.sample(np.array([0.3, 2.7, 4.5]))
    keys = seq.orientations
    expected = quat_squad(keys[[0, 2, 4]], keys[[1, 3, 5]], control[[0, 2, 4]], control[[1, 3, 5]], [0.3, 0.7, 0.5])
    assert_quat_allclose(q, expected, atol=1e-12)


def test_linear_modes_match_lerp_and_scipy_slerp():
    positions, rotations = random_keys(5, 3)
    seq = CameraSequence.from_keys([0.0, 1.0, 3.0], positions, rotations, rotation="slerp", path="linear")
    t = np.array([0.25, 1.5, 2.0])
    p, q = seq.sample(t)
    expected_q = Slerp([0.0, 1.0, 3.0], Rotation.from_quat(rotations))(t).as_quat()
    assert_quat_allclose(q, expected_q, atol=1e-12)
    np.testing.assert_allclose(p[0], positions[0] + 0.25 * (positions[1] - positions[0]), atol=1e-12)


def test_cut_jumps_at_its_time_and_splits_the_spline():
    positions, rotations = random_keys(7, 4)
    seq = (
        CameraSequence.start(positions[0], rotations[0])
        .blend_to(positions[1], rotations[1], 2.0)
        .cut_to(positions[2], rotations[2])
        .blend_to(positions[3], rotations[3], 1.0)
    )
    assert seq.duration == 3.0
    p, q = seq.sample(np.array([2.0 - 1e-9, 2.0]))
    np.testing.assert_allclose(p, positions[1:3], atol=1e-7)
    assert_quat_allclose(q, rotations[1:3], atol=1e-7)
    # the shot after the cut ignores the keys before it: same as a sequence that starts there
    alone = CameraSequence.start(positions[2], rotations[2], time=2.0).blend_to(positions[3], rotations[3], 1.0)
    t = np.linspace(2.0, 3.0, 7)
    np.testing.assert_allclose(seq.sample(t)[0], alone.sample(t)[0], atol=1e-12)
    assert_quat_allclose(seq.sample(t)[1], alone.sample(t)[1], atol=1e-12)


def test_hold_is_still_and_blends_ease_into_it():
    positions, rotations = random_keys(9, 3)
    seq = (
        CameraSequence.start(positions[0], rotations[0])
        .blend_to(positions[1], rotations[1], 1.0)
        .hold(2.0)
        .blend_to(positions[2], rotations[2], 1.0)
    )
    p, q = seq.sample(np.linspace(1.0, 3.0, 9))
    np.testing.assert_allclose(p, np.broadcast_to(positions[1], p.shape), atol=1e-12)
    assert_quat_allclose(q, np.broadcast_to(rotations[1], q.shape), atol=1e-12)
    for t in (1.0, 3.0):
        v_left, v_right, w_left, w_right = one_sided_velocities(seq, t)
        for v in (v_left, v_right, w_left, w_right):
            assert np.abs(v).max() < 1e-4  # arrives and leaves at rest: C¹


@pytest.mark.parametrize("name", sorted(EASINGS))
def test_easings_map_the_unit_interval_monotonically(name):
    u = np.linspace(0.0, 1.0, 101)
    eased = ease(name, u)
    assert eased[0] == 0.0
    assert eased[-1] == pytest.approx(1.0, abs=1e-15)
    assert (np.diff(eased) >= 0).all()


def test_smoothstep_blend_starts_and_stops_at_rest():
    positions, rotations = random_keys(13, 2)
    seq = CameraSequence.start(positions[0], rotations[0]).blend_to(positions[1], rotations[1], 2.0, "smoothstep")
    p, q = seq.sample(np.array([0.0, H, 2.0 - H, 2.0]))
    assert np.abs(p[1] - p[0]).max() / H < 1e-4
    assert np.abs(p[3] - p[2]).max() / H < 1e-4
    assert quat_angle(q[0], q[1]) / H < 1e-4
    assert quat_angle(q[2], q[3]) / H < 1e-4
    mid, _ = seq.sample(1.0)
    linear = CameraSequence.start(positions[0], rotations[0]).blend_to(positions[1], rotations[1], 2.0)
    np.testing.assert_allclose(mid, linear.sample(1.0)[0], atol=1e-12)  # smoothstep(½) = ½


def test_times_outside_are_clamped_and_shapes_follow_t():
    positions, rotations = random_keys(17, 3)
    seq = CameraSequence.from_keys([1.0, 2.0, 4.0], positions, rotations)
    p, q = seq.sample(np.array([[-5.0, 1.0], [4.0, 99.0]]))
    assert p.shape == (2, 2, 3)
    assert q.shape == (2, 2, 4)
    np.testing.assert_allclose(p[0], positions[[0, 0]], atol=1e-12)
    np.testing.assert_allclose(p[1], positions[[2, 2]], atol=1e-12)
    single = CameraSequence.start(positions[0], rotations[0])
    assert single.sample(np.zeros(4))[1].shape == (4, 4)


def test_opposite_signs_of_keys_give_the_same_path():
    positions, rotations = random_keys(19, 4)
    flipped = rotations * np.array([1.0, -1.0, 1.0, -1.0])[:, None]
    t = np.linspace(0.0, 3.0, 13)
    a = CameraSequence.from_keys(np.arange(4.0), positions, rotations).sample(t)[1]
    b = CameraSequence.from_keys(np.arange(4.0), positions, flipped).sample(t)[1]
    assert_quat_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda p, q: CameraSequence.from_keys([0.0, 1.0, 1.0], p, q), "strictly increasing"),
        (lambda p, q: CameraSequence.from_keys([0.0, 1.0, 2.0], p, q, easing="bounce"), r"easings\[0\] must be one of"),
        (lambda p, q: CameraSequence.from_keys([0.0, 1.0, 2.0], p, q, rotation="lerp"), "rotation must be one of"),
        (lambda p, q: CameraSequence.from_keys([0.0, 1.0, 2.0], p, q, path="bezier"), "path must be one of"),
        (lambda p, q: CameraSequence.from_keys([0.0, 1.0, 2.0], p[:2], q), r"shapes \(K,\), \(K, 3\), \(K, 4\)"),
        (lambda p, q: CameraSequence.from_keys([0.0, 1.0, 2.0], p, q * 2), "unit quaternions"),
        (lambda p, q: CameraSequence(np.array([0.0, 1.0, 2.0]), p, q, ("blend", "hold"), ("linear",) * 2), "hold"),
        (lambda p, q: CameraSequence(np.array([0.0, 1.0, 2.0]), p, q, ("blend", "cut"), ("linear",) * 2), "cut"),
        (lambda p, q: CameraSequence(np.array([0.0, 1.0, 2.0]), p, q, ("blend", "jump"), ("linear",) * 2), "kinds"),
        (lambda p, q: CameraSequence(np.array([0.0, 1.0, 2.0]), p, q, ("blend",), ("linear",)), "K - 1 = 2"),
        (lambda p, q: CameraSequence.start(p[0], q[0]).blend_to(p[1], q[1], 0.0), "duration must be > 0"),
        (lambda p, q: CameraSequence.start(p[0], q[0]).hold(-1.0), "duration must be > 0"),
        (lambda p, q: CameraSequence.start([np.nan, 0, 0], q[0]), "must be finite"),
    ],
)
def test_bad_sequences_raise(build, match):
    positions, rotations = random_keys(23, 3)
    with pytest.raises(InvalidInputError, match=match):
        build(positions, rotations)


def test_ease_rejects_unknown_names():
    with pytest.raises(InvalidInputError, match="easing must be one of"):
        ease("elastic", 0.5)
