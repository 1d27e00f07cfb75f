"""Transitions that evaluate only the target pose: inertialization and dead blending, batched.

A crossfade evaluates two poses for its whole duration. **Inertialization** (Bollo, "Inertialization:
High-Performance Animation Transitions in Gears of War", GDC 2016) switches to the target at once
and adds the *offset* between source and target, which then decays to zero: per joint, the
translation difference, the rotation difference as a rotation vector ``φ = log(q_source ·
q_target⁻¹)`` (``q_out = exp(φ) · q_target``) and the scale difference. Two decay laws:

- :func:`quintic_decay`: Bollo's quintic along the offset's direction, matching the offset
  ``x0``, its rate ``v0`` and an acceleration ``a0`` at the start and reaching zero with zero
  velocity and acceleration at ``t1 = min(T, -5 x0 / v0)`` (the bound keeps it from
  overshooting when ``v0 < 0``), with ``a0 = max(0, (-8 v0 t1 - 20 x0) / t1²)``. Bollo keeps only
  the velocity along the offset; here the perpendicular part decays too, with the quintic that
  starts at 0 with that velocity (``v⊥ T · s(1-s)³(1+3s)``, ``s = t/T``), so the output's
  first derivative is continuous at the switch. A rate pointing away from zero (``v0 > 0``) is
  kept as well (Unity's implementation drops it) and ``t1 = T``; the curve then rises and comes
  back without crossing zero. Everything is exactly zero from ``t = T`` on.
- :func:`spring_decay`: a critically damped spring, ``x(t) = e^{-yt}(x0 + (v0 + y x0) t)``, set by
  a half-life: an offset that starts at rest halves in ``half_life`` seconds
  (``y = SPRING_RATE / half_life`` with ``e^{-z}(1 + z) = ½``). It never reaches zero exactly.

**Dead blending** (as in Unreal Engine 5.3's Dead Blending node; D. Holden, "Dead Blending",
2023) extrapolates the source from the moment of transition with its velocity decaying
exponentially (half-life), and crossfades from that extrapolation into the target with
``smoothstep(t/T)`` (:func:`dead_blend`).

All three start from the source pose *and its velocity* (:mod:`engine.anim.velocity`), so a
transition that interrupts another one starts from the current output without a jump in pose or
velocity. Every function is stateless and works on any leading batch shape, usually ``(C, J)``;
the state (offsets, times) belongs to the caller, e.g. :mod:`engine.graph`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.blending import interpolate_poses
from engine.anim.pose import Pose
from engine.anim.velocity import (
    PoseVelocity,
    angular_from_rotvec_rate,
    blend_velocity,
    rotvec_rate_from_angular,
)
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array, trusted
from engine.math.quat import quat_conjugate, quat_from_rotvec, quat_multiply, quat_rotate, rotvec_from_quat

#: Bollo's overshoot bound: the decay ends by ``t1 = -STEEPEST · x0 / v0`` when ``v0 < 0``.
STEEPEST = 5.0

#: An offset smaller than this fraction of ``|v0| · T`` (the distance its velocity covers in the
#: transition) is rounding noise, taken as 0: where source and target agree, an offset comes out
#: 0 on one code path and ~1e-19 on another, and taking the axis (and ``t1 = -5 x0 / v0 ≈ 0``)
#: from that noise would drop the velocity match.
OFFSET_NOISE = 1e-12

#: ``z`` with ``e^{-z}(1 + z) = ½``: a critically damped spring of rate ``y = z / h`` halves an
#: offset that starts at rest in ``h`` seconds.
SPRING_RATE = 1.6783469900166608


def _durations(value: Any, name: str) -> FloatArray:
    array = as_array(value, name)
    if np.any(array < 0.0):
        raise InvalidInputError(f"{name} must be >= 0 seconds, got {float(array.min())}")
    return array


def _positive(value: Any, name: str) -> FloatArray:
    array = as_array(value, name)
    if np.any(array <= 0.0):
        raise InvalidInputError(f"{name} must be > 0 seconds, got {float(array.min())}")
    return array


def _vectors(offset: Any, velocity: Any) -> tuple[FloatArray, FloatArray]:
    x = as_array(offset, "offset", (3,))
    v = as_array(velocity, "velocity", (3,))
    if x.shape != v.shape:
        raise InvalidInputError(f"offset and velocity must have one shape (..., 3), got {x.shape} and {v.shape}")
    return x, v


def _cubed_decay(s: FloatArray, g: FloatArray, g1: FloatArray, g2: FloatArray) -> tuple[FloatArray, ...]:
    """``(1-s)³ g(s)`` and its first two derivatives in ``s``, given ``g``, ``g'`` and ``g''``."""
    u = 1.0 - s
    u2 = u * u
    return u2 * u * g, u2 * (u * g1 - 3.0 * g), u * (6.0 * g - 6.0 * u * g1 + u2 * g2)


