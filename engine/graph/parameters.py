"""Per-character parameters of a graph: floats, bools and triggers, one array row per parameter."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.errors import InvalidInputError
from engine.graph.definition import Parameter
from engine.math._checks import BoolArray, FloatArray, IntArray, as_array


class Parameters:
    """The values of a graph's parameters for ``C`` characters.

    Floats live in ``floats`` ``(F, C)``, bools in ``bools`` ``(B, C)`` and triggers in
    ``triggers`` ``(T, C)``; ``index[name]`` is ``(kind, row)``. A trigger stays set until a
    transition that tests it fires (it is consumed for that character) or :meth:`reset_trigger`.
    Floats are set through :meth:`set_float` only (the array is read-only): each character's
    :attr:`stamps` entry changes with its floats, so blend spaces recompute the weights of the
    characters whose parameters changed only.
    """

    def __init__(self, specs: Mapping[str, Parameter], num_characters: int) -> None:
        self.specs = dict(specs)
        self.num_characters = num_characters
        self.index: dict[str, tuple[str, int]] = {}
        rows: dict[str, list[float]] = {"float": [], "bool": [], "trigger": []}
        for name, spec in self.specs.items():
            self.index[name] = (spec.type, len(rows[spec.type]))
            rows[spec.type].append(spec.default)
        self.floats: FloatArray = np.repeat(np.array(rows["float"], dtype=np.float64)[:, None], num_characters, axis=1)
        self.floats.flags.writeable = False
        self.stamps = np.zeros(num_characters, dtype=np.int64)
        """``(C,)`` per character, the count of float changes when its floats last changed (blend weights
        depend on nothing else)."""
        self._changes = 0
        self.bools: BoolArray = np.repeat(np.array(rows["bool"], dtype=bool)[:, None], num_characters, axis=1)
        self.triggers: BoolArray = np.zeros((len(rows["trigger"]), num_characters), dtype=bool)
        self._all = np.arange(num_characters)

    @property
    def changes(self) -> int:
        """The count of float changes so far (the stamp the latest wrote): unchanged, no float changed."""
        return self._changes

    def _row(self, name: str, kind: str) -> int:
        found = self.index.get(name)
        if found is None:
            raise InvalidInputError(f"unknown parameter {name!r}; the parameters are {sorted(self.index)}")
        if found[0] != kind:
            raise InvalidInputError(f"parameter {name!r} is a {found[0]}, not a {kind}")
        return found[1]

    def select(self, characters: Any) -> IntArray:
        """Character indices from an index, slice, index array, boolean mask or ``None`` (all)."""
        if characters is None:
            return self._all
        try:
            return np.atleast_1d(self._all[characters])
        except (IndexError, TypeError) as exc:
            raise InvalidInputError(
                f"characters must index {self.num_characters} characters (int, slice, indices or mask), "
                f"got {characters!r}: {exc}"
            ) from None

    def set_float(self, name: str, value: Any, characters: Any = None) -> None:
        """Set float parameter ``name`` (scalar or one value per selected character)."""
        row, index = self._row(name, "float"), self.select(characters)
        values = np.broadcast_to(as_array(value, name), index.shape)
        self.floats.flags.writeable = True
        try:
            self.floats[row, index] = values
        finally:
            self.floats.flags.writeable = False
        self._changes += 1
        self.stamps[index] = self._changes

    def set_bool(self, name: str, value: Any, characters: Any = None) -> None:
        """Set bool parameter ``name`` (scalar or one value per selected character)."""
        row, index = self._row(name, "bool"), self.select(characters)
        values = np.asarray(value)
        if values.dtype != bool:
            raise InvalidInputError(f"{name} must be true or false, got {values.dtype} values")
        self.bools[row, index] = np.broadcast_to(values, index.shape)

    def set_trigger(self, name: str, characters: Any = None) -> None:
        """Set trigger ``name`` for the selected characters (until a transition consumes it)."""
        self.triggers[self._row(name, "trigger"), self.select(characters)] = True

    def reset_trigger(self, name: str, characters: Any = None) -> None:
        """Clear trigger ``name`` for the selected characters."""
        self.triggers[self._row(name, "trigger"), self.select(characters)] = False

    def float_values(self, name: str) -> FloatArray:
        """The row of float parameter ``name`` ``(C,)`` (a view: do not write)."""
        return self.floats[self._row(name, "float")]

    def get(self, name: str) -> FloatArray | BoolArray:
        """A copy of parameter ``name`` for every character ``(C,)``."""
        found = self.index.get(name)
        if found is None:
            raise InvalidInputError(f"unknown parameter {name!r}; the parameters are {sorted(self.index)}")
        kind, row = found
        table = {"float": self.floats, "bool": self.bools, "trigger": self.triggers}[kind]
        return table[row].copy()
