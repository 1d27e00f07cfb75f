"""Assertion helpers shared by the tests."""

from __future__ import annotations

from typing import Any

import numpy as np


def assert_quat_allclose(actual: Any, desired: Any, atol: float = 1e-9) -> None:
    """Assert two quaternion arrays are equal up to sign (q and -q are the same rotation)."""
    a = np.asarray(actual, dtype=float)
    d = np.asarray(desired, dtype=float)
    a, d = np.broadcast_arrays(a, d)
    sign = np.where(np.sum(a * d, axis=-1, keepdims=True) < 0, -1.0, 1.0)
    np.testing.assert_allclose(a * sign, d, atol=atol, rtol=0)
