"""The graph runtime: one bound graph, ``C`` characters, each in its own state and transition.

:func:`bind_graph` checks a :class:`~engine.graph.definition.GraphDefinition` against a
character (its skeleton and clips by name) and builds the blend-tree nodes
(:mod:`engine.graph.nodes`). A :class:`GraphRuntime` then drives ``C`` characters with it: the
parameters are arrays (:class:`~engine.graph.parameters.Parameters`), and each machine keeps, per
character, the current state, its clock and the transition in progress, in arrays shaped
``(C,)`` (and ``(C, J, ...)`` for what a transition remembers of its source). Python loops run over
states, transitions and motion nodes, never over characters.

One :meth:`GraphRuntime.update` of ``dt`` seconds, per machine:

1. **choose** a transition for each character: the any-state transitions first, then the
   current state's, in document order; the first whose conditions hold wins. A transition
   without exit time fires at the start of the update; one with an exit time fires at the
   instant within the update at which the state's normalised time crosses it (or, in a state
   that plays once, any time after). A character in an uninterruptible transition chooses
   none;
2. **advance** every clock to that instant, **start** the chosen transitions there, then advance
   the rest of ``dt`` — so a transition starts at the same time whatever the frame rate;
3. **evaluate** the output pose.

Starting a transition captures the current output, *with its velocity*, whatever is in
progress (a state, or another transition), so interrupting never jumps:

============  ==========================================================================
kind          what plays during the transition (``α = elapsed / duration``)
============  ==========================================================================
crossfade     source and target blended with weights ``(1 - α, α)``; the source keeps
              playing (a frozen snapshot of the output when it interrupts a transition)
synced        a crossfade whose target starts at the source's phase, matched through clip
              markers of the same name when both clips have some; both then advance at
              one blended phase rate
frozen        a crossfade from a snapshot of the output at the start
inertialize   only the target, plus the offset from the source decaying with Bollo's
              quintic (:mod:`engine.anim.inertialization`); exactly the target at the end
spring        the same offset decaying with a critically damped spring (half-life); the
              transition ends after :data:`SPRING_SETTLE` half-lives (offset < 1e-13)
dead_blend    the source extrapolated with decaying velocity, crossfaded into the target
              with ``smoothstep(α)``
============  ==========================================================================

A transition of duration 0 cuts to the target. Triggers stay set until a transition that tests
them fires; it consumes them for the characters that took it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from engine.anim.blending import subtree_mask
from engine.anim.blendspace import GradientBand
from engine.anim.clip import Clip
from engine.anim.inertialization import (
    QuinticDecay,
    SpringDecay,
    dead_blend,
    offset_pose,
    offset_velocity,
    pose_offsets,
    quintic_decay,
    quintic_offset,
    quintic_rates,
    spring_decay,
    spring_offset,
    spring_rates,
)
from engine.anim.pose import Pose
from engine.anim.rootmotion import remove_planar
from engine.anim.sampling import compile_clip
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity, blend_velocity
from engine.errors import InvalidInputError, OssaError
from engine.graph import _jobs
from engine.graph.definition import (
    AdditiveMotion,
    Blend1DMotion,
    Blend2DMotion,
    ClipMotion,
    GraphDefinition,
    LayerMotion,
    Machine,
    MachineMotion,
    Motion,
    Transition,
)
from engine.graph.nodes import (
    AdditiveNode,
    Blend1DNode,
    Blend2DNode,
    ClipNode,
    Clock,
    Context,
    LayerBuffer,
    LayerNode,
    MachineNode,
    Node,
)
from engine.graph.parameters import BoolArray, Parameters
from engine.math._checks import FloatArray, IntArray, as_array, trusted

#: Transition kinds as stored per character; ``NONE``: no transition in progress.
NONE, CROSSFADE, SYNCED, FROZEN, INERTIALIZE, SPRING, DEAD_BLEND = range(7)
KIND_CODES = {
    "crossfade": CROSSFADE,
    "synced": SYNCED,
    "frozen": FROZEN,
    "inertialize": INERTIALIZE,
    "spring": SPRING,
    "dead_blend": DEAD_BLEND,
}
#: The pose paths, in the order of the offsets' second-to-last axis (:func:`~engine.anim.inertialization.pose_offsets`).
PATHS = ("translation", "rotation", "scale")
#: Half-lives after which a spring transition ends: its offset is then below ``1e-13`` of its start.
SPRING_SETTLE = 20.0

ConditionFn = tuple[str, int, str, float]  # (kind, row, op, value)


# --- binding ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundTransition:
    """A transition with its names resolved to indices."""

    index: int
    source: int  # -1: any state
    target: int
    kind: int
    duration: float
    half_life: float
    exit_time: float  # NaN: none
    conditions: tuple[ConditionFn, ...]
    triggers: tuple[int, ...]
    interruptible: bool
    definition: Transition


@dataclass(frozen=True)
class BoundState:
    """A state with its blend tree built; ``loops`` says whether its phase wraps or stops at 1."""

    name: str
    node: Node
    speed: float
    loops: bool
    synced: bool  # whether its phase comes from the synced clips (else from all of them)
    machine: str | None  # the sub-machine it plays, if it is a machine state


@dataclass(frozen=True)
class BoundMachine:
    """States, start state and, per state, its candidate transitions in priority order."""

    name: str
    states: tuple[BoundState, ...]
    start: int
    transitions: tuple[BoundTransition, ...]
    candidates: tuple[tuple[BoundTransition, ...], ...]

    def state_index(self, name: str) -> int:
        """Index of the state called ``name``."""
        for k, state in enumerate(self.states):
            if state.name == name:
                return k
        raise InvalidInputError(
            f"no state {name!r} in machine {self.name!r}; the states are {[s.name for s in self.states]}"
        )


@dataclass(frozen=True)
class BoundGraph:
    """A graph definition checked against one character and ready to run (shared by runtimes)."""

    definition: GraphDefinition
    skeleton: Skeleton
    machines: dict[str, BoundMachine]  # "root" and the named sub-machines
    animated: dict[str, IntArray]
    """Per path (translation, rotation, scale): the joints some clip of the graph animates; on the
    others every pose of the graph is the rest pose, so transitions need no offset there."""
    played: tuple[str, ...]
    """The names of the character's clips the graph plays."""
    root_motion: int | None = None
    """The joint whose planar motion the clips play without (:attr:`GraphRuntime.root_translation`)."""

    @property
    def root(self) -> BoundMachine:
        """The top-level machine."""
        return self.machines["root"]


