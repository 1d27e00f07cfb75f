"""The rig tree humanoid detection searches, and the parts of a pair of mirror limbs.

:class:`RigTree` holds what :func:`engine.anim.humanoid.find_humanoid` reads of a skeleton, once:
children, subtree shapes, rest positions along up and every joint's parsed name
(:func:`engine.anim.joint_names.parse_joint_name`). Helper joints (twist, roll, end, IK pole and
target joints) do not count in a subtree's shape, so a helper on one side only does not keep two
limbs from being mirror images.

:func:`limb_pair` finds the parts of two mirror limbs the same way for both: by their names when
both are named, else by geometry (module docstring of :mod:`engine.anim.humanoid`), then fills what
is left from the joints next to the parts found; :func:`left_of` names one of them left.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.anim.joint_names import ARM_PARTS, LEG_PARTS, PART_NAMES, parse_joint_name
from engine.anim.local_to_model import local_to_model
from engine.anim.skeleton import Skeleton
from engine.errors import SkeletonMismatchError
from engine.math import vec_cross
from engine.math._checks import FloatArray

#: An arm station this many hip-joint distances (or more) from the midline is the shoulder.
SHOULDER_WIDTH_FACTOR = 0.75
#: How many joints the chains of two mirror limbs may differ by (helper joints on one side only).
MIRROR_SLACK = 2
#: Two mirror limbs' tips end within this fraction of the longer limb's reach of one height.
MIRROR_TIP_TOLERANCE = 0.25
#: The toes are the first joint after the foot within this fraction of the foot's drop of the lowest.
TOES_TOLERANCE = 0.25


def rest_positions(skeleton: Skeleton) -> FloatArray:
    """Rest model-space joint positions ``(J, 3)``."""
    return local_to_model(skeleton, skeleton.rest_pose.matrices())[:, :3, 3]


def not_humanoid(skeleton: Skeleton, problem: str) -> SkeletonMismatchError:
    """The error saying why ``skeleton`` is not a humanoid."""
    return SkeletonMismatchError(f"not a humanoid skeleton ({skeleton.num_joints} joints): {problem}")


class RigTree:
    """Children, subtree shapes, rest positions and parsed names of a skeleton (computed once per search)."""

    def __init__(self, skeleton: Skeleton, up: FloatArray) -> None:
        self.skeleton = skeleton
        self.names = skeleton.names
        self.up = up
        self.positions = rest_positions(skeleton)
        count = skeleton.num_joints
        self.parsed = [parse_joint_name(n) for n in self.names]
        self.children: list[list[int]] = [[] for _ in range(count)]
        for j, parent in enumerate(skeleton.parents):
            if parent >= 0:
                self.children[int(parent)].append(j)
        body = np.array([not p.helper for p in self.parsed], dtype=np.intp)  # helpers weigh nothing
        self.sizes = body.copy()  # body joints in the subtree (what mirror limbs compare)
        self.heights = body.copy()  # body joints on the longest downward path
        self.counts = np.ones(count, dtype=np.intp)  # every joint in the subtree (which branch is the main one)
        self.levels = np.ones(count, dtype=np.intp)  # every joint on the longest downward path
        self.named = np.array([bool(p.parts) for p in self.parsed], dtype=np.intp)  # limb parts named below
        below = np.zeros((2, count), dtype=np.intp)
        for j in range(count - 1, -1, -1):  # children come after parents
            self.heights[j] = body[j] + below[0, j]
            self.levels[j] = 1 + below[1, j]
            parent = int(skeleton.parents[j])
            if parent >= 0:
                self.sizes[parent] += self.sizes[j]
                self.counts[parent] += self.counts[j]
                self.named[parent] += self.named[j]
                below[:, parent] = np.maximum(below[:, parent], (self.heights[j], self.levels[j]))
        self.scale = max(float(np.ptp(self.positions, axis=0).max()) if count else 0.0, 1e-12)  # the rig's size
        self.tolerance = 1e-6 * self.scale

    def shape(self, j: int) -> tuple[int, int]:
        """Body joints in ``j``'s subtree and on its longest downward path."""
        return int(self.sizes[j]), int(self.heights[j])

    def main_path(self, start: int) -> list[int]:
        """``start``, then repeatedly the child below which most joints are named as limb parts.

        Ties (every child of an unnamed rig): the longer reach (to the end of its largest branch; a
        toe reaches further than a heel, fingers than a thumb), then the larger subtree, then the name.
        """
        path = [start]
        while self.children[path[-1]]:
            here = self.positions[path[-1]]
            path.append(
                max(
                    self.children[path[-1]],
                    key=lambda c: (
                        self.named[c],
                        round(float(np.linalg.norm(self.positions[self.main_tip(c)] - here)) / self.scale, 6),
                        self.counts[c],
                        self.levels[c],
                        self.names[c],
                    ),
                )
            )
        return path

    def main_tip(self, start: int) -> int:
        """The end of the largest branch below ``start``: most body joints, then joints, depth, bone length."""
        joint = start
        while self.children[joint]:
            here = self.positions[joint]
            joint = max(
                self.children[joint],
                key=lambda c: (
                    self.sizes[c],
                    self.counts[c],
                    self.levels[c],
                    round(float(np.linalg.norm(self.positions[c] - here)) / self.scale, 6),
                    self.names[c],
                ),
            )
        return joint

    def height(self, j: int) -> float:
        """Rest height of joint ``j`` along up."""
        return float(self.positions[j] @ self.up)

    def mirror_pairs(self, j: int) -> list[tuple[int, int]]:
        """Pairs of children of ``j`` that look like a left and a right limb, most alike first.

        Both have two or more body joints; their chains are as long within :data:`MIRROR_SLACK`
        joints and neither subtree is more than twice the other (helper or prop joints on one side
        only are allowed); their tips end at about the same height: within
        :data:`MIRROR_TIP_TOLERANCE` of the longer limb's reach (a T-pose arm reaches sideways, a
        leg down).
        """
        limbs = [c for c in self.children[j] if self.sizes[c] >= 2]
        pairs = []
        for a, b in itertools.combinations(limbs, 2):
            (size_a, height_a), (size_b, height_b) = self.shape(a), self.shape(b)
            if abs(height_a - height_b) > MIRROR_SLACK or max(size_a, size_b) > 2 * min(size_a, size_b):
                continue
            tips = [self.main_tip(c) for c in (a, b)]
            drops = [self.height(j) - self.height(tip) for tip in tips]
            reach = max(float(np.linalg.norm(self.positions[tip] - self.positions[j])) for tip in tips)
            if abs(drops[0] - drops[1]) > MIRROR_TIP_TOLERANCE * reach:
                continue
            pairs.append((abs(size_a - size_b) + abs(height_a - height_b), (a, b)))
        return [pair for _, pair in sorted(pairs, key=lambda item: item[0])]

    def stations(self, path: Sequence[int]) -> list[int]:
        """Indices into ``path`` where a new rest position starts (joints at one position: one station)."""
        steps = np.linalg.norm(np.diff(self.positions[list(path)], axis=0), axis=-1)
        return [0, *(int(k) + 1 for k in np.nonzero(steps > self.tolerance)[0])]

    def lateral(self, j: int, hips: int) -> float:
        """Horizontal distance of joint ``j`` from the vertical line through the hips."""
        offset = self.positions[j] - self.positions[hips]
        return float(np.linalg.norm(offset - (offset @ self.up) * self.up))


