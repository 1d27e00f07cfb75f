"""The corpus fetcher's conversion step: a pinned converter, refused when another version is installed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import fetch
from tests.corpus.corpus import MANIFEST

CONVERTED = [e for e in MANIFEST["files"] if "convert" in e]


def test_every_converted_entry_names_a_pinned_converter_and_a_pinned_input() -> None:
    assert len(CONVERTED) >= 5
    for entry in CONVERTED:
        converter = MANIFEST["converters"][entry["convert"]["converter"]]
        assert converter["registry"] == "debian"
        assert converter["version"]
        assert "{input}" in converter["command"]
        assert "{output}" in converter["command"]
        assert len(entry["convert"]["sha256"]) == 64
        assert entry["path"].endswith(".glb")
        assert entry["path"].startswith("converted/")
        (blob, *_) = fetch.blobs(entry)
        assert blob["path"] == entry["convert"]["input"]


def test_a_missing_output_is_listed_for_conversion(tmp_path: Path) -> None:
    assert [e["id"] for e in fetch.missing_conversions(MANIFEST, tmp_path)] == [e["id"] for e in CONVERTED]


def test_another_converter_version_is_refused_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest: dict[str, Any] = copy.deepcopy(MANIFEST)
    entry = CONVERTED[0]
    monkeypatch.setattr(fetch, "installed_version", lambda package: "9.9.9")
    with pytest.raises(fetch.FetchError) as raised:
        fetch.convert(manifest, entry, tmp_path)
    converter = manifest["converters"][entry["convert"]["converter"]]
    pinned = f"{converter['package']}={converter['version']}"
    assert str(raised.value) == (
        f"entry {entry['id']!r}: converting needs {pinned} (version 9.9.9 installed; apt-get install {pinned})"
    )
    monkeypatch.setattr(fetch, "installed_version", lambda package: None)
    with pytest.raises(fetch.FetchError, match=r"converting needs .* \(not installed; apt-get install "):
        fetch.convert(manifest, entry, tmp_path)
