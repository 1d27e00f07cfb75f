"""Cone constraints: exact clamping onto the cone (not seed 002's fixed nudge), swing-twist, against scipy."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.camera import cone_clamp, swing_twist, swing_twist_clamp
from engine.math import quat_angle, quat_from_axis_angle, quat_multiply, quat_rotate
from tests.helpers import assert_quat_allclose
from tests.strategies import unit_quaternion_arrays, unit_quaternions, unit_vectors

limits = st.floats(1e-3, np.pi)
VIEW = np.array([0.0, 0.0, -1.0])


def relative_rotvec(centre: np.ndarray, q: np.ndarray) -> np.ndarray:
    """scipy: rotation vector of centre⁻¹·q (the rotation from the centre, in its frame)."""
    return (Rotation.from_quat(centre).inv() * Rotation.from_quat(q)).as_rotvec()


def view_angle(a: np.ndarray, b: np.ndarray) -> float:
    fa, fb = Rotation.from_quat(a).apply(VIEW), Rotation.from_quat(b).apply(VIEW)
    return float(np.arctan2(np.linalg.norm(np.cross(fa, fb)), fa @ fb))


@given(unit_quaternions(), unit_vectors(), limits, st.floats(0.0, 1.0), st.booleans())
def test_inside_the_cone_is_returned_unchanged(centre, axis, limit, fraction, flip):
    """Orientations made inside the cone (centre turned by less than ``limit``, either sign) come back as given."""
    q = (Rotation.from_quat(centre) * Rotation.from_rotvec(axis * fraction * (limit - 1e-9))).as_quat()
    q = -q if flip else q
    assert np.linalg.norm(relative_rotvec(centre, q)) < limit
    assert np.array_equal(cone_clamp(q, centre, limit), q)


@given(unit_quaternions(), unit_quaternions(), limits)
def test_outside_lands_exactly_on_the_cone_on_the_great_arc(q, centre, limit):
    before = relative_rotvec(centre, q)
    assume(np.linalg.norm(before) > limit + 1e-6 and np.linalg.norm(before) < np.pi - 1e-6)
    out = cone_clamp(q, centre, limit)
    after = relative_rotvec(centre, out)
    assert abs(np.linalg.norm(after) - limit) < 1e-9  # exactly on the edge
    assert abs(float(quat_angle(centre, out)) - limit) < 1e-9
    # the same axis from the centre: on the great arc from the centre towards q
    np.testing.assert_allclose(after / limit, before / np.linalg.norm(before), atol=1e-9)


def test_seed_style_fixed_nudge_would_fail_the_exactness_check():
    centre = np.array([0.0, 0.0, 0.0, 1.0])
    q = quat_from_axis_angle([0.0, 1.0, 0.0], [0.7, 1.4, 2.8])
    # seed 002: "slerp back inside" by a fixed factor, here 10% of the way back to the centre
    nudged = quat_multiply(centre, quat_from_axis_angle([0.0, 1.0, 0.0], 0.9 * np.array([0.7, 1.4, 2.8])))
    assert np.ptp(quat_angle(centre, nudged)) > 1.0  # lands anywhere, inside or still outside
    np.testing.assert_allclose(quat_angle(centre, cone_clamp(q, centre, 0.5)), 0.5, atol=1e-12)


@given(unit_quaternion_arrays(), unit_quaternions())
def test_limit_pi_allows_everything(q, centre):
    assert np.array_equal(cone_clamp(q, centre, np.pi), q)


def test_tiny_cone_is_still_exact():
    centre = quat_from_axis_angle([1.0, 2.0, 3.0], 0.4)
    q = quat_multiply(centre, quat_from_axis_angle([0.0, 1.0, 0.0], 1e-5))
    np.testing.assert_allclose(quat_angle(centre, cone_clamp(q, centre, 1e-7)), 1e-7, rtol=1e-8)


def test_limits_broadcast_per_camera():
    centre = np.array([0.0, 0.0, 0.0, 1.0])
    q = quat_from_axis_angle([0.0, 1.0, 0.0], [1.0, 1.0, 1.0])
    np.testing.assert_allclose(quat_angle(centre, cone_clamp(q, centre, [0.2, 0.5, 2.0])), [0.2, 0.5, 1.0], atol=1e-12)


@given(unit_quaternions(), unit_vectors())
def test_swing_twist_recomposes_and_splits_as_promised(q, axis):
    swing, twist = swing_twist(q, axis)
    assert_quat_allclose(quat_multiply(swing, twist), q, atol=1e-12)
    assert np.linalg.norm(np.cross(twist[:3], axis)) < 1e-12  # twist about the axis
    assert abs(swing[:3] @ axis) < 1e-12  # swing axis perpendicular to it
    moved = quat_rotate(q, axis)
    swing_angle = float(quat_angle(swing, [0.0, 0.0, 0.0, 1.0]))
    assert abs(swing_angle - np.arctan2(np.linalg.norm(np.cross(axis, moved)), axis @ moved)) < 1e-7


def test_swing_of_half_a_turn_has_identity_twist():
    q = quat_from_axis_angle([1.0, 0.0, 0.0], np.pi)  # flips the view axis over
    swing, twist = swing_twist(q, VIEW)
    assert_quat_allclose(twist, [0.0, 0.0, 0.0, 1.0])
    assert_quat_allclose(swing, q)


@given(unit_quaternions(), unit_quaternions(), limits, st.floats(0.0, np.pi))
def test_swing_twist_clamp_limits_view_cone_and_roll(q, centre, swing_limit, twist_limit):
    out = swing_twist_clamp(q, centre, swing_limit, twist_limit)
    relative_in = Rotation.from_quat(centre).inv() * Rotation.from_quat(q)
    relative_out = Rotation.from_quat(centre).inv() * Rotation.from_quat(out)
    angle_in = view_angle(centre, q)
    angle_out = view_angle(centre, out)
    assume(abs(angle_in - np.pi) > 1e-6)
    if angle_in > swing_limit:
        assert abs(angle_out - swing_limit) < 1e-8
        # the view direction moved along the great circle from the centre's view towards q's
        f_c, f_in, f_out = (relative.apply(VIEW) for relative in (Rotation.identity(), relative_in, relative_out))
        np.testing.assert_allclose(
            np.cross(f_c, f_out) / np.sin(angle_out), np.cross(f_c, f_in) / np.sin(angle_in), atol=1e-7
        )
    else:
        assert abs(angle_out - angle_in) < 1e-9
    _, twist = swing_twist(relative_out.as_quat(), VIEW)
    assert float(quat_angle(twist, [0.0, 0.0, 0.0, 1.0])) <= twist_limit + 1e-9


def test_swing_twist_clamp_with_free_limits_is_identity():
    q = Rotation.random(20, random_state=5).as_quat()
    centre = Rotation.random(random_state=6).as_quat()
    assert np.array_equal(swing_twist_clamp(q, centre, np.pi, np.pi), q)


def test_twist_only_clamp_keeps_the_view_direction():
    roll = quat_from_axis_angle(VIEW, 1.0)
    pitch = quat_from_axis_angle([1.0, 0.0, 0.0], 0.3)
    q = quat_multiply(pitch, roll)
    out = swing_twist_clamp(q, [0.0, 0.0, 0.0, 1.0], swing_limit=1.0, twist_limit=0.25)
    np.testing.assert_allclose(quat_rotate(out, VIEW), quat_rotate(q, VIEW), atol=1e-12)
    assert_quat_allclose(out, quat_multiply(pitch, quat_from_axis_angle(VIEW, 0.25)), atol=1e-12)
    no_roll = swing_twist_clamp(q, [0.0, 0.0, 0.0, 1.0], swing_limit=1.0, twist_limit=0.0)
    assert_quat_allclose(no_roll, pitch, atol=1e-12)
