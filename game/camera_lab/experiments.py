"""The camera lab's experiments: pure numpy simulations, computed once, then drawn and reported.

Nothing here knows about windows, GL or the wall clock. Each scenario is a fixed script (a
target path, a noise seed, a list of viewpoints) stepped with fixed time steps through the
:mod:`engine.camera` functions, so the lab shows, and :mod:`game.camera_lab.report` writes, the
same numbers on every machine.

Scenarios
---------
:func:`smoothing_runs`
    A camera at :data:`EYE` follows a target that stands, jumps (a cut) at :data:`CUT_TIME`, and
    runs around a circle from :data:`RUN_START` to :data:`DURATION`. Three smoothing methods, the
    seed's naive ``slerp(q, goal, s·dt)``, exponential ``slerp(q, goal, 1 - exp(-k·dt))`` and the
    critically damped spring, all with the half-life :data:`HALF_LIFE` (the naive factor ``s`` is
    the exponential rate ``k``: the two agree as ``dt → 0``), each stepped at 30, 60 and 144 FPS.
    The goal of each step is the target sampled at the middle of the step.
:func:`filter_runs`, :func:`filter_sweep`
    A head tracker at :data:`TRACKER_RATE` Hz reports a smooth head path plus Gaussian jitter
    (seeded); raw, One-Euro and Kalman outputs, scored by jitter (RMS angular acceleration) and
    lag (the delay that best aligns the output with the clean path).
:mod:`game.camera_lab.framing`
    Where a camera points: a head camera clamped to a cone, a look-at past the pole, a
    cut-scene through five viewpoints; and :class:`~game.camera_lab.framing.Run`, what every
    scenario records.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from engine.camera import (
    camera_axes,
    kalman_initial,
    kalman_step,
    look_at,
    one_euro_initial,
    one_euro_step,
    smooth_rotation,
    smooth_rotation_naive,
    spring_rotation,
    stiffness_from_half_life,
)
from engine.math import (
    angle_between,
    quat_angle,
    quat_conjugate,
    quat_from_euler,
    quat_from_rotvec,
    quat_multiply,
    rotvec_from_quat,
)
from engine.math._checks import FloatArray
from game.camera_lab.framing import OverheadRun, Run, TransitionRuns, overhead_run, transition_runs

FPS = (30, 60, 144)
"""Frame rates of the smoothing experiment."""
METHODS = ("naive", "exponential", "spring")
"""Smoothing methods, the seed's frame-rate dependent baseline first."""
HALF_LIFE = 0.1
"""Seconds to close half the gap, for every smoothing method."""
NAIVE_FACTOR = float(stiffness_from_half_life(HALF_LIFE))
"""The naive method's ``s`` (1/s): the exponential rate ``k``, so both agree as ``dt → 0``."""
COMMON_STEP = 1.0 / 6.0
"""Every multiple of 1/6 s is a frame boundary at 30, 60 and 144 FPS: runs are compared there."""
SETTLED = 0.05
"""Time-to-95 %: until the angle to the target is 5 % of the jump's."""

# --- the smoothing scenario: stand, jump, run a circle --------------------------------------------

EYE = np.array([0.0, 2.0, 7.0])
"""The smoothed cameras' position (metres)."""
LOOK_HEIGHT = 1.3
"""The cameras aim this high above the target's feet."""
CUT_TIME = 0.5
RUN_START = 2.5
DURATION = 5.0
CIRCLE_CENTRE = np.array([0.0, 0.0, -1.0])
CIRCLE_RADIUS = 2.5
RUN_RATE = 1.2
"""Radians per second around the circle: 3 m/s, the mannequin's run speed."""
JUMP_TO = CIRCLE_CENTRE + np.array([CIRCLE_RADIUS, 0.0, 0.0])
"""Where the target is cut to at :data:`CUT_TIME`: the circle's start."""
_END_ANGLE = RUN_RATE * (DURATION - RUN_START)
START = CIRCLE_CENTRE + CIRCLE_RADIUS * np.array([np.cos(_END_ANGLE), 0.0, -np.sin(_END_ANGLE)])
"""Where the target stands first: the circle's end, so the scenario loops without a jump there."""


def target_position(t: FloatArray | float) -> FloatArray:
    """The target's feet ``(..., 3)`` at times ``t`` (seconds, ``(...)``) of the smoothing scenario."""
    t = np.asarray(t, dtype=float)[..., None]
    angle = RUN_RATE * np.clip(t - RUN_START, 0.0, None)
    circle = CIRCLE_CENTRE + CIRCLE_RADIUS * np.concatenate((np.cos(angle), 0.0 * angle, -np.sin(angle)), axis=-1)
    return np.where(t < CUT_TIME, START, np.where(t < RUN_START, JUMP_TO, circle))


