"""glTF animations → validated channels on file nodes, then bound to any index space as clips.

:func:`read_animations` decodes every animation once: samplers (key times, values, interpolation)
checked against the glTF 2.0 rules, channels keyed by file node, morph-target ``weights``
channels included (their width is the number of morph targets of the node's mesh), and the
event markers Ossa writes in ``extras``. :func:`bind_clip` then re-binds one animation to a
skeleton's indices (the default scene's hierarchy, or a skin's joints) — once, at load time.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.anim.clip import INTERPOLATIONS, PATH_WIDTHS, WEIGHTS_PATH, Channel, Clip
from engine.io.accessors import quantization_step
from engine.io.fields import unique_names, unit_quaternions
from engine.io.gltf import GltfDocument, _items
from engine.io.pointers import PointerTarget, report_pointers, resolve_pointer
from engine.math._checks import FloatArray

#: The paths of a node's transform (the local pose), in contrast to morph weights.
POSE_PATHS = frozenset(PATH_WIDTHS)


@dataclass(frozen=True, eq=False)
class RawChannel:
    """One checked channel of a file: the glTF node it animates, its path and its keys."""

    node: int
    path: str
    interpolation: str
    times: FloatArray
    values: FloatArray


@dataclass(frozen=True, eq=False)
class RawAnimation:
    """One glTF animation, decoded and checked, still addressed by file node indices.

    Attributes
    ----------
    index
        The animation's index in the file.
    name
        A unique name (``animation<i>`` when the file has none).
    channels
        Its channels, translation/rotation/scale and weights alike.
    markers
        Event name → times, from ``extras.markers``.
    """

    index: int
    name: str
    channels: tuple[RawChannel, ...]
    markers: dict[str, tuple[float, ...]] = field(default_factory=dict)


def read_animations(doc: GltfDocument, node_targets: Sequence[int]) -> tuple[RawAnimation, ...]:
    """Decode and check every animation of ``doc``.

    Parameters
    ----------
    doc
        The document.
    node_targets
        ``(N,)`` number of morph targets of each node's mesh (0 for a node without one): a
        ``weights`` channel needs targets, and its values come in groups of that many.
    """
    count = doc.count("animations")
    names = unique_names([a.name for a in _items(doc.gltf.animations)], "animation")
    tally = _Tally()
    animations = tuple(
        RawAnimation(a, names[a], _channels(doc, a, node_targets, tally), _markers(doc, a)) for a in range(count)
    )
    report_pointers(doc, tally.played, tally.ignored)
    if tally.skipped:
        doc.warn(
            f"{len(tally.skipped)} channel(s) have no target node and no pointer Ossa plays "
            f"(first: {tally.skipped[0]}); skipped",
            "animations",
        )
    return animations


@dataclass
class _Tally:
    """Channels a file's animations hold that are not plain node channels, counted for one warning each."""

    played: int = 0  # pointer channels played
    ignored: list[PointerTarget] = field(default_factory=list)  # pointers to what Ossa does not animate
    skipped: list[str] = field(default_factory=list)  # channels without a node or pointer (JSON paths)


def _channels(doc: GltfDocument, a: int, node_targets: Sequence[int], tally: _Tally) -> tuple[RawChannel, ...]:
    """The channels of ``animations[a]`` that Ossa plays; the others are counted in ``tally``."""
    animation, where = doc.gltf.animations[a], f"animations[{a}]"
    samplers = _items(animation.samplers)
    channels: list[RawChannel] = []
    from_meshes: list[RawChannel] = []  # mesh weights pointers: a node's own weights channel wins
    seen: dict[tuple[int, str], int] = {}
    for c, channel in enumerate(_items(animation.channels)):
        cwhere = f"{where}.channels[{c}]"
        s = doc.index(channel.sampler, len(samplers), f"{cwhere}.sampler", f"samplers in {where}")
        target = channel.target
        if target is None:
            raise doc.error("a channel needs a target", cwhere)
        path = target.path
        mesh_pointer = False
        if path == "pointer":
            resolved = resolve_pointer(doc, doc.json["animations"][a]["channels"][c]["target"], f"{cwhere}.target")
            if resolved.path is None:
                tally.ignored.append(resolved)
                continue
            tally.played += 1
            nodes, path = resolved.nodes, resolved.path
            mesh_pointer = resolved.pointer.startswith("/meshes/")
            if not nodes:
                continue  # a mesh that no node instantiates without weights of its own
        elif path not in POSE_PATHS and path != WEIGHTS_PATH:
            raise doc.error(
                f"target.path must be translation, rotation, scale, weights or pointer, got {path!r}",
                f"{cwhere}.target.path",
            )
        elif target.node is None:
            tally.skipped.append(cwhere)
            continue
        else:
            nodes = (doc.index(target.node, len(node_targets), f"{cwhere}.target.node", "nodes"),)
        if not mesh_pointer:
            for node in nodes:
                if (node, path) in seen:
                    raise doc.error(
                        f"channels {seen[node, path]} and {c} both animate {path} of node {node}", f"{cwhere}.target"
                    )
                seen[node, path] = c
        width = PATH_WIDTHS.get(path, node_targets[nodes[0]])  # a mesh's nodes share its target count
        if width == 0:
            raise doc.error(
                f"animates the morph weights of node {nodes[0]}, whose mesh has no morph targets "
                "(or which has no mesh)",
                f"{cwhere}.target",
            )
        interpolation, times, values = _sampler(doc, a, s, path, width)
        (from_meshes if mesh_pointer else channels).extend(
            RawChannel(node, path, interpolation, times, values) for node in nodes
        )
    return (*channels, *(raw for raw in from_meshes if (raw.node, raw.path) not in seen))


