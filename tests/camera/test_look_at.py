"""look_at and view matrices: basis, gluLookAt, the poles (seed 002's cross(up, forward) bug), continuity."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.camera import camera_axes, look_at, look_at_matrix, view_matrix
from engine.errors import DegenerateInputError
from engine.math import quat_angle
from tests.helpers import assert_quat_allclose
from tests.strategies import nonzero_vectors, unit_quaternions, unit_vectors, vectors

UP = np.array([0.0, 1.0, 0.0])


def glu_look_at(eye: np.ndarray, center: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The gluLookAt man page's matrix, written out independently: rows s, u, -f, then translate by -eye."""
    f = (center - eye) / np.linalg.norm(center - eye)
    s = np.cross(f, up / np.linalg.norm(up))
    s = s / np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    t = np.eye(4)
    t[:3, 3] = -eye
    return m @ t


def seed_look_at_right(forward: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Seed 002's right vector: normalize(cross(up, forward)), no fallback."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.cross(up, forward)
        return r / np.linalg.norm(r)


@given(vectors(), nonzero_vectors(min_norm=1e-3), unit_vectors())
def test_maps_minus_z_to_direction_and_is_orthonormal(eye, offset, up):
    q = look_at(eye, eye + offset, up)
    matrix = Rotation.from_quat(q).as_matrix()
    np.testing.assert_allclose(matrix @ [0, 0, -1], offset / np.linalg.norm(offset), atol=1e-9)
    np.testing.assert_allclose(matrix.T @ matrix, np.eye(3), atol=1e-12)
    assert np.linalg.det(matrix) == pytest.approx(1.0, abs=1e-12)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-12)
    assert q[3] >= 0.0
    right, screen_up, _ = camera_axes(q)
    if np.linalg.norm(np.cross(offset / np.linalg.norm(offset), up)) > 1e-6:
        assert abs(right @ up) < 1e-9  # no roll: right stays horizontal
        assert screen_up @ up > 0.0  # and upright


@given(vectors(), nonzero_vectors(min_norm=0.1), unit_vectors())
def test_view_matrix_equals_glu_look_at_away_from_the_pole(eye, offset, up):
    assume(np.linalg.norm(np.cross(offset / np.linalg.norm(offset), up)) > 0.05)
    np.testing.assert_allclose(look_at_matrix(eye, eye + offset, up), glu_look_at(eye, eye + offset, up), atol=1e-9)


@given(vectors(), unit_quaternions())
def test_view_matrix_inverts_the_camera_model_matrix(position, orientation):
    model = np.eye(4)
    model[:3, :3] = Rotation.from_quat(orientation).as_matrix()
    model[:3, 3] = position
    np.testing.assert_allclose(view_matrix(position, orientation) @ model, np.eye(4), atol=1e-9)


def test_look_at_straight_down():
    q = look_at([0.0, 5.0, 0.0], [0.0, 0.0, 0.0])
    right, screen_up, forward = camera_axes(q)
    assert np.isfinite(q).all()
    np.testing.assert_allclose(forward, [0, -1, 0], atol=1e-12)
    np.testing.assert_allclose(right, [1, 0, 0], atol=1e-12)  # as if pitched down from facing -Z
    np.testing.assert_allclose(screen_up, [0, 0, -1], atol=1e-12)
    assert np.isnan(seed_look_at_right(np.array([0.0, -1.0, 0.0]), UP)).all()  # what seed 002's look-at gives


