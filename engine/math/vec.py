"""Batched 3-vector helpers over arrays shaped ``(..., 3)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.math import kernels
from engine.math._checks import FloatArray, as_array, nonzero_norm


def vec_dot(a: Any, b: Any) -> FloatArray:
    """Dot product shaped ``(...)``."""
    return kernels.dot(as_array(a, "a", (3,)), as_array(b, "b", (3,)))


def vec_cross(a: Any, b: Any) -> FloatArray:
    """Cross product ``a × b`` (right-handed)."""
    return kernels.cross(as_array(a, "a", (3,)), as_array(b, "b", (3,)))


def vec_norm(v: Any) -> FloatArray:
    """Euclidean length shaped ``(...)``."""
    return kernels.norm(as_array(v, "v", (3,)))


def vec_normalize(v: Any, name: str = "v") -> FloatArray:
    """Unit vectors; a (nearly) zero-length vector raises :class:`DegenerateInputError`."""
    v = as_array(v, name, (3,))
    n = np.linalg.norm(v, axis=-1)
    nonzero_norm(n, name, "vector")
    return v / n[..., None]


def safe_normalize(v: Any, fallback: Any, eps: float = 1e-12) -> FloatArray:
    """Unit vectors, with ``fallback`` (broadcast, returned as given) where ``|v| <= eps``."""
    v = as_array(v, "v", (3,))
    fallback = as_array(fallback, "fallback", (3,))
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    small = n <= eps
    return np.where(small, fallback, v / np.where(small, 1.0, n))


def angle_between(a: Any, b: Any) -> FloatArray:
    """Angle in ``[0, π]`` between vectors, via the stable ``atan2(|a×b|, a·b)``."""
    a = as_array(a, "a", (3,))
    b = as_array(b, "b", (3,))
    return np.arctan2(kernels.norm(kernels.cross(a, b)), kernels.dot(a, b))


def any_perpendicular(v: Any) -> FloatArray:
    """A unit vector perpendicular to each ``v`` (crossing with the axis least aligned to ``v``)."""
    return kernels.perpendicular(vec_normalize(v))
