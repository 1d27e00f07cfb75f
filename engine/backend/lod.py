"""Animation LOD for crowds: each character is evaluated every frame, every 2nd, every 4th, ...

A character ``c`` with update rate ``r`` is *due* on frame ``f`` when ``(f + c) % r == 0`` (its
index staggers the characters, so a quarter of the rate-4 ones update on each frame and the cost
per frame stays even), or when it was last updated ``r`` or more frames ago (right after its
rate was lowered). Only the due characters go to
:func:`~engine.backend.frame.evaluate_frame` (``characters=schedule.due()``); the others keep
their palette from the frame they were last updated on. Everyone is due on the first frame.

"No pop" means, and ``tests/backend/test_lod.py`` checks every frame of a crowd whose rates
change at random:

- LOD never touches time: every character's clock advances every frame (the caller's
  ``times``), so an update always shows the exact pose of the character's *current* time,
  bit-identical to evaluating it every frame, never a time that jumped or lagged;
- a character is never shown more than ``r - 1`` frames stale for its *current* rate ``r``, also
  right after a change: lowering the rate updates it at once if it is already that stale,
  raising it holds its pose at most ``r - 1`` frames;
- so the change between two displayed poses of a character is the motion of at most ``r`` frames
  at full rate, the same step it takes at that rate anyway: a rate change adds no extra jump.

On the compiled backend nothing is allocated per frame: :meth:`UpdateSchedule.due` returns a
view into a buffer the schedule owns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.backend.select import compiled_module, resolve
from engine.errors import InvalidInputError
from engine.math._checks import as_array

Int64Array = npt.NDArray[np.int64]


class UpdateSchedule:
    """Which characters to evaluate on each frame, from a per-character update rate.

    Parameters
    ----------
    characters
        ``C``, the number of characters.

    Attributes
    ----------
    frame
        The current frame number (``advance`` adds one).

    Examples
    --------
    >>> schedule = UpdateSchedule(8)
    >>> schedule.set_rates([1, 1, 2, 2, 4, 4, 4, 4])
    UpdateSchedule(8 characters, frame 0, rates {1: 2, 2: 2, 4: 4})
    >>> schedule.due()  # the first frame: everyone
    array([0, 1, 2, 3, 4, 5, 6, 7])
    >>> schedule.advance().due()
    array([0, 1, 3, 7])
    >>> schedule.advance().due()
    array([0, 1, 2, 6])
    """

    def __init__(self, characters: int) -> None:
        count = int(characters)
        if count < 1:
            raise InvalidInputError(f"characters must be at least 1, got {characters}")
        self.frame = 0
        self._rates = np.ones(count, dtype=np.int64)
        self._index = np.arange(count, dtype=np.int64)
        self._phase = np.empty(count, dtype=np.int64)
        self._flag = np.empty(count, dtype=bool)
        self._band = np.empty(count, dtype=bool)
        self._due = np.empty(count, dtype=np.int64)
        self._last = np.full(count, np.iinfo(np.int64).min // 2, dtype=np.int64)  # never updated

    @property
    def rates(self) -> Int64Array:
        """``(C,)`` frames between two updates of each character (read-only view)."""
        view = self._rates.view()
        view.flags.writeable = False
        return view

    def set_rates(self, rates: Any, characters: Any = None) -> UpdateSchedule:
        """Set the update rate (a positive integer, 1 = every frame) of all or some characters; returns self."""
        values = np.asarray(rates)
        if values.size and (not np.issubdtype(values.dtype, np.integer) or values.min() < 1):
            raise InvalidInputError(f"rates must be positive integers, got {values.ravel()[:8]}")
        if characters is None:
            self._rates[...] = values
        else:
            self._rates[np.asarray(characters)] = values
        return self

    def set_rates_by_distance(
        self, distances: Any, limits: Sequence[float] = (10.0, 30.0), rates: Sequence[int] = (1, 2, 4)
    ) -> UpdateSchedule:
        """Rates from distances (or any measure that grows with less detail); returns self.

        A character closer than ``limits[i]`` (and not closer than ``limits[i-1]``) gets
        ``rates[i]``; beyond the last limit it gets ``rates[-1]``. Defaults: every frame within
        10 m, every 2nd frame within 30 m, every 4th frame beyond.
        """
        distance = as_array(distances, "distances")
        if distance.shape != self._rates.shape:
            raise InvalidInputError(f"distances must have shape {self._rates.shape}, got {distance.shape}")
        if len(rates) != len(limits) + 1 or any(int(r) < 1 for r in rates) or list(limits) != sorted(limits):
            raise InvalidInputError(
                f"need ascending limits and one positive rate more than limits, got limits {limits}, rates {rates}"
            )
        self._rates[...] = rates[-1]
        for limit, rate in zip(limits[::-1], rates[-2::-1], strict=True):  # nearest band written last
            np.less(distance, limit, out=self._band)
            np.copyto(self._rates, rate, where=self._band)
        return self

    def due(self, *, backend: str | None = None) -> Int64Array:
        """Indices of the characters due on the current frame, ascending (a view, valid until the next call).

        Call it once per frame and evaluate exactly these characters: the schedule records them
        as updated. The compiled backend allocates nothing; the numpy one an index array.
        """
        if resolve(backend) == "numba":
            due = compiled_module("engine.backend._clock_kernels").select_due
            return self._due[: due(self._rates, self._last, self.frame, self._due)]
        np.add(self._index, self.frame, out=self._phase)
        np.remainder(self._phase, self._rates, out=self._phase)
        np.equal(self._phase, 0, out=self._flag)
        np.subtract(self.frame, self._last, out=self._phase)
        self._flag |= self._phase >= self._rates
        self._last[self._flag] = self.frame
        return np.flatnonzero(self._flag)

    def advance(self) -> UpdateSchedule:
        """Move to the next frame; returns self."""
        self.frame += 1
        return self

    def __repr__(self) -> str:
        values, counts = np.unique(self._rates, return_counts=True)
        mix = {int(v): int(n) for v, n in zip(values, counts, strict=True)}
        return f"UpdateSchedule({self._rates.size} characters, frame {self.frame}, rates {mix})"
