"""The camera lab's framing scenarios: where a camera points, pure numpy computed once (as the experiments).

:class:`Run` is what every scenario records: one camera's orientations and positions per step.

:func:`cone_run`
    A wandering head camera clamped to a cone around the character's facing: :func:`cone_clamp`
    and :func:`swing_twist_clamp`.
:func:`overhead_run`
    A target flies straight over a camera on a tripod, twice: :func:`look_at` with last frame's
    orientation (continuous) and without (upright, so it flips at the pole).
:func:`transition_runs`
    A cut-scene through five viewpoints, by slerp and by squad (:class:`CameraSequence`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.camera import (
    CameraSequence,
    cone_clamp,
    look_at,
    swing_twist,
    swing_twist_clamp,
)
from engine.math import (
    angle_between,
    quat_angle,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_euler,
    quat_multiply,
    rotvec_from_quat,
)
from engine.math._checks import FloatArray


@dataclass(frozen=True)
class Run:
    """One camera's orientations over a scenario, one row per step (the first at ``t = 0``).

    Attributes
    ----------
    times
        ``(N,)`` seconds, increasing from 0.
    orientations
        ``(N, 4)`` unit quaternions after each step.
    positions
        ``(N, 3)`` camera positions (metres).
    """

    times: FloatArray
    orientations: FloatArray
    positions: FloatArray

    def index(self, t: FloatArray | float) -> np.ndarray:
        """Row shown at times ``t`` (``(...)``): the latest step at or before ``t`` (sample and hold)."""
        rows = np.searchsorted(self.times, np.asarray(t, dtype=float) + 1e-9, side="right") - 1
        return np.clip(rows, 0, len(self.times) - 1)


# --- the cone constraint ---------------------------------------------------------------------------

CONE_RATE = 60
CONE_DURATION = 10.0
CONE_EYE = np.array([0.0, 1.72, 0.2])
"""A head camera just in front of the face of a character standing at the origin, facing +Z."""
CONE_CENTRE = quat_from_axis_angle([0.0, 1.0, 0.0], np.pi)
"""The cone's centre: looking along the character's facing, +Z."""


def wander(t: FloatArray) -> FloatArray:
    """Where the head camera would like to look ``(..., 4)``: yaw ±100°, pitch ±40°, roll ±25° around the centre."""
    yaw = np.radians(100.0) * np.sin(2.0 * np.pi * 0.2 * t)
    pitch = np.radians(40.0) * np.sin(2.0 * np.pi * 0.3 * t + 0.5)
    roll = np.radians(25.0) * np.sin(2.0 * np.pi * 0.5 * t)
    return quat_multiply(CONE_CENTRE, quat_from_euler(np.stack((yaw, pitch, roll), axis=-1), "YXZ"))


@dataclass(frozen=True)
class ConeRun:
    """The cone scene for one pair of limits.

    Attributes
    ----------
    desired, cone, swing_twist
        :class:`Run`: the wandering orientation, it through :func:`cone_clamp` and through
        :func:`swing_twist_clamp`.
    angles
        Degrees ``(N,)`` by series name: ``"desired"`` and ``"cone"`` (rotation angle from the
        centre), ``"desired swing"``, ``"swing"`` and ``"twist"`` (of the swing-twist result).
    """

    limit: float
    twist_limit: float
    desired: Run
    cone: Run
    swing_twist: Run
    angles: dict[str, FloatArray]


def swing_and_twist_angles(orientations: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Swing and twist angles (radians, ``(N,)``) of ``orientations`` relative to :data:`CONE_CENTRE`."""
    swing, twist = swing_twist(quat_multiply(quat_conjugate(CONE_CENTRE), orientations))
    identity = np.array([0.0, 0.0, 0.0, 1.0])
    return quat_angle(swing, identity), quat_angle(twist, identity)


def cone_run(limit: float, twist_limit: float) -> ConeRun:
    """The wander clamped to ``limit`` radians (and ``twist_limit`` of roll for the swing-twist clamp)."""
    times = np.arange(round(CONE_DURATION * CONE_RATE) + 1) / CONE_RATE
    desired = wander(times)
    cone = cone_clamp(desired, CONE_CENTRE, limit)
    limited = swing_twist_clamp(desired, CONE_CENTRE, limit, twist_limit)
    positions = np.broadcast_to(CONE_EYE, (len(times), 3))
    swing, twist = swing_and_twist_angles(limited)
    angles = {
        "desired": quat_angle(desired, CONE_CENTRE),
        "cone": quat_angle(cone, CONE_CENTRE),
        "desired swing": swing_and_twist_angles(desired)[0],
        "swing": swing,
        "twist": twist,
    }
    return ConeRun(
        limit,
        twist_limit,
        Run(times, desired, positions),
        Run(times, cone, positions),
        Run(times, limited, positions),
        {name: np.degrees(a) for name, a in angles.items()},
    )


# --- look-at straight overhead ---------------------------------------------------------------------

OVERHEAD_RATE = 60
OVERHEAD_DURATION = 8.0
TRIPOD = np.array([0.0, 1.2, 0.0])
"""The look-at camera's position."""
FLIGHT_HEIGHT = 5.0
FLIGHT_REACH = 6.0


