"""Compose local joint transforms parent-to-child into model space.

``model[j] = model[parents[j]] @ local[j]``, roots keep their local matrix (``docs/conventions.md``).
The work is a handful of numpy calls per depth level of the skeleton (:attr:`Skeleton.plan
<engine.anim.skeleton.Skeleton.plan>`), over every joint of that level and every character at
once, in the batch-innermost layout of :mod:`engine.anim.layout`: each matrix entry of each
joint is one contiguous run over the characters, so a level costs a few multiply-adds over long
runs instead of ``B·J`` tiny 4×4 products (``bench/bench_pose.py`` measures both).

Inputs may be ordinary arrays (any memory layout) or the layout's buffers; ``out`` decides the
result: a :class:`~engine.anim.layout.MatrixBuffer` is filled in place (the fast path for a
caller that runs this every frame), an array ``(..., J, 4, 4)`` is filled, and without ``out``
the result is a new C-ordered array.

``from_joint`` recomputes one subtree only (ozz-animation's ``from``): after an IK correction of
joint ``j``, only ``j`` and its descendants move, and ``out`` already holds everyone else.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from engine.anim.layout import (
    MatrixBuffer,
    PoseBuffer,
    Workspace,
    components,
    deliver_matrices,
    matrices_destination,
    workspace_or_fresh,
)
from engine.anim.pose import Pose
from engine.anim.skeleton import Level, Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import kernels
from engine.math._checks import FloatArray, IntArray, as_array

_AFFINE_ROW = np.array([0.0, 0.0, 0.0, 1.0])


def _compose(m: FloatArray, plan: tuple[Level, ...], affine: bool, workspace: Workspace) -> None:
    """Turn local matrices into model matrices in place; ``m`` is ``(4, 4, J, B)`` (entry-major).

    ``plan`` lists the levels to compose, parents first (:attr:`Skeleton.plan` or a subtree's);
    the parents' rows of ``m`` must already be model matrices. With ``affine`` the last rows
    are ``(0, 0, 0, 1)``: only rows 0..2 are composed and the parent's translation column is
    added, 36 products per joint instead of 64.
    """
    for level in plan:  # loop over depth levels; one level's scratch is free for the next
        with workspace.scope():
            _compose_level(m, level, affine, workspace)


def _compose_level(m: FloatArray, level: Level, affine: bool, workspace: Workspace) -> None:
    rows = 3 if affine else 4
    terms = 3 if affine else 4
    characters = m.shape[-1]
    count = _size(level.joints)
    if isinstance(level.parents, slice):
        parent = m[:rows, :, level.parents]  # a view (one shared parent broadcasts over the level)
    else:
        parent = workspace.empty((rows, 4, count, characters))
        np.take(m[:rows], level.parents, axis=2, out=parent, mode="clip")
    local = workspace.empty((terms, 4, count, characters))  # read fully before the level is written
    if isinstance(level.joints, slice):
        np.copyto(local, m[:terms, :, level.joints])
        child = m[:rows, :, level.joints]
    else:
        np.take(m[:terms], level.joints, axis=2, out=local, mode="clip")
        child = workspace.empty((rows, 4, count, characters))
    # child[i, k] = Σ_m parent[i, m] · local[m, k], one pass without temporaries
    np.einsum("imnc,mknc->iknc", parent[:, :terms], local, out=child)
    if affine:
        child[:, 3] += parent[:, 3]
    if not isinstance(level.joints, slice):
        m[:rows, :, level.joints] = child


def _size(indices: slice | IntArray) -> int:
    return indices.stop - indices.start if isinstance(indices, slice) else int(indices.size)


def _check_from_joint(skeleton: Skeleton, from_joint: Any, out: object) -> int | None:
    if from_joint is None:
        return None
    if isinstance(from_joint, bool) or not isinstance(from_joint, int | np.integer):
        raise InvalidInputError(f"from_joint must be a joint index or None, got {type(from_joint).__name__}")
    if not 0 <= from_joint < skeleton.num_joints:
        raise SkeletonMismatchError(
            f"from_joint = {from_joint} is out of range for a skeleton of {skeleton.num_joints} joints"
        )
    if out is None:
        raise InvalidInputError("from_joint needs out= holding the model matrices of the joints outside its subtree")
    return int(from_joint)


def _load_parent(m: FloatArray, view: FloatArray | None, skeleton: Skeleton, joint: int) -> None:
    """Copy the model matrix of ``joint``'s parent from an array ``out`` into the work entries ``m``."""
    parent = int(skeleton.parents[joint])
    if view is not None and parent >= 0:
        m[:, :, parent] = view[:, :, parent]


@overload
def local_to_model(
    skeleton: Skeleton,
    local: Any,
    *,
    out: MatrixBuffer,
    from_joint: int | None = None,
    workspace: Workspace | None = None,
) -> MatrixBuffer: ...


@overload
def local_to_model(
    skeleton: Skeleton,
    local: Any,
    *,
    out: FloatArray | None = None,
    from_joint: int | None = None,
    workspace: Workspace | None = None,
) -> FloatArray: ...


def local_to_model(
    skeleton: Skeleton,
    local: Any,
    *,
    out: FloatArray | MatrixBuffer | None = None,
    from_joint: int | None = None,
    workspace: Workspace | None = None,
) -> FloatArray | MatrixBuffer:
    """Model-space matrices ``(..., J, 4, 4)`` from local matrices ``(..., J, 4, 4)``.

    ``model[j] = model[parents[j]] @ local[j]``; roots keep their local matrix. A few numpy
    operations per depth level, over every character at once (module docstring).

    Parameters
    ----------
    skeleton
        The joint hierarchy.
    local
        Local matrices ``(..., J, 4, 4)`` (any memory layout) or a
        :class:`~engine.anim.layout.MatrixBuffer` of them.
    out
        Filled and returned: a :class:`~engine.anim.layout.MatrixBuffer` (in place, fastest) or a
        writable array ``(..., J, 4, 4)``. ``None``: a new C-ordered array.
    from_joint
        Recompute only this joint and its descendants; ``out`` must hold the model matrices of
        every other joint (at least of ``from_joint``'s ancestors).
    workspace
        Scratch memory to reuse (:class:`~engine.anim.layout.Workspace`); ``None`` allocates.

    Raises
    ------
    SkeletonMismatchError
        If ``local`` does not have ``J = skeleton.num_joints`` joints, or ``from_joint`` is out of range.
    InvalidInputError
        If ``local`` is not ``(..., J, 4, 4)``, holds NaN/inf, ``out`` has the wrong shape, or
        ``from_joint`` comes without ``out``.
    """
    joints = skeleton.num_joints
    if isinstance(local, MatrixBuffer):
        if local.num_joints != joints:
            raise SkeletonMismatchError(f"local has {local.num_joints} joints but the skeleton has {joints}")
        batch, entries = local.batch, local.entries
    else:
        local = as_array(local, "local", (4, 4))
        if local.ndim < 3 or local.shape[-3] != joints:
            raise SkeletonMismatchError(
                f"local must have shape (..., {joints}, 4, 4) for this skeleton, got {local.shape}"
            )
        batch, entries = local.shape[:-3], components(local, joints, (4, 4))
    start = _check_from_joint(skeleton, from_joint, out)
    ws = workspace_or_fresh(workspace)
    with ws.scope():
        m, view = matrices_destination(out, batch, joints, ws)
        written: slice | IntArray
        if start is None:
            written, plan = slice(None), skeleton.plan
        else:
            written, plan = skeleton.subtree_plan(start)
            _load_parent(m, view, skeleton, start)
        if m is not entries:
            m[:, :, written] = entries[:, :, written]
        last_rows = m[3, :, written]
        affine = bool(np.all(last_rows[:3] == 0.0) and np.all(last_rows[3] == 1.0))
        _compose(m, plan, affine, ws)
        return deliver_matrices(out, m, view, batch, written)


@overload
def model_from_pose(
    skeleton: Skeleton,
    pose: Pose | PoseBuffer,
    *,
    out: MatrixBuffer,
    from_joint: int | None = None,
    workspace: Workspace | None = None,
) -> MatrixBuffer: ...


@overload
def model_from_pose(
    skeleton: Skeleton,
    pose: Pose | PoseBuffer,
    *,
    out: FloatArray | None = None,
    from_joint: int | None = None,
    workspace: Workspace | None = None,
) -> FloatArray: ...


def model_from_pose(
    skeleton: Skeleton,
    pose: Pose | PoseBuffer,
    *,
    out: FloatArray | MatrixBuffer | None = None,
    from_joint: int | None = None,
    workspace: Workspace | None = None,
) -> FloatArray | MatrixBuffer:
    """Model-space matrices ``(..., J, 4, 4)`` straight from a local pose ``(..., J, ...)``.

    Equal (to rounding) to ``local_to_model(skeleton, pose.matrices())``, without building the
    local 4×4 matrices first: ``T·R·S`` is written entry by entry from the quaternion and scale
    components, then composed level by level. Pose arrays were validated when the
    :class:`~engine.anim.pose.Pose` was built and are not scanned again.

    Parameters
    ----------
    skeleton
        The joint hierarchy.
    pose
        A local :class:`~engine.anim.pose.Pose` ``(..., J)`` (any memory layout) or a
        single-layer :class:`~engine.anim.layout.PoseBuffer`.
    out, from_joint, workspace
        As for :func:`local_to_model`: the destination (a
        :class:`~engine.anim.layout.MatrixBuffer` in place, an array, or ``None`` for a new
        C-ordered array), the subtree to recompute, and scratch memory.

    Raises
    ------
    SkeletonMismatchError
        If the pose does not have ``skeleton.num_joints`` joints, or ``from_joint`` is out of range.
    InvalidInputError
        If ``pose`` is not a pose, ``out`` has the wrong shape, or ``from_joint`` comes without ``out``.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Skeleton
    >>> skeleton = Skeleton(["hips", "knee"], [-1, 0], rest_translations=[[0, 1, 0], [0, -0.5, 0]])
    >>> model = model_from_pose(skeleton, skeleton.rest_pose)
    >>> model[1, :3, 3]                                 # the knee, half a metre below the hips
    array([0. , 0.5, 0. ])
    >>> bent = skeleton.rest_pose.copy()
    >>> bent.translations[0] = [0.0, 0.9, 0.0]          # lower the hips: only their subtree moves
    >>> _ = model_from_pose(skeleton, bent, out=model, from_joint=0)
    >>> model[1, :3, 3]
    array([0. , 0.4, 0. ])
    """
    joints = skeleton.num_joints
    if isinstance(pose, PoseBuffer):
        if pose.num_layers is not None:
            raise InvalidInputError(f"pose must be a single-layer PoseBuffer, got {pose!r}")
        batch = pose.batch
        t, q, s = pose.arrays()
    elif isinstance(pose, Pose):
        batch = pose.shape[:-1]
    else:
        raise InvalidInputError(f"pose must be a Pose or PoseBuffer, got {type(pose).__name__}")
    if pose.num_joints != joints:
        raise SkeletonMismatchError(
            f"pose has {pose.num_joints} joints but the skeleton has {joints} (pose shape {pose.shape})"
        )
    start = _check_from_joint(skeleton, from_joint, out)
    ws = workspace_or_fresh(workspace)
    with ws.scope():
        if isinstance(pose, Pose):  # one transposing copy, then every pass runs over contiguous memory
            t, q, s = PoseBuffer.scratch(ws, batch, joints).assign(pose).arrays()
        m, view = matrices_destination(out, batch, joints, ws)
        written: slice | IntArray
        if start is None:
            written, plan = slice(None), skeleton.plan
            _trs_into(m, t, q, s, ws)
        else:
            written, plan = skeleton.subtree_plan(start)
            _load_parent(m, view, skeleton, start)
            if isinstance(written, slice):
                _trs_into(m[:, :, written], t[:, written], q[:, written], s[:, written], ws)
            else:
                part = ws.empty((4, 4, written.size, m.shape[-1]))
                _trs_into(part, t[:, written], q[:, written], s[:, written], ws)
                m[:, :, written] = part
        _compose(m, plan, True, ws)
        return deliver_matrices(out, m, view, batch, written)


def _trs_into(m: FloatArray, t: FloatArray, q: FloatArray, s: FloatArray, workspace: Workspace) -> None:
    """Write ``T·R·S`` into ``m`` ``(4, 4, J, B)`` from ``t`` ``(3, J, B)``, ``q`` ``(4, J, B)``, ``s`` ``(3, J, B)``.

    ``R·S`` is :func:`engine.math.kernels.rotation_matrix_into` with the column scales, computed
    in place in the upper-left block over long contiguous runs.
    """
    kernels.rotation_matrix_into(m[:3, :3], q, scale=s, temp=workspace.empty((2, *q.shape[1:])))
    m[:3, 3] = t
    m[3, :3] = 0.0
    m[3, 3] = 1.0
