"""Shape and finiteness validators shared by every public function of ``engine``.

Validation is on by default. Hot loops over data that was already validated may switch the
finiteness scans off with :func:`trusted` (shape checks always stay: they are cheap and a wrong
shape would broadcast silently).
"""

from __future__ import annotations

import contextvars
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.errors import DegenerateInputError, InvalidInputError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

#: Whether public functions scan for NaN/inf: per thread and per asyncio task (a context variable).
_VALIDATE: contextvars.ContextVar[bool] = contextvars.ContextVar("ossa_validate", default=True)


def validating() -> bool:
    """Whether public functions scan their inputs for NaN/inf here (default ``True``)."""
    return _VALIDATE.get()


class trusted:  # noqa: N801 (used as a function: ``with trusted():``)
    """Skip NaN/inf scans inside the block, for hot loops over already-validated data.

    The switch is a :class:`contextvars.ContextVar`: it holds for the current thread (and the
    current asyncio task) only, so a trusted block in one thread never turns off validation
    in another. A class, not a generator: a frame enters dozens of these blocks.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.math import quat_multiply, trusted
    >>> with trusted():
    ...     q = quat_multiply(np.array([0.0, 0, 0, 1]), np.array([0.0, 0, 0, 1]))
    """

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _VALIDATE.set(False)

    def __exit__(self, *exc: object) -> None:
        _VALIDATE.reset(self._token)


def as_array(value: Any, name: str, trailing: tuple[int, ...] = (), *, finite: bool = True) -> FloatArray:
    """Return ``value`` as a float64 array whose last axes are ``trailing``.

    Raises :class:`InvalidInputError` naming ``name`` when the shape does not end in ``trailing``
    or (while validating) when any element is NaN or infinite.
    """
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric, got {type(value).__name__}: {exc}") from None
    if (trailing and array.shape[array.ndim - len(trailing) :] != trailing) or array.ndim < len(trailing):
        expected = "(..., " + ", ".join(map(str, trailing)) + ")"
        raise InvalidInputError(f"{name} must have shape {expected}, got {array.shape}")
    if finite and _VALIDATE.get() and not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise InvalidInputError(f"{name} must be finite, got {array[tuple(bad)]} at index {tuple(int(i) for i in bad)}")
    return array


def shaped(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``array`` broadcast to ``shape``, C-contiguous (itself when it already is), else a writable copy.

    A copy even where the broadcast view is contiguous (a size-1 axis): writable either way, so a
    compiled kernel sees one array type whatever the shape.
    """
    if array.shape == shape and array.flags.c_contiguous:
        return array
    return np.array(np.broadcast_to(array, shape), order="C")


def readonly_copy(array: Any) -> np.ndarray:
    """A copy of ``array`` that cannot be written: runtime data is shared, so it must stay const."""
    copy = np.array(array, copy=True)
    copy.flags.writeable = False
    return copy


def check_finite(array: FloatArray, name: str) -> None:
    """Raise :class:`InvalidInputError` if ``array`` holds NaN or inf (while validating)."""
    if _VALIDATE.get() and not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise InvalidInputError(f"{name} must be finite, got {array[tuple(bad)]} at index {tuple(int(i) for i in bad)}")


def nonzero_norm(norm: FloatArray, name: str, what: str = "vector", eps: float = 1e-12) -> None:
    """Raise :class:`~engine.errors.DegenerateInputError` where ``norm`` is (nearly) zero."""
    if np.any(norm <= eps):
        index = np.argwhere(np.asarray(norm) <= eps)[0]
        where = f" at index {tuple(int(i) for i in index)}" if index.size else ""
        raise DegenerateInputError(
            f"{name} must be a non-zero {what}, got norm {float(np.asarray(norm)[tuple(index)]):.3g}{where}"
        )
