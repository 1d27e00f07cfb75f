"""The player's output for some characters at given layer times, with its exact velocity (numpy).

A transition starts from what the player shows and how it moves (:mod:`engine.player.transitions`),
and :meth:`engine.player.Player.output_velocity` reports it: :func:`capture` evaluates the layers
for ``K`` characters at their clip ``times`` with their ``rates`` (clip seconds per second) and
weights (and the weights' rates, e.g. a crossfade's ramp):

- each weighted blended layer sampled with its velocity
  (:class:`~engine.anim.clip_velocity.VelocityTable` for STEP/LINEAR clips,
  :func:`~engine.anim.clip_velocity.sample_with_velocity` for cubic ones) times its rate; with
  a root-motion joint its root made in place, the root's planar velocity turned into the clip's
  own heading kept aside;
- the blend and its derivative (:func:`~engine.anim.velocity.blend_velocity`) with the per-joint
  weights the blend uses, the rest pose as one more layer where the weights sum below the
  threshold;
- the additive layers and their derivative (:func:`~engine.anim.velocity.additive_velocity`).

The transition stage, applied on top by the caller when wanted, is the last step.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from engine.anim.additive import apply_additive
from engine.anim.blending import blend_joint_weights
from engine.anim.clip_velocity import VelocityTable, sample_with_velocity, velocity_table
from engine.anim.events import Loop
from engine.anim.layout import PoseBuffer
from engine.anim.pose import Pose
from engine.anim.rootmotion import remove_planar, yaw_from_quat
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity, additive_velocity, blend_velocity
from engine.backend.stage import CaptureFrame
from engine.errors import InvalidInputError
from engine.math._checks import BoolArray, FloatArray, IntArray, as_array, trusted
from engine.math.quat import quat_conjugate, quat_multiply, quat_rotate
from engine.player.layers import Layer, LayerTable
from engine.player.transitions import Capture


@dataclass(frozen=True)
class LayerState:
    """Every layer's state for ``K`` characters at one instant: what a capture reads.

    ``times`` (clip seconds), ``rates`` (clip seconds per second), ``weights``,
    ``weight_rates`` and ``leaving`` ``(L, K)`` (where true, a layer's velocity is that of the
    motion leaving its time: a layer entered now), ``override_weights`` ``(G, K)``, and ``at``
    ``(K,)``: the player clock of that instant (:meth:`engine.player.Player.layer_state`).
    """

    times: FloatArray
    rates: FloatArray
    weights: FloatArray
    weight_rates: FloatArray
    override_weights: FloatArray
    leaving: BoolArray
    at: FloatArray

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The fields, in order."""
        return (self.times, self.rates, self.weights, self.weight_rates, self.override_weights, self.leaving, self.at)

    def checked(self, layers: int, overrides: int, count: int) -> LayerState:
        """As arrays (float64; ``leaving`` bool) broadcast to ``L = layers``, ``G = overrides``, ``K = count``.

        Raises
        ------
        InvalidInputError
            A field that does not broadcast to its shape, or is not finite.
        """
        arrays: list[Any] = []
        for name, value in zip(_STATE_FIELDS, self.arrays(), strict=True):
            shape = (count,) if name == "at" else (overrides if name == "override_weights" else layers, count)
            array = np.asarray(value, dtype=bool) if name == "leaving" else as_array(value, name)
            try:
                arrays.append(array if array.shape == shape else np.broadcast_to(array, shape))
            except ValueError:
                message = f"a layer state's {name} must broadcast to {shape}, got {array.shape}"
                raise InvalidInputError(message) from None
        return LayerState(*arrays)

    def joined(self, other: LayerState) -> LayerState:
        """The state's characters, then ``other``'s."""
        pairs = zip(self.arrays(), other.arrays(), strict=True)
        return LayerState(*(np.concatenate((mine, theirs), axis=-1) for mine, theirs in pairs))

    def take(self, index: IntArray) -> LayerState:
        """The state of the characters ``index`` ``(K',)``."""
        return LayerState(*(array[..., index] for array in self.arrays()))