def bind_graph(
    definition: GraphDefinition,
    skeleton: Skeleton,
    clips: Mapping[str, Clip],
    *,
    root_motion: str | int | None = None,
) -> BoundGraph:
    """Check ``definition`` against a character and build its nodes.

    Parameters
    ----------
    definition
        A validated document (:func:`~engine.graph.definition.load_graph`).
    skeleton
        The character's skeleton.
    clips
        Its clips by name (e.g. ``Character.clips``).
    root_motion
        Name or index of the joint whose horizontal translation and yaw become the runtime's
        root motion (:attr:`GraphRuntime.root_translation`, :attr:`GraphRuntime.root_yaw`): every
        clip plays with that joint in place (:mod:`engine.graph.nodes`), as the Animator's
        ``root_motion`` does; ``None``: the clips play as they are.

    Raises
    ------
    InvalidInputError
        ``root_motion`` names no joint of the skeleton.
    GraphDefinitionError
        Naming the document path: an unknown clip or joint, a clip for another skeleton, a state
        mixing looping and play-once clips on its phase, an additive ``first_frame`` reference of
        a motion that is not a clip.
    """
    root = None if root_motion is None else _joint_index(skeleton, root_motion)
    return _Binder(definition, skeleton, clips, root).graph()


def _joint_index(skeleton: Skeleton, joint: str | int) -> int:
    if isinstance(joint, str):
        if joint not in skeleton.names:
            raise InvalidInputError(f"root_motion: no joint {joint!r} in the skeleton")
        return skeleton.names.index(joint)
    if not 0 <= int(joint) < skeleton.num_joints:
        raise InvalidInputError(f"root_motion: joint {joint} is out of range for {skeleton.num_joints} joints")
    return int(joint)


class _Binder:
    def __init__(
        self, definition: GraphDefinition, skeleton: Skeleton, clips: Mapping[str, Clip], root: int | None
    ) -> None:
        self.definition = definition
        self.skeleton = skeleton
        self.clips = clips
        self.root = root
        self.compiled: dict[str, Any] = {}
        self.masks = {name: self.mask(mask) for name, mask in definition.masks.items()}

    def fail(self, where: str, message: str) -> OssaError:
        return self.definition.error(where, message)

    def mask(self, mask: Any) -> FloatArray:
        for key, names in (("joints", mask.joints), ("exclude", mask.exclude)):
            for k, name in enumerate(names):
                if name not in self.skeleton.names:
                    raise self.fail(
                        f"{mask.path}.{key}[{k}]",
                        f"unknown joint {name!r}; the skeleton has {list(self.skeleton.names)}",
                    )
        return subtree_mask(self.skeleton, list(mask.joints), mask.weight, exclude=list(mask.exclude))

    def graph(self) -> BoundGraph:
        machines = {"root": self.machine(self.definition.root)}
        for name, machine in self.definition.machines.items():
            machines[name] = self.machine(machine)
        animated: dict[str, set[int]] = {path: set() for path in PATHS}
        for name in self.compiled:
            for channel in self.clips[name].channels:
                animated[channel.path].add(channel.target)
        joints = {path: np.array(sorted(found), dtype=np.intp) for path, found in animated.items()}
        return BoundGraph(self.definition, self.skeleton, machines, joints, tuple(self.compiled), self.root)

    def machine(self, machine: Machine) -> BoundMachine:
        names = list(machine.states)
        states = []
        for state in machine.states.values():
            node = self.node(state.motion)
            timing = [leaf for leaf, _ in node.leaves(_NoParameters(), np.zeros(1, dtype=np.intp), True)]
            synced = bool(timing)
            if not synced:
                timing = [leaf for leaf, _ in node.leaves(_NoParameters(), np.zeros(1, dtype=np.intp), False)]
            loops = {leaf.loop for leaf in timing}
            if len(loops) > 1:
                raise self.fail(
                    f"{state.path}.motion",
                    "the clips timing this state must all loop or all play once, got both "
                    f"({', '.join(sorted({leaf.clip.name for leaf in timing}))})",
                )
            machine_name = state.motion.machine if isinstance(state.motion, MachineMotion) else None
            states.append(BoundState(state.name, node, state.speed, loops != {False}, synced, machine_name))
        transitions: list[BoundTransition] = []
        for transition in machine.any_state:
            transitions.append(self.transition(transition, -1, names, len(transitions)))
        for index, state in enumerate(machine.states.values()):
            for transition in state.transitions:
                transitions.append(self.transition(transition, index, names, len(transitions)))
        candidates = tuple(
            tuple(t for t in transitions if t.source == -1 and t.target != k)
            + tuple(t for t in transitions if t.source == k)
            for k in range(len(names))
        )
        return BoundMachine(machine.name, tuple(states), names.index(machine.start), tuple(transitions), candidates)

    def transition(self, transition: Transition, source: int, names: list[str], index: int) -> BoundTransition:
        rows = Parameters(self.definition.parameters, 0).index
        conditions = tuple((rows[c.parameter][0], rows[c.parameter][1], c.op, c.value) for c in transition.conditions)
        triggers = tuple(row for kind, row, _, _ in conditions if kind == "trigger")
        return BoundTransition(
            index,
            source,
            names.index(transition.target),
            KIND_CODES[transition.kind],
            transition.duration,
            transition.half_life,
            math.nan if transition.exit_time is None else transition.exit_time,
            conditions,
            triggers,
            transition.interruptible,
            transition,
        )

    def node(self, motion: Motion) -> Node:
        if isinstance(motion, ClipMotion):
            clip = self.clips.get(motion.clip)
            if clip is None:
                raise self.fail(
                    f"{motion.path}.clip", f"unknown clip {motion.clip!r}; the character has {sorted(self.clips)}"
                )
            if clip.num_targets != self.skeleton.num_joints:
                raise self.fail(
                    f"{motion.path}.clip",
                    f"clip {motion.clip!r} animates {clip.num_targets} joints "
                    f"but the skeleton has {self.skeleton.num_joints}",
                )
            if motion.clip not in self.compiled:
                compiled = compile_clip(clip)
                self.compiled[motion.clip] = (compiled, _jobs.velocity_lookup(compiled, self.skeleton))
            compiled, table = self.compiled[motion.clip]
            return ClipNode(clip, compiled, table, motion.speed, motion.loop, motion.sync, self.root)
        if isinstance(motion, Blend1DMotion):
            children = tuple(self.node(child) for child in motion.children)
            return Blend1DNode(motion.parameter, np.array(motion.positions), children)
        if isinstance(motion, Blend2DMotion):
            children = tuple(self.node(child) for child in motion.children)
            return Blend2DNode(motion.parameters, GradientBand(np.array(motion.positions), motion.mode), children)
        if isinstance(motion, AdditiveMotion):
            additive = self.node(motion.additive)
            if motion.reference == "first_frame":
                if not isinstance(additive, ClipNode):
                    raise self.fail(
                        f"{motion.path}.reference",
                        "reference 'first_frame' needs a clip as the additive motion; use 'rest' for other motions",
                    )
                reference = _jobs.sample_pose(additive.compiled, self.skeleton, np.zeros(1))[0]
            else:
                reference = self.skeleton.rest_pose
            mask = None if motion.mask is None else self.masks[motion.mask]
            return AdditiveNode(self.node(motion.base), additive, motion.weight, mask, reference)
        if isinstance(motion, LayerMotion):
            return LayerNode(self.node(motion.base), self.node(motion.layer), motion.weight, self.masks[motion.mask])
        return MachineNode(motion.machine)


