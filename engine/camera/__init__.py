"""Camera math batched over cameras, plus small objects for game code.

Pure functions take arrays with any leading batch axes ``(...)``: positions ``(..., 3)``,
orientations ``(..., 4)`` (xyzw, camera axes to world, looking down −Z; docs/conventions.md),
times in seconds and angles in radians. Bad input raises :class:`~engine.errors.InvalidInputError`
or :class:`~engine.errors.DegenerateInputError` naming the argument.

========================  =====================================================================
module                    contents
========================  =====================================================================
:mod:`.look_at`           :func:`look_at` (no flip at the poles), :func:`view_matrix`,
                          :func:`look_at_matrix`, :func:`camera_axes`
:mod:`.cone`              :func:`cone_clamp` (exact), :func:`swing_twist`, :func:`swing_twist_clamp`
:mod:`.smoothing`         :func:`smooth_rotation` / :func:`smooth_position` (``1 - exp(-k·dt)``),
                          half-life conversions, and the seed's frame-rate dependent
                          :func:`smooth_rotation_naive` kept as a labelled baseline
:mod:`.spring`            :func:`spring_rotation` / :func:`spring_position`: exact critically
                          damped springs
:mod:`.transitions`       :class:`CameraSequence`: scripted blends, holds and cuts (squad + spline)
:mod:`.filters`           One-Euro and constant-velocity Kalman filters over orientations
:mod:`.rig`               :class:`Camera` and the third-person :class:`FollowRig`
========================  =====================================================================

Examples
--------
>>> import numpy as np
>>> from engine.camera import look_at, smooth_rotation
>>> eyes = np.random.default_rng(0).normal(size=(10_000, 3)) * 10     # 10,000 cameras
>>> q = look_at(eyes, [0.0, 1.0, 0.0])
>>> q = smooth_rotation(q, look_at(eyes, [0.0, 2.0, 0.0]), 1 / 60, half_life=0.1)
>>> q.shape
(10000, 4)
"""

from engine.camera.cone import cone_clamp, swing_twist, swing_twist_clamp
from engine.camera.filters import (
    KalmanOrientationFilter,
    KalmanState,
    OneEuroFilter,
    OneEuroState,
    kalman_initial,
    kalman_step,
    one_euro_alpha,
    one_euro_initial,
    one_euro_step,
)
from engine.camera.look_at import camera_axes, look_at, look_at_matrix, view_matrix
from engine.camera.rig import Camera, FollowRig, orbit_orientation, yaw_pitch_from_forward
from engine.camera.smoothing import (
    half_life_from_stiffness,
    smooth_position,
    smooth_position_naive,
    smooth_rotation,
    smooth_rotation_naive,
    smoothing_alpha,
    stiffness_from_half_life,
)
from engine.camera.spring import (
    SPRING_HALF_LIFE_FACTOR,
    spring_position,
    spring_rotation,
    spring_stiffness_from_half_life,
)
from engine.camera.transitions import EASINGS, CameraSequence, ease

__all__ = [
    "EASINGS",
    "SPRING_HALF_LIFE_FACTOR",
    "Camera",
    "CameraSequence",
    "FollowRig",
    "KalmanOrientationFilter",
    "KalmanState",
    "OneEuroFilter",
    "OneEuroState",
    "camera_axes",
    "cone_clamp",
    "ease",
    "half_life_from_stiffness",
    "kalman_initial",
    "kalman_step",
    "look_at",
    "look_at_matrix",
    "one_euro_alpha",
    "one_euro_initial",
    "one_euro_step",
    "orbit_orientation",
    "smooth_position",
    "smooth_position_naive",
    "smooth_rotation",
    "smooth_rotation_naive",
    "smoothing_alpha",
    "spring_position",
    "spring_rotation",
    "spring_stiffness_from_half_life",
    "stiffness_from_half_life",
    "swing_twist",
    "swing_twist_clamp",
    "view_matrix",
    "yaw_pitch_from_forward",
]
