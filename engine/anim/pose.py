"""Local poses: per-joint translation, rotation and scale arrays with any leading batch shape."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array, trusted
from engine.math.mat import matrix_from_trs


@dataclass
class Pose:
    """Joint transforms in parent space.

    ``translations`` ``(..., J, 3)``, ``rotations`` unit quaternions ``(..., J, 4)`` (x, y, z, w),
    ``scales`` ``(..., J, 3)``. The leading axes are batch axes, usually ``(C,)`` characters.
    """

    translations: FloatArray
    rotations: FloatArray
    scales: FloatArray

    def __post_init__(self) -> None:
        self.translations = as_array(self.translations, "translations", (3,))
        self.rotations = as_array(self.rotations, "rotations", (4,))
        self.scales = as_array(self.scales, "scales", (3,))
        shapes = {self.translations.shape[:-1], self.rotations.shape[:-1], self.scales.shape[:-1]}
        if len(shapes) != 1:
            raise InvalidInputError(
                f"pose arrays must share their leading shape (..., J), got translations "
                f"{self.translations.shape}, rotations {self.rotations.shape}, scales {self.scales.shape}"
            )

    @classmethod
    def identity(cls, num_joints: int, batch: tuple[int, ...] = ()) -> Pose:
        """Identity transforms: zero translations, identity rotations, unit scales, ``(*batch, J)``.

        The rest pose of a delta (additive) pose, and of anything sampled as offsets.
        """
        shape = (*batch, int(num_joints))
        rotations = np.zeros((*shape, 4))
        rotations[..., 3] = 1.0
        with trusted():
            return cls(np.zeros((*shape, 3)), rotations, np.ones((*shape, 3)))

    @property
    def shape(self) -> tuple[int, ...]:
        """Leading shape ``(..., J)``."""
        return self.rotations.shape[:-1]

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return self.rotations.shape[-2]

    def arrays(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """``(translations, rotations, scales)``."""
        return self.translations, self.rotations, self.scales

    def matrices(self) -> FloatArray:
        """Local 4×4 matrices ``T·R·S`` shaped ``(..., J, 4, 4)``."""
        return matrix_from_trs(self.translations, self.rotations, self.scales)

    def copy(self) -> Pose:
        """A deep copy."""
        return Pose(self.translations.copy(), self.rotations.copy(), self.scales.copy())

    def broadcast_to(self, batch: tuple[int, ...]) -> Pose:
        """The pose repeated over a leading ``batch`` shape (e.g. ``(C,)``), as writable copies."""

        def grow(a: FloatArray) -> FloatArray:
            return np.broadcast_to(a, (*batch, *a.shape[-2:])).copy()

        return Pose(grow(self.translations), grow(self.rotations), grow(self.scales))

    def __getitem__(self, index: Any) -> Pose:
        """Index the batch axes: ``pose[c]`` is character ``c``."""
        return Pose(self.translations[index], self.rotations[index], self.scales[index])

    def joints(self, index: Any) -> Pose:
        """The joints ``index`` (an index array or slice of the joint axis) of every batch entry."""
        return Pose(self.translations[..., index, :], self.rotations[..., index, :], self.scales[..., index, :])

    def __repr__(self) -> str:
        return f"Pose(batch {self.shape[:-1]}, {self.num_joints} joints)"