_STATE_FIELDS = tuple(field.name for field in fields(LayerState))


class VelocityTables:
    """Each layer's :class:`VelocityTable` (``None`` for cubic clips), made on first use."""

    def __init__(self) -> None:
        self._tables: dict[int, tuple[Layer, VelocityTable | None]] = {}

    def of(self, row: int, layer: Layer, skeleton: Skeleton) -> VelocityTable | None:
        """The table of ``layer`` (in row ``row``), made again when the row holds a new layer."""
        found = self._tables.get(row)
        if found is None or found[0] is not layer:
            joints = skeleton if not layer.additive else _identity_skeleton(layer)
            found = (layer, velocity_table(layer.compiled, joints))
            self._tables[row] = found
        return found[1]


def _identity_skeleton(layer: Layer) -> Skeleton:
    """A skeleton of the additive layer's joints whose rest pose is the identity (the deltas' rest)."""
    joints = layer.joints
    assert joints is not None
    return Skeleton([f"j{k}" for k in range(joints.size)], [-1] * joints.size)


def _sampled(
    layer: Layer,
    row: int,
    skeleton: Skeleton,
    rest: Pose,
    times: FloatArray,
    leaving: BoolArray,
    tables: VelocityTables,
) -> tuple[Pose, PoseVelocity]:
    """``layer``'s pose and velocity per second of clip time at ``times`` ``(K,)``.

    The velocity of the motion arriving at each time, or of the motion leaving it where ``leaving``
    ``(K,)`` (a layer entered this instant): they differ at a key where the velocity kinks.
    """
    loop = layer.loop == Loop.REPEAT
    table = tables.of(row, layer, skeleton)
    joints = skeleton if not layer.additive else _identity_skeleton(layer)
    if table is not None:
        pose, velocity = sample(layer.compiled, rest, times), table.at(times, loop=loop, side="left")
    else:
        pose, velocity = sample_with_velocity(layer.compiled, joints, times, loop=loop, side="left")
    if leaving.any():
        picked = np.flatnonzero(leaving)
        if table is not None:
            right = table.at(times[picked], loop=loop, side="right")
        else:
            right = sample_with_velocity(layer.compiled, joints, times[picked], loop=loop, side="right")[1]
        for name in ("linear", "angular", "scaling"):
            getattr(velocity, name)[picked] = getattr(right, name)
    return pose, velocity


def _root_apart(pose: Pose, velocity: PoseVelocity, root: int) -> FloatArray:
    """The root of ``pose`` made in place (with its velocity); returns its planar velocity ``(K, 3)``.

    The planar velocity is ``(vx, vz, yaw rate)`` in the root's own heading: ``R(-yaw)·v`` and
    ``d yaw / dt = 2 (q_w q̇_y - q_y q̇_w) / (q_y² + q_w²)`` with ``q̇ = ½ ω q``. The in-place root
    keeps the height and the swing: its velocity is ``(0, v_y, 0)`` and ``R(twist⁻¹)(ω - yaw rate·Y)``.
    """
    q, v, omega = pose.rotations[:, root], velocity.linear[:, root], velocity.angular[:, root]
    spin = 0.5 * quat_multiply(np.concatenate((omega, np.zeros((omega.shape[0], 1))), axis=-1), q)
    y, w = q[:, 1], q[:, 3]
    yaw_rate = 2.0 * (w * spin[:, 1] - y * spin[:, 3]) / np.maximum(y * y + w * w, 1e-300)
    half = 0.5 * yaw_from_quat(q)
    twist = np.zeros_like(q)
    twist[:, 1], twist[:, 3] = np.sin(half), np.cos(half)
    back = quat_conjugate(twist)
    planar = quat_rotate(back, v * [1.0, 0.0, 1.0])
    turning = omega - yaw_rate[:, None] * [0.0, 1.0, 0.0]
    pose.translations[:, root], pose.rotations[:, root] = remove_planar(pose.translations[:, root], q)
    velocity.linear[:, root] = v * [0.0, 1.0, 0.0]
    velocity.angular[:, root] = quat_rotate(back, turning)
    return np.stack((planar[:, 0], planar[:, 2], yaw_rate), axis=-1)


