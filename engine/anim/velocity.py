"""Velocities of local poses: finite differences of clips, derivatives through blending, SO(3) rates.

A :class:`PoseVelocity` holds the time derivative of a local :class:`~engine.anim.pose.Pose`,
per joint and in the joint's parent space (the space its local transform lives in):

- ``linear`` ``(..., J, 3)``: d translation / dt, metres per second;
- ``angular`` ``(..., J, 3)``: the angular velocity ``ω`` with ``q̇ = ½ ω q`` (``ω`` as a pure
  quaternion, Hamilton product, ``docs/conventions.md``): the rotation the parent space sees the
  joint turn by, radians per second;
- ``scaling`` ``(..., J, 3)``: d scale / dt, per second.

Where velocities come from and how they travel:

- :mod:`engine.anim.clip_velocity`: a clip's velocity at given times (exact within a key
  segment for STEP/LINEAR channels), from samples or a per-segment table.
- :func:`blend_velocity`: the exact derivative of :func:`~engine.anim.blending.blend`'s
  sign-aligned, normalised weighted sum, given each layer's pose and velocity (and, for weights
  that move, their rates).
- :func:`additive_velocity`: the exact derivative of
  :func:`~engine.anim.additive.apply_additive`.
- :func:`pose_velocity`: the finite difference of two poses ``dt`` apart.
- :func:`angular_from_rotvec_rate` / :func:`rotvec_rate_from_angular`: the left Jacobian of
  SO(3) and its inverse, which convert between the rate of a rotation vector and the angular
  velocity of the rotation it encodes (:mod:`engine.anim.inertialization` decays rotation
  offsets as rotation vectors).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.pose import Pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array, trusted
from engine.math.quat import quat_conjugate, quat_from_rotvec, quat_multiply, quat_rotate, rotvec_from_quat

#: Below this angle (radians) the Jacobian coefficients use their Taylor series.
_SERIES_ANGLE = 1e-4


@dataclass
class PoseVelocity:
    """Time derivative of a local pose (see the module docstring for units and spaces).

    ``linear``, ``angular`` and ``scaling`` are ``(..., J, 3)`` with the same leading shape.
    """

    linear: FloatArray
    angular: FloatArray
    scaling: FloatArray

    def __post_init__(self) -> None:
        self.linear = as_array(self.linear, "linear", (3,))
        self.angular = as_array(self.angular, "angular", (3,))
        self.scaling = as_array(self.scaling, "scaling", (3,))
        shapes = {self.linear.shape, self.angular.shape, self.scaling.shape}
        if len(shapes) != 1 or self.linear.ndim < 2:
            raise InvalidInputError(
                f"velocity arrays must share one shape (..., J, 3), got linear {self.linear.shape}, "
                f"angular {self.angular.shape}, scaling {self.scaling.shape}"
            )

    @property
    def shape(self) -> tuple[int, ...]:
        """Leading shape ``(..., J)``."""
        return self.linear.shape[:-1]

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return self.linear.shape[-2]

    @staticmethod
    def zeros(shape: tuple[int, ...]) -> PoseVelocity:
        """A pose at rest: zero velocities shaped ``(*shape, 3)`` (``shape`` ends with ``J``)."""
        with trusted():
            return PoseVelocity(np.zeros((*shape, 3)), np.zeros((*shape, 3)), np.zeros((*shape, 3)))

    def copy(self) -> PoseVelocity:
        """A deep copy."""
        with trusted():
            return PoseVelocity(self.linear.copy(), self.angular.copy(), self.scaling.copy())

    def __getitem__(self, index: Any) -> PoseVelocity:
        """Index the batch axes: ``velocity[c]`` is character ``c``."""
        with trusted():
            return PoseVelocity(self.linear[index], self.angular[index], self.scaling[index])


# --- SO(3): rotation-vector rates and angular velocity ----------------------------------------------


def _jacobian_terms(rotvec: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``θ``, ``(1 - cos θ)/θ²``, ``(θ - sin θ)/θ³`` and ``(1 - (θ/2)·cot(θ/2))/θ²`` for ``θ = |rotvec|``."""
    theta_sq = np.einsum("...k,...k->...", rotvec, rotvec)
    theta = np.sqrt(theta_sq)
    small = theta < _SERIES_ANGLE
    safe = np.where(small, 1.0, theta)
    safe_sq = safe * safe
    first = np.where(small, 0.5 - theta_sq / 24.0, (1.0 - np.cos(safe)) / safe_sq)
    second = np.where(small, 1.0 / 6.0 - theta_sq / 120.0, (safe - np.sin(safe)) / (safe_sq * safe))
    half = 0.5 * safe
    # (θ/2)·cot(θ/2) = (θ/2)·cos(θ/2)/sin(θ/2); sin(θ/2) > 0 for 0 < θ < 2π.
    inverse = np.where(small, 1.0 / 12.0 + theta_sq / 720.0, (1.0 - half * np.cos(half) / np.sin(half)) / safe_sq)
    return theta, first, second, inverse


