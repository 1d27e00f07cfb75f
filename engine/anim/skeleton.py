"""The runtime skeleton: flat, read-only arrays in depth-first order (parents before children)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.anim.layout import as_slice
from engine.anim.pose import Pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array, readonly_copy, trusted
from engine.math.quat import check_unit


@dataclass(frozen=True)
class Level:
    """One step of a composition plan: joints of one depth and their parents (slices where possible).

    A level whose joints share one parent stores that parent as a one-element slice, which
    broadcasts over the level.
    """

    joints: slice | IntArray
    parents: slice | IntArray


def _level(joints: IntArray, parents: IntArray) -> Level:
    first = int(parents[0])
    shared = bool(np.all(parents == first))
    return Level(as_slice(joints), slice(first, first + 1) if shared else as_slice(parents))


@dataclass(frozen=True, eq=False)
class Skeleton:
    """A joint hierarchy: ``parents[i] < i`` (``-1`` for roots), names, rest pose, inverse binds.

    Parameters
    ----------
    names
        Joint names ``(J,)``; unique.
    parents
        Parent index of each joint ``(J,)``, ``-1`` for a root, always smaller than the joint's
        own index (depth-first or breadth-first order both satisfy it).
    rest_translations, rest_rotations, rest_scales
        Rest (bind) pose in each joint's parent space: ``(J, 3)``, unit ``(J, 4)``, ``(J, 3)``.
    inverse_bind_matrices
        ``(J, 4, 4)`` model-space-to-joint-space matrices; identity when ``None``.
    humanoid
        Body role → joint name, as the file declares them (a VRM humanoid bone map, roles of
        :data:`engine.anim.humanoid.ROLES`): :func:`~engine.anim.humanoid.find_humanoid` takes
        them before any name guessing. Empty when the file says nothing.

    Attributes
    ----------
    levels
        Joint indices grouped by depth; ``levels[0]`` holds exactly the roots. ``local_to_model``
        does one numpy operation per level.
    plan
        Levels ``1 …`` as :class:`Level` steps (slices where the indices allow): what
        ``local_to_model`` composes, computed once here.
    rest_pose
        The rest pose as a read-only :class:`~engine.anim.pose.Pose` ``(J,)`` (the same arrays
        as ``rest_translations``, ``rest_rotations``, ``rest_scales``); ``.copy()`` it to edit.
    """

    names: tuple[str, ...]
    parents: IntArray
    rest_translations: FloatArray
    rest_rotations: FloatArray
    rest_scales: FloatArray
    inverse_bind_matrices: FloatArray
    humanoid: Mapping[str, str]
    levels: tuple[IntArray, ...] = field(init=False)
    depths: IntArray = field(init=False)
    plan: tuple[Level, ...] = field(init=False)
    rest_pose: Pose = field(init=False, repr=False)
    _subtree_plans: dict[int, tuple[slice | IntArray, tuple[Level, ...]]] = field(init=False, repr=False)

    def __init__(
        self,
        names: Sequence[str],
        parents: Any,
        rest_translations: Any | None = None,
        rest_rotations: Any | None = None,
        rest_scales: Any | None = None,
        inverse_bind_matrices: Any | None = None,
        humanoid: Mapping[str, str] | None = None,
    ) -> None:
        names = tuple(str(n) for n in names)
        parents_arr = np.asarray(parents)
        count = len(names)
        if parents_arr.shape != (count,) or (count and not np.issubdtype(parents_arr.dtype, np.integer)):
            raise InvalidInputError(
                f"parents must be {count} integers (one per name), got shape {parents_arr.shape} of {parents_arr.dtype}"
            )
        parents_arr = parents_arr.astype(np.intp)
        bad = np.nonzero((parents_arr >= np.arange(count)) | (parents_arr < -1))[0]
        if bad.size:
            j = int(bad[0])
            raise InvalidInputError(
                f"parents[{j}] = {parents_arr[j]} must be -1 or a smaller index than {j} (parents before children)"
            )
        if len(set(names)) != count:
            dupes = sorted({n for n in names if names.count(n) > 1})
            raise InvalidInputError(f"joint names must be unique, got duplicates {dupes}")
        t = (
            np.zeros((count, 3))
            if rest_translations is None
            else as_array(rest_translations, "rest_translations", (3,))
        )
        r = (
            np.tile([0.0, 0.0, 0.0, 1.0], (count, 1))
            if rest_rotations is None
            else check_unit(rest_rotations, "rest_rotations")
        )
        s = np.ones((count, 3)) if rest_scales is None else as_array(rest_scales, "rest_scales", (3,))
        ibm = (
            np.tile(np.eye(4), (count, 1, 1))
            if inverse_bind_matrices is None
            else as_array(inverse_bind_matrices, "inverse_bind_matrices", (4, 4))
        )
        for name, arr, tail in (("rest_translations", t, 3), ("rest_rotations", r, 4), ("rest_scales", s, 3)):
            if arr.shape != (count, tail):
                raise InvalidInputError(f"{name} must have shape ({count}, {tail}), got {arr.shape}")
        if ibm.shape != (count, 4, 4):
            raise InvalidInputError(f"inverse_bind_matrices must have shape ({count}, 4, 4), got {ibm.shape}")
        roles = dict(humanoid or {})
        unknown = sorted(f"{role}: {name!r}" for role, name in roles.items() if name not in names)
        if unknown:
            raise InvalidInputError(f"humanoid roles name joints the skeleton lacks: {', '.join(unknown)}")
        depths = np.zeros(count, dtype=np.intp)
        for j in range(count):  # build time only, once per skeleton
            if parents_arr[j] >= 0:
                depths[j] = depths[parents_arr[j]] + 1
        levels = tuple(readonly_copy(np.nonzero(depths == d)[0]) for d in range(int(depths.max(initial=-1)) + 1))
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "parents", readonly_copy(parents_arr))
        object.__setattr__(self, "rest_translations", readonly_copy(t))
        object.__setattr__(self, "rest_rotations", readonly_copy(r))
        object.__setattr__(self, "rest_scales", readonly_copy(s))
        object.__setattr__(self, "inverse_bind_matrices", readonly_copy(ibm))
        object.__setattr__(self, "humanoid", MappingProxyType(roles))
        object.__setattr__(self, "depths", readonly_copy(depths))
        with trusted():  # validated just above
            object.__setattr__(self, "rest_pose", Pose(self.rest_translations, self.rest_rotations, self.rest_scales))
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "plan", tuple(_level(joints, parents_arr[joints]) for joints in levels[1:]))
        object.__setattr__(self, "_subtree_plans", {})

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return len(self.names)

    def index(self, name: str) -> int:
        """Index of the joint called ``name``; unknown names raise :class:`SkeletonMismatchError`."""
        try:
            return self.names.index(name)
        except ValueError:
            raise SkeletonMismatchError(
                f"no joint named {name!r} in this skeleton ({self.num_joints} joints)"
            ) from None

    def subtree(self, joint: int | str) -> IntArray:
        """Indices of ``joint`` and all its descendants, ascending."""
        root = self.index(joint) if isinstance(joint, str) else int(joint)
        if not 0 <= root < self.num_joints:
            raise SkeletonMismatchError(f"joint index {root} is out of range for {self.num_joints} joints")
        inside = np.zeros(self.num_joints, dtype=bool)
        inside[root] = True
        for j in range(root + 1, self.num_joints):  # parents precede children: one forward pass
            p = self.parents[j]
            inside[j] = p >= 0 and inside[p]
        return np.nonzero(inside)[0]

    def subtree_plan(self, joint: int) -> tuple[slice | IntArray, tuple[Level, ...]]:
        """The joints of ``joint``'s subtree and the levels that compose it (computed once per joint).

        The first level is ``joint`` itself under its parent (absent for a root, which keeps its
        local matrix); the rest are the deeper levels of the subtree. ``local_to_model(...,
        from_joint=joint)`` recomputes exactly these joints.
        """
        plans = self._subtree_plans
        found = plans.get(joint)
        if found is None:
            inside = self.subtree(joint)
            depths = self.depths[inside]
            levels = []
            for depth in range(int(depths.min()), int(depths.max()) + 1):  # build time, once per joint
                joints = inside[depths == depth]
                if depth > 0:
                    levels.append(_level(joints, self.parents[joints]))
            found = plans[joint] = (as_slice(inside), tuple(levels))
        return found

    def chain(self, start: int, end: int) -> IntArray:
        """Joint indices from ``start`` down to ``end``; raises unless ``start`` is an ancestor of ``end``."""
        path = [int(end)]
        while path[-1] != start:
            parent = int(self.parents[path[-1]])
            if parent < 0:
                raise SkeletonMismatchError(
                    f"joint {start} ({self.names[start]!r}) is not an ancestor of joint {end} ({self.names[end]!r})"
                )
            path.append(parent)
        return np.array(path[::-1], dtype=np.intp)

    def __repr__(self) -> str:
        roots = [self.names[i] for i in self.levels[0]] if self.levels else []
        return f"Skeleton({self.num_joints} joints, depth {len(self.levels)}, roots {roots})"