def target_heading(t: FloatArray | float) -> FloatArray:
    """The target's facing (yaw about +Y from +Z, radians): towards the camera, then along the circle."""
    t = np.asarray(t, dtype=float)
    to_eye = EYE - target_position(t)
    still = np.arctan2(to_eye[..., 0], to_eye[..., 2])
    running = RUN_RATE * (t - RUN_START) - np.pi  # along the circle's tangent (-sin θ, 0, -cos θ)
    return np.where(t < RUN_START, still, running)


def look_point(t: FloatArray | float) -> FloatArray:
    """The point ``(..., 3)`` the cameras aim at: :data:`LOOK_HEIGHT` above the target's feet."""
    return target_position(t) + np.array([0.0, LOOK_HEIGHT, 0.0])


@dataclass(frozen=True)
class SmoothingRun(Run):
    """A smoothing run at one frame rate; ``errors`` ``(N,)``: radians between view and target direction."""

    method: str
    fps: int
    errors: FloatArray


def simulate_smoothing(method: str, fps: int, duration: float = DURATION) -> SmoothingRun:
    """Follow the scenario's target with ``method`` (one of :data:`METHODS`) at ``fps`` frames per second."""
    dt = 1.0 / fps
    steps = round(duration * fps)
    goals = look_at(EYE, look_point((np.arange(steps, dtype=np.float64) + 0.5) * dt))
    q, angular_velocity = look_at(EYE, look_point(0.0)), np.zeros(3)
    orientations = np.empty((steps + 1, 4))
    orientations[0] = q
    for step, goal in enumerate(goals):  # one frame after another: each needs the last one's result
        if method == "naive":
            q = smooth_rotation_naive(q, goal, dt, NAIVE_FACTOR)
        elif method == "exponential":
            q = smooth_rotation(q, goal, dt, half_life=HALF_LIFE)
        else:
            q, angular_velocity = spring_rotation(q, angular_velocity, goal, dt, half_life=HALF_LIFE)
        orientations[step + 1] = q
    times = np.arange(steps + 1, dtype=np.float64) * dt
    errors = angle_between(camera_axes(orientations)[2], look_point(times) - EYE)
    positions = np.broadcast_to(EYE, (steps + 1, 3))
    return SmoothingRun(times, orientations, positions, method, fps, errors)


def smoothing_runs() -> dict[tuple[str, int], SmoothingRun]:
    """Every method at every frame rate, keyed ``(method, fps)``."""
    return {(method, fps): simulate_smoothing(method, fps) for method in METHODS for fps in FPS}


def time_to_settle(run: SmoothingRun, start: float = CUT_TIME, fraction: float = SETTLED) -> float:
    """Seconds after ``start`` until the angle to the target first falls to ``fraction`` of its value at ``start``.

    The crossing is interpolated linearly in ``log(angle)`` between the two steps around it, which is
    exact for exponential decay: the result does not depend on where the frames fall.
    """
    first = int(run.index(start))
    errors = np.log(run.errors[first:])
    goal = np.log(fraction * run.errors[first])
    below = np.flatnonzero(errors <= goal)
    if len(below) == 0:
        return float("inf")
    k = int(below[0])
    if k == 0:
        return 0.0
    u = (errors[k - 1] - goal) / (errors[k - 1] - errors[k])
    return float(run.times[first + k - 1] + u * (run.times[first + k] - run.times[first + k - 1]) - start)


def common_rows(run: Run, step: float = COMMON_STEP) -> np.ndarray:
    """Rows of ``run`` at the multiples of ``step`` seconds (frame boundaries shared by every rate)."""
    return run.index(np.arange(0.0, run.times[-1] + 1e-9, step))


@dataclass(frozen=True)
class SmoothingRow:
    """One line of the report table.

    Attributes
    ----------
    method, fps
        The run.
    final_error
        Degrees between view and target direction at the end (the target is running: tracking lag).
    time_to_95
        Seconds from the cut until 95 % of the jump is closed (:func:`time_to_settle`).
    spread
        Largest angle (degrees) between this run's orientation and the 144 FPS run's of the same
        method, over every time both have a frame (multiples of 1/6 s).
    """

    method: str
    fps: int
    final_error: float
    time_to_95: float
    spread: float


