"""Shared pieces of the IK solvers: the result type, argument checks, joint frames, rotation helpers.

The helpers here work on raw float64 arrays that the public solvers have already validated, so
they skip the per-call checks of :mod:`engine.math` (they run inside iteration loops).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import DegenerateInputError, InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, check_finite, nonzero_norm
from engine.math.quat import quat_from_matrix, quat_pow

BoolArray = npt.NDArray[np.bool_]
JointRef = int | str

IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])
_X_AXIS = np.array([1.0, 0.0, 0.0])


class IKResult(NamedTuple):
    """What every solver returns: local rotation corrections and whether the target was reached.

    Attributes
    ----------
    joints
        ``(N,)`` skeleton indices of the corrected joints, root-most first.
    corrections
        ``(..., N, 4)`` unit quaternions, one per joint in ``joints``, to multiply onto each
        joint's local (parent-space) rotation **on the right**:
        ``new_local = quat_multiply(local, correction)``. The correction acts in the joint's own
        frame, before its local rotation; :func:`apply_corrections` does exactly this.
    reached
        ``(...)`` booleans: whether the solved chain (at weight 1) puts its end on the target
        within the solver's tolerance. Each solver's docstring says precisely what it measures.
    """

    joints: IntArray
    corrections: FloatArray
    reached: BoolArray

    def apply(self, pose: Pose) -> Pose:
        """``apply_corrections(pose, self.joints, self.corrections)``: a new, corrected pose."""
        return apply_corrections(pose, self.joints, self.corrections)


def apply_corrections(pose: Pose, joints: Any, corrections: Any) -> Pose:
    """A new pose whose rotations of ``joints`` are post-multiplied by ``corrections``.

    ``rotations[..., joints[n], :] = rotations[..., joints[n], :] * corrections[..., n, :]``
    (Hamilton product, the correction acting first, in the joint's own frame). This is the
    order every solver of :mod:`engine.anim.ik` returns. Translations and scales are copied
    unchanged.

    Parameters
    ----------
    pose
        Local pose ``(..., J, ...)``: the one whose model matrices the solver was given.
    joints
        ``(N,)`` distinct joint indices.
    corrections
        ``(..., N, 4)`` unit quaternions; their leading axes broadcast against the pose's, so a
        single rest pose ``(J, ...)`` takes corrections for ``C`` characters ``(C, N, 4)``.

    Returns
    -------
    Pose
        Shaped ``(*batch, J, ...)`` where ``batch`` broadcasts the pose's and the corrections'
        leading axes.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Skeleton
    >>> from engine.math import quat_from_axis_angle
    >>> skeleton = Skeleton(["a", "b"], [-1, 0])
    >>> turn = quat_from_axis_angle([0, 0, 1], np.pi / 2)
    >>> pose = apply_corrections(skeleton.rest_pose, [1], turn[None])
    >>> np.round(pose.rotations[1], 6) + 0.0
    array([0.      , 0.      , 0.707107, 0.707107])
    """
    index = np.asarray(joints)
    count = pose.num_joints
    if index.ndim != 1 or (index.size and not np.issubdtype(index.dtype, np.integer)):
        raise InvalidInputError(f"joints must be a 1-D sequence of joint indices, got {index!r}")
    if np.any((index < 0) | (index >= count)):
        raise SkeletonMismatchError(f"joints must lie in [0, {count}) for this pose, got {index.tolist()}")
    if np.unique(index).size != index.size:
        raise InvalidInputError(f"joints must be distinct, got {index.tolist()}")
    corrections = as_array(corrections, "corrections", (4,))
    if corrections.ndim < 2 or corrections.shape[-2] != index.size:
        raise InvalidInputError(
            f"corrections must have shape (..., {index.size}, 4) for {index.size} joints, got {corrections.shape}"
        )
    batch = batch_shape(pose=pose.shape[:-1], corrections=corrections.shape[:-2])

    def grow(values: FloatArray) -> FloatArray:
        return np.broadcast_to(values, (*batch, *values.shape[-2:])).copy()

    rotations = grow(pose.rotations)
    rotations[..., index, :] = qmul(rotations[..., index, :], corrections)
    return Pose(grow(pose.translations), rotations, grow(pose.scales))


# --- argument checks --------------------------------------------------------------------------


def batch_shape(**shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of the named batch shapes; a clash names every argument and its shape."""
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        listed = ", ".join(f"{k} {v}" for k, v in shapes.items())
        raise InvalidInputError(f"batch shapes do not broadcast: {listed}") from None


def joint_index(skeleton: Skeleton, joint: Any, name: str) -> int:
    """Index of ``joint`` given as an index or a name; raises naming the argument ``name``."""
    if isinstance(joint, str):
        try:
            return skeleton.index(joint)
        except SkeletonMismatchError as exc:
            raise SkeletonMismatchError(f"{name}: {exc}") from None
    if isinstance(joint, bool) or not isinstance(joint, int | np.integer):
        raise InvalidInputError(f"{name} must be a joint index or name, got {type(joint).__name__} {joint!r}")
    if not 0 <= joint < skeleton.num_joints:
        raise SkeletonMismatchError(f"{name} = {joint} is out of range for a skeleton of {skeleton.num_joints} joints")
    return int(joint)


def _is_ancestor(skeleton: Skeleton, ancestor: int, joint: int) -> bool:
    parent = int(skeleton.parents[joint])
    while parent > ancestor:  # parents precede children, so the walk can stop below `ancestor`
        parent = int(skeleton.parents[parent])
    return parent == ancestor


def parent_chain(skeleton: Skeleton, joints: JointRef | Sequence[JointRef], name: str, min_length: int) -> IntArray:
    """Joint indices of ``joints``, checked to run root-most first, each an ancestor of the next.

    Intermediate joints may be skipped (e.g. a twist joint between thigh and shin): the solvers
    only need each listed joint to lie above the next one in the hierarchy.
    """
    listed = [joints] if isinstance(joints, str | int | np.integer) else list(joints)
    indices = [joint_index(skeleton, j, f"{name}[{k}]") for k, j in enumerate(listed)]
    if len(indices) < min_length:
        raise InvalidInputError(f"{name} must list at least {min_length} joints, got {len(indices)}")
    for upper, lower in itertools.pairwise(indices):
        if not _is_ancestor(skeleton, upper, lower):
            raise SkeletonMismatchError(
                f"{name} must be one parent chain, root-most first: joint {upper} ({skeleton.names[upper]!r}) "
                f"is not an ancestor of joint {lower} ({skeleton.names[lower]!r})"
            )
    return np.array(indices, dtype=np.intp)


def gather_model(skeleton: Skeleton, model: Any, joints: IntArray) -> FloatArray:
    """``model[..., joints, :, :]`` after checking the shape ``(..., J, 4, 4)`` and finiteness."""
    model = as_array(model, "model", (4, 4), finite=False)
    if model.ndim < 3 or model.shape[-3] != skeleton.num_joints:
        raise SkeletonMismatchError(
            f"model must have shape (..., {skeleton.num_joints}, 4, 4) for this skeleton, got {model.shape}"
        )
    gathered = model[..., joints, :, :]
    check_finite(gathered, "model")
    return gathered


def check_weight(value: Any, name: str) -> FloatArray:
    """``value`` as an array in ``[0, 1]``."""
    weight = as_array(value, name)
    if np.any((weight < 0.0) | (weight > 1.0)):
        raise InvalidInputError(f"{name} must lie in [0, 1], got values in [{weight.min():.3g}, {weight.max():.3g}]")
    return weight


def check_unit_axis(value: Any, name: str) -> FloatArray:
    """``value`` as a normalised ``(..., 3)`` direction; zero length raises ``DegenerateInputError``."""
    axis = as_array(value, name, (3,))
    norm = np.linalg.norm(axis, axis=-1)
    nonzero_norm(norm, name, "vector")
    return axis / norm[..., None]


def check_nonnegative(value: float, name: str) -> float:
    """``value`` as a finite float ``>= 0``."""
    number = float(value)
    if not np.isfinite(number) or number < 0.0:
        raise InvalidInputError(f"{name} must be a finite number >= 0, got {value!r}")
    return number


# --- raw vector and quaternion helpers (validated inputs only) --------------------------------


def dot(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a · b`` over the last axis (einsum: far cheaper than ``sum(axis=-1)`` over 3 or 4 items)."""
    return np.einsum("...i,...i->...", a, b)


def cross(a: FloatArray, b: FloatArray) -> FloatArray:
    """``a × b`` over the last axis, broadcasting."""
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx), axis=-1)


def norm(v: FloatArray) -> FloatArray:
    """Euclidean length over the last axis."""
    return np.sqrt(np.einsum("...i,...i->...", v, v))


def unit(v: FloatArray, eps: Any = 1e-12) -> tuple[FloatArray, BoolArray]:
    """``(v / |v|, |v| > eps)``; where the length is ``<= eps`` the direction is ``+X`` and the mask False."""
    length = norm(v)
    ok = length > eps
    safe = np.where(ok, length, 1.0)[..., None]
    return np.where(ok[..., None], v / safe, _X_AXIS), ok


def choose(mask: BoolArray, a: FloatArray, b: FloatArray) -> FloatArray:
    """``a`` where ``mask`` (one flag per vector), else ``b``."""
    return np.where(mask[..., None], a, b)


def perpendicular(v: FloatArray) -> FloatArray:
    """A unit vector perpendicular to each unit ``v``: ``v`` crossed with its least-aligned axis."""
    axis = np.eye(3)[np.argmin(np.abs(v), axis=-1)]
    return unit(cross(v, axis))[0]


def qmul(a: FloatArray, b: FloatArray) -> FloatArray:
    """Hamilton product ``a * b`` (``b`` acts first), broadcasting."""
    av, aw = a[..., :3], a[..., 3:]
    bv, bw = b[..., :3], b[..., 3:]
    xyz = aw * bv + bw * av + cross(av, bv)
    w = aw * bw - np.einsum("...i,...i->...", av, bv)[..., None]
    return np.concatenate((xyz, w), axis=-1)


_LEFT_INDEX = np.array([[3, 2, 1, 0], [2, 3, 0, 1], [1, 0, 3, 2], [0, 1, 2, 3]])
_LEFT_SIGN = np.array([[1.0, -1.0, 1.0, 1.0], [1.0, 1.0, -1.0, 1.0], [-1.0, 1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, 1.0]])


def left_matrix(q: FloatArray) -> FloatArray:
    """``(..., 4, 4)`` matrices with ``left_matrix(q) @ p == q * p``: one matmul turns many quaternions."""
    return q[..., _LEFT_INDEX] * _LEFT_SIGN


def rotation_matrix(q: FloatArray) -> FloatArray:
    """``(..., 3, 3)`` rotation matrices (column vectors) of unit quaternions."""
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    x2, y2, z2 = x + x, y + y, z + z
    xx, yy, zz, xy, xz, yz = x * x2, y * y2, z * z2, x * y2, x * z2, y * z2
    wx, wy, wz = w * x2, w * y2, w * z2
    m = np.empty((*q.shape[:-1], 3, 3))
    m[..., 0, 0], m[..., 0, 1], m[..., 0, 2] = 1.0 - yy - zz, xy - wz, xz + wy
    m[..., 1, 0], m[..., 1, 1], m[..., 1, 2] = xy + wz, 1.0 - xx - zz, yz - wx
    m[..., 2, 0], m[..., 2, 1], m[..., 2, 2] = xz - wy, yz + wx, 1.0 - xx - yy
    return m


def qconj(q: FloatArray) -> FloatArray:
    """Conjugate: the inverse of a unit quaternion."""
    return q * np.array([-1.0, -1.0, -1.0, 1.0])


def qrot(q: FloatArray, v: FloatArray) -> FloatArray:
    """Rotate vectors ``v`` by unit quaternions ``q`` (``v + 2w(u×v) + 2u×(u×v)``)."""
    u = q[..., :3]
    uv = cross(u, v)
    return v + 2.0 * (q[..., 3:] * uv + cross(u, uv))


def qaxis(axis: FloatArray, angle: FloatArray) -> FloatArray:
    """Rotation by ``angle`` about the unit ``axis``."""
    half = 0.5 * np.asarray(angle)[..., None]
    xyz = axis * np.sin(half)
    w = np.broadcast_to(np.cos(half), (*xyz.shape[:-1], 1))
    return np.concatenate((xyz, w), axis=-1)


def qnormalize(q: FloatArray) -> FloatArray:
    """``q / |q|`` for quaternions known to be near unit length."""
    return q / np.sqrt(np.einsum("...i,...i->...", q, q))[..., None]


def in_frame(frame: FloatArray, q: FloatArray) -> FloatArray:
    """``conj(frame) * q * frame``: a model-space rotation ``q`` expressed in the frame's axes."""
    return qmul(qconj(frame), qmul(q, frame))


def arc(u: FloatArray, v: FloatArray, fallback: FloatArray | None = None) -> FloatArray:
    """The shortest rotation taking direction ``u`` onto direction ``v``.

    Identity where either vector is zero. For opposite directions the half turn is about
    ``fallback`` made perpendicular to ``u`` (any perpendicular when ``fallback`` is None or
    parallel to ``u``). With ``n = u × v``, ``d = u · v`` and ``s = |u||v|`` the rotation is
    ``(n, s + d)`` normalised; for ``d < 0`` the same rotation is written
    ``((s − d)·n/|n|, |n|)``, which stays well conditioned up to 180°.
    """
    scale = norm(u) * norm(v)
    d = dot(u, v)
    n = cross(u, v)
    n_len = norm(n)
    axis_ok = n_len > 1e-12 * scale
    axis = n / np.where(axis_ok, n_len, 1.0)[..., None]
    if not axis_ok.all():
        un = unit(u)[0]
        if fallback is None:
            side = perpendicular(un)
        else:
            side, side_ok = unit(fallback - dot(fallback, un)[..., None] * un)
            side = choose(side_ok, side, perpendicular(un))
        axis = choose(axis_ok, axis, side)
    ahead = d >= 0.0
    xyz = np.where(ahead[..., None], n, (scale - d)[..., None] * axis)
    w = np.where(ahead, scale + d, n_len)
    q = np.concatenate((xyz, w[..., None]), axis=-1)
    length = norm(q)
    valid = length > 0.0
    return np.where(valid[..., None], q / np.where(valid, length, 1.0)[..., None], IDENTITY)


def signed_angle(a: FloatArray, b: FloatArray, axis: FloatArray) -> FloatArray:
    """Angle in ``(-π, π]`` turning ``a`` towards ``b`` about ``axis`` (right hand)."""
    return np.arctan2(dot(cross(a, b), axis), dot(a, b))


def frame_rotations(model: FloatArray) -> FloatArray:
    """Model-space orientation ``(..., 4)`` of joints from their model matrices ``(..., 4, 4)``.

    The joint's own scale is removed by normalising the basis columns, so a joint with any
    positive (even non-uniform) scale of its own gives its rotation exactly, provided the
    matrices above it are similarities (rotation × positive uniform scale). A zero-scale axis
    has no orientation and raises :class:`~engine.errors.DegenerateInputError`.
    """
    basis = model[..., :3, :3]
    lengths = np.sqrt(np.einsum("...ij,...ij->...j", basis, basis))
    if np.any(lengths <= 1e-300):
        raise DegenerateInputError("model matrices of the IK joints must have non-zero scale on every axis")
    return quat_from_matrix(basis / lengths[..., None, :])


def weighted(corrections: FloatArray, weight: FloatArray) -> FloatArray:
    """Corrections scaled towards identity: ``slerp(identity, c, weight)`` along the shortest arc.

    ``weight`` is ``(...)`` and applies to every joint of ``corrections`` ``(..., N, 4)``;
    weight 1 returns the corrections unchanged, weight 0 the identity.
    """
    w = np.asarray(weight)[..., None]
    if np.all(w == 1.0):
        return corrections
    return np.where((w == 1.0)[..., None], corrections, quat_pow(corrections, w))


def swing_twist_clamp(q: FloatArray, axis: FloatArray, max_swing: FloatArray, max_twist: FloatArray) -> FloatArray:
    """Clamp rotations ``q = swing * twist`` to ``swing angle <= max_swing``, ``|twist| <= max_twist``.

    ``twist`` is the part of ``q`` about the unit ``axis``; ``swing`` turns about an axis
    perpendicular to it and moves ``axis`` by its angle. At an exact half-turn swing (no twist
    part defined) the twist is taken as identity.
    """
    projection = dot(q[..., :3], axis)
    sign = np.where(q[..., 3] < 0.0, -1.0, 1.0)
    projection, w = projection * sign, q[..., 3] * sign
    twist_angle = 2.0 * np.arctan2(projection, w)
    twist_raw = np.concatenate((axis * projection[..., None], w[..., None]), axis=-1)
    twist_len = norm(twist_raw)
    has_twist = twist_len > 1e-12
    twist = np.where(has_twist[..., None], twist_raw / np.where(has_twist, twist_len, 1.0)[..., None], IDENTITY)
    twist_angle = np.where(has_twist, twist_angle, 0.0)
    swing = qmul(q * sign[..., None], qconj(twist))
    swing_axis, swing_ok = unit(swing[..., :3])
    swing_angle = 2.0 * np.arctan2(norm(swing[..., :3]), np.abs(swing[..., 3]))
    swing_axis = swing_axis * np.where(swing[..., 3] < 0.0, -1.0, 1.0)[..., None]
    swing_angle = np.where(swing_ok, np.minimum(swing_angle, max_swing), 0.0)
    twist_angle = np.clip(twist_angle, -max_twist, max_twist)
    return qmul(qaxis(swing_axis, swing_angle), qaxis(axis, twist_angle))
