"""One-Euro and Kalman orientation filters: scalar references from the papers, jitter and lag on a noisy path."""

from __future__ import annotations

import numpy as np
import pytest

from engine.camera import (
    KalmanOrientationFilter,
    OneEuroFilter,
    kalman_initial,
    kalman_step,
    one_euro_alpha,
    one_euro_initial,
    one_euro_step,
)
from engine.math import (
    quat_angle,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_euler,
    quat_from_rotvec,
    quat_multiply,
    rotvec_from_quat,
)
from tests.helpers import assert_quat_allclose

RATE = 90  # Hz, a VR head tracker
AXIS = np.array([0.36, 0.48, 0.8])


def one_euro_scalar(values: np.ndarray, dt: float, min_cutoff: float, beta: float, d_cutoff: float) -> np.ndarray:
    """The 1€ filter on a scalar signal, written from Casiez et al.'s pseudocode."""

    def alpha(cutoff: float) -> float:
        tau = 1.0 / (2 * np.pi * cutoff)
        return 1.0 / (1.0 + tau / dt)

    x_hat, dx_hat, out = values[0], 0.0, [values[0]]
    for x in values[1:]:
        dx = (x - x_hat) / dt
        dx_hat = dx_hat + alpha(d_cutoff) * (dx - dx_hat)
        x_hat = x_hat + alpha(min_cutoff + beta * abs(dx_hat)) * (x - x_hat)
        out.append(x_hat)
    return np.array(out)


def kalman_scalar(values: np.ndarray, dt: float, sigma_m: float, sigma_a: float, sigma_v0: float) -> np.ndarray:
    """A textbook constant-velocity Kalman filter on a scalar angle, with explicit matrices."""
    F = np.array([[1.0, dt], [0.0, 1.0]])
    Q = sigma_a**2 * np.array([[dt**3 / 3, dt**2 / 2], [dt**2 / 2, dt]])
    Hm = np.array([[1.0, 0.0]])
    x, P, out = np.array([values[0], 0.0]), np.diag([sigma_m**2, sigma_v0**2]), [values[0]]
    for z in values[1:]:
        x, P = F @ x, F @ P @ F.T + Q
        S = Hm @ P @ Hm.T + sigma_m**2
        K = P @ Hm.T / S
        x = x + (K * (z - Hm @ x)).ravel()
        P = (np.eye(2) - K @ Hm) @ P
        out.append(x[0])
    return np.array(out)


def about_axis(angles: np.ndarray) -> np.ndarray:
    return quat_from_axis_angle(AXIS, angles)


def signed_angles(q: np.ndarray) -> np.ndarray:
    return rotvec_from_quat(q) @ AXIS


def noisy_scalar_signal(seed: int, count: int = 120) -> np.ndarray:
    t = np.arange(count) / RATE
    return 0.8 * np.sin(2 * np.pi * 0.5 * t) + np.random.default_rng(seed).normal(0.0, 0.02, count)


SETS = 24  # random parameter sets, filtered as one batch of cameras with per-camera parameters


def test_one_euro_about_one_axis_is_the_scalar_filter_of_the_paper():
    rng = np.random.default_rng(41)
    min_cutoff, beta, d_cutoff = rng.uniform(0.1, 5.0, SETS), rng.uniform(0.0, 2.0, SETS), rng.uniform(0.2, 3.0, SETS)
    angles = np.stack([noisy_scalar_signal(seed) for seed in range(SETS)], axis=1)  # (T, SETS)
    stream = about_axis(angles)
    state = one_euro_initial(stream[0])
    out = [state.orientation]
    for z in stream[1:]:
        state = one_euro_step(state, z, 1 / RATE, min_cutoff=min_cutoff, beta=beta, d_cutoff=d_cutoff)
        out.append(state.orientation)
    for k in range(SETS):
        expected = one_euro_scalar(angles[:, k], 1 / RATE, min_cutoff[k], beta[k], d_cutoff[k])
        np.testing.assert_allclose(signed_angles(np.array(out)[:, k]), expected, atol=1e-9)


def test_kalman_about_one_axis_is_the_scalar_textbook_filter():
    rng = np.random.default_rng(43)
    sigma_m, sigma_a, sigma_v0 = (
        rng.uniform(0.001, 0.1, SETS),
        rng.uniform(0.1, 30.0, SETS),
        rng.uniform(0.1, 5.0, SETS),
    )
    angles = np.stack([noisy_scalar_signal(seed) for seed in range(SETS)], axis=1)
    stream = about_axis(angles)
    state = kalman_initial(stream[0], sigma_m, sigma_v0)
    out = [state.orientation]
    for z in stream[1:]:
        state = kalman_step(state, z, 1 / RATE, measurement_noise=sigma_m, process_noise=sigma_a)
        out.append(state.orientation)
    for k in range(SETS):
        expected = kalman_scalar(angles[:, k], 1 / RATE, sigma_m[k], sigma_a[k], sigma_v0[k])
        np.testing.assert_allclose(signed_angles(np.array(out)[:, k]), expected, atol=1e-9)


def test_one_euro_alpha_is_the_papers():
    assert one_euro_alpha(0.01, 1.0) == pytest.approx(1.0 / (1.0 + 1.0 / (2 * np.pi * 0.01)))


# --- the stabilisation experiment ------------------------------------------------------------------

DURATION = 10.0
JITTER_STD = 0.01  # rad per axis, Gaussian, seed 7


