"""Animation graphs: state machines with blend trees over many characters, defined by plain data.

- :mod:`engine.graph.definition`: the document's types (JSON or TOML) and its rules;
  :mod:`engine.graph.reader` reads and validates it;
- :mod:`engine.graph.binding`: a definition bound to a character, its blend trees compiled into
  flat layers (:mod:`engine.graph.flat`) and its transitions into tables
  (:mod:`engine.graph.transitions`);
- :mod:`engine.graph.machine`: one machine's per-character states, clocks and transitions;
- :mod:`engine.graph.runtime`: :class:`GraphRuntime`, a controller of a
  :class:`~engine.player.Player` that runs a bound graph on ``C`` characters;
- :mod:`engine.graph.parameters`: the inputs; :mod:`engine.graph.oracle`: the recursive
  evaluator of nested blend trees, the tests' reference for the flat layers.

The stateless math lives in :mod:`engine.anim` (:mod:`~engine.anim.blendspace`,
:mod:`~engine.anim.inertialization`, :mod:`~engine.anim.velocity`); posing is the player's.
What ``ossa graph check`` reports is :mod:`engine.cli.graph`.
"""

from engine.graph.binding import BoundGraph, bind_graph
from engine.graph.definition import GraphDefinition, GraphDefinitionError
from engine.graph.events import GraphMarkerEvent
from engine.graph.parameters import Parameters
from engine.graph.reader import load_graph, parse_graph
from engine.graph.runtime import GraphRuntime

__all__ = [
    "BoundGraph",
    "GraphDefinition",
    "GraphDefinitionError",
    "GraphMarkerEvent",
    "GraphRuntime",
    "Parameters",
    "bind_graph",
    "load_graph",
    "parse_graph",
]
