"""Two-pose interpolation (slerp or nlerp) and the order-dependent slerp chain over N poses.

When to use these rather than :func:`~engine.anim.blending.blend` is written in
:mod:`engine.anim.blending`'s docstring ("Which blend to use").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.anim.blend_inputs import _layer_weights, _stack_layers
from engine.anim.pose import Pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array
from engine.math.quat import quat_nlerp, quat_slerp


def _pair_arrays(a: Pose, b: Pose, t: Any) -> FloatArray:
    if a.num_joints != b.num_joints:
        raise SkeletonMismatchError(
            f"a has {a.num_joints} joints but b has {b.num_joints}: poses from different skeletons"
        )
    return as_array(t, "t")[..., None]  # batch shape (...) → (..., 1) over joints


def interpolate_poses(a: Pose, b: Pose, t: Any, *, method: str = "slerp") -> Pose:
    """Pose between ``a`` (``t = 0``) and ``b`` (``t = 1``): two-pose blend.

    Rotations follow the shortest arc (``quat_slerp`` or ``quat_nlerp`` per joint),
    translations and scales are lerped. ``t`` is a scalar or one value per character, shaped
    like the batch axes; it is not clamped (values outside ``[0, 1]`` extrapolate). See the
    module docstring for when slerp or nlerp is right.

    Parameters
    ----------
    a, b
        Poses ``(..., J)`` of the same skeleton (broadcastable batch axes).
    t
        Blend parameter, scalar or shaped like the batch axes ``(...)``.
    method
        ``"slerp"`` (constant angular speed) or ``"nlerp"`` (cheaper, faster in the middle).
    """
    if method not in {"slerp", "nlerp"}:
        raise InvalidInputError(f"method must be 'slerp' or 'nlerp', got {method!r}")
    tj = _pair_arrays(a, b, t)
    rotate = quat_slerp if method == "slerp" else quat_nlerp
    tk = tj[..., None]
    return Pose(
        a.translations + tk * (b.translations - a.translations),
        rotate(a.rotations, b.rotations, tj),
        a.scales + tk * (b.scales - a.scales),
    )


def slerp_chain(poses: Sequence[Pose], weights: Any) -> Pose:
    """Fold ``N`` poses by successive slerps with ``t_k = w_k / (w_0 + … + w_k)``.

    Translations and scales come out as the exact weighted averages (lerp chains are
    associative); rotations are exact for two poses and order-dependent for more. Layers whose
    running weight is still zero are skipped.

    Parameters
    ----------
    poses
        ``N`` poses ``(..., J)`` of one skeleton.
    weights
        ``(N,)`` or ``(N, *batch)``, non-negative, with a positive total for every character.

    Raises
    ------
    InvalidInputError
        Weights of the wrong length, negative, NaN, or summing to zero.
    SkeletonMismatchError
        Poses with different joint counts.
    """
    t, r, s = _stack_layers(poses)
    num_layers, batch = r.shape[0], r.shape[1:-2]
    w = _layer_weights(weights, num_layers, batch)
    cumulative = np.cumsum(np.broadcast_to(w, (num_layers, *batch)), axis=0)
    if np.any(cumulative[-1] <= 0.0):
        raise InvalidInputError("weights must have a positive total for every character, got a zero total")
    out_t, out_r, out_s = t[0], r[0], s[0]
    for n in range(1, num_layers):  # one slerp per layer
        step = np.divide(w[n], cumulative[n], out=np.zeros_like(cumulative[n]), where=cumulative[n] > 0.0)
        step = step[..., None]
        out_t = out_t + step[..., None] * (t[n] - out_t)
        out_r = quat_slerp(out_r, r[n], step)
        out_s = out_s + step[..., None] * (s[n] - out_s)
    return Pose(out_t, out_r, out_s)
