"""Shared fixtures: hypothesis profiles, the shared-asset locator, a seeded RNG.

Environment variables (``.ci/run`` sets both to 1):

- ``OSSA_REQUIRE_SHARED``: a missing ``../shared/assets`` fails the asset tests instead of
  skipping them.
- ``OSSA_REQUIRE_GL``: a missing OpenGL context fails the GL tests instead of skipping them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SHARED_ASSETS = Path(os.environ.get("OSSA_SHARED_ASSETS", ROOT.parent / "shared" / "assets"))

# Property tests are derandomized by default, the same draws on every machine and in CI: a failure
# seen once is seen on every run. ``HYPOTHESIS_PROFILE=random`` draws new examples each run and
# prints the blob that reproduces a failure; ``long`` is the long fuzz.
_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("default", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("random", max_examples=60, derandomize=False, print_blob=True, **_COMMON)
settings.register_profile("long", max_examples=5000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Real-window tests are in the slow tier: ``python3 -m pytest -m slow`` runs them."""
    for item in items:
        if item.get_closest_marker("window") is not None:
            item.add_marker(pytest.mark.slow)


def require_or_skip(reason: str, env_flag: str) -> None:
    """Skip with ``reason``, or fail when ``env_flag`` is set (CI must not skip silently)."""
    if os.environ.get(env_flag) == "1":
        pytest.fail(f"{reason} ({env_flag}=1 turns this skip into a failure)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_assets() -> Path:
    """Path of ``../shared/assets``; skips (or fails under ``OSSA_REQUIRE_SHARED=1``) if absent."""
    if not SHARED_ASSETS.is_dir():
        require_or_skip(f"shared assets not found at {SHARED_ASSETS}", "OSSA_REQUIRE_SHARED")
    return SHARED_ASSETS


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded random generator: tests are repeatable."""
    return np.random.default_rng(20261202)
