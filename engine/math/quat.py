"""Batched quaternion functions over arrays shaped ``(..., 4)``.

Layout ``(x, y, z, w)`` like glTF, Hamilton product, active rotations of column vectors; "a then
b" composes as ``quat_multiply(b, a)``. See ``docs/conventions.md``. Every function broadcasts its
arguments like numpy and has no Python loop over elements.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import DegenerateInputError, InvalidInputError
from engine.math import kernels
from engine.math._blocks import blockwise
from engine.math._checks import FloatArray, as_array, check_finite, nonzero_norm

#: Below this ``1 - |dot|`` slerp falls back to a normalised lerp (the angle is under ~0.08°).
SLERP_NLERP_THRESHOLD = 1e-6


def quat_identity(shape: tuple[int, ...] = ()) -> FloatArray:
    """Identity quaternions ``(0, 0, 0, 1)`` shaped ``shape + (4,)``."""
    q = np.zeros((*shape, 4))
    q[..., 3] = 1.0
    return q


def quat_multiply(a: Any, b: Any) -> FloatArray:
    """Hamilton product ``a * b``: the rotation that applies ``b`` first, then ``a``.

    Examples
    --------
    >>> import numpy as np
    >>> yaw = quat_from_axis_angle([0, 1, 0], np.pi / 2)
    >>> pitch = quat_from_axis_angle([1, 0, 0], np.pi / 2)
    >>> q = quat_multiply(yaw, pitch)        # pitch first, then yaw
    >>> np.round(quat_rotate(q, [0, 0, 1]), 6) + 0.0
    array([ 0., -1.,  0.])
    """
    return kernels.mul(as_array(a, "a", (4,)), as_array(b, "b", (4,)))


def quat_conjugate(q: Any) -> FloatArray:
    """Conjugate ``(-x, -y, -z, w)``; the inverse rotation for unit quaternions."""
    return kernels.conj(as_array(q, "q", (4,)))


def quat_norm(q: Any) -> FloatArray:
    """Euclidean norm ``|q|`` shaped ``(...)``."""
    q = as_array(q, "q", (4,))
    return np.sqrt(np.einsum("...i,...i->...", q, q))


def quat_normalize(q: Any) -> FloatArray:
    """Unit quaternions ``q / |q|``.

    Raises
    ------
    DegenerateInputError
        If any quaternion has (nearly) zero length: it represents no rotation, and silently
        returning identity would hide corrupt data.
    """
    q = as_array(q, "q", (4,))
    norm = np.sqrt(np.einsum("...i,...i->...", q, q))
    nonzero_norm(norm, "q", "quaternion")
    return q / norm[..., None]


def quat_inverse(q: Any) -> FloatArray:
    """Multiplicative inverse ``conj(q) / |q|²``, correct for non-unit quaternions too."""
    q = as_array(q, "q", (4,))
    norm2 = np.einsum("...i,...i->...", q, q)
    nonzero_norm(np.sqrt(norm2), "q", "quaternion")
    return q * np.array([-1.0, -1.0, -1.0, 1.0]) / norm2[..., None]


def quat_canonical(q: Any) -> FloatArray:
    """The representative of ``±q`` with ``w >= 0`` (ties broken on x, then y, then z)."""
    return kernels.canonical(as_array(q, "q", (4,)))


def quat_negate(q: Any) -> FloatArray:
    """``-q``: the same rotation on the other sheet of the double cover."""
    return -as_array(q, "q", (4,))


def quat_dot(a: Any, b: Any) -> FloatArray:
    """Four-dimensional dot product shaped ``(...)``; ``|dot|`` measures orientation similarity."""
    a = as_array(a, "a", (4,))
    b = as_array(b, "b", (4,))
    return np.einsum("...i,...i->...", *np.broadcast_arrays(a, b))


def quat_angle(a: Any, b: Any) -> FloatArray:
    """Rotation angle in ``[0, π]`` between orientations ``a`` and ``b`` (unit quaternions).

    Uses ``|dot|`` (``q`` and ``-q`` are the same orientation) and the stable
    ``4·atan2(|a - b'|, |a + b'|)`` form, accurate near 0 where ``acos`` is not: the
    atan2 gives a quarter of the rotation angle (half the 4-D angle between the quaternions,
    which is itself half the rotation angle).

    Examples
    --------
    >>> import numpy as np
    >>> float(quat_angle([0, 0, 0, 1], quat_from_axis_angle([0, 0, 1], np.pi / 2)))
    1.5707963267948966
    """
    a = as_array(a, "a", (4,))
    b = as_array(b, "b", (4,))
    a, b = np.broadcast_arrays(a, b)
    b = np.where((np.einsum("...i,...i->...", a, b) < 0)[..., None], -b, b)
    return 4.0 * np.arctan2(np.linalg.norm(a - b, axis=-1), np.linalg.norm(a + b, axis=-1))


def quat_difference(a: Any, b: Any) -> FloatArray:
    """``inv(a) * b``: the rotation that takes orientation ``a`` to ``b``, in ``a``'s frame."""
    return kernels.mul(quat_inverse(a), as_array(b, "b", (4,)))


