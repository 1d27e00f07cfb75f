"""Every camera function's bad inputs: a typed error whose message names the argument and what was expected."""

from __future__ import annotations

import numpy as np
import pytest

from engine.camera import (
    OneEuroFilter,
    cone_clamp,
    kalman_initial,
    kalman_step,
    look_at,
    look_at_matrix,
    one_euro_initial,
    one_euro_step,
    smooth_position,
    smooth_rotation,
    smooth_rotation_naive,
    smoothing_alpha,
    spring_position,
    spring_rotation,
    stiffness_from_half_life,
    swing_twist,
    swing_twist_clamp,
    view_matrix,
)
from engine.errors import DegenerateInputError, InvalidInputError

Q = np.array([0.0, 0.0, 0.0, 1.0])
P = np.zeros(3)
NAN3 = np.array([0.0, np.nan, 0.0])
CASES = [
    # NaN / inf positions and orientations
    (lambda: look_at(NAN3, [1.0, 0.0, 0.0]), InvalidInputError, "eye must be finite"),
    (lambda: look_at(P, [np.inf, 0.0, 0.0]), InvalidInputError, "target must be finite"),
    (lambda: look_at(P, [1.0, 0.0, 0.0], previous=[np.nan, 0, 0, 1]), InvalidInputError, "previous must be finite"),
    (lambda: view_matrix(NAN3, Q), InvalidInputError, "position must be finite"),
    (lambda: smooth_position(NAN3, P, 0.1, stiffness=1.0), InvalidInputError, "current must be finite"),
    (lambda: spring_position(P, P, NAN3, 0.1, stiffness=1.0), InvalidInputError, "target must be finite"),
    (lambda: spring_rotation(Q, NAN3, Q, 0.1, stiffness=1.0), InvalidInputError, "angular_velocity must be finite"),
    (lambda: cone_clamp([np.nan, 0, 0, 1], Q, 0.5), InvalidInputError, "orientation must be finite"),
    # shapes
    (lambda: look_at([0.0, 0.0], [1.0, 0.0, 0.0]), InvalidInputError, r"eye must have shape \(\.\.\., 3\)"),
    (lambda: smooth_rotation(P, Q, 0.1, stiffness=1.0), InvalidInputError, r"current must have shape \(\.\.\., 4\)"),
    # zero-length up, coincident eye and target, zero previous
    (lambda: look_at(P, [1.0, 0.0, 0.0], up=[0.0, 0.0, 0.0]), DegenerateInputError, "up must be a non-zero vector"),
    (lambda: look_at_matrix(P, P), DegenerateInputError, "eye and target must differ"),
    (lambda: look_at(P, [1.0, 0.0, 0.0], previous=np.zeros(4)), DegenerateInputError, "previous must be a non-zero"),
    (lambda: swing_twist(Q, [0.0, 0.0, 0.0]), DegenerateInputError, "axis must be a non-zero vector"),
    # negative dt
    (lambda: smoothing_alpha(-0.01, stiffness=1.0), InvalidInputError, r"dt must be >= 0 seconds, got -0.01"),
    (lambda: smooth_rotation(Q, Q, -1.0, half_life=0.1), InvalidInputError, "dt must be >= 0"),
    (lambda: smooth_rotation_naive(Q, Q, -1.0, 5.0), InvalidInputError, "dt must be >= 0"),
    (lambda: spring_position(P, P, P, [0.1, -0.1], half_life=0.1), InvalidInputError, "dt must be >= 0"),
    (lambda: spring_rotation(Q, P, Q, -1e-9, half_life=0.1), InvalidInputError, "dt must be >= 0"),
    (lambda: smoothing_alpha(np.nan, stiffness=1.0), InvalidInputError, "dt must be finite"),
    (lambda: one_euro_step(one_euro_initial(Q), Q, 0.0), InvalidInputError, "dt must be > 0"),
    (
        lambda: kalman_step(kalman_initial(Q, 0.01), Q, -1.0, measurement_noise=0.01, process_noise=1.0),
        InvalidInputError,
        "dt must be > 0",
    ),
    # rates
    (lambda: smooth_rotation(Q, Q, 0.1), InvalidInputError, "exactly one of stiffness= or half_life="),
    (lambda: smooth_rotation(Q, Q, 0.1, stiffness=1.0, half_life=1.0), InvalidInputError, "exactly one"),
    (lambda: smoothing_alpha(0.1, stiffness=-1.0), InvalidInputError, "stiffness must be >= 0"),
    (lambda: smoothing_alpha(0.1, half_life=0.0), InvalidInputError, "half_life must be > 0"),
    (lambda: stiffness_from_half_life(-2.0), InvalidInputError, "half_life must be > 0"),
    (lambda: smooth_rotation_naive(Q, Q, 0.1, -1.0), InvalidInputError, "smooth_factor must be >= 0"),
    (lambda: OneEuroFilter(min_cutoff=0.0), InvalidInputError, "min_cutoff must be > 0"),
    (lambda: OneEuroFilter(beta=-1.0), InvalidInputError, "beta must be >= 0"),
    (lambda: kalman_initial(Q, 0.0), InvalidInputError, "measurement_noise must be > 0"),
    # limits outside (0, π]
    (lambda: cone_clamp(Q, Q, 0.0), InvalidInputError, r"limit must lie in \(0, π\] radians, got 0.0"),
    (lambda: cone_clamp(Q, Q, -0.5), InvalidInputError, r"limit must lie in \(0, π\]"),
    (lambda: cone_clamp(Q, Q, 3.5), InvalidInputError, r"limit must lie in \(0, π\] radians, got 3.5"),
    (lambda: cone_clamp(Q, Q, [0.5, 4.0]), InvalidInputError, r"got 4.0"),
    (lambda: cone_clamp(Q, Q, np.nan), InvalidInputError, "limit must be finite"),
    (lambda: swing_twist_clamp(Q, Q, 0.0, 0.5), InvalidInputError, r"swing_limit must lie in \(0, π\]"),
    (lambda: swing_twist_clamp(Q, Q, 0.5, -0.1), InvalidInputError, r"twist_limit must lie in \[0, π\]"),
    (lambda: swing_twist_clamp(Q, Q, 0.5, 4.0), InvalidInputError, r"twist_limit must lie in \[0, π\]"),
]


@pytest.mark.parametrize(("call", "error", "match"), CASES, ids=[c[2][:40] for c in CASES])
def test_bad_input_raises_a_typed_error_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_errors_are_value_errors_too():
    with pytest.raises(ValueError, match="dt"):
        smoothing_alpha(-1.0, stiffness=1.0)
