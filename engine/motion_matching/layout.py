"""What a feature vector holds: its groups, their columns and weights, and the joints they read.

A frame's feature vector is a row of ``D`` numbers made of *groups*, in :data:`GROUPS` order
(a group absent from the layout takes no columns):

========================= ====================================================== ======= =======
group                     columns                                                width   weight
========================= ====================================================== ======= =======
``foot_positions``        left, right foot (ankle) position, root space, metres   6       0.75
``foot_velocities``       left, right foot velocity, root axes, m/s               6       1
``hip_velocity``          hips velocity, root axes, m/s                           3       1
``hand_positions``        left, right hand position (``hands=True`` only)         6       0.5
``hand_velocities``       left, right hand velocity (``hands=True`` only)         6       0.5
``trajectory_positions``  root position ``x, z`` at each horizon, root space      2·H     1
``trajectory_directions`` facing ``x, z`` at each horizon, root space             2·H     1.5
========================= ====================================================== ======= =======

The default weights are Holden's ("Learned Motion Matching", 2020). *Root space* is the
character's ground frame: origin on the ground under the character, ``+Y`` up, ``+Z`` the way it
faces, ``+X`` its left. Velocities are the joint's velocity in the world, expressed in root axes
(a planted foot reads zero, whatever the character's own motion).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.errors import InvalidInputError

#: Every feature group, in column order.
GROUPS = (
    "foot_positions",
    "foot_velocities",
    "hip_velocity",
    "hand_positions",
    "hand_velocities",
    "trajectory_positions",
    "trajectory_directions",
)
#: Groups that read joints of the pose (the others read the root's trajectory).
POSE_GROUPS = GROUPS[:5]
#: Default weight of each group (Holden's for the groups he uses).
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        "foot_positions": 0.75,
        "foot_velocities": 1.0,
        "hip_velocity": 1.0,
        "hand_positions": 0.5,
        "hand_velocities": 0.5,
        "trajectory_positions": 1.0,
        "trajectory_directions": 1.5,
    }
)
#: Default trajectory horizons in frames at :data:`DEFAULT_FPS` (1/3, 2/3 and 1 s ahead).
DEFAULT_HORIZONS = (20, 40, 60)
#: Default frame rate of a database, frames per second.
DEFAULT_FPS = 60.0
#: The humanoid roles each pose group reads (``engine.anim.humanoid`` role names).
GROUP_ROLES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "foot_positions": ("foot_l", "foot_r"),
        "foot_velocities": ("foot_l", "foot_r"),
        "hip_velocity": ("hips",),
        "hand_positions": ("hand_l", "hand_r"),
        "hand_velocities": ("hand_l", "hand_r"),
    }
)


@dataclass(frozen=True)
class FeatureGroup:
    """One group of a layout: its name, its columns ``[start, stop)`` and its weight."""

    name: str
    start: int
    stop: int
    weight: float

    @property
    def columns(self) -> slice:
        """The group's columns as a slice."""
        return slice(self.start, self.stop)


@dataclass(frozen=True)
class FeatureLayout:
    """The columns of a feature vector (see the module docstring).

    Attributes
    ----------
    groups
        The groups present, in column order.
    horizons
        Trajectory horizons in frames, ascending and positive.
    joints
        Pose group name → the joint indices it reads (two for a left/right pair, one for the hips).
    """

    groups: tuple[FeatureGroup, ...]
    horizons: tuple[int, ...]
    joints: Mapping[str, tuple[int, ...]]

    @property
    def width(self) -> int:
        """Number of columns ``D``."""
        return self.groups[-1].stop

    @property
    def names(self) -> tuple[str, ...]:
        """The group names, in column order."""
        return tuple(g.name for g in self.groups)

    def group(self, name: str) -> FeatureGroup:
        """The group called ``name``; raises :class:`InvalidInputError` listing the groups otherwise."""
        for g in self.groups:
            if g.name == name:
                return g
        raise InvalidInputError(f"no feature group {name!r}; the layout has {list(self.names)}")

    def weights(self) -> dict[str, float]:
        """Group name → weight."""
        return {g.name: g.weight for g in self.groups}

    def with_weights(self, weights: Mapping[str, float]) -> FeatureLayout:
        """The same columns with some weights replaced (``weights`` names groups of this layout)."""
        merged = check_weights({**self.weights(), **dict(weights)}, self.names)
        groups = tuple(FeatureGroup(g.name, g.start, g.stop, merged[g.name]) for g in self.groups)
        return FeatureLayout(groups, self.horizons, self.joints)


def check_weights(weights: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, float]:
    """``weights`` as floats, each a finite number ``>= 0`` naming one of ``names``."""
    out: dict[str, float] = {}
    for name, value in weights.items():
        if name not in names:
            raise InvalidInputError(f"no feature group {name!r} to weigh; the groups are {list(names)}")
        try:
            weight = float(value)
        except (TypeError, ValueError):
            raise InvalidInputError(f"weight of {name!r} must be a number, got {value!r}") from None
        if not (np.isfinite(weight) and weight >= 0.0):
            raise InvalidInputError(f"weight of {name!r} must be a finite number >= 0, got {weight}")
        out[name] = weight
    return out


def check_horizons(horizons: Any) -> tuple[int, ...]:
    """Horizons as a tuple of ascending positive integers (frames)."""
    try:
        values = tuple(int(h) for h in horizons)
    except (TypeError, ValueError):
        raise InvalidInputError(f"horizons must be whole numbers of frames, got {horizons!r}") from None
    if not values or any(v <= 0 for v in values) or list(values) != sorted(set(values)):
        raise InvalidInputError(f"horizons must be ascending positive frame counts, got {list(values)}")
    if any(float(v) != float(h) for v, h in zip(values, horizons, strict=True)):
        raise InvalidInputError(f"horizons must be whole numbers of frames, got {list(horizons)}")
    return values


def make_layout(
    joints: Mapping[str, tuple[int, ...]], horizons: Any, weights: Mapping[str, Any] | None = None
) -> FeatureLayout:
    """A layout with the pose groups of ``joints`` (group name → joint indices) and both trajectory groups.

    Parameters
    ----------
    joints
        The pose groups to include (a subset of :data:`POSE_GROUPS`) and the joints each reads.
    horizons
        Trajectory horizons in frames (:func:`check_horizons`).
    weights
        Group name → weight, for any group of the layout; the others take :data:`DEFAULT_WEIGHTS`.
    """
    horizons = check_horizons(horizons)
    for name in joints:
        if name not in POSE_GROUPS:
            raise InvalidInputError(f"{name!r} is not a pose feature group; those are {list(POSE_GROUPS)}")
    present = tuple(n for n in GROUPS if n in joints or n.startswith("trajectory_"))
    chosen = {**{n: DEFAULT_WEIGHTS[n] for n in present}, **check_weights(weights or {}, present)}
    groups = []
    start = 0
    for name in present:
        width = 2 * len(horizons) if name.startswith("trajectory_") else 3 * len(joints[name])
        groups.append(FeatureGroup(name, start, start + width, chosen[name]))
        start += width
    kept = {n: tuple(int(j) for j in joints[n]) for n in present if n in joints}
    return FeatureLayout(tuple(groups), horizons, MappingProxyType(kept))
