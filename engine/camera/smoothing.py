"""Exponential smoothing of camera orientations and positions, independent of the frame rate.

Each frame, move a fraction ``alpha`` of the remaining way to the target:

- :func:`smooth_rotation`: ``slerp(current, target, alpha)``;
- :func:`smooth_position`: ``current + alpha · (target - current)``;

with ``alpha = 1 - exp(-stiffness · dt)`` (:func:`smoothing_alpha`). For a fixed target the
remaining angle or distance then decays as ``exp(-stiffness · t)`` whatever the frame rate.
``n`` frames of ``dt`` leave ``(1 - alpha)ⁿ = exp(-stiffness · n·dt)``, so 30, 60 and 144 FPS
agree at every common wall time. ``stiffness`` is in 1/s. The same rate can be given as a
``half_life`` in seconds, the time to close half the gap: ``stiffness = ln 2 / half_life``.

Seed 002's smooth follow, ``slerp(current, target, smoothFactor · dt)``, is kept as
:func:`smooth_rotation_naive` / :func:`smooth_position_naive`. It is a **baseline for the
camera experiments only**. After ``n`` frames it leaves ``(1 - s·dt)ⁿ``, which depends on
``dt``: lower frame rates converge faster, and ``s·dt >= 1`` snaps at once.

Examples
--------
>>> import numpy as np
>>> from engine.math import quat_angle, quat_from_axis_angle
>>> start, goal = quat_from_axis_angle([0.0, 1.0, 0.0], [0.0, 1.0])
>>> def run(fps):
...     q = start
...     for _ in range(fps):                      # one second of frames
...         q = smooth_rotation(q, goal, 1.0 / fps, half_life=0.25)
...     return float(quat_angle(q, goal))
>>> [round(run(fps), 9) for fps in (30, 60, 144)]  # 4 half-lives: 1/16 of 1 rad left
[0.0625, 0.0625, 0.0625]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.camera._params import check_dt, check_nonnegative, check_positive, rate
from engine.math import quat_slerp
from engine.math._checks import FloatArray, as_array


def stiffness_from_half_life(half_life: Any) -> FloatArray:
    """Exponential stiffness ``ln 2 / half_life`` (1/s) from half-lives ``> 0`` in seconds."""
    return np.log(2.0) / check_positive(half_life, "half_life")


def half_life_from_stiffness(stiffness: Any) -> FloatArray:
    """Half-life ``ln 2 / stiffness`` (s) from exponential stiffnesses ``> 0`` in 1/s."""
    return np.log(2.0) / check_positive(stiffness, "stiffness")


def smoothing_alpha(dt: Any, *, stiffness: Any = None, half_life: Any = None) -> FloatArray:
    """Per-frame blend factor ``1 - exp(-stiffness · dt)`` in ``[0, 1)``.

    Parameters
    ----------
    dt
        Frame times ``>= 0`` in seconds, scalar or ``(...)``.
    stiffness, half_life
        Exactly one: the rate in 1/s (``>= 0``; 0 never moves), or the half-life in seconds
        (``> 0``).

    Raises
    ------
    InvalidInputError
        Negative or non-finite ``dt``, a bad rate, or both or neither rate given.
    """
    k = rate(stiffness, half_life)
    return -np.expm1(-k * check_dt(dt))


def smooth_rotation(current: Any, target: Any, dt: Any, *, stiffness: Any = None, half_life: Any = None) -> FloatArray:
    """One frame of exponential orientation smoothing: ``slerp(current, target, smoothing_alpha(dt))``.

    Parameters
    ----------
    current, target
        Unit quaternions ``(..., 4)``; the shortest arc is taken.
    dt
        Frame time ``>= 0`` in seconds, scalar or ``(...)``.
    stiffness, half_life
        Exactly one, see :func:`smoothing_alpha`.

    Returns
    -------
    FloatArray
        The new orientations ``(..., 4)``, on the same sheet as ``current`` (``dot >= 0``).
    """
    alpha = smoothing_alpha(dt, stiffness=stiffness, half_life=half_life)
    return quat_slerp(as_array(current, "current", (4,)), as_array(target, "target", (4,)), alpha)


def smooth_position(current: Any, target: Any, dt: Any, *, stiffness: Any = None, half_life: Any = None) -> FloatArray:
    """One frame of exponential position smoothing: ``current + smoothing_alpha(dt) · (target - current)``.

    ``current``, ``target``: positions ``(..., 3)``; the other arguments as :func:`smooth_rotation`.
    """
    current = as_array(current, "current", (3,))
    target = as_array(target, "target", (3,))
    alpha = smoothing_alpha(dt, stiffness=stiffness, half_life=half_life)
    return current + alpha[..., None] * (target - current)


def _naive_t(dt: Any, smooth_factor: Any) -> FloatArray:
    return np.minimum(check_nonnegative(smooth_factor, "smooth_factor") * check_dt(dt), 1.0)


def smooth_rotation_naive(current: Any, target: Any, dt: Any, smooth_factor: Any) -> FloatArray:
    """BASELINE, frame-rate dependent: seed 002's ``slerp(current, target, smooth_factor · dt)``.

    Kept for the camera experiments, to show what :func:`smooth_rotation` fixes. ``t`` is clamped
    to ``[0, 1]`` as the seed's (Unity's) ``Quaternion.Slerp`` does. Do not use it in game code.

    Parameters
    ----------
    current, target
        Unit quaternions ``(..., 4)``.
    dt
        Frame time ``>= 0`` in seconds.
    smooth_factor
        The seed's ``smoothFactor`` (1/s, ``>= 0``).
    """
    t = _naive_t(dt, smooth_factor)
    return quat_slerp(as_array(current, "current", (4,)), as_array(target, "target", (4,)), t)


def smooth_position_naive(current: Any, target: Any, dt: Any, smooth_factor: Any) -> FloatArray:
    """BASELINE, frame-rate dependent: ``lerp(current, target, min(smooth_factor · dt, 1))`` on positions ``(..., 3)``.

    The positional twin of :func:`smooth_rotation_naive`, for the camera experiments only.
    """
    current = as_array(current, "current", (3,))
    target = as_array(target, "target", (3,))
    return current + _naive_t(dt, smooth_factor)[..., None] * (target - current)
