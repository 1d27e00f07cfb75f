"""Debug lines: geometry of each helper (no GL needed to collect), and one flush that draws."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import perspective
from engine.render import DebugDraw, OffscreenTarget, frustum_corners
from engine.render.debug_draw import AXIS_COLORS
from tests.render.meshes import translation

pytestmark = pytest.mark.gl


def camera_view(rotation: Rotation, position: np.ndarray) -> np.ndarray:
    """World → camera for a camera at ``position`` oriented by ``rotation`` (looks down its −Z)."""
    camera_to_world = np.eye(4)
    camera_to_world[:3, :3] = rotation.as_matrix()
    camera_to_world[:3, 3] = position
    return np.linalg.inv(camera_to_world)


def test_frustum_corners_closed_form():
    fov, aspect, near, far = np.radians(60.0), 1.5, 0.5, 10.0
    rotation, position = Rotation.from_euler("YX", [30, -10], degrees=True), np.array([1.0, 2.0, 3.0])
    corners = frustum_corners(camera_view(rotation, position), perspective(fov, aspect, near, far))
    for index, corner in enumerate(corners):
        depth = far if index & 4 else near
        half_height = depth * np.tan(fov / 2)
        local = [(1 if index & 1 else -1) * half_height * aspect, (1 if index & 2 else -1) * half_height, -depth]
        np.testing.assert_allclose(corner, rotation.apply(local) + position, atol=1e-9)


def test_frustum_draws_twelve_edges_between_the_corners(ctx):
    debug = DebugDraw(ctx)
    view, projection = translation((0.0, 0.0, -1.0)), perspective(1.0, 1.0, 0.1, 5.0)
    debug.frustum(view, projection)
    positions, _ = debug.segments()
    corners = frustum_corners(view, projection)
    assert positions.shape == (12, 2, 3)
    lengths = np.linalg.norm(positions[:, 1] - positions[:, 0], axis=-1)
    assert np.all(lengths > 0)
    for end in positions.reshape(-1, 3):
        assert np.min(np.linalg.norm(corners - end, axis=-1)) < 1e-5
    debug.release()
    with pytest.raises(InvalidInputError, match=r"view and projection must be \(4, 4\)"):
        frustum_corners(np.eye(4)[None], projection)


def test_bones_connect_each_parent_to_its_child(ctx):
    skeleton = Skeleton(["hip", "spine", "head", "leg"], [-1, 0, 1, 0])
    positions = np.array([[0, 1, 0], [0, 1.5, 0], [0, 2, 0], [0.2, 0.5, 0]], dtype=np.float64)
    matrices = np.stack([translation(p) for p in positions])
    debug = DebugDraw(ctx)
    debug.bones(skeleton, matrices, color=(1, 0, 0, 1))
    segments, colors = debug.segments()
    np.testing.assert_allclose(segments, positions[[[0, 1], [1, 2], [0, 3]]], atol=1e-6)
    np.testing.assert_array_equal(colors, np.broadcast_to([1, 0, 0, 1], (3, 2, 4)))
    with pytest.raises(SkeletonMismatchError, match=r"model_matrices must have shape \(\.\.\., 4, 4, 4\)"):
        debug.bones(skeleton, matrices[:3])
    debug.release()


def test_axes_are_the_matrix_columns_in_red_green_blue(ctx):
    rotation = Rotation.from_rotvec([0.3, -0.4, 0.5])
    frame = np.eye(4)
    frame[:3, :3] = rotation.as_matrix()
    frame[:3, 3] = [1, 2, 3]
    debug = DebugDraw(ctx)
    debug.axes(np.stack((frame, np.eye(4))), length=0.5)
    segments, colors = debug.segments()
    assert segments.shape == (6, 2, 3)
    np.testing.assert_allclose(segments[:3, 0], np.broadcast_to([1, 2, 3], (3, 3)), atol=1e-6)
    np.testing.assert_allclose(segments[:3, 1] - segments[:3, 0], 0.5 * rotation.as_matrix().T, atol=1e-6)
    np.testing.assert_allclose(colors[:3, 0], AXIS_COLORS)
    debug.release()


def test_rotation_shows_axis_and_an_arc_sweeping_the_angle(ctx):
    axis, angle, origin, length = np.array([1.0, 2.0, 2.0]) / 3.0, 2.0, np.array([0.5, 0.0, -1.0]), 0.4
    q = Rotation.from_rotvec(axis * angle).as_quat()  # scipy is xyzw too
    debug = DebugDraw(ctx)
    debug.rotation(q, origin, length, segments=16)
    segments, _ = debug.segments()
    assert segments.shape == (1 + 16 + 2, 2, 3)
    np.testing.assert_allclose(segments[0], [origin, origin + length * axis], atol=1e-6)
    arc = np.concatenate((segments[1:17, 0], segments[16:17, 1])) - origin
    np.testing.assert_allclose(arc @ axis, 0.0, atol=1e-6)  # in the plane perpendicular to the axis
    np.testing.assert_allclose(np.linalg.norm(arc, axis=-1), length / 2, atol=1e-6)
    np.testing.assert_allclose(Rotation.from_rotvec(axis * angle).apply(arc[0]), arc[-1], atol=1e-6)
    steps = np.arccos(np.clip(np.einsum("ij,ij->i", arc[:-1], arc[1:]) / (length / 2) ** 2, -1, 1))
    np.testing.assert_allclose(steps, angle / 16, atol=1e-5)  # constant angular steps
    np.testing.assert_allclose(segments[17:, 1] - origin, arc[[0, -1]], atol=1e-6)  # the two spokes
    debug.release()


def test_rotation_of_a_batch_and_of_the_identity(ctx):
    debug = DebugDraw(ctx)
    debug.rotation(np.array([[0, 0, 0, 1.0], [0, 0, np.sin(0.5), np.cos(0.5)]]), segments=4)
    segments, _ = debug.segments()
    assert segments.shape == (2 * (1 + 4 + 2), 2, 3)
    identity_arc = segments[2:6]  # axis lines of both come first, then both arcs
    np.testing.assert_allclose(identity_arc[:, 0], identity_arc[:, 1], atol=1e-7)
    debug.release()


def test_target_is_an_octahedron_with_axes(ctx):
    debug = DebugDraw(ctx)
    debug.target([1.0, 2.0, 3.0], size=0.1)
    segments, _ = debug.segments()
    assert segments.shape == (15, 2, 3)
    np.testing.assert_allclose(np.linalg.norm(segments - [1.0, 2.0, 3.0], axis=-1), 0.1, atol=1e-6)
    debug.release()


def test_bad_input_is_refused(ctx):
    debug = DebugDraw(ctx)
    with pytest.raises(InvalidInputError, match="starts must be finite"):
        debug.lines([[np.nan, 0, 0]], [[1, 0, 0]])
    with pytest.raises(InvalidInputError, match=r"color must be \(4,\) or one RGBA per segment"):
        debug.lines(np.zeros((3, 3)), np.ones((3, 3)), np.ones((2, 4)))
    assert debug.segments()[0].shape == (0, 2, 3)
    debug.release()


@pytest.mark.parametrize("depth_test", [True, False])
def test_flush_draws_every_segment_in_one_call_then_clears(ctx, depth_test):
    debug = DebugDraw(ctx)
    view, projection = translation((0.0, 0.0, -2.0)), perspective(np.radians(60.0), 1.0, 0.1, 10.0)
    for k in range(300):  # more than the first buffer holds
        debug.lines([-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], (1.0, 0.0, 0.0, 1.0) if k % 2 else (0.0, 1.0, 0.0, 1.0))
    debug.lines([0.0, -1.0, 0.0], [0.0, 1.0, 0.0], (0.0, 0.0, 1.0, 1.0))
    with OffscreenTarget(ctx, (33, 33)) as target:
        target.clear()
        debug.flush(view, projection, depth_test=depth_test)
        image = target.read()
    assert debug.segments()[0].shape == (0, 2, 3)
    row = image[16, :, :3]
    assert (row.max(axis=-1) > 0).sum() > 20  # the horizontal line crosses the image
    assert image[:, 16, 2].max() == 255  # the vertical blue line
    assert image[2, 2, :3].max() == 0
    debug.release()