def test_look_at_straight_up():
    right, screen_up, forward = camera_axes(look_at([0.0, 0.0, 0.0], [0.0, 2.0, 0.0]))
    np.testing.assert_allclose(forward, [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(right, [1, 0, 0], atol=1e-12)  # as if pitched up from facing -Z
    np.testing.assert_allclose(screen_up, [0, 0, 1], atol=1e-12)


def test_pole_fallback_uses_the_given_heading_and_survives_a_parallel_one():
    right, _, _ = camera_axes(look_at([0.0, 0.0, 0.0], [0.0, -1.0, 0.0], fallback_heading=[1.0, 0.0, 0.0]))
    np.testing.assert_allclose(right, [0, 0, 1], atol=1e-12)  # as if facing +X, pitched down
    q = look_at([0.0, 0.0, 0.0], [0.0, -1.0, 0.0], fallback_heading=[0.0, 1.0, 0.0])  # heading ∥ up
    np.testing.assert_allclose(camera_axes(q)[2], [0, -1, 0], atol=1e-12)


def over_the_pole(azimuth: float, steps: int, offset: float = 0.0) -> np.ndarray:
    """Targets on a vertical half circle from one horizon over the zenith to the other, ``offset`` to the side."""
    angle = np.linspace(0.05, np.pi - 0.05, steps)
    across = np.array([np.cos(azimuth), 0.0, np.sin(azimuth)])
    side = np.array([-np.sin(azimuth), 0.0, np.cos(azimuth)])
    return np.cos(angle)[:, None] * across + np.sin(angle)[:, None] * UP + offset * side


def track(targets: np.ndarray, eye: np.ndarray) -> np.ndarray:
    q, out = None, []
    for target in targets:
        q = look_at(eye, target, previous=q)
        out.append(q)
    return np.array(out)


def angular_steps(targets: np.ndarray, eye: np.ndarray, orientations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = targets - eye
    d = d / np.linalg.norm(d, axis=-1, keepdims=True)
    target_steps = np.arctan2(np.linalg.norm(np.cross(d[1:], d[:-1]), axis=-1), np.sum(d[1:] * d[:-1], axis=-1))
    return quat_angle(orientations[1:], orientations[:-1]), target_steps


@given(st.floats(0.0, 2 * np.pi), st.integers(3, 120), vectors(max_norm=100.0))
def test_target_passing_exactly_overhead_moves_the_camera_continuously(azimuth, steps, eye):
    targets = eye + over_the_pole(azimuth, steps)
    orientations = track(targets, eye)
    assert np.isfinite(orientations).all()
    camera_steps, target_steps = angular_steps(targets, eye, orientations)
    # the camera turns exactly as much as the target direction does: no flip, no spin at the zenith
    np.testing.assert_allclose(camera_steps, target_steps, atol=1e-7)
    np.testing.assert_allclose(camera_axes(orientations)[2], targets - eye, atol=1e-9)


def test_target_hitting_the_zenith_sample_keeps_the_previous_right_vector():
    targets = over_the_pole(0.0, 5)  # odd count: the middle sample is exactly straight up
    targets[2] = UP
    orientations = track(targets, np.zeros(3))
    right = camera_axes(orientations)[0]
    np.testing.assert_allclose(right, np.broadcast_to(right[0], right.shape), atol=1e-12)


def test_without_previous_the_roll_flips_over_the_pole():
    targets = over_the_pole(0.0, 41)
    stateless = look_at(np.zeros(3), targets)
    assert quat_angle(stateless[19], stateless[21]) > 3.0  # upright both sides: a half turn in 2 steps
    assert quat_angle(track(targets, np.zeros(3))[19], track(targets, np.zeros(3))[21]) < 0.16  # with previous


@pytest.mark.parametrize("offset", [0.01, 0.1, 0.5])
def test_target_passing_near_the_pole_stays_upright_and_finite(offset):
    targets = over_the_pole(0.3, 600, offset)
    orientations = track(targets, np.zeros(3))
    assert np.isfinite(orientations).all()
    _, screen_up, forward = camera_axes(orientations)
    np.testing.assert_allclose(forward, targets / np.linalg.norm(targets, axis=-1, keepdims=True), atol=1e-9)
    assert (screen_up @ UP > 0).all()  # a pan-tilt camera: it yaws round, it does not roll over
    camera_steps, target_steps = angular_steps(targets, np.zeros(3), orientations)
    closest = np.arctan2(offset, 1.0)  # nearest angle of the target to the zenith
    assert (camera_steps <= target_steps * (1.0 + 1.05 / closest)).all()  # the keyhole: turn rate ~ 1/closest


def test_previous_breaks_a_tie_towards_upright():
    behind = look_at([0.0, 0.0, 0.0], [0.0, 0.0, 5.0], previous=[0.0, 0.0, 0.0, 1.0])
    assert camera_axes(behind)[1] @ UP > 0.99


def test_eye_equal_to_target_raises_without_previous():
    with pytest.raises(DegenerateInputError, match=r"eye and target must differ.*index \(1,\)"):
        look_at([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]], [[0.0, 0.0, -1.0], [1.0, 2.0, 3.0]])


@given(unit_quaternions(), vectors())
def test_eye_equal_to_target_returns_previous(previous, eye):
    assert_quat_allclose(look_at(eye, eye, previous=previous), previous, atol=1e-12)


def test_batches_broadcast():
    eyes = np.random.default_rng(3).normal(size=(5, 1, 3))
    q = look_at(eyes, np.broadcast_to([0.0, 0.0, 1.0], (1, 4, 3)))
    assert q.shape == (5, 4, 4)
    assert view_matrix(eyes, q).shape == (5, 4, 4, 4)
    assert_quat_allclose(q[2, 1], look_at(eyes[2, 0], [0.0, 0.0, 1.0]), atol=1e-15)
