"""``ossa build``: every clip found under the sources, compressed into one library, with a manifest.

The build is a list of :class:`~engine.pipeline.task.ClipTask` (one per clip, in sorted source
order), each mapped by :func:`~engine.pipeline.task.build_clip` on an executor
(:mod:`engine.pipeline.executors`). The output folder holds:

- ``library.ossalib``: every clip that built, in task order;
- ``manifest.json``: one row per clip, built or failed (source, sha256, duration, joints, ratio,
  max/p99 error, warnings, error), in task order;
- ``cache/``: each built clip as a one-clip library named by its task's content hash, with its
  row; a re-run reuses every clip whose hash is there (changing a source, a setting, the target or
  the Ossa version changes the hash). Failed clips are not cached: a re-run tries them again.

Nothing depends on the executor, the number of workers or the order results arrive in, so the
same inputs give byte-identical outputs on one process, a pool or a cluster.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from engine.compress.fileformat import library_from_buffer, save_library
from engine.compress.library import ClipLibrary
from engine.errors import AssetError, InvalidInputError
from engine.io.clip_sources import SUFFIXES, read_clip_sources
from engine.pipeline.task import ClipResult, ClipTask, Files, Settings

LIBRARY_NAME = "library.ossalib"
MANIFEST_NAME = "manifest.json"
CACHE_FOLDER = "cache"

Executor = Callable[[Sequence[ClipTask], Callable[[ClipResult], None]], None]


@dataclass(frozen=True)
class BuildReport:
    """What a build did: its rows (task order), how many clips were reused, built and failed, and the paths."""

    rows: tuple[dict[str, Any], ...]
    reused: int
    built: int
    failed: int
    library: Path
    manifest: Path


def _referenced(path: Path) -> list[Path]:
    """Files a ``.gltf`` names as buffers, beside it (what the loader reads besides the JSON)."""
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return []  # the worker's loader reports the problem as the clip's error
    found = []
    for buffer in document.get("buffers", []) if isinstance(document, dict) else []:
        uri = buffer.get("uri") if isinstance(buffer, dict) else None
        if isinstance(uri, str) and not uri.startswith("data:") and ":" not in uri and ".." not in uri:
            candidate = path.parent / uri
            if candidate.is_file():
                found.append(candidate)
    return found


def files_of(path: Path, name: str) -> Files:
    """``path`` (and, for ``.gltf``, its buffers) as :class:`Files` under the relative ``name``."""
    parent = PurePosixPath(name).parent
    extras = _referenced(path) if path.suffix.lower() == ".gltf" else []
    items = [(str(parent / extra.relative_to(path.parent).as_posix()), extra.read_bytes()) for extra in extras]
    return Files(((name, path.read_bytes()), *items))


def _named_files(sources: Sequence[str | Path]) -> list[tuple[Path, str]]:
    """Every clip file under ``sources`` with its name: the path from the source's parent, POSIX."""
    named: dict[str, Path] = {}
    for source in sources:
        root = Path(source)
        if not root.exists():
            raise AssetError("no such file or folder", file=str(root))
        files = (
            sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            if root.is_dir()
            else [root]
        )
        for path in files:
            if path.suffix.lower() not in SUFFIXES:
                raise AssetError(f"not a clip file: expected one of {', '.join(SUFFIXES)}", file=str(path))
            name = path.relative_to(root.parent).as_posix()
            if name in named and named[name].resolve() != path.resolve():
                raise InvalidInputError(f"two sources give a file named {name!r}: {named[name]} and {path}")
            named[name] = path
    return sorted(((path, name) for name, path in named.items()), key=lambda item: item[1])


def plan(sources: Sequence[str | Path], settings: Settings, target: Path | None = None) -> list[ClipTask]:
    """One task per clip of every file found, sorted by file name then clip index.

    A file that cannot be listed (malformed, no skin) still gets one task, which will fail and
    record why.
    """
    target_files = files_of(target, target.name) if target is not None else None
    tasks = []
    for path, name in _named_files(sources):
        stem = name.rsplit(".", 1)[0]
        files = files_of(path, name)
        if path.suffix.lower() == ".bvh":
            clips = [stem]
        else:
            try:
                listed, _ = read_clip_sources(path)
                clips = [f"{stem}/{s.clip.name}" for s in listed]
            except (AssetError, InvalidInputError):
                clips = [stem]
        tasks += [ClipTask(files, k, clip, settings, target_files) for k, clip in enumerate(clips)]
    return tasks


def _cached(cache: Path, task: ClipTask) -> ClipResult | None:
    library, row = cache / f"{task.key}.ossalib", cache / f"{task.key}.json"
    if not (library.is_file() and row.is_file()):
        return None
    try:
        return ClipResult(task.key, json.loads(row.read_text()), library.read_bytes())
    except (OSError, ValueError):
        return None


def _store(cache: Path, result: ClipResult) -> None:
    if result.library is None:
        return
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{result.key}.ossalib").write_bytes(result.library)
    (cache / f"{result.key}.json").write_text(json.dumps(result.row, sort_keys=True, indent=1) + "\n")


def run_build(
    tasks: Sequence[ClipTask],
    out: Path,
    executor: Executor,
    *,
    progress: Callable[[int, int, int], None] | None = None,
) -> BuildReport:
    """Build ``tasks`` into ``out`` (see the module docstring) with ``executor``; returns the report.

    ``executor(pending, deliver)`` must call ``deliver`` once per pending task with its result, in
    any order. ``progress(done, total, failed)`` is called as results come.
    """
    cache = out / CACHE_FOLDER
    results: dict[str, ClipResult] = {}
    for task in tasks:
        found = _cached(cache, task)
        if found is not None:
            results[task.key] = found
    reused = len(results)
    pending = [t for t in tasks if t.key not in results]
    failed = 0

    def deliver(result: ClipResult) -> None:
        nonlocal failed
        if result.key in results:  # a retried task delivered twice: the first result stands
            return
        results[result.key] = result
        failed += result.failed
        _store(cache, result)
        if progress is not None:
            progress(len(results), len(tasks), failed)

    if progress is not None:
        progress(len(results), len(tasks), failed)
    executor(pending, deliver)
    missing = [t.name for t in tasks if t.key not in results]
    if missing:
        raise InvalidInputError(f"the executor returned no result for {len(missing)} clips, e.g. {missing[0]!r}")
    ordered = [results[t.key] for t in tasks]
    entries = []
    for result in ordered:
        if result.library is not None:
            library = library_from_buffer(result.library, file=f"{CACHE_FOLDER}/{result.key}.ossalib")
            entries.append((library.skeletons[0], library.clips[0]))
    out.mkdir(parents=True, exist_ok=True)
    library_path = save_library(ClipLibrary(entries), out / LIBRARY_NAME)
    rows = tuple(r.row for r in ordered)
    manifest = {"library": LIBRARY_NAME, "clips": list(rows)}
    manifest_path = out / MANIFEST_NAME
    manifest_path.write_text(json.dumps(manifest, sort_keys=True, indent=1) + "\n")
    return BuildReport(rows, reused, len(pending) - failed, failed, library_path, manifest_path)
