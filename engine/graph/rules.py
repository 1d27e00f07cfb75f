"""The whole-graph rules of a graph document, checked once its machines are read.

No cycle of zero-duration transitions without exit time (it would never settle), and no machine
that contains itself through the machines its states play. ``fail`` builds the error for a
document path (:meth:`engine.graph.fields.FieldReader.fail`).
"""

from __future__ import annotations

from collections.abc import Callable

from engine.graph.definition import (
    AdditiveMotion,
    Blend1DMotion,
    Blend2DMotion,
    GraphDefinition,
    GraphDefinitionError,
    LayerMotion,
    Machine,
    MachineMotion,
    Motion,
    Transition,
)
from engine.graph.fields import join

Fail = Callable[[str, str], GraphDefinitionError]
"""Builds the error for a message at a document path."""


def check_instant_cycles(machine: Machine, fail: Fail) -> None:
    """Zero-duration transitions without exit time must not lead back to where they started."""
    edges: dict[str, list[Transition]] = {name: [] for name in machine.states}
    for state in machine.states.values():
        edges[state.name] += [t for t in state.transitions if _instant(t)]
        edges[state.name] += [t for t in machine.any_state if _instant(t) and t.target != state.name]
    visiting: list[str] = []
    done: set[str] = set()
    via: list[Transition] = []

    def visit(name: str) -> None:
        visiting.append(name)
        for transition in edges[name]:
            if transition.target in visiting:
                loop = [*visiting[visiting.index(transition.target) :], transition.target]
                first = (
                    via[visiting.index(transition.target)]
                    if visiting.index(transition.target) < len(via)
                    else transition
                )
                raise fail(
                    first.path,
                    f"zero-duration transitions form a cycle {' -> '.join(loop)} (it would never settle)",
                )
            if transition.target not in done:
                via.append(transition)
                visit(transition.target)
                via.pop()
        visiting.pop()
        done.add(name)

    for name in machine.states:
        if name not in done:
            visit(name)


def check_machine_nesting(definition: GraphDefinition, fail: Fail) -> None:
    """A machine may not contain itself through the machines its states play."""

    def used(machine: Machine) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for state in machine.states.values():
            found += _machines_in(state.motion)
        return found

    def visit(machine: Machine, chain: list[str]) -> None:
        for name, where in used(machine):
            if name in chain:
                raise fail(where, f"machine {name!r} contains itself: {' -> '.join([*chain, name])}")
            visit(definition.machines[name], [*chain, name])

    visit(definition.root, ["root"])
    for name, machine in definition.machines.items():
        visit(machine, [name])


def _instant(transition: Transition) -> bool:
    return transition.duration == 0.0 and transition.exit_time is None


def _machines_in(motion: Motion) -> list[tuple[str, str]]:
    if isinstance(motion, MachineMotion):
        return [(motion.machine, join(motion.path, "machine"))]
    if isinstance(motion, (Blend1DMotion, Blend2DMotion)):
        return [found for child in motion.children for found in _machines_in(child)]
    if isinstance(motion, AdditiveMotion):
        return _machines_in(motion.base) + _machines_in(motion.additive)
    if isinstance(motion, LayerMotion):
        return _machines_in(motion.base) + _machines_in(motion.layer)
    return []
