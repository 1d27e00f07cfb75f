"""Camera and FollowRig: orbit geometry, pitch limits, the cone relative to the facing, smoothing at any frame rate."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.camera import Camera, FollowRig, orbit_orientation, yaw_pitch_from_forward
from engine.errors import InvalidInputError
from engine.math import perspective, quat_angle, quat_from_axis_angle
from tests.helpers import assert_quat_allclose

FACING_PLUS_Z = np.array([0.0, 0.0, 0.0, 1.0])  # a glTF character faces +Z


@given(st.floats(-np.pi + 1e-3, np.pi - 1e-3), st.floats(-1.5, 1.5))
def test_orbit_orientation_is_intrinsic_yaw_then_pitch_and_round_trips(yaw, pitch):
    q = orbit_orientation(yaw, pitch)
    assert_quat_allclose(q, Rotation.from_euler("YXZ", [yaw, pitch, 0.0]).as_quat())
    back_yaw, back_pitch = yaw_pitch_from_forward(Rotation.from_quat(q).apply([0.0, 0.0, -1.0]))
    assert back_pitch == pytest.approx(pitch, abs=1e-9)
    assert np.angle(np.exp(1j * (back_yaw - yaw))) == pytest.approx(0.0, abs=1e-9)


def test_yaw_pitch_straight_up_is_finite():
    yaw, pitch = yaw_pitch_from_forward([0.0, 1.0 + 1e-15, 0.0])
    assert (yaw, pitch) == (0.0, pytest.approx(np.pi / 2))


def test_rig_places_the_camera_behind_the_pivot_looking_at_it():
    rig = FollowRig(distance=5.0, pivot_offset=(0.0, 1.5, 0.0), yaw=0.7, pitch=-0.4, smoothing="none")
    camera = rig.update(1 / 60, target_position=[2.0, 0.0, -3.0])
    pivot = np.array([2.0, 1.5, -3.0])
    assert np.linalg.norm(camera.position - pivot) == pytest.approx(5.0)
    eye_space = camera.view_matrix() @ np.append(pivot, 1.0)
    np.testing.assert_allclose(eye_space, [0.0, 0.0, -5.0, 1.0], atol=1e-12)  # dead ahead
    assert camera.right[1] == pytest.approx(0.0, abs=1e-12)  # no roll
    assert camera.forward[1] == pytest.approx(np.sin(-0.4))  # pitched down: looking down on the pivot


def test_pitch_limits_hold_whatever_the_input():
    rig = FollowRig(pitch_limits=(-0.5, 0.25), smoothing="none")
    rig.update(1 / 60, np.zeros(3), pitch_input=10.0)
    assert rig.pitch == 0.25
    camera = rig.update(1 / 60, np.zeros(3), pitch_input=-10.0)
    assert rig.pitch == -0.5
    assert camera.forward[1] == pytest.approx(np.sin(-0.5))


def test_cone_keeps_the_view_within_the_limit_of_the_facing_and_stops_windup():
    rig = FollowRig(pitch=0.0, cone_limit=0.5, smoothing="none")
    # yaw π looks along the character's +Z; try to turn a quarter turn away from it
    camera = rig.update(1 / 60, np.zeros(3), FACING_PLUS_Z, yaw_input=np.pi / 2)
    forward_of_character = np.array([0.0, 0.0, 1.0])
    angle = np.arctan2(np.linalg.norm(np.cross(camera.forward, forward_of_character)), camera.forward @ [0, 0, 1])
    assert angle == pytest.approx(0.5, abs=1e-9)
    assert rig.yaw == pytest.approx(np.pi - 0.5)
    camera = rig.update(1 / 60, np.zeros(3), FACING_PLUS_Z, yaw_input=0.1)  # input back acts at once
    angle = np.arctan2(np.linalg.norm(np.cross(camera.forward, forward_of_character)), camera.forward @ [0, 0, 1])
    assert angle == pytest.approx(0.4, abs=1e-9)


def test_cone_follows_the_character_turning():
    rig = FollowRig(pitch=0.0, yaw=np.pi, cone_limit=0.3, smoothing="none")
    facing = quat_from_axis_angle([0.0, 1.0, 0.0], 1.0)  # character turned to +X-ish
    camera = rig.update(1 / 60, np.zeros(3), facing)
    along = Rotation.from_quat(facing).apply([0.0, 0.0, 1.0])
    assert np.arccos(np.clip(camera.forward @ along, -1, 1)) == pytest.approx(0.3, abs=1e-9)


@pytest.mark.parametrize("smoothing", ["exponential", "spring"])
def test_rig_smoothing_is_frame_rate_independent(smoothing):
    results = []
    for fps in (30, 60, 144):
        rig = FollowRig(smoothing=smoothing, rotation_half_life=0.1, position_half_life=0.1)
        rig.update(1 / fps, np.zeros(3))
        rig.yaw += 1.2  # the player flicks the stick once
        for _ in range(fps):  # one second, the character walking to a fixed spot
            camera = rig.update(1 / fps, [3.0, 0.0, -2.0])
        results.append(camera)
    for other in results[1:]:
        assert float(quat_angle(other.orientation, results[0].orientation)) < 1e-9
        np.testing.assert_allclose(other.position, results[0].position, atol=1e-9)


def test_smoothing_lags_and_snap_skips_it():
    rig = FollowRig(pitch=0.0, smoothing="exponential", rotation_half_life=0.2)
    rig.update(1 / 60, np.zeros(3))
    lagging = rig.update(1 / 60, np.zeros(3), yaw_input=1.0)
    assert 0.0 < float(quat_angle(lagging.orientation, orbit_orientation(1.0, 0.0))) < 1.0
    rig.snap()
    snapped = rig.update(1 / 60, np.zeros(3))
    assert float(quat_angle(snapped.orientation, orbit_orientation(1.0, 0.0))) < 1e-12


def test_collision_distance_override():
    rig = FollowRig(distance=6.0, pivot_offset=(0.0, 0.0, 0.0), smoothing="none")
    camera = rig.update(1 / 60, np.zeros(3), distance=1.5)
    assert np.linalg.norm(camera.position) == pytest.approx(1.5)
    assert rig.distance == 6.0


def test_camera_matrices_and_immutability():
    camera = Camera.look_at([0.0, 2.0, 5.0], [0.0, 1.0, 0.0], fov_y=1.0, near=0.5, far=50.0)
    np.testing.assert_allclose(camera.projection_matrix(2.0), perspective(1.0, 2.0, 0.5, 50.0))
    np.testing.assert_allclose(camera.view_projection(2.0), perspective(1.0, 2.0, 0.5, 50.0) @ camera.view_matrix())
    with pytest.raises(dataclasses.FrozenInstanceError):
        camera.near = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        camera.position[0] = 1.0
    moved = camera.with_pose([1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0])
    assert (moved.fov_y, moved.near, moved.far) == (1.0, 0.5, 50.0)


def test_camera_look_at_with_previous_passes_over_the_pole():
    previous = Camera.look_at([0.0, 0.0, 0.0], [0.0, 1.0, -1e-3])
    overhead = Camera.look_at([0.0, 0.0, 0.0], [0.0, 1.0, 0.0], previous=previous)
    beyond = Camera.look_at([0.0, 0.0, 0.0], [0.0, 1.0, 1e-3], previous=overhead)
    assert float(quat_angle(previous.orientation, beyond.orientation)) < 3e-3


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Camera(np.zeros(3), [0.0, 0.0, 0.0, 1.0], fov_y=0.0), "0 < fov_y < π"),
        (lambda: Camera(np.zeros(3), [0.0, 0.0, 0.0, 1.0], near=2.0, far=1.0), "near < far"),
        (lambda: Camera([np.nan, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]), "position must be finite"),
        (lambda: FollowRig(pitch_limits=(0.5, -0.5)), "pitch_limits"),
        (lambda: FollowRig(pitch_limits=(-2.0, 0.5)), "pitch_limits"),
        (lambda: FollowRig(cone_limit=0.0), r"cone_limit must lie in \(0, π\]"),
        (lambda: FollowRig(smoothing="lerp"), "smoothing must be one of"),
        (lambda: FollowRig(rotation_half_life=0.0), "rotation_half_life must be > 0"),
        (lambda: FollowRig(distance=-1.0), "distance must be >= 0"),
        (lambda: FollowRig().update(-0.1, np.zeros(3)), "dt must be >= 0"),
        (lambda: FollowRig().update(0.1, [0.0, np.inf, 0.0]), "target_position must be finite"),
        (lambda: FollowRig().update(0.1, np.zeros(3), distance=-2.0), "distance must be >= 0"),
    ],
)
def test_bad_rig_and_camera_input_raises(make, match):
    with pytest.raises(InvalidInputError, match=match):
        make()