def capture(
    skeleton: Skeleton,
    table: LayerTable,
    times: FloatArray,
    rates: FloatArray,
    weights: FloatArray,
    weight_rates: FloatArray,
    override_weights: FloatArray,
    *,
    root: int | None,
    threshold: float,
    leaving: BoolArray,
    tables: VelocityTables,
    compiled: tuple[CaptureFrame, IntArray] | None = None,
) -> Capture:
    """The layers' output for ``K`` characters and its velocity (module docstring).

    ``times``, ``rates``, ``weights`` and ``weight_rates`` are ``(L, K)``, ``override_weights`` ``(G, K)``
    the overrides' weights (held constant). ``leaving`` ``(L, K)``: the layer's velocity is that of
    the motion leaving now (a layer entered this instant), else of the motion arriving.
    ``compiled``: the kernels' :class:`~engine.backend.stage.CaptureFrame` and the characters
    ``(K,)`` the rows are: the blended layers on the kernels (the same numbers to rounding), the
    additive ones after them here.
    """
    if compiled is not None:
        frame, characters = compiled
        loops = table.repeats
        blended_weights, blended_rates = weights, weight_rates
        if table.any_additive:  # the additive layers weigh nothing in the blend
            not_additive = ~table.additive[:, None]
            blended_weights, blended_rates = weights * not_additive, weight_rates * not_additive
        pose, velocity, planar = frame.capture(
            characters,
            times,
            rates,
            blended_weights,
            blended_rates,
            override_weights,
            leaving,
            loops,
            threshold,
        )
        return _with_additive(
            skeleton, table, times, rates, weights, override_weights, leaving, tables, pose, velocity, planar
        )
    count, joints = weights.shape[1], skeleton.num_joints
    rest = skeleton.rest_pose
    rows = np.array([r for r, layer in enumerate(table.layers) if not layer.additive and weights[r].any()], np.intp)
    per_joint = table.joint_weights(rows, weights[rows], override_weights)  # (n, J, K)
    per_rate = table.joint_weights(rows, weight_rates[rows], override_weights)
    # compacted: slot k of a character holds its k-th weighted layer (a character blends a few of the n)
    present = weights[rows] > 0.0
    rank = np.cumsum(present, axis=0) - 1
    slots = int(present.sum(axis=0).max(initial=0)) + 1  # the last slot: the rest pose
    stack = [np.zeros((slots, count, joints, width)) for width in (3, 4, 3)]
    stack[1][..., 3], stack[2][...] = rest.rotations[..., 3], rest.scales
    stack[0][...], stack[1][...] = rest.translations, rest.rotations
    speed = [np.zeros((slots, count, joints, 3)) for _ in range(3)]
    w, w_rate = np.zeros((slots, count, joints)), np.zeros((slots, count, joints))
    planar, root_weight = np.zeros((count, 3)), np.zeros(count)
    for k, row in enumerate(rows.tolist()):  # loop over weighted blended layers, each for its characters
        who = np.flatnonzero(present[k])
        pose, velocity = _sampled(table.layers[row], row, skeleton, rest, times[row, who], leaving[row, who], tables)
        velocity = _scaled(velocity, rates[row, who])
        if root is not None:
            planar[who] += per_joint[k, root, who][:, None] * _root_apart(pose, velocity, root)
            root_weight[who] += per_joint[k, root, who]
        slot = rank[k, who]
        for array, values in zip(
            (*stack, *speed), (*pose.arrays(), velocity.linear, velocity.angular, velocity.scaling), strict=True
        ):
            array[slot, who] = values
        w[slot, who], w_rate[slot, who] = per_joint[k][:, who].T, per_rate[k][:, who].T
    # the rest pose where the weights sum below the threshold (its weight falls as theirs rise)
    total = w.sum(axis=0)
    below = total < threshold
    w[-1], w_rate[-1] = np.where(below, threshold - total, 0.0), np.where(below, -w_rate.sum(axis=0), 0.0)
    with trusted():
        layers = Pose(*stack)
        t, r, sc = (array.transpose(0, 3, 2, 1) for array in stack)
        buffer = PoseBuffer(t, r, sc, (count,))
        blended = blend_joint_weights(
            rest, buffer, w.transpose(0, 2, 1), threshold=threshold, out=PoseBuffer.empty(count, joints)
        )
        pose = blended.to_pose()
        velocity = blend_velocity(layers, PoseVelocity(*speed), w, weight_rates=w_rate)
    planar /= np.maximum(root_weight, threshold)[:, None]
    return _with_additive(
        skeleton, table, times, rates, weights, override_weights, leaving, tables, pose, velocity, planar
    )


