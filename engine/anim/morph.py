"""Morph targets (blend shapes): base vertices plus a weighted sum of per-target displacements.

glTF 2.0 (§3.7.2.2): a primitive's morphed attribute is ``base + Σ_t w_t · target_t`` with the
mesh instance's weights ``w``; the weights come from ``node.weights``, else ``mesh.weights``,
else zeros, and ``weights`` animation channels override them. Morphing happens in the mesh's
bind space, **before** skinning. Normals are the morphed sum renormalised (a normal that sums to
zero stays zero).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.mesh import MeshData
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array


def check_morph_weights(weights: Any, targets: int, name: str = "weights") -> FloatArray:
    """``weights`` as float64 ``(..., targets)``; raises :class:`InvalidInputError` naming ``name``."""
    weights = as_array(weights, name)
    if weights.ndim < 1 or weights.shape[-1] != targets:
        raise InvalidInputError(f"{name} must have shape (..., {targets}), one per morph target, got {weights.shape}")
    return weights


def morph_vertices(mesh: MeshData, weights: Any) -> tuple[FloatArray, FloatArray | None]:
    """Morphed positions and unit normals of ``mesh`` for weights ``(..., T)``.

    Parameters
    ----------
    mesh
        A :class:`~engine.anim.mesh.MeshData` with ``T`` morph targets (``T`` may be 0: the
        base shape comes back, broadcast over the batch).
    weights
        ``(..., T)`` target weights; any leading batch shape (e.g. ``(C,)`` characters).

    Returns
    -------
    tuple
        Positions ``(..., V, 3)`` and unit normals ``(..., V, 3)`` (``None`` when the mesh has no
        normals), in the mesh's own (bind) space.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim.mesh import MeshData
    >>> mesh = MeshData(np.zeros((3, 3)), morph_positions=np.ones((2, 3, 3)))
    >>> morph_vertices(mesh, [0.5, 0.25])[0][0]
    array([0.75, 0.75, 0.75])
    """
    if not isinstance(mesh, MeshData):
        raise InvalidInputError(f"mesh must be a MeshData, got {type(mesh).__name__}")
    weights = check_morph_weights(weights, mesh.num_targets)
    batch = weights.shape[:-1]
    if mesh.morph_positions is None:
        positions = np.broadcast_to(mesh.positions, (*batch, *mesh.positions.shape)).copy()
        normals = None if mesh.normals is None else np.broadcast_to(mesh.normals, positions.shape).copy()
        return positions, None if normals is None else _unit(normals)
    positions = mesh.positions + np.einsum("...t,tvc->...vc", weights, mesh.morph_positions)
    if mesh.normals is None:
        return positions, None
    normals = np.broadcast_to(mesh.normals, positions.shape).copy()
    if mesh.morph_normals is not None:
        normals += np.einsum("...t,tvc->...vc", weights, mesh.morph_normals)
    return positions, _unit(normals)


def _unit(vectors: FloatArray) -> FloatArray:
    length = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(length > 0, length, 1.0)