@dataclass
class LimbChoice:
    """Parts of one limb as indices into its path, and why."""

    path: list[int]
    parts: dict[str, int]
    reasons: dict[str, str]


def _named_parts(tree: RigTree, path: Sequence[int], parts: Sequence[str]) -> dict[str, int] | None:
    """Parts of ``path`` by name: the most parts, in chain order, thigh and shin (upper arm and forearm) included."""
    essential = {"upper_arm", "lower_arm"} if parts == ARM_PARTS else {"upper_leg", "lower_leg"}
    candidates = [(k, tree.parsed[j].parts) for k, j in enumerate(path) if set(tree.parsed[j].parts) & set(parts)]
    candidates = candidates[:8]  # at most 3⁸ choices; real chains name four to six joints
    best: tuple[tuple[int, int, int], dict[str, int]] | None = None
    for choice in itertools.product(*[(None, *options) for _, options in candidates]):
        picked = [(k, part, options.index(part)) for (k, options), part in zip(candidates, choice, strict=True) if part]
        roles = [part for _, part, _ in picked]
        order = [parts.index(r) for r in roles]
        if len(set(roles)) != len(roles) or order != sorted(order) or not essential <= set(roles):
            continue
        score = (len(roles), -sum(rank for _, _, rank in picked), -sum(k for k, _, _ in picked))
        if best is None or score > best[0]:
            best = (score, {part: k for k, part, _ in picked})
    return None if best is None else best[1]


