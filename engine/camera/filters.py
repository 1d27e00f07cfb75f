"""Stabilising jittery orientation input (head tracking, noisy targets): One-Euro and Kalman filters.

Both filters work in the tangent space of the current estimate. The difference between the
estimate ``q̂`` and a measurement ``z`` is the rotation vector ``log(q̂⁻¹ z)`` (radians, about
3 numbers), a correction is a rotation vector applied back with ``exp``, and nothing ever
averages quaternion components. Each filter is a pure step function over a ``NamedTuple`` state,
batched over any leading axes ``(...)``, plus a small stateful wrapper for game code:

:func:`one_euro_step` / :class:`OneEuroFilter`
    Casiez, Roussel & Vogel, "1€ Filter" (CHI 2012): a first-order low-pass whose cutoff rises
    with speed, so it removes jitter at rest and adds little lag in fast motion. Each step,
    ``α(f) = 1 / (1 + 1/(2π·f·dt))``. The filtered angular speed is ``ω̂ ← ω̂ + α(d_cutoff)·(Δ/dt - ω̂)``,
    the cutoff is ``f = min_cutoff + beta·|ω̂|``, and the estimate becomes ``q̂ ← q̂ · exp(α(f)·Δ)``,
    with ``Δ = log(q̂⁻¹ z)``.

    Parameters (the paper's tuning recipe: set ``beta = 0``, lower ``min_cutoff`` until jitter
    at rest is acceptable, then raise ``beta`` until fast motion no longer lags):

    - ``min_cutoff`` (Hz, > 0): cutoff at rest. Lower means smoother and more lag when slow.
    - ``beta`` (Hz per rad/s, >= 0): how fast the cutoff rises with angular speed.
    - ``d_cutoff`` (Hz, > 0): cutoff of the speed estimate itself; 1 Hz as in the paper.

:func:`kalman_step` / :class:`KalmanOrientationFilter`
    A constant-angular-velocity Kalman filter (multiplicative / error-state form). The state is
    an orientation and a world-frame angular velocity. Prediction is ``q̂ ← exp(ω·dt) · q̂``. The
    innovation is the rotation vector ``log(z · q̂⁻¹)``. The model is white-noise angular
    acceleration plus isotropic measurement noise. Its covariance is then the same 2×2 matrix
    (angle, angular velocity) for each of the three axes, and a rotation of the tangent space
    leaves it unchanged, so the state stores one ``(..., 2, 2)`` block.

    - ``measurement_noise`` (rad, > 0): standard deviation of the jitter per axis.
    - ``process_noise`` (rad/s² per √Hz, > 0): spectral density of the random angular
      acceleration the model allows. Lower is smoother. Higher follows changes of speed faster.
    - ``initial_velocity_std`` (rad/s, > 0): prior uncertainty of the angular velocity.

Examples
--------
>>> import numpy as np
>>> from engine.math import quat_angle, quat_from_axis_angle
>>> rng = np.random.default_rng(0)
>>> still = quat_from_axis_angle([0.0, 1.0, 0.0], 0.5)
>>> noisy = quat_from_axis_angle(rng.normal(size=(200, 3)), rng.normal(0.0, 0.01, 200))
>>> from engine.math import quat_multiply
>>> stream = quat_multiply(noisy, still)                       # 200 jittery samples of one pose
>>> euro = OneEuroFilter(min_cutoff=0.5, beta=0.5)
>>> out = [euro(z, 1 / 90) for z in stream]
>>> bool(quat_angle(out[-1], still) < 0.005 < float(np.mean(quat_angle(stream, still))))
True
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from engine.camera._params import check_nonnegative, check_positive
from engine.math import quat_conjugate, quat_from_rotvec, quat_multiply, quat_rotate, rotvec_from_quat
from engine.math._checks import FloatArray, as_array

# --- One-Euro --------------------------------------------------------------------------------------


class OneEuroState(NamedTuple):
    """State of :func:`one_euro_step`: ``orientation (..., 4)`` and ``velocity (..., 3)``.

    ``velocity`` is the filtered angular velocity in rad/s, in the frame of ``orientation``
    (body frame).
    """

    orientation: FloatArray
    velocity: FloatArray


def one_euro_initial(measurement: Any) -> OneEuroState:
    """A One-Euro state at rest on the first measurements ``(..., 4)``."""
    q = as_array(measurement, "measurement", (4,))
    return OneEuroState(q.copy(), np.zeros((*q.shape[:-1], 3)))


def one_euro_alpha(dt: Any, cutoff: Any) -> FloatArray:
    """The paper's smoothing factor ``1 / (1 + 1/(2π·cutoff·dt))`` for ``dt > 0`` s and ``cutoff > 0`` Hz."""
    dt = check_positive(dt, "dt")
    cutoff = check_positive(cutoff, "cutoff")
    return 1.0 / (1.0 + 1.0 / (2.0 * np.pi * cutoff * dt))


