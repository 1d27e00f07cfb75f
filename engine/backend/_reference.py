"""The numpy backend: the frame jobs written with the batched jobs of :mod:`engine.anim`.

This is the reference the compiled kernels are tested against, and the fallback where numba has
no wheel. Every call into :mod:`engine.anim` the backend makes is in this module (one place to
port when those signatures change).
"""

from __future__ import annotations

import numpy as np

from engine.anim.blending import blend
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.sampling import sample
from engine.anim.skinning import skinning_palette
from engine.backend.bank import ClipBank
from engine.math._checks import FloatArray, IntArray, trusted


def local_pose(
    bank: ClipBank,
    clip_ids: IntArray,
    masks: FloatArray,
    cursors: IntArray,
    times: FloatArray,
    weights: FloatArray,
    characters: IntArray,
    threshold: float,
) -> Pose:
    """Sample every layer of ``characters`` and blend them: a pose ``(K, J)``; updates ``cursors``.

    ``cursors[l, c]`` becomes the merged-timeline segment of layer ``l`` of character ``c`` where
    that layer has weight (as the compiled kernels do): ``max(searchsorted(timeline, t, "right") - 1, 0)``.
    """
    layers, joints = clip_ids.shape[0], bank.num_joints
    count = characters.size
    stacked = [np.empty((layers, count, joints, k)) for k in (3, 4, 3)]
    for layer in range(layers):
        ids = clip_ids[layer, characters]
        layer_times = times[layer, characters]
        for k in np.unique(ids):  # one sample() per clip played on this layer
            chosen = np.flatnonzero(ids == k)
            clip = bank.clips[int(k)]
            pose = sample(clip, bank.skeleton, layer_times[chosen])
            for array, values in zip(stacked, (pose.translations, pose.rotations, pose.scales), strict=True):
                array[layer, chosen] = values
            segment = np.maximum(np.searchsorted(clip.timeline, layer_times[chosen], side="right") - 1, 0)
            weighted = weights[layer, characters[chosen]] > 0.0
            cursors[layer, characters[chosen[weighted]]] = segment[weighted]
    with trusted():  # finite by construction (inputs checked by the caller)
        poses = [Pose(stacked[0][n], stacked[1][n], stacked[2][n]) for n in range(layers)]
        return blend(poses, weights[:, characters], masks, rest=bank.skeleton, threshold=threshold)


def model_and_palette(bank: ClipBank, local: Pose) -> tuple[FloatArray, FloatArray]:
    """Model matrices and skinning palette ``(K, J, 4, 4)`` (row-major) of a local pose ``(K, J)``."""
    with trusted():
        model = model_from_pose(bank.skeleton, local)
        return model, skinning_palette(bank.skeleton, model)