def _name_reason(tree: RigTree, joint: int, part: str) -> str:
    parsed = tree.parsed[joint]
    reason = f"name: {tree.names[joint]!r} = {PART_NAMES[part]}"
    if len(parsed.parts) > 1:
        if parsed.core == "shoulder":
            why = "an upper-arm joint below it" if part == "clavicle" else "no upper-arm joint below it"
        else:
            why = "a thigh joint above it" if part == "lower_leg" else "no thigh joint above it"
        reason += f" ('{parsed.core}' means {PART_NAMES[part]} here: {why})"
    return reason


def _complete(tree: RigTree, choice: LimbChoice, kind: str) -> None:
    """Fill the parts that names or geometry left open from the stations next to the parts found.

    Outwards: the hand after the forearm and the foot after the shin (the next body joint, else the
    chain's end joint: an IK rig's ``LowerLeg.L_end`` is its ankle; never a twist joint inside the
    bone); the toes after the foot, at the lowest joint after it (where the foot meets the ground:
    Daz's ``lMetatarsals`` is no toe, the ``lToe`` below it is). Inwards: the clavicle is the
    station before the upper arm. A filled part never passes a part already found.
    """
    stations = tree.stations(choice.path)
    outwards = ("lower_arm", "hand") if kind == "arm" else ("lower_leg", "foot", "toes")
    for inner, part in itertools.pairwise(outwards):
        if part in choice.parts or inner not in choice.parts:
            continue
        limit = min((k for k in choice.parts.values() if k > choice.parts[inner]), default=len(choice.path))
        later = [s for s in stations if choice.parts[inner] < s < limit]
        if not later:
            continue
        if part == "toes":
            heights = np.array([tree.height(choice.path[s]) for s in later])
            drop = max(tree.height(choice.path[choice.parts[inner]]) - float(heights.min()), 0.0)
            choice.parts[part] = later[int(np.argmax(heights <= heights.min() + TOES_TOLERANCE * drop))]
            choice.reasons[part] = "geometry: the lowest joint after the foot, where the foot meets the ground"
        else:  # a body joint; else the chain's end joint (RobotExpressive's ``LowerLeg.L_end``), not a twist
            body = [s for s in later if not tree.parsed[choice.path[s]].helper]
            ends = [s for s in later if tree.parsed[choice.path[s]].end]
            choice.parts[part] = (body or ends or later[-1:])[0]
            choice.reasons[part] = f"the next joint after the {PART_NAMES[inner]}"
    if kind == "arm" and "clavicle" not in choice.parts:
        before = [s for s in stations if s < choice.parts["upper_arm"]]
        if before:
            choice.parts["clavicle"] = before[-1]
            choice.reasons["clavicle"] = "the joint between the chest and the upper arm"


def _longest_pair(lengths: Sequence[FloatArray]) -> FloatArray:
    """For each station ``i`` with a next one: bone ``i`` plus bone ``i + 1`` (0 past the end), summed over limbs."""
    return np.sum([seg + np.append(seg[1:], 0.0) for seg in lengths], axis=0)


