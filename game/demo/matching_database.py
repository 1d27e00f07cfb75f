"""The motion-matching demo's database: the CMU locomotion takes retargeted onto the character, built once and cached.

:func:`demo_database` gives the :class:`~engine.motion_matching.Database` the demo's
``--motion-matching`` modes play: a file given with ``--database`` (made by ``ossa mm build
--character`` for the model), or the shared CMU locomotion takes (:data:`TAKES`, tags in
:data:`TAGS`) built onto the model's skeleton (the palette records' joints,
:class:`~engine.render.scene_renderer.SceneRecords`) at start-up, saying so in one line, and
kept in :func:`cache_dir` under a name made of the hash of everything the build reads: the
takes' and the tags file's bytes, the skeleton, the build options and the builder's own source.
A second start with the same inputs loads the file (tens of milliseconds instead of about a
second); a cached file that does not load is built again.
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

import engine
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, OssaWarning
from engine.motion_matching import BuildOptions, Database, build_database, load_database, load_sources, save_database
from engine.motion_matching.controller import ControllerOptions

ROOT = Path(__file__).resolve().parents[2]
TAKES = ROOT.parent / "shared" / "assets" / "cmu_locomotion_bvh"
"""The CMU locomotion takes the demo builds from (``../shared/assets`` beside the repository)."""
TAGS = Path(__file__).with_name("cmu_locomotion.toml")
"""Their tags and time ranges (``engine.motion_matching.load_sources``' sidecar)."""
OPTIONS = BuildOptions(skip_unusable=True)
"""How the demo builds: the defaults (60 fps, mirrored, Holden's weights), unusable takes left out."""
BUILDER = ("motion_matching", "anim", "io/bvh.py", "io/bvh_text.py")
"""The engine's code a build depends on (files or folders of ``engine/``): part of the cache key."""

LEFT_OUT = ("jump",)
"""Tags of frames the demo's characters never play (16_01's jump: the demo's requests are ground paths)."""

Say = Callable[[str, str], None]


def demo_options(database: Database) -> ControllerOptions:
    """The controller's options for ``database``: the defaults, searching no :data:`LEFT_OUT` frame it tags."""
    return ControllerOptions(exclude=tuple(tag for tag in LEFT_OUT if tag in database.tag_names))


def cache_dir() -> Path:
    """Where built databases are kept: ``$OSSA_CACHE_DIR``, else ``$XDG_CACHE_HOME/ossa``, else ``~/.cache/ossa``."""
    configured = os.environ.get("OSSA_CACHE_DIR")
    if configured:
        return Path(configured).expanduser() / "motion-matching"
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "ossa" / "motion-matching"


def build_key(takes: Sequence[Path], tags: Path, skeleton: Skeleton, options: BuildOptions) -> str:
    """The hex SHA-256 of every input of a build (module docstring)."""
    digest = hashlib.sha256()
    for path in (*takes, tags):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    digest.update("\n".join(skeleton.names).encode())
    for array in (
        skeleton.parents,
        skeleton.rest_translations,
        skeleton.rest_rotations,
        skeleton.rest_scales,
        skeleton.inverse_bind_matrices,
    ):
        digest.update(np.ascontiguousarray(array).tobytes())
    digest.update(repr(options).encode())
    package = Path(engine.__file__).parent
    for part in BUILDER:
        found = sorted((package / part).rglob("*.py")) if (package / part).is_dir() else [package / part]
        for source in found:
            digest.update(source.read_bytes())
    return digest.hexdigest()


def _takes() -> list[Path]:
    takes = sorted(TAKES.glob("*.bvh"))
    if not takes:
        raise AssetError(
            "no CMU locomotion takes to build the motion-matching database from; give one with --database FILE "
            "(ossa mm build TAKES... --character MODEL --out FILE)",
            file=str(TAKES),
        )
    return takes


def build_demo_database(skeleton: Skeleton, takes: Sequence[Path], say: Say) -> Database:
    """The database of ``takes`` (tags :data:`TAGS`) on ``skeleton``, built now; unusable takes said and left out."""
    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OssaWarning)
        sources = load_sources(list(takes), tags_file=TAGS)
        database = build_database(sources, skeleton, OPTIONS)
    for warning in caught:
        message = str(warning.message)
        if "left out" in message:
            say("note", f"motion matching: {message}")
    say(
        "note",
        f"motion matching: built {database.num_frames} frames ({database.num_frames / database.fps:.0f} s, "
        f"{database.num_ranges} ranges) in {time.perf_counter() - started:.1f} s",
    )
    return database


def demo_database(skeleton: Skeleton, say: Say, path: Path | None = None, *, cache: bool = True) -> Database:
    """The database the demo plays on ``skeleton``: ``path`` when given, else the CMU takes, built or cached.

    Raises
    ------
    DatabaseError
        ``path`` is not a database file (the error names the file and the problem).
    AssetError
        No file given and no CMU takes found.
    """
    if path is not None:
        database = load_database(path)
        say("note", f"motion matching: {database.num_frames} frames from {path}")
        return database
    takes = _takes()
    if not cache:
        return build_demo_database(skeleton, takes, say)
    stored = cache_dir() / f"{build_key(takes, TAGS, skeleton, OPTIONS)[:24]}.npz"
    if stored.is_file():
        try:
            database = load_database(stored)
        except AssetError as exc:
            say("warning", f"motion matching: the cached database does not load ({exc}); building it again")
        else:
            say("note", f"motion matching: {database.num_frames} frames from the cache ({stored})")
            return database
    say("note", f"motion matching: building the database from {len(takes)} CMU takes in {TAKES} (once: it is cached)")
    database = build_demo_database(skeleton, takes, say)
    stored.parent.mkdir(parents=True, exist_ok=True)
    partial = stored.with_name(f"{stored.stem}.{os.getpid()}.partial")
    save_database(database, partial)
    partial.replace(stored)  # atomic: a second demo starting now reads a whole file or none
    return database
