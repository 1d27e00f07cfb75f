"""Unit dual quaternions ``(..., 8)``: real part ``(x, y, z, w)`` then dual part ``(x, y, z, w)``.

A rigid transform "rotate by r, then translate by t" is ``real = r``, ``dual = ½ (t, 0) r``.
Used for dual-quaternion skinning, which blends rigid transforms without the "candy-wrapper"
volume loss of linear blending.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import InvalidInputError
from engine.math import kernels
from engine.math._checks import FloatArray, as_array, nonzero_norm
from engine.math.quat import matrix_from_quat, quat_conjugate, quat_from_matrix


def dq_from_rotation_translation(rotation: Any, translation: Any) -> FloatArray:
    """Dual quaternions for "rotate by ``rotation`` (unit), then translate by ``translation``"."""
    r = as_array(rotation, "rotation", (4,))
    t = as_array(translation, "translation", (3,))
    r, t4 = np.broadcast_arrays(r, np.concatenate((t, np.zeros((*t.shape[:-1], 1))), axis=-1))
    return np.concatenate((r, 0.5 * kernels.mul(t4, r)), axis=-1)


def rotation_translation_from_dq(dq: Any) -> tuple[FloatArray, FloatArray]:
    """Inverse of :func:`dq_from_rotation_translation` for unit dual quaternions."""
    dq = as_array(dq, "dq", (8,))
    real, dual = dq[..., :4], dq[..., 4:]
    return real, 2.0 * kernels.mul(dual, quat_conjugate(real))[..., :3]


def dq_from_matrix(m: Any) -> FloatArray:
    """Dual quaternions of rigid 4×4 matrices (rotation + translation; scale is not representable)."""
    m = as_array(m, "m", (4, 4))
    return dq_from_rotation_translation(quat_from_matrix(m), m[..., :3, 3])


def dq_multiply(a: Any, b: Any) -> FloatArray:
    """Product ``a * b``: apply ``b`` first, then ``a`` (same order as :func:`quat_multiply`)."""
    a = as_array(a, "a", (8,))
    b = as_array(b, "b", (8,))
    real = kernels.mul(a[..., :4], b[..., :4])
    dual = kernels.mul(a[..., :4], b[..., 4:]) + kernels.mul(a[..., 4:], b[..., :4])
    return np.concatenate((real, dual), axis=-1)


def dq_normalize(dq: Any) -> FloatArray:
    """Unit dual quaternions: divide by ``|real|`` and remove the dual part's component along real."""
    dq = as_array(dq, "dq", (8,))
    real, dual = dq[..., :4], dq[..., 4:]
    n = np.linalg.norm(real, axis=-1)
    nonzero_norm(n, "dq", "dual quaternion (real part)")
    real = real / n[..., None]
    dual = dual / n[..., None]
    dual = dual - real * np.sum(real * dual, axis=-1, keepdims=True)
    return np.concatenate((real, dual), axis=-1)


def matrix_from_dq(dq: Any) -> FloatArray:
    """Rigid 4×4 matrices of unit dual quaternions."""
    real, t = rotation_translation_from_dq(dq)
    m = np.zeros((*real.shape[:-1], 4, 4))
    m[..., :3, :3] = matrix_from_quat(real)
    m[..., :3, 3] = t
    m[..., 3, 3] = 1.0
    return m


def dq_transform_points(dq: Any, points: Any) -> FloatArray:
    """Apply unit dual quaternions to points ``(..., 3)``."""
    real, t = rotation_translation_from_dq(dq)
    return kernels.rotate(real, as_array(points, "points", (3,))) + t


def dq_blend(dqs: Any, weights: Any) -> FloatArray:
    """Dual-quaternion linear blending (DLB) over the second-to-last axis.

    ``dqs`` ``(..., N, 8)``, ``weights`` ``(..., N)``. Each dual quaternion is first flipped into
    the hemisphere of the first one (``dot(real_i, real_0) < 0`` → negate), then the weighted sum
    is normalised. Returns ``(..., 8)``.

    Raises
    ------
    InvalidInputError
        If ``weights`` does not end in ``N``, the number of dual quaternions per blend.
    DegenerateInputError
        If a weighted sum has a zero real part (e.g. all weights 0).
    """
    dqs = as_array(dqs, "dqs", (8,))
    w = as_array(weights, "weights")
    if dqs.ndim < 2 or w.shape[-1:] != dqs.shape[-2:-1]:
        raise InvalidInputError(
            f"weights must have shape (..., N) for dqs of shape (..., N, 8), got weights {w.shape} and dqs {dqs.shape}"
        )
    sign = np.where(np.sum(dqs[..., :4] * dqs[..., :1, :4], axis=-1) < 0, -1.0, 1.0)
    blended = np.einsum("...n,...nk->...k", w * sign, dqs)
    nonzero_norm(np.linalg.norm(blended[..., :4], axis=-1), "weighted sum of dqs", "dual quaternion (real part)")
    return dq_normalize(blended)
