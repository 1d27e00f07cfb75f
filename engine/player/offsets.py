"""The decaying offsets of a player's inertialized and spring transitions, kept per character and joint.

:class:`Offsets` stores, for each kind (Bollo's quintic, :class:`~engine.anim.inertialization.QuinticDecay`;
a critically damped spring, :class:`~engine.anim.inertialization.SpringDecay`), one packed array
``(C, F, n)``: per character, the decay's fields in the layout of :mod:`engine.backend.stage`,
each over the **columns** — the joints some layer animates on one path (translation, rotation,
scale; the paths' joints one after the other). Field-major, so that the kernels apply a
character's offsets a field at a time over its columns (vectorised). A frame reads the
characters in transition; the compiled kernels read the same arrays
(:func:`engine.backend.stage.apply_offsets`; a numba player also starts them there,
:mod:`engine.backend._start_offset_kernels`, and offsets its captures,
:mod:`engine.backend._offset_kernels`), the numpy reference views them as decays
(:func:`~engine.backend.stage.unpack`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.anim.inertialization import (
    QuinticDecay,
    SpringDecay,
    quintic_decay,
    quintic_offset,
    quintic_rates,
    spring_decay,
    spring_offset,
    spring_rates,
)
from engine.anim.layout import PoseBuffer
from engine.anim.pose import Pose
from engine.anim.velocity import PoseVelocity
from engine.backend.select import compiled_module
from engine.backend.stage import (
    INERTIALIZE,
    QUINTIC_FIELDS,
    QUINTIC_LAYOUT,
    SPRING,
    SPRING_FIELDS,
    SPRING_LAYOUT,
    apply_offsets,
    pack,
    unpack,
    width,
)
from engine.math._checks import FloatArray, IntArray

if TYPE_CHECKING:
    from engine.player.transitions import Capture

#: The pose paths, in the order of the offsets' second-to-last axis (:func:`~engine.anim.inertialization.pose_offsets`).
PATHS = ("translation", "rotation", "scale")


def turn_components(quaternions: FloatArray, rotvecs: FloatArray) -> None:
    """``q ← exp(φ) · q`` in place, components first: ``quaternions`` ``(4, ...)``, ``rotvecs`` ``(3, ...)``.

    The player's poses are stored components-first, characters innermost; working on whole
    component rows there is several times faster than going through ``(..., 4)`` views. Same
    arithmetic as :func:`~engine.math.quat.quat_from_rotvec` then
    :func:`~engine.math.quat.quat_multiply` (the tests compare them).
    """
    x, y, z = rotvecs
    angle = np.sqrt(x * x + y * y + z * z)
    small = angle < 1e-4
    scale = np.where(small, 0.5 - angle * angle / 48.0, np.sin(0.5 * angle) / np.where(small, 1.0, angle))
    ex, ey, ez, ew = x * scale, y * scale, z * scale, np.cos(0.5 * angle)
    qx, qy, qz, qw = quaternions
    turned = (
        ew * qx + ex * qw + ey * qz - ez * qy,
        ew * qy - ex * qz + ey * qw + ez * qx,
        ew * qz + ex * qy - ey * qx + ez * qw,
        ew * qw - ex * qx - ey * qy - ez * qz,
    )
    for component, values in zip(quaternions, turned, strict=True):  # all four read before any is written
        component[...] = values


class Offsets:
    """The decays of the inertialized transitions in progress (module docstring).

    Attributes
    ----------
    joints
        ``(n,)`` each column's joint (the translations' columns, then the rotations', then the
        scales'; :attr:`paths`).
    packed
        Per kind, ``(C, F, n)`` (allocated on its first transition); columns added later (a new
        layer animating more joints) start with zero decays: no offset.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self.joints = np.zeros(0, dtype=np.int64)
        self.packed: dict[int, FloatArray] = {}
        self._bounds = np.zeros(len(PATHS) + 1, dtype=np.int64)  # the first column of each path, and n

    @property
    def paths(self) -> IntArray:
        """``(n,)`` each column's path (0 translation, 1 rotation, 2 scale), from the paths' bounds."""
        return _paths(self._bounds)

    def _span(self, path: int) -> slice:
        """The columns of path ``path`` (contiguous, the paths in order)."""
        return slice(int(self._bounds[path]), int(self._bounds[path + 1]))

    def animate(self, animated: dict[str, IntArray]) -> None:
        """Follow the joints each path's layers animate now (a superset of the earlier ones)."""
        joints = np.concatenate([np.asarray(animated[path], dtype=np.int64) for path in PATHS])
        bounds = np.cumsum([0] + [len(animated[path]) for path in PATHS]).astype(np.int64)
        if np.array_equal(joints, self.joints) and np.array_equal(bounds, self._bounds):
            return
        keys = {(int(p), int(j)): i for i, (p, j) in enumerate(zip(_paths(bounds), joints, strict=True))}
        where = np.array([keys[(int(p), int(j))] for p, j in zip(self.paths, self.joints, strict=True)], dtype=np.intp)
        for kind, values in self.packed.items():
            grown = np.zeros((self.count, values.shape[1], joints.size))
            grown[:, :, where] = values
            self.packed[kind] = grown
        self.joints, self._bounds = joints, bounds

    def saved(self) -> dict[int, tuple[FloatArray, FloatArray]]:
        """Each kind's packed decays and a copy of them: what :meth:`restore` puts back."""
        return {kind: (packed, packed.copy()) for kind, packed in self.packed.items()}

    def restore(self, saved: dict[int, tuple[FloatArray, FloatArray]]) -> None:
        """The decays :meth:`saved` copied, written back in place; a kind started since is forgotten."""
        for packed, copy in saved.values():
            packed[...] = copy
        self.packed = {kind: packed for kind, (packed, _) in saved.items()}

    def _packed_of(self, kind: int) -> FloatArray:
        """The packed decays of ``kind`` ``(C, F, n)``, allocated (no offset anywhere) on its first transition."""
        packed = self.packed.get(kind)
        if packed is None:
            layout = QUINTIC_LAYOUT if kind == INERTIALIZE else SPRING_LAYOUT
            packed = self.packed[kind] = np.zeros((self.count, width(layout), self.joints.size))
        return packed

    def store(self, kind: int, members: IntArray, offsets: FloatArray, rates: FloatArray, length: FloatArray) -> None:
        """Offsets and rates ``(K, J, 3, 3)`` of the characters ``members`` starting ``kind`` now."""
        packed = self._packed_of(kind)
        rows = np.zeros((members.size, self.joints.size, packed.shape[1]))
        for p in range(len(PATHS)):
            span = self._span(p)
            if span.stop == span.start:
                continue
            joints = self.joints[span]
            x, v = offsets[:, joints, p], rates[:, joints, p]  # (K, n, 3)
            decay = quintic_decay(x, v, length[:, None]) if kind == INERTIALIZE else spring_decay(x, v, length[:, None])
            pack(decay, rows[:, span])
        packed[members] = rows.transpose(0, 2, 1)

    def start_compiled(
        self, kind: int, members: IntArray, source: tuple[Pose, PoseVelocity], target: tuple[Pose, PoseVelocity],
        length: FloatArray, threads: int = 1,
    ) -> None:  # fmt: skip
        """:meth:`store` of the offsets of ``source`` from ``target`` (poses ``(K, J)`` and velocities), on the kernels.

        The offsets and their rates (:func:`~engine.anim.inertialization.pose_offsets`) and their
        decays are computed per animated column straight into the packed rows (the same numbers
        to rounding), on ``threads`` threads (blocks of characters; the same numbers).
        """
        packed = self._packed_of(kind)
        at = QUINTIC_FIELDS if kind == INERTIALIZE else SPRING_FIELDS
        compiled_module("engine.backend._start_offset_kernels").start_offsets_on(
            threads,
            kind == INERTIALIZE,
            np.ascontiguousarray(members, dtype=np.int64),
            _motion(*source),
            _motion(*target),
            (self.joints, self._bounds),
            np.ascontiguousarray(length, dtype=np.float64),
            packed,
            at,
        )

    def offset_compiled(
        self,
        characters: IntArray,
        at: FloatArray,
        transitions: tuple[FloatArray, IntArray, FloatArray, FloatArray, FloatArray],
        capture: Capture,
        threads: int = 1,
    ) -> int:
        """The offsets and their rates added to ``capture``'s rows of those of ``characters`` ``(K,)`` in decay.

        Row ``k`` is ``characters[k]`` at player clock ``at[k]``; ``transitions`` = every
        character's transition start, kind, duration, half-life ``(C,)`` and planar velocity
        offset ``(C, 3)`` (the stage's arrays), the latter added to ``capture.root`` times its
        decay. On the kernels (``threads``: blocks of rows; the same numbers); returns how many
        rows are in a transition of another kind (left as they are). The numpy reference is
        :meth:`full`, then :func:`~engine.anim.inertialization.offset_pose`,
        :func:`~engine.anim.inertialization.offset_velocity` and
        :func:`~engine.player.transitions.decay_weight`.
        """
        velocity = capture.velocity
        rows = (*capture.pose.arrays(), velocity.linear, velocity.angular, velocity.scaling, capture.root)
        return compiled_module("engine.backend._offset_kernels").offset_captures_on(
            threads,
            np.ascontiguousarray(characters, dtype=np.int64),
            np.ascontiguousarray(at, dtype=np.float64),
            transitions,
            self._kernel_decays(),
            (self.joints, self._bounds),
            rows,
        )

    def decay(self, kind: int, path: int, members: Any) -> QuinticDecay | SpringDecay:
        """The stored decays of ``members`` on path ``path``, batch ``(K, n)`` (copies of their rows)."""
        rows = self.packed[kind][members][:, :, self._span(path)].transpose(0, 2, 1)  # (K, n, F)
        return unpack(QuinticDecay, rows) if kind == INERTIALIZE else unpack(SpringDecay, rows)

    def _decays(self, kind: int, members: IntArray) -> Iterator[tuple[int, slice, QuinticDecay | SpringDecay]]:
        """``(path index, its span of the animated joints, the decays of members)`` per path animating a joint."""
        for p in range(len(PATHS)):
            span = self._span(p)
            if span.stop != span.start:
                yield p, span, self.decay(kind, p, members)

    def full(self, kind: int, members: IntArray, elapsed: FloatArray, joints: int) -> tuple[FloatArray, FloatArray]:
        """Offsets and rates ``(K, J, 3, 3)`` on every joint (zero where nothing is animated)."""
        offsets = np.zeros((members.size, joints, 3, 3))
        rates = np.zeros((members.size, joints, 3, 3))
        if kind not in self.packed:
            return offsets, rates
        t = elapsed[:, None]
        for p, span, decay in self._decays(kind, members):
            if isinstance(decay, QuinticDecay):
                x, v = quintic_offset(decay, t), quintic_rates(decay, t)[0]
            else:
                x, v = spring_offset(decay, t), spring_rates(decay, t)[0]
            offsets[:, self.joints[span], p] = x
            rates[:, self.joints[span], p] = v
        return offsets, rates

    def apply(self, kind: int, members: IntArray, pose: PoseBuffer, elapsed: FloatArray) -> None:
        """Add the offsets of ``members`` at ``elapsed`` ``(K,)`` to their entries of ``pose``, in place (numpy)."""
        if kind not in self.packed:
            return
        t = elapsed[:, None]
        for p, span, decay in self._decays(kind, members):
            x = quintic_offset(decay, t) if isinstance(decay, QuinticDecay) else spring_offset(decay, t)  # (K, n, 3)
            components = pose.arrays()[p]  # (width, J, C)
            where: Any = (slice(None), *np.ix_(self.joints[span], members))
            vectors = x.transpose(2, 1, 0)  # (3, n, K)
            if p == 1:
                block = components[where]
                turn_components(block, vectors)
                components[where] = block
            else:
                components[where] += vectors

    def apply_compiled(
        self,
        characters: IntArray,
        clock: FloatArray,
        transitions: tuple[FloatArray, IntArray, FloatArray],
        pose: tuple[FloatArray, FloatArray, FloatArray],
        threads: int = 1,
    ) -> int:
        """:meth:`apply` for those of ``characters`` inertialized or on a spring, on the kernels.

        ``clock`` ``(C,)``; ``transitions`` = the stage's starts, kinds and durations ``(C,)``;
        ``pose``: a pose buffer's :func:`~engine.backend.stage.character_views`. Returns how many
        of ``characters`` are in a transition of another kind (left as they are).
        """
        columns = (self.joints, self._bounds)
        return apply_offsets(characters, clock, transitions, self._packed_pair(), columns, pose, threads)

    def in_pass(self, clock: FloatArray, transitions: tuple[FloatArray, IntArray, FloatArray]) -> tuple[Any, ...]:
        """What the compiled pass takes to add these offsets (:func:`engine.backend.frame.run`'s ``stage``).

        ``clock`` ``(C,)``; ``transitions`` = the stage's starts, kinds and durations ``(C,)``.
        """
        clock = np.ascontiguousarray(clock, dtype=np.float64)
        return clock, transitions, self._kernel_decays(), self.joints, self._bounds

    def _kernel_decays(self) -> tuple[FloatArray, FloatArray, IntArray, IntArray]:
        """The packed quintic and spring decays and the rows of their fields, as the kernels take them."""
        return (*self._packed_pair(), QUINTIC_FIELDS, SPRING_FIELDS)

    def _packed_pair(self) -> tuple[FloatArray, FloatArray]:
        """The packed quintic and spring decays as the kernels take them (an empty array for a kind not started yet)."""
        empty = np.zeros((0, 1, self.joints.size))
        return self.packed.get(INERTIALIZE, empty), self.packed.get(SPRING, empty)


def _paths(bounds: IntArray) -> IntArray:
    """Each column's path from the first column of each path and ``n`` (``bounds``, ``(4,)``)."""
    return np.repeat(np.arange(len(PATHS), dtype=np.int64), np.diff(bounds))


def _motion(pose: Pose, velocity: PoseVelocity) -> tuple[FloatArray, ...]:
    """Translations, rotations, scales and the three velocities, contiguous (the kernels' order)."""
    arrays = (*pose.arrays(), velocity.linear, velocity.angular, velocity.scaling)
    return tuple(np.ascontiguousarray(array, dtype=np.float64) for array in arrays)