def smoothing_table(runs: dict[tuple[str, int], SmoothingRun]) -> list[SmoothingRow]:
    """Summary rows, method by method, frame rates ascending."""
    rows = []
    for method in METHODS:
        reference = runs[method, FPS[-1]]
        for fps in FPS:
            run = runs[method, fps]
            ours = run.orientations[common_rows(run)]
            theirs = reference.orientations[common_rows(reference)]
            spread = float(np.degrees(quat_angle(ours, theirs).max()))
            rows.append(SmoothingRow(method, fps, float(np.degrees(run.errors[-1])), time_to_settle(run), spread))
    return rows


# --- stabilising jittery input ---------------------------------------------------------------------

TRACKER_RATE = 90
"""Hz of the head tracker (a VR headset)."""
JITTER = 0.012
"""Standard deviation of the tracker's noise, radians per axis."""
FILTER_DURATION = 8.0
HEAD = np.array([0.0, 1.72, 1.95])
"""Where the tracked head camera is: just in front of the face of a character standing at :data:`WEARER`."""
WEARER = np.array([0.0, 0.0, 2.15])
WALL_Z = -4.0
"""The head camera looks at a wall at this z (its gaze is traced there)."""
ONE_EURO = {"min_cutoff": 0.5, "beta": 0.5}
KALMAN = {"measurement_noise": JITTER, "process_noise": 0.3}
FILTERS = ("raw", "one-euro", "kalman")
LAG_WARMUP = 1.0
"""Seconds ignored before measuring lag (the filters start from the first measurement)."""
MAX_LAG = 40
"""Largest lag searched, in tracker samples."""


def head_path(t: FloatArray) -> FloatArray:
    """The clean head orientation ``(..., 4)``: yaw 2 cycles and pitch 3 cycles per :data:`FILTER_DURATION`."""
    yaw = 0.6 * np.sin(2.0 * np.pi * 0.25 * t)
    pitch = 0.25 * np.sin(2.0 * np.pi * 0.375 * t)
    return quat_from_euler(np.stack((yaw, pitch, np.zeros_like(t)), axis=-1), "YXZ")


