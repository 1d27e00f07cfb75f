"""Shared pieces of the IK solvers: the result type, argument checks, joint frames.

The solvers work on raw float64 arrays they have validated once, so inside their iteration
loops they call the unchecked kernels of :mod:`engine.math.kernels` (the one copy of every
quaternion and vector formula), not the validating public functions of :mod:`engine.math`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple, overload

import numpy as np
import numpy.typing as npt

from engine.anim.layout import MatrixBuffer, PoseBuffer
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import DegenerateInputError, InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, check_finite, nonzero_norm
from engine.math.kernels import conj, cross, dot, from_matrix, mul, mul_into, power

BoolArray = npt.NDArray[np.bool_]
JointRef = int | str


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

    @overload
    def apply(self, pose: Pose, *, out: None = None) -> Pose: ...

    @overload
    def apply(self, pose: Pose | PoseBuffer, *, out: PoseBuffer) -> PoseBuffer: ...

    @overload
    def apply(self, pose: Pose | PoseBuffer, *, out: Pose) -> Pose: ...

    @overload
    def apply(self, pose: Pose | PoseBuffer, *, out: Pose | PoseBuffer | None = None) -> Pose | PoseBuffer: ...

    def apply(self, pose: Pose | PoseBuffer, *, out: Pose | PoseBuffer | None = None) -> Pose | PoseBuffer:
        """``apply_corrections(pose, self, out=out)``: the corrected pose (in place with ``out=pose``)."""
        return apply_corrections(pose, self, out=out)


@overload
def apply_corrections(pose: Pose, joints: Any, corrections: Any = None, *, out: None = None) -> Pose: ...


@overload
def apply_corrections(
    pose: Pose | PoseBuffer, joints: Any, corrections: Any = None, *, out: PoseBuffer
) -> PoseBuffer: ...


@overload
def apply_corrections(pose: Pose | PoseBuffer, joints: Any, corrections: Any = None, *, out: Pose) -> Pose: ...


@overload
def apply_corrections(
    pose: Pose | PoseBuffer, joints: Any, corrections: Any = None, *, out: Pose | PoseBuffer | None = None
) -> Pose | PoseBuffer: ...


def apply_corrections(
    pose: Pose | PoseBuffer, joints: Any, corrections: Any = None, *, out: Pose | PoseBuffer | None = None
) -> Pose | PoseBuffer:
    """The pose with the rotations of ``joints`` post-multiplied by ``corrections`` (new, or in place).

    ``rotations[..., joints[n], :] = rotations[..., joints[n], :] * corrections[..., n, :]``
    (Hamilton product, the correction acting first, in the joint's own frame). This is the
    order every solver of :mod:`engine.anim.ik` returns. Translations and scales are unchanged.

    Parameters
    ----------
    pose
        Local pose ``(..., J)``, a :class:`~engine.anim.pose.Pose` or a single-layer
        :class:`~engine.anim.layout.PoseBuffer`: the one whose model matrices the solver was given.
    joints
        ``(N,)`` distinct joint indices, or an :class:`IKResult` (then ``corrections`` is omitted).
    corrections
        ``(..., N, 4)`` unit quaternions; their leading axes broadcast against the pose's, so a
        single rest pose ``(J, ...)`` takes corrections for ``C`` characters ``(C, N, 4)``.
    out
        Where to write the corrected pose: ``pose`` itself (in place, no copy: the staged
        frame's IK stage on the animator's :attr:`~engine.animator.Animator.pose_buffer`), or
        another pose or buffer shaped like the result (``pose`` is copied into it first).
        ``None``: a new C-ordered pose.

    Returns
    -------
    Pose or PoseBuffer
        ``out``, or a new pose shaped ``(*batch, J)`` where ``batch`` broadcasts the pose's and
        the corrections' leading axes.

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
    >>> _ = apply_corrections(pose, [1], turn[None], out=pose)      # in place: 180° now
    >>> np.round(pose.rotations[1], 6) + 0.0
    array([0., 0., 1., 0.])
    """
    if isinstance(joints, IKResult):
        if corrections is not None:
            raise InvalidInputError("corrections must be omitted when joints is an IKResult (it carries them)")
        joints, corrections = joints.joints, joints.corrections
    if not isinstance(pose, Pose | PoseBuffer):
        raise InvalidInputError(f"pose must be a Pose or PoseBuffer, got {type(pose).__name__}")
    if isinstance(pose, PoseBuffer) and pose.num_layers is not None:
        raise InvalidInputError(f"pose must be a single-layer PoseBuffer, got {pose!r}")
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
    if out is None:
        source = pose.to_pose() if isinstance(pose, PoseBuffer) else pose

        def grow(values: FloatArray) -> FloatArray:
            return np.broadcast_to(values, (*batch, *values.shape[-2:])).copy()

        rotations = grow(source.rotations)
        rotations[..., index, :] = mul(rotations[..., index, :], corrections)
        return Pose(grow(source.translations), rotations, grow(source.scales))
    if not isinstance(out, Pose | PoseBuffer) or out.shape != (*batch, count):
        got = out.shape if isinstance(out, Pose | PoseBuffer) else type(out).__name__
        raise InvalidInputError(f"out must be a Pose or PoseBuffer shaped {(*batch, count)}, got {got}")
    if out is not pose:
        _copy_pose(pose, out)
    if isinstance(out, Pose):
        out.rotations[..., index, :] = mul(out.rotations[..., index, :], corrections)
        return out
    rotations = out.rotations[:, index]  # (4, N, B), a copy
    per_character = np.broadcast_to(corrections, (*batch, index.size, 4)).reshape(out.count, index.size, 4)
    mul_into(rotations, rotations, per_character.transpose(2, 1, 0))
    out.rotations[:, index] = rotations
    return out


def _copy_pose(source: Pose | PoseBuffer, target: Pose | PoseBuffer) -> None:
    """Copy ``source`` into ``target`` (either layout), broadcasting its batch."""
    values = source.to_pose() if isinstance(source, PoseBuffer) else source
    if isinstance(target, PoseBuffer):
        target.assign(values)
        return
    for mine, theirs in zip(target.arrays(), values.arrays(), strict=True):
        mine[...] = theirs


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
    """``model[..., joints, :, :]`` after checking the shape ``(..., J, 4, 4)`` and finiteness.

    ``model`` may be a :class:`~engine.anim.layout.MatrixBuffer` (the animator's
    ``model_buffer``): only the chain's joints are copied out of it.
    """
    if isinstance(model, MatrixBuffer):
        if model.num_joints != skeleton.num_joints:
            raise SkeletonMismatchError(
                f"model has {model.num_joints} joints but the skeleton has {skeleton.num_joints}"
            )
        gathered = model.gather(joints)
    else:
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


# --- helpers over validated inputs (the formulas themselves are engine.math.kernels) ------------


def choose(mask: BoolArray, a: FloatArray, b: FloatArray) -> FloatArray:
    """``a`` where ``mask`` (one flag per vector), else ``b``."""
    return np.where(mask[..., None], a, b)


def in_frame(frame: FloatArray, q: FloatArray) -> FloatArray:
    """``conj(frame) * q * frame``: a model-space rotation ``q`` expressed in the frame's axes."""
    return mul(conj(frame), mul(q, frame))


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
    return from_matrix(basis / lengths[..., None, :])


def weighted(corrections: FloatArray, weight: FloatArray) -> FloatArray:
    """Corrections scaled towards identity: ``slerp(identity, c, weight)`` along the shortest arc.

    ``weight`` is ``(...)`` and applies to every joint of ``corrections`` ``(..., N, 4)``;
    weight 1 returns the corrections unchanged, weight 0 the identity.
    """
    w = np.asarray(weight)[..., None]
    if np.all(w == 1.0):
        return corrections
    return np.where((w == 1.0)[..., None], corrections, power(corrections, w))
