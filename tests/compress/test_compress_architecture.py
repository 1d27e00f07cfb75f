"""Compression in the dependency rule: the codec on math and anim (below the backend), the pipeline on top."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_architecture import ROOT, imported_modules, top_level

COMPRESS = sorted((ROOT / "engine" / "compress").rglob("*.py"))
PIPELINE = sorted((ROOT / "engine" / "pipeline").rglob("*.py"))


def engine_packages(path: Path) -> set[str]:
    return {n.split(".")[1] for n in imported_modules(path) if n.startswith("engine.")}


@pytest.mark.parametrize("path", COMPRESS, ids=lambda p: p.name)
def test_the_codec_builds_on_math_and_anim_only(path: Path) -> None:
    """No file reading, no GL, no pipeline, no backend: compressed clips are runtime data the backend plays."""
    assert engine_packages(path) <= {"math", "anim", "errors", "compress"}, path


@pytest.mark.parametrize("path", COMPRESS + PIPELINE, ids=lambda p: p.name)
def test_numba_and_dask_stay_in_their_modules(path: Path) -> None:
    modules = top_level(imported_modules(path))
    if path.name != "_kernels.py":
        assert "numba" not in modules, path
    if path.name != "executors.py":
        assert not modules & {"dask", "distributed"}, path


def test_nothing_below_imports_compression() -> None:
    """``math`` and ``anim`` know compressed clips by a protocol only; the backend plays them, never builds them."""
    for folder in ("math", "anim", "io"):
        for path in (ROOT / "engine" / folder).rglob("*.py"):
            assert not {n for n in imported_modules(path) if n.startswith(("engine.compress", "engine.pipeline"))}, path
    for path in (ROOT / "engine" / "backend").rglob("*.py"):
        assert not {n for n in imported_modules(path) if n.startswith("engine.pipeline")}, path
