"""Binding a graph definition to one character: names to indices, blend trees to flat layers.

:func:`bind_graph` checks a :class:`~engine.graph.definition.GraphDefinition` against a
character's skeleton and clips (by name) and compiles it once:

- every machine's states (:class:`BoundState`) with their blend trees as flat trees over
  :class:`~engine.graph.flat.Leaf` s (:mod:`engine.graph.flat`): one player layer per leaf, in
  tree order, a sub-machine's leaves where it is first used;
- every machine's transitions as a :class:`~engine.graph.transitions.TransitionTable`;
- the overrides (:class:`~engine.graph.flat.Override`) of the layer motions.

The :class:`BoundGraph` is shared, read-only, by every runtime of that character.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.anim.blending import subtree_mask
from engine.anim.blendspace import GradientBand
from engine.anim.clip import Clip, SampledClip
from engine.anim.pose import Pose
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, OssaError
from engine.graph.definition import (
    AdditiveMotion,
    Blend1DMotion,
    Blend2DMotion,
    ClipMotion,
    GraphDefinition,
    LayerMotion,
    Machine,
    MachineMotion,
    Mask,
    Motion,
)
from engine.graph.flat import Leaf, Override, Tree, TreeAdditive, TreeBlend, TreeClip, TreeLayer, TreeMachine
from engine.graph.parameters import Parameters
from engine.graph.transitions import TransitionTable
from engine.math._checks import FloatArray
from engine.player.compose import joint_index


@dataclass(frozen=True)
class BoundState:
    """A state with its flat tree; ``loops`` says whether its phase wraps or stops at 1.

    ``synced``: whether its phase comes from the synced clips (else from all of them);
    ``machine``: the sub-machine it plays, if it is a machine state; ``leaves``: the indices of
    the leaves of its own tree (a sub-machine's are that machine's).
    """

    name: str
    tree: Tree
    speed: float
    loops: bool
    synced: bool
    machine: str | None
    leaves: tuple[int, ...]


@dataclass(frozen=True)
class BoundMachine:
    """States, start state and the transition table of one machine."""

    name: str
    states: tuple[BoundState, ...]
    start: int
    transitions: TransitionTable

    def state_index(self, name: str) -> int:
        """Index of the state called ``name``."""
        for k, state in enumerate(self.states):
            if state.name == name:
                return k
        raise InvalidInputError(
            f"no state {name!r} in machine {self.name!r}; the states are {[s.name for s in self.states]}"
        )


@dataclass(frozen=True)
class BoundGraph:
    """A graph definition checked against one character and compiled (shared by runtimes).

    Attributes
    ----------
    leaves
        Every clip of every tree, one player layer each, in layer order.
    overrides
        The layer motions' overrides, in override order.
    played
        The names of the character's clips the graph plays.
    root_motion
        The joint whose planar motion the clips play without (its travel is the runtime's root
        motion), or ``None``.
    """

    definition: GraphDefinition
    skeleton: Skeleton
    machines: dict[str, BoundMachine]
    leaves: tuple[Leaf, ...]
    overrides: tuple[Override, ...]
    played: tuple[str, ...]
    root_motion: int | None = None

    @property
    def root(self) -> BoundMachine:
        """The top-level machine."""
        return self.machines["root"]


def bind_graph(
    definition: GraphDefinition,
    skeleton: Skeleton,
    clips: Mapping[str, Clip | SampledClip],
    *,
    root_motion: str | int | None = None,
) -> BoundGraph:
    """Check ``definition`` against a character and compile it (module docstring).

    Parameters
    ----------
    definition
        A validated document (:func:`~engine.graph.reader.load_graph`).
    skeleton
        The character's skeleton.
    clips
        Its clips by name (e.g. ``Character.clips``).
    root_motion
        Name or index of the joint whose horizontal translation and yaw become the runtime's
        root motion (:attr:`~engine.graph.GraphRuntime.root_translation`): every clip plays with
        that joint in place, as the Animator's ``root_motion`` does; ``None``: as they are.

    Raises
    ------
    SkeletonMismatchError
        ``root_motion`` names no joint of the skeleton.
    GraphDefinitionError
        Naming the document path: an unknown clip (with the closest name, by case first) or
        joint, a clip for another skeleton, a state mixing looping and play-once clips on its
        phase, an additive ``first_frame`` reference of a motion that is not a clip.
    """
    root = None if root_motion is None else joint_index(skeleton, root_motion, "root_motion")
    return _Binder(definition, skeleton, clips).graph(root)


def did_you_mean(name: str, known: list[str]) -> str:
    """``" (did you mean 'X'?)"`` for the closest of ``known`` (the same name in another case first), else ``""``."""
    same = [k for k in known if k.lower() == name.lower()]
    close = same or difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Binder:
    def __init__(
        self, definition: GraphDefinition, skeleton: Skeleton, clips: Mapping[str, Clip | SampledClip]
    ) -> None:
        self.definition = definition
        self.skeleton = skeleton
        self.clips = clips
        self.masks = {name: self.mask(mask) for name, mask in definition.masks.items()}
        self.leaves: list[Leaf] = []
        self.overrides: list[Override] = []
        self.machines: dict[str, BoundMachine] = {}
        self.ranges: dict[str, tuple[int, int]] = {}  # each machine's leaves
        self.played: dict[str, None] = {}
        self.rows = Parameters(definition.parameters, 0)
        self.defaults = Parameters(definition.parameters, 1)  # enough to list a tree's timing leaves

    def fail(self, where: str, message: str) -> OssaError:
        return self.definition.error(where, message)

    def mask(self, mask: Mask) -> FloatArray:
        for key, names in (("joints", mask.joints), ("exclude", mask.exclude)):
            for k, name in enumerate(names):
                if name not in self.skeleton.names:
                    raise self.fail(
                        f"{mask.path}.{key}[{k}]",
                        f"unknown joint {name!r}; the skeleton has {list(self.skeleton.names)}",
                    )
        return subtree_mask(self.skeleton, list(mask.joints), mask.weight, exclude=list(mask.exclude))

    def graph(self, root: int | None) -> BoundGraph:
        self.machine("root", self.definition.root)
        for name, machine in self.definition.machines.items():
            if name not in self.machines:
                self.machine(name, machine)
        return BoundGraph(
            self.definition,
            self.skeleton,
            {"root": self.machines["root"], **{n: self.machines[n] for n in self.definition.machines}},
            tuple(self.leaves),
            tuple(self.overrides),
            tuple(self.played),
            root,
        )

    def machine(self, name: str, machine: Machine) -> None:
        first = len(self.leaves)
        names = list(machine.states)
        states = []
        for index, state in enumerate(machine.states.values()):
            before = len(self.leaves)
            tree, _ = self.tree(state.motion, name, index, None)
            own = tuple(leaf.index for leaf in self.leaves[before:] if leaf.machine == name and leaf.state == index)
            one = np.zeros(1, dtype=np.intp)
            timing = [leaf for leaf, _ in tree.timing(self.defaults, one, True)]
            synced = bool(timing)
            if not synced:
                timing = [leaf for leaf, _ in tree.timing(self.defaults, one, False)]
            loops = {leaf.loop for leaf in timing}
            if len(loops) > 1:
                raise self.fail(
                    f"{state.path}.motion",
                    "the clips timing this state must all loop or all play once, got both "
                    f"({', '.join(sorted({leaf.clip.name for leaf in timing}))})",
                )
            machine_name = state.motion.machine if isinstance(state.motion, MachineMotion) else None
            states.append(BoundState(state.name, tree, state.speed, loops != {False}, synced, machine_name, own))
        pairs = [(-1, t) for t in machine.any_state]
        pairs += [(k, t) for k, state in enumerate(machine.states.values()) for t in state.transitions]
        table = TransitionTable.of(pairs, names, self.rows)
        self.machines[name] = BoundMachine(machine.name, tuple(states), names.index(machine.start), table)
        self.ranges[name] = (first, len(self.leaves))

    def tree(self, motion: Motion, machine: str, state: int, mask: FloatArray | None) -> tuple[Tree, set[str]]:
        """The flat tree of ``motion`` (its leaves appended) and the sub-machines it uses."""
        if isinstance(motion, ClipMotion):
            return TreeClip(self.leaf(motion, machine, state, mask, False, None)), set()
        if isinstance(motion, (Blend1DMotion, Blend2DMotion)):
            children, used = [], set()
            for child in motion.children:
                tree, inner = self.tree(child, machine, state, mask)
                children.append(tree)
                used |= inner
            if isinstance(motion, Blend1DMotion):
                return TreeBlend((motion.parameter,), np.array(motion.positions), tuple(children)), used
            band = GradientBand(np.array(motion.positions), motion.mode)
            return TreeBlend(motion.parameters, band, tuple(children)), used
        if isinstance(motion, AdditiveMotion):
            base, used = self.tree(motion.base, machine, state, mask)
            reference = self.reference(motion)
            masked = mask if motion.mask is None else _times(mask, self.masks[motion.mask])
            added, more = self.additive(motion.additive, machine, state, masked, reference)
            return TreeAdditive(base, added, motion.weight), used | more
        if isinstance(motion, LayerMotion):
            start = len(self.leaves)
            base, used = self.tree(motion.base, machine, state, mask)
            ranges = [(start, len(self.leaves))] + [self.ranges[m] for m in sorted(used) if self.ranges[m][1] <= start]
            overrides = []
            for low, high in ranges:
                if high > low:
                    overrides.append(len(self.overrides))
                    self.overrides.append(Override(low, high, self.masks[motion.mask]))
            layer, more = self.tree(motion.layer, machine, state, _times(mask, self.masks[motion.mask]))
            return TreeLayer(base, layer, motion.weight, tuple(overrides)), used | more
        assert isinstance(motion, MachineMotion)
        if motion.machine not in self.machines:
            self.machine(motion.machine, self.definition.machines[motion.machine])
        return TreeMachine(motion.machine), {motion.machine}

    def additive(
        self, motion: Motion, machine: str, state: int, mask: FloatArray | None, reference: Pose | None
    ) -> tuple[Tree, set[str]]:
        """The additive side of an additive motion: its clips become additive leaves."""
        if isinstance(motion, ClipMotion):
            return TreeClip(self.leaf(motion, machine, state, mask, True, reference)), set()
        if isinstance(motion, (Blend1DMotion, Blend2DMotion)):
            children = [self.additive(child, machine, state, mask, reference)[0] for child in motion.children]
            if isinstance(motion, Blend1DMotion):
                return TreeBlend((motion.parameter,), np.array(motion.positions), tuple(children)), set()
            return TreeBlend(
                motion.parameters, GradientBand(np.array(motion.positions), motion.mode), tuple(children)
            ), set()
        raise self.fail(motion.path, "an additive motion must be a clip or a blend space of clips")

    def reference(self, motion: AdditiveMotion) -> Pose | None:
        """The additive reference pose: the clip's first frame, or the rest pose."""
        if motion.reference != "first_frame":
            return self.skeleton.rest_pose
        if not isinstance(motion.additive, ClipMotion):
            raise self.fail(
                f"{motion.path}.reference",
                "reference 'first_frame' needs a clip as the additive motion; use 'rest' for other motions",
            )
        clip = self.clip(motion.additive)
        return sample(clip, self.skeleton.rest_pose, np.zeros(1))[0]

    def clip(self, motion: ClipMotion) -> Clip | SampledClip:
        clip = self.clips.get(motion.clip)
        if clip is None:
            known = sorted(self.clips)
            hint = did_you_mean(motion.clip, known)
            raise self.fail(f"{motion.path}.clip", f"unknown clip {motion.clip!r}{hint}; the character has {known}")
        if clip.num_targets != self.skeleton.num_joints:
            raise self.fail(
                f"{motion.path}.clip",
                f"clip {motion.clip!r} animates {clip.num_targets} joints "
                f"but the skeleton has {self.skeleton.num_joints}",
            )
        return clip

    def leaf(
        self, motion: ClipMotion, machine: str, state: int, mask: FloatArray | None, additive: bool, reference: Any
    ) -> Leaf:
        clip = self.clip(motion)
        self.played[motion.clip] = None
        leaf = Leaf(
            len(self.leaves), clip, motion.speed, motion.loop, motion.sync, additive, reference, mask, machine, state,
            float(clip.duration),
        )  # fmt: skip
        self.leaves.append(leaf)
        return leaf


def _times(mask: FloatArray | None, other: FloatArray) -> FloatArray:
    return other if mask is None else mask * other