def angular_from_rotvec_rate(rotvec: Any, rate: Any) -> FloatArray:
    """Angular velocity ``ω = J_l(φ) φ̇`` of the rotation ``exp(φ)`` whose rotation vector moves at ``φ̇``.

    ``J_l(φ) = I + (1 - cos θ)/θ² [φ]× + (θ - sin θ)/θ³ [φ]ײ`` is the left Jacobian of SO(3)
    (``θ = |φ|``), applied without forming the matrix. ``ω`` is in the space ``exp(φ)`` maps
    into (``Ṙ Rᵀ = [ω]×``), as everywhere in this module.

    Parameters
    ----------
    rotvec
        Rotation vectors ``φ`` (axis × angle, radians) ``(..., 3)``.
    rate
        Their time derivatives ``φ̇`` ``(..., 3)``, broadcastable with ``rotvec``.

    Returns
    -------
    FloatArray
        ``ω`` ``(..., 3)``, radians per second.
    """
    phi = as_array(rotvec, "rotvec", (3,))
    rate = as_array(rate, "rate", (3,))
    _, first, second, _ = _jacobian_terms(phi)
    cross = np.cross(phi, rate)
    return rate + first[..., None] * cross + second[..., None] * np.cross(phi, cross)


def rotvec_rate_from_angular(rotvec: Any, angular: Any) -> FloatArray:
    """Rate ``φ̇ = J_l(φ)⁻¹ ω`` of the rotation vector of a rotation turning at angular velocity ``ω``.

    ``J_l(φ)⁻¹ = I - ½[φ]× + (1 - (θ/2)·cot(θ/2))/θ² [φ]ײ``, finite for ``θ = |φ| < 2π``
    (offsets between two rotations along the shortest arc have ``θ <= π``). The inverse of
    :func:`angular_from_rotvec_rate`.

    Parameters
    ----------
    rotvec
        Rotation vectors ``φ`` ``(..., 3)`` with angles below ``2π``.
    angular
        Angular velocities ``ω`` ``(..., 3)``, broadcastable with ``rotvec``.
    """
    phi = as_array(rotvec, "rotvec", (3,))
    omega = as_array(angular, "angular", (3,))
    _, _, _, inverse = _jacobian_terms(phi)
    cross = np.cross(phi, omega)
    return omega - 0.5 * cross + inverse[..., None] * np.cross(phi, cross)


# --- finite differences --------------------------------------------------------------------------------


def angular_velocity(before: Any, after: Any, dt: Any) -> FloatArray:
    """Constant angular velocity ``(..., 3)`` that turns unit quaternions ``before`` into ``after`` in ``dt``.

    ``rotvec(after · before⁻¹) / dt``: the shortest arc between the two (so turns of more than
    half a revolution per step alias), exact for a rotation at constant angular velocity.
    """
    a = as_array(before, "before", (4,))
    b = as_array(after, "after", (4,))
    step = as_array(dt, "dt")
    if np.any(step <= 0.0):
        raise InvalidInputError(f"dt must be positive seconds, got {float(np.min(step))}")
    return rotvec_from_quat(quat_multiply(b, quat_conjugate(a))) / step[..., None]


def pose_velocity(before: Pose, after: Pose, dt: Any) -> PoseVelocity:
    """Finite-difference velocity of the motion from ``before`` to ``after`` over ``dt`` seconds.

    Parameters
    ----------
    before, after
        Poses ``(..., J)`` of one skeleton.
    dt
        Positive seconds, scalar or shaped like the batch axes ``(...)``.
    """
    if before.shape != after.shape:
        raise SkeletonMismatchError(f"before has shape {before.shape} but after has {after.shape}")
    step = as_array(dt, "dt")
    if np.any(step <= 0.0):
        raise InvalidInputError(f"dt must be positive seconds, got {float(np.min(step))}")
    per_joint = step[..., None, None]
    with trusted():
        return PoseVelocity(
            (after.translations - before.translations) / per_joint,
            angular_velocity(before.rotations, after.rotations, step[..., None]),
            (after.scales - before.scales) / per_joint,
        )


