"""Numba's on-disk cache of a kernel module, kept current with the modules it inlines from.

Numba caches a compiled function under its own file's contents only: a function it inlines (or
calls) from another module is compiled into the caller, and a change to that module leaves the
caller's cached code stale. :func:`follow` keys the cache by those modules too. It keeps the
digest of their sources beside the cache (``<module>.inlined.sha256``) and, when it differs,
deletes the module's cached files so numba compiles again (and writes the new digest).
Call it at the end of the kernel module, before any kernel runs.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any


def sources_digest(modules: Sequence[ModuleType]) -> str:
    """SHA-256 over the sources of ``modules`` (line endings normalised), in order."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(inspect.getfile(module)).read_bytes().replace(b"\r\n", b"\n"))
    return digest.hexdigest()


def follow(dispatcher: Any, module_file: str, inlined: Sequence[ModuleType]) -> bool:
    """Drop the cached kernels of ``module_file`` when a module of ``inlined`` changed; returns whether it did.

    ``dispatcher`` is any cached kernel of that module (its cache folder holds the module's
    files). A cache folder that cannot be written is left alone (numba does not cache there).
    """
    folder = Path(dispatcher.stats.cache_path)
    stem = Path(module_file).stem
    stamp = folder / f"{stem}.inlined.sha256"
    digest = sources_digest(inlined)
    try:
        if stamp.read_text() == digest:
            return False
    except OSError:
        pass  # no stamp yet: any cached kernel may predate it
    try:
        stale = sorted(folder.glob(f"{stem}.*.nbi"))
        for cached in [*stale, *folder.glob(f"{stem}.*.nbc")]:
            cached.unlink(missing_ok=True)
        folder.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    except OSError:
        return False
    return bool(stale)
