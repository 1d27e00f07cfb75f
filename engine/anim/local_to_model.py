"""Compose local joint transforms parent-to-child into model space.

``model[j] = model[parents[j]] @ local[j]``, roots keep their local matrix (``docs/conventions.md``).
The work is a handful of numpy calls per depth level of the skeleton, over every joint of that
level and every character at once.

**Memory layout.** The matrices returned here are shaped ``(..., J, 4, 4)`` like any other, but
their memory is *batch-innermost*: they are a transposed view of a ``(4, 4, J, B)`` buffer, so
each matrix entry of each joint is one contiguous run over the ``B`` characters. Every level
then costs a few multiply-adds over long contiguous runs instead of ``B·J`` tiny 4×4 products
(``bench/bench_pose.py`` measures both). Numpy semantics are unchanged; use
``np.ascontiguousarray`` if a C-ordered copy is needed (:func:`engine.math.gl_pack` already makes
one for the GPU). Every function accepts inputs in any layout and is fastest on this one.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim._layout import as_slice, components, matrices_out, scratch
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array

_AFFINE_ROW = np.array([0.0, 0.0, 0.0, 1.0])


@dataclass(frozen=True)
class _Level:
    """One depth level: its joints and their parents, as slices where the indices allow."""

    joints: slice | IntArray
    parents: slice | IntArray


_PLANS: weakref.WeakKeyDictionary[Skeleton, tuple[_Level, ...]] = weakref.WeakKeyDictionary()


def _plan(skeleton: Skeleton) -> tuple[_Level, ...]:
    """Levels 1.. of ``skeleton`` as slices or index arrays; a level with one parent broadcasts it."""
    plan = _PLANS.get(skeleton)
    if plan is None:
        levels = []
        for joints in skeleton.levels[1:]:
            parents = skeleton.parents[joints]
            first = int(parents[0])
            shared = bool(np.all(parents == first))
            levels.append(_Level(as_slice(joints), slice(first, first + 1) if shared else as_slice(parents)))
        plan = _PLANS[skeleton] = tuple(levels)
    return plan


def _compose(m: FloatArray, plan: tuple[_Level, ...], affine: bool) -> None:
    """Turn local matrices into model matrices in place; ``m`` is ``(4, 4, J, B)`` (entry-major).

    With ``affine`` the last rows are ``(0, 0, 0, 1)``: only rows 0..2 are composed and the
    parent's translation column is added, 36 products per joint instead of 64.
    """
    rows = 3 if affine else 4
    terms = 3 if affine else 4
    characters = m.shape[-1]
    for level in plan:
        count = _size(level.joints)
        if isinstance(level.parents, slice):
            parent = m[:rows, :, level.parents]  # a view (one shared parent broadcasts over the level)
        else:
            parent = np.take(
                m[:rows], level.parents, axis=2, out=scratch("parent", (rows, 4, count, characters)), mode="clip"
            )
        local = scratch("local", (terms, 4, count, characters))  # read fully before the level is written
        if isinstance(level.joints, slice):
            np.copyto(local, m[:terms, :, level.joints])
            child = m[:rows, :, level.joints]
        else:
            np.take(m[:terms], level.joints, axis=2, out=local, mode="clip")
            child = scratch("child", (rows, 4, count, characters))
        # child[i, k] = Σ_m parent[i, m] · local[m, k], one pass without temporaries
        np.einsum("imnc,mknc->iknc", parent[:, :terms], local, out=child)
        if affine:
            child[:, 3] += parent[:, 3]
        if not isinstance(level.joints, slice):
            m[:rows, :, level.joints] = child


def _size(indices: slice | IntArray) -> int:
    return indices.stop - indices.start if isinstance(indices, slice) else int(indices.size)


def local_to_model(skeleton: Skeleton, local: Any, *, out: FloatArray | None = None) -> FloatArray:
    """Model-space matrices ``(..., J, 4, 4)`` from local matrices ``(..., J, 4, 4)``.

    ``model[j] = model[parents[j]] @ local[j]``; roots keep their local matrix. A few numpy
    operations per depth level, over every character at once. The result is stored
    batch-innermost (see the module docstring); ``out``, if given, is filled and returned.

    Raises
    ------
    SkeletonMismatchError
        If ``local`` does not have ``J = skeleton.num_joints`` joints.
    InvalidInputError
        If ``local`` is not ``(..., J, 4, 4)``, holds NaN/inf, or ``out`` has the wrong shape.
    """
    local = as_array(local, "local", (4, 4))
    joints = skeleton.num_joints
    if local.ndim < 3 or local.shape[-3] != joints:
        raise SkeletonMismatchError(f"local must have shape (..., {joints}, 4, 4) for this skeleton, got {local.shape}")
    result, m = matrices_out(out, local.shape[:-3], joints)
    m[...] = components(local, joints, (4, 4))
    affine = bool(np.array_equal(local[..., 3, :], np.broadcast_to(_AFFINE_ROW, local[..., 3, :].shape)))
    _compose(m, _plan(skeleton), affine)
    return result


def model_from_pose(skeleton: Skeleton, pose: Pose, *, out: FloatArray | None = None) -> FloatArray:
    """Model-space matrices ``(..., J, 4, 4)`` straight from a local pose ``(..., J, ...)``.

    Equal (to rounding) to ``local_to_model(skeleton, pose.matrices())``, without building the
    local 4×4 matrices first: ``T·R·S`` is written entry by entry from the quaternion and scale
    components, then composed level by level. The result is stored batch-innermost (module
    docstring); ``out``, if given, is filled and returned. Pose arrays were validated when the
    :class:`~engine.anim.pose.Pose` was built and are not scanned again.

    Raises
    ------
    SkeletonMismatchError
        If the pose does not have ``skeleton.num_joints`` joints.
    InvalidInputError
        If ``pose`` is not a :class:`~engine.anim.pose.Pose` or ``out`` has the wrong shape.
    """
    if not isinstance(pose, Pose):
        raise InvalidInputError(f"pose must be a Pose, got {type(pose).__name__}")
    joints = skeleton.num_joints
    if pose.num_joints != joints:
        raise SkeletonMismatchError(
            f"pose has {pose.num_joints} joints but the skeleton has {joints} (pose shape {pose.shape})"
        )
    result, m = matrices_out(out, pose.shape[:-1], joints)
    _trs_into(
        m,
        components(pose.translations, joints, (3,)),
        components(pose.rotations, joints, (4,)),
        components(pose.scales, joints, (3,)),
    )
    _compose(m, _plan(skeleton), affine=True)
    return result


def _trs_into(m: FloatArray, t: FloatArray, q: FloatArray, s: FloatArray) -> None:
    """Write ``T·R·S`` into ``m`` ``(4, 4, J, B)`` from ``t`` ``(3, J, B)``, ``q`` ``(4, J, B)``, ``s`` ``(3, J, B)``.

    ``R`` is the rotation matrix of the unit quaternion ``(x, y, z, w)``; off the diagonal
    ``2(xy ∓ zw)`` and friends, on it ``1 - 2(yy + zz)`` and friends; column ``k`` is scaled by
    ``s[k]``.
    """
    x, y, z, w = q
    r = m[:3, :3]
    a, b = scratch("trs", (2, *x.shape))
    for (i, k), (p, q1, u, v) in (((0, 1), (x, y, z, w)), ((0, 2), (x, z, y, w)), ((1, 2), (y, z, x, w))):
        # r[i, k] = p·q1 ∓ u·v and r[k, i] = p·q1 ± u·v: xy ∓ zw, xz ± yw, yz ∓ xw (before the factor 2)
        np.multiply(p, q1, out=r[i, k])
        np.multiply(u, v, out=a)
        if (i, k) == (0, 2):
            np.subtract(r[i, k], a, out=r[k, i])
            r[i, k] += a
        else:
            np.add(r[i, k], a, out=r[k, i])
            r[i, k] -= a
    np.multiply(x, x, out=a)
    np.multiply(y, y, out=b)
    np.add(a, b, out=r[2, 2])  # xx + yy
    np.multiply(z, z, out=r[0, 0])
    np.add(a, r[0, 0], out=r[1, 1])  # xx + zz
    r[0, 0] += b  # yy + zz
    twice_s = np.multiply(s, 2.0, out=scratch("trs_scale", s.shape))
    r *= twice_s[None]  # off the diagonal: 2(...)·s_k; on it: 2·d·s_k
    for k in range(3):
        np.subtract(s[k], r[k, k], out=r[k, k])  # (1 - 2d)·s_k = s_k - 2·d·s_k
    m[:3, 3] = t
    m[3, :3] = 0.0
    m[3, 3] = 1.0