class _NoParameters(Parameters):
    """Parameters of no character: enough to list a tree's leaves at bind time."""

    def __init__(self) -> None:
        super().__init__({}, 0)

    def float_values(self, name: str) -> FloatArray:  # noqa: ARG002 (every parameter reads 0)
        """Zero for one character."""
        return np.zeros(1)


# --- per-character state ----------------------------------------------------------------------------


def _pose_buffer(count: int, joints: int) -> Pose:
    """A rest-like pose ``(K, J)`` stored batch-innermost (the layout sampling and blending write fastest)."""
    with trusted():
        pose = Pose(*(np.zeros((width, joints, count)).transpose(2, 1, 0) for width in (3, 4, 3)))
    pose.rotations[..., 3] = 1.0
    pose.scales[...] = 1.0
    return pose


def _assign(target: Pose | PoseVelocity, index: Any, source: Pose | PoseVelocity) -> None:
    for field in fields(target):
        getattr(target, field.name)[index] = getattr(source, field.name)


def _take(source: Pose, index: Any) -> Pose:
    """A copy of the batch entries ``index`` (never a view: transitions write their result back)."""
    with trusted():
        return Pose(*(np.array(getattr(source, f.name)[index]) for f in fields(Pose)))


def _take_velocity(source: PoseVelocity, index: Any) -> PoseVelocity:
    with trusted():
        return PoseVelocity(*(np.array(getattr(source, f.name)[index]) for f in fields(PoseVelocity)))


def _as_slice(indices: IntArray) -> IntArray | slice:
    """``indices`` as a slice when they are consecutive and ascending (a view instead of a gather)."""
    if indices.size and np.array_equal(indices, np.arange(indices[0], indices[0] + indices.size)):
        return slice(int(indices[0]), int(indices[0]) + indices.size)
    return indices


def _turn(quaternions: FloatArray, rotvecs: FloatArray) -> None:
    """``q ← exp(φ) · q`` in place, components first: ``quaternions`` ``(4, ...)``, ``rotvecs`` ``(3, ...)``.

    The graph's poses are stored components-first, characters innermost; working on whole
    component rows there is several times faster than going through ``(..., 4)`` views. Same
    arithmetic as :func:`~engine.math.quat.quat_from_rotvec` then
    :func:`~engine.math.quat.quat_multiply` (the tests compare them).
    """
    x, y, z = rotvecs
    angle = np.sqrt(x * x + y * y + z * z)
    small = angle < 1e-4
    scale = np.where(small, 0.5 - angle * angle / 48.0, np.sin(0.5 * angle) / np.where(small, 1.0, angle))
    ex, ey, ez, ew = x * scale, y * scale, z * scale, np.cos(0.5 * angle)
    qx, qy, qz, qw = quaternions
    turned = (
        ew * qx + ex * qw + ey * qz - ez * qy,
        ew * qy - ex * qz + ey * qw + ez * qx,
        ew * qz + ex * qy - ey * qx + ez * qw,
        ew * qw - ex * qx - ey * qy - ez * qz,
    )
    for component, values in zip(quaternions, turned, strict=True):  # all four read before any is written
        component[...] = values


class _Offsets:
    """Per-character offsets of the inertialized transitions in progress, per path on its animated joints.

    For each kind (quintic :class:`QuinticDecay`, spring :class:`SpringDecay`) and path, the
    decays of all ``C`` characters with batch shape ``(n, C)`` (joints, then characters: the
    characters innermost, like the poses), allocated on first use.
    """

    def __init__(self, count: int, animated: dict[str, IntArray]) -> None:
        self.count = count
        self.joints = {path: _as_slice(joints) for path, joints in animated.items() if joints.size}
        self.arrays: dict[tuple[int, str], dict[str, FloatArray]] = {}  # per field: (n, C) or (n, C, 3)

    def store(self, kind: int, members: IntArray, offsets: FloatArray, rates: FloatArray, length: FloatArray) -> None:
        """Offsets and rates ``(K, J, 3, 3)`` of the characters ``members`` starting ``kind`` now."""
        for p, path in enumerate(PATHS):
            if path not in self.joints:
                continue
            joints = self.joints[path]
            x = np.swapaxes(offsets[:, joints, p], 0, 1)  # (n, K, 3)
            v = np.swapaxes(rates[:, joints, p], 0, 1)
            decay = quintic_decay(x, v, length[None, :]) if kind == INERTIALIZE else spring_decay(x, v, length[None, :])
            table = self.arrays.setdefault((kind, path), {})
            for field in fields(decay):  # one contiguous array per field: the per-frame math reads them whole
                values = getattr(decay, field.name)
                if field.name not in table:
                    table[field.name] = np.zeros((values.shape[0], self.count, *values.shape[2:]))
                table[field.name][:, members] = values

    def decay(self, kind: int, path: str, members: IntArray | slice) -> QuinticDecay | SpringDecay:
        """The stored decays of ``members`` on ``path``, batch ``(n, K)`` (views when ``members`` is a slice)."""
        values = {name: array[:, members] for name, array in self.arrays[(kind, path)].items()}
        return QuinticDecay(**values) if kind == INERTIALIZE else SpringDecay(**values)

    def full(self, kind: int, members: IntArray, elapsed: FloatArray, joints: int) -> tuple[FloatArray, FloatArray]:
        """Offsets and rates ``(K, J, 3, 3)`` on every joint (zero where nothing is animated)."""
        offsets = np.zeros((members.size, joints, 3, 3))
        rates = np.zeros((members.size, joints, 3, 3))
        t = elapsed[None, :]
        for p, path in enumerate(PATHS):
            if path not in self.joints:
                continue
            decay = self.decay(kind, path, members)
            if isinstance(decay, QuinticDecay):
                x, v = quintic_offset(decay, t), quintic_rates(decay, t)[0]
            else:
                x, v = spring_offset(decay, t), spring_rates(decay, t)[0]
            offsets[:, self.joints[path], p] = np.swapaxes(x, 0, 1)
            rates[:, self.joints[path], p] = np.swapaxes(v, 0, 1)
        return offsets, rates

    def apply(
        self, kind: int, members: IntArray | slice, rows: IntArray | slice, pose: Pose, elapsed: FloatArray
    ) -> None:
        """Add the offsets of ``members`` to ``pose``'s entries ``rows``, in place."""
        t = elapsed[None, :]
        for path, joints in self.joints.items():
            decay = self.decay(kind, path, members)
            x = quintic_offset(decay, t) if isinstance(decay, QuinticDecay) else spring_offset(decay, t)  # (n, K, 3)
            name = {"translation": "translations", "rotation": "rotations", "scale": "scales"}[path]
            components = getattr(pose, name).transpose(2, 1, 0)  # (width, J, K): contiguous rows in the graph's buffers
            if isinstance(rows, slice) and isinstance(joints, slice):
                where: Any = (slice(None), joints, rows)
            else:
                joint_index = np.arange(components.shape[1])[joints] if isinstance(joints, slice) else joints
                row_index = np.arange(components.shape[2])[rows] if isinstance(rows, slice) else rows
                where = (slice(None), *np.ix_(joint_index, row_index))
            vectors = np.moveaxis(x, -1, 0)  # (3, n, K)
            if path == "rotation":
                if isinstance(where[1], slice) and isinstance(where[2], slice):
                    _turn(components[where], vectors)  # a view: turned in place
                else:
                    block = components[where]
                    _turn(block, vectors)
                    components[where] = block
            else:
                components[where] += vectors