# --- blending ------------------------------------------------------------------------------------------


def _stack(items: Any, kind: type, fields: tuple[str, ...], name: str) -> list[FloatArray]:
    if isinstance(items, kind):
        return [getattr(items, f) for f in fields]
    seq = list(items)
    if not seq:
        raise InvalidInputError(f"{name} must hold at least one layer, got an empty sequence")
    for k, item in enumerate(seq):
        if not isinstance(item, kind):
            raise InvalidInputError(f"{name}[{k}] must be a {kind.__name__}, got {type(item).__name__}")
    return [np.stack([getattr(item, f) for item in seq]) for f in fields]


def blend_velocity(
    poses: Pose | Sequence[Pose],
    velocities: PoseVelocity | Sequence[PoseVelocity],
    weights: Any,
    *,
    mask: Any = None,
    weight_rates: Any = None,
) -> PoseVelocity:
    """Velocity of :func:`~engine.anim.blending.blend`'s result, from each layer's pose and velocity.

    ``blend`` sums the layers' rotations after aligning each to the hemisphere of a reference
    (the first layer with weight at that joint), normalises the sum, and averages translations
    and scales. Its exact time derivative, with per-joint weights ``w = weights · mask`` and
    their rates ``ẇ``, is

    - translations (and likewise scales): ``(Σ w v + Σ ẇ (t - t̄)) / W`` with ``W = Σ w``;
    - rotations: with ``s = Σ σ w q`` (signs ``σ`` of the alignment), ``r = s/|s|`` and
      ``ṡ = Σ σ (w ½ω q + ẇ q)``: ``ṙ = (ṡ - r (r·ṡ)) / |s|`` and ``ω = 2 ṙ r*``.

    The layers' total weight per joint is assumed to be at least ``blend``'s rest threshold, so
    the rest pose takes no part (as in weights that sum to 1).

    Parameters
    ----------
    poses
        ``N`` layers: poses ``(..., J)`` or one stacked pose ``(N, ..., J)``.
    velocities
        Their velocities, the same way.
    weights
        ``(N,)``, ``(N, *batch)`` or per joint ``(N, *batch, J)``, non-negative, with a positive
        total at every joint.
    mask
        Optional per-layer joint weights ``(N, J)`` (``blend``'s ``mask``).
    weight_rates
        Optional ``d weights / dt``, shaped like ``weights`` (``None``: constant weights).

    Returns
    -------
    PoseVelocity
        ``(..., J)``.
    """
    t, r, s = _stack(poses, Pose, ("translations", "rotations", "scales"), "poses")
    v, omega, ds = _stack(velocities, PoseVelocity, ("linear", "angular", "scaling"), "velocities")
    if r.shape[:-1] != v.shape[:-1]:
        raise SkeletonMismatchError(f"poses are shaped {r.shape[:-1]} but velocities {v.shape[:-1]}")
    layers, batch, joints = r.shape[0], r.shape[1:-2], r.shape[-2]
    w = as_array(weights, "weights")
    per_joint = w.shape == (layers, *batch, joints)
    if not per_joint and (w.ndim == 0 or w.shape[0] != layers or w.shape[1:] != batch[len(batch) - (w.ndim - 1) :]):
        raise InvalidInputError(
            f"weights must have shape ({layers},), ({layers}, *{batch}) or ({layers}, *{batch}, {joints}), "
            f"got {w.shape}"
        )
    if np.any(w < 0.0):
        raise InvalidInputError(f"weights must be non-negative, got {float(w.min())}")
    rates = np.zeros_like(w) if weight_rates is None else as_array(weight_rates, "weight_rates")
    if rates.shape != w.shape:
        raise InvalidInputError(f"weight_rates must be shaped like weights {w.shape}, got {rates.shape}")
    if not per_joint:
        expand = (layers,) + (1,) * (len(batch) - (w.ndim - 1)) + w.shape[1:] + (1,)
        w = np.broadcast_to(w.reshape(expand), (layers, *batch, joints))
        rates = np.broadcast_to(rates.reshape(expand), (layers, *batch, joints))
    if mask is not None:
        mask = as_array(mask, "mask")
        if mask.shape != (layers, joints):
            raise SkeletonMismatchError(f"mask must have shape ({layers}, {joints}), got {mask.shape}")
        if np.any(mask < 0.0):
            raise InvalidInputError(f"mask must be non-negative, got {float(mask.min())}")
        shaped = mask.reshape((layers,) + (1,) * len(batch) + (joints,))
        w, rates = w * shaped, rates * shaped
    total = w.sum(axis=0)
    if np.any(total <= 0.0):
        raise InvalidInputError("weights must have a positive total at every joint of every character, got 0")
    inverse = 1.0 / total[..., None]

    def averaged(values: FloatArray, speeds: FloatArray) -> FloatArray:
        mean = np.einsum("n...,n...k->...k", w, values) * inverse
        moving = np.einsum("n...,n...k->...k", rates, values - mean)
        return (np.einsum("n...,n...k->...k", w, speeds) + moving) * inverse

    reference = np.take_along_axis(r, np.argmax(w > 0.0, axis=0)[None, ..., None], axis=0)
    sign = np.where(np.einsum("n...k,n...k->n...", r, reference) < 0.0, -1.0, 1.0)
    signed_w, signed_rates = sign * w, sign * rates
    pure = np.concatenate((omega, np.zeros((*omega.shape[:-1], 1))), axis=-1)
    spin = 0.5 * quat_multiply(pure, r)  # q̇ of each layer
    total_q = np.einsum("n...,n...k->...k", signed_w, r)
    rate_q = np.einsum("n...,n...k->...k", signed_w, spin) + np.einsum("n...,n...k->...k", signed_rates, r)
    norm = np.sqrt(np.einsum("...k,...k->...", total_q, total_q))[..., None]
    unit = total_q / norm
    tangent = (rate_q - unit * np.einsum("...k,...k->...", unit, rate_q)[..., None]) / norm
    angular = 2.0 * quat_multiply(tangent, quat_conjugate(unit))[..., :3]
    with trusted():
        return PoseVelocity(averaged(t, v), angular, averaged(s, ds))


