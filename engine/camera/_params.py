"""Validators for the scalar parameters shared by the camera functions (time steps, rates, limits)."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array


def check_dt(dt: Any) -> FloatArray:
    """``dt`` as a float64 array of finite, non-negative time steps in seconds."""
    dt = as_array(dt, "dt")
    if np.any(dt < 0):
        raise InvalidInputError(f"dt must be >= 0 seconds, got {float(np.min(dt))}")
    return dt


def check_positive(value: Any, name: str) -> FloatArray:
    """``value`` as a float64 array of finite, strictly positive numbers."""
    value = as_array(value, name)
    if np.any(value <= 0):
        raise InvalidInputError(f"{name} must be > 0, got {float(np.min(value))}")
    return value


def check_nonnegative(value: Any, name: str) -> FloatArray:
    """``value`` as a float64 array of finite numbers ``>= 0``."""
    value = as_array(value, name)
    if np.any(value < 0):
        raise InvalidInputError(f"{name} must be >= 0, got {float(np.min(value))}")
    return value


def check_angle_limit(limit: Any, name: str = "limit", *, allow_zero: bool = False) -> FloatArray:
    """An angle limit in ``(0, π]`` radians (``[0, π]`` with ``allow_zero``) as a float64 array."""
    limit = as_array(limit, name)
    low_ok = limit >= 0 if allow_zero else limit > 0
    if not np.all(low_ok & (limit <= np.pi)):
        bad = limit[~(low_ok & (limit <= np.pi))].flat[0]
        interval = "[0, π]" if allow_zero else "(0, π]"
        raise InvalidInputError(f"{name} must lie in {interval} radians, got {float(bad)}")
    return limit


def rate(stiffness: Any, half_life: Any, *, half_life_factor: float = float(np.log(2.0))) -> FloatArray:
    """The rate in 1/s given exactly one of ``stiffness`` (1/s) or ``half_life`` (s).

    ``half_life_factor`` is ``rate · half_life``: ``ln 2`` for exponential decay.
    """
    if (stiffness is None) == (half_life is None):
        raise InvalidInputError(
            f"give exactly one of stiffness= or half_life=, got stiffness={stiffness!r}, half_life={half_life!r}"
        )
    if stiffness is not None:
        return check_nonnegative(stiffness, "stiffness")
    return half_life_factor / check_positive(half_life, "half_life")