def tracker_stream(seed: int = 7) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Times ``(M,)``, clean ``(M, 4)`` and noisy ``(M, 4)`` orientations of the head tracker."""
    times = np.arange(round(FILTER_DURATION * TRACKER_RATE)) / TRACKER_RATE
    clean = head_path(times)
    noise = np.random.default_rng(seed).normal(0.0, JITTER, (len(times), 3))
    return times, clean, quat_multiply(quat_from_rotvec(noise), clean)


def one_euro_filter(stream: FloatArray, min_cutoff: float, beta: FloatArray | float) -> FloatArray:
    """One-Euro outputs ``(M, ..., 4)`` of measurements ``(M, ..., 4)`` (``beta`` may be ``(...)``)."""
    state = one_euro_initial(stream[0])
    out = [state.orientation]
    for z in stream[1:]:
        state = one_euro_step(state, z, 1.0 / TRACKER_RATE, min_cutoff=min_cutoff, beta=beta)
        out.append(state.orientation)
    return np.array(out)


def kalman_filter(stream: FloatArray, measurement_noise: float, process_noise: FloatArray | float) -> FloatArray:
    """Kalman outputs ``(M, ..., 4)`` of measurements ``(M, ..., 4)``."""
    state = kalman_initial(stream[0], measurement_noise)
    out = [state.orientation]
    for z in stream[1:]:
        state = kalman_step(
            state, z, 1.0 / TRACKER_RATE, measurement_noise=measurement_noise, process_noise=process_noise
        )
        out.append(state.orientation)
    return np.array(out)


def jitter(orientations: FloatArray) -> FloatArray:
    """RMS angular acceleration (rad/s²) of tracker-rate orientations ``(M, ..., 4)``: the jitter."""
    velocity = rotvec_from_quat(quat_multiply(orientations[1:], quat_conjugate(orientations[:-1]))) * TRACKER_RATE
    acceleration = np.diff(velocity, axis=0) * TRACKER_RATE
    return np.sqrt(np.mean(np.sum(acceleration**2, axis=-1), axis=0))


def lag(orientations: FloatArray, clean: FloatArray) -> FloatArray:
    """Seconds ``(...)`` of delay that best align outputs ``(M, ..., 4)`` with the clean path ``(M, 4)``.

    The mean angle between the output and the clean path delayed by ``s`` samples is computed for
    ``s`` up to :data:`MAX_LAG`, after :data:`LAG_WARMUP`; the lag is its minimum, refined between
    samples by a parabola through the best ``s`` and its neighbours (when they are both searched).
    """
    start = round(LAG_WARMUP * TRACKER_RATE)
    end = len(clean) - MAX_LAG
    clean = clean.reshape(clean.shape[:1] + (1,) * (orientations.ndim - 2) + (4,))
    errors = np.array(
        [np.mean(quat_angle(orientations[start + s : end + s], clean[start:end]), axis=0) for s in range(MAX_LAG)]
    )
    best = np.argmin(errors, axis=0)
    centre = np.clip(best, 1, MAX_LAG - 2)
    before, at, after = (np.take_along_axis(errors, (centre + k)[None], axis=0)[0] for k in (-1, 0, 1))
    curvature = before - 2.0 * at + after
    refine = (best == centre) & (curvature > 0.0)  # an inner minimum: fit the parabola
    shift = np.where(refine, 0.5 * (before - after) / np.where(refine, curvature, 1.0), 0.0)
    return (best + np.clip(shift, -0.5, 0.5)) / TRACKER_RATE


@dataclass(frozen=True)
class FilterRuns:
    """The stabilisation scene: the clean path and each filter's output with its scores.

    Attributes
    ----------
    clean
        A :class:`Run` of the clean head path (at :data:`HEAD`).
    runs
        One :class:`Run` per name of :data:`FILTERS`.
    errors
        Radians ``(M,)`` from the clean path, per filter name.
    jitter, lag
        Scores per filter name: rad/s² and seconds.
    """

    clean: Run
    runs: dict[str, Run]
    errors: dict[str, FloatArray]
    jitter: dict[str, float]
    lag: dict[str, float]


def filter_runs() -> FilterRuns:
    """The raw stream and the One-Euro (:data:`ONE_EURO`) and Kalman (:data:`KALMAN`) outputs."""
    times, clean, noisy = tracker_stream()
    outputs = {"raw": noisy, "one-euro": one_euro_filter(noisy, **ONE_EURO), "kalman": kalman_filter(noisy, **KALMAN)}
    positions = np.broadcast_to(HEAD, (len(times), 3))
    return FilterRuns(
        Run(times, clean, positions),
        {name: Run(times, q, positions) for name, q in outputs.items()},
        {name: quat_angle(q, clean) for name, q in outputs.items()},
        {name: float(jitter(q)) for name, q in outputs.items()},
        {name: float(lag(q, clean)) for name, q in outputs.items()},
    )


@dataclass(frozen=True)
class SweepPoint:
    """One filter setting of :func:`filter_sweep`: its jitter (rad/s²) and lag (s)."""

    filter: str
    parameter: str
    value: float
    jitter: float
    lag: float


def filter_sweep(settings: int = 8) -> list[SweepPoint]:
    """Jitter against lag as each filter's smoothing knob turns (all settings filtered as one batch).

    One-Euro: ``beta`` from 0.005 to 5 Hz per rad/s (``min_cutoff`` as :data:`ONE_EURO`); Kalman:
    ``process_noise`` from 0.03 to 30 rad/s² per √Hz; plus the raw stream.
    """
    _, clean, noisy = tracker_stream()
    batch = np.repeat(noisy[:, None], settings, axis=1)  # (M, settings, 4): one camera per setting
    betas = np.geomspace(0.005, 5.0, settings)
    noises = np.geomspace(0.03, 30.0, settings)
    euro = one_euro_filter(batch, min_cutoff=ONE_EURO["min_cutoff"], beta=betas)
    kalman = kalman_filter(batch, JITTER, noises)
    points = [SweepPoint("raw", "-", 0.0, float(jitter(noisy)), float(lag(noisy, clean)))]
    for name, parameter, values, out in (
        ("one-euro", "beta", betas, euro),
        ("kalman", "process_noise", noises, kalman),
    ):
        scores = zip(values, jitter(out), lag(out, clean), strict=True)
        points += [SweepPoint(name, parameter, float(v), float(j), float(d)) for v, j, d in scores]
    return points


# --- all of it ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Experiments:
    """Every scenario's results (what the lab draws; the cone is recomputed when its limits change)."""

    smoothing: dict[tuple[str, int], SmoothingRun]
    filters: FilterRuns
    overhead: OverheadRun
    transitions: TransitionRuns


@functools.cache
def run_experiments() -> Experiments:
    """Simulate the smoothing, filter, overhead and transition scenarios.

    Computed once per process and shared (the lab and its report read the same results): do not
    modify the arrays.
    """
    return Experiments(smoothing_runs(), filter_runs(), overhead_run(), transition_runs())