def _bump(s: FloatArray) -> tuple[FloatArray, ...]:
    """``s(1-s)³(1+3s)``: the quintic from 0 with unit slope to 0, flat at both ends, and its derivatives."""
    return _cubed_decay(s, s + 3.0 * s * s, 1.0 + 6.0 * s, np.full_like(s, 6.0))


@dataclass(frozen=True)
class QuinticDecay:
    """Offsets ``(..., 3)`` decaying to zero with Bollo's quintic (see the module docstring).

    Attributes
    ----------
    axis
        Unit direction of the offset ``(..., 3)`` (of the initial velocity when the offset is 0).
    position, velocity, acceleration
        ``x0``, ``v0`` and ``a0`` along ``axis`` ``(...)``.
    end
        ``t1 = min(T, -5 x0 / v0)`` ``(...)``, seconds (``T`` when ``v0 >= 0``).
    drift
        The initial velocity perpendicular to ``axis`` ``(..., 3)``, decayed over ``duration``.
    duration
        ``T`` ``(...)``, seconds: from then on the offset is exactly zero.
    inverse_end, first, second, inverse_duration, sweep
        Derived once for :func:`quintic_offset`: ``1/t1``, the coefficients of
        ``x0 + s (first + s·second)`` (the offset along ``axis`` is that times ``(1-s)³``,
        ``s = t/t1``), ``1/T`` and ``drift · T`` (0 where ``t1`` or ``T`` is 0).
    """

    axis: FloatArray
    position: FloatArray
    velocity: FloatArray
    acceleration: FloatArray
    end: FloatArray
    drift: FloatArray
    duration: FloatArray
    inverse_end: FloatArray
    first: FloatArray
    second: FloatArray
    inverse_duration: FloatArray
    sweep: FloatArray

    def __getitem__(self, index: Any) -> QuinticDecay:
        """The decays of the batch entries ``index`` (e.g. a subset of characters)."""
        return QuinticDecay(*(getattr(self, f)[index] for f in self.__dataclass_fields__))


