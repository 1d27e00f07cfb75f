"""Joint maps ``{source joint: target joint}`` between two skeletons: proposed, explained, validated.

:func:`propose_joint_map` finds the humanoid body parts of both skeletons
(:func:`engine.anim.humanoid.find_humanoid`: names of the common schemes, else hierarchy and rest
pose), pairs the parts found in both and the spine joints by relative height, then adds joints
whose normalised names are equal; :func:`explain_joint_map` says which body part each pair is
and why; :func:`resolve_joint_map` checks a map (names exist, one target per source, nearest
mapped ancestors correspond) for :func:`engine.anim.retarget.plan_retarget`. A skeleton that is
not an upright biped (the Fox: four legs and a tail) raises
:class:`~engine.errors.SkeletonMismatchError` saying what was found, rather than proposing a map
that would mangle the pose.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engine.anim.humanoid import ROLES, UP, Humanoid, find_humanoid, unit_vector
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray


def _normalised(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", name.lower())


def humanoids(
    source: Skeleton, target: Skeleton, source_up: FloatArray, target_up: FloatArray
) -> tuple[Humanoid, Humanoid] | SkeletonMismatchError:
    """Both skeletons' body parts, or an error saying which one is not a humanoid and why."""
    try:
        source_body = find_humanoid(source, source_up)
    except SkeletonMismatchError as exc:
        return SkeletonMismatchError(f"the source is {exc}")
    try:
        return source_body, find_humanoid(target, target_up)
    except SkeletonMismatchError as exc:
        return SkeletonMismatchError(f"the target is {exc}")


def propose_joint_map(
    source: Skeleton,
    target: Skeleton,
    *,
    source_up: Any = UP,
    target_up: Any = UP,
    map_name: str = "joint_map",
) -> dict[str, str]:
    """Propose ``{source joint name: target joint name}`` for :func:`engine.anim.retarget.plan_retarget`.

    Both skeletons are searched for humanoid body parts
    (:func:`~engine.anim.humanoid.find_humanoid`); parts found in both are paired (hips, chest,
    neck, head, clavicles, arms, legs, toes) and the joints between hips and chest are paired by
    their relative height. Joints whose names are equal after lower-casing and dropping
    non-alphanumerics are added when that keeps ancestors mapping to ancestors (fingers of two rigs
    of one family, a copy of a rig). If either skeleton is not a humanoid, a map by equal names is
    returned when it covers at least half of the smaller skeleton; otherwise the error says why.

    Parameters
    ----------
    source, target
        The skeletons.
    source_up, target_up
        ``(3,)`` up axis of each model space.
    map_name
        What errors call a hand-written map (``ossa retarget`` says ``--map``).

    Raises
    ------
    SkeletonMismatchError
        If no sensible map exists (a quadruped against a humanoid, rigs sharing no names).

    Examples
    --------
    >>> from engine.procedural.mannequin import build_skeleton
    >>> mannequin = build_skeleton()
    >>> proposal = propose_joint_map(mannequin, mannequin)
    >>> proposal["upper_leg_l"], len(proposal)
    ('upper_leg_l', 25)
    """
    names = _name_pairs(source, target)
    found = humanoids(source, target, unit_vector(source_up, "source_up"), unit_vector(target_up, "target_up"))
    if isinstance(found, SkeletonMismatchError):
        if 2 * len(names) >= min(source.num_joints, target.num_joints):
            return {source.names[s]: target.names[t] for s, t in names.items()}
        raise SkeletonMismatchError(
            f"cannot propose a joint map: {found}. Give {map_name} by hand to map only what corresponds"
        ) from None
    src, tgt = found
    pairs = {src.roles[r]: tgt.roles[r] for r in ROLES if r in src.roles and r in tgt.roles}
    pairs.update(_spine_pairs(src, tgt))
    for s, t in names.items():
        if s not in pairs and t not in pairs.values():
            trial = {**pairs, s: t}
            if hierarchy_problem(source, target, trial) is None:
                pairs = trial
    return {source.names[s]: target.names[t] for s, t in sorted(pairs.items())}


def explain_joint_map(
    source: Skeleton,
    target: Skeleton,
    joint_map: Mapping[str, str],
    *,
    source_up: Any = UP,
    target_up: Any = UP,
) -> str:
    """A readable report of ``joint_map``: for each pair, the body part and why each side's joint is it.

    One line per pair, in the source's joint order: ``source → target``, then the role both joints
    play (``upper_arm_l``) with the reason each detection gave (a name, a geometric rule, the
    hierarchy), ``spine`` for the joints between hips and chest, or ``same name``. Body parts
    found in both skeletons but left out of the map are listed at the end; a skeleton that is not
    a humanoid is said so.
    """
    found = humanoids(source, target, unit_vector(source_up, "source_up"), unit_vector(target_up, "target_up"))
    if isinstance(found, SkeletonMismatchError):
        return f"{len(joint_map)} joints mapped by name ({found})"
    src, tgt = found
    role_of_source = {j: r for r, j in src.roles.items()}
    role_of_target = {j: r for r, j in tgt.roles.items()}
    width = max((len(s) + len(t) for s, t in joint_map.items()), default=0) + 3
    lines = []
    for s_name, t_name in sorted(joint_map.items(), key=lambda item: source.index(item[0])):
        s, t = source.index(s_name), target.index(t_name)
        role_s, role_t = role_of_source.get(s), role_of_target.get(t)
        if role_s is not None and role_s == role_t:
            why = f"{role_s}: source {src.reasons[role_s]}; target {tgt.reasons[role_t]}"
        elif s in src.spine and t in tgt.spine:
            why = (
                f"spine, at {src.spine_heights[src.spine.index(s)]:.2f} and "
                f"{tgt.spine_heights[tgt.spine.index(t)]:.2f} of the way from hips to chest"
            )
        elif _normalised(s_name) == _normalised(t_name):
            why = "same name"
        else:
            why = "as given"
        lines.append(f"{s_name + ' → ' + t_name:<{width}}  {why}")
    unmapped = [r for r in ROLES if r in src.roles and r in tgt.roles and source.names[src.roles[r]] not in joint_map]
    if unmapped:
        lines.append(f"found in both but not mapped: {', '.join(unmapped)}")
    lines += [f"source note: {n}" for n in src.notes] + [f"target note: {n}" for n in tgt.notes]
    return "\n".join(lines)