def drone_position(t: FloatArray | float) -> FloatArray:
    """The flying target ``(..., 3)``: along z from -6 m to +6 m and back, exactly over the tripod at 2 s and 6 s."""
    z = -FLIGHT_REACH * np.cos(2.0 * np.pi * np.asarray(t, dtype=float) / OVERHEAD_DURATION)
    return np.stack((np.zeros_like(z), np.full_like(z, FLIGHT_HEIGHT), z), axis=-1)


@dataclass(frozen=True)
class OverheadRun:
    """The overhead scene: ``tracking`` (look_at with ``previous``) and ``stateless`` runs.

    ``steps`` and ``target_steps``: degrees ``(N - 1,)`` each camera turns, and the direction to
    the target turns, from one step to the next.
    """

    tracking: Run
    stateless: Run
    steps: dict[str, FloatArray]
    target_steps: FloatArray


def overhead_run() -> OverheadRun:
    """Follow the drone with :func:`look_at`, with and without last frame's orientation."""
    times = np.arange(round(OVERHEAD_DURATION * OVERHEAD_RATE) + 1) / OVERHEAD_RATE
    targets = drone_position(times)
    tracking = np.empty((len(times), 4))
    tracking[0] = look_at(TRIPOD, targets[0])
    for k in range(1, len(times)):  # each frame needs the previous orientation
        tracking[k] = look_at(TRIPOD, targets[k], previous=tracking[k - 1])
    stateless = look_at(TRIPOD, targets)
    positions = np.broadcast_to(TRIPOD, (len(times), 3))
    directions = targets - TRIPOD
    return OverheadRun(
        Run(times, tracking, positions),
        Run(times, stateless, positions),
        {
            "tracking": np.degrees(quat_angle(tracking[1:], tracking[:-1])),
            "stateless": np.degrees(quat_angle(stateless[1:], stateless[:-1])),
        },
        np.degrees(angle_between(directions[1:], directions[:-1])),
    )


# --- cut-scene transitions -------------------------------------------------------------------------

TRANSITION_RATE = 60
SUBJECT = np.array([0.0, 1.1, 0.0])
"""The viewpoints look at this point (the character's chest)."""
VIEWPOINTS = np.array([[0.0, 1.6, 4.5], [3.6, 2.6, 2.4], [3.8, 0.7, -2.2], [0.3, 4.4, -3.4], [-3.6, 1.4, -0.8]])
"""Key camera positions around the character."""
BLEND_SECONDS = (1.4, 1.0, 1.6, 1.2, 1.4)
"""Durations of the blends from each viewpoint to the next (the last back to the first)."""
HOLD_SECONDS = 0.8
ROTATIONS = ("slerp", "squad")


def viewpoint_orientations() -> FloatArray:
    """The keys' orientations ``(K, 4)``: looking at :data:`SUBJECT`, the fourth rolled by 25°."""
    views = look_at(VIEWPOINTS, SUBJECT)
    roll = quat_from_axis_angle([0.0, 0.0, 1.0], np.radians([0.0, 0.0, 0.0, 25.0, 0.0]))
    return quat_multiply(views, roll)


def cut_scene(rotation: str) -> CameraSequence:
    """The looping cut-scene: blend through every viewpoint and back to the first, then hold."""
    views = viewpoint_orientations()
    sequence = CameraSequence.start(VIEWPOINTS[0], views[0], rotation=rotation)
    order = [*range(1, len(VIEWPOINTS)), 0]
    for key, seconds in zip(order, BLEND_SECONDS, strict=True):
        sequence = sequence.blend_to(VIEWPOINTS[key], views[key], seconds)
    return sequence.hold(HOLD_SECONDS)


@dataclass(frozen=True)
class TransitionRuns:
    """The cut-scene sampled at :data:`TRANSITION_RATE`, by rotation mode.

    Attributes
    ----------
    runs
        :class:`Run` per rotation mode.
    speeds
        Degrees per second ``(N - 1,)`` the camera turns between samples.
    kinks
        Degrees per second ``(N - 2,)``: how much the angular velocity (a world-frame vector)
        changes from one sample interval to the next; large where the motion is not C¹.
    key_times
        ``(K,)`` seconds at which the sequence passes a viewpoint.
    """

    runs: dict[str, Run]
    speeds: dict[str, FloatArray]
    kinks: dict[str, FloatArray]
    key_times: FloatArray


def transition_runs() -> TransitionRuns:
    """Sample the slerp and squad cut-scenes; their positions are the same spline."""
    runs, speeds, kinks = {}, {}, {}
    for rotation in ROTATIONS:
        sequence = cut_scene(rotation)
        times = np.arange(round(sequence.duration * TRANSITION_RATE) + 1) / TRANSITION_RATE
        positions, orientations = sequence.sample(times)
        runs[rotation] = Run(times, orientations, positions)
        turns = rotvec_from_quat(quat_multiply(orientations[1:], quat_conjugate(orientations[:-1])))
        velocity = np.degrees(turns) * TRANSITION_RATE
        speeds[rotation] = np.linalg.norm(velocity, axis=-1)
        kinks[rotation] = np.linalg.norm(np.diff(velocity, axis=0), axis=-1)
    return TransitionRuns(runs, speeds, kinks, np.array(cut_scene("squad").times))
