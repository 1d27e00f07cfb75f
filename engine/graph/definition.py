"""Graph definitions: plain data read from a JSON or TOML document, validated with document paths.

A graph document describes one animation state machine (and optionally named sub-machines) by
names only: clips are named, not loaded, so one document serves any character that has those
clips (:func:`engine.graph.runtime.bind_graph` checks that). Every error is a
:class:`GraphDefinitionError` whose one-line message names the file and the path inside it::

    graph.json: states.run.transitions[2].to: unknown state 'sprint'; the states are ['idle', 'run']

The document (TOML shown; JSON has the same structure)::

    name = "locomotion"               # optional
    start = "idle"                    # the state every character starts in

    [parameters]                      # per-character inputs of the machine
    speed = { type = "float", default = 0.0 }
    grounded = { type = "bool", default = true }
    jump = { type = "trigger" }       # set by the game, consumed by the transition that uses it

    [masks]                           # per-joint weights: subtrees by joint name
    upper = { joints = ["spine"] }    # optional: exclude = [...], weight = 1.0

    [states.idle]
    motion = { clip = "idle" }        # optional: speed, loop = true, sync = true

    [states.move]
    motion = { blend1d = "speed", points = [{ at = 1.2, clip = "walk" }, { at = 3.0, clip = "run" }] }
    transitions = [{ to = "idle", kind = "inertialize", duration = 0.3,
                     conditions = [{ parameter = "speed", op = "<", value = 0.1 }] }]

    [[any_state]]                     # checked before the current state's own transitions
    to = "jump"
    conditions = [{ parameter = "jump" }]

Motions (the node types of a state's blend tree); each is a table with exactly one kind key:

- ``{ clip = NAME, speed = 1.0, loop = true, sync = true }``: a clip. Synced clips of a state
  share its normalised phase (gait cycles stay in step); ``sync = false`` clips play on the
  state's own clock.
- ``{ blend1d = FLOAT_PARAM, points = [{ at = X, <motion> }, ...] }``: a 1-D blend space,
  positions strictly increasing.
- ``{ blend2d = [PARAM_X, PARAM_Y], mode = "directional" | "cartesian", points = [{ at = [X, Y],
  <motion> }, ...] }``: a 2-D freeform blend space (:mod:`engine.anim.blendspace`).
- ``{ additive = <motion>, base = <motion>, weight = 1.0 | PARAM, mask = MASK, reference =
  "first_frame" | "rest" }``: the additive motion's difference from its reference added on top.
- ``{ layer = <motion>, base = <motion>, mask = MASK, weight = 1.0 | PARAM }``: the layer
  overrides the base where the mask is set (upper body over legs).
- ``{ machine = NAME }``: a sub-machine from ``[machines.NAME]`` (``start``, ``states``,
  ``any_state``), with its own current state per character.

Transitions: ``to`` (a state of the same machine), ``kind`` (``crossfade`` (default), ``frozen``,
``synced``, ``inertialize``, ``spring``, ``dead_blend``), ``duration`` (seconds, default 0.25;
a spring has no end and takes ``half_life`` instead), ``half_life`` (``spring``: the offset's,
default 0.08 s; ``dead_blend``: the extrapolated velocity's, default the duration),
``exit_time`` (the state's normalised time, ``0 <= exit_time <= 1``, at which the transition may
fire; without one it fires as soon as its conditions hold), ``conditions`` (all must hold),
``offset`` (the normalised time the target state starts at, default 0; not for ``synced``, which
starts at the source's phase) and ``interruptible`` (default true: later transitions may start
before this one ends).

Conditions: ``{ parameter = FLOAT, op = "<" | "<=" | ">" | ">=" | "==" | "!=", value = X }``,
``{ parameter = BOOL, value = true }`` (``op`` ``==`` or ``!=``, ``value`` default true), and
``{ parameter = TRIGGER }``.

Zero-duration transitions without an exit time may not form a cycle (the machine would flip
between states every frame); sub-machines may not contain themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.errors import AssetError

KINDS = ("crossfade", "frozen", "synced", "inertialize", "spring", "dead_blend")
PARAMETER_TYPES = ("float", "bool", "trigger")
FLOAT_OPS = ("<", "<=", ">", ">=", "==", "!=")
BOOL_OPS = ("==", "!=")
MOTION_KINDS = ("clip", "blend1d", "blend2d", "additive", "layer", "machine")
BLEND2D_MODES = ("directional", "cartesian")
REFERENCES = ("first_frame", "rest")

DEFAULT_DURATION = 0.25
"""Seconds a transition lasts when the document does not say."""
DEFAULT_SPRING_HALF_LIFE = 0.08
"""Half-life of a ``spring`` transition's offset when the document does not say, seconds."""


