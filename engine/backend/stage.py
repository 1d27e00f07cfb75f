"""The transition stage and captures on the compiled kernels (:mod:`engine.backend._transition_kernels` and others).

What a player's transition stage (:mod:`engine.player.transitions`) and its captures
(:mod:`engine.player.capture`) run when its buffers are the kernels' (the numba backend):

- the stage's kinds (:data:`FROZEN` ...) and how its decays are packed per character and joint
  for the kernels (:data:`QUINTIC_LAYOUT`, :data:`SPRING_LAYOUT`, :func:`pack`, :func:`unpack`);
- :func:`apply_offsets`, :func:`apply_blends`: the stage on a character-major pose buffer, in place;
- :class:`CaptureFrame`: ``K`` captures of a :class:`~engine.backend.state.FrameState`'s layers at
  given times: the blended pose (the frame kernels' character, which also hands over each
  weighted layer as sampled) and right after it its exact velocity, row by row
  (:mod:`engine.backend._capture_kernels`).

Nothing here imports numba: the kernel module is loaded on the first compiled call.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TypeVar

import numpy as np

from engine.anim.clip_velocity import VelocityTable
from engine.anim.inertialization import QuinticDecay, SpringDecay
from engine.anim.layout import PoseBuffer
from engine.anim.pose import Pose
from engine.anim.rootmotion import UP
from engine.anim.velocity import PoseVelocity
from engine.backend.select import compiled_module
from engine.backend.state import FrameState, Int64Array
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray, trusted

#: Transition kinds of the stage; ``NONE``: no transition in progress.
NONE, FROZEN, INERTIALIZE, SPRING, DEAD_BLEND = range(5)
#: How a quintic decay is packed per character and joint: its fields in order, with their widths.
QUINTIC_LAYOUT = (
    ("axis", 3),
    ("position", 1),
    ("velocity", 1),
    ("acceleration", 1),
    ("end", 1),
    ("drift", 3),
    ("duration", 1),
    ("inverse_end", 1),
    ("first", 1),
    ("second", 1),
    ("inverse_duration", 1),
    ("sweep", 3),
)
#: How a spring decay is packed.
SPRING_LAYOUT = (("offset", 3), ("velocity", 3), ("rate", 1))

Decay = TypeVar("Decay", QuinticDecay, SpringDecay)


def transition_kernels() -> ModuleType:
    """The compiled transition kernels, :mod:`engine.backend._transition_kernels` (imports numba on first use)."""
    return compiled_module("engine.backend._transition_kernels")


def capture_kernels() -> ModuleType:
    """The compiled captures, :mod:`engine.backend._capture_kernels` (imports numba on first use)."""
    return compiled_module("engine.backend._capture_kernels")


def columns(layout: tuple[tuple[str, int], ...]) -> dict[str, slice]:
    """Each field's columns in a packed decay of ``layout``."""
    found, start = {}, 0
    for name, width in layout:
        found[name] = slice(start, start + width)
        start += width
    return found


def width(layout: tuple[tuple[str, int], ...]) -> int:
    """The numbers per packed decay of ``layout``."""
    return sum(w for _, w in layout)


def pack(decay: QuinticDecay | SpringDecay, out: FloatArray) -> None:
    """Write ``decay`` (batch ``(...)``) into ``out`` ``(..., F)``, its fields in their layout's order."""
    layout = QUINTIC_LAYOUT if isinstance(decay, QuinticDecay) else SPRING_LAYOUT
    for name, where in columns(layout).items():
        values = getattr(decay, name)
        out[..., where] = values if values.ndim == out.ndim else values[..., None]


def unpack(kind: type[Decay], packed: FloatArray) -> Decay:
    """The decay of ``kind`` whose fields are views of ``packed`` ``(..., F)``."""
    layout = QUINTIC_LAYOUT if kind is QuinticDecay else SPRING_LAYOUT
    values = {name: packed[..., where] if where.stop - where.start > 1 else packed[..., where.start]
              for name, where in columns(layout).items()}  # fmt: skip
    return kind(**values)


def _field_starts(layout: tuple[tuple[str, int], ...]) -> Int64Array:
    """The first column of each field of ``layout``, in its order."""
    return np.array([where.start for where in columns(layout).values()], dtype=np.int64)


#: The first column of each field of a packed quintic and spring decay: what the offset kernels index by.
QUINTIC_FIELDS, SPRING_FIELDS = _field_starts(QUINTIC_LAYOUT), _field_starts(SPRING_LAYOUT)

