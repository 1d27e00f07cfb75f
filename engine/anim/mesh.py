"""Triangle meshes with skinning attributes, as plain read-only arrays."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray, as_array, readonly_copy


@dataclass(frozen=True, eq=False)
class MeshData:
    """One triangle mesh (a glTF primitive) in its node's space, optionally skinned.

    Parameters
    ----------
    positions
        ``(V, 3)`` vertex positions.
    indices
        ``(3T,)`` triangle vertex indices, or ``None`` for a non-indexed triangle list.
    normals, uvs
        ``(V, 3)`` and ``(V, 2)``, or ``None``.
    joints, weights
        ``(V, 4·S)`` influences over ``S`` influence sets (``JOINTS_n``/``WEIGHTS_n``): joint
        indices into the skin's skeleton and weights L1-normalised per vertex; ``None`` when the
        mesh is not skinned.
    base_color
        ``(4,)`` linear RGBA material colour.
    texture
        ``(H, W, 4)`` uint8 RGBA base-colour image (first row = top of the image), or ``None``.
    """

    positions: FloatArray
    indices: IntArray | None = None
    normals: FloatArray | None = None
    uvs: FloatArray | None = None
    joints: IntArray | None = None
    weights: FloatArray | None = None
    base_color: FloatArray = field(default_factory=lambda: np.array([0.8, 0.8, 0.8, 1.0]))
    texture: np.ndarray | None = None
    name: str = ""

    def __post_init__(self) -> None:
        positions = as_array(self.positions, "positions", (3,))
        if positions.ndim != 2:
            raise InvalidInputError(f"positions must have shape (V, 3), got {positions.shape}")
        count = positions.shape[0]
        for name, width in (("normals", 3), ("uvs", 2)):
            value = getattr(self, name)
            if value is not None:
                arr = as_array(value, name, (width,))
                if arr.shape != (count, width):
                    raise InvalidInputError(f"{name} must have shape ({count}, {width}), got {arr.shape}")
                object.__setattr__(self, name, readonly_copy(arr))
        if (self.joints is None) != (self.weights is None):
            raise InvalidInputError("joints and weights must be given together (both or neither)")
        if self.joints is not None and self.weights is not None:
            joints = np.asarray(self.joints)
            weights = as_array(self.weights, "weights")
            if joints.shape != weights.shape or joints.ndim != 2 or joints.shape[0] != count or joints.shape[1] % 4:
                raise InvalidInputError(
                    f"joints and weights must both have shape ({count}, 4·S), got {joints.shape} and {weights.shape}"
                )
            if not np.issubdtype(joints.dtype, np.integer) or joints.min(initial=0) < 0:
                raise InvalidInputError("joints must hold non-negative integer joint indices")
            object.__setattr__(self, "joints", readonly_copy(joints.astype(np.intp)))
            object.__setattr__(self, "weights", readonly_copy(weights))
        if self.indices is not None:
            indices = np.asarray(self.indices)
            if indices.ndim != 1 or indices.size % 3 or not np.issubdtype(indices.dtype, np.integer):
                raise InvalidInputError(f"indices must be a flat integer array of 3·T entries, got {indices.shape}")
            if indices.size and (indices.min() < 0 or indices.max() >= count):
                raise InvalidInputError(
                    f"indices must lie in [0, {count}), got range [{indices.min()}, {indices.max()}]"
                )
            object.__setattr__(self, "indices", readonly_copy(indices.astype(np.uint32)))
        object.__setattr__(self, "positions", readonly_copy(positions))
        object.__setattr__(self, "base_color", readonly_copy(as_array(self.base_color, "base_color", (4,))))
        object.__setattr__(self, "texture", None if self.texture is None else readonly_copy(self.texture))

    @property
    def num_vertices(self) -> int:
        """Number of vertices ``V``."""
        return int(self.positions.shape[0])

    @property
    def skinned(self) -> bool:
        """Whether the mesh carries joint influences."""
        return self.joints is not None

    @property
    def influence_sets(self) -> int:
        """Number of 4-wide influence sets ``S`` (0 when not skinned)."""
        return 0 if self.joints is None else self.joints.shape[1] // 4