class GraphDefinitionError(AssetError):
    """A graph document is malformed; the message names the file and the path in the document."""


# --- the definition: plain frozen data --------------------------------------------------------------


@dataclass(frozen=True)
class Parameter:
    """A per-character input: ``type`` is ``float``, ``bool`` or ``trigger``."""

    name: str
    type: str
    default: float


@dataclass(frozen=True)
class Mask:
    """Per-joint weights: ``weight`` on the subtrees of ``joints`` minus those of ``exclude``."""

    name: str
    joints: tuple[str, ...]
    exclude: tuple[str, ...]
    weight: float
    path: str


@dataclass(frozen=True)
class ClipMotion:
    """A clip played at ``speed``, looping or once, on the state's shared phase (``sync``) or not."""

    clip: str
    speed: float
    loop: bool
    sync: bool
    path: str


@dataclass(frozen=True)
class Blend1DMotion:
    """Children placed at ``positions`` on the axis of float parameter ``parameter``."""

    parameter: str
    positions: tuple[float, ...]
    children: tuple[Motion, ...]
    path: str


@dataclass(frozen=True)
class Blend2DMotion:
    """Children placed at 2-D ``positions`` over two float parameters, ``mode`` directional or cartesian."""

    parameters: tuple[str, str]
    mode: str
    positions: tuple[tuple[float, float], ...]
    children: tuple[Motion, ...]
    path: str


@dataclass(frozen=True)
class AdditiveMotion:
    """``additive``'s difference from its reference added to ``base`` at ``weight`` (number or parameter)."""

    base: Motion
    additive: Motion
    weight: float | str
    mask: str | None
    reference: str
    path: str


@dataclass(frozen=True)
class LayerMotion:
    """``layer`` over ``base`` where ``mask`` is set, at ``weight`` (number or parameter)."""

    base: Motion
    layer: Motion
    mask: str
    weight: float | str
    path: str


@dataclass(frozen=True)
class MachineMotion:
    """The output of the sub-machine called ``machine``."""

    machine: str
    path: str


Motion = ClipMotion | Blend1DMotion | Blend2DMotion | AdditiveMotion | LayerMotion | MachineMotion


@dataclass(frozen=True)
class Condition:
    """``parameter op value`` (floats, bools) or "trigger ``parameter`` is set"."""

    parameter: str
    op: str
    value: float
    path: str


@dataclass(frozen=True)
class Transition:
    """A transition to state ``target`` (from ``source``, or from any state when ``source`` is ``None``)."""

    source: str | None
    target: str
    kind: str
    duration: float
    half_life: float
    exit_time: float | None
    conditions: tuple[Condition, ...]
    interruptible: bool
    offset: float
    path: str


@dataclass(frozen=True)
class State:
    """A state: its motion, a playback speed and its outgoing transitions (in priority order)."""

    name: str
    motion: Motion
    speed: float
    transitions: tuple[Transition, ...]
    path: str


@dataclass(frozen=True)
class Machine:
    """States (in document order), the start state, and the any-state transitions."""

    name: str
    start: str
    states: dict[str, State]
    any_state: tuple[Transition, ...]
    path: str


