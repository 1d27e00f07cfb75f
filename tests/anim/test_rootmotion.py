"""Tests of engine.anim.rootmotion against 4×4 rigid transforms built with scipy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton
from engine.anim.clip import Channel, Clip
from engine.anim.events import Loop
from engine.anim.rootmotion import (
    Planar,
    parent_up,
    planar_from_root,
    remove_planar,
    root_motion_delta,
    yaw_from_quat,
)
from engine.animator import Animator
from engine.errors import InvalidInputError
from engine.math import quat_multiply
from tests.helpers import assert_quat_allclose


def matrix(yaw: float, x: float, z: float) -> np.ndarray:
    """Rigid 4×4: rotate by ``yaw`` about +Y, then translate by (x, 0, z)."""
    m = np.eye(4)
    m[:3, :3] = Rotation.from_rotvec([0.0, yaw, 0.0]).as_matrix()
    m[:3, 3] = [x, 0.0, z]
    return m


def as_matrix(p: Planar) -> np.ndarray:
    return matrix(float(p.yaw), float(p.w.imag), float(p.w.real))


def planar(yaw: float, x: float, z: float) -> Planar:
    return Planar(np.float64(yaw), np.complex128(z + 1j * x))


finite = st.floats(-5.0, 5.0)
angle = st.floats(-3.0, 3.0)


@given(angle, finite, finite, angle, finite, finite)
def test_then_and_inverse_match_matrices(y1, x1, z1, y2, x2, z2):
    a, b = planar(y1, x1, z1), planar(y2, x2, z2)
    np.testing.assert_allclose(as_matrix(a.then(b)), matrix(y1, x1, z1) @ matrix(y2, x2, z2), atol=1e-12)
    np.testing.assert_allclose(as_matrix(a.inverse()), np.linalg.inv(matrix(y1, x1, z1)), atol=1e-12)


@given(st.sampled_from([0.0, 1e-12, 0.3, -2.0, np.pi]), finite, finite, st.integers(-7, 7))
def test_power_matches_repeated_products(yaw, x, z, n):
    step = matrix(yaw, x, z)
    expected = np.linalg.matrix_power(step if n >= 0 else np.linalg.inv(step), abs(n))
    np.testing.assert_allclose(as_matrix(planar(yaw, x, z).power(n)), expected, atol=1e-9)


def test_translation_layout():
    np.testing.assert_allclose(planar(0.0, 1.0, 2.0).translation, [1.0, 0.0, 2.0])


@given(angle, st.floats(-1.5, 1.5), st.floats(-1.5, 1.5))
def test_yaw_is_the_twist_about_y(yaw, a, b):
    twist = Rotation.from_rotvec([0.0, yaw, 0.0])
    swing = Rotation.from_rotvec([a, 0.0, b])  # an axis in the XZ plane: no Y component
    q = (twist * swing).as_quat()
    np.testing.assert_allclose(yaw_from_quat(q), yaw, atol=1e-9)
    np.testing.assert_allclose(yaw_from_quat(-q), yaw, atol=1e-9)
    t, r = remove_planar(np.array([1.0, 2.0, 3.0]), q)
    np.testing.assert_allclose(t, [0.0, 2.0, 0.0])
    assert_quat_allclose(r, swing.as_quat(), atol=1e-9)


def test_planar_from_root():
    q = Rotation.from_rotvec([0.0, 0.5, 0.0]).as_quat()
    p = planar_from_root(np.array([1.0, 9.0, 2.0]), q)
    np.testing.assert_allclose(as_matrix(p), matrix(0.5, 1.0, 2.0), atol=1e-12)


def test_root_motion_delta_over_loops_composes_loop_transforms():
    """M(a)⁻¹ · (cumulative path) · M(b), checked against explicit matrix products."""
    first, last = planar(0.1, 0.0, 0.2), planar(0.6, 0.3, 1.4)
    begin, end = planar(0.3, 0.1, 0.9), planar(0.2, 0.05, 0.4)
    loop = np.linalg.inv(as_matrix(first)) @ as_matrix(last)
    for n in (-3, -1, 0, 1, 4):
        delta = root_motion_delta(begin, end, first, last, n)
        power = np.linalg.matrix_power(loop if n >= 0 else np.linalg.inv(loop), abs(n))
        expected = (
            np.linalg.inv(as_matrix(begin))
            @ as_matrix(first)
            @ power
            @ np.linalg.inv(as_matrix(first))
            @ as_matrix(end)
        )
        np.testing.assert_allclose(as_matrix(delta), expected, atol=1e-12)


# --- any up axis in the root's parent space ---------------------------------------------------------

rotations = st.integers(0, 2**32 - 1).map(lambda seed: Rotation.random(random_state=seed))


@given(rotations, angle, st.floats(-1.5, 1.5), st.floats(-1.5, 1.5), finite, finite, finite)
def test_another_up_is_the_y_up_result_seen_through_the_frame(frame, yaw, a, b, x, y, z):
    """A parent space whose up is ``F·Y``: every result is the +Y one carried through ``F``.

    ``F`` is any rotation (its twist about up included), so the plane's coordinates may differ by a
    turn about up: the heading, the travel's length and the translation back in the parent space
    may not.
    """
    q = (Rotation.from_rotvec([0.0, yaw, 0.0]) * Rotation.from_rotvec([a, 0.0, b])).as_quat()
    t = np.array([x, y, z])
    up = frame.apply([0.0, 1.0, 0.0])
    moved_q, moved_t = (frame * Rotation.from_quat(q) * frame.inv()).as_quat(), frame.apply(t)
    np.testing.assert_allclose(yaw_from_quat(moved_q, up), yaw_from_quat(q), atol=1e-9)
    in_place = remove_planar(t, q)
    got = remove_planar(moved_t, moved_q, up)
    np.testing.assert_allclose(got[0], frame.apply(in_place[0]), atol=1e-9)
    assert_quat_allclose(got[1], (frame * Rotation.from_quat(in_place[1]) * frame.inv()).as_quat(), atol=1e-9)
    planar_y, planar_up = planar_from_root(t, q), planar_from_root(moved_t, moved_q, up)
    np.testing.assert_allclose(planar_up.yaw, planar_y.yaw, atol=1e-9)
    np.testing.assert_allclose(abs(planar_up.w), abs(planar_y.w), atol=1e-9)
    np.testing.assert_allclose(planar_up.translation_in(up), frame.apply(planar_y.translation), atol=1e-9)


def test_z_up_below_a_correction_node():
    """CesiumMan's skeleton hangs below a node turned −90° about X: up in the root's parent space is +Z.

    Played in place, a hips joint 0.9 high keeps its 0.9 along +Z, loses its travel across it and its
    turn about +Z (the bug: +Y was assumed, which turned the figure upside down).
    """
    correction = Rotation.from_rotvec([-np.pi / 2, 0.0, 0.0]).as_quat()
    skeleton = Skeleton(["correction", "hips"], [-1, 0], np.zeros((2, 3)), np.array([correction, [0, 0, 0, 1.0]]))
    up = parent_up(skeleton, 1)
    np.testing.assert_allclose(up, [0.0, 0.0, 1.0], atol=1e-15)
    np.testing.assert_allclose(parent_up(skeleton, 0), [0.0, 1.0, 0.0])
    turn = Rotation.from_rotvec([0.0, 0.0, 0.7]) * Rotation.from_rotvec([0.2, 0.0, 0.0])
    t, r = remove_planar(np.array([0.3, -0.4, 0.9]), turn.as_quat(), up)
    np.testing.assert_allclose(t, [0.0, 0.0, 0.9], atol=1e-15)
    assert_quat_allclose(r, Rotation.from_rotvec([0.2, 0.0, 0.0]).as_quat(), atol=1e-12)
    np.testing.assert_allclose(yaw_from_quat(turn.as_quat(), up), 0.7, atol=1e-12)
    p = planar_from_root(np.array([0.3, -0.4, 0.9]), turn.as_quat(), up)
    np.testing.assert_allclose(p.translation_in(up), [0.3, -0.4, 0.0], atol=1e-12)


def test_y_up_is_bit_for_bit_what_it_was():
    """The default up rounds exactly as the +Y-only formulas did (the Animator's and the graph's results unchanged)."""
    q = Rotation.from_rotvec([0.1, 0.8, -0.3]).as_quat()
    t = np.array([0.25, 0.9, -1.5])
    in_place = remove_planar(t, q, (0.0, 1.0, 0.0))
    half = np.arctan2(q[1], q[3])
    assert in_place[0].tolist() == [0.0, 0.9, 0.0]
    np.testing.assert_array_equal(in_place[1], quat_multiply([0.0, -np.sin(half), 0.0, np.cos(half)], q))
    assert planar_from_root(t, q).w == -1.5 + 0.25j


@pytest.mark.parametrize("up", [[0.0, 0.0, 0.0], [np.nan, 1.0, 0.0], [[0.0, 1.0, 0.0]]])
def test_a_bad_up_is_refused(up):
    with pytest.raises(InvalidInputError, match=r"^up"):
        remove_planar(np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), up)


def test_the_animator_takes_root_motion_about_the_roots_parent_up() -> None:
    """A root below a Z-up correction node (CesiumMan's) walking 1 m along the node's X and bobbing along its Z.

    The travel is the 1 m across up, not the bob; the pose plays the root in place but keeps the
    bob (with +Y assumed the walk was the bob's plane: the figure played upside-down in place).
    """
    correction = Rotation.from_euler("x", -90, degrees=True).as_quat()  # the node's +Z is the world's +Y
    rest = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    skeleton = Skeleton(["corrector", "hips"], [-1, 0], rest, rest_rotations=[correction, [0.0, 0.0, 0.0, 1.0]])
    np.testing.assert_allclose(parent_up(skeleton, 1), [0.0, 0.0, 1.0], atol=1e-12)
    times = np.linspace(0.0, 1.0, 11)
    path = np.stack([times, np.zeros_like(times), 1.0 + 0.05 * np.sin(2 * np.pi * times)], axis=1)
    clip = Clip("walk", (Channel(1, "translation", "LINEAR", times, path),), 2)
    animator = Animator(skeleton, root_motion="hips")
    animator.action(clip).set_loop(Loop.ONCE).play()
    animator.update(0.0)
    travelled = np.zeros(3)
    for _ in range(4):
        animator.update(0.25)
        travelled += animator.root_motion.translation[0]
    np.testing.assert_allclose(travelled, [1.0, 0.0, 0.0], atol=1e-9)  # across up: the node's X
    np.testing.assert_allclose(animator.local_pose.translations[0, 1], [0.0, 0.0, 1.0], atol=1e-9)  # bob kept
