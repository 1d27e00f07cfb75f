"""The checked inputs of the blends: stacked layers, rest pose, layer weights and joint masks.

:func:`~engine.anim.blending.blend` and :func:`~engine.anim.interpolation.slerp_chain` take their
layers as a stacked :class:`~engine.anim.pose.Pose`, a stacked
:class:`~engine.anim.layout.PoseBuffer` or a sequence of poses; these functions check them (and
the weights and masks that go with them) and give the arrays the blends work on, raising a typed
:mod:`engine.errors` error that names the problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.anim.layout import POSE_WIDTHS, PoseBuffer, Workspace, components
from engine.anim.pose import Pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array

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