class MachineRuntime:
    """One machine's per-character state (see the module docstring); made by :class:`GraphRuntime`."""

    def __init__(
        self, graph: BoundGraph, name: str, parameters: Parameters, machines: dict[str, MachineRuntime]
    ) -> None:
        self.graph = graph
        self.bound = graph.machines[name]
        self.parameters = parameters
        self.machines = machines  # every machine of the runtime, by name (shared)
        count, joints = parameters.num_characters, graph.skeleton.num_joints
        self.count, self.joints = count, joints
        self.state: IntArray = np.full(count, self.bound.start, dtype=np.intp)
        self.phase: FloatArray = np.zeros(count)
        self.elapsed: FloatArray = np.zeros(count)
        self.kind: IntArray = np.zeros(count, dtype=np.intp)
        self.transition: IntArray = np.full(count, -1, dtype=np.intp)  # index of the transition in progress
        self.progress: FloatArray = np.zeros(count)  # seconds into it
        self.duration: FloatArray = np.zeros(count)
        self.half_life: FloatArray = np.ones(count)
        self.locked: BoolArray = np.zeros(count, dtype=bool)  # an uninterruptible transition in progress
        self.source: IntArray = np.full(count, -1, dtype=np.intp)  # live source state, -1: the snapshot
        self.source_phase: FloatArray = np.zeros(count)
        self.source_elapsed: FloatArray = np.zeros(count)
        self.snapshot = _pose_buffer(count, joints)
        self.snapshot_velocity = PoseVelocity.zeros((count, joints))
        self.offsets = _Offsets(count, graph.animated)
        self.layers = LayerBuffer()  # the two layers of crossfades
        self.loops = np.array([s.loops for s in self.bound.states])
        self.speeds = np.array([s.speed for s in self.bound.states])

    # --- clocks --------------------------------------------------------------------------------------

    def rates(self, states: IntArray, characters: IntArray) -> FloatArray:
        """Phase rate ``(K,)`` of each character's state ``states[k]`` with the current parameters."""
        rates = np.zeros(characters.size)
        for s in np.unique(states):  # loop over states
            rows = np.nonzero(states == s)[0]
            state = self.bound.states[s]
            leaves = state.node.leaves(self.parameters, characters[rows], state.synced)
            if not leaves:
                continue
            weights = np.stack([w for _, w in leaves])
            cycles = np.array([leaf.cycle_rate(state.speed) for leaf, _ in leaves])[:, None]
            total = weights.sum(axis=0)
            mean = cycles.mean() if cycles.size else 0.0
            rates[rows] = np.where(
                total > 0.0, (weights * cycles).sum(axis=0) / np.where(total > 0.0, total, 1.0), mean
            )
        return rates

    def _move_phase(self, phase: FloatArray, step: FloatArray, states: IntArray) -> FloatArray:
        moved = phase + step
        return np.where(self.loops[states], np.mod(moved, 1.0), np.minimum(moved, 1.0))

    def advance(self, step: FloatArray, moving: BoolArray) -> None:
        """Move every clock of the ``moving`` characters by ``step`` seconds ``(C,)``; end finished transitions."""
        moving = moving & (step > 0.0)
        if not moving.any():
            return
        rows = np.nonzero(moving)[0]
        dt = step[rows]
        states = self.state[rows]
        rate = self.rates(states, rows)
        kinds = self.kind[rows]
        live = (self.source[rows] >= 0) & ((kinds == CROSSFADE) | (kinds == SYNCED))
        if live.any():
            sources = self.source[rows[live]]
            source_rate = self.rates(sources, rows[live])
            synced = kinds[live] == SYNCED
            if synced.any():  # one phase rate for both, blended like the poses: integrate it over the step
                done, total = self.progress[rows[live]], self.duration[rows[live]]
                until_end = np.clip(total - done, 0.0, dt[live])
                mean_alpha = (done * until_end + 0.5 * until_end**2) / total + (dt[live] - until_end)
                mean_alpha /= np.where(dt[live] > 0.0, dt[live], 1.0)
                shared = source_rate + mean_alpha * (rate[live] - source_rate)
                source_rate = np.where(synced, shared, source_rate)
                rate[live] = np.where(synced, shared, rate[live])
            live_rows = rows[live]
            self.source_phase[live_rows] = self._move_phase(
                self.source_phase[live_rows], source_rate * dt[live], sources
            )
            self.source_elapsed[live_rows] += dt[live]
        self.phase[rows] = self._move_phase(self.phase[rows], rate * dt, states)
        self.elapsed[rows] += dt
        busy = kinds != NONE
        if busy.any():
            busy_rows = rows[busy]
            self.progress[busy_rows] += dt[busy]
            ends = np.where(
                self.kind[busy_rows] == SPRING, SPRING_SETTLE * self.half_life[busy_rows], self.duration[busy_rows]
            )
            done = busy_rows[self.progress[busy_rows] >= ends]
            self.kind[done] = NONE
            self.transition[done] = -1
            self.source[done] = -1
            self.locked[done] = False
        for index, state in enumerate(self.bound.states):  # sub-machines run while their state is current
            if state.machine is not None:
                inside = moving & (self.state == index)
                if inside.any():
                    self.machines[state.machine].step(step, inside)

    # --- one update ----------------------------------------------------------------------------------

    def reset(self, characters: IntArray) -> None:
        """Put the characters in the start state, at time 0, with no transition."""
        self.state[characters] = self.bound.start
        self.phase[characters] = 0.0
        self.elapsed[characters] = 0.0
        self._clear(characters)
        start = self.bound.states[self.bound.start]
        if start.machine is not None:
            self.machines[start.machine].reset(characters)

    def _clear(self, characters: IntArray) -> None:
        self.kind[characters] = NONE
        self.transition[characters] = -1
        self.source[characters] = -1
        self.locked[characters] = False

    def step(self, dt: FloatArray, active: BoolArray) -> None:
        """Choose, advance and start transitions for the ``active`` characters over ``dt`` ``(C,)``.

        A character that starts a transition part-way through ``dt`` checks the transitions of its
        new state at that instant, with the time left (so a chain of transitions happens at the
        same times whatever the frame rate), up to once per state of the machine per update.
        """
        remaining = dt.copy()
        checking = active.copy()
        for _ in range(len(self.bound.states) + 1):  # rounds of chained transitions
            chosen, delay = self.choose(remaining, checking)
            starting = chosen >= 0
            self.advance(np.where(starting, delay, remaining), checking)
            remaining = np.where(starting, remaining - delay, 0.0)
            if not starting.any():
                return
            rows = np.nonzero(starting)[0]
            self.start(rows, chosen[rows])
            checking = starting
        self.advance(remaining, checking)

    def choose(self, dt: FloatArray, active: BoolArray) -> tuple[IntArray, FloatArray]:
        """The transition each character takes this update (-1: none) and its delay ``(C,)`` into ``dt``."""
        chosen = np.full(self.count, -1, dtype=np.intp)
        delay = np.zeros(self.count)
        free = active & ~self.locked
        for s in np.unique(self.state[free]):  # loop over states
            candidates = self.bound.candidates[s]
            if not candidates:
                continue
            rows = np.nonzero(free & (self.state == s))[0]
            open_rows = np.ones(rows.size, dtype=bool)
            rate = None
            for transition in candidates:  # in priority order
                fire = open_rows & self._conditions_hold(transition, rows)
                wait = np.zeros(rows.size)
                if not math.isnan(transition.exit_time):
                    if rate is None:
                        rate = self.rates(self.state[rows], rows)
                    crosses, wait = self._exit_crossing(transition.exit_time, rows, rate, dt[rows], bool(self.loops[s]))
                    fire &= crosses
                chosen[rows[fire]] = transition.index
                delay[rows[fire]] = wait[fire]
                open_rows &= ~fire
                if not open_rows.any():
                    break
        return chosen, delay

    def _conditions_hold(self, transition: BoundTransition, rows: IntArray) -> BoolArray:
        holds = np.ones(rows.size, dtype=bool)
        parameters = self.parameters
        for kind, row, op, value in transition.conditions:
            if kind == "trigger":
                holds &= parameters.triggers[row, rows]
            elif kind == "bool":
                current = parameters.bools[row, rows]
                holds &= (current == bool(value)) if op == "==" else (current != bool(value))
            else:
                current = parameters.floats[row, rows]
                holds &= _compare(current, op, value)
        return holds

    def _exit_crossing(
        self, exit_time: float, rows: IntArray, rate: FloatArray, dt: FloatArray, loops: bool
    ) -> tuple[BoolArray, FloatArray]:
        """Whether the phase crosses ``exit_time`` within ``dt`` and after how many seconds."""
        phase = self.phase[rows]
        moving = rate > 0.0
        safe = np.where(moving, rate, 1.0)
        if loops:
            gap = np.mod(exit_time - phase, 1.0)
            gap = np.where(gap > 0.0, gap, 1.0)  # exactly there now: the next crossing is a cycle away
            wait = gap / safe
            return moving & (wait <= dt), np.where(moving, np.minimum(wait, dt), 0.0)
        past = phase >= exit_time
        wait = np.where(past, 0.0, (exit_time - phase) / safe)
        return past | (moving & (wait <= dt)), np.where(past, 0.0, np.minimum(wait, dt))

    def start(self, rows: IntArray, chosen: IntArray) -> None:
        """Start transition ``chosen[k]`` for character ``rows[k]`` now (see the module docstring)."""
        kinds = np.array([self.bound.transitions[c].kind for c in chosen])
        instant = np.array([self.bound.transitions[c].duration == 0.0 for c in chosen])
        playing = np.array([self.bound.states[s].machine is None for s in self.state[rows]])
        live = (
            (self.kind[rows] == NONE)
            & playing
            & (self.state[rows] != [self.bound.transitions[c].target for c in chosen])
        )
        moving = ~instant & np.isin(kinds, (INERTIALIZE, SPRING, DEAD_BLEND))  # need the output's velocity
        frozen = ~instant & ~moving & ((kinds == FROZEN) | ~live)  # need the output's pose
        captured: dict[bool, tuple[IntArray, Pose, PoseVelocity | None]] = {}
        for velocity, need in ((True, moving), (False, frozen)):
            if need.any():
                picked = np.nonzero(need)[0]
                pose, speed = self.evaluate(rows[picked], velocity=velocity, side="left")
                captured[velocity] = (picked, pose, speed)
        where = np.full(rows.size, -1, dtype=np.intp)  # position of each row in its capture
        for picked, *_ in captured.values():
            where[picked] = np.arange(picked.size)
        for index in np.unique(chosen):  # loop over the transitions taken
            transition = self.bound.transitions[index]
            picked = np.nonzero(chosen == index)[0]
            members = rows[picked]
            for trigger in transition.triggers:
                self.parameters.triggers[trigger, members] = False
            old_state = self.state[members].copy()
            old_phase, old_elapsed = self.phase[members].copy(), self.elapsed[members].copy()
            phase = np.full(members.size, transition.definition.offset)
            if transition.kind == SYNCED:
                phase = self._synced_phase(old_state, old_phase, transition.target, members)
            self.state[members] = transition.target
            self.phase[members] = phase
            self.elapsed[members] = 0.0
            target_state = self.bound.states[transition.target]
            if target_state.machine is not None:
                self.machines[target_state.machine].reset(members)
            if transition.duration == 0.0:
                self._clear(members)
                continue
            self.kind[members] = transition.kind
            self.transition[members] = transition.index
            self.progress[members] = 0.0
            self.duration[members] = transition.duration
            self.half_life[members] = transition.half_life if transition.half_life > 0.0 else 1.0
            self.locked[members] = not transition.interruptible
            self.source[members] = -1
            if transition.kind in (CROSSFADE, SYNCED):
                self.source[members] = np.where(live[picked], old_state, -1)
                self.source_phase[members] = old_phase
                self.source_elapsed[members] = old_elapsed
                frozen_here = ~live[picked]
                if frozen_here.any():
                    _, pose, _ = captured[False]
                    _assign(self.snapshot, members[frozen_here], _take(pose, where[picked[frozen_here]]))
                continue
            _, pose, speed = captured[transition.kind != FROZEN]
            here = _take(pose, where[picked])
            if transition.kind == FROZEN:
                _assign(self.snapshot, members, here)
                continue
            assert speed is not None
            here_velocity = _take_velocity(speed, where[picked])
            _assign(self.snapshot, members, here)
            _assign(self.snapshot_velocity, members, here_velocity)
        # inertialized: the offsets from the new states' poses and motions (one evaluation for all)
        offset = np.isin(self.kind[rows], (INERTIALIZE, SPRING)) & moving
        if offset.any():
            members = rows[offset]
            target, target_velocity = self._targets(members, velocity=True, side="right")
            assert target_velocity is not None
            offsets, rates = pose_offsets(
                _take(self.snapshot, members), _take_velocity(self.snapshot_velocity, members), target, target_velocity
            )
            for kind in (INERTIALIZE, SPRING):
                picked = np.nonzero(self.kind[members] == kind)[0]
                if picked.size:
                    length = (self.duration if kind == INERTIALIZE else self.half_life)[members[picked]]
                    self.offsets.store(kind, members[picked], offsets[picked], rates[picked], length)

    def _synced_phase(self, states: IntArray, phases: FloatArray, target: int, members: IntArray) -> FloatArray:
        """The target's starting phase: the source's, moved through shared clip markers when there are some."""
        result = phases.copy()
        target_leaf = _dominant(self.bound.states[target], self.parameters, members)
        for s in np.unique(states):  # loop over source states
            rows = np.nonzero(states == s)[0]
            source_leaf = _dominant(self.bound.states[s], self.parameters, members[rows])
            for a in np.unique(source_leaf[1]):  # loop over the source's dominant clips
                for b in np.unique(target_leaf[1][rows]):  # and the target's
                    pick = rows[(source_leaf[1] == a) & (target_leaf[1][rows] == b)]
                    if pick.size:
                        result[pick] = marker_phase(source_leaf[0][a].clip, target_leaf[0][b].clip, phases[pick])
        return result

    # --- poses ----------------------------------------------------------------------------------------

    def _context(self, velocity: bool, side: str) -> Context:
        return Context(self.parameters, self.graph.skeleton, self.machines, velocity, side)

    def _states_into(
        self,
        states: IntArray,
        rows: IntArray,
        phase: FloatArray,
        elapsed: FloatArray,
        context: Context,
        pose: Pose,
        speed: PoseVelocity | None,
    ) -> None:
        """Write the pose of state ``states[k]`` for character ``rows[k]`` at the given clocks into ``pose``."""
        if np.all(states == states[0]):  # the common case: one state for all
            _, part_velocity = self._state_pose(int(states[0]), rows, phase, elapsed, context, pose)
            if speed is not None and part_velocity is not None:
                _assign(speed, slice(None), part_velocity)
            return
        for s in np.unique(states):  # loop over states
            picked = np.nonzero(states == s)[0]
            part, part_velocity = self._state_pose(int(s), rows[picked], phase[picked], elapsed[picked], context)
            _assign(pose, picked, part)
            if speed is not None and part_velocity is not None:
                _assign(speed, picked, part_velocity)

    def _state_pose(
        self,
        state: int,
        rows: IntArray,
        phase: FloatArray,
        elapsed: FloatArray,
        context: Context,
        out: Pose | None = None,
    ) -> tuple[Pose, PoseVelocity | None]:
        bound = self.bound.states[state]
        if not context.velocity:
            return bound.node.evaluate(context, rows, Clock(phase, elapsed, np.zeros(rows.size), bound.speed), out)
        rate = self.rates(np.full(rows.size, state), rows)
        entered = elapsed == 0.0  # a state entered this instant only has a motion leaving it
        if context.side == "right" or not entered.any():
            return bound.node.evaluate(context, rows, Clock(phase, elapsed, rate, bound.speed), out)
        pose = out if out is not None else _pose_buffer(rows.size, self.joints)
        velocity = PoseVelocity.zeros((rows.size, self.joints))
        for picked, side in ((np.nonzero(~entered)[0], context.side), (np.nonzero(entered)[0], "right")):
            if picked.size:
                part = Context(context.parameters, context.skeleton, context.machines, True, side)
                clock = Clock(phase[picked], elapsed[picked], rate[picked], bound.speed)
                part_pose, part_velocity = bound.node.evaluate(part, rows[picked], clock)
                _assign(pose, picked, part_pose)
                assert part_velocity is not None
                _assign(velocity, picked, part_velocity)
        return pose, velocity

    def _targets(self, rows: IntArray, velocity: bool, side: str) -> tuple[Pose, PoseVelocity | None]:
        pose = _pose_buffer(rows.size, self.joints)
        speed = PoseVelocity.zeros((rows.size, self.joints)) if velocity else None
        context = self._context(velocity, side)
        self._states_into(self.state[rows], rows, self.phase[rows], self.elapsed[rows], context, pose, speed)
        return pose, speed

    def evaluate(
        self, rows: IntArray, velocity: bool = False, side: str = "left", out: Pose | None = None
    ) -> tuple[Pose, PoseVelocity | None]:
        """Output pose ``(K, J)`` of characters ``rows`` now (and its velocity when asked).

        With ``out`` (a pose ``(K, J)``) the pose is written there.
        """
        pose = out if out is not None else _pose_buffer(rows.size, self.joints)
        speed = PoseVelocity.zeros((rows.size, self.joints)) if velocity else None
        context = self._context(velocity, side)
        self._states_into(self.state[rows], rows, self.phase[rows], self.elapsed[rows], context, pose, speed)
        kinds = self.kind[rows]
        busy = kinds != NONE
        if not busy.any():
            return pose, speed
        for kind in np.unique(kinds[busy]):  # loop over transition kinds in progress
            picked = np.nonzero(kinds == kind)[0]
            index: IntArray | slice = slice(None) if picked.size == rows.size else picked
            self._transition_into(int(kind), rows[picked], index, pose, speed, context)
        return pose, speed

    def _transition_into(
        self,
        kind: int,
        members: IntArray,
        index: IntArray | slice,
        pose: Pose,
        speed: PoseVelocity | None,
        context: Context,
    ) -> None:
        """Replace the target poses at ``index`` of ``pose`` (and ``speed``) by the transition's output."""
        elapsed = self.progress[members]
        if kind in (INERTIALIZE, SPRING):
            if speed is None:  # the offsets added in place, on the animated joints only
                self.offsets.apply(kind, _as_slice(members), index, pose, elapsed)
                return
            target, target_velocity = _take(pose, index), _take_velocity(speed, index)
            offsets, rates = self.offsets.full(kind, members, elapsed, self.joints)
            _assign(pose, index, offset_pose(target, offsets))
            _assign(speed, index, offset_velocity(target, target_velocity, offsets, rates))
            return
        if kind == DEAD_BLEND:
            target = _take(pose, index)
            done, done_velocity = dead_blend(
                _take(self.snapshot, members),
                _take_velocity(self.snapshot_velocity, members),
                target,
                elapsed,
                self.duration[members],
                self.half_life[members],
                None if speed is None else _take_velocity(speed, index),
            )
            _assign(pose, index, done)
            if speed is not None and done_velocity is not None:
                _assign(speed, index, done_velocity)
            return
        # crossfade, synced, frozen: blend a source (a live state or the snapshot) into the target
        alpha = np.clip(elapsed / self.duration[members], 0.0, 1.0)
        stacked, (source, target) = self.layers.take(2, members.size, self.joints)
        _assign(target, slice(None), _take(pose, index) if not isinstance(index, slice) else pose)
        _assign(source, slice(None), _take(self.snapshot, members))
        source_velocity = PoseVelocity.zeros((members.size, self.joints)) if speed is not None else None
        live = self.source[members] >= 0
        if live.any():
            picked = np.nonzero(live)[0]
            rows = members[picked]
            part = self._context(speed is not None, context.side)
            part_pose, part_velocity = _pose_buffer(rows.size, self.joints), None
            if speed is not None:
                part_velocity = PoseVelocity.zeros((rows.size, self.joints))
            self._states_into(
                self.source[rows],
                rows,
                self.source_phase[rows],
                self.source_elapsed[rows],
                part,
                part_pose,
                part_velocity,
            )
            _assign(source, picked, part_pose)
            if source_velocity is not None and part_velocity is not None:
                _assign(source_velocity, picked, part_velocity)
        weights = np.stack((1.0 - alpha, alpha))
        if isinstance(index, slice):
            _jobs.blend_layers(stacked, weights, None, self.graph.skeleton, out=pose)
        else:
            _assign(pose, index, _jobs.blend_layers(stacked, weights, None, self.graph.skeleton))
        if speed is None or source_velocity is None:
            return
        slope = np.where(alpha < 1.0, 1.0 / self.duration[members], 0.0)
        target_velocity = _take_velocity(speed, index)
        with trusted():
            speeds = PoseVelocity(
                *(
                    np.stack((getattr(source_velocity, f.name), getattr(target_velocity, f.name)))
                    for f in fields(PoseVelocity)
                )
            )
        _assign(speed, index, blend_velocity(stacked, speeds, weights, weight_rates=np.stack((-slope, slope))))