#: The up a capture splits the root about (+Y, as :mod:`engine.player.capture` does on numpy).
Y_UP = np.array(UP)


def character_major(pose: PoseBuffer) -> bool:
    """Whether ``pose`` keeps each character's numbers together (the layout the kernels read and write)."""
    return all(array.transpose(2, 1, 0).flags.c_contiguous for array in pose.arrays())


def character_views(pose: PoseBuffer) -> tuple[FloatArray, FloatArray, FloatArray]:
    """A character-major pose buffer as the kernels read it: translations, rotations, scales ``(C, J, width)``."""
    if not character_major(pose):
        raise InvalidInputError("the pose buffer must keep each character's numbers together (character-major)")
    t, r, s = (array.transpose(2, 1, 0) for array in pose.arrays())
    return t, r, s


def apply_offsets(
    characters: IntArray,
    clock: FloatArray,
    transitions: tuple[FloatArray, IntArray, FloatArray],
    decays: tuple[FloatArray, FloatArray],
    columns: tuple[IntArray, IntArray],
    pose: tuple[FloatArray, FloatArray, FloatArray],
    threads: int = 1,
) -> int:
    """Inertialized and spring offsets of those of ``characters`` ``(K,)`` in such a transition, added to ``pose``.

    ``clock`` ``(C,)``: the player's; ``transitions`` = each character's transition start, kind
    and duration ``(C,)`` (the stage's own arrays: float64, int64, float64); ``decays`` = packed
    quintic and spring decays ``(C, F, n)`` over the columns ``columns`` = (joints ``(n,)``,
    bounds ``(4,)``): the translations' from column 0, the rotations' from ``bounds[1]``, the
    scales' from ``bounds[2]`` to ``bounds[3] = n``; ``pose``: :func:`character_views` of a
    pose buffer; on ``threads`` threads (blocks of characters; the same numbers). Returns how
    many of ``characters`` are in a transition of another kind (left as they are).
    """
    quintic, spring = decays
    return compiled_module("engine.backend._pose_offset_kernels").apply_offsets_on(
        threads,
        np.ascontiguousarray(characters, dtype=np.int64),
        np.ascontiguousarray(clock, dtype=np.float64),
        transitions,
        (quintic, spring, QUINTIC_FIELDS, SPRING_FIELDS),
        columns,
        pose,
    )


def apply_blends(
    characters: IntArray,
    elapsed: FloatArray,
    kinds: IntArray,
    timing: tuple[FloatArray, FloatArray],
    snapshots: tuple[FloatArray, FloatArray],
    pose: PoseBuffer,
) -> None:
    """Frozen and dead-blend transitions of ``characters`` ``(K,)`` on ``pose`` (character-major), in place.

    ``timing`` = durations and half-lives ``(C,)``; ``snapshots`` = poses ``(C, 10, J)`` and
    velocities ``(C, 9, J)`` at the switch.
    """
    transition_kernels().apply_blends(
        np.ascontiguousarray(characters, dtype=np.int64),
        np.ascontiguousarray(elapsed, dtype=np.float64),
        np.ascontiguousarray(kinds, dtype=np.int64),
        timing,
        snapshots,
        character_views(pose),
    )


