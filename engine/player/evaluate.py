"""The player's pose passes on the numpy jobs: sample + blend, the in-place root, additive layers.

These are the reference the compiled path (:class:`~engine.backend.buffers.BufferFrame`) agrees
with to 1e-12, and the parts both paths share:

- :func:`sample_blend`: every weighted blended layer sampled (its root in place with a
  root-motion joint), blended with the per-joint weights of :meth:`LayerTable.joint_weights`;
- :func:`add_layers`: the weighted additive layers, in layer order, on the joints they move.

Each writes the characters ``characters`` (an index array, or ``None`` for all) of the player's
pose buffer and nothing else.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.additive import add_into
from engine.anim.blending import blend_joint_weights
from engine.anim.layout import POSE_WIDTHS, PoseBuffer, Workspace
from engine.anim.pose import Pose
from engine.anim.rootmotion import UP
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.backend._reference import in_place
from engine.math._checks import FloatArray, IntArray
from engine.player.layers import LayerTable


def weighted(table: LayerTable, characters: IntArray | None, *, additive: bool) -> IntArray:
    """Rows of the blended (or additive) layers with weight for any of ``characters``, ascending."""
    rows = np.flatnonzero(table.additive == additive)
    if not rows.size:  # the common case for additive layers: none (no character index taken)
        return rows
    weights = table.weights[rows] if characters is None else table.weights[rows][:, characters]
    return rows[weights.any(axis=1)]


def joint_weights(table: LayerTable, rows: IntArray, characters: IntArray | None, joints: Any = None) -> FloatArray:
    """``(n, J', K)`` the current per-joint weights of ``rows`` for ``characters`` (``None``: all)."""
    pick = slice(None) if characters is None else characters
    return table.joint_weights(rows, table.weights[rows][:, pick], table.override_weights[:, pick], joints)


def scatter(out: PoseBuffer, characters: IntArray | None, values: PoseBuffer) -> None:
    """Write ``values`` ``(K, J)`` into characters ``characters`` of ``out`` (all when ``None``)."""
    for mine, theirs in zip(out.arrays(), values.arrays(), strict=True):
        if characters is None:
            np.copyto(mine, theirs)
        else:
            mine[..., characters] = theirs


def sample_blend(
    skeleton: Skeleton,
    table: LayerTable,
    times: FloatArray,
    characters: IntArray | None,
    root: int | None,
    threshold: float,
    out: PoseBuffer,
    workspace: Workspace,
) -> None:
    """The blended layers at clip ``times`` ``(L, C)`` into ``out`` (module docstring)."""
    rows = weighted(table, characters, additive=False)
    count = out.count if characters is None else characters.size
    rest = skeleton.rest_pose
    if not rows.size:
        scatter(out, characters, PoseBuffer.empty(count, skeleton.num_joints).assign(rest))
        return
    with workspace.scope():
        t, r, s = (workspace.empty((rows.size, width, skeleton.num_joints, count)) for width in POSE_WIDTHS)
        stacked = PoseBuffer(t, r, s, (count,))
        for k, row in enumerate(rows.tolist()):  # loop over weighted layers
            at = times[row] if characters is None else times[row, characters]
            slot = sample(table.layers[row].compiled, rest, at, out=stacked.layer(k), workspace=workspace)
            if root is not None:
                track = table.layers[row].root
                in_place(slot, root, UP if track is None else track.up)
        weights = joint_weights(table, rows, characters)
        if characters is None:
            blend_joint_weights(rest, stacked, weights, threshold=threshold, out=out, workspace=workspace)
            return
        blended = PoseBuffer.scratch(workspace, (count,), skeleton.num_joints)
        blend_joint_weights(rest, stacked, weights, threshold=threshold, out=blended, workspace=workspace)
        scatter(out, characters, blended)


def add_layers(
    table: LayerTable, times: FloatArray, characters: IntArray | None, out: PoseBuffer, workspace: Workspace
) -> None:
    """The weighted additive layers into ``out``, in layer order, each on the joints it moves."""
    for row in weighted(table, characters, additive=True).tolist():  # additive layers, in order
        layer = table.layers[row]
        joints = layer.joints
        assert joints is not None
        if not joints.size:
            continue
        count = out.count if characters is None else characters.size
        at = times[row] if characters is None else times[row, characters]
        with workspace.scope():  # the delta, sampled on the joints it moves, added in the buffer layout
            delta = PoseBuffer.scratch(workspace, (count,), joints.size)
            sample(layer.compiled, Pose.identity(joints.size), at, out=delta, workspace=workspace)
            weight = joint_weights(table, np.array([row]), characters, joints)[0]  # (n, K)
            where: Any = (slice(None), *np.ix_(joints, np.arange(out.count) if characters is None else characters))
            t, r, s = (array[where] for array in out.arrays())
            moved = add_into((t, r, s), delta.arrays(), weight, axis=0)
            for array, values in zip(out.arrays(), moved, strict=True):
                array[where] = values
