"""Backend choice (OSSA_BACKEND), lazy numba import, the on-disk kernel cache, no allocation per frame."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from engine.backend import FrameState, active_backend, backend_description, evaluate_frame
from engine.backend.select import BACKENDS

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OSSA_")} | env
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True, check=False
    )
    return result.stdout.strip() + result.stderr.strip()


@pytest.mark.parametrize(
    ("value", "expected"), [("numpy", "numpy"), ("numba", "numba"), ("", "numba"), ("auto", "numba")]
)
def test_backend_from_the_environment(value, expected):
    code = "import engine.backend as b; print(b.active_backend())"
    assert run_python(code, OSSA_BACKEND=value) == expected


def test_a_bad_backend_name_is_named():
    out = run_python("import engine.backend", OSSA_BACKEND="cuda")
    assert "OSSA_BACKEND must be one of ('numba', 'numpy', 'auto'), got 'cuda'" in out


def test_importing_the_engine_does_not_import_numba():
    code = "import sys, engine.backend, engine.anim; print('numba' in sys.modules)"
    assert run_python(code) == "False"


def test_description_names_backend_version_and_threads():
    assert active_backend() in BACKENDS
    assert run_python("import engine.backend as b; print(b.backend_description())", OSSA_THREADS="3").startswith(
        "numba 0."
    )
    assert "3 threads" in run_python("import engine.backend as b; print(b.backend_description())", OSSA_THREADS="3")
    assert run_python("import engine.backend as b; print(b.backend_description())", OSSA_BACKEND="numpy").startswith(
        "numpy 2."
    )
    assert "OSSA_THREADS must be a positive integer" in run_python(
        "import engine.backend as b; b.default_threads()", OSSA_THREADS="many"
    )
    assert backend_description()


def test_kernels_are_cached_next_to_the_module(mannequin_bank):
    """numba's cache=True writes index files into engine/backend/__pycache__ (a clean clone gets them
    on the first run, an editable install too; numba falls back to its user cache dir when read-only)."""
    state = FrameState(mannequin_bank, 1, 2)
    evaluate_frame(state, np.zeros((1, 2)), np.ones((1, 2)), out=state.new_palette(), backend="numba")
    custom = os.environ.get("NUMBA_CACHE_DIR")
    cache = ROOT / "engine" / "backend" / "__pycache__" if custom is None else Path(custom)
    assert any(p.name.startswith("_kernels.run_serial") and p.suffix == ".nbi" for p in cache.rglob("*.nbi"))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_frame_allocates_nothing(mannequin_bank, threads):
    """The compiled frame writes into caller-owned buffers: no array is allocated per call."""
    count = 1000
    state = FrameState(mannequin_bank, 2, count, threads=threads).play(1, "run")
    palette = state.new_palette()
    times, weights = np.zeros((2, count)), np.full((2, count), 0.5)
    evaluate_frame(state, times, weights, out=palette, backend="numba")
    tracemalloc.start()
    for _ in range(5):
        times += 1 / 60
        evaluate_frame(state, times, weights, out=palette, backend="numba")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4_000  # a palette is 1.6 MB, one (2, C) float array 16 kB
