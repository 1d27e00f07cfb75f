"""The character corpus as the tests see it: manifest entries and where their files are.

Registry files live in the fetch cache (see :mod:`tests.corpus.fetch`); ``shared`` files in
``../shared/assets``. :class:`Corpus` resolves an entry to its path, checks every file it needs
against the manifest's sha256 once per session, and skips (or fails, under ``OSSA_REQUIRE_CORPUS=1``
/ ``OSSA_REQUIRE_SHARED=1``) with a message saying how to get the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import SHARED_ASSETS, require_or_skip
from tests.corpus.fetch import LOCAL_REGISTRIES, blobs, extracted_path, load_manifest, sha256_of

MANIFEST = load_manifest()
SOURCES: dict[str, dict[str, Any]] = MANIFEST["sources"]
ENTRIES: list[dict[str, Any]] = MANIFEST["files"]
GLTF = [e for e in ENTRIES if e["kind"] == "gltf"]
BVH = [e for e in ENTRIES if e["kind"] == "bvh"]


def entry_id(entry: dict[str, Any]) -> str:
    """The pytest id of a manifest entry."""
    return str(entry["id"])


def by_id(identifier: str) -> dict[str, Any]:
    """The manifest entry called ``identifier``."""
    return next(e for e in ENTRIES if e["id"] == identifier)


class Corpus:
    """Resolves manifest entries to verified files in ``cache`` or the shared assets."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self._verified: set[Path] = set()

    def _location(self, source: str, member: str) -> Path:
        if SOURCES[source]["registry"] in LOCAL_REGISTRIES:
            return SHARED_ASSETS / member
        return extracted_path(self.cache, source, member)

    def path(self, entry: dict[str, Any]) -> Path:
        """The file of ``entry`` (its companions beside it); skips when it is not there.

        A converted entry's input is verified; its glTF output is not pinned (see :mod:`tests.corpus.fetch`).
        """
        source = entry["source"]
        local = SOURCES[source]["registry"] in LOCAL_REGISTRIES
        for blob in blobs(entry):
            location = self._location(source, blob["path"])
            if location in self._verified:
                continue
            if not location.is_file():
                if local:
                    require_or_skip(f"shared asset not found: {location}", "OSSA_REQUIRE_SHARED")
                require_or_skip(
                    f"corpus file not fetched: {location} (run `python3 -m tests.corpus.fetch`)", "OSSA_REQUIRE_CORPUS"
                )
            actual = sha256_of(location)
            assert actual == blob["sha256"], f"{location}: sha256 {actual}, manifest {blob['sha256']} (refetch)"
            self._verified.add(location)
        path = self._location(source, entry["path"])
        if "convert" in entry and not path.is_file():
            require_or_skip(
                f"corpus file not converted: {path} (run `python3 -m tests.corpus.fetch`; it needs assimp-utils)",
                "OSSA_REQUIRE_CORPUS",
            )
        return path
