"""Animation graphs: state machines with blend trees over many characters, defined by plain data.

- :mod:`engine.graph.definition`: the document (JSON or TOML) and its validation;
- :mod:`engine.graph.runtime`: binding a definition to a character and running it on ``C``
  characters (:class:`GraphRuntime`);
- :mod:`engine.graph.nodes`: the blend-tree nodes; :mod:`engine.graph.parameters`: the inputs;
- :mod:`engine.graph.check`: what ``ossa graph check`` reports (the command: :mod:`engine.cli.graph`).

The stateless math lives in :mod:`engine.anim` (:mod:`~engine.anim.velocity`,
:mod:`~engine.anim.inertialization`, :mod:`~engine.anim.blendspace`).
"""

from engine.graph.definition import GraphDefinition, GraphDefinitionError, load_graph, parse_graph
from engine.graph.parameters import Parameters
from engine.graph.runtime import BoundGraph, GraphRuntime, bind_graph

__all__ = [
    "BoundGraph",
    "GraphDefinition",
    "GraphDefinitionError",
    "GraphRuntime",
    "Parameters",
    "bind_graph",
    "load_graph",
    "parse_graph",
]
