"""Slow, obvious oracles written straight from the definitions (one joint, one key, one vertex at a time).

They share no code with ``engine`` beyond plain numpy, so a bug in the fast batched functions
cannot hide in them too.
"""

from __future__ import annotations

import math

import numpy as np


def trs_matrix(translation: np.ndarray, rotation: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``T · R · S`` for one joint, the rotation matrix written out from the unit quaternion (x, y, z, w)."""
    x, y, z, w = np.asarray(rotation, dtype=float) / np.linalg.norm(rotation)
    r = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )
    m = np.eye(4)
    m[:3, :3] = r @ np.diag(scale)
    m[:3, 3] = translation
    return m


def local_to_model_recursive(parents: np.ndarray, local: np.ndarray) -> np.ndarray:
    """Model matrices ``(J, 4, 4)`` of one character: ``model(j) = model(parent(j)) @ local(j)``, by recursion."""

    def model(j: int) -> np.ndarray:
        p = int(parents[j])
        return local[j] if p < 0 else model(p) @ local[j]

    return np.stack([model(j) for j in range(len(parents))])


def _slerp_spec(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """glTF 2.0 appendix: ``a = acos(|d|)``, ``s = sign(d)``, ``(sin(a(1-t)) q_k + s sin(a t) q_k+1) / sin a``."""
    d = float(np.dot(a, b))
    s = 1.0 if d >= 0 else -1.0
    angle = math.acos(min(abs(d), 1.0))
    if angle < 1e-9:  # identical keys: every t gives the same rotation
        q = (1 - t) * a + s * t * b
    else:
        q = (math.sin(angle * (1 - t)) * a + s * math.sin(angle * t) * b) / math.sin(angle)
    return q / np.linalg.norm(q)


def interpolate_gltf(times: np.ndarray, values: np.ndarray, interpolation: str, path: str, t: float) -> np.ndarray:
    """Value of one glTF channel at time ``t``, key by key from the specification's formulas.

    ``values`` is ``(K, n)`` for STEP/LINEAR and ``(K, 3, n)`` (in-tangent, value, out-tangent)
    for CUBICSPLINE. Clamps before the first and after the last key. Rotation keys are
    normalised before interpolating (the specification requires unit quaternions).
    """
    times = np.asarray(times, dtype=float)
    values = np.asarray(values, dtype=float)
    rotation = path == "rotation"
    points = values[:, 1] if interpolation == "CUBICSPLINE" else values
    if rotation and interpolation != "CUBICSPLINE":
        points = points / np.linalg.norm(points, axis=-1, keepdims=True)
    cubic_rotation = rotation and interpolation == "CUBICSPLINE"
    if t <= times[0] or t >= times[-1]:
        clamped = points[0] if t <= times[0] else points[-1]
        return _unit(clamped) if cubic_rotation else clamped.copy()
    k = max(i for i in range(len(times)) if times[i] <= t)
    if interpolation == "STEP":
        return points[k].copy()
    td = times[k + 1] - times[k]
    u = (t - times[k]) / td
    if interpolation == "LINEAR":
        if rotation:
            return _slerp_spec(points[k], points[k + 1], u)
        return (1 - u) * points[k] + u * points[k + 1]
    b_k = values[k, 2]  # out-tangent of key k
    a_k1 = values[k + 1, 0]  # in-tangent of key k+1
    p = (
        (2 * u**3 - 3 * u**2 + 1) * points[k]
        + td * (u**3 - 2 * u**2 + u) * b_k
        + (-2 * u**3 + 3 * u**2) * points[k + 1]
        + td * (u**3 - u**2) * a_k1
    )
    return _unit(p) if rotation else p


def _unit(q: np.ndarray) -> np.ndarray:
    return q / np.linalg.norm(q)


def skin_vertices_loop(
    palette: np.ndarray, positions: np.ndarray, normals: np.ndarray | None, joints: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray | None]:
    """Linear blend skinning of one character, vertex by vertex and influence by influence.

    Weights are divided by their sum; a vertex whose weights sum to zero stays where it is.
    Normals go through the inverse transpose of the blended 3×3 matrix and are renormalised.
    """
    out_p = np.zeros_like(positions, dtype=float)
    out_n = None if normals is None else np.zeros_like(normals, dtype=float)
    for v in range(len(positions)):
        total = sum(float(w) for w in weights[v])
        if total == 0:
            out_p[v] = positions[v]
            if out_n is not None and normals is not None:
                out_n[v] = _unit(normals[v])
            continue
        m = np.zeros((4, 4))
        for j, w in zip(joints[v], weights[v], strict=True):
            m += (w / total) * palette[j]
        out_p[v] = (m @ np.append(positions[v], 1.0))[:3]
        if out_n is not None and normals is not None:
            out_n[v] = _unit(np.linalg.inv(m[:3, :3]).T @ normals[v])
    return out_p, out_n


def _hamilton(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def skin_vertices_dq_loop(
    rotations: np.ndarray, translations: np.ndarray, positions: np.ndarray, joints: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """Dual-quaternion skinning of rigid joint transforms ``(J, 4)`` + ``(J, 3)``, vertex by vertex.

    Dual part ``½ (t, 0) · r``; each influence flipped into the first one's hemisphere; the sum is
    divided by the norm of its real part; the point moves by ``r p r* + 2 (d r*)``.
    """
    out = np.zeros_like(positions, dtype=float)
    for v in range(len(positions)):
        total = sum(float(w) for w in weights[v])
        if total == 0:
            out[v] = positions[v]
            continue
        first = rotations[joints[v][0]]
        real, dual = np.zeros(4), np.zeros(4)
        for j, w in zip(joints[v], weights[v], strict=True):
            r = rotations[j]
            d = 0.5 * _hamilton(np.append(translations[j], 0.0), r)
            sign = -1.0 if np.dot(r, first) < 0 else 1.0
            real += sign * (w / total) * r
            dual += sign * (w / total) * d
        norm = np.linalg.norm(real)
        real, dual = real / norm, dual / norm
        conj = real * [-1, -1, -1, 1]
        rotated = _hamilton(_hamilton(real, np.append(positions[v], 0.0)), conj)[:3]
        out[v] = rotated + 2.0 * _hamilton(dual, conj)[:3]
    return out
