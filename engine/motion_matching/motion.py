"""The characters' roots in the world: the database's root track as it plays, and the pull toward the simulation.

A controller plays the database's frames in root space (the root at the origin facing ``+Z``), so
the character's root in the world is its own state, moved each frame by

- the **track's keyed travel**: the database's root track (``root_positions``, ``root_yaws``),
  linear between frames as the LINEAR clip plays the pose, from the clip time before the frame
  to the time after (:func:`track_travel`: the planar delta of :mod:`engine.anim.rootmotion`),
- the **transition stage's correction**: after a switch the root velocity's offset (the old
  frame's minus the new one's) decays with the pose's curve, its exact integral added
  (:meth:`engine.player.transitions.TransitionStage.travel`), so the root's velocity is
  continuous through a switch,
- the **adjustment** toward the simulated (desired) root (:func:`adjust_roots`, Holden's
  "adjustment by velocity"): the offset closes with a half-life, by at most ``ratio`` times the
  distance the animation moved the root this frame (a standing character is not dragged).

Planar velocities are ``(vx, vz, yaw rate)`` in the root's own axes, as the player's captures
hold them (:class:`engine.player.Capture`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.rootmotion import Planar
from engine.camera.smoothing import smoothing_alpha
from engine.math._checks import FloatArray, IntArray
from engine.motion_matching.database import Database
from engine.motion_matching.trajectory import wrapped_angle


def _segments(database: Database, frames: FloatArray, ranges: IntArray, leaving: Any) -> tuple[IntArray, FloatArray]:
    """The segments ``[i, i + 1]`` holding fractional frames ``frames`` ``(C,)``: their first frames, and the fractions.

    On a frame exactly, the segment before it (the motion arriving) or, where ``leaving``, after it.
    Segments stay within each character's range ``ranges`` ``(C,)``.
    """
    low = database.range_starts[ranges]
    high = database.range_stops[ranges] - 2
    first = np.where(leaving, np.floor(frames), np.ceil(frames) - 1.0)
    index = np.clip(first, low, high).astype(np.intp)
    return index, frames - index


def track_at(database: Database, frames: FloatArray, ranges: IntArray) -> Planar:
    """The root track's planar transforms at fractional frames ``frames`` ``(C,)`` of ranges ``ranges`` ``(C,)``."""
    index, fraction = _segments(database, frames, ranges, True)
    yaws, positions = database.root_yaws, database.root_positions
    yaw = yaws[index] + fraction * (yaws[index + 1] - yaws[index])
    position = positions[index] + fraction[:, None] * (positions[index + 1] - positions[index])
    return Planar(yaw, position[:, 2] + 1j * position[:, 0])


def track_travel(database: Database, before: FloatArray, after: FloatArray, ranges: IntArray) -> Planar:
    """The track's planar delta ``(C,)`` from fractional frames ``before`` to ``after``, in the first root's frame."""
    return track_at(database, before, ranges).inverse().then(track_at(database, after, ranges))


def track_velocity(database: Database, frames: FloatArray, ranges: IntArray, *, leaving: Any) -> FloatArray:
    """``(C, 3)`` the track's planar velocity ``(vx, vz, yaw rate)`` at fractional frames ``frames``, root axes.

    The velocity of the segment arriving at each frame, or leaving it where ``leaving``
    (scalar or ``(C,)``), expressed in the axes of the root at ``frames``.
    """
    index, _ = _segments(database, frames, ranges, leaving)
    step = (database.root_positions[index + 1] - database.root_positions[index]) * database.fps
    turn = (database.root_yaws[index + 1] - database.root_yaws[index]) * database.fps
    heading = track_at(database, frames, ranges).yaw
    local = (step[:, 2] + 1j * step[:, 0]) * np.exp(-1j * heading)
    return np.stack((local.imag, local.real, turn), axis=-1)


def move_roots(positions: FloatArray, yaws: FloatArray, translation: FloatArray, turn: FloatArray) -> None:
    """Move roots ``positions`` ``(C, 3)``, ``yaws`` ``(C,)`` in place by a planar step in their own frame.

    ``translation`` ``(C, 3)`` is ``(x, ·, z)`` in each root's frame (turned by its yaw into the
    world), then the yaw grows by ``turn`` ``(C,)``: the convention of
    :class:`engine.player.RootMotion`.
    """
    c, s = np.cos(yaws), np.sin(yaws)
    positions[:, 0] += c * translation[:, 0] + s * translation[:, 2]
    positions[:, 2] += -s * translation[:, 0] + c * translation[:, 2]
    yaws += turn


def adjust_roots(
    positions: FloatArray,
    yaws: FloatArray,
    targets: FloatArray,
    target_yaws: FloatArray,
    moved: FloatArray,
    turned: FloatArray,
    dt: float,
    *,
    position_half_life: float,
    yaw_half_life: float,
    ratio: float,
) -> None:
    """Pull roots toward the simulated ones in place, by at most ``ratio`` times this frame's own motion.

    ``targets`` ``(C, 3)`` and ``target_yaws`` ``(C,)`` are the simulated roots, ``moved`` ``(C,)``
    the distance the animation moved each root this frame and ``turned`` ``(C,)`` its turn
    (radians). The gap closes as ``1 − exp(−ln 2 · dt / half_life)`` (exact at any ``dt`` while
    the limit does not bite), horizontally.
    """
    gap = (targets - positions) * [1.0, 0.0, 1.0]
    step = gap * float(smoothing_alpha(dt, half_life=position_half_life))
    length = np.linalg.norm(step, axis=-1)
    limit = ratio * moved
    scale = np.where(length > limit, limit / np.where(length > 0.0, length, 1.0), 1.0)
    positions += step * scale[:, None]
    turn = wrapped_angle(target_yaws - yaws) * float(smoothing_alpha(dt, half_life=yaw_half_life))
    yaws += np.clip(turn, -ratio * np.abs(turned), ratio * np.abs(turned))


def clamp_simulation(
    positions: FloatArray, yaws: FloatArray, roots: FloatArray, root_yaws: FloatArray, distance: float, angle: float
) -> tuple[FloatArray, FloatArray]:
    """Simulated roots kept within ``distance`` (horizontally) and ``angle`` radians of the characters' roots.

    Returns new ``(C, 3)`` positions and ``(C,)`` yaws: a request the data cannot follow does not
    run away from the character.
    """
    gap = (positions - roots) * [1.0, 0.0, 1.0]
    length = np.linalg.norm(gap, axis=-1)
    scale = np.where(length > distance, distance / np.where(length > 0.0, length, 1.0), 1.0)
    clamped = positions - gap + gap * scale[:, None]
    turn = wrapped_angle(yaws - root_yaws)
    return clamped, yaws - turn + np.clip(turn, -angle, angle)
