"""The typed fields of a graph document: tables, keys, names, numbers, booleans, arrays, choices.

:class:`FieldReader` checks one value at a time, each error a
:class:`~engine.graph.definition.GraphDefinitionError` naming the file and the path in the
document; :mod:`engine.graph.reader` builds the document's types on top of it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from engine.graph.definition import GraphDefinitionError


def join(path: str, key: str) -> str:
    """The document path of ``key`` inside ``path`` (``key`` alone at the top)."""
    return f"{path}.{key}" if path else key


class FieldReader:
    """Checks a document's typed fields, each error naming the path reached."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, message: str) -> GraphDefinitionError:
        """The error for ``message`` at document path ``where``."""
        return GraphDefinitionError(message, file=self.source, where=where or None)

    def table(self, value: Any, where: str) -> Mapping[str, Any]:
        """A table (object)."""
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected a table (object), got {_kind(value)}")
        return value

    def keys(self, table: Mapping[str, Any], where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
        """Every ``required`` key present, and no key outside ``required`` and ``optional``."""
        for key in required:
            if key not in table:
                raise self.fail(join(where, key), "missing (required)")
        allowed = set(required) | set(optional)
        for key in table:
            if key not in allowed:
                raise self.fail(join(where, str(key)), f"unknown key; expected one of {sorted(allowed)}")

    def name(self, value: Any, where: str) -> str:
        """A non-empty string."""
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"expected a non-empty string, got {_kind(value)}")
        return value

    def number(
        self, value: Any, where: str, *, low: float | None = None, high: float | None = None, strict: bool = False
    ) -> float:
        """A finite number, optionally at least ``low`` (above it when ``strict``) and at most ``high``."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(where, f"expected a number, got {_kind(value)}")
        number = float(value)
        if not math.isfinite(number):
            raise self.fail(where, f"expected a finite number, got {value}")
        if low is not None and (number <= low if strict else number < low):
            raise self.fail(where, f"expected a number {'>' if strict else '>='} {low:g}, got {value}")
        if high is not None and number > high:
            raise self.fail(where, f"expected a number <= {high:g}, got {value}")
        return number

    def boolean(self, value: Any, where: str) -> bool:
        """``true`` or ``false``."""
        if not isinstance(value, bool):
            raise self.fail(where, f"expected true or false, got {_kind(value)}")
        return value

    def array(self, value: Any, where: str, *, empty: bool = True) -> list[Any]:
        """An array (non-empty unless ``empty``)."""
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {_kind(value)}")
        if not empty and not value:
            raise self.fail(where, "expected at least one entry, got an empty array")
        return value

    def choice(self, value: Any, where: str, options: tuple[str, ...]) -> str:
        """One of ``options``."""
        if value not in options:
            raise self.fail(where, f"expected one of {list(options)}, got {value!r}")
        return str(value)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "a table"
    return type(value).__name__
