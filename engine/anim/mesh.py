"""Meshes (triangles, lines or points) with skinning and morph-target attributes, as read-only arrays."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray, as_array, readonly_copy

MODES = {"POINTS": 1, "LINES": 2, "TRIANGLES": 3}
"""Primitive modes a :class:`MeshData` holds, with the vertices per element (glTF's strips, loops and
fans arrive converted to these lists)."""


@dataclass(frozen=True, eq=False)
class MeshData:
    """One mesh primitive (a glTF primitive) in its node's space, optionally skinned and morphed.

    Parameters
    ----------
    positions
        ``(V, 3)`` vertex positions.
    indices
        ``(k·E,)`` vertex indices of ``E`` elements of ``k`` vertices (``mode``: 3 for triangles,
        2 for lines, 1 for points), or ``None`` for a non-indexed list (every vertex in order).
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
    name
        A label for messages (``"<mesh>/<primitive>"`` from the loader).
    mode
        ``"TRIANGLES"`` (default), ``"LINES"`` or ``"POINTS"``.
    morph_positions, morph_normals
        ``(T, V, 3)`` displacements of ``T`` morph targets (glTF ``targets[t].POSITION`` and
        ``NORMAL``), or ``None``: the morphed vertex is ``positions + Σ_t w_t · morph_positions[t]``
        (:func:`engine.anim.morph.morph_vertices`). ``morph_normals`` needs ``morph_positions``
        (zeros for targets that move no vertex).
    emissive
        ``(3,)`` linear RGB light the surface emits (added to the lit colour).
    unlit
        Whether the surface is drawn with its base colour alone, without lighting.
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
    mode: str = "TRIANGLES"
    morph_positions: FloatArray | None = None
    morph_normals: FloatArray | None = None
    emissive: FloatArray = field(default_factory=lambda: np.zeros(3))
    unlit: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InvalidInputError(f"mode must be one of {list(MODES)}, got {self.mode!r}")
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
        self._check_morph(count)
        if self.indices is not None:
            indices = np.asarray(self.indices)
            per = MODES[self.mode]
            if indices.ndim != 1 or indices.size % per or not np.issubdtype(indices.dtype, np.integer):
                raise InvalidInputError(
                    f"indices of a {self.mode} mesh must be a flat integer array of {per}·E entries, "
                    f"got {indices.shape}"
                )
            if indices.size and (indices.min() < 0 or indices.max() >= count):
                raise InvalidInputError(
                    f"indices must lie in [0, {count}), got range [{indices.min()}, {indices.max()}]"
                )
            object.__setattr__(self, "indices", readonly_copy(indices.astype(np.uint32)))
        object.__setattr__(self, "positions", readonly_copy(positions))
        object.__setattr__(self, "base_color", readonly_copy(as_array(self.base_color, "base_color", (4,))))
        object.__setattr__(self, "emissive", readonly_copy(as_array(self.emissive, "emissive", (3,))))
        object.__setattr__(self, "texture", None if self.texture is None else readonly_copy(self.texture))

    def _check_morph(self, count: int) -> None:
        if self.morph_positions is None:
            if self.morph_normals is not None:
                raise InvalidInputError("morph_normals need morph_positions (zeros for targets that move no vertex)")
            return
        positions = as_array(self.morph_positions, "morph_positions", (3,))
        if positions.ndim != 3 or positions.shape[1] != count or positions.shape[0] < 1:
            raise InvalidInputError(f"morph_positions must have shape (T ≥ 1, {count}, 3), got {positions.shape}")
        object.__setattr__(self, "morph_positions", readonly_copy(positions))
        if self.morph_normals is not None:
            normals = as_array(self.morph_normals, "morph_normals", (3,))
            if normals.shape != positions.shape:
                raise InvalidInputError(
                    f"morph_normals must have the shape of morph_positions {positions.shape}, got {normals.shape}"
                )
            object.__setattr__(self, "morph_normals", readonly_copy(normals))

    @property
    def num_targets(self) -> int:
        """Number of morph targets ``T`` (0 without morph targets)."""
        return 0 if self.morph_positions is None else int(self.morph_positions.shape[0])

    @property
    def num_elements(self) -> int:
        """Number of triangles, lines or points the mesh draws."""
        count = self.num_vertices if self.indices is None else int(self.indices.size)
        return count // MODES[self.mode]

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
