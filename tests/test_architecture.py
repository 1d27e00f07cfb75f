"""The dependency rule of ARCHITECTURE.md, enforced by scanning imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and n.level == 0}
    return names


def top_level(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def engine_files(*exclude: str) -> list[Path]:
    return [
        p for p in (ROOT / "engine").rglob("*.py") if not any(part in exclude for part in p.relative_to(ROOT).parts)
    ]


@pytest.mark.parametrize("path", engine_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_engine_never_imports_game_or_pygame(path: Path) -> None:
    assert not top_level(imported_modules(path)) & {"game", "pygame"}, path


@pytest.mark.parametrize("path", engine_files("render"), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_render_imports_moderngl(path: Path) -> None:
    assert "moderngl" not in top_level(imported_modules(path)), path


@pytest.mark.parametrize("path", engine_files("io"), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_io_imports_pygltflib(path: Path) -> None:
    assert "pygltflib" not in top_level(imported_modules(path)), path


@pytest.mark.parametrize("path", list((ROOT / "engine").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_engine_never_imports_scipy(path: Path) -> None:
    """scipy is a test reference only, never a runtime dependency."""
    assert "scipy" not in top_level(imported_modules(path)), path


@pytest.mark.parametrize(
    "path",
    list((ROOT / "engine" / "anim").rglob("*.py")) + list((ROOT / "engine" / "math").rglob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_runtime_never_imports_io_or_render(path: Path) -> None:
    """``math`` and ``anim`` are the runtime core: they read no files and touch no GL."""
    assert not {n for n in imported_modules(path) if n.startswith(("engine.io", "engine.render", "engine.camera"))}, (
        path
    )


def engine_imports(path: Path) -> set[str]:
    return {n for n in imported_modules(path) if n == "engine" or n.startswith("engine.")}


def outside(path: Path, allowed: tuple[str, ...]) -> set[str]:
    """The engine modules ``path`` imports that are in none of the packages ``allowed``."""
    return {n for n in engine_imports(path) if not any(n == a or n.startswith(f"{a}.") for a in allowed)}


@pytest.mark.parametrize(
    "path",
    list((ROOT / "engine" / "graph").rglob("*.py")) + list((ROOT / "engine" / "animator").rglob("*.py")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_controllers_import_only_anim_the_player_math_and_errors(path: Path) -> None:
    """The graph and the Animator are controllers: they decide times and weights; posing is the player's.

    Neither imports the other nor the backend (the player chooses it); the command's logic is engine/cli's.
    """
    package = f"engine.{path.relative_to(ROOT / 'engine').parts[0]}"
    assert not outside(path, ("engine.anim", "engine.player", "engine.math", "engine.errors", package))


@pytest.mark.parametrize("path", list((ROOT / "engine" / "player").rglob("*.py")), ids=lambda p: p.name)
def test_the_player_sits_on_anim_and_the_backend_only(path: Path) -> None:
    """The one evaluator knows no controller (animator, graph) and no renderer."""
    assert not outside(path, ("engine.anim", "engine.backend", "engine.player", "engine.math", "engine.errors"))
