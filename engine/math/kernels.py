"""Unchecked math kernels: the one copy of every quaternion and vector formula in Ossa.

The public functions of :mod:`engine.math` are *validation + kernel* (scipy's split between
``Rotation`` and its backend): they check shapes, finiteness and degenerate input, then call a
kernel here. Code that has already validated its data and runs in a loop (the IK solvers, the
per-frame jobs of :mod:`engine.anim`, the camera's constraints) calls the kernels directly.

Contract of every kernel: float64 arrays, quaternions ``(x, y, z, w)`` on the last axis
(``(..., 4)``), vectors ``(..., 3)``, numpy broadcasting over the leading axes, unit quaternions
where the docstring says so, **no checks** (NaN in, NaN out; a zero quaternion is not caught).
The ``*_into`` kernels write into a given output instead of allocating and take their inputs
*component-first* — a sequence of the four (or three) component arrays, e.g. ``q[..., 0]`` … or
the rows of a batch-innermost :class:`~engine.anim.layout.PoseBuffer` — so one formula serves
both memory layouts. Conventions (Hamilton product, active rotations) are in
``docs/conventions.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.math._checks import FloatArray

BoolArray = npt.NDArray[np.bool_]
#: Component-first input: a sequence of component arrays, or an array whose first axis indexes them.
Components = Sequence[FloatArray] | FloatArray

#: The identity rotation.
IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])
_X_AXIS = np.array([1.0, 0.0, 0.0])
#: Below this ``|v|`` of a unit quaternion (half-angle sine) the series forms of log, exp and
#: power are used: their first dropped term is far below double precision.
SERIES_THRESHOLD = 1e-4


# --- vectors -----------------------------------------------------------------------------------


def dot(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a · b`` over the last axis (einsum: far cheaper than ``sum(axis=-1)`` over 3 or 4 items)."""
    return np.einsum("...i,...i->...", a, b)