def quintic_decay(offset: Any, velocity: Any, duration: Any) -> QuinticDecay:
    """Bollo's quintic decay of ``offset`` (moving at ``velocity``) to zero within ``duration``.

    Parameters
    ----------
    offset
        Initial offsets ``x(0)`` ``(..., 3)`` (translations, rotation vectors or scale differences).
    velocity
        Their initial rates ``ẋ(0)`` ``(..., 3)``.
    duration
        ``T`` in seconds, ``>= 0``, broadcastable to ``(...)``; 0 gives no offset at all.

    Examples
    --------
    >>> decay = quintic_decay([[0.3, 0.0, 0.0]], [[-2.0, 0.0, 0.0]], 0.5)
    >>> float(decay.end[0])                       # -5 · 0.3 / -2 = 0.75 > 0.5: ends at T
    0.5
    >>> [round(float(x), 6) for x in quintic_offset(decay, 0.0)[0]]
    [0.3, 0.0, 0.0]
    >>> quintic_offset(decay, 0.5).tolist()
    [[0.0, 0.0, 0.0]]
    """
    x, v = _vectors(offset, velocity)
    total = np.broadcast_to(_durations(duration, "duration"), x.shape[:-1])
    size = np.sqrt(np.einsum("...k,...k->...", x, x))
    speed = np.sqrt(np.einsum("...k,...k->...", v, v))
    size = np.where(size <= OFFSET_NOISE * speed * total, 0.0, size)  # rounding noise is no offset
    from_offset = size > 0.0
    from_velocity = ~from_offset & (speed > 0.0)
    axis = np.where(
        from_offset[..., None],
        x / np.where(from_offset, size, 1.0)[..., None],
        np.where(from_velocity[..., None], v / np.where(from_velocity, speed, 1.0)[..., None], [1.0, 0.0, 0.0]),
    )
    along = np.einsum("...k,...k->...", v, axis)
    drift = v - along[..., None] * axis
    # the rounding left by projecting a velocity parallel to the offset is not a drift
    drift = np.where((np.sqrt(np.einsum("...k,...k->...", drift, drift)) <= 1e-12 * speed)[..., None], 0.0, drift)
    closing = along < 0.0
    # t1 = min(T, -5·x0/v0) when closing; divided only where it is the smaller (a tiny v0 would overflow)
    end = np.array(total, dtype=np.float64)
    sooner = closing & (STEEPEST * size < -along * total)
    np.divide(-STEEPEST * size, along, out=end, where=sooner)
    positive = end > 0.0
    safe = np.where(positive, end, 1.0)
    acceleration = np.where(positive, np.maximum(0.0, -8.0 * along * end - 20.0 * size) / (safe * safe), 0.0)
    start = np.where(positive, size, 0.0)
    rate = along * end  # v0 and a0 in units of the normalised time s = t / t1
    bend = acceleration * end * end
    lasting = total > 0.0
    return QuinticDecay(
        axis,
        size,
        along,
        acceleration,
        end,
        drift,
        total.copy(),
        np.where(positive, 1.0 / safe, 0.0),
        np.where(positive, 3.0 * start + rate, 0.0),
        np.where(positive, 6.0 * start + 3.0 * rate + 0.5 * bend, 0.0),
        np.where(lasting, 1.0 / np.where(lasting, total, 1.0), 0.0),
        np.where(lasting[..., None], drift * total[..., None], 0.0),
    )


def _quintic_terms(decay: QuinticDecay, elapsed: Any) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    t = _durations(elapsed, "elapsed")
    end = decay.end
    s = np.where(end > 0.0, np.clip(t / np.where(end > 0.0, end, 1.0), 0.0, 1.0), 1.0)
    total = decay.duration
    s2 = np.where(total > 0.0, np.clip(t / np.where(total > 0.0, total, 1.0), 0.0, 1.0), 1.0)
    return s, s2, end, total


def quintic_offset(decay: QuinticDecay, elapsed: Any) -> FloatArray:
    """The offsets ``(..., 3)`` ``elapsed`` seconds after the start (broadcastable to the decay's ``(...)``)."""
    t = _durations(elapsed, "elapsed")
    s = np.where(t >= decay.end, 1.0, t * decay.inverse_end)  # exactly 1 (no offset) from t1 on
    rest = 1.0 - s
    along = decay.first + s * decay.second
    along *= s
    along += decay.position
    along *= rest * rest * rest
    s2 = np.where(t >= decay.duration, 1.0, t * decay.inverse_duration)
    rest2 = 1.0 - s2
    bump = s2 * rest2 * rest2 * rest2 * (1.0 + 3.0 * s2)
    return along[..., None] * decay.axis + bump[..., None] * decay.sweep