def _with_additive(
    skeleton: Skeleton,
    table: LayerTable,
    times: FloatArray,
    rates: FloatArray,
    weights: FloatArray,
    override_weights: FloatArray,
    leaving: BoolArray,
    tables: VelocityTables,
    pose: Pose,
    velocity: PoseVelocity,
    planar: FloatArray,
) -> Capture:
    """The capture of the blend ``pose``, ``velocity``, ``planar`` with the weighted additive layers added, in order."""
    additive = np.flatnonzero(table.additive).tolist() if table.any_additive else []
    for row in [r for r in additive if weights[r].any()]:
        pose, velocity = _added(
            skeleton,
            table,
            row,
            times[row],
            rates[row],
            weights[row],
            override_weights,
            pose,
            velocity,
            leaving[row],
            tables,
        )
    return Capture(pose, velocity, planar)


def _added(
    skeleton: Skeleton,
    table: LayerTable,
    row: int,
    times: FloatArray,
    rates: FloatArray,
    weights: FloatArray,
    override_weights: FloatArray,
    pose: Pose,
    velocity: PoseVelocity,
    leaving: BoolArray,
    tables: VelocityTables,
) -> tuple[Pose, PoseVelocity]:
    """``pose`` and its velocity with the additive layer ``row`` added (on the joints it moves)."""
    layer = table.layers[row]
    moved = layer.joints
    assert moved is not None
    if not moved.size:
        return pose, velocity
    count, joints = pose.shape[0], skeleton.num_joints
    part, part_velocity = _sampled(layer, row, skeleton, Pose.identity(moved.size), times, leaving, tables)
    part_velocity = _scaled(part_velocity, rates)
    delta = Pose.identity(joints).broadcast_to((count,)).copy()
    delta_velocity = PoseVelocity.zeros((count, joints))
    for mine, theirs in zip(delta.arrays(), part.arrays(), strict=True):
        mine[:, moved] = theirs
    for name in ("linear", "angular", "scaling"):
        getattr(delta_velocity, name)[:, moved] = getattr(part_velocity, name)
    mask = table.joint_weights(np.array([row]), weights[None], override_weights)[0].T  # (K, J)
    return apply_additive(pose, delta, 1.0, mask), additive_velocity(pose, velocity, delta, delta_velocity, 1.0, mask)


def _scaled(velocity: PoseVelocity, rate: FloatArray) -> PoseVelocity:
    """``velocity`` per second of clip time times ``rate`` ``(K,)``: per second of real time."""
    scale = rate[:, None, None]
    with trusted():
        return PoseVelocity(velocity.linear * scale, velocity.angular * scale, velocity.scaling * scale)