def additive_velocity(
    base: Pose,
    base_velocity: PoseVelocity,
    delta: Pose,
    delta_velocity: PoseVelocity,
    weight: Any = 1.0,
    mask: Any = None,
) -> PoseVelocity:
    """Velocity of :func:`~engine.anim.additive.apply_additive`'s result ``(base, delta, weight, mask)``.

    With per-joint weights ``w = weight · mask`` (held constant):

    - translations: ``v_base + w v_delta``;
    - rotations: the result is ``P · q_base`` with ``P = exp(w φ)``, ``φ = log Δ`` (the shortest
      arc), so ``ω = J_l(wφ) w J_l(φ)⁻¹ ω_Δ + R(P) ω_base``;
    - scales: ``ṡ_base (1 + w (Δs - 1)) + s_base w Δṡ``.

    Parameters
    ----------
    base, base_velocity
        The pose the delta is added to ``(..., J)`` and its velocity.
    delta, delta_velocity
        The delta pose (:func:`~engine.anim.additive.additive_pose`) and its rate of change: for a
        delta ``(t - t_ref, q q_ref⁻¹, s / s_ref)`` of a moving pose against a fixed reference that
        is ``(v, ω, ṡ / s_ref)``.
    weight
        Scalar or one weight per character ``(...)``, non-negative.
    mask
        Optional per-joint weights ``(J,)``, or per character and joint ``(..., J)``.
    """
    if base.shape != delta.shape or base.shape != base_velocity.shape or base.shape != delta_velocity.shape:
        raise SkeletonMismatchError(
            f"base {base.shape}, delta {delta.shape} and their velocities "
            f"{base_velocity.shape}, {delta_velocity.shape} must share one shape"
        )
    w = as_array(weight, "weight")
    if np.any(w < 0.0):
        raise InvalidInputError(f"weight must be non-negative, got {float(w.min())}")
    w = np.broadcast_to(w[..., None], base.shape)
    if mask is not None:
        joint_weights = as_array(mask, "mask")
        if joint_weights.shape not in ((base.num_joints,), base.shape):
            raise SkeletonMismatchError(
                f"mask must have shape ({base.num_joints},) or {base.shape}, got {joint_weights.shape}"
            )
        w = w * joint_weights
    per = w[..., None]
    rotation = delta.rotations * np.where(delta.rotations[..., 3:] < 0.0, -1.0, 1.0)  # canonical: w >= 0
    phi = rotvec_from_quat(rotation)
    spin = angular_from_rotvec_rate(per * phi, per * rotvec_rate_from_angular(phi, delta_velocity.angular))
    partial = quat_from_rotvec(per * phi)
    with trusted():
        return PoseVelocity(
            base_velocity.linear + per * delta_velocity.linear,
            spin + quat_rotate(partial, base_velocity.angular),
            base_velocity.scaling * (1.0 + per * (delta.scales - 1.0)) + base.scales * per * delta_velocity.scaling,
        )