def quat_from_axis_angle(axis: Any, angle: Any) -> FloatArray:
    """Rotation by ``angle`` radians about ``axis`` (normalised here; zero length raises)."""
    axis = as_array(axis, "axis", (3,))
    angle = as_array(angle, "angle")
    norm = kernels.norm(axis)
    nonzero_norm(norm, "axis", "axis")
    return kernels.from_axis_angle(axis / norm[..., None], angle)


def quat_from_two_vectors(source: Any, target: Any, fallback: Any = None) -> FloatArray:
    """The shortest rotation ``(..., 4)`` that turns direction ``source`` onto direction ``target``.

    Neither vector needs unit length; a zero vector raises. For opposite directions the half
    turn is about ``fallback`` made perpendicular to ``source`` (any perpendicular when
    ``fallback`` is ``None`` or parallel to it). Stable up to 180° (see
    :func:`engine.math.kernels.shortest_arc`).

    Examples
    --------
    >>> import numpy as np
    >>> q = quat_from_two_vectors([1.0, 0.0, 0.0], [0.0, 2.0, 0.0])
    >>> np.round(quat_rotate(q, [1.0, 0.0, 0.0]), 12) + 0.0
    array([0., 1., 0.])
    """
    u = as_array(source, "source", (3,))
    v = as_array(target, "target", (3,))
    nonzero_norm(kernels.norm(u), "source", "vector")
    nonzero_norm(kernels.norm(v), "target", "vector")
    side = None if fallback is None else as_array(fallback, "fallback", (3,))
    return kernels.shortest_arc(u, v, side)


def axis_angle_from_quat(q: Any) -> tuple[FloatArray, FloatArray]:
    """Unit axis ``(..., 3)`` and angle in ``[0, π]`` of unit quaternions.

    For the identity (no rotation) the axis is ``(1, 0, 0)`` and the angle 0.
    """
    q = quat_canonical(quat_normalize(q))
    sin_half = np.linalg.norm(q[..., :3], axis=-1)
    angle = 2.0 * np.arctan2(sin_half, q[..., 3])
    tiny = sin_half < 1e-12
    axis = np.where(
        tiny[..., None],
        np.array([1.0, 0.0, 0.0]),
        q[..., :3] / np.where(tiny, 1.0, sin_half)[..., None],
    )
    return axis, angle


def quat_from_rotvec(rotvec: Any) -> FloatArray:
    """Rotation vector (axis × angle, radians) to unit quaternion; exact near 0 (``exp(rotvec / 2)``)."""
    return kernels.exp(0.5 * as_array(rotvec, "rotvec", (3,)))


def rotvec_from_quat(q: Any) -> FloatArray:
    """Unit quaternion to rotation vector with angle in ``[0, π]``; exact near 0 (``2 log(q)``)."""
    return 2.0 * kernels.log(quat_normalize(q))


def quat_rotate(q: Any, v: Any) -> FloatArray:
    """Rotate vectors ``v (..., 3)`` by unit quaternions: ``v + 2w(u×v) + 2u×(u×v)``, ``u = q.xyz``."""
    return blockwise(kernels.rotate_into, (3,), (as_array(q, "q", (4,)), 1), (as_array(v, "v", (3,)), 1))


def quat_rotate_sandwich(q: Any, v: Any) -> FloatArray:
    """Rotate vectors by the sandwich ``q (v, 0) q⁻¹``; valid for non-unit ``q`` too."""
    q = as_array(q, "q", (4,))
    v = as_array(v, "v", (3,))
    p = np.concatenate((v, np.zeros((*v.shape[:-1], 1))), axis=-1)
    return kernels.mul(kernels.mul(q, p), quat_inverse(q))[..., :3]


