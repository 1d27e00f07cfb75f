"""The object-space error of a compressed pose: displacement of virtual vertices on a shell around each joint.

Every joint ``j`` carries a ball of radius ``r_j`` in its own (joint) space: the virtual vertices,
standing in for the skinned mesh (3 cm by default, as ACL measures; the farthest skinned vertex of
the joint when a mesh is given; larger for end effectors the user names). A vertex ``p`` of that
ball sits at ``A_j p + o_j`` in model space, where ``(A_j, o_j)`` is the joint's model transform
(its 3×3 linear part and its origin), composed through the whole hierarchy: an error at the hip
moves the fingertip. Between a reference and a compressed model transform, the displacement of
every vertex of the ball is at most

``E_j = |o_j − o'_j| + r_j · σ(A_j − A'_j)``

where ``σ`` is the largest singular value (the triangle inequality on ``ΔA p + Δo``). ``E`` is the
error Ossa reports and guarantees: a bound on the displacement of every point of every shell, at
every sampled time. It is tight for rotations about the joint (``Δo = 0``): a rotation error of
angle ``θ`` moves the shell by exactly ``2 r sin(θ/2)``.

``σ`` comes from the largest eigenvalue of ``B = ΔAᵀΔA`` by Newton's method on its characteristic
cubic, started above the root (Wolkowicz–Styan's bound), so every iterate stays an upper bound:
the error is never underestimated, and only ``+ − × ÷ √`` are used (the same bits on every machine,
which keeps compression deterministic).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.anim.layout import PoseBuffer
from engine.anim.local_to_model import model_from_pose
from engine.anim.mesh import MeshData
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray

#: Default shell radius around every joint, metres (ACL's 3 cm).
DEFAULT_SHELL = 0.03
#: Newton steps on the characteristic cubic: a double root (the rotation case) converges one bit
#: per step from the start bound, so 12 steps overestimate ``σ`` by under 1e-4 relative.
_NEWTON_STEPS = 12
#: Relative margin on the eigenvalue that covers rounding near a (near-)triple root.
_ROUNDING_MARGIN = 1.0 + 2.0**-15


def largest_singular_value(matrices: Any) -> FloatArray:
    """Upper bound ``(...)`` of the largest singular value of ``(..., 3, 3)`` matrices, tight to 1e-4.

    Never below the true value (up to rounding of 1e-15 relative); exact for a zero matrix.

    Examples
    --------
    >>> m = np.diag([3.0, -4.0, 1.0])
    >>> float(np.round(largest_singular_value(m), 6))
    4.0
    """
    m = np.asarray(matrices, dtype=np.float64)
    if m.shape[-2:] != (3, 3):
        raise InvalidInputError(f"matrices must have shape (..., 3, 3), got {m.shape}")
    size = np.abs(m).max(axis=(-2, -1))  # work on M / size: the cubic's terms neither underflow nor overflow
    m = m / np.where(size > 0.0, size, 1.0)[..., None, None]
    columns = [m[..., :, i] for i in range(3)]  # B = MᵀM written out: one summation order everywhere

    def dot(u: FloatArray, v: FloatArray) -> FloatArray:
        return u[..., 0] * v[..., 0] + u[..., 1] * v[..., 1] + u[..., 2] * v[..., 2]

    b00, b11, b22 = (dot(c, c) for c in columns)
    b01, b02, b12 = dot(columns[0], columns[1]), dot(columns[0], columns[2]), dot(columns[1], columns[2])
    c2 = b00 + b11 + b22
    c1 = b00 * b11 - b01 * b01 + b00 * b22 - b02 * b02 + b11 * b22 - b12 * b12
    c0 = b00 * (b11 * b22 - b12 * b12) - b01 * (b01 * b22 - b12 * b02) + b02 * (b01 * b12 - b11 * b02)
    mean = c2 / 3.0
    squares = b00 * b00 + b11 * b11 + b22 * b22 + 2.0 * (b01 * b01 + b02 * b02 + b12 * b12)
    spread = np.sqrt(np.maximum(squares / 3.0 - mean * mean, 0.0))
    # Wolkowicz–Styan: mean + spread/√(n−1) <= λmax <= mean + spread·√(n−1). From above, Newton's
    # iterates decrease monotonically to λmax; a step past the lower bound can only be rounding
    # (a near-triple root) and is refused, so every iterate stays an upper bound.
    lam = np.minimum(mean + spread * np.sqrt(2.0), c2)
    lower = mean + spread / np.sqrt(2.0)
    for _ in range(_NEWTON_STEPS):
        f = ((lam - c2) * lam + c1) * lam - c0
        slope = (3.0 * lam - 2.0 * c2) * lam + c1
        step = f / np.where(slope > 0.0, slope, 1.0)
        lam = np.where((f > 0.0) & (slope > 0.0) & (step <= lam - lower), lam - step, lam)
    # Rounding can only matter where the eigenvalues cluster within ~1e-5 of each other, and there
    # the lower bound keeps the iterate within that cluster: the margin covers it.
    return np.sqrt(np.maximum(lam, 0.0) * _ROUNDING_MARGIN) * size


def model_transforms(skeleton: Skeleton, pose: Pose | PoseBuffer) -> tuple[FloatArray, FloatArray]:
    """Model-space linear parts ``(..., J, 3, 3)`` and origins ``(..., J, 3)`` of ``pose``."""
    model = model_from_pose(skeleton, pose)
    return model[..., :3, :3], model[..., :3, 3]


def shell_error(
    reference: tuple[FloatArray, FloatArray], other: tuple[FloatArray, FloatArray], radii: FloatArray
) -> FloatArray:
    """``E_j`` of the module docstring ``(..., J)`` between two model transforms ``(A, o)``; radii ``(J,)``."""
    (a_ref, o_ref), (a, o) = reference, other
    offset = o_ref - o
    moved = np.sqrt(offset[..., 0] ** 2 + offset[..., 1] ** 2 + offset[..., 2] ** 2)
    return moved + radii * largest_singular_value(a_ref - a)


def shell_radii(
    skeleton: Skeleton,
    shell: float = DEFAULT_SHELL,
    *,
    meshes: Sequence[MeshData] = (),
    effectors: Mapping[str, float] | None = None,
) -> FloatArray:
    """Shell radius of every joint ``(J,)``, metres.

    Parameters
    ----------
    skeleton
        The skeleton the clips play on.
    shell
        The radius of joints that no mesh and no effector sizes (positive, metres).
    meshes
        Skinned meshes of ``skeleton``: a joint that skins vertices gets the distance of its
        farthest vertex (weight > 0), measured in the joint's bind space, if that is larger
        than ``shell``.
    effectors
        Joint name → radius (metres) for end effectors (hands, feet, a weapon tip): used as is.

    Raises
    ------
    InvalidInputError
        A radius that is not positive and finite.
    SkeletonMismatchError
        An effector naming no joint, or a mesh skinned to joints the skeleton lacks.
    """
    _check_radius(shell, "shell")
    radii = np.full(skeleton.num_joints, float(shell))
    for k, mesh in enumerate(meshes):
        if mesh.joints is None or mesh.weights is None:
            continue
        if mesh.joints.size and int(mesh.joints.max()) >= skeleton.num_joints:
            raise SkeletonMismatchError(
                f"meshes[{k}] is skinned to joint {int(mesh.joints.max())} but the skeleton has "
                f"{skeleton.num_joints} joints"
            )
        influences = mesh.weights > 0.0  # (V, 4)
        vertex, slot = np.nonzero(influences)
        joint = mesh.joints[vertex, slot]
        bind = skeleton.inverse_bind_matrices[joint]  # (n, 4, 4): model → joint space
        local = np.einsum("nij,nj->ni", bind[:, :3, :3], mesh.positions[vertex]) + bind[:, :3, 3]
        np.maximum.at(radii, joint, np.linalg.norm(local, axis=-1))
    for name, radius in (effectors or {}).items():
        _check_radius(radius, f"effector {name!r}")
        radii[skeleton.index(name)] = float(radius)
    radii.flags.writeable = False
    return radii


def _check_radius(value: Any, name: str) -> None:
    if not (isinstance(value, int | float | np.floating) and np.isfinite(value) and value > 0.0):
        raise InvalidInputError(f"{name} radius must be a positive number of metres, got {value!r}")
