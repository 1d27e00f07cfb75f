"""The numpy backend: the frame jobs written with the batched jobs of :mod:`engine.anim`.

This is the reference the compiled kernels are tested against, and the fallback where numba has
no wheel. Every call into :mod:`engine.anim` the backend makes is in this module (one place to
port when those signatures change). Buffers are batch-innermost (the layout those jobs read
fastest) and kept in the crowd's workspace between frames, as the Animator keeps its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.blending import blend
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.sampling import sample
from engine.anim.skinning import skinning_palette
from engine.backend.bank import ClipBank
from engine.math._checks import FloatArray, IntArray, trusted


def _buffers(workspace: dict[str, Any], kind: str, count: int, make: Any) -> Any:
    """The workspace's ``kind`` buffers for ``count`` characters (made anew when the count changes)."""
    found = workspace.get(kind)
    if found is None or found[0] != count:
        found = workspace[kind] = (count, make())
    return found[1]


def _batch_last(leading: tuple[int, ...], tail: int, joints: int, count: int) -> FloatArray:
    """An array ``(*leading, count, joints, tail)`` whose memory is ``(*leading, tail, joints, count)``."""
    storage = np.empty((*leading, tail, joints, count))
    n = len(leading)
    return storage.transpose(*range(n), n + 2, n + 1, n)


def local_pose(
    bank: ClipBank,
    clip_ids: IntArray,
    masks: FloatArray,
    cursors: IntArray,
    times: FloatArray,
    weights: FloatArray,
    characters: IntArray,
    threshold: float,
    workspace: dict[str, Any],
) -> Pose:
    """Sample every layer of ``characters`` and blend them: a pose ``(K, J)``; updates ``cursors``.

    ``cursors[l, c]`` becomes the merged-timeline segment of layer ``l`` of character ``c`` where
    that layer has weight (as the compiled kernels do): ``max(searchsorted(timeline, t, "right") - 1, 0)``.
    The pose is workspace memory: valid until the next call.
    """
    layers, joints, count = clip_ids.shape[0], bank.num_joints, characters.size
    with trusted():  # finite by construction (inputs checked by the caller); fresh buffers are garbage
        stacked = _buffers(
            workspace, "layers", count, lambda: Pose(*(_batch_last((layers,), k, joints, count) for k in (3, 4, 3)))
        )
        local = _buffers(
            workspace, "local", count, lambda: Pose(*(_batch_last((), k, joints, count) for k in (3, 4, 3)))
        )
        for layer in range(layers):
            ids = clip_ids[layer, characters]
            layer_times = times[layer, characters]
            slot = stacked[layer]
            for k in np.unique(ids):  # one sample() per clip played on this layer
                clip = bank.clips[int(k)]
                chosen = np.flatnonzero(ids == k)
                if chosen.size == count:
                    sample(clip, bank.skeleton.rest_pose, layer_times, out=slot)
                else:
                    part = sample(clip, bank.skeleton.rest_pose, layer_times[chosen])
                    slot.translations[chosen], slot.rotations[chosen], slot.scales[chosen] = (
                        part.translations,
                        part.rotations,
                        part.scales,
                    )
                segment = np.maximum(np.searchsorted(clip.timeline, layer_times[chosen], side="right") - 1, 0)
                weighted = weights[layer, characters[chosen]] > 0.0
                cursors[layer, characters[chosen[weighted]]] = segment[weighted]
        return blend(bank.skeleton.rest_pose, stacked, weights[:, characters], masks, threshold=threshold, out=local)


def model_and_palette(bank: ClipBank, local: Pose, workspace: dict[str, Any]) -> tuple[FloatArray, FloatArray]:
    """Model matrices and skinning palette ``(K, J, 4, 4)`` (row-major) of a local pose ``(K, J)``.

    Workspace memory: valid until the next call.
    """
    count, joints = local.shape
    model, palette = _buffers(
        workspace,
        "matrices",
        count,
        lambda: tuple(np.empty((4, 4, joints, count)).transpose(3, 2, 0, 1) for _ in range(2)),
    )
    with trusted():
        model_from_pose(bank.skeleton, local, out=model)
        skinning_palette(bank.skeleton, model, out=palette)
    return model, palette


def buffer_matrices(
    bank: ClipBank, local: PoseBuffer, model: MatrixBuffer, palette: MatrixBuffer, workspace: Workspace
) -> None:
    """Model matrices and skinning palette of a pose buffer, into the given buffers (the Animator's jobs)."""
    model_from_pose(bank.skeleton, local, out=model, workspace=workspace)
    skinning_palette(bank.skeleton, model, out=palette, workspace=workspace)