def matrix_from_quat(q: Any) -> FloatArray:
    """3×3 rotation matrices ``(..., 3, 3)`` (column vectors: ``R @ v``) from unit quaternions."""
    return blockwise(_matrix_kernel, (3, 3), (as_array(q, "q", (4,)), 1))


def _matrix_kernel(out: FloatArray, q: FloatArray) -> None:
    lead = out.ndim - 2
    kernels.rotation_matrix_into(out.transpose(lead, lead + 1, *range(lead)), q.transpose(lead, *range(lead)))


def quat_from_matrix(m: Any) -> FloatArray:
    """Unit quaternions from rotation matrices ``(..., 3, 3)`` or ``(..., 4, 4)`` (Shepperd).

    Branches on the largest of ``trace`` and the diagonal elements, so it stays accurate near
    0° and 180° where the single-formula method divides by a tiny number. Returns ``w >= 0``.
    """
    m = as_array(m, "m", finite=False)
    if m.shape[-2:] == (4, 4):
        m = m[..., :3, :3]
    elif m.shape[-2:] != (3, 3) or m.ndim < 2:
        raise InvalidInputError(f"m must have shape (..., 3, 3) or (..., 4, 4), got {m.shape}")
    check_finite(m, "m")
    return blockwise(kernels.from_matrix_into, (4,), (m, 2))


# --- Euler angles -----------------------------------------------------------------------------

_AXES = {"x": 0, "y": 1, "z": 2}


def _parse_order(order: str) -> tuple[list[int], bool]:
    if not isinstance(order, str) or len(order) != 3 or not (order.isupper() or order.islower()):
        raise InvalidInputError(
            f"order must be 3 letters from xyz, all uppercase (intrinsic) or all lowercase (extrinsic), got {order!r}"
        )
    axes = [_AXES.get(c) for c in order.lower()]
    if None in axes or axes[0] == axes[1] or axes[1] == axes[2]:
        raise InvalidInputError(f"order must name axes like 'XYZ' or 'ZXZ' (no axis twice in a row), got {order!r}")
    return [a for a in axes if a is not None], order.islower()


def quat_from_euler(angles: Any, order: str) -> FloatArray:
    """Quaternions from Euler angles ``(..., 3)`` in radians.

    ``order`` follows scipy: uppercase is intrinsic (about the rotating axes, in the order
    listed — the BVH convention), lowercase is extrinsic (about the fixed axes). Intrinsic
    ``"YXZ"`` of ``(yaw, pitch, roll)`` is ``q_yaw * q_pitch * q_roll``.
    """
    axes, extrinsic = _parse_order(order)
    angles = as_array(angles, "angles", (3,))
    elementary = []
    for k, axis in enumerate(axes):
        half = 0.5 * angles[..., k]
        q = np.zeros((*angles.shape[:-1], 4))
        q[..., axis] = np.sin(half)
        q[..., 3] = np.cos(half)
        elementary.append(q)
    a, b, c = elementary
    return kernels.mul(kernels.mul(c, b), a) if extrinsic else kernels.mul(kernels.mul(a, b), c)


def euler_from_quat(q: Any, order: str, gimbal_tolerance: float = 1e-7) -> FloatArray:
    """Euler angles ``(..., 3)`` in radians, the inverse of :func:`quat_from_euler`.

    Angles lie in ``[-π, π]`` (one of the two equivalent triples); the middle angle lies in
    ``[-π/2, π/2]`` for Tait–Bryan orders (``"XYZ"``) and ``[0, π]`` for proper Euler orders
    (``"ZXZ"``), as in scipy.
    Uses the quaternion-native method of Bernardes & Viollet (2022): two ``atan2`` of
    ``hypot`` terms, no ``asin``, so a middle angle at exactly ±90° (gimbal lock, both signs)
    or rounded past it never yields NaN. Within ``gimbal_tolerance`` of the lock the third
    angle is set to 0 and the first takes the whole combined rotation.
    """
    axes, extrinsic = _parse_order(order)
    q = quat_normalize(q)
    if not extrinsic:
        axes = axes[::-1]
    i, j, k = axes
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    w, qi, qj, qk = q[..., 3], q[..., i], q[..., j], q[..., k]
    if symmetric:
        a, b, c, d = w, qi, qj, qk * sign
    else:
        a, b, c, d = w - qj, qi + qk * sign, qj + w, qk * sign - qi
    middle = 2.0 * np.arctan2(np.hypot(c, d), np.hypot(a, b))
    half_sum = np.arctan2(b, a)
    half_diff = np.arctan2(d, c)
    at_zero = np.abs(middle) <= gimbal_tolerance
    at_pi = np.abs(middle - np.pi) <= gimbal_tolerance
    first = np.where(
        at_zero, 2 * half_sum, np.where(at_pi, 2 * half_diff * (-1 if extrinsic else 1), half_sum - half_diff)
    )
    third = np.where(at_zero | at_pi, 0.0, half_sum + half_diff)
    if not symmetric:
        third = third * sign
        middle = middle - np.pi / 2
    if not extrinsic:
        first, third = third, first
    first, third = ((angle + np.pi) % (2 * np.pi) - np.pi for angle in (first, third))
    out = np.stack((first, middle, third), axis=-1)
    locked = at_zero | at_pi
    if not extrinsic and np.any(locked):
        out = _move_locked_angle_first(q, out, locked, order)
    return out


