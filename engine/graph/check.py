"""What ``ossa graph check FILE --model M`` reports: a graph bound to a character, described.

:func:`character` loads the character (``mannequin`` is the generated mannequin with its strafe
clips, :mod:`engine.procedural.strafe`; any other value is a glTF/GLB/BVH file);
:func:`~engine.graph.runtime.bind_graph` checks the graph against it; :func:`summary` and
:func:`unreachable_states` say what it plays and which states no transition reaches. The command
itself is :mod:`engine.cli.graph`.
"""

from __future__ import annotations

from pathlib import Path

from engine.anim.clip import Clip
from engine.anim.skeleton import Skeleton
from engine.graph.definition import GraphDefinition, Machine, Transition
from engine.graph.runtime import BoundGraph
from engine.io import load_character
from engine.io.bvh_character import load_bvh_character
from engine.procedural.mannequin import build_mannequin
from engine.procedural.strafe import build_strafe_clips

MANNEQUIN = "mannequin"


def character(model: str) -> tuple[str, Skeleton, dict[str, Clip]]:
    """The character's name, skeleton and clips for ``--model``."""
    if model == MANNEQUIN:
        mannequin = build_mannequin()
        return "the mannequin", mannequin.skeleton, {**mannequin.clips, **build_strafe_clips(mannequin.skeleton)}
    loaded = load_bvh_character(model) if Path(model).suffix.lower() == ".bvh" else load_character(model)
    return str(model), loaded.skeleton, dict(loaded.clips)


def summary(graph: BoundGraph, name: str, clips: list[str]) -> str:
    """One line: the character, its joints, and the clips the graph plays."""
    used = sorted(graph.played)
    unused = [c for c in clips if c not in used]
    return f"bound to {name}: {graph.skeleton.num_joints} joints; plays {len(used)} clips ({', '.join(used)})" + (
        f"; not played: {', '.join(unused)}" if unused else ""
    )


def unreachable_states(definition: GraphDefinition) -> list[str]:
    """States that no transition can reach from their machine's start state."""
    found = []
    for machine in (definition.root, *definition.machines.values()):
        reached = _reachable(machine)
        prefix = "" if machine is definition.root else f"machines.{machine.name}."
        found += [
            f"{prefix}states.{state}: unreachable from the start state {machine.start!r}"
            for state in machine.states
            if state not in reached
        ]
    return found


def _reachable(machine: Machine) -> set[str]:
    targets: dict[str, list[Transition]] = {name: list(state.transitions) for name, state in machine.states.items()}
    reached = {machine.start} | {t.target for t in machine.any_state}
    frontier = list(reached)
    while frontier:  # a walk over the states' transitions (build time, a handful of states)
        for transition in targets[frontier.pop()]:
            if transition.target not in reached:
                reached.add(transition.target)
                frontier.append(transition.target)
    return reached
