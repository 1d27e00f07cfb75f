"""Skinning: the palette of joint matrices, and CPU reference skins (linear and dual-quaternion).

The palette maps bind-space vertices to model space: ``palette[j] = model[j] @ inverse_bind[j]``
(``docs/conventions.md``). glTF's joint matrices add the mesh node:
``inverse(world(mesh node)) @ world(joint) @ inverse_bind``, so that the skinned vertex is then
placed by the mesh node's own world transform, as the specification draws it.

The CPU skins use **every** influence set of the mesh (``JOINTS_n``/``WEIGHTS_n``, ``n = 0..S-1``),
L1-normalise the weights of each vertex (real files have sums like 0.98), and leave a vertex
whose weights are all zero at its bind position (it has no joint to follow).
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from engine.anim.layout import (
    MatrixBuffer,
    Workspace,
    components,
    deliver_matrices,
    matrices_destination,
    matrix_array_view,
    workspace_or_fresh,
)
from engine.anim.mesh import MeshData
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array
from engine.math.dualquat import dq_blend, dq_from_rotation_translation, dq_transform_points
from engine.math.mat import affine_inverse
from engine.math.quat import quat_from_matrix, quat_rotate


def _check_joint_axis(array: Any, name: str, joints: int) -> FloatArray:
    array = as_array(array, name, (4, 4))
    if array.ndim < 3 or array.shape[-3] != joints:
        raise SkeletonMismatchError(f"{name} must have shape (..., {joints}, 4, 4), got {array.shape}")
    return array


@overload
def skinning_palette(
    skeleton: Skeleton, model: Any, *, out: MatrixBuffer, workspace: Workspace | None = None
) -> MatrixBuffer: ...


@overload
def skinning_palette(
    skeleton: Skeleton, model: Any, *, out: FloatArray | None = None, workspace: Workspace | None = None
) -> FloatArray: ...


def skinning_palette(
    skeleton: Skeleton,
    model: Any,
    *,
    out: FloatArray | MatrixBuffer | None = None,
    workspace: Workspace | None = None,
) -> FloatArray | MatrixBuffer:
    """Skinning matrices ``(..., J, 4, 4)``: ``model[j] @ skeleton.inverse_bind_matrices[j]``.

    ``model`` ``(..., J, 4, 4)`` are the joints' model-space matrices (from
    :func:`~engine.anim.local_to_model.model_from_pose`), as an array or a
    :class:`~engine.anim.layout.MatrixBuffer`. A vertex in bind space goes to model space through
    its joints' palette matrices. With buffers the product runs batch-innermost
    (:mod:`engine.anim.layout`): one small matrix product per joint and row over all characters
    at once (BLAS); arrays in and out are one batched ``matmul``. ``out`` is a
    :class:`~engine.anim.layout.MatrixBuffer` (filled in place), a writable array, or ``None``
    for a new C-ordered array; ``workspace`` is scratch memory to reuse.
    """
    joints = skeleton.num_joints
    if isinstance(model, MatrixBuffer):
        if model.num_joints != joints:
            raise SkeletonMismatchError(f"model has {model.num_joints} joints but the skeleton has {joints}")
        batch, entries = model.batch, model.entries
    else:
        model = _check_joint_axis(model, "model", joints)
        batch, entries = model.shape[:-3], components(model, joints, (4, 4))
        if not isinstance(out, MatrixBuffer):  # arrays in and out: one batched product, no layout change
            palette = np.matmul(model, skeleton.inverse_bind_matrices)
            if out is None:
                return palette
            matrix_array_view(out, batch, joints)[...] = components(palette, joints, (4, 4))
            return out
    ws = workspace_or_fresh(workspace)
    with ws.scope():
        palette, view = matrices_destination(out, batch, joints, ws)
        # palette[r, k, j, :] = Σ_m inverse_bind[j, m, k] · model[r, m, j, :]
        inverse_bind_t = skeleton.inverse_bind_matrices.transpose(0, 2, 1)
        np.matmul(inverse_bind_t[None], entries.transpose(0, 2, 1, 3), out=palette.transpose(0, 2, 1, 3))
        return deliver_matrices(out, palette, view, batch, slice(None))


def joint_matrices(world_joints: Any, world_mesh_node: Any, inverse_bind: Any) -> FloatArray:
    """Joint matrices ``(..., J, 4, 4)`` of glTF: ``inverse(world_mesh_node) @ world_joints @ inverse_bind``.

    Parameters
    ----------
    world_joints
        ``(..., J, 4, 4)`` world matrices of the skin's joints.
    world_mesh_node
        ``(..., 4, 4)`` world matrix of the node that instantiates the skinned mesh.
    inverse_bind
        ``(J, 4, 4)`` the skin's inverse bind matrices.

    Returns
    -------
    FloatArray
        Matrices that take a bind-space vertex into the mesh node's space.
    """
    inverse_bind = as_array(inverse_bind, "inverse_bind", (4, 4))
    if inverse_bind.ndim != 3:
        raise InvalidInputError(f"inverse_bind must have shape (J, 4, 4), got {inverse_bind.shape}")
    world_joints = _check_joint_axis(world_joints, "world_joints", inverse_bind.shape[0])
    world_mesh_node = as_array(world_mesh_node, "world_mesh_node", (4, 4))
    return affine_inverse(world_mesh_node)[..., None, :, :] @ world_joints @ inverse_bind


def _influences(palette: Any, mesh: MeshData) -> tuple[FloatArray, IntArray, FloatArray, FloatArray]:
    """Checked palette, joints ``(V, 4S)``, normalised weights ``(V, 4S)``, unweighted mask ``(V,)``."""
    if not isinstance(mesh, MeshData):
        raise InvalidInputError(f"mesh must be a MeshData, got {type(mesh).__name__}")
    if mesh.joints is None or mesh.weights is None:
        raise InvalidInputError(f"mesh {mesh.name!r} has no JOINTS_n/WEIGHTS_n influences to skin with")
    palette = as_array(palette, "palette", (4, 4))
    if palette.ndim < 3:
        raise InvalidInputError(f"palette must have shape (..., J, 4, 4), got {palette.shape}")
    used = int(mesh.joints.max(initial=0))
    if used >= palette.shape[-3]:
        raise SkeletonMismatchError(
            f"mesh {mesh.name!r} uses joint index {used} but the palette has {palette.shape[-3]} joints"
        )
    total = mesh.weights.sum(axis=1)
    unweighted = total <= 0.0
    weights = mesh.weights / np.where(unweighted, 1.0, total)[:, None]
    return palette, mesh.joints, weights, unweighted


def _transform_normals(linear: FloatArray, normals: FloatArray) -> FloatArray:
    """Unit normals ``(..., V, 3)`` through the inverse transpose of ``linear`` ``(..., V, 3, 3)``.

    Uses the cofactor matrix (``det · inverse-transpose``) times ``sign(det)``, which stays defined
    for singular matrices (a flattened joint keeps the normal of the plane it flattens onto). A
    normal that maps to zero stays zero.
    """
    a, b, c = linear[..., :, 0], linear[..., :, 1], linear[..., :, 2]
    bc, ca, ab = np.cross(b, c), np.cross(c, a), np.cross(a, b)
    det = np.sum(a * bc, axis=-1, keepdims=True)
    n = normals[..., 0:1] * bc + normals[..., 1:2] * ca + normals[..., 2:3] * ab
    n *= np.where(det < 0, -1.0, 1.0)
    length = np.linalg.norm(n, axis=-1, keepdims=True)
    return n / np.where(length > 0, length, 1.0)


def skin_vertices(
    mesh: MeshData, palette: Any, *, positions: Any = None, normals: Any = None
) -> tuple[FloatArray, FloatArray | None]:
    """Linear blend skinning on the CPU, over every influence set of ``mesh``.

    Each vertex's matrix is ``Σ_k w_k · palette[joint_k]`` with the weights L1-normalised; a
    vertex whose weights sum to zero keeps its bind position and normal.

    Parameters
    ----------
    mesh
        A skinned :class:`~engine.anim.mesh.MeshData`; its joint indices must be below ``J``.
    palette
        ``(..., J, 4, 4)`` skinning matrices (:func:`skinning_palette` or :func:`joint_matrices`).
    positions, normals
        Bind-space vertices ``(..., V, 3)`` to skin instead of the mesh's own, e.g. morphed ones
        (:func:`engine.anim.morph.morph_vertices`: glTF morphs first, then skins).

    Returns
    -------
    tuple
        Positions ``(..., V, 3)`` and unit normals ``(..., V, 3)`` (``None`` when the mesh has no
        normals), in the palette's target space.
    """
    palette, joints, weights, unweighted = _influences(palette, mesh)
    base, base_normals = _bind_vertices(mesh, positions, normals)
    blended = np.zeros((*palette.shape[:-3], mesh.num_vertices, 3, 4))
    for k in range(joints.shape[1]):  # one pass per influence slot (4·S of them), all vertices at once
        blended += weights[:, k, None, None] * palette[..., joints[:, k], :3, :]
    blended[..., unweighted, :, :3] = np.eye(3)
    linear = blended[..., :3]
    skinned = np.einsum("...ij,...j->...i", linear, base) + blended[..., 3]
    return skinned, None if base_normals is None else _transform_normals(linear, base_normals)


def _bind_vertices(mesh: MeshData, positions: Any, normals: Any) -> tuple[FloatArray, FloatArray | None]:
    """The bind-space positions and normals to skin: the mesh's, or the ``(..., V, 3)`` given."""
    shape = (mesh.num_vertices, 3)
    if positions is None:
        positions = mesh.positions
    else:
        positions = as_array(positions, "positions", (3,))
        if positions.shape[-2:] != shape:
            raise InvalidInputError(f"positions must have shape (..., {shape[0]}, 3), got {positions.shape}")
    if normals is None:
        return positions, mesh.normals
    normals = as_array(normals, "normals", (3,))
    if normals.shape[-2:] != shape:
        raise InvalidInputError(f"normals must have shape (..., {shape[0]}, 3), got {normals.shape}")
    return positions, normals