def _compare(values: FloatArray, op: str, value: float) -> BoolArray:
    if op == "<":
        return values < value
    if op == "<=":
        return values <= value
    if op == ">":
        return values > value
    if op == ">=":
        return values >= value
    if op == "==":
        return values == value
    return values != value


def _dominant(state: BoundState, parameters: Parameters, rows: IntArray) -> tuple[list[ClipNode], IntArray]:
    """The state's timing clips and, per character, the index of the heaviest one."""
    leaves = state.node.leaves(parameters, rows, state.synced)
    if not leaves:
        return [], np.full(rows.size, -1, dtype=np.intp)
    weights = np.stack([w for _, w in leaves])
    return [leaf for leaf, _ in leaves], np.argmax(weights, axis=0)


def marker_phase(source: Clip, target: Clip, phase: FloatArray) -> FloatArray:
    """The target's phase matching ``phase`` ``(K,)`` of ``source`` through markers of the same name.

    Between two consecutive shared markers of the source, the fraction of the way from one to
    the next is kept between the same two markers of the target (cyclically). Without a shared
    marker name, or without markers, the normalised phase is kept as it is.
    """
    source_markers = source.markers or {}
    target_markers = target.markers or {}
    shared = sorted(set(source_markers) & set(target_markers))
    if not shared or source.duration <= 0.0 or target.duration <= 0.0:
        return phase
    events = sorted((t, name) for name in shared for t in source_markers[name])
    times = np.array([t for t, _ in events])
    there = np.array([target_markers[name][0] for _, name in events])
    count = times.size
    clip_time = phase * source.duration
    k = np.searchsorted(times, clip_time, side="right") - 1  # last marker at or before
    k = np.where(k < 0, count - 1, k)
    start = np.where(times[k] <= clip_time, times[k], times[k] - source.duration)
    nxt = (k + 1) % count
    stop = np.where(nxt > k, times[nxt], times[nxt] + source.duration)
    if count == 1:
        stop = start + source.duration
    fraction = np.where(stop > start, (clip_time - start) / np.where(stop > start, stop - start, 1.0), 0.0)
    begin, end = there[k], there[nxt]
    end = np.where(end > begin, end, end + target.duration)
    return np.mod(begin + fraction * (end - begin), target.duration) / target.duration


