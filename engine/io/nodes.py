"""glTF nodes → one validated table of the node tree and rest transforms; the default scene's order.

:func:`read_nodes` checks the ``children`` references (one parent per node, no cycles), reads
every node's rest transform (TRS, or a matrix decomposed into TRS) and composes rest world
matrices. :func:`read_default_scene` picks the scene and lists its nodes depth-first.
:func:`skeleton_over` turns any parent-closed list of nodes into a runtime
:class:`~engine.anim.skeleton.Skeleton`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from engine.anim.humanoid import DECLARED_REQUIRED
from engine.anim.skeleton import Skeleton
from engine.errors import DegenerateInputError
from engine.io.fields import numbers, unique_names, unit_quaternions
from engine.io.gltf import GltfDocument, _items
from engine.math._checks import FloatArray, IntArray, readonly_copy
from engine.math.mat import matrix_from_trs, trs_from_matrix


@dataclass(frozen=True, eq=False)
class Nodes:
    """Every node of a file, checked: the tree, unique names and rest transforms.

    Attributes
    ----------
    parents
        ``(N,)`` parent node of each node, ``-1`` for a root.
    children
        Child nodes of each node, in the file's order.
    names
        Unique name of each node (``node<i>`` when unnamed, ``#<i>`` appended to repeats).
    translations, rotations, scales
        ``(N, 3)``, unit ``(N, 4)``, ``(N, 3)`` rest TRS (matrices decomposed).
    world
        ``(N, 4, 4)`` rest world matrix of each node.
    """

    parents: IntArray
    children: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]
    translations: FloatArray
    rotations: FloatArray
    scales: FloatArray
    world: FloatArray

    @property
    def count(self) -> int:
        """Number of nodes ``N`` in the file."""
        return int(self.parents.size)


def read_nodes(doc: GltfDocument) -> Nodes:
    """Read and check every node of ``doc`` (see the module docstring)."""
    count = doc.count("nodes")
    nodes = _items(doc.gltf.nodes)
    children = tuple(
        tuple(
            doc.index(value, count, f"nodes[{i}].children[{k}]", "nodes") for k, value in enumerate(_items(n.children))
        )
        for i, n in enumerate(nodes)
    )
    parents = _parents(doc, children)
    rest = [_node_trs(doc, i) for i in range(count)]
    translations = np.array([r[0] for r in rest]).reshape(-1, 3)
    rotations = np.array([r[1] for r in rest]).reshape(-1, 4)
    scales = np.array([r[2] for r in rest]).reshape(-1, 3)
    world = _rest_world(doc, parents, children, matrix_from_trs(translations, rotations, scales))
    return Nodes(
        parents=readonly_copy(parents),
        children=children,
        names=tuple(unique_names([n.name for n in nodes], "node")),
        translations=readonly_copy(translations),
        rotations=readonly_copy(rotations),
        scales=readonly_copy(scales),
        world=readonly_copy(world),
    )


def _parents(doc: GltfDocument, children: Sequence[Sequence[int]]) -> IntArray:
    """Parent of every node (``-1`` for roots); one parent per node, no cycles."""
    count = len(children)
    parents = np.full(count, -1, dtype=np.intp)
    for i, kids in enumerate(children):
        for k, child in enumerate(kids):
            where = f"nodes[{i}].children[{k}]"
            if child == i:
                raise doc.error(f"node {i} lists itself as a child", where)
            if parents[child] == i:
                raise doc.error(f"node {child} is listed twice in the children of node {i}", where)
            if parents[child] >= 0:
                raise doc.error(
                    f"node {child} has two parents (nodes {parents[child]} and {i}); "
                    "a node may be the child of one node only",
                    where,
                )
            parents[child] = i
    state = np.zeros(count, dtype=np.int8)  # 0 unknown, 1 on the current path, 2 reaches a root
    for start in range(count):
        path: list[int] = []
        node = start
        while node >= 0 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = int(parents[node])
        if node >= 0 and state[node] == 1:
            cycle = [*path[path.index(node) :], node]
            raise doc.error("the node hierarchy has a cycle: " + " → ".join(f"nodes[{n}]" for n in cycle), "nodes")
        state[path] = 2
    return parents


def _node_trs(doc: GltfDocument, i: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Rest (translation, unit rotation, scale) of node ``i`` from its TRS or matrix."""
    node, where = doc.gltf.nodes[i], f"nodes[{i}]"
    t = numbers(doc, node.translation, 3, f"{where}.translation", [0.0, 0.0, 0.0])
    r = numbers(doc, node.rotation, 4, f"{where}.rotation", [0.0, 0.0, 0.0, 1.0])
    s = numbers(doc, node.scale, 3, f"{where}.scale", [1.0, 1.0, 1.0])
    r = unit_quaternions(doc, r[None], f"{where}.rotation")[0]
    if node.matrix is None:
        return t, r, s
    m = numbers(doc, node.matrix, 16, f"{where}.matrix", None).reshape(4, 4).T  # column-major
    if any(v is not None for v in (node.translation, node.rotation, node.scale)):
        raise doc.error("a node may have a matrix or translation/rotation/scale, not both", where)
    if np.abs(m[3] - [0.0, 0.0, 0.0, 1.0]).max() > 1e-6:
        raise doc.error(f"matrix must be affine (last row 0 0 0 1), got last row {m[3].tolist()}", f"{where}.matrix")
    try:
        t, r, s = trs_from_matrix(m)
    except DegenerateInputError:
        raise doc.error(
            "matrix has a zero-length basis column; Ossa cannot decompose it into TRS", f"{where}.matrix"
        ) from None
    error = np.abs(matrix_from_trs(t, r, s) - m).max()
    if error > 1e-5 * max(1.0, float(np.abs(m).max())):
        raise doc.error(
            f"matrix is not decomposable into translation/rotation/scale (shear: recomposition off by {error:.3g})",
            f"{where}.matrix",
        )
    return t, r, s


def _rest_world(
    doc: GltfDocument, parents: IntArray, children: Sequence[Sequence[int]], local: FloatArray
) -> FloatArray:
    """``(N, 4, 4)`` rest world matrix of every node; an overflowing one is an error."""
    world = np.zeros_like(local)
    roots = [int(n) for n in np.nonzero(parents < 0)[0]]
    for n in depth_first(roots, lambda n: children[n]):
        p = int(parents[n])
        with np.errstate(over="ignore", invalid="ignore"):
            world[n] = local[n] if p < 0 else world[p] @ local[n]
        if not np.isfinite(world[n]).all():
            raise doc.error(
                "the node's rest world transform overflows: the translations and scales down to it are too large",
                f"nodes[{n}]",
            )
    return world


def read_default_scene(doc: GltfDocument, nodes: Nodes) -> tuple[int | None, tuple[int, ...]]:
    """The default scene's index and its nodes depth-first.

    The index is the file's ``scene``, else 0, or ``None`` for a file without scenes, whose every
    root node is then used.
    """
    scene_count = doc.count("scenes")
    scene = doc.gltf.scene
    if scene is not None:
        scene = doc.index(scene, scene_count, "scene", "scenes")
    elif scene_count:
        scene = 0
    if scene is None:
        roots = [int(n) for n in np.nonzero(nodes.parents < 0)[0]]
    else:
        roots = []
        for k, value in enumerate(_items(doc.gltf.scenes[scene].nodes)):
            where = f"scenes[{scene}].nodes[{k}]"
            node = doc.index(value, nodes.count, where, "nodes")
            if nodes.parents[node] >= 0:
                raise doc.error(f"node {node} is not a root: it is a child of node {nodes.parents[node]}", where)
            if node in roots:
                raise doc.error(f"node {node} is listed twice", where)
            roots.append(node)
    return scene, tuple(depth_first(roots, lambda n: nodes.children[n]))


def joint_trees(doc: GltfDocument, nodes: Nodes, order: Sequence[int]) -> tuple[int, ...]:
    """The trees outside ``order`` (the default scene) that hold joints of skins its mesh nodes use, depth-first.

    The spec asks nothing of where a skin's joints are, and the Asset Generator's
    Animation_Skin_03 keeps them out of the scene's nodes: their nodes join the hierarchy (after
    the scene's, as further roots) so the skinned mesh follows them, but draw no mesh of theirs.
    """
    in_scene = set(order)
    roots: list[int] = []
    for n in order:
        skin = doc.json["nodes"][n].get("skin")
        if skin is None or doc.json["nodes"][n].get("mesh") is None:
            continue
        skin = doc.index(skin, doc.count("skins"), f"nodes[{n}].skin", "skins")
        for k, joint in enumerate(doc.json["skins"][skin].get("joints", [])):
            node = doc.index(joint, nodes.count, f"skins[{skin}].joints[{k}]", "nodes")
            while nodes.parents[node] >= 0:
                node = int(nodes.parents[node])
            if node not in in_scene and node not in roots:
                roots.append(node)
    return tuple(depth_first(roots, lambda n: nodes.children[n]))


def depth_first(roots: Sequence[int], children: Callable[[int], Iterable[int]]) -> list[int]:
    """``roots`` and their descendants in depth-first pre-order (children in the order given)."""
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed([int(c) for c in children(node)]))
    return order


def skeleton_over(
    nodes: Nodes, order: Sequence[int], inverse_bind: FloatArray | None = None, humanoid: Mapping[int, str] = {}
) -> Skeleton:
    """A :class:`Skeleton` over glTF nodes ``order`` (parents listed before children).

    Parents outside ``order`` make roots; rest poses are the nodes' rest TRS. ``humanoid`` (glTF
    node → body role, a VRM bone map) goes with the skeleton when ``order`` holds every node of
    the roles a bone map must give (:data:`~engine.anim.humanoid.DECLARED_REQUIRED`).
    """
    position = {n: i for i, n in enumerate(order)}
    index = np.asarray(order, dtype=np.intp)
    roles = {role: nodes.names[n] for n, role in humanoid.items() if n in position}
    complete = all(role in roles for role in DECLARED_REQUIRED)
    return Skeleton(
        [nodes.names[n] for n in order],
        np.asarray([position.get(int(nodes.parents[n]), -1) for n in order], dtype=np.intp),
        nodes.translations[index],
        nodes.rotations[index],
        nodes.scales[index],
        inverse_bind,
        roles if complete else None,
    )
