"""Critically damped springs for camera positions and orientations, exact for any time step.

A critically damped spring pulls a value ``x`` with velocity ``v`` towards a target without
overshooting from rest: ``x'' = -2ω·x' - ω²·(x - target)``. ``ω`` is the *stiffness*, the
natural angular frequency in 1/s. Unlike exponential smoothing (:mod:`engine.camera.smoothing`)
it carries a velocity, so the camera starts moving smoothly instead of jerking into motion when
the target jumps.

Each step uses the closed-form solution for a target held fixed over the step,

    e(dt) = (e + (v + ω·e)·dt) · exp(-ω·dt)
    v(dt) = (v - ω·(v + ω·e)·dt) · exp(-ω·dt),        e = x - target,

not an explicit Euler step, which diverges once ``ω·dt`` exceeds 2. The update is therefore
stable for any ``dt``. Two steps of ``dt/2`` equal one step of ``dt``, so a held target is
followed identically at any frame rate.

Orientations use the same solution in the tangent space at the target. The error is the
rotation vector ``e = log(q · target⁻¹)`` (world frame, radians), and the new orientation is
``exp(e) · target``. The state carries the true world angular velocity ``ω`` (rad/s). It is
converted to the error's rate ``ė = J⁻¹(e)·ω`` before the step and back with ``ω = J(e)·ė`` after
it, where ``J`` is the left Jacobian of SO(3). While the error stays under π radians the round
trip through ``log``/``exp`` is exact, so the same step-size independence holds.

The half-life of a spring is the time it takes, starting at rest, to close half the gap:
``(1 + ω·h)·exp(-ω·h) = 1/2``, so ``ω = SPRING_HALF_LIFE_FACTOR / h`` with the factor ≈ 1.678.

Examples
--------
>>> import numpy as np
>>> x, v = spring_position([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 0.5, half_life=0.5)
>>> np.round(x, 12) + 0.0                       # half the gap closed after one half-life
array([0.5, 0. , 0. ])
>>> x2, v2 = spring_position([0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0], 0.25, half_life=0.5)
>>> x2, v2 = spring_position(x2, v2, [1.0, 0.0, 0.0], 0.25, half_life=0.5)
>>> bool(np.allclose(x2, x) and np.allclose(v2, v))  # two half steps == one step
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.camera._params import check_dt, rate
from engine.math import quat_conjugate, quat_from_rotvec, quat_multiply, rotvec_from_quat
from engine.math._checks import FloatArray, as_array

#: ``x`` solving ``(1 + x)·exp(-x) = 1/2``: a critically damped spring's stiffness times its half-life.
SPRING_HALF_LIFE_FACTOR = 1.6783469900166608


def spring_stiffness_from_half_life(half_life: Any) -> FloatArray:
    """Spring stiffness ``ω`` (1/s) that closes half the gap from rest in ``half_life`` seconds."""
    return rate(None, half_life, half_life_factor=SPRING_HALF_LIFE_FACTOR)


#: Below this angle (radians) the Jacobian coefficients use their Taylor series.
_SERIES_ANGLE = 1e-3


def _left_jacobian_apply(phi: FloatArray, v: FloatArray, *, inverse: bool) -> FloatArray:
    """``J(φ)·v`` or ``J(φ)⁻¹·v`` for SO(3)'s left Jacobian, rotation vectors ``φ (..., 3)`` under π.

    ``J v = v + (1 - cos θ)/θ² · φ×v + (θ - sin θ)/θ³ · φ×(φ×v)`` and
    ``J⁻¹ v = v - ½ φ×v + (1 - (θ/2)·cot(θ/2))/θ² · φ×(φ×v)``, with ``θ = |φ|``.
    """
    theta = np.linalg.norm(phi, axis=-1, keepdims=True)
    small = theta < _SERIES_ANGLE
    t = np.where(small, 1.0, theta)
    t2 = theta * theta
    if inverse:
        first = np.full_like(theta, -0.5)
        second = np.where(small, 1.0 / 12.0 + t2 / 720.0, (1.0 - 0.5 * t / np.tan(0.5 * t)) / (t * t))
    else:
        first = np.where(small, 0.5 - t2 / 24.0, 2.0 * np.sin(0.5 * t) ** 2 / (t * t))
        second = np.where(small, 1.0 / 6.0 - t2 / 120.0, (t - np.sin(t)) / (t * t * t))
    cross = np.cross(phi, v)
    return v + first * cross + second * np.cross(phi, cross)


def _critical_step(
    error: FloatArray, velocity: FloatArray, omega: FloatArray, dt: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Advance ``(error, velocity)`` ``(..., 3)`` by ``dt`` under critical damping ``omega``."""
    omega = omega[..., None]
    dt = dt[..., None]
    decay = np.exp(-omega * dt)
    drive = velocity + omega * error
    return (error + drive * dt) * decay, (velocity - omega * drive * dt) * decay


def spring_position(
    position: Any, velocity: Any, target: Any, dt: Any, *, stiffness: Any = None, half_life: Any = None
) -> tuple[FloatArray, FloatArray]:
    """One exact step of a critically damped spring on positions.

    Parameters
    ----------
    position, velocity
        Current positions ``(..., 3)`` (m) and velocities ``(..., 3)`` (m/s).
    target
        Target positions ``(..., 3)``, held fixed over the step.
    dt
        Step ``>= 0`` in seconds, scalar or ``(...)``.
    stiffness, half_life
        Exactly one: ``ω`` in 1/s (``>= 0``), or the half-life in seconds (``> 0``, see the module
        docstring).

    Returns
    -------
    position, velocity
        ``(..., 3)`` each, after the step.

    Raises
    ------
    InvalidInputError
        NaN/inf, a wrong shape, negative ``dt``, or a bad rate.
    """
    position = as_array(position, "position", (3,))
    velocity = as_array(velocity, "velocity", (3,))
    target = as_array(target, "target", (3,))
    omega = rate(stiffness, half_life, half_life_factor=SPRING_HALF_LIFE_FACTOR)
    error, velocity = _critical_step(position - target, velocity, omega, check_dt(dt))
    return target + error, velocity


def spring_rotation(
    orientation: Any, angular_velocity: Any, target: Any, dt: Any, *, stiffness: Any = None, half_life: Any = None
) -> tuple[FloatArray, FloatArray]:
    """One exact step of a critically damped spring on orientations.

    Parameters
    ----------
    orientation
        Current unit quaternions ``(..., 4)``.
    angular_velocity
        World-frame angular velocities ``(..., 3)`` in rad/s (axis × rate).
    target
        Target unit quaternions ``(..., 4)``, held fixed over the step.
    dt, stiffness, half_life
        As :func:`spring_position`.

    Returns
    -------
    orientation, angular_velocity
        ``(..., 4)`` on the same sheet as the input (``dot >= 0``) and ``(..., 3)``.
    """
    q = as_array(orientation, "orientation", (4,))
    angular_velocity = as_array(angular_velocity, "angular_velocity", (3,))
    target = as_array(target, "target", (4,))
    omega = rate(stiffness, half_life, half_life_factor=SPRING_HALF_LIFE_FACTOR)
    error = rotvec_from_quat(quat_multiply(q, quat_conjugate(target)))
    rate_of_error = _left_jacobian_apply(error, angular_velocity, inverse=True)
    error, rate_of_error = _critical_step(error, rate_of_error, omega, check_dt(dt))
    angular_velocity = _left_jacobian_apply(error, rate_of_error, inverse=False)
    out = quat_multiply(quat_from_rotvec(error), target)
    return np.where(np.sum(out * q, axis=-1, keepdims=True) < 0, -out, out), angular_velocity