def one_euro_step(
    state: OneEuroState,
    measurement: Any,
    dt: Any,
    *,
    min_cutoff: float = 1.0,
    beta: FloatArray | float = 0.0,
    d_cutoff: float = 1.0,
) -> OneEuroState:
    """Advance One-Euro filters by one measurement (see the module docstring for the parameters).

    Parameters
    ----------
    state
        The previous :class:`OneEuroState` (from :func:`one_euro_initial` at first).
    measurement
        New unit quaternions ``(..., 4)``.
    dt
        Seconds since the previous measurement, ``> 0``, scalar or ``(...)``.
    min_cutoff, beta, d_cutoff
        Filter parameters: Hz, Hz per rad/s (scalar or ``(...)``, one per filter), Hz.

    Returns
    -------
    OneEuroState
        The new state; ``state.orientation`` is the filtered output.

    Raises
    ------
    InvalidInputError
        NaN/inf, wrong shapes, ``dt <= 0``, ``min_cutoff`` or ``d_cutoff <= 0``, ``beta < 0``.
    """
    z = as_array(measurement, "measurement", (4,))
    dt = check_positive(dt, "dt")
    beta_ = check_nonnegative(beta, "beta")
    step = rotvec_from_quat(quat_multiply(quat_conjugate(state.orientation), z))
    d_cutoff_ = check_positive(d_cutoff, "d_cutoff")
    velocity = state.velocity + one_euro_alpha(dt, d_cutoff_)[..., None] * (step / dt[..., None] - state.velocity)
    cutoff = check_positive(min_cutoff, "min_cutoff") + beta_ * np.linalg.norm(velocity, axis=-1)
    correction = quat_from_rotvec(one_euro_alpha(dt, cutoff)[..., None] * step)
    orientation = quat_multiply(state.orientation, correction)
    # carry the body-frame velocity into the new estimate's frame
    return OneEuroState(orientation, quat_rotate(quat_conjugate(correction), velocity))


class OneEuroFilter:
    """Stateful One-Euro orientation filter for game code; wraps :func:`one_euro_step`.

    The first call returns its measurement and starts the filter from it.

    Parameters
    ----------
    min_cutoff, beta, d_cutoff
        See the module docstring (Hz, Hz per rad/s, Hz).
    """

    def __init__(self, min_cutoff: float = 1.0, beta: float = 0.0, d_cutoff: float = 1.0) -> None:
        check_positive(min_cutoff, "min_cutoff")
        check_nonnegative(beta, "beta")
        check_positive(d_cutoff, "d_cutoff")
        self.min_cutoff = min_cutoff
        self.beta = beta
        self.d_cutoff = d_cutoff
        self.state: OneEuroState | None = None

    def __call__(self, measurement: Any, dt: Any) -> FloatArray:
        """Filter one measurement ``(..., 4)`` taken ``dt > 0`` seconds after the previous one."""
        if self.state is None:
            self.state = one_euro_initial(measurement)
        else:
            self.state = one_euro_step(
                self.state, measurement, dt, min_cutoff=self.min_cutoff, beta=self.beta, d_cutoff=self.d_cutoff
            )
        return self.state.orientation

    def reset(self) -> None:
        """Forget the state; the next call restarts from its measurement."""
        self.state = None


# --- Kalman ----------------------------------------------------------------------------------------

_IDENTITY_2 = np.eye(2)
_UPPER_2 = np.array([[0.0, 1.0], [0.0, 0.0]])
# white-noise acceleration: Q = q_c · [[dt³/3, dt²/2], [dt²/2, dt]]
_NOISE_SHAPE = np.array([[1.0 / 3.0, 0.5], [0.5, 1.0]])
_NOISE_POWERS = np.array([[3.0, 2.0], [2.0, 1.0]])


class KalmanState(NamedTuple):
    """State of :func:`kalman_step`.

    Attributes
    ----------
    orientation
        Estimated unit quaternions ``(..., 4)``.
    angular_velocity
        Estimated world-frame angular velocities ``(..., 3)`` in rad/s.
    covariance
        ``(..., 2, 2)`` covariance of (angle error, angular-velocity error) per axis, the same
        for all three axes.
    """

    orientation: FloatArray
    angular_velocity: FloatArray
    covariance: FloatArray


