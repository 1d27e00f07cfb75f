"""glTF document → runtime data: scene hierarchy, skins, clips and meshes, validated once.

:func:`load_gltf` opens a file with :class:`~engine.io.gltf.GltfDocument` and builds a
:class:`GltfAsset`:

- ``hierarchy``: a :class:`~engine.anim.skeleton.Skeleton` over **every node of the default
  scene** in depth-first order (non-joint nodes matter: CesiumMan's joints sit under a rotated
  node), with the glTF index and name of each entry;
- ``clips``: one :class:`~engine.anim.clip.Clip` per animation, channels bound to hierarchy
  indices once, here (never by name at run time);
- ``skins``: per skin a joint :class:`Skeleton` (depth-first, inverse bind matrices), the map
  to glTF nodes, the rest transform above its root, and the clips re-bound to its joints;
- ``mesh_nodes``: each node of the scene that instantiates a mesh, with its primitives as
  :class:`~engine.anim.mesh.MeshData` (joint indices remapped to the skin skeleton's order).

Everything a runtime function would otherwise have to check is checked here, and every
failure raises :class:`~engine.errors.AssetError` naming the file, the JSON path (e.g.
``animations[0].samplers[2].input``) and what was wrong. Suspicious but readable data (weights
that do not sum to 1, non-unit quaternions, repeated key times, morph targets) emits an
:class:`~engine.errors.OssaWarning` and is recorded in :attr:`GltfAsset.warnings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import INTERPOLATIONS, PATH_WIDTHS, Channel, Clip
from engine.anim.local_to_model import local_to_model
from engine.anim.mesh import MeshData
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, DegenerateInputError
from engine.io.gltf import GltfDocument, UnreadableFileError, _items
from engine.io.images import decode_image
from engine.math._checks import FloatArray, IntArray, readonly_copy
from engine.math.mat import matrix_from_trs, trs_from_matrix

#: A quaternion whose norm is further than this from 1 is normalised with a warning.
QUAT_NORM_TOLERANCE = 1e-3
#: Largest magnitude of a node's translation, rotation, scale or matrix entry: glTF's numeric data
#: is float32 (accessors) and so is the GPU's, and bigger values overflow the transforms downstream.
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: An inverse bind matrix whose |det| is below this times the product of its basis column lengths is
#: singular (the columns are, to this tolerance, coplanar or zero).
SINGULAR_TOLERANCE = 1e-9
#: Weights whose per-vertex sum is further than this from 1 (beyond quantisation) are reported.
WEIGHT_SUM_TOLERANCE = 1e-3

_MODES = {
    0: "POINTS",
    1: "LINES",
    2: "LINE_LOOP",
    3: "LINE_STRIP",
    4: "TRIANGLES",
    5: "TRIANGLE_STRIP",
    6: "TRIANGLE_FAN",
}


@dataclass(frozen=True, eq=False)
class SkinData:
    """One glTF skin, ready for the runtime.

    Attributes
    ----------
    index
        The skin's index in the file.
    name
        Its name (``"skin<i>"`` when the file has none).
    skeleton
        The joints in depth-first order (``parents[i] < i``), rest pose from the nodes'
        TRS/matrix, inverse bind matrices (identity when the file has none).
    joint_nodes
        ``(J,)`` glTF node index of each skeleton joint.
    from_gltf_order
        ``(J,)`` skeleton index of each entry of the file's ``skins[i].joints`` (what a
        ``JOINTS_n`` attribute refers to). Meshes are already remapped with it.
    root_parent
        glTF index of the node the skeleton's roots hang from, ``-1`` if they are scene roots.
    root_transform
        ``(4, 4)`` rest world transform of ``root_parent`` (identity when ``-1``): world =
        ``root_transform @ model``.
    clips
        One clip per animation of the file (aligned with :attr:`GltfAsset.clips`), its channels
        re-bound to skeleton joint indices; channels of nodes outside the skin are left out.
    """

    index: int
    name: str
    skeleton: Skeleton
    joint_nodes: IntArray
    from_gltf_order: IntArray
    root_parent: int
    root_transform: FloatArray
    clips: tuple[Clip, ...]


@dataclass(frozen=True, eq=False)
class MeshNode:
    """A node of the scene that instantiates a mesh.

    Attributes
    ----------
    node
        Hierarchy index of the node (into :attr:`GltfAsset.hierarchy`).
    gltf_node
        The node's index in the file.
    mesh
        glTF mesh index.
    skin
        glTF skin index, or ``None`` for a rigid mesh.
    primitives
        One :class:`MeshData` per triangle primitive, in the node's space; skinned primitives'
        joint indices refer to ``skins[skin].skeleton``.
    primitive_indices
        The glTF primitive index of each entry of ``primitives`` (point and line primitives
        are skipped with a warning, so indices may have gaps).
    """

    node: int
    gltf_node: int
    mesh: int
    skin: int | None
    primitives: tuple[MeshData, ...]
    primitive_indices: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class GltfAsset:
    """Everything Ossa reads from a glTF file, as validated read-only runtime data.

    Attributes
    ----------
    path
        The file read.
    hierarchy
        Every node of the default scene as one :class:`Skeleton` in depth-first order; its rest
        pose is the nodes' TRS (matrices decomposed). World matrices are
        ``local_to_model(hierarchy, local)`` since scene roots have no parent.
    node_indices
        ``(H,)`` glTF node index of each hierarchy entry.
    node_names
        Original glTF name of each hierarchy entry (``None`` when unnamed); the hierarchy's
        own ``names`` are unique versions of these (``node<i>`` for unnamed nodes).
    clips
        One :class:`Clip` per glTF animation (same order), targets being hierarchy indices.
    skins
        One :class:`SkinData` per glTF skin (same order).
    mesh_nodes
        The scene's nodes that instantiate meshes, in hierarchy order.
    scene
        Index of the scene used (the file's ``scene``, else 0), ``None`` for a file without scenes
        (then every root node is used).
    scene_count, node_count
        Number of scenes and of nodes in the file.
    warnings
        Text of every :class:`~engine.errors.OssaWarning` emitted while loading.
    """

    path: Path
    hierarchy: Skeleton
    node_indices: IntArray
    node_names: tuple[str | None, ...]
    clips: tuple[Clip, ...]
    skins: tuple[SkinData, ...]
    mesh_nodes: tuple[MeshNode, ...]
    scene: int | None
    scene_count: int
    node_count: int
    warnings: tuple[str, ...]

    def hierarchy_index(self, gltf_node: int) -> int:
        """Hierarchy index of glTF node ``gltf_node``; raises if the node is not in the scene."""
        found = np.nonzero(self.node_indices == gltf_node)[0]
        if found.size == 0:
            raise AssetError(f"node {gltf_node} is not part of the default scene", file=str(self.path))
        return int(found[0])

    def rest_world(self) -> FloatArray:
        """``(H, 4, 4)`` world matrices of the hierarchy in its rest pose."""
        return local_to_model(self.hierarchy, self.hierarchy.rest_pose.matrices())

    def clip_index(self, name: str) -> int:
        """Index of the clip called ``name``."""
        for i, clip in enumerate(self.clips):
            if clip.name == name:
                return i
        raise AssetError(f"no clip named {name!r}; clips are {[c.name for c in self.clips]}", file=str(self.path))


# --------------------------------------------------------------------------------------------
# entry point


def load_gltf(path: str | Path, *, textures: bool = True) -> GltfAsset:
    """Read a ``.gltf`` or ``.glb`` file into a validated :class:`GltfAsset`.

    Parameters
    ----------
    path
        The file. External buffers and images are read relative to its folder.
    textures
        Decode base-colour textures into :attr:`MeshData.texture` (needs Pillow); ``False``
        skips the images (faster when only animation data is wanted).

    Raises
    ------
    AssetError
        For anything malformed; the message names the file, the JSON path and the problem.

    Examples
    --------
    >>> from pathlib import Path
    >>> asset = load_gltf(Path("assets/mannequin.glb"))
    >>> asset.skins[0].skeleton.num_joints, [c.name for c in asset.clips][:2]
    (25, ['idle', 'walk'])
    """
    doc = GltfDocument(path)
    return _Builder(doc, textures).build()


# --------------------------------------------------------------------------------------------
# the builder


@dataclass(frozen=True)
class _RawChannel:
    node: int
    path: str
    interpolation: str
    times: FloatArray
    values: FloatArray


def _unique_names(raw: Sequence[str | None], prefix: str) -> list[str]:
    """``raw`` names made unique: unnamed entries become ``<prefix><i>``, repeats get ``#<i>``."""
    names: list[str] = []
    seen: set[str] = set()
    for i, name in enumerate(raw):
        candidate = name if isinstance(name, str) and name else f"{prefix}{i}"
        if candidate in seen:
            candidate = f"{candidate}#{i}"
            while candidate in seen:
                candidate += "'"
        seen.add(candidate)
        names.append(candidate)
    return names


class _Builder:
    """One pass over a document: nodes, scene, animations, skins, then meshes (each needs the last)."""

    def __init__(self, doc: GltfDocument, textures: bool) -> None:
        self.doc = doc
        self.gltf = doc.gltf
        self.textures = textures
        self.node_count = doc.count("nodes")
        self._images: dict[int, np.ndarray | None] = {}

    def build(self) -> GltfAsset:
        doc = self.doc
        self.parents = self._node_parents()
        self.names = _unique_names([n.name for n in _items(self.gltf.nodes)], "node")
        self.rest = [self._node_trs(i) for i in range(self.node_count)]
        self.world = self._rest_world_all()
        scene, order = self._scene_order()
        self.hier_of = {int(n): h for h, n in enumerate(order)}
        hierarchy = self._skeleton(order, None)
        raw_clips = self._animations()
        clip_names = _unique_names([name for name, _ in raw_clips], "animation")
        clips = tuple(
            self._bind(name, channels, self.hier_of, a, warn=True)
            for a, (name, (_, channels)) in enumerate(zip(clip_names, raw_clips, strict=True))
        )
        skins = tuple(self._skin(i, raw_clips, clip_names) for i in range(doc.count("skins")))
        mesh_nodes = self._mesh_nodes(order, skins)
        return GltfAsset(
            path=doc.path,
            hierarchy=hierarchy,
            node_indices=readonly_copy(np.asarray(order, dtype=np.intp)),
            node_names=tuple(self.gltf.nodes[n].name for n in order),
            clips=clips,
            skins=skins,
            mesh_nodes=mesh_nodes,
            scene=scene,
            scene_count=doc.count("scenes"),
            node_count=self.node_count,
            warnings=tuple(doc.warnings),
        )

    # ---------------------------------------------------------------------------------- nodes

    def _node_parents(self) -> IntArray:
        """Parent of every node (``-1`` for roots); one parent per node, no cycles."""
        doc = self.doc
        parents = np.full(self.node_count, -1, dtype=np.intp)
        for i, node in enumerate(_items(self.gltf.nodes)):
            for k, value in enumerate(_items(node.children)):
                where = f"nodes[{i}].children[{k}]"
                child = doc.index(value, self.node_count, where, "nodes")
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
        state = np.zeros(self.node_count, dtype=np.int8)  # 0 unknown, 1 on the current path, 2 reaches a root
        for start in range(self.node_count):
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

    def _node_trs(self, i: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Rest (translation, unit rotation, scale) of node ``i`` from its TRS or matrix."""
        doc, node, where = self.doc, self.gltf.nodes[i], f"nodes[{i}]"
        t = self._numbers(node.translation, 3, f"{where}.translation", [0.0, 0.0, 0.0])
        r = self._numbers(node.rotation, 4, f"{where}.rotation", [0.0, 0.0, 0.0, 1.0])
        s = self._numbers(node.scale, 3, f"{where}.scale", [1.0, 1.0, 1.0])
        r = self._unit(r[None], f"{where}.rotation")[0]
        if node.matrix is None:
            return t, r, s
        m = self._numbers(node.matrix, 16, f"{where}.matrix", None).reshape(4, 4).T  # column-major
        if any(v is not None for v in (node.translation, node.rotation, node.scale)):
            raise doc.error("a node may have a matrix or translation/rotation/scale, not both", where)
        if np.abs(m[3] - [0.0, 0.0, 0.0, 1.0]).max() > 1e-6:
            raise doc.error(
                f"matrix must be affine (last row 0 0 0 1), got last row {m[3].tolist()}", f"{where}.matrix"
            )
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

    def _numbers(self, value: Any, n: int, where: str, default: list[float] | None) -> FloatArray:
        if value is None:
            return np.array(default, dtype=np.float64)
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise self.doc.error(f"expected {n} numbers, got {value!r}", where) from None
        if array.shape != (n,) or not np.isfinite(array).all():
            raise self.doc.error(f"expected {n} finite numbers, got {value!r}", where)
        if np.abs(array).max() > FLOAT32_MAX:
            raise self.doc.error(f"{value!r} exceeds the float32 range (±{FLOAT32_MAX:.7g}) of glTF data", where)
        return array

    def _unit(self, q: FloatArray, where: str) -> FloatArray:
        """Quaternions ``(K, 4)`` normalised; zero raises, a norm far from 1 warns."""
        norms = np.linalg.norm(q, axis=-1)
        if np.any(norms < 1e-12):
            k = int(np.argmin(norms))
            raise self.doc.error(f"quaternion {k} is zero {q[k].tolist()}; rotations must be unit quaternions", where)
        off = np.abs(norms - 1.0)
        if off.max() > QUAT_NORM_TOLERANCE:
            k = int(np.argmax(off))
            self.doc.warn(f"quaternion {k} has norm {norms[k]:.6g}, not 1; normalised", where)
        return q / norms[:, None]

    def _rest_world_all(self) -> FloatArray:
        """``(N, 4, 4)`` rest world matrix of every node of the file."""
        roots = [int(n) for n in np.nonzero(self.parents < 0)[0]]
        world = np.zeros((self.node_count, 4, 4))
        for n in self._depth_first(roots, lambda n: _items(self.gltf.nodes[n].children)):
            local = matrix_from_trs(*self.rest[n])
            p = int(self.parents[n])
            with np.errstate(over="ignore", invalid="ignore"):
                world[n] = local if p < 0 else world[p] @ local
            if not np.isfinite(world[n]).all():
                raise self.doc.error(
                    "the node's rest world transform overflows: the translations and scales down to it are too large",
                    f"nodes[{n}]",
                )
        return world

    def _scene_order(self) -> tuple[int | None, list[int]]:
        """Default scene index and its nodes in depth-first order."""
        doc = self.doc
        scene_count = doc.count("scenes")
        scene = self.gltf.scene
        if scene is not None:
            scene = doc.index(scene, scene_count, "scene", "scenes")
        elif scene_count:
            scene = 0
        if scene is None:
            roots = [int(n) for n in np.nonzero(self.parents < 0)[0]]
        else:
            roots = []
            for k, value in enumerate(_items(self.gltf.scenes[scene].nodes)):
                where = f"scenes[{scene}].nodes[{k}]"
                node = doc.index(value, self.node_count, where, "nodes")
                if self.parents[node] >= 0:
                    raise doc.error(f"node {node} is not a root: it is a child of node {self.parents[node]}", where)
                if node in roots:
                    raise doc.error(f"node {node} is listed twice", where)
                roots.append(node)
        return scene, self._depth_first(roots, lambda n: _items(self.gltf.nodes[n].children))

    @staticmethod
    def _depth_first(roots: Sequence[int], children: Any) -> list[int]:
        order: list[int] = []
        stack = list(reversed(roots))
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(reversed([int(c) for c in children(node)]))
        return order

    def _skeleton(self, order: Sequence[int], inverse_bind: FloatArray | None) -> Skeleton:
        """A Skeleton over glTF nodes ``order`` (parents before children), parents remapped."""
        position = {n: i for i, n in enumerate(order)}
        parents = [position.get(int(self.parents[n]), -1) for n in order]
        return Skeleton(
            [self.names[n] for n in order],
            np.asarray(parents, dtype=np.intp),
            np.array([self.rest[n][0] for n in order]).reshape(-1, 3),
            np.array([self.rest[n][1] for n in order]).reshape(-1, 4),
            np.array([self.rest[n][2] for n in order]).reshape(-1, 3),
            inverse_bind,
        )

    # ----------------------------------------------------------------------------- animations

    def _animations(self) -> list[tuple[str | None, list[_RawChannel]]]:
        """Every animation's name and decoded, validated channels (glTF node targets)."""
        return [self._animation(a) for a in range(self.doc.count("animations"))]

    def _animation(self, a: int) -> tuple[str | None, list[_RawChannel]]:
        doc, animation, where = self.doc, self.gltf.animations[a], f"animations[{a}]"
        samplers = _items(animation.samplers)
        channels: list[_RawChannel] = []
        seen: dict[tuple[int, str], int] = {}
        for c, channel in enumerate(_items(animation.channels)):
            cwhere = f"{where}.channels[{c}]"
            s = doc.index(channel.sampler, len(samplers), f"{cwhere}.sampler", f"samplers in {where}")
            target = channel.target
            if target is None:
                raise doc.error("a channel needs a target", cwhere)
            path = target.path
            if path == "weights":
                doc.warn("morph-target weights are not supported; channel skipped", f"{cwhere}.target.path")
                continue
            if path not in PATH_WIDTHS:
                raise doc.error(
                    f"target.path must be translation, rotation, scale or weights, got {path!r}",
                    f"{cwhere}.target.path",
                )
            if target.node is None:
                doc.warn("channel has no target node (an extension's target?); skipped", f"{cwhere}.target")
                continue
            node = doc.index(target.node, self.node_count, f"{cwhere}.target.node", "nodes")
            if (node, path) in seen:
                raise doc.error(
                    f"channels {seen[node, path]} and {c} both animate {path} of node {node}", f"{cwhere}.target"
                )
            seen[node, path] = c
            interpolation, times, values = self._sampler(a, s, path)
            channels.append(_RawChannel(node, path, interpolation, times, values))
        return animation.name, channels

    def _sampler(self, a: int, s: int, path: str) -> tuple[str, FloatArray, FloatArray]:
        """Interpolation, key times ``(K,)`` and values (``(K, n)`` or ``(K, 3, n)``) of a sampler."""
        doc = self.doc
        where = f"animations[{a}].samplers[{s}]"
        sampler = self.gltf.animations[a].samplers[s]
        interpolation = sampler.interpolation or "LINEAR"
        if interpolation not in INTERPOLATIONS:
            raise doc.error(
                f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}", f"{where}.interpolation"
            )
        input_meta = doc.accessor_meta(sampler.input, f"{where}.input")
        if input_meta.componentType != 5126 or input_meta.type != "SCALAR":
            raise doc.error(
                f"key times must be a FLOAT SCALAR accessor, got componentType {input_meta.componentType} "
                f"type {input_meta.type}",
                f"{where}.input",
            )
        times = doc.floats(sampler.input, f"{where}.input")
        if not np.isfinite(times).all():
            k = int(np.argmin(np.isfinite(times)))
            raise doc.error(f"key time {k} is {times[k]}; key times must be finite", f"{where}.input")
        decreasing = np.nonzero(np.diff(times) < 0)[0]
        if decreasing.size:
            k = int(decreasing[0])
            raise doc.error(
                f"key times must be non-decreasing, got times[{k}] = {times[k]:.9g} > "
                f"times[{k + 1}] = {times[k + 1]:.9g}",
                f"{where}.input",
            )
        if times[0] < 0:
            raise doc.error(f"key times must be ≥ 0, got times[0] = {times[0]:.9g}", f"{where}.input")
        repeated = np.nonzero(np.diff(times) == 0)[0]
        if repeated.size:
            k = int(repeated[0])
            doc.warn(
                f"key times should be strictly increasing, got times[{k}] = times[{k + 1}] = {times[k]:.9g} "
                f"({repeated.size} repeated); the value jumps there",
                f"{where}.input",
            )
        width = PATH_WIDTHS[path]
        output_meta = doc.accessor_meta(sampler.output, f"{where}.output")
        expected_type = f"VEC{width}"
        if output_meta.type != expected_type:
            raise doc.error(f"{path} values must be {expected_type}, got {output_meta.type}", f"{where}.output")
        if output_meta.componentType != 5126 and not output_meta.normalized:
            raise doc.error(
                f"{path} values must be FLOAT or normalized integers, got componentType "
                f"{output_meta.componentType} without normalized: true",
                f"{where}.output",
            )
        per_key = 3 if interpolation == "CUBICSPLINE" else 1
        keys = times.size
        if output_meta.count != per_key * keys:
            raise doc.error(
                f"{interpolation} needs {per_key} value(s) per key: {per_key * keys} for {keys} key times, "
                f"got {output_meta.count}",
                f"{where}.output",
            )
        values = doc.floats(sampler.output, f"{where}.output")
        if not np.isfinite(values).all():
            k = int(np.argwhere(~np.isfinite(values))[0][0])
            raise doc.error(f"value {k} is not finite: {values[k].tolist()}", f"{where}.output")
        if per_key == 3:
            values = values.reshape(keys, 3, width)
        if path == "rotation":
            if per_key == 1:
                values = self._unit(values, f"{where}.output")
            else:
                self._unit(values[:, 1], f"{where}.output")  # zero check only: the spline normalises its result
        return interpolation, times, values

    def _bind(self, name: str, channels: Sequence[_RawChannel], targets: dict[int, int], a: int, *, warn: bool) -> Clip:
        """A Clip of ``channels`` whose glTF nodes map to indices via ``targets`` (others dropped)."""
        where = f"animations[{a}]"
        bound = []
        for raw in channels:
            index = targets.get(raw.node)
            if index is None:
                if warn:
                    self.doc.warn(
                        f"node {raw.node} is not in the default scene; its {raw.path} channel is skipped", where
                    )
                continue
            bound.append(Channel(index, raw.path, raw.interpolation, raw.times, raw.values))
        return Clip(name, tuple(bound), len(targets), self._markers(a, warn=warn))

    def _markers(self, a: int, *, warn: bool) -> dict[str, tuple[float, ...]]:
        """Event markers from ``animations[a].extras.markers`` (name → times), as Ossa writes them.

        ``extras`` is application data, so a malformed entry is skipped with a warning, not an error.
        """
        extras = self.gltf.animations[a].extras
        raw = extras.get("markers") if isinstance(extras, dict) else None
        if raw is None:
            return {}
        markers: dict[str, tuple[float, ...]] = {}
        items = raw.items() if isinstance(raw, dict) else ()
        for name, times in items:
            values = times if isinstance(times, list) else [times]
            if all(isinstance(t, (int, float)) and not isinstance(t, bool) and np.isfinite(t) for t in values):
                markers[str(name)] = tuple(float(t) for t in values)
            elif warn:
                self.doc.warn(
                    f"marker {name!r} must be a list of finite times, got {times!r}; skipped",
                    f"animations[{a}].extras.markers",
                )
        if not isinstance(raw, dict) and warn:
            self.doc.warn(
                f"markers must map names to times, got {type(raw).__name__}; skipped", f"animations[{a}].extras.markers"
            )
        return markers

    # ---------------------------------------------------------------------------------- skins

    def _skin(
        self, i: int, raw_clips: Sequence[tuple[str | None, Sequence[_RawChannel]]], clip_names: Sequence[str]
    ) -> SkinData:
        doc, skin, where = self.doc, self.gltf.skins[i], f"skins[{i}]"
        joints = [
            doc.index(j, self.node_count, f"{where}.joints[{k}]", "nodes") for k, j in enumerate(_items(skin.joints))
        ]
        if not joints:
            raise doc.error("a skin needs at least one joint", f"{where}.joints")
        if len(set(joints)) != len(joints):
            dupes = sorted({j for j in joints if joints.count(j) > 1})
            raise doc.error(f"joints must be distinct nodes, got nodes {dupes} more than once", f"{where}.joints")
        members = set(joints)
        roots = [j for j in joints if int(self.parents[j]) not in members]
        for r in roots:
            ancestor = int(self.parents[r])
            while ancestor >= 0 and ancestor not in members:
                ancestor = int(self.parents[ancestor])
            if ancestor >= 0:
                raise doc.error(
                    f"joints must form a tree: joint node {r} hangs from joint node {ancestor} through "
                    f"non-joint node {self.parents[r]}",
                    f"{where}.joints",
                )
        root_parents = sorted({int(self.parents[r]) for r in roots})
        if len(root_parents) > 1:
            described = ", ".join(f"node {r} under node {self.parents[r]}" for r in roots)
            raise doc.error(
                f"joints must form one tree under a common root, got separate roots: {described}", f"{where}.joints"
            )
        root_parent = root_parents[0]
        common_root = roots[0] if len(roots) == 1 else root_parent
        if skin.skeleton is not None:
            declared = doc.index(skin.skeleton, self.node_count, f"{where}.skeleton", "nodes")
            node = common_root
            while node >= 0 and node != declared:
                node = int(self.parents[node])
            if node < 0:
                raise doc.error(
                    f"skeleton is node {declared}, which is not the joints' common root (node {common_root}) "
                    "or one of its ancestors",
                    f"{where}.skeleton",
                )
        order = self._depth_first(
            sorted(roots, key=joints.index),
            lambda n: [c for c in _items(self.gltf.nodes[n].children) if c in members],
        )
        position = {n: k for k, n in enumerate(order)}
        from_gltf = np.array([position[j] for j in joints], dtype=np.intp)
        inverse_bind = self._inverse_bind(i, len(joints))
        skeleton = self._skeleton(order, None if inverse_bind is None else inverse_bind[np.argsort(from_gltf)])
        clips = tuple(
            self._bind(name, channels, position, a, warn=False)
            for a, (name, (_, channels)) in enumerate(zip(clip_names, raw_clips, strict=True))
        )
        return SkinData(
            index=i,
            name=skin.name or f"skin{i}",
            skeleton=skeleton,
            joint_nodes=readonly_copy(np.asarray(order, dtype=np.intp)),
            from_gltf_order=readonly_copy(from_gltf),
            root_parent=root_parent,
            root_transform=readonly_copy(np.eye(4) if root_parent < 0 else self.world[root_parent]),
            clips=clips,
        )

    def _inverse_bind(self, i: int, count: int) -> FloatArray | None:
        doc = self.doc
        accessor = self.gltf.skins[i].inverseBindMatrices
        if accessor is None:
            return None
        where = f"skins[{i}].inverseBindMatrices"
        meta = doc.accessor_meta(accessor, where)
        if meta.type != "MAT4" or meta.componentType != 5126:
            raise doc.error(
                f"must be a FLOAT MAT4 accessor, got componentType {meta.componentType} type {meta.type}", where
            )
        if meta.count < count:
            raise doc.error(f"has {meta.count} matrices for {count} joints; one per joint is needed", where)
        if meta.count > count:
            doc.warn(f"has {meta.count} matrices for {count} joints; the extra ones are ignored", where)
        matrices = doc.floats(accessor, where)[:count]
        if not np.isfinite(matrices).all():
            raise doc.error("inverse bind matrices must be finite", where)
        projective = np.abs(matrices[:, 3] - [0.0, 0.0, 0.0, 1.0]).max(axis=1) > 1e-6
        if projective.any():
            k = int(np.argmax(projective))
            raise doc.error(f"matrix {k} is not affine (last row {matrices[k, 3].tolist()}, expected 0 0 0 1)", where)
        basis = matrices[:, :3, :3]
        determinants = np.linalg.det(basis)
        singular = np.abs(determinants) <= SINGULAR_TOLERANCE * np.prod(np.linalg.norm(basis, axis=1), axis=1)
        if singular.any():
            k = int(np.argmax(singular))
            raise doc.error(
                f"matrix {k} is singular (determinant {determinants[k]:.3g}); inverse bind matrices must be invertible",
                where,
            )
        return matrices

    # --------------------------------------------------------------------------------- meshes

    def _mesh_nodes(self, order: Sequence[int], skins: Sequence[SkinData]) -> tuple[MeshNode, ...]:
        doc = self.doc
        result = []
        cache: dict[tuple[int, int | None], tuple[tuple[MeshData, ...], tuple[int, ...]]] = {}
        for h, n in enumerate(order):
            node = self.gltf.nodes[n]
            if node.mesh is None:
                continue
            mesh = doc.index(node.mesh, doc.count("meshes"), f"nodes[{n}].mesh", "meshes")
            skin = None if node.skin is None else doc.index(node.skin, len(skins), f"nodes[{n}].skin", "skins")
            if skin is not None:
                outside = [int(j) for j in skins[skin].joint_nodes if int(j) not in self.hier_of]
                if outside:
                    raise doc.error(
                        f"skin {skin} used by node {n} has joints outside the default scene: nodes {outside}",
                        f"nodes[{n}].skin",
                    )
            if (mesh, skin) not in cache:
                cache[mesh, skin] = self._mesh(mesh, None if skin is None else skins[skin])
            primitives, indices = cache[mesh, skin]
            result.append(MeshNode(h, n, mesh, skin, primitives, indices))
        return tuple(result)

    def _mesh(self, m: int, skin: SkinData | None) -> tuple[tuple[MeshData, ...], tuple[int, ...]]:
        mesh = self.gltf.meshes[m]
        primitives, indices = [], []
        for p, primitive in enumerate(_items(mesh.primitives)):
            data = self._primitive(m, p, primitive, skin)
            if data is not None:
                primitives.append(data)
                indices.append(p)
        return tuple(primitives), tuple(indices)

    def _primitive(self, m: int, p: int, primitive: Any, skin: SkinData | None) -> MeshData | None:
        doc = self.doc
        where = f"meshes[{m}].primitives[{p}]"
        mode = 4 if primitive.mode is None else primitive.mode
        if mode not in _MODES:
            raise doc.error(f"mode must be one of {sorted(_MODES)}, got {mode!r}", f"{where}.mode")
        if mode < 4:
            doc.warn(f"{_MODES[mode]} primitives are not drawn by Ossa; skipped", f"{where}.mode")
            return None
        raw = primitive.attributes  # pygltflib leaves an empty object as a dict
        attributes = {k: v for k, v in (raw if isinstance(raw, dict) else vars(raw)).items() if v is not None}
        if "POSITION" not in attributes:
            raise doc.error("a primitive needs a POSITION attribute", f"{where}.attributes")
        if primitive.targets:
            doc.warn("morph targets are not supported; the base shape is used", f"{where}.targets")

        def attribute(name: str, types: tuple[str, ...]) -> tuple[Any, str]:
            awhere = f"{where}.attributes.{name}"
            meta = doc.accessor_meta(attributes[name], awhere)
            if meta.type not in types:
                raise doc.error(f"{name} must be {' or '.join(types)}, got {meta.type}", awhere)
            return meta, awhere

        meta, pwhere = attribute("POSITION", ("VEC3",))
        positions = doc.floats(attributes["POSITION"], pwhere)
        count = meta.count
        for name, index in attributes.items():
            other = doc.accessor_meta(index, f"{where}.attributes.{name}")
            if other.count != count:
                raise doc.error(
                    f"{name} has {other.count} elements but POSITION has {count}; every attribute needs one per vertex",
                    f"{where}.attributes.{name}",
                )
        if not np.isfinite(positions).all():
            raise doc.error("positions must be finite", pwhere)
        normals = None
        if "NORMAL" in attributes:
            _, nwhere = attribute("NORMAL", ("VEC3",))
            normals = doc.floats(attributes["NORMAL"], nwhere)
            if not np.isfinite(normals).all():
                raise doc.error("normals must be finite", nwhere)
        material, texcoord = self._material(primitive.material, where)
        uvs = None
        uv_name = f"TEXCOORD_{texcoord}"
        if uv_name in attributes:
            _, uwhere = attribute(uv_name, ("VEC2",))
            uvs = doc.floats(attributes[uv_name], uwhere)
            if not np.isfinite(uvs).all():
                raise doc.error("texture coordinates must be finite", uwhere)
        triangles = self._indices(primitive.indices, mode, count, where)
        joints, weights = (None, None) if skin is None else self._influences(attributes, count, skin, where)
        return MeshData(
            positions=positions,
            indices=triangles,
            normals=normals,
            uvs=uvs,
            joints=joints,
            weights=weights,
            base_color=material[0],
            texture=material[1],
            name=f"{self.gltf.meshes[m].name or f'mesh{m}'}/{p}",
        )

    def _indices(self, accessor: Any, mode: int, count: int, where: str) -> IntArray | None:
        doc = self.doc
        if accessor is None:
            if mode == 4:
                if count % 3:
                    raise doc.error(
                        f"a non-indexed triangle list needs 3·T vertices, got {count}", f"{where}.attributes"
                    )
                return None
            indices = np.arange(count, dtype=np.intp)
        else:
            iwhere = f"{where}.indices"
            meta = doc.accessor_meta(accessor, iwhere)
            if meta.type != "SCALAR" or meta.componentType not in (5121, 5123, 5125) or meta.normalized:
                raise doc.error(
                    f"indices must be UNSIGNED_BYTE/SHORT/INT SCALAR, got componentType {meta.componentType} "
                    f"type {meta.type}",
                    iwhere,
                )
            indices = doc.accessor(accessor, iwhere).astype(np.intp)
            if indices.max() >= count:
                k = int(np.argmax(indices))
                raise doc.error(f"index {k} is {indices[k]} but the primitive has {count} vertices", iwhere)
        if mode == 4:
            if indices.size % 3:
                raise doc.error(f"a triangle list needs 3·T indices, got {indices.size}", f"{where}.indices")
            return indices
        if indices.size < 3:
            raise doc.error(f"a {_MODES[mode]} needs at least 3 vertices, got {indices.size}", where)
        i = np.arange(indices.size - 2)
        # strip: p_i = (v_i, v_{i+1+i%2}, v_{i+2-i%2}); fan: p_i = (v_{i+1}, v_{i+2}, v_0)
        corners = (i, i + 1 + i % 2, i + 2 - i % 2) if mode == 5 else (i + 1, i + 2, np.zeros_like(i))
        return np.stack([indices[c] for c in corners], axis=1).reshape(-1)

    def _influences(
        self, attributes: dict[str, Any], count: int, skin: SkinData, where: str
    ) -> tuple[IntArray, FloatArray]:
        """All JOINTS_n/WEIGHTS_n sets concatenated ``(V, 4·S)``, remapped and L1-normalised."""
        doc = self.doc
        sets = sorted(int(k.split("_")[1]) for k in attributes if k.startswith("JOINTS_") and k[7:].isdigit())
        weight_sets = sorted(int(k.split("_")[1]) for k in attributes if k.startswith("WEIGHTS_") and k[8:].isdigit())
        if not sets:
            raise doc.error("the node has a skin, so the primitive needs JOINTS_0 and WEIGHTS_0", f"{where}.attributes")
        if sets != weight_sets or sets != list(range(len(sets))):
            raise doc.error(
                f"JOINTS_n and WEIGHTS_n must come in pairs numbered 0, 1, …; got JOINTS {sets} "
                f"and WEIGHTS {weight_sets}",
                f"{where}.attributes",
            )
        joint_blocks, weight_blocks = [], []
        tolerance = WEIGHT_SUM_TOLERANCE
        for n in sets:
            jwhere, wwhere = f"{where}.attributes.JOINTS_{n}", f"{where}.attributes.WEIGHTS_{n}"
            jmeta = doc.accessor_meta(attributes[f"JOINTS_{n}"], jwhere)
            if jmeta.type != "VEC4" or jmeta.componentType not in (5121, 5123) or jmeta.normalized:
                raise doc.error(
                    f"must be VEC4 of UNSIGNED_BYTE or UNSIGNED_SHORT (not normalized), got componentType "
                    f"{jmeta.componentType} type {jmeta.type}",
                    jwhere,
                )
            wmeta = doc.accessor_meta(attributes[f"WEIGHTS_{n}"], wwhere)
            if wmeta.type != "VEC4" or not (
                wmeta.componentType == 5126 or (wmeta.componentType in (5121, 5123) and wmeta.normalized)
            ):
                raise doc.error(
                    f"must be VEC4 of FLOAT or normalized UNSIGNED_BYTE/SHORT, got componentType "
                    f"{wmeta.componentType} type {wmeta.type} normalized {bool(wmeta.normalized)}",
                    wwhere,
                )
            if wmeta.componentType != 5126:
                tolerance += 4 * 0.5 / (255.0 if wmeta.componentType == 5121 else 65535.0)
            joints = doc.accessor(attributes[f"JOINTS_{n}"], jwhere).astype(np.intp)
            if joints.max() >= skin.from_gltf_order.size:
                v = int(np.argmax(joints.max(axis=1)))
                raise doc.error(
                    f"vertex {v} uses joint {joints[v].max()} but skin {skin.index} has "
                    f"{skin.from_gltf_order.size} joints",
                    jwhere,
                )
            weights = doc.floats(attributes[f"WEIGHTS_{n}"], wwhere)
            bad = ~np.isfinite(weights) | (weights < 0)
            if bad.any():
                v = int(np.argmax(bad.any(axis=1)))
                raise doc.error(f"weights must be finite and ≥ 0, vertex {v} has {weights[v].tolist()}", wwhere)
            joint_blocks.append(skin.from_gltf_order[joints])
            weight_blocks.append(weights)
        joints_all = np.concatenate(joint_blocks, axis=1)
        weights_all = np.concatenate(weight_blocks, axis=1)
        sums = weights_all.sum(axis=1)
        zero = sums <= 0
        if zero.any():
            raise doc.error(
                f"{int(zero.sum())} of {count} vertices have all weights 0 (first: vertex {int(np.argmax(zero))}); "
                "a skinned vertex needs a positive weight",
                f"{where}.attributes.WEIGHTS_0",
            )
        off = np.abs(sums - 1.0) > tolerance
        if off.any():
            v = int(np.argmax(np.where(off, np.abs(sums - 1.0), -1.0)))
            doc.warn(
                f"{int(off.sum())} of {count} vertices have weights not summing to 1 (worst: vertex {v}, "
                f"sum {sums[v]:.6g}); L1-normalised",
                f"{where}.attributes.WEIGHTS_0",
            )
        weights_all = weights_all / sums[:, None]
        return joints_all, weights_all

    # ------------------------------------------------------------------------------ materials

    def _material(self, index: Any, where: str) -> tuple[tuple[FloatArray, np.ndarray | None], int]:
        """((base colour RGBA, texture or None), TEXCOORD set of the texture) of a primitive."""
        doc = self.doc
        if index is None:
            return (np.ones(4), None), 0
        m = doc.index(index, doc.count("materials"), f"{where}.material", "materials")
        pbr = self.gltf.materials[m].pbrMetallicRoughness
        mwhere = f"materials[{m}].pbrMetallicRoughness"
        factor = self._numbers(
            None if pbr is None else pbr.baseColorFactor, 4, f"{mwhere}.baseColorFactor", [1.0, 1.0, 1.0, 1.0]
        )
        info = None if pbr is None else pbr.baseColorTexture
        if info is None:
            return (factor, None), 0
        twhere = f"{mwhere}.baseColorTexture"
        t = doc.index(info.index, doc.count("textures"), f"{twhere}.index", "textures")
        texcoord = info.texCoord or 0
        source = self.gltf.textures[t].source
        if source is None or not self.textures:
            return (factor, None), texcoord
        image = doc.index(source, doc.count("images"), f"textures[{t}].source", "images")
        if image not in self._images:
            self._images[image] = self._image(image)
        return (factor, self._images[image]), texcoord

    def _image(self, image: int) -> np.ndarray | None:
        doc = self.doc
        try:
            data, origin = doc.image_bytes(image)
        except UnreadableFileError as exc:  # a missing texture warns; a malformed reference raised above
            doc.warn(f"{exc.problem}; texture skipped", exc.where)
            return None
        try:
            return decode_image(data)
        except ValueError as exc:
            doc.warn(f"cannot decode the image from {origin}: {exc}; texture skipped", f"images[{image}]")
            return None