def cross(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a × b`` over the last axis (right-handed), broadcasting."""
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx), axis=-1)


def norm(v: FloatArray) -> FloatArray:
    """Euclidean length over the last axis."""
    return np.sqrt(np.einsum("...i,...i->...", v, v))


def unit(v: FloatArray, eps: Any = 1e-12) -> tuple[FloatArray, BoolArray]:
    """``(v / |v|, |v| > eps)``; where the length is ``<= eps`` the direction is ``+X`` and the flag False."""
    length = norm(v)
    ok = length > eps
    safe = np.where(ok, length, 1.0)[..., None]
    return np.where(ok[..., None], v / safe, _X_AXIS), ok


def perpendicular(v: FloatArray) -> FloatArray:
    """A unit vector perpendicular to each unit ``v``: ``v`` crossed with its least-aligned axis."""
    axis = np.eye(3)[np.argmin(np.abs(v), axis=-1)]
    return unit(cross(v, axis))[0]


# --- quaternion algebra ---------------------------------------------------------------------------


def mul_into(out: Components, a: Components, b: Components) -> None:
    """Hamilton product ``a * b`` component-first: ``out``, ``a``, ``b`` are ``(x, y, z, w)`` arrays.

    ``out`` may be ``a`` or ``b`` (the inputs are read in full first).
    """
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by - ax * bz + ay * bw + az * bx
    z = aw * bz + ax * by - ay * bx + az * bw
    w = aw * bw - ax * bx - ay * by - az * bz
    for k, value in enumerate((x, y, z, w)):
        if isinstance(out, np.ndarray):
            out[k, ...] = value  # a 0-d view even for a single quaternion
        else:
            out[k][...] = value


#: Below this many products :func:`mul` is one batched matrix product (``left_matrix(a) @ b``: three
#: numpy calls); above it the component form (memory-bound, fewer multiplies) is faster.
SMALL_BATCH = 1024


def mul(a: FloatArray, b: FloatArray) -> FloatArray:
    """Hamilton product ``a * b`` (``b`` acts first) of ``(..., 4)`` arrays, broadcasting."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    if math.prod(shape) <= 4 * SMALL_BATCH:  # the same product as a matrix: per-call overhead wins
        return np.matmul(left_matrix(a), b[..., None])[..., 0]
    out = np.empty(shape)
    mul_into(_last_axis(out), _last_axis(a), _last_axis(b))
    return out


def _last_axis(q: FloatArray) -> tuple[FloatArray, ...]:
    """The components of ``(..., k)`` as ``k`` views (cheaper than ``moveaxis`` for small arrays)."""
    return tuple(q[..., k] for k in range(q.shape[-1]))


def conj(q: FloatArray) -> FloatArray:
    """Conjugate ``(-x, -y, -z, w)``: the inverse of a unit quaternion."""
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def normalize(q: FloatArray) -> FloatArray:
    """``q / |q|`` for quaternions (or vectors) known to be far from zero."""
    return q / norm(q)[..., None]


def canonical(q: FloatArray) -> FloatArray:
    """The representative of ``±q`` with ``w >= 0`` (ties broken on x, then y, then z)."""
    key = q[..., 3]
    for axis in (0, 1, 2):  # fixed 3-step tie-break, not a loop over elements
        key = np.where(key == 0.0, q[..., axis], key)
    return np.where((key < 0.0)[..., None], -q, q)


def rotate_into(out: FloatArray, q: FloatArray, v: FloatArray) -> None:
    """``out = v + w·t + u × t`` with ``t = 2 u × v`` (``u = q.xyz``): ``v`` rotated by unit ``q``."""
    qx, qy, qz, qw = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    tx = qy * vz - qz * vy
    tx += tx
    ty = qz * vx - qx * vz
    ty += ty
    tz = qx * vy - qy * vx
    tz += tz
    out[..., 0] = vx + qw * tx + (qy * tz - qz * ty)
    out[..., 1] = vy + qw * ty + (qz * tx - qx * tz)
    out[..., 2] = vz + qw * tz + (qx * ty - qy * tx)


def rotate(q: FloatArray, v: FloatArray) -> FloatArray:
    """Vectors ``v`` ``(..., 3)`` rotated by unit quaternions ``q`` ``(..., 4)``, broadcasting."""
    out = np.empty((*np.broadcast_shapes(q.shape[:-1], v.shape[:-1]), 3))
    rotate_into(out, q, v)
    return out


def left_matrix(q: FloatArray) -> FloatArray:
    """``(..., 4, 4)`` matrices with ``left_matrix(q) @ p == q * p``: one matmul turns many quaternions."""
    return q[..., _LEFT_INDEX] * _LEFT_SIGN


_LEFT_INDEX = np.array([[3, 2, 1, 0], [2, 3, 0, 1], [1, 0, 3, 2], [0, 1, 2, 3]])
_LEFT_SIGN = np.array([[1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0], [-1.0, 1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, 1.0]])


# --- matrices ---------------------------------------------------------------------------------


def rotation_matrix_into(
    out: FloatArray,
    q: Components,
    scale: Components | None = None,
    temp: FloatArray | None = None,
) -> None:
    """Rotation matrices of unit quaternions, times a column scale, written into ``out[i, k]`` ``(3, 3, ...)``.

    ``q`` is ``(x, y, z, w)`` component-first; ``R = [[1 - 2(yy + zz), 2(xy - zw), 2(xz + yw)], …]``
    (column vectors, ``R @ v``); with ``scale`` ``(s0, s1, s2)`` column ``k`` is multiplied by
    ``s[k]`` (``R · diag(s)``, the ``R·S`` of ``T·R·S``). The entries are computed in place in
    ``out`` with two temporaries (``temp`` ``(2, ...)`` if given): long runs stay in cache.
    """
    x, y, z, w = q
    pair = np.empty((2, *out.shape[2:])) if temp is None else temp
    a, b = pair[0, ...], pair[1, ...]  # 0-d views for a single matrix, never numpy scalars
    r = out
    for (i, k), (p, p1, u, v) in (((0, 1), (x, y, z, w)), ((0, 2), (x, z, y, w)), ((1, 2), (y, z, x, w))):
        # r[i, k] = p·p1 ∓ u·v and r[k, i] = p·p1 ± u·v: xy ∓ zw, xz ± yw, yz ∓ xw (before the factor 2)
        np.multiply(p, p1, out=r[i, k, ...])
        np.multiply(u, v, out=a)
        if (i, k) == (0, 2):
            np.subtract(r[i, k, ...], a, out=r[k, i, ...])
            r[i, k, ...] += a
        else:
            np.add(r[i, k, ...], a, out=r[k, i, ...])
            r[i, k, ...] -= a
    np.multiply(x, x, out=a)
    np.multiply(y, y, out=b)
    np.add(a, b, out=r[2, 2, ...])  # xx + yy
    np.multiply(z, z, out=r[0, 0, ...])
    np.add(a, r[0, 0, ...], out=r[1, 1, ...])  # xx + zz
    r[0, 0, ...] += b  # yy + zz
    if scale is None:
        r *= 2.0
        for k in range(3):
            np.subtract(1.0, r[k, k, ...], out=r[k, k, ...])  # 1 - 2d
        return
    for k in range(3):  # off the diagonal: 2(...)·s_k; on it: (1 - 2d)·s_k = s_k - 2·d·s_k
        np.multiply(scale[k], 2.0, out=a)
        r[:, k] *= a
        np.subtract(scale[k], r[k, k, ...], out=r[k, k, ...])


def rotation_matrix(q: FloatArray) -> FloatArray:
    """``(..., 3, 3)`` rotation matrices (column vectors) of unit quaternions ``(..., 4)``."""
    out = np.empty((*q.shape[:-1], 3, 3))
    lead = out.ndim - 2
    rotation_matrix_into(out.transpose(lead, lead + 1, *range(lead)), _last_axis(q))  # (3, 3, ...) view
    return out


def from_matrix_into(out: FloatArray, m: FloatArray) -> None:
    """Unit quaternions ``(..., 4)`` with ``w >= 0`` from rotation matrices ``(..., 3, 3)`` (Shepperd).

    Rows of ``K = 4 q qᵀ`` from the matrix entries; the row with the largest diagonal entry is
    well conditioned near 0° and 180° alike.
    """
    m00, m01, m02 = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    m10, m11, m12 = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    m20, m21, m22 = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    k = np.empty((*m.shape[:-2], 4, 4))
    one_plus, one_minus = 1.0 + m00, 1.0 - m00
    plus, minus = m11 + m22, m11 - m22
    np.subtract(one_plus, plus, out=k[..., 0, 0])  # 4x²
    np.add(one_minus, minus, out=k[..., 1, 1])  # 4y²
    np.subtract(one_minus, minus, out=k[..., 2, 2])  # 4z²
    np.add(one_plus, plus, out=k[..., 3, 3])  # 4w²
    np.add(m01, m10, out=k[..., 0, 1])  # 4xy
    np.add(m02, m20, out=k[..., 0, 2])  # 4xz
    np.add(m12, m21, out=k[..., 1, 2])  # 4yz
    np.subtract(m21, m12, out=k[..., 0, 3])  # 4wx
    np.subtract(m02, m20, out=k[..., 1, 3])  # 4wy
    np.subtract(m10, m01, out=k[..., 2, 3])  # 4wz
    k[..., 1, 0], k[..., 2, 0], k[..., 2, 1] = k[..., 0, 1], k[..., 0, 2], k[..., 1, 2]
    k[..., 3, 0], k[..., 3, 1], k[..., 3, 2] = k[..., 0, 3], k[..., 1, 3], k[..., 2, 3]
    choice = np.argmax(np.diagonal(k, axis1=-2, axis2=-1), axis=-1)
    row = np.take_along_axis(k, choice[..., None, None], axis=-2)[..., 0, :]
    scale = 1.0 / np.sqrt(np.einsum("...i,...i->...", row, row))
    np.multiply(row, np.where(row[..., 3] < 0.0, -scale, scale)[..., None], out=out)


def from_matrix(m: FloatArray) -> FloatArray:
    """Unit quaternions ``(..., 4)``, ``w >= 0``, of rotation matrices ``(..., 3, 3)``."""
    out = np.empty((*m.shape[:-2], 4))
    from_matrix_into(out, m)
    return out


# --- angles -------------------------------------------------------------------------------------


def from_axis_angle(axis: FloatArray, angle: Any) -> FloatArray:
    """Rotation by ``angle`` ``(...)`` radians about the **unit** ``axis`` ``(..., 3)``."""
    half = 0.5 * np.asarray(angle)[..., None]
    xyz = axis * np.sin(half)
    w = np.broadcast_to(np.cos(half), (*xyz.shape[:-1], 1))
    return np.concatenate((xyz, w), axis=-1)


def log(q: FloatArray) -> FloatArray:
    """Principal logarithm ``(θ/2)·axis`` ``(..., 3)`` of unit quaternions (``q`` and ``-q`` alike)."""
    q = canonical(q)
    sin_half = norm(q[..., :3])
    half = np.arctan2(sin_half, q[..., 3])
    small = sin_half < SERIES_THRESHOLD
    scale = np.where(small, 1.0 + sin_half**2 / 6.0, half / np.where(small, 1.0, sin_half))
    return q[..., :3] * scale[..., None]


def exp(v: FloatArray) -> FloatArray:
    """Exponential ``(sin|v|·v/|v|, cos|v|)`` of pure quaternions ``(..., 3)``."""
    n = norm(v)
    small = n < SERIES_THRESHOLD
    scale = np.where(small, 1.0 - n**2 / 6.0, np.sin(n) / np.where(small, 1.0, n))
    return np.concatenate((v * scale[..., None], np.cos(n)[..., None]), axis=-1)


def power(q: FloatArray, t: Any) -> FloatArray:
    """``q ** t``: the shortest-arc rotation of unit ``q`` scaled by ``t`` ``(...)`` (``slerp(1, q, t)``).

    The half angle is ``atan2(|v|, |w|)``, exact for tiny and large angles; below a ``|v|`` of
    1e-12 ``sin(tθ/2)/sin(θ/2)`` is ``t`` to double precision. ``q`` and ``-q`` give the same
    (:func:`canonical` picks the arc of a half turn).
    """
    q = canonical(q)  # the shortest arc (w >= 0; a half turn breaks the tie as canonical() does)
    vector = q[..., :3]
    sin_half = norm(vector)
    half = np.arctan2(sin_half, q[..., 3])
    small = sin_half < 1e-12
    t = np.asarray(t, dtype=np.float64)
    scale = np.where(small, t, np.sin(t * half) / np.where(small, 1.0, sin_half))
    out = np.empty(np.broadcast_shapes(q.shape, (*np.shape(scale), 4)))
    out[..., :3] = vector * scale[..., None]
    out[..., 3] = np.cos(t * half)
    return out


def shortest_arc(u: FloatArray, v: FloatArray, fallback: FloatArray | None = None) -> FloatArray:
    """The shortest rotation taking direction ``u`` onto direction ``v`` (neither needs unit length).

    Identity where either vector is zero. For opposite directions the half turn is about
    ``fallback`` made perpendicular to ``u`` (any perpendicular when ``fallback`` is None or
    parallel to ``u``). With ``n = u × v``, ``d = u · v`` and ``s = |u||v|`` the rotation is
    ``(n, s + d)`` normalised; for ``d < 0`` the same rotation is written
    ``((s − d)·n/|n|, |n|)``, which stays well conditioned up to 180°.
    """
    scale = norm(u) * norm(v)
    d = dot(u, v)
    n = cross(u, v)
    n_len = norm(n)
    axis_ok = n_len > 1e-12 * scale
    axis = n / np.where(axis_ok, n_len, 1.0)[..., None]
    if not axis_ok.all():
        un = unit(u)[0]
        if fallback is None:
            side = perpendicular(un)
        else:
            side, side_ok = unit(fallback - dot(fallback, un)[..., None] * un)
            side = np.where(side_ok[..., None], side, perpendicular(un))
        axis = np.where(axis_ok[..., None], axis, side)
    ahead = d >= 0.0
    xyz = np.where(ahead[..., None], n, (scale - d)[..., None] * axis)
    w = np.where(ahead, scale + d, n_len)
    q = np.concatenate((xyz, w[..., None]), axis=-1)
    length = norm(q)
    valid = length > 0.0
    return np.where(valid[..., None], q / np.where(valid, length, 1.0)[..., None], IDENTITY)


# --- swing and twist ----------------------------------------------------------------------------------


def swing_twist(q: FloatArray, axis: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Split unit ``q`` into ``swing * twist``: ``twist`` about the unit ``axis``, ``swing`` perpendicular to it.

    The twist is ``q``'s projection onto the axis, ``(axis·(q.xyz·axis), w)`` normalised; the
    swing turns ``axis`` onto ``q·axis`` (its own axis is perpendicular to ``axis``). For a swing of
    exactly 180° the twist is undefined: it is then the identity.
    """
    along = dot(q[..., :3], axis)[..., None]
    projected = along * axis
    w = np.broadcast_to(q[..., 3:], (*projected.shape[:-1], 1))
    raw = np.concatenate((projected, w), axis=-1)
    length = norm(raw)[..., None]
    degenerate = length <= 1e-12
    twist = np.where(degenerate, IDENTITY, raw / np.where(degenerate, 1.0, length))
    return mul(q, conj(twist)), twist


def swing_twist_clamp(q: FloatArray, axis: FloatArray, max_swing: Any, max_twist: Any) -> tuple[FloatArray, BoolArray]:
    """Limit the swing angle of unit ``q`` to ``max_swing`` and its twist about ``axis`` to ``±max_twist``.

    ``q = swing · twist`` (:func:`swing_twist`); the swing keeps its axis with its angle clamped
    to ``[0, max_swing]`` (the moved ``axis`` ends exactly on the cone of that half-angle), the
    signed twist angle is clipped to ``[-max_twist, max_twist]``, and the two are recomposed.
    Returns ``(clamped, changed)``: ``clamped`` is ``q`` itself (same values, same sign) where
    both parts were within their limits, and ``changed`` ``(...)`` flags the others.
    """
    swing, twist = swing_twist(q, axis)
    swing_axis, swing_ok = unit(swing[..., :3])
    swing_axis = swing_axis * np.where(swing[..., 3] < 0.0, -1.0, 1.0)[..., None]
    swing_angle = 2.0 * np.arctan2(norm(swing[..., :3]), np.abs(swing[..., 3]))
    sign = np.where(twist[..., 3] < 0.0, -1.0, 1.0)
    twist_angle = 2.0 * np.arctan2(sign * dot(twist[..., :3], axis), sign * twist[..., 3])  # signed, in [-π, π]
    swing_out = swing_ok & (swing_angle > max_swing)
    twist_out = np.abs(twist_angle) > max_twist
    changed = swing_out | twist_out
    limited_swing = from_axis_angle(swing_axis, np.where(swing_ok, np.minimum(swing_angle, max_swing), 0.0))
    limited_twist = from_axis_angle(axis, np.clip(twist_angle, -max_twist, max_twist))
    return np.where(changed[..., None], mul(limited_swing, limited_twist), q), changed