def skin_vertices_dq(
    mesh: MeshData, palette: Any, *, positions: Any = None, normals: Any = None
) -> tuple[FloatArray, FloatArray | None]:
    """Dual-quaternion skinning on the CPU (reference for the GPU shader), every influence set.

    Each palette matrix is split into a rigid part (rotation ``R`` with the first column's sign
    fixed so ``det R = 1``, and the translation) and a stretch ``A = Rᵀ · M₃`` that carries scale,
    shear and mirroring. Vertices are first stretched by the weighted sum of ``A`` (identity for
    rigid palettes), then moved by the blended, normalised dual quaternion of the rigid parts
    (hemisphere of the first influence), as in Kavan et al.'s two-phase skinning. Weights are
    L1-normalised; unweighted vertices keep their bind position and normal.

    ``positions``/``normals`` ``(..., V, 3)`` replace the mesh's bind-space vertices (as in
    :func:`skin_vertices`). Returns positions ``(..., V, 3)`` and unit normals ``(..., V, 3)`` or
    ``None``.
    """
    palette, joints, weights, unweighted = _influences(palette, mesh)
    base, base_normals = _bind_vertices(mesh, positions, normals)
    linear = palette[..., :3, :3]
    columns = np.linalg.norm(linear, axis=-2, keepdims=True)
    if np.any(columns <= 1e-12):
        raise InvalidInputError("palette has a zero-length basis column: its rotation is undefined")
    basis = linear / columns
    mirror = np.linalg.det(basis) < 0
    basis[..., :, 0] *= np.where(mirror, -1.0, 1.0)[..., None]
    rotation = quat_from_matrix(basis)
    stretch = np.swapaxes(basis, -1, -2) @ linear
    dqs = dq_from_rotation_translation(rotation, palette[..., :3, 3])
    weights = weights.copy()
    weights[unweighted, 0] = 1.0  # any unit blend; these vertices are restored below
    vertex_dq = dq_blend(dqs[..., joints, :], weights)
    vertex_stretch = np.einsum("vk,...vkij->...vij", weights, stretch[..., joints, :, :])
    stretched = np.einsum("...ij,...j->...i", vertex_stretch, base)
    skinned = dq_transform_points(vertex_dq, stretched)
    skinned[..., unweighted, :] = np.broadcast_to(base, skinned.shape)[..., unweighted, :]
    if base_normals is None:
        return skinned, None
    skinned_normals = quat_rotate(vertex_dq[..., :4], _transform_normals(vertex_stretch, base_normals))
    kept = np.broadcast_to(base_normals, skinned_normals.shape)[..., unweighted, :]
    skinned_normals[..., unweighted, :] = _transform_normals(np.eye(3), kept)
    return skinned, skinned_normals