def _move_locked_angle_first(q: FloatArray, angles: FloatArray, locked: FloatArray, order: str) -> FloatArray:
    """At gimbal lock, put the combined angle on the first axis (third = 0), e.g. yaw, not roll.

    The sign the first axis needs depends on the order and on the side of the lock: of the two
    candidates ``(±combined, middle, 0)`` keep the one that reproduces ``q`` more closely.
    """
    plus = np.stack((angles[..., 2], angles[..., 1], np.zeros_like(angles[..., 2])), axis=-1)
    minus = plus * np.array([-1.0, 1.0, 1.0])
    fit_plus = np.abs(np.sum(quat_from_euler(plus, order) * q, axis=-1))
    fit_minus = np.abs(np.sum(quat_from_euler(minus, order) * q, axis=-1))
    best = np.where((fit_minus > fit_plus)[..., None], minus, plus)
    return np.where(locked[..., None], best, angles)


def quat_from_yaw_pitch_roll(yaw: Any, pitch: Any, roll: Any, *, object_to_world: bool = True) -> FloatArray:
    """Seed 000's Euler angles: yaw about Y, pitch about X, roll about Z (radians).

    Object-to-world is ``q_yaw * q_pitch * q_roll`` (roll applied first); world-to-object is
    its conjugate.
    """
    angles = np.stack(
        np.broadcast_arrays(*(as_array(a, n) for a, n in ((yaw, "yaw"), (pitch, "pitch"), (roll, "roll")))), axis=-1
    )
    q = quat_from_euler(angles, "YXZ")
    return q if object_to_world else quat_conjugate(q)


def yaw_pitch_roll_from_quat(q: Any, *, object_to_world: bool = True) -> FloatArray:
    """Inverse of :func:`quat_from_yaw_pitch_roll`: ``(..., 3)`` as (yaw, pitch, roll).

    Pitch lies in ``[-π/2, π/2]``; at gimbal lock (pitch = ±90°, both signs) roll is 0 and yaw
    carries the combined rotation. Never NaN, even for quaternions rounded past unit length.
    """
    q = as_array(q, "q", (4,))
    return euler_from_quat(q if object_to_world else quat_conjugate(q), "YXZ")


# --- interpolation ----------------------------------------------------------------------------


def _expand_t(t: Any) -> FloatArray:
    return as_array(t, "t")[..., None]


def quat_slerp(a: Any, b: Any, t: Any) -> FloatArray:
    """Spherical linear interpolation of unit quaternions along the shortest arc.

    The sign of ``b`` is flipped first (shortest path); nearly equal inputs fall back to a
    normalised lerp (never "return ``a``" whatever ``t``); ``t`` is **not** clamped, so values
    outside ``[0, 1]`` extrapolate at constant angular speed.
    """
    a = as_array(a, "a", (4,))
    b = as_array(b, "b", (4,))
    t = _expand_t(t)
    d = np.sum(a * b, axis=-1, keepdims=True)
    b = np.where(d < 0, -b, b)
    d = np.abs(d)
    near = d > 1.0 - SLERP_NLERP_THRESHOLD
    theta = np.arccos(np.minimum(d, 1.0))
    s = np.sin(theta) + near
    wa = np.where(near, 1.0 - t, np.sin((1.0 - t) * theta) / s)
    wb = np.where(near, t, np.sin(t * theta) / s)
    q = wa * a + wb * b
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_nlerp(a: Any, b: Any, t: Any) -> FloatArray:
    """Normalised linear interpolation along the shortest arc; cheap, not constant-speed."""
    a = as_array(a, "a", (4,))
    b = as_array(b, "b", (4,))
    t = _expand_t(t)
    b = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0, -b, b)
    q = (1.0 - t) * a + t * b
    norm = np.linalg.norm(q, axis=-1, keepdims=True)
    nonzero_norm(norm, "nlerp result", "quaternion")
    return q / norm


