"""The desired trajectory (critically damped springs) and the query vector a search compares.

**The trajectory model.** Each character's *desired* motion is a point on the ground whose
velocity follows the velocity the player asks for, and a facing (a yaw) that follows the facing
asked for, both through the critically damped spring of :mod:`engine.camera.spring` (exact for
any time step): ``spring_position`` on the velocity (its rate is the acceleration) and on the
yaw (its rate the turning rate; the target is the asked yaw the short way round, ``yaw +
wrap(asked − yaw)``; for turns about one axis this is ``spring_rotation`` exactly, its log map
being the angle). The position is the velocity's exact integral: with
``e = v − v_desired``, ``j = a + ω·e`` and ``E = exp(−ω·t)`` the spring's closed form
``v(t) = v_desired + (e + j·t)·E`` integrates to

    x(t) = x + v_desired·t + e·(1 − E)/ω + j·(1 − E·(1 + ω·t))/ω².

:func:`advance_trajectory` steps the model by ``dt``; :func:`predict_trajectory` gives the
positions and yaws it reaches after the database's horizons (the same closed forms, so the
prediction is what the model would do if the request stayed as it is).

**The query** (:func:`query_features`): the pose columns from the current root-space pose
(:func:`~engine.motion_matching.features.pose_features`) and the trajectory columns from the
predicted roots seen from the character's current root
(:func:`~engine.motion_matching.features.trajectory_features`), normalised like the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.pose import Pose
from engine.anim.velocity import PoseVelocity
from engine.camera.spring import spring_position, spring_stiffness_from_half_life
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array
from engine.motion_matching.database import Database
from engine.motion_matching.features import feature_vectors, pose_features, trajectory_features

#: Default half-lives (seconds) of the velocity and facing springs (Holden's simulation: 0.27 s).
VELOCITY_HALF_LIFE = 0.27
FACING_HALF_LIFE = 0.27
#: Below this ``ω·t`` the integral's coefficients use their Taylor series.
_SERIES = 1e-4


@dataclass(frozen=True)
class Trajectory:
    """The desired motion of ``C`` characters.

    Attributes
    ----------
    positions, velocities, accelerations
        ``(C, 3)`` world position on the ground (m), velocity (m/s), acceleration (m/s²).
    yaws, yaw_rates
        ``(C,)`` facing about ``+Y`` (radians, ``0`` facing ``+Z``, not wrapped) and its rate (rad/s).
    """

    positions: FloatArray
    velocities: FloatArray
    accelerations: FloatArray
    yaws: FloatArray
    yaw_rates: FloatArray

    def __post_init__(self) -> None:
        count = np.shape(self.positions)[0] if np.ndim(self.positions) == 2 else -1
        for name, tail in (
            ("positions", (3,)),
            ("velocities", (3,)),
            ("accelerations", (3,)),
            ("yaws", ()),
            ("yaw_rates", ()),
        ):
            value = as_array(getattr(self, name), name, tail)
            if value.shape != (count, *tail):
                raise InvalidInputError(
                    f"a trajectory of {count} characters needs (C, 3) positions, velocities and accelerations and "
                    f"(C,) yaws and yaw_rates; {name} has shape {value.shape}"
                )
            object.__setattr__(self, name, value)

    @classmethod
    def at_rest(cls, positions: Any, yaws: Any) -> Trajectory:
        """Characters standing at ``positions`` ``(C, 3)`` facing ``yaws`` ``(C,)``."""
        p = as_array(positions, "positions", (3,))
        y = as_array(yaws, "yaws")
        if p.ndim != 2 or y.shape != p.shape[:1]:
            raise InvalidInputError(f"positions must be (C, 3) and yaws (C,), got {p.shape} and {y.shape}")
        zeros = np.zeros_like(p)
        return cls(p.copy(), zeros, zeros.copy(), y.copy(), np.zeros_like(y))


def _angles(values: FloatArray) -> FloatArray:
    """Angles ``(...)`` as the first components of 3-vectors ``(..., 3)`` (the spring's shape)."""
    out = np.zeros((*values.shape, 3))
    out[..., 0] = values
    return out


def _displacement(
    velocity: FloatArray, acceleration: FloatArray, target: FloatArray, omega: FloatArray, t: FloatArray
) -> FloatArray:
    """``∫₀ᵗ v`` of the velocity spring (module docstring); ``omega`` ``(C,)``, ``t`` broadcasting ``(..., C)``."""
    x = omega * t
    decay = np.exp(-x)
    small = x < _SERIES
    safe = np.where(small, 1.0, omega)
    first = np.where(small, t * (1.0 - 0.5 * x), -np.expm1(-x) / safe)
    second = np.where(small, t * t * (0.5 - x / 3.0), (-np.expm1(-x) - x * decay) / (safe * safe))
    error = velocity - target
    drive = acceleration + omega[..., None] * error
    return target * t[..., None] + error * first[..., None] + drive * second[..., None]


def _request(state: Trajectory, desired_velocity: Any, desired_yaw: Any) -> tuple[FloatArray, FloatArray]:
    """The request as ``(C, 3)`` ground velocities and ``(C,)`` target yaws, the short way round from ``state``."""
    velocity = as_array(desired_velocity, "desired_velocity", (3,))
    yaw = as_array(desired_yaw, "desired_yaw")
    count = state.positions.shape[0]
    if velocity.shape not in ((3,), (count, 3)) or yaw.shape not in ((), (count,)):
        raise InvalidInputError(
            f"desired_velocity must be (3,) or ({count}, 3) and desired_yaw () or ({count},), got {velocity.shape} "
            f"and {yaw.shape}"
        )
    velocity = np.broadcast_to(velocity, (count, 3)).copy()
    velocity[:, 1] = 0.0  # the trajectory stays on the ground
    return velocity, state.yaws + wrapped_angle(np.broadcast_to(yaw, (count,)) - state.yaws)


def advance_trajectory(
    state: Trajectory,
    desired_velocity: Any,
    desired_yaw: Any,
    dt: Any,
    *,
    velocity_half_life: float = VELOCITY_HALF_LIFE,
    facing_half_life: float = FACING_HALF_LIFE,
) -> Trajectory:
    """``state`` after ``dt`` seconds, the request held: ``desired_velocity`` ``(C, 3)``, ``desired_yaw`` ``(C,)``."""
    velocity, target = _request(state, desired_velocity, desired_yaw)
    step = as_array(dt, "dt")
    if step.shape != () or step < 0:
        raise InvalidInputError(f"dt must be one number of seconds >= 0, got {dt!r}")
    omega = np.broadcast_to(spring_stiffness_from_half_life(velocity_half_life), (velocity.shape[0],))
    times = np.full(velocity.shape[0], float(step))
    moved = state.positions + _displacement(state.velocities, state.accelerations, velocity, omega, times)
    new_velocity, acceleration = spring_position(
        state.velocities, state.accelerations, velocity, step, half_life=velocity_half_life
    )
    yaws, yaw_rates = spring_position(
        _angles(state.yaws), _angles(state.yaw_rates), _angles(target), step, half_life=facing_half_life
    )
    return Trajectory(moved, new_velocity, acceleration, yaws[:, 0], yaw_rates[:, 0])


def predict_trajectory(
    state: Trajectory,
    desired_velocity: Any,
    desired_yaw: Any,
    times: Any,
    *,
    velocity_half_life: float = VELOCITY_HALF_LIFE,
    facing_half_life: float = FACING_HALF_LIFE,
) -> tuple[FloatArray, FloatArray]:
    """Where the model is after each of ``times`` ``(H,)`` seconds: positions ``(C, H, 3)`` and yaws ``(C, H)``."""
    velocity, target = _request(state, desired_velocity, desired_yaw)
    ahead = as_array(times, "times")
    if ahead.ndim != 1 or np.any(ahead < 0):
        raise InvalidInputError(f"times must be a 1-D array of seconds >= 0, got {ahead!r}")
    count = velocity.shape[0]
    omega = np.broadcast_to(spring_stiffness_from_half_life(velocity_half_life), (count,))
    grid = np.broadcast_to(ahead[:, None], (ahead.size, count))  # (H, C)
    positions = state.positions[None] + _displacement(state.velocities, state.accelerations, velocity, omega, grid)
    yaws, _ = spring_position(
        _angles(np.broadcast_to(state.yaws, grid.shape)),
        _angles(np.broadcast_to(state.yaw_rates, grid.shape)),
        _angles(np.broadcast_to(target, grid.shape)),
        grid,
        half_life=facing_half_life,
    )
    return np.ascontiguousarray(np.swapaxes(positions, 0, 1)), np.ascontiguousarray(yaws[..., 0].T)


def wrapped_angle(angle: FloatArray) -> FloatArray:
    """Angles in ``(-π, π]``."""
    return np.pi - np.mod(np.pi - angle, 2.0 * np.pi)


def horizon_times(database: Database) -> FloatArray:
    """The database's trajectory horizons in seconds ``(H,)``."""
    return np.asarray(database.layout.horizons, dtype=np.float64) / database.fps


def query_features(
    database: Database,
    pose: Pose,
    velocity: PoseVelocity,
    root_velocity: Any,
    root_yaw_rate: Any,
    root_position: Any,
    root_yaw: Any,
    future_positions: Any,
    future_yaws: Any,
) -> FloatArray:
    """Normalised query vectors ``(C, D)`` for :func:`~engine.motion_matching.search.search`.

    Parameters
    ----------
    database
        The database searched.
    pose, velocity
        The characters' current local poses ``(C, J)`` in root space and their velocities.
    root_velocity, root_yaw_rate
        ``(C, 3)`` each character's root velocity in root axes, ``(C,)`` its turning rate.
    root_position, root_yaw
        ``(C, 3)``, ``(C,)`` each character's root in the world.
    future_positions, future_yaws
        ``(C, H, 3)``, ``(C, H)`` where the character should be at the horizons
        (:func:`predict_trajectory` at :func:`horizon_times`).
    """
    pose_part = pose_features(database.layout, database.skeleton, pose, velocity, root_velocity, root_yaw_rate)
    trajectory_part = trajectory_features(database.layout, root_position, root_yaw, future_positions, future_yaws)
    return database.normalize(feature_vectors(pose_part, trajectory_part))