def synthetic_head_motion() -> tuple[np.ndarray, np.ndarray]:
    """A smooth head path (yaw 0.25 Hz, pitch 0.4 Hz) and the same path with Gaussian jitter, at 90 Hz."""
    t = np.arange(int(DURATION * RATE)) / RATE
    yaw = 0.6 * np.sin(2 * np.pi * 0.25 * t)
    pitch = 0.3 * np.sin(2 * np.pi * 0.4 * t + 1.0)
    clean = quat_from_euler(np.stack((yaw, pitch, np.zeros_like(t)), axis=-1), "YXZ")
    noise = np.random.default_rng(7).normal(0.0, JITTER_STD, (len(t), 3))
    return clean, quat_multiply(quat_from_rotvec(noise), clean)


def rms_angular_acceleration(q: np.ndarray) -> float:
    """Jitter: RMS of the second difference of orientation (rad/s²), in the tangent space."""
    velocity = rotvec_from_quat(quat_multiply(q[1:], quat_conjugate(q[:-1]))) * RATE
    return float(np.sqrt(np.mean(np.sum((np.diff(velocity, axis=0) * RATE) ** 2, axis=-1))))


def lag_seconds(filtered: np.ndarray, clean: np.ndarray) -> float:
    """The delay that best aligns the output with the clean path (after a 1 s warm-up)."""
    start = RATE
    shifts = range(20)
    errors = [float(np.mean(quat_angle(filtered[start + s :], clean[start : len(clean) - s]))) for s in shifts]
    return int(np.argmin(errors)) / RATE


@pytest.mark.parametrize(
    ("name", "make", "min_reduction", "max_lag"),
    [
        ("one-euro", lambda: OneEuroFilter(min_cutoff=0.5, beta=0.5), 5.0, 0.08),
        ("kalman", lambda: KalmanOrientationFilter(measurement_noise=JITTER_STD, process_noise=0.3), 5.0, 0.03),
    ],
)
def test_filters_cut_jitter_with_bounded_lag(name, make, min_reduction, max_lag):
    clean, noisy = synthetic_head_motion()
    filt = make()
    filtered = np.array([filt(z, 1 / RATE) for z in noisy])
    reduction = rms_angular_acceleration(noisy) / rms_angular_acceleration(filtered)
    lag = lag_seconds(filtered, clean)
    print(f"\n{name}: jitter (RMS angular acceleration) reduced {reduction:.1f}x, lag {1000 * lag:.0f} ms")
    assert reduction >= min_reduction
    assert lag <= max_lag
    assert lag_seconds(noisy, clean) == 0.0  # the metric itself: raw input has no lag


# --- batching, state, signs ------------------------------------------------------------------------


def test_batched_steps_equal_separate_filters():
    _, noisy = synthetic_head_motion()
    streams = np.stack((noisy[:50], noisy[100:150], noisy[200:250]), axis=1)  # (T, 3 cameras, 4)
    euro, kalman = one_euro_initial(streams[0]), kalman_initial(streams[0], 0.01)
    for z in streams[1:]:
        euro = one_euro_step(euro, z, 1 / RATE, min_cutoff=0.7, beta=0.3)
        kalman = kalman_step(kalman, z, 1 / RATE, measurement_noise=0.01, process_noise=0.5)
    for camera in range(3):
        single_euro, single_kalman = OneEuroFilter(0.7, 0.3), KalmanOrientationFilter(0.01, 0.5)
        for z in streams[:, camera]:
            out_euro, out_kalman = single_euro(z, 1 / RATE), single_kalman(z, 1 / RATE)
        assert_quat_allclose(euro.orientation[camera], out_euro, atol=1e-12)
        assert_quat_allclose(kalman.orientation[camera], out_kalman, atol=1e-12)


def test_measurement_sign_does_not_matter():
    _, noisy = synthetic_head_motion()
    signs = np.where(np.random.default_rng(2).random(len(noisy)) < 0.5, -1.0, 1.0)[:, None]
    for make in (lambda: OneEuroFilter(0.5, 0.5), lambda: KalmanOrientationFilter(0.01, 0.3)):
        a, b = make(), make()
        out_a = [a(z, 1 / RATE) for z in noisy[:200]]
        out_b = [b(z, 1 / RATE) for z in noisy[:200] * signs[:200]]
        assert_quat_allclose(out_a, out_b, atol=1e-9)


def test_first_call_passes_through_and_reset_restarts():
    q0, q1 = quat_from_axis_angle([0.0, 1.0, 0.0], [0.1, 0.9])
    for filt in (OneEuroFilter(), KalmanOrientationFilter(0.01, 1.0)):
        assert_quat_allclose(filt(q0, 1 / RATE), q0)
        assert float(quat_angle(filt(q1, 1 / RATE), q1)) > 0.01  # filtered: not the raw measurement
        filt.reset()
        assert_quat_allclose(filt(q1, 1 / RATE), q1)


def test_kalman_tracks_a_constant_rotation_rate_without_lag():
    t = np.arange(300) / RATE
    truth = quat_from_axis_angle(AXIS, 1.5 * t)
    kalman = KalmanOrientationFilter(0.01, 0.3)
    out = np.array([kalman(z, 1 / RATE) for z in truth])
    assert float(quat_angle(out[-1], truth[-1])) < 1e-4
    np.testing.assert_allclose(kalman.state.angular_velocity, 1.5 * AXIS, atol=1e-3)