def _geometric_parts(
    tree: RigTree, paths: tuple[list[int], list[int]], kind: str, hips: int, hip_width: float
) -> tuple[LimbChoice, LimbChoice]:
    """Upper and lower parts of a limb pair by geometry: one decision for both limbs when their chains match."""
    stations = [tree.stations(p) for p in paths]
    for path, st in zip(paths, stations, strict=True):
        if len(st) < 2:
            raise not_humanoid(
                tree.skeleton,
                f"the {kind} starting at {tree.names[path[0]]!r} has all its joints at one position; a {kind} "
                "needs two (a joint and the one it bends at)",
            )
    bones = [
        np.linalg.norm(np.diff(tree.positions[[p[s] for s in st]], axis=0), axis=-1)
        for p, st in zip(paths, stations, strict=True)
    ]
    groups = [[0, 1]] if len(stations[0]) == len(stations[1]) else [[0], [1]]
    picks, reasons = [0, 0], ["", ""]
    for group in groups:
        if kind == "arm":
            threshold = SHOULDER_WIDTH_FACTOR * hip_width
            lateral = np.mean([[tree.lateral(paths[m][s], hips) for s in stations[m][:-1]] for m in group], axis=0)
            wide = np.nonzero(lateral >= threshold)[0]
        if kind == "arm" and wide.size:
            pick = int(wide[0])
            reason = (
                f"geometry: the first arm joint {lateral[pick]:.3g} from the midline, at least "
                f"{SHOULDER_WIDTH_FACTOR} × the hip joints' {hip_width:.3g}"
            )
        else:
            pick = int(np.argmax(_longest_pair([bones[m] for m in group])))
            reason = f"geometry: the two longest consecutive bones of the {kind} start here"
        for m in group:
            picks[m], reasons[m] = pick, reason
    upper, lower = ("upper_leg", "lower_leg") if kind == "leg" else ("upper_arm", "lower_arm")
    choices = [
        LimbChoice(
            paths[m],
            {upper: stations[m][picks[m]], lower: stations[m][picks[m] + 1]},
            {upper: reasons[m], lower: f"the next joint after the {PART_NAMES[upper]}"},
        )
        for m in range(2)
    ]
    return choices[0], choices[1]


def limb_pair(
    tree: RigTree, branches: tuple[int, int], kind: str, hips: int, hip_width: float, notes: list[str]
) -> tuple[LimbChoice, LimbChoice]:
    """Parts of both limbs of a pair, the same way for both (by names when both are named)."""
    parts = ARM_PARTS if kind == "arm" else LEG_PARTS
    paths = (tree.main_path(branches[0]), tree.main_path(branches[1]))
    named = [_named_parts(tree, p, parts) for p in paths]
    if named[0] is not None and named[1] is not None:
        first, second = (
            LimbChoice(p, dict(found), {part: _name_reason(tree, p[k], part) for part, k in found.items()})
            for p, found in ((paths[0], named[0]), (paths[1], named[1]))
        )
    else:
        if (named[0] is None) != (named[1] is None):
            lone = tree.names[paths[0 if named[0] is not None else 1][0]]
            notes.append(f"only the {kind} starting at {lone!r} is named as one: both {kind}s read by geometry")
        first, second = _geometric_parts(tree, paths, kind, hips, hip_width)
    for choice in (first, second):
        _complete(tree, choice, kind)
    common = set(first.parts) & set(second.parts)
    for choice in (first, second):
        for part in set(choice.parts) - common:
            notes.append(f"{PART_NAMES[part]} {tree.names[choice.path[choice.parts[part]]]!r} has no mirror: unused")
            del choice.parts[part]
    return first, second


def left_of(
    tree: RigTree, kind: str, pair: tuple[LimbChoice, LimbChoice], legs: tuple[LimbChoice, LimbChoice]
) -> tuple[int, str]:
    """Index (0 or 1) of the left limb of ``pair``, and why."""
    sides = []
    for choice in pair:
        named = [tree.parsed[choice.path[k]].side for k in choice.parts.values()]
        sides.append(next((s for s in named if s), None))
    if sorted(s or "" for s in sides) == ["l", "r"]:
        return sides.index("l"), "from the side words of their names"
    if not all("toes" in leg.parts and "foot" in leg.parts for leg in legs):
        starts = [tree.names[choice.path[0]] for choice in pair]
        raise SkeletonMismatchError(
            f"cannot tell left from right in this {tree.skeleton.num_joints}-joint skeleton: the {kind}s starting at "
            f"{starts} carry no side in their names and the feet have no toes to show which way the character "
            "faces; give the joint map by hand"
        )
    toes = np.array(
        [tree.positions[leg.path[leg.parts["toes"]]] - tree.positions[leg.path[leg.parts["foot"]]] for leg in legs]
    )
    forward = np.sum(toes - np.outer(toes @ tree.up, tree.up), axis=0)
    left_axis = vec_cross(tree.up, forward)
    scores = [float(tree.positions[c.path].mean(axis=0) @ left_axis) for c in pair]
    return int(np.argmax(scores)), "from geometry (the toes point forward; left is up × forward)"