def quintic_rates(decay: QuinticDecay, elapsed: Any) -> tuple[FloatArray, FloatArray]:
    """First and second time derivatives ``(..., 3)`` of :func:`quintic_offset`."""
    s, s2, end, total = _quintic_terms(decay, elapsed)
    x0, v0, a0 = decay.position, decay.velocity * end, decay.acceleration * end * end
    g = x0 * (1.0 + s * (3.0 + 6.0 * s)) + s * (v0 * (1.0 + 3.0 * s) + 0.5 * a0 * s)
    g1 = x0 * (3.0 + 12.0 * s) + v0 * (1.0 + 6.0 * s) + a0 * s
    g2 = 12.0 * x0 + 6.0 * v0 + a0
    _, d1, d2 = _cubed_decay(s, g, g1, g2)
    inverse = np.where(end > 0.0, 1.0 / np.where(end > 0.0, end, 1.0), 0.0)
    _, b1, b2 = _bump(s2)
    per_total = np.where(total > 0.0, 1.0 / np.where(total > 0.0, total, 1.0), 0.0)
    speed = (d1 * inverse)[..., None] * decay.axis + b1[..., None] * decay.drift
    acceleration = (d2 * inverse * inverse)[..., None] * decay.axis + (b2 * per_total)[..., None] * decay.drift
    return speed, acceleration


@dataclass(frozen=True)
class SpringDecay:
    """Offsets ``(..., 3)`` decaying with a critically damped spring of rate ``rate`` ``(...)``, 1/s."""

    offset: FloatArray
    velocity: FloatArray
    rate: FloatArray

    def __getitem__(self, index: Any) -> SpringDecay:
        """The decays of the batch entries ``index``."""
        return SpringDecay(self.offset[index], self.velocity[index], self.rate[index])


def spring_decay(offset: Any, velocity: Any, half_life: Any) -> SpringDecay:
    """A critically damped spring pulling ``offset`` (moving at ``velocity``) to zero.

    ``half_life`` (seconds, ``> 0``, broadcastable to ``(...)``): an offset starting at rest
    halves in that time; the rate is ``y = SPRING_RATE / half_life``.

    Examples
    --------
    >>> decay = spring_decay([[1.0, 0.0, 0.0]], [[0.0, 0.0, 0.0]], 0.2)
    >>> round(float(spring_offset(decay, 0.2)[0, 0]), 12)
    0.5
    """
    x, v = _vectors(offset, velocity)
    rate = np.broadcast_to(SPRING_RATE / _positive(half_life, "half_life"), x.shape[:-1]).copy()
    return SpringDecay(x.copy(), v.copy(), rate)


def spring_offset(decay: SpringDecay, elapsed: Any) -> FloatArray:
    """``e^{-yt}(x0 + (v0 + y x0) t)`` ``(..., 3)`` at ``elapsed`` seconds (broadcastable to ``(...)``)."""
    t = _durations(elapsed, "elapsed")
    y = decay.rate
    envelope = np.exp(-y * t)[..., None]
    return envelope * (decay.offset + (decay.velocity + y[..., None] * decay.offset) * np.asarray(t)[..., None])


def spring_rates(decay: SpringDecay, elapsed: Any) -> tuple[FloatArray, FloatArray]:
    """First and second time derivatives ``(..., 3)`` of :func:`spring_offset`."""
    t = np.asarray(_durations(elapsed, "elapsed"))[..., None]
    y = decay.rate[..., None]
    envelope = np.exp(-y * t)
    push = decay.velocity + y * decay.offset
    return envelope * (decay.velocity - y * push * t), envelope * y * (y * push * t - decay.velocity - push)


# --- poses --------------------------------------------------------------------------------------------


def _check_pair(pose: Pose, velocity: PoseVelocity, name: str) -> None:
    if not isinstance(pose, Pose) or not isinstance(velocity, PoseVelocity):
        raise InvalidInputError(f"{name} must be a Pose and its PoseVelocity, got {type(pose).__name__}")
    if pose.shape != velocity.shape:
        raise SkeletonMismatchError(f"{name} pose is shaped {pose.shape} but its velocity {velocity.shape}")


