"""The numpy backend: the frame jobs written with the batched jobs of :mod:`engine.anim`.

This is the reference the compiled kernels are tested against, and the fallback where numba has
no wheel. Every call into :mod:`engine.anim` the backend makes is in this module (one place to
port when those signatures change). Buffers are batch-innermost (the layout those jobs read
fastest) and kept in the state's workspace between frames, as the Animator keeps its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.blending import blend_joint_weights
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.rootmotion import UP, remove_planar
from engine.anim.sampling import sample
from engine.anim.skinning import skinning_palette
from engine.backend.state import FrameState
from engine.math._checks import FloatArray, IntArray, trusted


def _buffers(workspace: dict[str, Any], kind: str, count: int, make: Any) -> Any:
    """The workspace's ``kind`` buffers for ``count`` characters (made anew when the count changes)."""
    found = workspace.get(kind)
    if found is None or found[0] != count:
        found = workspace[kind] = (count, make())
    return found[1]


def in_place(slot: PoseBuffer, at: int, up: Any = UP) -> None:
    """Joint ``at`` of a sampled layer ``slot`` in place about ``up`` of its parent space.

    :func:`~engine.anim.rootmotion.remove_planar`.
    """
    translations, rotations = remove_planar(slot.translations[:, at].T, slot.rotations[:, at].T, up)
    slot.translations[:, at], slot.rotations[:, at] = translations.T, rotations.T


def local_pose(
    state: FrameState,
    times: FloatArray,
    weights: FloatArray,
    override_weights: FloatArray,
    characters: IntArray,
    threshold: float,
) -> Pose:
    """Sample every layer of ``characters`` and blend them: a pose ``(K, J)``; updates the state's cursors.

    ``cursors[l, c]`` becomes what the compiled kernels leave where layer ``l`` of character ``c``
    has weight (:meth:`ClipBank.cursors <engine.backend.bank.ClipBank.cursors>`).
    The pose is workspace memory: valid until the next call.
    """
    bank, workspace = state.bank, state.workspace
    layers, joints, count = state.num_layers, bank.num_joints, characters.size
    clip_ids, cursors, rest = state.clip_ids, state.cursors, bank.skeleton.rest_pose
    stacked = _buffers(workspace, "layers", count, lambda: PoseBuffer.empty(count, joints, layers=layers))
    local = _buffers(workspace, "local", count, lambda: PoseBuffer.empty(count, joints))
    jobs = _buffers(workspace, "jobs", count, Workspace)
    with trusted():  # finite by construction (inputs checked by the caller)
        for layer in range(layers):
            ids = clip_ids[layer, characters]
            layer_times = times[layer, characters]
            slot = stacked.layer(layer)
            for k in np.unique(ids):  # one sample() per clip played on this layer
                clip = bank.clips[int(k)]
                chosen = np.flatnonzero(ids == k)
                if chosen.size == count:
                    sample(clip, rest, layer_times, out=slot, workspace=jobs)
                else:
                    part = PoseBuffer.from_pose(sample(clip, rest, layer_times[chosen]))
                    for mine, theirs in zip(slot.arrays(), part.arrays(), strict=True):
                        mine[..., chosen] = theirs
                segment = bank.cursors(int(k), layer_times[chosen])
                weighted = weights[layer, characters[chosen]] > 0.0
                cursors[layer, characters[chosen[weighted]]] = segment[weighted]
            if state.in_place is not None:
                in_place(slot, state.in_place, state.up)
        joint_weights = state.joint_weights(weights, override_weights, characters)
        blend_joint_weights(rest, stacked, joint_weights, threshold=threshold, out=local, workspace=jobs)
        return local.to_pose()


def model_and_palette(state: FrameState, local: Pose) -> tuple[FloatArray, FloatArray]:
    """Model matrices and skinning palette ``(K, J, 4, 4)`` (row-major) of a local pose ``(K, J)``.

    Workspace memory: valid until the next call.
    """
    count, joints = local.shape
    model, palette = _buffers(
        state.workspace,
        "matrices",
        count,
        lambda: tuple(np.empty((4, 4, joints, count)).transpose(3, 2, 0, 1) for _ in range(2)),
    )
    with trusted():
        model_from_pose(state.bank.skeleton, local, out=model)
        skinning_palette(state.bank.skeleton, model, out=palette)
    return model, palette


def buffer_matrices(
    state: FrameState, local: PoseBuffer, model: MatrixBuffer, palette: MatrixBuffer, workspace: Workspace
) -> None:
    """Model matrices and skinning palette of a pose buffer, into the given buffers (the player's jobs)."""
    model_from_pose(state.bank.skeleton, local, out=model, workspace=workspace)
    skinning_palette(state.bank.skeleton, model, out=palette, workspace=workspace)
