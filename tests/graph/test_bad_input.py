"""NaN and infinity stop at the boundary of the new stateless jobs, with the argument named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from engine.anim import Pose
from engine.anim.blendspace import GradientBand, linear_weights
from engine.anim.inertialization import (
    dead_blend,
    extrapolate,
    offset_pose,
    offset_velocity,
    quintic_decay,
    quintic_offset,
    quintic_rates,
    smoothstep,
    spring_decay,
    spring_offset,
    spring_rates,
)
from engine.anim.velocity import (
    PoseVelocity,
    additive_velocity,
    angular_from_rotvec_rate,
    angular_velocity,
    blend_velocity,
    pose_velocity,
    rotvec_rate_from_angular,
)
from engine.errors import InvalidInputError

J = 3
POSE = Pose(np.zeros((2, J, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (2, J, 1)), np.ones((2, J, 3)))
SPEED = PoseVelocity(np.ones((2, J, 3)), np.ones((2, J, 3)), np.zeros((2, J, 3)))
QUINTIC = quintic_decay(np.ones((2, 3)), np.ones((2, 3)), 0.3)
SPRING = spring_decay(np.ones((2, 3)), np.ones((2, 3)), 0.1)

# name: (function, valid keyword arguments, the float arguments to poison)
CALLS: dict[str, tuple[Callable[..., Any], dict[str, Any], tuple[str, ...]]] = {
    "angular_from_rotvec_rate": (
        angular_from_rotvec_rate,
        {"rotvec": np.ones(3), "rate": np.ones(3)},
        ("rotvec", "rate"),
    ),
    "rotvec_rate_from_angular": (
        rotvec_rate_from_angular,
        {"rotvec": np.ones(3), "angular": np.ones(3)},
        ("rotvec", "angular"),
    ),
    "angular_velocity": (
        angular_velocity,
        {"before": [0, 0, 0, 1.0], "after": [0, 0, 0, 1.0], "dt": 0.1},
        ("before", "after", "dt"),
    ),
    "pose_velocity": (pose_velocity, {"before": POSE, "after": POSE, "dt": 0.1}, ("dt",)),
    "blend_velocity": (
        blend_velocity,
        {
            "poses": [POSE, POSE],
            "velocities": [SPEED, SPEED],
            "weights": [0.5, 0.5],
            "weight_rates": [1.0, -1.0],
            "mask": np.ones((2, J)),
        },
        ("weights", "weight_rates", "mask"),
    ),
    "additive_velocity": (
        additive_velocity,
        {
            "base": POSE,
            "base_velocity": SPEED,
            "delta": POSE,
            "delta_velocity": SPEED,
            "weight": 0.5,
            "mask": np.ones(J),
        },
        ("weight", "mask"),
    ),
    "quintic_decay": (
        quintic_decay,
        {"offset": np.ones(3), "velocity": np.ones(3), "duration": 0.3},
        ("offset", "velocity", "duration"),
    ),
    "quintic_offset": (quintic_offset, {"decay": QUINTIC, "elapsed": 0.1}, ("elapsed",)),
    "quintic_rates": (quintic_rates, {"decay": QUINTIC, "elapsed": 0.1}, ("elapsed",)),
    "spring_decay": (
        spring_decay,
        {"offset": np.ones(3), "velocity": np.ones(3), "half_life": 0.1},
        ("offset", "velocity", "half_life"),
    ),
    "spring_offset": (spring_offset, {"decay": SPRING, "elapsed": 0.1}, ("elapsed",)),
    "spring_rates": (spring_rates, {"decay": SPRING, "elapsed": 0.1}, ("elapsed",)),
    "offset_pose": (offset_pose, {"target": POSE, "offsets": np.zeros((2, J, 3, 3))}, ("offsets",)),
    "offset_velocity": (
        offset_velocity,
        {"target": POSE, "target_velocity": SPEED, "offsets": np.zeros((2, J, 3, 3)), "rates": np.zeros((2, J, 3, 3))},
        ("offsets", "rates"),
    ),
    "extrapolate": (
        extrapolate,
        {"pose": POSE, "velocity": SPEED, "elapsed": 0.1, "half_life": 0.2},
        ("elapsed", "half_life"),
    ),
    "dead_blend": (
        dead_blend,
        {"source": POSE, "source_velocity": SPEED, "target": POSE, "elapsed": 0.1, "duration": 0.3, "half_life": 0.2},
        ("elapsed", "duration", "half_life"),
    ),
    "smoothstep": (smoothstep, {"x": 0.5}, ("x",)),
    "linear_weights": (linear_weights, {"positions": [0.0, 1.0], "values": 0.5}, ("positions", "values")),
    "GradientBand": (GradientBand, {"points": [[0.0, 0.0], [1.0, 0.0]], "mode": "cartesian"}, ("points",)),
    "GradientBand.weights": (GradientBand([[0.0, 0.0], [1.0, 0.0]]).weights, {"values": [0.5, 0.0]}, ("values",)),
}

SWEEP = [
    (name, argument, bad)
    for name, (_, _, floats) in CALLS.items()
    for argument in floats
    for bad in (np.nan, np.inf, -np.inf)
]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_valid_call_succeeds(name):
    function, arguments, _ = CALLS[name]
    function(**arguments)


@pytest.mark.parametrize(("name", "argument", "bad"), SWEEP, ids=[f"{n}-{a}-{b}" for n, a, b in SWEEP])
def test_nan_and_inf_are_refused_by_name(name, argument, bad):
    function, arguments, _ = CALLS[name]
    poisoned = np.array(arguments[argument], dtype=float)
    poisoned.reshape(-1)[0] = bad
    with pytest.raises(InvalidInputError, match=rf"\b{argument}\b.*(finite|nan|inf)"):
        function(**{**arguments, argument: poisoned})
