"""Which frame backend runs: the compiled one (numba) where it is installed, else the numpy reference.

The choice is made once, at import, from the environment:

- ``OSSA_BACKEND=numba``: the compiled kernels; an error at first use if numba cannot be imported.
- ``OSSA_BACKEND=numpy``: the batched numpy jobs of :mod:`engine.anim` (the reference).
- unset or ``auto``: numba when it is installed, else numpy. If numba is installed but fails to
  import at first use, the numpy backend takes over with an :class:`~engine.errors.OssaWarning`
  saying why (never silently).

numba is imported lazily, on the first compiled call (importing it costs about half a second), so
``import engine`` stays as fast as before. ``OSSA_THREADS`` sets the default number of threads
of the compiled backend (default: every CPU numba sees). Every job also takes ``backend=`` to
run one call on a given backend (the tests compare the two that way).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings
from types import ModuleType

from engine.errors import InvalidInputError, OssaWarning

#: The backends, fastest first.
BACKENDS = ("numba", "numpy")


def _choose() -> str:
    wanted = os.environ.get("OSSA_BACKEND", "auto").strip().lower() or "auto"
    if wanted not in (*BACKENDS, "auto"):
        raise InvalidInputError(f"OSSA_BACKEND must be one of {(*BACKENDS, 'auto')}, got {wanted!r}")
    if wanted == "auto":
        return "numba" if importlib.util.find_spec("numba") is not None else "numpy"
    return wanted


_state: dict[str, object] = {"name": _choose(), "forced": os.environ.get("OSSA_BACKEND", "auto") != "auto"}


def active_backend() -> str:
    """Name of the backend the jobs use by default: ``"numba"`` or ``"numpy"``."""
    return str(_state["name"])


def forced() -> bool:
    """Whether ``OSSA_BACKEND`` names the backend (``numba`` or ``numpy``, not unset or ``auto``)."""
    return bool(_state["forced"])


def check_backend(backend: str | None) -> str:
    """``backend`` validated, or the active backend when ``None``."""
    if backend is None:
        return active_backend()
    if backend not in BACKENDS:
        raise InvalidInputError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    return backend


def compiled_module(name: str) -> ModuleType:
    """The compiled kernel module ``name`` (e.g. ``"engine.backend._kernels"``), imported on first use.

    The one loader of every package's numba kernels (the backend's, the motion-matching search's,
    the compressed sampler's): importing numba costs about half a second, so each kernel module
    is imported only when a compiled call first needs it.

    Raises
    ------
    InvalidInputError
        When numba cannot be imported (the message carries numba's own error).
    """
    loaded = sys.modules.get(name)  # every frame asks: the import machinery only the first time
    if loaded is not None:
        return loaded
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise InvalidInputError(f"the numba backend needs numba, which failed to import: {error}") from error


def kernels() -> ModuleType:
    """The backend's compiled kernel module, :mod:`engine.backend._kernels` (:func:`compiled_module`)."""
    return compiled_module("engine.backend._kernels")


def resolve(backend: str | None) -> str:
    """The backend one call runs on: ``backend`` or the active one, falling back once as documented."""
    name = check_backend(backend)
    if name == "numba" and backend is None and not _state["forced"] and _state["name"] == "numba":
        try:
            kernels()
        except InvalidInputError as error:
            _state["name"] = "numpy"
            warnings.warn(f"{error}; using the numpy backend", OssaWarning, stacklevel=3)
            return "numpy"
    return name


def default_threads() -> int:
    """Threads the compiled backend uses by default: ``OSSA_THREADS``, else every CPU available."""
    value = os.environ.get("OSSA_THREADS")
    if value is None:
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if not value.strip().isdigit() or int(value) < 1:
        raise InvalidInputError(f"OSSA_THREADS must be a positive integer, got {value!r}")
    return int(value)


def backend_description() -> str:
    """One line for ``ossa --version``: the active backend, its version and threads.

    Does not import numba (the version comes from the installed package's metadata).
    """
    name = active_backend()
    if name == "numpy":
        import numpy as np  # noqa: PLC0415

        return f"numpy {np.__version__} (reference backend, 1 thread)"
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        numba_version = version("numba")
    except PackageNotFoundError:  # found by find_spec but not installed as a distribution
        numba_version = "unknown version"
    return f"numba {numba_version} (compiled backend, {default_threads()} threads)"