def _name_pairs(source: Skeleton, target: Skeleton) -> dict[int, int]:
    """Joints with equal normalised names, when the name is unique on both sides and order agrees."""
    wanted: dict[str, list[int]] = {}
    for j, name in enumerate(target.names):
        wanted.setdefault(_normalised(name), []).append(j)
    seen: dict[str, list[int]] = {}
    for j, name in enumerate(source.names):
        seen.setdefault(_normalised(name), []).append(j)
    pairs = {s[0]: wanted[key][0] for key, s in seen.items() if len(s) == 1 and len(wanted.get(key, [])) == 1}
    return pairs if hierarchy_problem(source, target, pairs) is None else {}


def _spine_pairs(src: Humanoid, tgt: Humanoid) -> dict[int, int]:
    """Pair intermediate spine joints by relative height, in order, each joint at most once."""
    pairs: dict[int, int] = {}
    fewer, more = (src, tgt) if len(src.spine) <= len(tgt.spine) else (tgt, src)
    start = 0
    for joint, height in zip(fewer.spine, fewer.spine_heights, strict=True):
        if start >= len(more.spine):
            break
        k = start + int(np.argmin(np.abs(np.array(more.spine_heights[start:]) - height)))
        pair = (joint, more.spine[k]) if fewer is src else (more.spine[k], joint)
        pairs[pair[0]] = pair[1]
        start = k + 1
    return pairs


def mapped_ancestors(skeleton: Skeleton, mapped: Sequence[int]) -> IntArray:
    """For each joint, its nearest ancestor in ``mapped`` (``-1`` when none)."""
    inside = np.zeros(skeleton.num_joints, dtype=bool)
    inside[list(mapped)] = True
    nearest = np.full(skeleton.num_joints, -1, dtype=np.intp)
    for j, parent in enumerate(skeleton.parents):  # build time: parents precede children
        if parent >= 0:
            nearest[j] = parent if inside[parent] else nearest[parent]
    return nearest


def hierarchy_problem(source: Skeleton, target: Skeleton, pairs: Mapping[int, int]) -> str | None:
    """Why ``pairs`` (source → target index) does not keep ancestors mapping to ancestors, or ``None``."""
    if not pairs:
        return None
    src_up = mapped_ancestors(source, list(pairs))
    tgt_up = mapped_ancestors(target, list(pairs.values()))
    for s, t in pairs.items():
        expected = pairs[int(src_up[s])] if src_up[s] >= 0 else -1
        if expected != tgt_up[t]:
            above_s = repr(source.names[src_up[s]]) if src_up[s] >= 0 else "none"
            above_t = repr(target.names[tgt_up[t]]) if tgt_up[t] >= 0 else "none"
            return (
                f"{source.names[s]!r} → {target.names[t]!r}: the nearest mapped ancestor of {source.names[s]!r} is "
                f"{above_s} but that of {target.names[t]!r} is {above_t}"
            )
    return None


def _unknown(names: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """Descriptions of the ``wanted`` names missing from ``names``, with the nearest existing names as hints.

    Repeated node names are made unique by the glTF reader as ``Torso#10`` (name, ``#``, node index);
    a map naming ``Torso`` is told which of those exist.
    """
    out = []
    for name in wanted:
        repeats = [n for n in names if n.split("#", 1)[0] == name and n != name]
        if repeats:
            out.append(
                f"{name!r} (several joints share that name and are called {repeats} here: the glTF reader adds "
                "'#' and the node index to repeats)"
            )
            continue
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.75)
        out.append(f"{name!r}" + (f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""))
    return out


def resolve_joint_map(
    source: Skeleton, target: Skeleton, joint_map: Mapping[str, str], map_name: str = "joint_map"
) -> dict[int, int]:
    """``joint_map`` as ``{source index: target index}``, checked (module docstring); errors call it ``map_name``."""
    if not isinstance(joint_map, Mapping) or not joint_map:
        raise InvalidInputError(
            f"{map_name} must be a non-empty mapping of source to target joint names, got {joint_map!r}"
        )
    unknown_s = _unknown(source.names, [s for s in joint_map if s not in source.names])
    unknown_t = _unknown(target.names, [t for t in joint_map.values() if t not in target.names])
    if unknown_s or unknown_t:
        parts = [
            f"{side} joints {', '.join(names)}"
            for side, names in (("source", unknown_s), ("target", unknown_t))
            if names
        ]
        raise SkeletonMismatchError(f"{map_name} names joints that do not exist: {'; '.join(parts)}")
    seen: dict[str, str] = {}
    for s, t in joint_map.items():
        if t in seen:
            raise SkeletonMismatchError(f"{map_name} sends both {seen[t]!r} and {s!r} to target joint {t!r}")
        seen[t] = s
    pairs = {source.index(s): target.index(t) for s, t in joint_map.items()}
    problem = hierarchy_problem(source, target, pairs)
    if problem is not None:
        raise SkeletonMismatchError(f"{map_name} breaks the hierarchy: {problem}")
    return pairs