@dataclass(frozen=True)
class GraphDefinition:
    """A whole document: parameters, masks, the root machine and the named sub-machines."""

    name: str
    source: str
    parameters: dict[str, Parameter]
    masks: dict[str, Mask]
    root: Machine
    machines: dict[str, Machine]

    def error(self, where: str, message: str) -> GraphDefinitionError:
        """A :class:`GraphDefinitionError` about the document path ``where``."""
        return GraphDefinitionError(message, file=self.source, where=where)

    def describe(self) -> str:
        """A readable summary: parameters, masks, then each machine's states and transitions."""
        lines = [f"graph {self.name!r} ({self.source})"]
        if self.parameters:
            parts = [
                f"{p.name}: {p.type}" + ("" if p.type == "trigger" else f" = {_show(p)}")
                for p in self.parameters.values()
            ]
            lines.append("parameters: " + ", ".join(parts))
        lines.extend(
            f"mask {mask.name}: {list(mask.joints)} minus {list(mask.exclude)} at {mask.weight:g}"
            for mask in self.masks.values()
        )
        for machine in (self.root, *self.machines.values()):
            title = "machine" if machine is self.root else f"sub-machine {machine.name!r}"
            lines.append(f"{title}: start {machine.start!r}, {len(machine.states)} states")
            for state in machine.states.values():
                speed = "" if state.speed == 1.0 else f" (speed {state.speed:g})"
                lines.append(f"  state {state.name}{speed}: {describe_motion(state.motion)}")
                lines.extend(f"    -> {_transition_text(t)}" for t in state.transitions)
            lines.extend(f"  any state -> {_transition_text(t)}" for t in machine.any_state)
        return "\n".join(lines)


def _show(parameter: Parameter) -> str:
    return str(bool(parameter.default)).lower() if parameter.type == "bool" else f"{parameter.default:g}"


def describe_motion(motion: Motion) -> str:
    """One line for a motion tree, e.g. ``blend1d(speed: 0 idle, 1.2 walk, 3 run)``."""
    if isinstance(motion, ClipMotion):
        extras = [f"x{motion.speed:g}"] if motion.speed != 1.0 else []
        extras += [] if motion.loop else ["once"]
        extras += [] if motion.sync else ["unsynced"]
        return motion.clip + (f" [{', '.join(extras)}]" if extras else "")
    if isinstance(motion, Blend1DMotion):
        inner = ", ".join(f"{p:g} {describe_motion(c)}" for p, c in zip(motion.positions, motion.children, strict=True))
        return f"blend1d({motion.parameter}: {inner})"
    if isinstance(motion, Blend2DMotion):
        inner = ", ".join(
            f"({x:g}, {y:g}) {describe_motion(c)}" for (x, y), c in zip(motion.positions, motion.children, strict=True)
        )
        return f"blend2d {motion.mode}({motion.parameters[0]}, {motion.parameters[1]}: {inner})"
    if isinstance(motion, AdditiveMotion):
        mask = f" on {motion.mask}" if motion.mask else ""
        return f"{describe_motion(motion.base)} + additive {describe_motion(motion.additive)} x {motion.weight}{mask}"
    if isinstance(motion, LayerMotion):
        return (
            f"{describe_motion(motion.base)} under {describe_motion(motion.layer)} on {motion.mask} x {motion.weight}"
        )
    return f"machine {motion.machine}"


def _transition_text(transition: Transition) -> str:
    timing = f"half-life {transition.half_life:g} s" if transition.kind == "spring" else f"{transition.duration:g} s"
    if transition.kind == "dead_blend":
        timing += f", half-life {transition.half_life:g} s"
    parts = [f"{transition.target} ({transition.kind}, {timing})"]
    if transition.exit_time is not None:
        parts.append(f"at exit time {transition.exit_time:g}")
    if transition.conditions:
        parts.append("when " + " and ".join(_condition_text(c) for c in transition.conditions))
    if transition.offset:
        parts.append(f"from {transition.offset:g}")
    if not transition.interruptible:
        parts.append("uninterruptible")
    return " ".join(parts)


def _condition_text(condition: Condition) -> str:
    if condition.op == "set":
        return condition.parameter
    value = (
        str(bool(condition.value)).lower()
        if condition.op in BOOL_OPS and condition.value in (0.0, 1.0)
        else f"{condition.value:g}"
    )
    return f"{condition.parameter} {condition.op} {value}"
