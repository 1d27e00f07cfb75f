"""Foot locking: a foot that stands stays where it was put down, and lets go smoothly.

A foot is in **contact** while it is low (its height above its standing height below ``height``)
and slow (its speed across the ground below ``speed``). When contact starts, the foot is locked
where its target is then; while locked its target keeps that place across the ground and the
animation's height along up. When contact ends, or the animated foot has drifted further than
``reach`` from the lock (the body walked away from it), the lock lets go: the target goes back to
the animated foot, the offset it had at that moment decaying by half every ``half_life`` seconds
(frame-rate independent), so nothing jumps. A foot lets go for drift only once per contact: it
locks again when its next contact starts. The targets feed leg IK
(:func:`~engine.anim.ik.two_bone_ik`); the lock does the cleanup motion matching and blends need
where clips slide (Holden's contact locking).

Batched over any leading shape ``(..., F)`` (characters and feet); world positions ``(..., F, 3)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import BoolArray, FloatArray, as_array


class FootLock:
    """Locks of feet ``shape`` ``(..., F)`` (module docstring).

    Parameters
    ----------
    shape
        The feet's leading shape, e.g. ``(2,)`` for one biped, ``(C, 2)`` for a crowd.
    height
        Metres above the standing height below which a foot may be in contact.
    speed
        Metres per second across the ground below which a low foot is in contact.
    reach
        Metres the animated foot may drift from its lock before the lock lets go.
    half_life
        Seconds in which the offset left when a lock lets go halves.
    up
        The world's unit up ``(3,)``.

    Attributes
    ----------
    locked
        ``(..., F)`` whether each foot is locked.
    anchors
        ``(..., F, 3)`` where each locked foot is held (across the ground).
    contact
        ``(..., F)`` whether each foot was in contact at the last update.

    Examples
    --------
    >>> lock = FootLock((1,))
    >>> lock.update(1 / 60, [[0.0, 0.0, 0.0]], [0.0]).tolist()
    [[0.0, 0.0, 0.0]]
    >>> lock.update(1 / 60, [[0.002, 0.0, 0.0]], [0.0]).tolist()  # sliding 12 cm/s: held
    [[0.0, 0.0, 0.0]]
    """

    def __init__(
        self,
        shape: tuple[int, ...],
        *,
        height: float = 0.04,
        speed: float = 0.8,
        reach: float = 0.3,
        half_life: float = 0.08,
        up: Any = (0.0, 1.0, 0.0),
    ) -> None:
        for name, value in (("height", height), ("speed", speed), ("reach", reach), ("half_life", half_life)):
            if not (math.isfinite(value) and value > 0.0):
                raise InvalidInputError(f"{name} must be a positive number, got {value!r}")
        axis = as_array(up, "up", (3,))
        length = float(np.linalg.norm(axis)) if axis.shape == (3,) else 0.0
        if not length > 0.0:
            raise InvalidInputError(f"up must be a non-zero 3-vector, got {up!r}")
        self.shape = tuple(int(n) for n in shape)
        self.height, self.speed = float(height), float(speed)
        self.reach, self.half_life = float(reach), float(half_life)
        self.up = axis / length
        self.locked: BoolArray = np.zeros(self.shape, dtype=bool)
        self.contact: BoolArray = np.zeros(self.shape, dtype=bool)
        self.anchors: FloatArray = np.zeros((*self.shape, 3))
        self._offsets = np.zeros((*self.shape, 3))
        self._previous: FloatArray | None = None

    def _across(self, vectors: FloatArray) -> FloatArray:
        """The part of ``vectors`` ``(..., 3)`` across the ground (along up removed)."""
        return vectors - (vectors @ self.up)[..., None] * self.up

    def update(self, dt: float, feet: Any, heights: Any) -> FloatArray:
        """The feet's targets ``(..., F, 3)`` this frame from their animated positions ``feet`` ``(..., F, 3)``.

        ``heights`` ``(..., F)``: each animated foot's height above its standing height (metres;
        the ground under it taken away). ``dt`` seconds since the last update (0: no speed yet).
        """
        positions = as_array(feet, "feet", (3,))
        above = as_array(heights, "heights")
        if positions.shape != (*self.shape, 3) or above.shape != self.shape:
            raise InvalidInputError(
                f"feet must be {(*self.shape, 3)} and heights {self.shape}, got {positions.shape} and {above.shape}"
            )
        if not (math.isfinite(dt) and dt >= 0.0):
            raise InvalidInputError(f"dt must be a number of seconds >= 0, got {dt!r}")
        if self._previous is None or dt == 0.0:
            moving = np.zeros(self.shape)
        else:
            moving = np.linalg.norm(self._across(positions - self._previous), axis=-1) / dt
        self._previous = positions.copy()
        contact = (above < self.height) & (moving < self.speed)
        drift = np.linalg.norm(self._across(positions - self.anchors), axis=-1)
        letting_go = self.locked & (~contact | (drift > self.reach))
        self._offsets[letting_go] = self._across(self.anchors - positions)[letting_go]
        self.locked &= ~letting_go
        starting = contact & ~self.contact & ~self.locked
        current = positions + self._offsets
        self.anchors[starting] = current[starting]
        self._offsets[starting] = 0.0
        self.locked |= starting
        self.contact = contact
        targets = positions + self._offsets
        held = self.anchors + (((positions - self.anchors) @ self.up)[..., None] * self.up)
        targets[self.locked] = held[self.locked]
        self._offsets *= 0.5 ** (dt / self.half_life)
        return targets