class CaptureFrame:
    """Captures of a :class:`FrameState`'s layers on the compiled kernels (module docstring).

    Parameters
    ----------
    state
        The layers (clips per layer, masks, overrides, the in-place root).
    tables
        Each layer's clip's :class:`~engine.anim.clip_velocity.VelocityTable` (a clip of STEP and
        LINEAR channels; layers sharing a table share it here too), or ``None`` for a layer that
        is never weighted in a capture (the player's additive layers, added afterwards).
    """

    def __init__(self, state: FrameState, tables: Sequence[VelocityTable | None]) -> None:
        if len(tables) != state.num_layers:
            raise InvalidInputError(f"tables must hold one table per layer ({state.num_layers}), got {len(tables)}")
        distinct: dict[int, int] = {}
        packed: list[VelocityTable] = []
        for table in tables:
            if table is not None and id(table) not in distinct:
                distinct[id(table)] = len(packed)
                packed.append(table)
        self.state = state
        self.table_of = np.array([0 if t is None else distinct[id(t)] for t in tables], dtype=np.int64)
        self._untabled = np.array([t is None for t in tables])
        joints = state.bank.num_joints
        self.key_times = np.concatenate([t.times for t in packed]) if packed else np.zeros(0)
        self.key_starts = np.cumsum([0] + [t.times.size for t in packed]).astype(np.int64)
        segments = [t.velocities.reshape(-1, joints, 3, 3) for t in packed]
        self.velocities = np.ascontiguousarray(np.concatenate(segments)) if segments else np.zeros((0, joints, 3, 3))
        self.segment_starts = np.cumsum([0] + [s.shape[0] for s in segments[:-1]]).astype(np.int64)
        self._scratch = (np.zeros((0, 0, 11, joints)), np.zeros((0, 0, 9)), np.zeros((0, 0, joints)))

    def _block_scratch(self, blocks: int, slots: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Per block: ``slots`` layers' samples, their roots' velocities and joint weights (kept; grown on demand)."""
        samples = self._scratch[0]
        if samples.shape[0] < blocks or samples.shape[1] < slots:
            blocks, slots = max(blocks, samples.shape[0]), max(slots, samples.shape[1])
            joints = samples.shape[3]
            self._scratch = (
                np.empty((blocks, slots, 11, joints)),
                np.empty((blocks, slots, 9)),
                np.empty((blocks, 2 * slots, joints)),
            )
        return self._scratch

    def capture(
        self,
        characters: IntArray,
        times: FloatArray,
        rates: FloatArray,
        weights: FloatArray,
        weight_rates: FloatArray,
        override_weights: FloatArray,
        leaving: np.ndarray,
        loops: np.ndarray,
        threshold: float,
    ) -> tuple[Pose, PoseVelocity, FloatArray]:
        """The blended pose ``(K, J)``, its velocity and the root's planar velocity ``(K, 3)`` of ``K`` rows.

        Row ``k`` is character ``characters[k]``'s layers at ``times[:, k]`` (clip seconds) moving
        at ``rates`` (clip seconds per second), with ``weights`` and their ``weight_rates`` ``(L,
        K)``, the overrides at ``override_weights`` ``(G, K)``; ``leaving`` ``(L, K)``: the motion
        leaving the time (a layer entered now) rather than arriving; ``loops`` ``(L,)``: which
        layers repeat. Inputs are trusted (the player's).
        """
        state, count = self.state, characters.size
        joints, layers = state.bank.num_joints, state.num_layers
        shape = (layers, count)
        times, weights = np.ascontiguousarray(times, np.float64), np.ascontiguousarray(weights, np.float64)
        if np.any(weights[self._untabled] > 0.0):
            raise InvalidInputError("a layer without a velocity table has weight in a capture")
        override_weights = np.ascontiguousarray(override_weights, np.float64)
        slots = max(int((weights > 0.0).sum(axis=0).max(initial=0)), 1)
        local = tuple(np.empty((count, joints, w)) for w in (3, 4, 3))
        clip_ids = np.ascontiguousarray(state.clip_ids[:, characters])
        cursors = np.zeros(shape, dtype=np.int64)
        masks, overrides = state.kernel_masks(override_weights)
        root = -1 if state.in_place is None else state.in_place
        # a capture splits the root about +Y on both backends (engine.player.capture._root_apart)
        inputs = ((clip_ids, times, weights, cursors), masks, overrides, threshold, (root, Y_UP), state.bank.arrays)
        outputs = (local, state.no_palette, state.no_model)
        velocity = np.empty((3, count, joints, 3))  # linear, angular, scaling: each contiguous
        planar = np.empty((count, 3))
        blocks = state.threads
        velocity_layers = (
            weights,
            np.ascontiguousarray(weight_rates, np.float64),
            times,
            np.ascontiguousarray(rates, np.float64),
            np.ascontiguousarray(leaving, dtype=bool),
            self.table_of,
            np.ascontiguousarray(loops, dtype=bool),
        )
        capture_kernels().capture_on(
            blocks,
            (inputs, outputs),
            (
                velocity_layers,
                (self.key_times, self.key_starts, self.velocities, self.segment_starts),
                (state.bank.rest, float(threshold), root),
                (velocity.transpose(1, 2, 0, 3), planar),
            ),
            (state.scratch(), *self._block_scratch(blocks, slots)),
        )
        with trusted():
            pose = Pose(*local)
            speed = PoseVelocity(velocity[0], velocity[1], velocity[2])
        return pose, speed, planar