def _sampler(doc: GltfDocument, a: int, s: int, path: str, width: int) -> tuple[str, FloatArray, FloatArray]:
    """Interpolation, key times ``(K,)`` and values (``(K, width)`` or ``(K, 3, width)``) of a sampler."""
    where = f"animations[{a}].samplers[{s}]"
    sampler = doc.gltf.animations[a].samplers[s]
    interpolation = sampler.interpolation or "LINEAR"
    if interpolation not in INTERPOLATIONS:
        raise doc.error(
            f"interpolation must be one of {INTERPOLATIONS}, got {interpolation!r}", f"{where}.interpolation"
        )
    times = _key_times(doc, sampler.input, f"{where}.input")
    output = doc.accessor_meta(sampler.output, f"{where}.output")
    owhere = f"{where}.output"
    expected_type = "SCALAR" if path == WEIGHTS_PATH else f"VEC{width}"
    if output.type != expected_type:
        raise doc.error(f"{path} values must be {expected_type}, got {output.type}", owhere)
    if output.componentType != 5126 and not output.normalized:
        raise doc.error(
            f"{path} values must be FLOAT or normalized integers, got componentType "
            f"{output.componentType} without normalized: true",
            owhere,
        )
    per_key = 3 if interpolation == "CUBICSPLINE" else 1
    keys = times.size
    elements = per_key * keys * (width if path == WEIGHTS_PATH else 1)
    if output.count != elements:
        per = f"{per_key} value(s) per key" + (f" × {width} morph targets" if path == WEIGHTS_PATH else "")
        raise doc.error(f"{interpolation} needs {per}: {elements} for {keys} key times, got {output.count}", owhere)
    values = doc.floats(sampler.output, owhere).reshape(per_key * keys, width)
    if not np.isfinite(values).all():
        k = int(np.argwhere(~np.isfinite(values))[0][0])
        raise doc.error(f"value {k} is not finite: {values[k].tolist()}", owhere)
    if path == "rotation":
        step = quantization_step(output.componentType, bool(output.normalized))
        if per_key == 1:
            values = unit_quaternions(doc, values, owhere, step)
        else:
            unit_quaternions(doc, values[1::3], owhere, step)  # zero check only: the spline normalises its result
    return interpolation, times, values.reshape(keys, 3, width) if per_key == 3 else values


def _key_times(doc: GltfDocument, accessor: object, where: str) -> FloatArray:
    """Key times of a sampler: FLOAT SCALAR, finite, non-decreasing (repeats warn), from 0 on."""
    meta = doc.accessor_meta(accessor, where)
    if meta.componentType != 5126 or meta.type != "SCALAR":
        raise doc.error(
            f"key times must be a FLOAT SCALAR accessor, got componentType {meta.componentType} type {meta.type}",
            where,
        )
    times = doc.floats(accessor, where).reshape(-1)
    if not np.isfinite(times).all():
        k = int(np.argmin(np.isfinite(times)))
        raise doc.error(f"key time {k} is {times[k]}; key times must be finite", where)
    decreasing = np.nonzero(np.diff(times) < 0)[0]
    if decreasing.size:
        k = int(decreasing[0])
        raise doc.error(
            f"key times must be non-decreasing, got times[{k}] = {times[k]:.9g} > times[{k + 1}] = {times[k + 1]:.9g}",
            where,
        )
    if times[0] < 0:
        raise doc.error(f"key times must be ≥ 0, got times[0] = {times[0]:.9g}", where)
    repeated = np.nonzero(np.diff(times) == 0)[0]
    if repeated.size:
        k = int(repeated[0])
        doc.warn(
            f"key times should be strictly increasing, got times[{k}] = times[{k + 1}] = {times[k]:.9g} "
            f"({repeated.size} repeated); the value jumps there",
            where,
        )
    return times


def _markers(doc: GltfDocument, a: int) -> dict[str, tuple[float, ...]]:
    """Event markers from ``animations[a].extras.markers`` (name → times), as Ossa writes them.

    ``extras`` is application data, so a malformed entry is skipped with a warning, not an error.
    """
    extras = doc.gltf.animations[a].extras
    raw = extras.get("markers") if isinstance(extras, dict) else None
    if raw is None:
        return {}
    where = f"animations[{a}].extras.markers"
    if not isinstance(raw, dict):
        doc.warn(f"markers must map names to times, got {type(raw).__name__}; skipped", where)
        return {}
    markers: dict[str, tuple[float, ...]] = {}
    for name, times in raw.items():
        values = times if isinstance(times, list) else [times]
        if all(isinstance(t, (int, float)) and not isinstance(t, bool) and np.isfinite(t) for t in values):
            markers[str(name)] = tuple(float(t) for t in values)
        else:
            doc.warn(f"marker {name!r} must be a list of finite times, got {times!r}; skipped", where)
    return markers


def bind_clip(
    animation: RawAnimation, targets: Mapping[int, int], num_targets: int, paths: Collection[str] = POSE_PATHS
) -> tuple[Clip, tuple[RawChannel, ...]]:
    """Re-bind ``animation``'s channels of ``paths`` to indices ``targets[node]``.

    Returns the clip (``num_targets`` targets, the animation's name and markers) and the channels
    of ``paths`` whose node has no index in ``targets`` (left out of the clip).
    """
    bound, unbound = [], []
    for raw in animation.channels:
        if raw.path not in paths:
            continue
        index = targets.get(raw.node)
        if index is None:
            unbound.append(raw)
        else:
            bound.append(Channel(index, raw.path, raw.interpolation, raw.times, raw.values))
    return Clip(animation.name, tuple(bound), num_targets, animation.markers), tuple(unbound)
