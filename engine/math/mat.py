"""Batched 4×4 affine matrices ``(..., 4, 4)`` for column vectors (``M @ p``).

See ``docs/conventions.md``: right-handed, +Y up, translation in the last column, and
:func:`gl_pack` as the single place that lays matrices out column-major for GLSL.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import DegenerateInputError
from engine.math._checks import FloatArray, as_array
from engine.math.quat import matrix_from_quat, quat_from_matrix


def matrix_from_trs(translation: Any, rotation: Any, scale: Any) -> FloatArray:
    """``T · R · S`` (scale first, then rotate, then translate) as ``(..., 4, 4)``.

    ``translation`` ``(..., 3)``, ``rotation`` unit quaternions ``(..., 4)``, ``scale`` ``(..., 3)``;
    the three broadcast against each other.
    """
    t = as_array(translation, "translation", (3,))
    r = matrix_from_quat(as_array(rotation, "rotation", (4,)))
    s = as_array(scale, "scale", (3,))
    shape = np.broadcast_shapes(t.shape[:-1], r.shape[:-2], s.shape[:-1])
    m = np.zeros((*shape, 4, 4))
    m[..., :3, :3] = r * s[..., None, :]
    m[..., :3, 3] = t
    m[..., 3, 3] = 1.0
    return m


def trs_from_matrix(m: Any) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Decompose affine matrices into (translation, unit rotation, scale).

    Scale is the length of each basis column; a negative determinant (mirror) is carried by
    a negative x scale. Shear is not representable and is dropped. Zero scale raises.
    """
    m = as_array(m, "m", (4, 4))
    t = m[..., :3, 3].copy()
    basis = m[..., :3, :3]
    s = np.linalg.norm(basis, axis=-2)
    if np.any(s < 1e-12):
        raise DegenerateInputError("m has a zero-length basis column: scale 0 has no rotation")
    mirror = np.linalg.det(basis) < 0
    s[..., 0] = np.where(mirror, -s[..., 0], s[..., 0])
    return t, quat_from_matrix(basis / s[..., None, :]), s


def affine_inverse(m: Any) -> FloatArray:
    """Inverse of affine matrices (last row ``0 0 0 1``): ``[A⁻¹, -A⁻¹t]``."""
    m = as_array(m, "m", (4, 4))
    a = m[..., :3, :3]
    det = np.linalg.det(a)
    if np.any(np.abs(det) < 1e-300):
        raise DegenerateInputError("m is singular (its 3×3 part has determinant 0)")
    inv_a = np.linalg.inv(a)
    out = np.zeros_like(m)
    out[..., :3, :3] = inv_a
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", inv_a, m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def transform_points(m: Any, points: Any) -> FloatArray:
    """Apply affine matrices ``(..., 4, 4)`` to points ``(..., 3)`` (w = 1)."""
    m = as_array(m, "m", (4, 4))
    p = as_array(points, "points", (3,))
    return np.einsum("...ij,...j->...i", m[..., :3, :3], p) + m[..., :3, 3]


def transform_vectors(m: Any, vectors: Any) -> FloatArray:
    """Apply the linear part of affine matrices to direction vectors (w = 0)."""
    m = as_array(m, "m", (4, 4))
    v = as_array(vectors, "vectors", (3,))
    return np.einsum("...ij,...j->...i", m[..., :3, :3], v)


def perspective(fov_y: float, aspect: float, near: float, far: float) -> FloatArray:
    """OpenGL projection (clip z in [-w, w]) for a camera looking down −Z; ``fov_y`` in radians."""
    if not (0 < fov_y < np.pi and aspect > 0 and 0 < near < far):
        raise DegenerateInputError(
            f"perspective needs 0 < fov_y < π, aspect > 0 and 0 < near < far, got "
            f"fov_y={fov_y}, aspect={aspect}, near={near}, far={far}"
        )
    f = 1.0 / np.tan(0.5 * fov_y)
    m = np.zeros((4, 4))
    m[0, 0] = f / aspect
    m[1, 1] = f
    m[2, 2] = (far + near) / (near - far)
    m[2, 3] = 2 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def gl_pack(m: Any) -> np.ndarray:
    """Matrices ``(..., 4, 4)`` as contiguous float32 in column-major order for GLSL ``mat4``.

    Examples
    --------
    >>> import numpy as np
    >>> m = np.eye(4)
    >>> m[:3, 3] = (1.0, 2.0, 3.0)
    >>> gl_pack(m).ravel()[12:15]  # the translation column is contiguous
    array([1., 2., 3.], dtype=float32)
    """
    m = as_array(m, "m", (4, 4))
    return np.ascontiguousarray(np.swapaxes(m, -1, -2), dtype=np.float32)
