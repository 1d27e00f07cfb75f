"""Fetch the character corpus into a cache outside the repository.

``python3 -m tests.corpus.fetch`` reads ``tests/data/characters/manifest.json``, downloads each
registry source it names (a Debian ``.deb`` with ``apt-get download``, a PyPI sdist with ``pip
download``; each pinned to one version and checked against its sha256), and extracts only the
listed files into ``CACHE/files/<source>/<path inside the package>``. Every extracted file is
checked against its own sha256. Files from the ``shared`` source are not fetched: they are read in
place from ``../shared/assets``.

An entry with a ``convert`` block is a file of another format in the package (DirectX ``.X``, FBX,
ASE, ...) turned into glTF binary by a pinned converter (``converters`` in the manifest: Debian's
``assimp-utils``, ``assimp export IN OUT -fglb2``) into ``CACHE/files/<source>/<entry path>``. The
input is pinned by its sha256 and the converter by its package version; the output is not (assimp's
GLB writer is not byte-deterministic), so the corpus tests check its structure against the entry's
``covers`` instead.

The cache is ``$OSSA_CORPUS`` or ``~/.cache/ossa-corpus``. A second run finds every file present
with the right hash and returns without touching the network. Nothing is written into the
repository: downloaded data is never committed.

Exit status: 0 when every registry file is in the cache and verified, 1 otherwise (one line per
problem on stderr).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "tests" / "data" / "characters" / "manifest.json"
#: Sources that are read in place rather than downloaded.
LOCAL_REGISTRIES = frozenset({"shared"})


class FetchError(Exception):
    """A source could not be downloaded, verified or extracted (the message says which and why)."""


def cache_root() -> Path:
    """The corpus cache: ``$OSSA_CORPUS``, else ``~/.cache/ossa-corpus``."""
    configured = os.environ.get("OSSA_CORPUS")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "ossa-corpus"


def load_manifest(path: Path = MANIFEST) -> dict[str, Any]:
    """The parsed manifest (``sources`` by id, ``files`` as a list)."""
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return manifest


def sha256_of(path: Path) -> str:
    """Hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def blobs(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The package files one manifest entry needs: the file (or its conversion input), then its companions."""
    own = entry.get("convert", entry)
    path = own.get("input", entry["path"])
    return [{"path": path, "sha256": own["sha256"], "bytes": own["bytes"]}, *entry["companions"]]


def missing_conversions(manifest: dict[str, Any], cache: Path) -> list[dict[str, Any]]:
    """The converted entries whose glTF output is absent from the cache."""
    return [
        entry
        for entry in manifest["files"]
        if "convert" in entry and not extracted_path(cache, entry["source"], entry["path"]).is_file()
    ]


def installed_version(package: str) -> str | None:
    """The installed version of Debian package ``package``, or ``None`` (not installed, or no dpkg)."""
    try:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 and result.stdout.strip() else None


def convert(manifest: dict[str, Any], entry: dict[str, Any], cache: Path) -> None:
    """Run the entry's pinned converter on its verified input, writing the glTF output into the cache."""
    plan = entry["convert"]
    converter = manifest["converters"][plan["converter"]]
    pinned = f"{converter['package']}={converter['version']}"
    version = installed_version(converter["package"])
    if version != converter["version"]:
        found = "not installed" if version is None else f"version {version} installed"
        raise FetchError(f"entry {entry['id']!r}: converting needs {pinned} ({found}; apt-get install {pinned})")
    source = extracted_path(cache, entry["source"], plan["input"])
    output = extracted_path(cache, entry["source"], entry["path"])
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.stem + ".partial" + output.suffix)
    command = [part.format(input=source, output=partial) for part in converter["command"]]
    _run(command, output.parent, f"entry {entry['id']!r}")
    if not partial.is_file() or partial.stat().st_size == 0:
        raise FetchError(f"entry {entry['id']!r}: `{' '.join(command)}` wrote no output")
    partial.replace(output)


def extracted_path(cache: Path, source: str, member: str) -> Path:
    """Where ``member`` of ``source`` lives in the cache; refuses paths that would leave it."""
    relative = PurePosixPath(member)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise FetchError(f"manifest path {member!r} of source {source!r} must be relative and stay inside the package")
    return cache / "files" / source / Path(*relative.parts)


def missing_files(manifest: dict[str, Any], cache: Path) -> dict[str, list[dict[str, Any]]]:
    """Per registry source, the blobs that are absent from the cache or fail their sha256."""
    missing: dict[str, list[dict[str, Any]]] = {}
    checked: set[Path] = set()
    for entry in manifest["files"]:
        source = entry["source"]
        if manifest["sources"][source]["registry"] in LOCAL_REGISTRIES:
            continue
        for blob in blobs(entry):
            path = extracted_path(cache, source, blob["path"])
            if path in checked:  # a companion shared by several entries (a licence note)
                continue
            checked.add(path)
            if not (path.is_file() and sha256_of(path) == blob["sha256"]):
                missing.setdefault(source, []).append(blob)
    return missing


def _run(command: list[str], cwd: Path, what: str) -> None:
    """Run a package client; a failure raises :class:`FetchError` with the client's last line."""
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise FetchError(f"{what}: `{' '.join(command)}` exited {result.returncode}: {lines[-1] if lines else ''}")