def pose_offsets(
    source: Pose, source_velocity: PoseVelocity, target: Pose, target_velocity: PoseVelocity
) -> tuple[FloatArray, FloatArray]:
    """Per-joint offsets of ``source`` from ``target`` and their rates, for inertialization.

    Returns
    -------
    offsets, rates
        ``(..., J, 3, 3)`` each; along the second-to-last axis: translation difference, rotation
        vector ``φ = log(q_s q_t⁻¹)`` (shortest arc, angle ``<= π``), scale difference. The rates
        are their time derivatives; the rotation's is ``J_l(φ)⁻¹ (ω_s - R(φ) ω_t)``, the rate of
        ``φ`` itself (see :func:`~engine.anim.velocity.rotvec_rate_from_angular`).
    """
    _check_pair(source, source_velocity, "source")
    _check_pair(target, target_velocity, "target")
    if source.shape != target.shape:
        raise SkeletonMismatchError(f"source is shaped {source.shape} but target {target.shape}")
    difference = quat_multiply(source.rotations, quat_conjugate(target.rotations))
    phi = rotvec_from_quat(difference)
    turning = source_velocity.angular - quat_rotate(difference, target_velocity.angular)
    offsets = np.stack((source.translations - target.translations, phi, source.scales - target.scales), axis=-2)
    rates = np.stack(
        (
            source_velocity.linear - target_velocity.linear,
            rotvec_rate_from_angular(phi, turning),
            source_velocity.scaling - target_velocity.scaling,
        ),
        axis=-2,
    )
    return offsets, rates


def offset_pose(target: Pose, offsets: Any) -> Pose:
    """``target`` with ``offsets`` ``(..., J, 3, 3)`` (as from :func:`pose_offsets`) added back.

    ``t + Δt``, ``exp(φ) · q``, ``s + Δs``: the inverse of :func:`pose_offsets`, so the offsets
    of a source added to its target give the source back.
    """
    delta = as_array(offsets, "offsets", (3, 3))
    if delta.shape[:-2] != target.shape:
        raise SkeletonMismatchError(f"offsets must be shaped {(*target.shape, 3, 3)}, got {delta.shape}")
    with trusted():
        return Pose(
            target.translations + delta[..., 0, :],
            quat_multiply(quat_from_rotvec(delta[..., 1, :]), target.rotations),
            target.scales + delta[..., 2, :],
        )


def offset_velocity(target: Pose, target_velocity: PoseVelocity, offsets: Any, rates: Any) -> PoseVelocity:
    """Velocity of :func:`offset_pose`'s result, given the target's velocity and the offsets' rates."""
    _check_pair(target, target_velocity, "target")
    delta = as_array(offsets, "offsets", (3, 3))
    speed = as_array(rates, "rates", (3, 3))
    if delta.shape[:-2] != target.shape or speed.shape != delta.shape:
        raise SkeletonMismatchError(
            f"offsets and rates must be shaped {(*target.shape, 3, 3)}, got {delta.shape} and {speed.shape}"
        )
    phi = delta[..., 1, :]
    with trusted():
        turn = angular_from_rotvec_rate(phi, speed[..., 1, :])
        return PoseVelocity(
            target_velocity.linear + speed[..., 0, :],
            turn + quat_rotate(quat_from_rotvec(phi), target_velocity.angular),
            target_velocity.scaling + speed[..., 2, :],
        )


# --- dead blending --------------------------------------------------------------------------------------


def smoothstep(x: Any) -> FloatArray:
    """``3x² - 2x³`` of ``x`` clamped to ``[0, 1]``: 0 and 1 with zero slope at the ends."""
    u = np.clip(as_array(x, "x"), 0.0, 1.0)
    return u * u * (3.0 - 2.0 * u)


