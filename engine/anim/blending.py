"""Blend local poses: weighted layers with per-joint masks, and two-pose interpolation.

Every function takes :class:`~engine.anim.pose.Pose` objects whose leading axes are batch axes
(usually ``(C,)`` characters) and returns a new pose; nothing is stored between calls. The
layers, weights and masks are checked in :mod:`engine.anim.blend_inputs`; the two-pose
interpolation and the slerp chain live in :mod:`engine.anim.interpolation` and are re-exported
here.

Which blend to use
------------------
:func:`blend`
    The N-layer blend the animator runs every frame: rotations are aligned to one reference
    hemisphere, summed with their weights and normalised (an "nlerp" over N layers);
    translations and scales are weighted averages. Order-independent and cheap. Exact at the
    end points (weights ``(0, 1)`` give the second pose), and within a fraction of a degree of
    the slerp path for layers less than ~60° apart, which is what clips of one character are.
:func:`interpolate_poses` with ``method="slerp"``
    Two poses at constant angular speed: right when ``t`` is animated over time between poses
    that are far apart (a pose-to-pose tween, a transition into a very different pose), where
    nlerp would speed up in the middle.
:func:`interpolate_poses` with ``method="nlerp"``
    Two poses, cheap, the same result as :func:`blend` with weights ``(1 - t, t)``; fine for
    close poses and for per-frame mixing where the speed along the arc does not matter.
:func:`slerp_chain`
    N poses folded by successive slerps ``slerp(slerp(a, b, t1), c, t2)`` with
    ``t_k = w_k / (w_0 + … + w_k)``: exact for two poses, but **order-dependent** for three or
    more (rotations do not commute). Use it when a fixed priority order between layers is wanted
    and the layers are far apart; otherwise prefer :func:`blend`.

Conventions (quaternion layout, products) are in ``docs/conventions.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from engine.anim.blend_inputs import (
    PoseLayers,
    _layer_components,
    _layer_weights,
    _masks,
    _rest_arrays,
    _rest_components,
)
from engine.anim.interpolation import interpolate_poses, slerp_chain
from engine.anim.layout import POSE_WIDTHS, PoseBuffer, Workspace, workspace_or_fresh, writable_components
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray

__all__ = [
    "REST_THRESHOLD",
    "PoseLayers",
    "blend",
    "blend_joint_weights",
    "interpolate_poses",
    "slerp_chain",
    "subtree_mask",
]

#: Default rest threshold of :func:`blend` and of the :class:`~engine.animator.Animator`: when
#: the total weight ``W`` of a joint is below it, the rest pose joins the blend with weight
#: ``threshold - W`` (ozz-animation's rule; 1 as in three.js's mixer, so a lone layer at weight
#: 0.3 shows 30 % of its pose over the rest pose). The pose therefore moves continuously to the
#: rest pose as every layer fades out, and a joint with no weight at all takes the rest pose.
REST_THRESHOLD = 1.0


@overload
def blend(
    rest: Pose,
    poses: PoseLayers,
    weights: Any,
    mask: Any = None,
    *,
    threshold: float = REST_THRESHOLD,
    out: PoseBuffer,
    workspace: Workspace | None = None,
) -> PoseBuffer: ...


@overload
def blend(
    rest: Pose,
    poses: PoseLayers,
    weights: Any,
    mask: Any = None,
    *,
    threshold: float = REST_THRESHOLD,
    out: Pose | None = None,
    workspace: Workspace | None = None,
) -> Pose: ...


def blend(
    rest: Pose,
    poses: PoseLayers,
    weights: Any,
    mask: Any = None,
    *,
    threshold: float = REST_THRESHOLD,
    out: Pose | PoseBuffer | None = None,
    workspace: Workspace | None = None,
) -> Pose | PoseBuffer:
    """Weighted blend of ``N`` pose layers, per joint and per character.

    With effective weights ``w[n] = weights[n] · mask[n]`` (per character and joint) and
    their total ``W``, the rest pose joins with ``w_rest = max(0, threshold - W)``; then

    - rotations: every layer (and the rest pose) is sign-aligned to a reference quaternion
      **before** the weighted sum — the first layer whose weight is positive at that joint, or
      the rest rotation when none is — then the sum is normalised. Aligned inputs all have a
      non-negative dot product with the reference, so the sum never cancels out (the seed's bug:
      summing ``q`` and ``≈-q`` from different hemispheres gives a near-zero, garbage quaternion);
    - translations and scales: weighted averages ``Σ w x / (W + w_rest)``.

    Weights are normalised (their scale does not matter as long as ``W >= threshold``).

    Parameters
    ----------
    rest
        The rest :class:`Pose` (``skeleton.rest_pose``), broadcastable to ``(..., J)``.
    poses
        ``N`` layers: a sequence of poses of equal shape ``(..., J)``, one stacked pose
        ``(N, ..., J)``, or a stacked :class:`~engine.anim.layout.PoseBuffer` (made with
        ``layers=N``: what the animator samples into, no copy and no layout change).
    weights
        Layer weights ``(N,)``, or ``(N, *batch)`` for one weight per layer and character;
        non-negative and finite.
    mask
        Optional per-layer joint weights ``(N, J)`` (or a sequence of ``N`` masks ``(J,)`` /
        ``None``), non-negative; see :func:`subtree_mask`. ``None`` weights every joint 1.
    threshold
        Positive total weight below which the rest pose fills in (default
        :data:`REST_THRESHOLD` = 1, the animator's default too).
    out
        Optional destination ``(..., J)``, not one of the layers, filled and returned: a
        :class:`~engine.anim.layout.PoseBuffer` (the fast path) or a pose with writable arrays.
    workspace
        Scratch memory to reuse (:class:`~engine.anim.layout.Workspace`); ``None`` allocates.

    Returns
    -------
    Pose or PoseBuffer
        ``out`` when given, else a new C-ordered pose: the blended local pose ``(..., J)`` with
        unit rotations.

    Raises
    ------
    InvalidInputError
        Weights of the wrong length, negative or NaN; masks of the wrong shape or negative.
    SkeletonMismatchError
        Poses, rest pose or masks with different joint counts.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Skeleton
    >>> skeleton = Skeleton(["root"], [-1])
    >>> quarter = np.array([[0.0, np.sin(np.pi / 4), 0.0, np.cos(np.pi / 4)]])   # 90° about Y
    >>> a = Pose(np.zeros((1, 3)), quarter, np.ones((1, 3)))
    >>> b = Pose(np.ones((1, 3)), -quarter, np.ones((1, 3)))                        # same rotation
    >>> out = blend(skeleton.rest_pose, [a, b], [0.5, 0.5])
    >>> np.round(out.rotations, 4) + 0.0, out.translations
    (array([[0.    , 0.7071, 0.    , 0.7071]]), array([[0.5, 0.5, 0.5]]))
    """
    if not threshold > 0.0:
        raise InvalidInputError(f"threshold must be positive, got {threshold}")
    ws = workspace_or_fresh(workspace)
    with ws.scope():
        batch, num_joints, layers = _layer_components(poses, ws)
        target = (*batch, num_joints)
        if out is not None and (not isinstance(out, Pose | PoseBuffer) or out.shape != target):
            got = out.shape if isinstance(out, Pose | PoseBuffer) else type(out).__name__
            raise InvalidInputError(f"out must be a Pose or PoseBuffer shaped {target}, got {got}")
        rest_t, rest_r, rest_s = (_rest_components(a, batch, num_joints) for a in _rest_arrays(rest, num_joints))
        layer_w = np.broadcast_to(_layer_weights(weights, layers[1].shape[0], batch), (layers[1].shape[0], *batch))
        masks = _masks(mask, layers[1].shape[0], num_joints)
        count = layers[1].shape[-1]
        w = ws.empty((layers[1].shape[0], num_joints, count))
        np.multiply(layer_w.reshape(-1, 1, count), 1.0 if masks is None else masks[:, :, None], out=w)
        if isinstance(out, PoseBuffer):
            _blend_into(out.arrays(), layers, w, (rest_t, rest_r, rest_s), threshold, ws)
            return out
        result = PoseBuffer.scratch(ws, batch, num_joints)
        _blend_into(result.arrays(), layers, w, (rest_t, rest_r, rest_s), threshold, ws)
        if out is None:
            return result.to_pose()
        for name, array, width, values in zip(
            ("translations", "rotations", "scales"), out.arrays(), POSE_WIDTHS, result.arrays(), strict=True
        ):
            np.copyto(writable_components(array, num_joints, (width,), f"out.{name}"), values)
        return out


def blend_joint_weights(
    rest: Pose,
    layers: PoseBuffer,
    joint_weights: FloatArray,
    *,
    threshold: float = REST_THRESHOLD,
    out: PoseBuffer,
    workspace: Workspace | None = None,
) -> PoseBuffer:
    """:func:`blend` of stacked buffer ``layers`` ``(N, B, J)`` with a weight per layer, joint and character.

    ``joint_weights`` ``(N, J, B)`` (batch-innermost, like the buffers) are the effective weights
    ``blend`` otherwise makes from ``weights · mask``: non-negative and finite (not checked: the
    callers build them from checked parts, e.g. :meth:`engine.backend.state.FrameState.joint_weights`).
    Writes ``out`` ``(B, J)`` and returns it.
    """
    if not isinstance(layers, PoseBuffer) or layers.num_layers is None or not isinstance(out, PoseBuffer):
        raise InvalidInputError("layers must be a stacked PoseBuffer and out a PoseBuffer")
    expected = (layers.num_layers, layers.num_joints, layers.count)
    if joint_weights.shape != expected or out.shape != layers.shape[1:]:
        raise InvalidInputError(
            f"joint_weights must have shape {expected} and out {layers.shape[1:]}, "
            f"got {joint_weights.shape} and {out.shape}"
        )
    ws = workspace_or_fresh(workspace)
    with ws.scope():
        rest_t, rest_r, rest_s = (
            _rest_components(a, layers.batch, layers.num_joints) for a in _rest_arrays(rest, layers.num_joints)
        )
        w = ws.empty(expected)
        np.copyto(w, joint_weights)
        _blend_into(out.arrays(), layers.arrays(), w, (rest_t, rest_r, rest_s), threshold, ws)
    return out


def _blend_into(
    out: tuple[FloatArray, FloatArray, FloatArray],
    layers: tuple[FloatArray, FloatArray, FloatArray],
    w: FloatArray,
    rest: tuple[FloatArray, FloatArray, FloatArray],
    threshold: float,
    workspace: Workspace,
) -> None:
    """The blend of :func:`blend` on components: ``out`` ``(k, J, B)`` from ``layers`` ``(N, k, J, B)``.

    ``w`` ``(N, J, B)`` holds the effective weights (workspace memory, overwritten). Everything
    works on components: long contiguous runs over the characters, temporaries in ``workspace``
    (fresh multi-megabyte temporaries page-fault on every call).
    """
    t, r, s = layers
    out_t, out_r, out_s = out
    rest_t, rest_r, rest_s = rest
    num_layers, num_joints, count = r.shape[0], r.shape[2], r.shape[-1]
    total = np.sum(w, axis=0, out=workspace.empty((num_joints, count)))
    rest_w = np.subtract(threshold, total, out=workspace.empty((num_joints, count)))
    np.maximum(rest_w, 0.0, out=rest_w)
    rest_positive = rest_w > 0.0
    use_rest = bool(rest_positive.any())

    # Signs that move every layer (and the rest pose) into the hemisphere of the reference: the
    # first layer with weight at that joint and character, else the rest rotation. The reference
    # is not gathered into an array; the dot products with each candidate layer are taken instead.
    positive = w > 0.0
    signed = w  # a layer is its own reference, and zero weights need no sign: copied at a first flip
    dot = workspace.empty(total.shape)
    rest_sign = workspace.empty(total.shape)
    np.copyto(rest_sign, rest_w)  # w_rest >= 0: the sign where the rest pose is the reference
    # dot(rest, q) is q's w component when the rest rotations are the identity (as in BVH files).
    rest_identity = bool(np.all(rest_r[:3] == 0.0) and np.all(rest_r[3] == 1.0))
    rest_r_full = np.broadcast_to(rest_r, r.shape[1:])
    free = np.ones(total.shape, dtype=bool)  # no reference found yet
    for m in range(num_layers):  # loop over layers, not joints
        here = np.logical_and(free, positive[m])  # layer m is the reference here
        if here.any():
            for n in range(m + 1, num_layers):  # the later layers with weight there, aligned to layer m
                both = np.logical_and(here, positive[n])
                if both.any():  # disjoint masks (upper / lower body) need no signs
                    if signed is w:
                        signed = workspace.empty(w.shape)
                        np.copyto(signed, w)
                    np.einsum("kjb,kjb->jb", r[n], r[m], out=dot)
                    np.copysign(w[n], dot, out=signed[n], where=both)
            if use_rest and np.logical_and(here, rest_positive).any():
                rest_dot = r[m, 3] if rest_identity else np.einsum("kjb,kjb->jb", rest_r_full, r[m], out=dot)
                np.copysign(rest_w, rest_dot, out=rest_sign, where=here)
        np.logical_and(free, ~positive[m], out=free)
        if not free.any():
            break
    np.einsum("njb,nkjb->kjb", signed, r, out=out_r)
    # Translations and scales: weights divided by W + w_rest = max(W, threshold) before the sums.
    np.maximum(total, threshold, out=total)
    np.reciprocal(total, out=total)
    np.multiply(w, total, out=w)
    np.multiply(rest_w, total, out=rest_w)
    np.einsum("njb,nkjb->kjb", w, t, out=out_t)
    np.einsum("njb,nkjb->kjb", w, s, out=out_s)
    if use_rest:  # one component at a time: the temporary stays in cache, zeros and ones are cheap
        term = workspace.empty(total.shape)
        for values, rest_values, rest_weight in (
            (out_r, rest_r, rest_sign),
            (out_t, rest_t, rest_w),
            (out_s, rest_s, rest_w),
        ):
            for component, rest_component in zip(values, rest_values, strict=True):  # 3 or 4 components
                if np.all(rest_component == 1.0):
                    np.add(component, rest_weight, out=component)
                elif np.any(rest_component):
                    np.add(component, np.multiply(rest_weight, rest_component, out=term), out=component)
    norm = np.einsum("kjb,kjb->jb", out_r, out_r, out=workspace.empty(total.shape))
    out_r /= np.sqrt(norm, out=norm)


def subtree_mask(
    skeleton: Skeleton,
    joints: str | int | Sequence[str | int],
    weight: float = 1.0,
    *,
    exclude: Sequence[str | int] = (),
) -> FloatArray:
    """Per-joint weights ``(J,)``: ``weight`` on ``joints`` and their descendants, 0 elsewhere.

    Builds the masks of layered animation (upper body / lower body). Subtrees named in
    ``exclude`` are cut out again, so the lower body of a humanoid is
    ``subtree_mask(skeleton, "hips", exclude=["spine"])`` and its upper body
    ``subtree_mask(skeleton, "spine")``.

    Raises
    ------
    SkeletonMismatchError
        A joint name or index that the skeleton does not have.
    InvalidInputError
        A negative or non-finite ``weight``.

    Examples
    --------
    >>> skeleton = Skeleton(["hips", "spine", "head", "leg"], [-1, 0, 1, 0])
    >>> subtree_mask(skeleton, "spine")
    array([0., 1., 1., 0.])
    >>> subtree_mask(skeleton, "hips", 0.5, exclude=["spine"])
    array([0.5, 0. , 0. , 0.5])
    """
    if not (np.isfinite(weight) and weight >= 0.0):
        raise InvalidInputError(f"weight must be finite and non-negative, got {weight}")
    roots = [joints] if isinstance(joints, (str, int, np.integer)) else list(joints)
    inside = np.zeros(skeleton.num_joints, dtype=bool)
    for joint in roots:  # a handful of named subtrees, at build time
        inside[skeleton.subtree(joint)] = True
    for joint in exclude:
        inside[skeleton.subtree(joint)] = False
    return np.where(inside, float(weight), 0.0)
