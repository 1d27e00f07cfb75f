"""``ossa graph check FILE --model M``: validate an animation graph against a character and print it.

The document is read and checked (:func:`~engine.graph.reader.load_graph`), then bound to the
character's skeleton and clips (:func:`~engine.graph.binding.bind_graph`); any error is one line
naming the file and the path in it (an unknown clip with the closest name the character has). On
success the graph is printed (parameters, masks, states with their motions, transitions), with the
character's clips it uses and warnings about states no transition reaches.

``--model mannequin`` is the generated mannequin with its strafe clips
(:mod:`engine.procedural.strafe`); any other value is a glTF/GLB/BVH file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.anim.clip import Clip
from engine.anim.skeleton import Skeleton
from engine.graph import BoundGraph, GraphDefinition, bind_graph, load_graph
from engine.graph.definition import Machine, Transition
from engine.io import load_character
from engine.io.bvh_character import load_bvh_character
from engine.procedural.mannequin import build_mannequin
from engine.procedural.strafe import build_strafe_clips

MANNEQUIN = "mannequin"


def add_parser(subcommands: Any) -> None:
    """Add ``graph``."""
    parser = subcommands.add_parser("graph", help="animation graphs: 'check FILE --model M' validates and prints one")
    parser.add_argument("action", choices=["check"], help="check: validate FILE against the model and print it")
    parser.add_argument("file", type=Path, help="the graph document (.json or .toml)")
    parser.add_argument(
        "--model",
        required=True,
        help=f"the character: a .gltf/.glb/.bvh file, or {MANNEQUIN!r} (the generated mannequin with strafe clips)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Check ``args.file`` against ``args.model`` and print the graph."""
    definition = load_graph(args.file)
    name, skeleton, clips = character(args.model)
    graph = bind_graph(definition, skeleton, clips)
    print(definition.describe())
    print(summary(graph, name, sorted(clips)))
    for warning in unreachable_states(definition):
        print(f"warning: {warning}")
    print("ok")
    return 0


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