def kalman_initial(measurement: Any, measurement_noise: Any, initial_velocity_std: Any = 1.0) -> KalmanState:
    """A Kalman state on the first measurements ``(..., 4)``, at rest with prior ``initial_velocity_std`` rad/s."""
    q = as_array(measurement, "measurement", (4,))
    sigma = check_positive(measurement_noise, "measurement_noise")
    sigma_v = check_positive(initial_velocity_std, "initial_velocity_std")
    covariance = np.zeros((*q.shape[:-1], 2, 2))
    covariance[..., 0, 0] = sigma**2
    covariance[..., 1, 1] = sigma_v**2
    return KalmanState(q.copy(), np.zeros((*q.shape[:-1], 3)), covariance)


def kalman_step(
    state: KalmanState, measurement: Any, dt: Any, *, measurement_noise: Any, process_noise: Any
) -> KalmanState:
    """Predict by ``dt`` with constant angular velocity, then correct with one measurement.

    Parameters
    ----------
    state
        The previous :class:`KalmanState` (from :func:`kalman_initial` at first).
    measurement
        New unit quaternions ``(..., 4)``.
    dt
        Seconds since the previous measurement, ``> 0``, scalar or ``(...)``.
    measurement_noise, process_noise
        See the module docstring (rad; rad/s² per √Hz).

    Returns
    -------
    KalmanState
        The corrected state; ``state.orientation`` is the filtered output.

    Raises
    ------
    InvalidInputError
        NaN/inf, wrong shapes, ``dt <= 0`` or non-positive noise levels.
    """
    z = as_array(measurement, "measurement", (4,))
    dt = check_positive(dt, "dt")
    r = check_positive(measurement_noise, "measurement_noise") ** 2
    q_c = check_positive(process_noise, "process_noise") ** 2
    # predict: angle += ω·dt, white-noise angular acceleration of spectral density q_c
    orientation = quat_multiply(quat_from_rotvec(state.angular_velocity * dt[..., None]), state.orientation)
    dt_block = dt[..., None, None]
    transition = _IDENTITY_2 + _UPPER_2 * dt_block
    noise = q_c[..., None, None] * _NOISE_SHAPE * dt_block**_NOISE_POWERS
    covariance = transition @ state.covariance @ np.swapaxes(transition, -1, -2) + noise
    # correct with the innovation, a world-frame rotation vector
    innovation = rotvec_from_quat(quat_multiply(z, quat_conjugate(orientation)))
    gain = covariance[..., :, 0] / (covariance[..., 0, 0] + r)[..., None]
    orientation = quat_multiply(quat_from_rotvec(gain[..., 0:1] * innovation), orientation)
    angular_velocity = state.angular_velocity + gain[..., 1:2] * innovation
    covariance = covariance - gain[..., :, None] * covariance[..., 0:1, :]
    return KalmanState(orientation, angular_velocity, covariance)


class KalmanOrientationFilter:
    """Stateful constant-velocity Kalman orientation filter for game code; wraps :func:`kalman_step`.

    The first call returns its measurement and starts the filter from it.

    Parameters
    ----------
    measurement_noise, process_noise, initial_velocity_std
        See the module docstring (rad; rad/s² per √Hz; rad/s).
    """

    def __init__(self, measurement_noise: float, process_noise: float, initial_velocity_std: float = 1.0) -> None:
        check_positive(measurement_noise, "measurement_noise")
        check_positive(process_noise, "process_noise")
        check_positive(initial_velocity_std, "initial_velocity_std")
        self.measurement_noise = measurement_noise
        self.process_noise = process_noise
        self.initial_velocity_std = initial_velocity_std
        self.state: KalmanState | None = None

    def __call__(self, measurement: Any, dt: Any) -> FloatArray:
        """Filter one measurement ``(..., 4)`` taken ``dt > 0`` seconds after the previous one."""
        if self.state is None:
            self.state = kalman_initial(measurement, self.measurement_noise, self.initial_velocity_std)
        else:
            self.state = kalman_step(
                self.state,
                measurement,
                dt,
                measurement_noise=self.measurement_noise,
                process_noise=self.process_noise,
            )
        return self.state.orientation

    def reset(self) -> None:
        """Forget the state; the next call restarts from its measurement."""
        self.state = None
