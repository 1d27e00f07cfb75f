"""Clips of one skeleton packed for the compiled frame kernels: one flat table, groups, targets.

A :class:`ClipBank` is built once (load time) from a skeleton and its clips and is shared,
read-only, by every crowd that plays them. It holds the exact numbers of
:func:`~engine.anim.compiled_clip.compile_clip` (each clip re-keyed on one merged timeline, channels
grouped by path and evaluation kind), laid out so that one character reads one contiguous row
per clip:

- ``table``: clip ``k``'s compiled ``table`` transposed, ``(M, R)`` → one row of ``R``
  coefficients per merged segment, starting at ``table_starts[k] + m * row_sizes[k]``. Inside a
  row the groups keep :class:`~engine.anim.compiled_clip.CompiledClip`'s order: ``terms × width ×
  count`` coefficients (channel innermost), then a slerp group's ``count`` arcs.
- ``groups``: one row of :data:`GROUP_FIELDS` per group, clip ``k`` owning
  ``group_starts[k]:group_starts[k+1]``; ``targets[group.targets : +count]`` are its joints. A
  ``REST`` group per path lists the joints no channel of the clip animates (they play the rest
  pose).
- ``timelines``/``inverse_intervals``: every clip's merged key times and ``1 / interval``,
  concatenated; clip ``k`` owns ``timeline_starts[k]:timeline_starts[k+1]``.
- ``rest``: ``(10, J)`` rest translation, rotation (x y z w) and scale, component-major.

A group evaluates as :mod:`engine.anim.sampling` does, so the kernels' samples are bit-identical
to :func:`~engine.anim.sampling.sample`'s: a ``poly`` group is Horner in the segment parameter
``u`` (``terms`` 1: STEP or one key; 2: LINEAR; 4: CUBICSPLINE, rotations normalised), a
``slerp`` group is ``cos(u·arc)·start + sin(u·arc)·direction`` with the sine and cosine from
their Taylor series of ``sine_terms`` terms.

**Compressed clips** (:class:`~engine.compress.clip.CompressedClip`) are kept as their bits:
``compressed[k]`` is their index in :attr:`ClipBank.compressed_arrays`
(:func:`~engine.compress.library.kernel_arrays`), which the kernels decode per layer
(:func:`engine.compress._kernels.sample_clip`), ``-1`` for a clip of keys. A compressed clip has
no groups and a one-key timeline (its uniform samples need no search).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.clip import PATH_WIDTHS, Clip
from engine.anim.compiled_clip import CompiledClip, compiled
from engine.anim.skeleton import Skeleton
from engine.compress.clip import CompressedClip
from engine.compress.library import kernel_arrays, skeleton_difference
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, readonly_copy

#: Columns of :attr:`ClipBank.groups`.
GROUP_FIELDS = (
    "kind",
    "component",
    "width",
    "terms",
    "count",
    "rows",
    "arcs",
    "sine_terms",
    "normalize",
    "targets",
    "contiguous",
)
#: Group kinds: Horner polynomial, slerp arc, or the rest values of the joints no channel animates.
POLY, SLERP, REST = range(3)
#: First pose component of each path in a ``(10, J)`` pose: translation 0-2, rotation 3-6, scale 7-9.
COMPONENT = {"translation": 0, "rotation": 3, "scale": 7}

Int64Array = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False)
class ClipBank:
    """A skeleton and its clips, packed for :mod:`engine.backend` (see the module docstring).

    Parameters
    ----------
    skeleton
        The skeleton every clip targets (its joints, rest pose and inverse bind matrices).
    clips
        Clips (or compiled clips), or compressed clips of ``skeleton``, over its ``J`` joints; a
        frame plays clip ``k`` on a layer by index (:attr:`names` gives each index's name).
    table_dtype
        ``float64`` (default: exactly the compiled clips' numbers) or ``float32`` (half the memory
        traffic; positions and rotations then carry float32 rounding, about 1e-7 relative).

    Attributes
    ----------
    parents
        ``(J,)`` int64 parent of each joint, ``-1`` for roots (parents before children).
    rest
        ``(10, J)`` rest translation (3), rotation (4, x y z w) and scale (3), component-major.
    inverse_bind
        ``(J, 4, 4)`` inverse bind matrices.
    timelines, inverse_intervals, timeline_starts
        Merged key times of every clip, ``1 / interval`` per segment (0 for the last), offsets.
    table, table_starts, row_sizes
        Flat coefficient table, start of each clip's rows, numbers per row.
    groups, group_starts, targets
        ``(G, 11)`` int64 group descriptors (:data:`GROUP_FIELDS`), each clip's first group,
        and the target joints of every group.
    affine_binds
        Whether every inverse bind matrix has the last row ``0 0 0 1`` (the palette then skips
        a quarter of its products; the result is the same).
    compressed
        ``(K,)`` int64: each compressed clip's index in :attr:`compressed_arrays`, ``-1`` for the others.
    compressed_arrays
        The compressed clips' bits and static poses (:func:`~engine.compress.library.kernel_arrays`).
    """

    skeleton: Skeleton
    clips: tuple[CompiledClip | CompressedClip, ...]
    parents: Int64Array
    rest: FloatArray
    inverse_bind: FloatArray
    timelines: FloatArray
    inverse_intervals: FloatArray
    timeline_starts: Int64Array
    table: npt.NDArray[np.floating[Any]]
    table_starts: Int64Array
    row_sizes: Int64Array
    groups: Int64Array
    group_starts: Int64Array
    targets: Int64Array
    affine_binds: bool
    compressed: Int64Array
    compressed_arrays: tuple[np.ndarray, ...]

    def __init__(
        self,
        skeleton: Skeleton,
        clips: Sequence[Clip | CompiledClip | CompressedClip],
        *,
        table_dtype: Any = np.float64,
    ):
        if not isinstance(skeleton, Skeleton):
            raise InvalidInputError(f"skeleton must be a Skeleton, got {type(skeleton).__name__}")
        dtype = np.dtype(table_dtype)
        if dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
            raise InvalidInputError(f"table_dtype must be float64 or float32, got {dtype}")
        if isinstance(clips, (Clip, CompiledClip, CompressedClip)) or not len(clips):
            raise InvalidInputError(f"clips must be a non-empty sequence of clips, got {clips!r}")
        joints = skeleton.num_joints
        packed = [_checked(skeleton, clip, k) for k, clip in enumerate(clips)]
        bits = [one for one in packed if isinstance(one, CompressedClip)]
        groups: list[list[int]] = []
        targets: list[npt.NDArray[np.integer[Any]]] = []
        group_starts = [0]
        target_count = 0
        for one in packed:
            if isinstance(one, CompressedClip):  # no groups: the kernels decode its bits
                group_starts.append(len(groups))
                continue
            for group in one.groups:
                if group.path not in COMPONENT:  # morph weights: pose sampling ignores them, as sample() does
                    continue
                joints_of_group = np.arange(joints)[group.targets]
                arcs = group.angle_rows.start if group.angle_rows is not None else 0
                kind = SLERP if group.kind == "slerp" else POLY
                row = [kind, COMPONENT[group.path], group.width, group.terms, group.count]
                row += [group.rows.start, arcs, group.sine_terms, group.normalize, target_count]
                row.append(_first(joints_of_group))
                groups.append([int(v) for v in row])
                targets.append(joints_of_group)
                target_count += joints_of_group.size
            for path, static in one.static.items():
                if static.size:
                    row = [REST, COMPONENT[path], PATH_WIDTHS[path], 0, static.size, 0, 0, 0, 0, target_count]
                    groups.append([*row, _first(static)])
                    targets.append(static)
                    target_count += static.size
            group_starts.append(len(groups))
        # (M, R) in C order: one row per segment; a compressed clip: a one-key timeline, no rows
        tables = [one.table.T.reshape(-1) if isinstance(one, CompiledClip) else np.zeros(0) for one in packed]
        timelines = [one.timeline if isinstance(one, CompiledClip) else np.array([one.start]) for one in packed]
        intervals = [one.inverse_intervals if isinstance(one, CompiledClip) else np.zeros(1) for one in packed]
        slots = np.cumsum([isinstance(one, CompressedClip) for one in packed]) - 1
        fields = {
            "skeleton": skeleton,
            "clips": tuple(packed),
            "parents": skeleton.parents.astype(np.int64),
            "rest": np.ascontiguousarray(
                np.concatenate((skeleton.rest_translations, skeleton.rest_rotations, skeleton.rest_scales), 1).T
            ),
            "inverse_bind": np.ascontiguousarray(skeleton.inverse_bind_matrices),
            "timelines": np.concatenate(timelines),
            "inverse_intervals": np.concatenate(intervals),
            "timeline_starts": np.cumsum([0] + [t.size for t in timelines], dtype=np.int64),
            "table": np.concatenate(tables).astype(dtype),
            "table_starts": np.cumsum([0] + [t.size for t in tables[:-1]], dtype=np.int64),
            "row_sizes": np.array(
                [one.table.shape[0] if isinstance(one, CompiledClip) else 0 for one in packed], dtype=np.int64
            ),
            "groups": np.array(groups, dtype=np.int64).reshape(-1, len(GROUP_FIELDS)),
            "group_starts": np.array(group_starts, dtype=np.int64),
            "targets": np.concatenate(targets).astype(np.int64) if targets else np.zeros(0, dtype=np.int64),
            "affine_binds": bool(np.all(skeleton.inverse_bind_matrices[:, 3] == (0.0, 0.0, 0.0, 1.0))),
            "compressed": np.where([isinstance(one, CompressedClip) for one in packed], slots, -1).astype(np.int64),
        }
        for name, value in fields.items():
            object.__setattr__(self, name, readonly_copy(value) if isinstance(value, np.ndarray) else value)
        object.__setattr__(self, "compressed_arrays", kernel_arrays(bits, skeleton.rest_pose))

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``."""
        return self.skeleton.num_joints

    @property
    def num_clips(self) -> int:
        """Number of clips ``K``."""
        return len(self.clips)

    @property
    def names(self) -> tuple[str, ...]:
        """Name of each clip, by index."""
        return tuple(one.name if isinstance(one, CompressedClip) else one.clip.name for one in self.clips)

    def cursors(self, k: int, times: FloatArray) -> Int64Array:
        """The cursors the kernels leave for clip ``k`` at ``times``: the merged-timeline segment, or the first key."""
        one = self.clips[k]
        if isinstance(one, CompressedClip):
            return one.keys(times)[0].astype(np.int64)
        return np.maximum(np.searchsorted(one.timeline, times, side="right") - 1, 0)

    def index(self, name: str) -> int:
        """Index of the clip called ``name``; unknown names raise :class:`InvalidInputError`."""
        try:
            return self.names.index(name)
        except ValueError:
            raise InvalidInputError(f"no clip named {name!r} in this bank; it has {list(self.names)}") from None

    @cached_property
    def arrays(self) -> tuple[Any, ...]:
        """The packed arrays in the order the kernels unpack them (inverse binds flat)."""
        return (
            self.parents,
            self.rest,
            self.inverse_bind.reshape(-1),
            self.timelines,
            self.inverse_intervals,
            self.timeline_starts,
            self.table,
            self.table_starts,
            self.row_sizes,
            self.groups,
            self.group_starts,
            self.targets,
            self.affine_binds,
            self.compressed,
            *self.compressed_arrays,  # flat: a parallel loop's body takes no tuple of tuples
        )

    def __repr__(self) -> str:
        return f"ClipBank({self.num_joints} joints, clips {list(self.names)}, {self.table.dtype})"


def _checked(skeleton: Skeleton, clip: Any, k: int) -> CompiledClip | CompressedClip:
    """``clips[k]`` compiled (a compressed clip as it is), checked against ``skeleton``."""
    if isinstance(clip, CompressedClip):
        if clip.num_targets != skeleton.num_joints:
            raise SkeletonMismatchError(
                f"clips[{k}] ({clip.name!r}) animates {clip.num_targets} targets but the skeleton has "
                f"{skeleton.num_joints} joints"
            )
        if clip.skeleton is not None and (difference := skeleton_difference(clip.skeleton, skeleton)):
            raise SkeletonMismatchError(
                f"clips[{k}] ({clip.name!r}) was compressed for another skeleton than the bank's: {difference}"
            )
        return clip
    one = compiled(clip)
    if one.num_targets != skeleton.num_joints:
        raise SkeletonMismatchError(
            f"clips[{k}] ({one.clip.name!r}) animates {one.num_targets} targets but the skeleton "
            f"has {skeleton.num_joints} joints"
        )
    return one


def _first(joints: npt.NDArray[np.integer[Any]]) -> int:
    """The first joint when ``joints`` are consecutive (the kernels then index without a gather), else -1."""
    return int(joints[0]) if np.array_equal(joints, np.arange(joints[0], joints[0] + joints.size)) else -1
