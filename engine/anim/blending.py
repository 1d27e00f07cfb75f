"""Blend local poses: weighted layers with per-joint masks, and two-pose interpolation.

Every function takes :class:`~engine.anim.pose.Pose` objects whose leading axes are batch axes
(usually ``(C,)`` characters) and returns a new pose; nothing is stored between calls.

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

import math
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from engine.anim.layout import POSE_WIDTHS, PoseBuffer, Workspace, components, workspace_or_fresh, writable_components
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array
from engine.math.quat import quat_nlerp, quat_slerp

#: Default rest threshold of :func:`blend` and of the :class:`~engine.animator.Animator`: when
#: the total weight ``W`` of a joint is below it, the rest pose joins the blend with weight
#: ``threshold - W`` (ozz-animation's rule; 1 as in three.js's mixer, so a lone layer at weight
#: 0.3 shows 30 % of its pose over the rest pose). The pose therefore moves continuously to the
#: rest pose as every layer fades out, and a joint with no weight at all takes the rest pose.
REST_THRESHOLD = 1.0

PoseLayers = PoseBuffer | Pose | Sequence[Pose]


def _stack_layers(poses: PoseLayers) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Layer arrays ``(N, ..., J, k)`` from a stacked :class:`Pose` (or buffer) or a sequence of poses."""
    if isinstance(poses, PoseBuffer):
        poses = poses.to_pose()
    if isinstance(poses, Pose):
        if poses.rotations.ndim < 3:
            raise InvalidInputError(
                "a stacked pose needs a leading layer axis, shape (N, ..., J, 4), "
                f"got rotations {poses.rotations.shape}"
            )
        return poses.translations, poses.rotations, poses.scales
    layers = list(poses)
    if not layers:
        raise InvalidInputError("poses must hold at least one pose, got an empty sequence")
    for k, pose in enumerate(layers):
        if not isinstance(pose, Pose):
            raise InvalidInputError(f"poses[{k}] must be a Pose, got {type(pose).__name__}")
        if pose.num_joints != layers[0].num_joints:
            raise SkeletonMismatchError(
                f"poses[{k}] has {pose.num_joints} joints but poses[0] has {layers[0].num_joints}: "
                "poses from different skeletons cannot be blended"
            )
        if pose.shape != layers[0].shape:
            raise InvalidInputError(
                f"poses[{k}] has batch shape {pose.shape[:-1]} but poses[0] has {layers[0].shape[:-1]}"
            )
    return (
        np.stack([p.translations for p in layers]),
        np.stack([p.rotations for p in layers]),
        np.stack([p.scales for p in layers]),
    )


def _layer_components(
    poses: PoseLayers, workspace: Workspace
) -> tuple[tuple[int, ...], int, tuple[FloatArray, FloatArray, FloatArray]]:
    """Batch shape, joint count and the layers' components ``(N, k, J, B)`` for t, r, s.

    A stacked :class:`~engine.anim.layout.PoseBuffer` is used as it is; a stacked pose gives
    views; a sequence is copied into workspace memory in that layout.
    """
    if isinstance(poses, PoseBuffer):
        if poses.num_layers is None:
            raise InvalidInputError(f"a PoseBuffer of layers needs a leading layer axis (layers=N), got {poses!r}")
        return poses.batch, poses.num_joints, poses.arrays()
    if isinstance(poses, Pose):
        t, r, s = _stack_layers(poses)
        batch, joints = r.shape[1:-2], r.shape[-2]
        views = [a.reshape(a.shape[0], -1, joints, a.shape[-1]).transpose(0, 3, 2, 1) for a in (t, r, s)]
        return batch, joints, (views[0], views[1], views[2])
    _stack_layers(poses)  # validates the sequence
    layers = list(poses)
    batch, joints = layers[0].shape[:-1], layers[0].num_joints
    stacked = []
    for index, width in enumerate(POSE_WIDTHS):
        parts = workspace.empty((len(layers), width, joints, math.prod(batch)))
        for n, pose in enumerate(layers):  # one copy per layer
            parts[n] = components(pose.arrays()[index], joints, (width,))
        stacked.append(parts)
    return batch, joints, (stacked[0], stacked[1], stacked[2])


def _rest_components(values: FloatArray, batch: tuple[int, ...], joints: int) -> FloatArray:
    """Rest values broadcast to the batch, as components ``(k, J, B)`` (or ``(k, J, 1)``)."""
    if values.ndim == 2:
        return values.T[:, :, None]
    full = np.broadcast_to(values, (*batch, joints, values.shape[-1]))
    return full.reshape(-1, joints, values.shape[-1]).transpose(2, 1, 0)


def _rest_arrays(rest: Pose, num_joints: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    if not isinstance(rest, Pose):
        raise InvalidInputError(f"rest must be a Pose (e.g. skeleton.rest_pose), got {type(rest).__name__}")
    if rest.num_joints != num_joints:
        raise SkeletonMismatchError(
            f"rest has {rest.num_joints} joints but the poses have {num_joints}: they come from different skeletons"
        )
    return rest.arrays()


def _layer_weights(weights: Any, num_layers: int, batch: tuple[int, ...]) -> FloatArray:
    """Validated layer weights broadcast to ``(N, *batch)``."""
    w = as_array(weights, "weights")
    if w.ndim == 0 or w.shape[0] != num_layers:
        raise InvalidInputError(f"weights must have one entry per layer, shape ({num_layers}, ...), got {w.shape}")
    if np.any(w < 0.0):
        index = tuple(int(i) for i in np.argwhere(w < 0.0)[0])
        raise InvalidInputError(f"weights must be non-negative, got {w[index]} at index {index}")
    tail = w.shape[1:]
    if tail != batch[len(batch) - len(tail) :] or len(tail) > len(batch):
        raise InvalidInputError(
            f"weights must have shape ({num_layers},) or ({num_layers}, *batch) with batch {batch}, got {w.shape}"
        )
    return w.reshape((num_layers,) + (1,) * (len(batch) - len(tail)) + tail)


def _masks(mask: Any, num_layers: int, num_joints: int) -> FloatArray | None:
    """Validated per-layer joint masks ``(N, J)``, or ``None`` for "all ones"."""
    if mask is None:
        return None
    if isinstance(mask, (list, tuple)) and any(m is None for m in mask):
        if len(mask) != num_layers:
            raise InvalidInputError(f"mask must hold one mask (or None) per layer: {num_layers}, got {len(mask)}")
        mask = [np.ones(num_joints) if m is None else m for m in mask]
    masks = as_array(mask, "mask")
    if masks.ndim != 2 or masks.shape[0] != num_layers:
        raise InvalidInputError(f"mask must have shape ({num_layers}, J), got {masks.shape}")
    if masks.shape[1] != num_joints:
        raise SkeletonMismatchError(
            f"mask has {masks.shape[1]} joints per layer but the poses have {num_joints}: "
            "the mask was built for a different skeleton"
        )
    if np.any(masks < 0.0):
        index = tuple(int(i) for i in np.argwhere(masks < 0.0)[0])
        raise InvalidInputError(f"mask must be non-negative, got {masks[index]} at index {index}")
    return masks


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