def quat_log(q: Any) -> FloatArray:
    """Principal logarithm of unit quaternions: the pure vector ``(θ/2)·axis``, ``(..., 3)``.

    ``q`` and ``-q`` give the same result (the rotation's angle ``θ`` is taken in ``[0, π]``).
    """
    return kernels.log(quat_normalize(q))


def quat_exp(v: Any) -> FloatArray:
    """Exponential of pure quaternions ``(..., 3)``: ``(sin|v|·v/|v|, cos|v|)``."""
    return kernels.exp(as_array(v, "v", (3,)))


def quat_pow(q: Any, exponent: Any) -> FloatArray:
    """``q ** exponent`` for unit quaternions: the rotation scaled by ``exponent`` about its axis.

    Along the shortest arc (``q`` and ``-q`` give the same result), i.e. ``slerp(identity, q, exponent)``.
    """
    return kernels.power(quat_normalize(q), as_array(exponent, "exponent"))


def squad_control_points(keys: Any, axis: int = -2) -> FloatArray:
    """Squad's inner control points ``s_i = q_i · exp(-(log(q_i⁻¹q_{i+1}) + log(q_i⁻¹q_{i-1}))/4)``.

    ``keys`` holds unit quaternions along ``axis`` (a time axis, e.g. ``(..., K, 4)``); signs
    are made continuous first (:func:`unflip`) and the end keys use themselves as neighbours.
    """
    keys = unflip(as_array(keys, "keys", (4,)), axis=axis)
    keys = np.moveaxis(keys, axis, -2)
    prev = np.concatenate((keys[..., :1, :], keys[..., :-1, :]), axis=-2)
    nxt = np.concatenate((keys[..., 1:, :], keys[..., -1:, :]), axis=-2)
    inv = kernels.conj(keys)
    tangent = kernels.log(kernels.mul(inv, nxt)) + kernels.log(kernels.mul(inv, prev))
    s = kernels.mul(keys, kernels.exp(-0.25 * tangent))
    return np.moveaxis(s, -2, axis)


def quat_squad(q1: Any, q2: Any, s1: Any, s2: Any, t: Any) -> FloatArray:
    """Spherical quadrangle interpolation between keys ``q1, q2`` with control points ``s1, s2``.

    ``slerp(slerp(q1, q2, t), slerp(s1, s2, t), 2t(1-t))``; C¹ through keys when the control
    points come from :func:`squad_control_points`. Equals ``q1`` at ``t = 0`` and ``q2`` at 1.
    """
    q1, q2, s1, s2 = (as_array(v, name, (4,)) for v, name in ((q1, "q1"), (q2, "q2"), (s1, "s1"), (s2, "s2")))
    t_arr = as_array(t, "t")
    return quat_slerp(quat_slerp(q1, q2, t_arr), quat_slerp(s1, s2, t_arr), 2.0 * t_arr * (1.0 - t_arr))


def unflip(q: Any, axis: int = -2) -> FloatArray:
    """Flip signs along ``axis`` (a time axis) so consecutive quaternions have ``dot >= 0``.

    Same rotations, continuous components: what interpolation and filtering of a key sequence
    need. The first element keeps its sign.
    """
    q = as_array(q, "q", (4,))
    if axis % q.ndim == q.ndim - 1:
        raise InvalidInputError("axis must be a time axis, not the quaternion component axis")
    moved = np.moveaxis(q, axis, 0)
    if moved.shape[0] < 2:
        return q.copy()
    flips = np.sum(moved[1:] * moved[:-1], axis=-1) < 0
    signs = np.concatenate((np.ones((1, *flips.shape[1:])), np.cumprod(np.where(flips, -1.0, 1.0), axis=0)))
    return np.moveaxis(moved * signs[..., None], 0, axis)


def check_unit(q: Any, name: str = "q", tolerance: float = 1e-6) -> FloatArray:
    """Return ``q`` as an array, raising if any quaternion is not unit length within ``tolerance``."""
    q = as_array(q, name, (4,))
    err = np.abs(np.einsum("...i,...i->...", q, q) - 1.0)
    if np.any(err > tolerance):
        raise DegenerateInputError(f"{name} must hold unit quaternions, got |q|² off by {float(err.max()):.3g}")
    return q