# --- the runtime ------------------------------------------------------------------------------------


class GraphRuntime:
    """Runs a :class:`BoundGraph` on ``num_characters`` characters (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from engine.graph import bind_graph, parse_graph
    >>> from engine.procedural.mannequin import build_mannequin
    >>> mannequin = build_mannequin()
    >>> document = {
    ...     "parameters": {"speed": {"type": "float"}},
    ...     "start": "idle",
    ...     "states": {
    ...         "idle": {"motion": {"clip": "idle"},
    ...                  "transitions": [{"to": "walk", "kind": "inertialize", "duration": 0.3,
    ...                                   "conditions": [{"parameter": "speed", "op": ">", "value": 0.5}]}]},
    ...         "walk": {"motion": {"clip": "walk"}},
    ...     },
    ... }
    >>> graph = bind_graph(parse_graph(document), mannequin.skeleton, mannequin.clips)
    >>> runtime = GraphRuntime(graph, num_characters=3)
    >>> runtime.parameters.set_float("speed", [0.0, 1.0, 1.0])
    >>> runtime.update(1 / 60)
    >>> runtime.state_names()
    ['idle', 'walk', 'walk']
    >>> runtime.model.shape
    (3, 25, 4, 4)
    """

    def __init__(self, graph: BoundGraph, num_characters: int = 1) -> None:
        if int(num_characters) < 1:
            raise InvalidInputError(f"num_characters must be at least 1, got {num_characters}")
        self.graph = graph
        self.num_characters = int(num_characters)
        self.parameters = Parameters(graph.definition.parameters, self.num_characters)
        self.machines: dict[str, MachineRuntime] = {}
        for name in graph.machines:
            self.machines[name] = MachineRuntime(graph, name, self.parameters, self.machines)
        self.root = self.machines["root"]
        self._all = np.arange(self.num_characters)
        self.clock = 0.0
        """Seconds of ``dt`` summed over the updates (of character 0 when ``dt`` varies)."""
        self.local_pose = _pose_buffer(self.num_characters, graph.skeleton.num_joints)
        """The local pose ``(C, J)`` of the last update, written in place (batch-innermost memory)."""
        self.root_translation = np.zeros((self.num_characters, 3))
        """With a root-motion joint (:func:`bind_graph`): its planar travel ``(x, 0, z)`` ``(C, 3)`` during
        the last update, in the character's frame (the root's heading), metres; zeros otherwise.

        The trapezoidal integral of the output's root velocity, whose planar part the clips keep
        while they play in place: blended and inertialized with the pose, so transitions change
        the travel smoothly. Move the character by its heading applied to it, then turn it by
        :attr:`root_yaw`."""
        self.root_yaw = np.zeros(self.num_characters)
        """With a root-motion joint: its turn about +Y ``(C,)`` during the last update, radians."""
        self._step = np.zeros(self.num_characters)
        self._rate = np.zeros((self.num_characters, 3))  # root velocity x, z and yaw rate at the last evaluation
        self._rate_before = self._rate
        self.evaluate()
        self.model = _jobs.model_matrices(graph.skeleton, self.local_pose)
        """Model-space matrices ``(C, J, 4, 4)`` of :attr:`local_pose`, written in place."""

    def __repr__(self) -> str:
        return f"GraphRuntime({self.graph.definition.name!r}, {self.num_characters} characters)"

    def advance(self, dt: Any) -> None:
        """The graph logic of one update: choose, advance and start transitions (no pose).

        ``dt``: seconds, ``>= 0``, scalar or one per character ``(C,)``.
        """
        step = np.broadcast_to(as_array(dt, "dt"), (self.num_characters,)).astype(np.float64)
        if np.any(step < 0.0):
            raise InvalidInputError(f"dt must be >= 0 seconds, got {float(step.min())}")
        with trusted():
            self.root.step(step, np.ones(self.num_characters, dtype=bool))
        self.clock += float(step[0])
        self._step, self._rate_before = step, self._rate

    def evaluate(self) -> Pose:
        """The local pose ``(C, J)`` of every character now (also kept in :attr:`local_pose`).

        With a root-motion joint, also its travel since the last :meth:`advance`
        (:attr:`root_translation`, :attr:`root_yaw`): the pose is evaluated with its velocity,
        and the joint's planar offset a transition leaves is taken out with the clips'.
        """
        joint = self.graph.root_motion
        with trusted():
            if joint is None:
                self.root.evaluate(self._all, out=self.local_pose)
                return self.local_pose
            _, velocity = self.root.evaluate(self._all, velocity=True, out=self.local_pose)
            assert velocity is not None
            linear = velocity.linear[:, joint]
            self._rate = np.stack((linear[:, 0], linear[:, 2], velocity.angular[:, joint, 1]), axis=1)
            travel = 0.5 * (self._rate_before + self._rate) * self._step[:, None]
            self.root_translation = np.stack((travel[:, 0], np.zeros(self.num_characters), travel[:, 1]), axis=1)
            self.root_yaw = travel[:, 2]
            pose = self.local_pose
            pose.translations[:, joint], pose.rotations[:, joint] = remove_planar(
                pose.translations[:, joint], pose.rotations[:, joint]
            )
        return self.local_pose

    def update(self, dt: Any) -> None:
        """Advance by ``dt`` and pose every character: :attr:`local_pose` and :attr:`model` ``(C, J, 4, 4)``."""
        self.advance(dt)
        self.evaluate()
        with trusted():
            _jobs.model_matrices(self.graph.skeleton, self.local_pose, out=self.model)

    def output_velocity(self, characters: Any = None) -> PoseVelocity:
        """Velocity of the output pose now for the selected characters ``(K, J)``."""
        rows = self.parameters.select(characters)
        with trusted():
            _, velocity = self.root.evaluate(rows, velocity=True)
        assert velocity is not None
        return velocity

    def state_names(self, machine: str = "root") -> list[str]:
        """The current state of every character in ``machine``, by name."""
        runtime = self.machines[machine]
        return [runtime.bound.states[s].name for s in runtime.state]

    def in_transition(self, machine: str = "root") -> BoolArray:
        """Whether each character has a transition in progress in ``machine`` ``(C,)``."""
        return self.machines[machine].kind != NONE

    def reset(self, characters: Any = None) -> None:
        """Put the selected characters back in the start state at time 0."""
        self.root.reset(self.parameters.select(characters))
