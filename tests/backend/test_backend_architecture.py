"""The backend's place in the dependency rule: numba in its kernel modules, the runtime core only below it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_architecture import ROOT, imported_modules, top_level


@pytest.mark.parametrize("path", list((ROOT / "engine").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_kernel_modules_import_numba(path: Path) -> None:
    kernels = {
        ROOT / "engine" / "backend" / "_kernels.py",
        ROOT / "engine" / "backend" / "_transition_kernels.py",
        ROOT / "engine" / "backend" / "_capture_kernels.py",
        ROOT / "engine" / "backend" / "_offset_kernels.py",
        ROOT / "engine" / "backend" / "_pose_offset_kernels.py",
        ROOT / "engine" / "backend" / "_start_offset_kernels.py",
        ROOT / "engine" / "backend" / "_clock_kernels.py",
        ROOT / "engine" / "backend" / "_sampling_kernels.py",
        ROOT / "engine" / "backend" / "_threads.py",
        ROOT / "engine" / "motion_matching" / "_kernels.py",
        ROOT / "engine" / "compress" / "_kernels.py",
        ROOT / "engine" / "graph" / "_machine_kernels.py",
        ROOT / "engine" / "graph" / "_leaf_kernels.py",
        ROOT / "engine" / "graph" / "_blend_kernels.py",
    }
    if path not in kernels:
        assert "numba" not in top_level(imported_modules(path)), path


@pytest.mark.parametrize("path", list((ROOT / "engine" / "backend").rglob("*.py")), ids=lambda p: p.name)
def test_backend_builds_on_math_and_anim_only(path: Path) -> None:
    """And on the compressed clips it plays (``engine.compress``: clips, their kernel arrays and decoder)."""
    engine = {n.split(".")[1] for n in imported_modules(path) if n.startswith("engine.") and n.count(".") >= 1}
    assert engine <= {"math", "anim", "errors", "backend", "compress"}, (path, engine)


def test_math_and_anim_never_import_the_backend() -> None:
    for folder in ("math", "anim"):
        for path in (ROOT / "engine" / folder).rglob("*.py"):
            assert not any(n.startswith("engine.backend") for n in imported_modules(path)), path