def download(source_id: str, source: dict[str, Any], cache: Path) -> Path:
    """The verified artifact of ``source`` in ``CACHE/downloads``, downloaded when absent or wrong."""
    target = cache / "downloads" / source["artifact"]
    if target.is_file() and sha256_of(target) == source["sha256"]:
        return target
    what = f"source {source_id!r} ({source['registry']} {source['package']}=={source['version']})"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        workdir = Path(scratch)
        if source["registry"] == "debian":
            # apt-get needs the package lists (`apt-get update`); the pinned version must still be in the archive.
            _run(["apt-get", "download", f"{source['package']}={source['version']}"], workdir, what)
        elif source["registry"] == "pypi":
            spec = f"{source['package']}=={source['version']}"
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--dest", "."]
            _run([*command, spec], workdir, what)
        else:
            raise FetchError(f"{what}: unknown registry {source['registry']!r} (expected debian, pypi or shared)")
        found = [p for p in workdir.iterdir() if p.name == source["artifact"]]
        if not found:
            names = sorted(p.name for p in workdir.iterdir())
            raise FetchError(f"{what}: expected {source['artifact']!r}, the client wrote {names}")
        actual = sha256_of(found[0])
        if actual != source["sha256"]:
            raise FetchError(f"{what}: sha256 {actual} does not match the manifest's {source['sha256']}")
        shutil.move(str(found[0]), target)
    return target


def _deb_data_member(artifact: Path) -> io.BytesIO:
    """The bytes of the ``data.tar.*`` member of a ``.deb`` (an ``ar`` archive)."""
    raw = artifact.read_bytes()
    if not raw.startswith(b"!<arch>\n"):
        raise FetchError(f"{artifact.name}: not a Debian package (no ar header)")
    offset = 8
    while offset + 60 <= len(raw):
        header = raw[offset : offset + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        start = offset + 60
        if name.startswith("data.tar"):
            return io.BytesIO(raw[start : start + size])
        offset = start + size + (size % 2)
    raise FetchError(f"{artifact.name}: no data.tar member")


def _members(archive: tarfile.TarFile) -> Iterator[tuple[str, tarfile.TarInfo]]:
    """Regular-file members by their path with any leading ``./`` removed."""
    for member in archive.getmembers():
        if member.isfile():
            yield member.name.removeprefix("./"), member


def extract(source_id: str, source: dict[str, Any], artifact: Path, wanted: list[dict[str, Any]], cache: Path) -> None:
    """Copy the ``wanted`` blobs out of ``artifact`` into the cache, each checked against its sha256."""
    # A .deb holds its files in an inner data.tar.*; an sdist is the tar itself.
    inner = _deb_data_member(artifact) if source["registry"] == "debian" else None
    with tarfile.open(name=None if inner else artifact, fileobj=inner, mode="r:*") as archive:
        members = dict(_members(archive))
        for blob in wanted:
            member = members.get(blob["path"])
            if member is None:
                raise FetchError(f"source {source_id!r}: {source['artifact']} has no file {blob['path']!r}")
            handle = archive.extractfile(member)
            if handle is None:
                raise FetchError(f"source {source_id!r}: {blob['path']!r} is not a regular file")
            data = handle.read()
            actual = hashlib.sha256(data).hexdigest()
            if actual != blob["sha256"]:
                raise FetchError(
                    f"source {source_id!r}: {blob['path']!r} has sha256 {actual}, manifest {blob['sha256']}"
                )
            path = extracted_path(cache, source_id, blob["path"])
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".partial")
            partial.write_bytes(data)
            partial.replace(path)


def fetch(manifest: dict[str, Any], cache: Path) -> list[str]:
    """Bring every registry file of ``manifest`` into ``cache`` and convert what needs it; the problems."""
    problems = []
    for source_id, wanted in missing_files(manifest, cache).items():
        source = manifest["sources"][source_id]
        try:
            extract(source_id, source, download(source_id, source, cache), wanted, cache)
        except (FetchError, OSError, tarfile.TarError) as exc:
            problems.append(str(exc))
    if problems:
        return problems
    converting = missing_conversions(manifest, cache)
    return [problem for entry in converting if (problem := _converted(manifest, entry, cache))]


def _converted(manifest: dict[str, Any], entry: dict[str, Any], cache: Path) -> str | None:
    """Convert ``entry``; the problem in one line, or ``None``."""
    try:
        convert(manifest, entry, cache)
    except (FetchError, OSError) as exc:
        return str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    """Command line: fetch (or check with ``--check``) the corpus; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python3 -m tests.corpus.fetch", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cache", type=Path, default=None, help="cache folder (default $OSSA_CORPUS or ~/.cache/ossa-corpus)"
    )
    parser.add_argument("--check", action="store_true", help="only report missing or wrong files, download nothing")
    args = parser.parse_args(argv)
    cache = args.cache if args.cache is not None else cache_root()
    manifest = load_manifest()
    if args.check:
        problems = [
            f"{source}: {blob['path']} missing or wrong"
            for source, wanted in missing_files(manifest, cache).items()
            for blob in wanted
        ] + [f"{entry['id']}: {entry['path']} not converted" for entry in missing_conversions(manifest, cache)]
    else:
        problems = fetch(manifest, cache)
    for problem in problems:
        print(f"corpus: {problem}", file=sys.stderr)
    if not problems:
        count = len(
            {
                (e["source"], blob["path"])
                for e in manifest["files"]
                if manifest["sources"][e["source"]]["registry"] not in LOCAL_REGISTRIES
                for blob in blobs(e)
            }
        )
        converted = sum("convert" in e for e in manifest["files"])
        print(f"corpus: {count} registry files verified, {converted} converted, in {cache / 'files'}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
