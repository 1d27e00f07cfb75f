"""Fixtures of the corpus tests.

Environment variables:

- ``OSSA_CORPUS``: the fetch cache (default ``~/.cache/ossa-corpus``); fill it with
  ``python3 -m tests.corpus.fetch``.
- ``OSSA_REQUIRE_CORPUS``: ``1`` turns a missing corpus file into a failure instead of a skip
  (``.ci/run`` sets it after fetching).
"""

from __future__ import annotations

import pytest

from tests.corpus.corpus import Corpus
from tests.corpus.fetch import cache_root


@pytest.fixture(scope="session")
def corpus() -> Corpus:
    """The corpus: ``corpus.path(entry)`` gives a verified file or skips with the way to fetch it."""
    return Corpus(cache_root())