def extrapolate(pose: Pose, velocity: PoseVelocity, elapsed: Any, half_life: Any) -> tuple[Pose, PoseVelocity]:
    """``pose`` carried on by ``velocity`` decaying exponentially, ``elapsed`` seconds later.

    With ``λ = ln 2 / half_life`` the velocity is ``v e^{-λt}`` and the travel ``v (1 - e^{-λt})/λ``
    (bounded by ``v / λ``): translations and scales move along straight lines, rotations turn
    about the fixed axis of ``ω``: ``q(t) = exp(ω (1 - e^{-λt})/λ) · q``.

    Parameters
    ----------
    pose, velocity
        The pose ``(..., J)`` at the moment of transition and its velocity.
    elapsed
        Seconds since then, ``>= 0``, shaped like the batch axes ``(...)`` or scalar.
    half_life
        Seconds in which the velocity halves, ``> 0``, scalar or like the batch axes.
    """
    _check_pair(pose, velocity, "pose")
    t = _durations(elapsed, "elapsed")
    decay_rate = math.log(2.0) / _positive(half_life, "half_life")
    fade = np.exp(-decay_rate * t)
    travel = ((1.0 - fade) / decay_rate)[..., None, None]
    fade = fade[..., None, None]
    with trusted():
        moved = Pose(
            pose.translations + travel * velocity.linear,
            quat_multiply(quat_from_rotvec(travel * velocity.angular), pose.rotations),
            pose.scales + travel * velocity.scaling,
        )
        return moved, PoseVelocity(fade * velocity.linear, fade * velocity.angular, fade * velocity.scaling)


def dead_blend(
    source: Pose,
    source_velocity: PoseVelocity,
    target: Pose,
    elapsed: Any,
    duration: Any,
    half_life: Any,
    target_velocity: PoseVelocity | None = None,
) -> tuple[Pose, PoseVelocity | None]:
    """Dead blending: the extrapolated source crossfaded into ``target`` with ``smoothstep(t/T)``.

    At ``t = 0`` the result is the source with its velocity (the smoothstep starts flat); from
    ``t = T`` on it is the target. Rotations are nlerped like
    :func:`~engine.anim.blending.blend`, so :func:`~engine.anim.velocity.blend_velocity` gives
    the output's velocity exactly.

    Parameters
    ----------
    source, source_velocity
        The pose ``(..., J)`` and velocity at the moment of transition.
    target
        The target pose now ``(..., J)``.
    elapsed
        Seconds since the transition started, scalar or ``(...)``.
    duration
        The crossfade's length ``T`` in seconds, ``>= 0``, scalar or ``(...)``.
    half_life
        The extrapolation's velocity half-life in seconds (:func:`extrapolate`).
    target_velocity
        The target's velocity, to get the output's velocity too.

    Returns
    -------
    pose, velocity
        The blended pose ``(..., J)`` and, when ``target_velocity`` is given, its velocity
        (else ``None``).
    """
    if target.shape != source.shape:
        raise SkeletonMismatchError(f"source is shaped {source.shape} but target {target.shape}")
    t = _durations(elapsed, "elapsed")
    total = _durations(duration, "duration")
    ghost, ghost_velocity = extrapolate(source, source_velocity, t, half_life)
    progress = np.where(total > 0.0, t / np.where(total > 0.0, total, 1.0), 1.0)
    alpha = np.broadcast_to(smoothstep(progress), source.shape[:-1])
    with trusted():
        pose = interpolate_poses(ghost, target, alpha, method="nlerp")
        if target_velocity is None:
            return pose, None
        inside = (progress < 1.0) & (total > 0.0)
        slope = np.where(inside, 6.0 * progress * (1.0 - progress) / np.where(total > 0.0, total, 1.0), 0.0)
        slope = np.broadcast_to(slope, alpha.shape)
        velocity = blend_velocity(
            [ghost, target],
            [ghost_velocity, target_velocity],
            np.stack((1.0 - alpha, alpha)),
            weight_rates=np.stack((-slope, slope)),
        )
    return pose, velocity
