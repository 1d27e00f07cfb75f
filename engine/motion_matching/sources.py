"""What a database is built from: clips with their skeleton, the part of each to use, and tags.

A :class:`ClipSource` is one clip over its own skeleton, the time range to take from it and
the tags of its frames. :func:`load_sources` reads BVH takes and glTF files into sources:

- a BVH take is one source named after the file (``02_01.bvh`` → ``"02_01"``). Frame 0 is
  left out when it is a converter's calibration pose rather than capture, as the BVH reader
  tells it (:attr:`engine.io.bvh.BvhAnimation.calibration_frames`; the CMU cgspeed
  MotionBuilder and Daz conversions add one);
- a glTF file gives one source per clip of its first skin, named after the clip.

**Tags** are lower-case words. A source's own tags come from its name (``"Walk_Fast"`` →
``walk``, ``fast``; the numbered CMU takes have none) and from a *sidecar* file (TOML or JSON)
that names sources and gives each any of:

.. code-block:: toml

    [clips."131_02"]
    tags = ["stylised"]                   # every frame of the clip
    start = 0.0                           # seconds of the clip to use (default: all of it)
    end = 10.3
    spans = [                             # frames between start and end (seconds) also get these
        { start = 0.0, end = 0.4, tags = ["idle"] },
        { start = 0.4, end = 9.2, tags = ["walk"] },
    ]

A frame's tags are its source's tags plus those of every span holding its time.
"""

from __future__ import annotations

import json
import re
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError, InvalidInputError, OssaWarning
from engine.io import load_bvh, load_character

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with the tomli backport (a dependency there)
    import tomli as tomllib

_TAG = re.compile(r"^[a-z][a-z0-9_-]*$")
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
#: Keys a sidecar entry may have.
SIDECAR_KEYS = ("tags", "start", "end", "spans")


def check_tags(tags: Any, where: str) -> tuple[str, ...]:
    """``tags`` as a tuple of lower-case words (letters, digits, ``_``, ``-``, a letter first)."""
    if isinstance(tags, str) or not isinstance(tags, Sequence):
        raise InvalidInputError(f"{where} must be a list of tags, got {tags!r}")
    for tag in tags:
        if not isinstance(tag, str) or not _TAG.match(tag):
            raise InvalidInputError(
                f"{where}: tag {tag!r} must be a lower-case word (letters, digits, '_' or '-', a letter first)"
            )
    return tuple(dict.fromkeys(tags))


def tags_from_name(name: str) -> tuple[str, ...]:
    """The words of ``name`` of two letters or more, lower-cased (``"Walk_Fast"`` → ``("walk", "fast")``)."""
    return tuple(dict.fromkeys(w.lower() for w in _NAME_WORDS.findall(name) if len(w) >= 2))


@dataclass(frozen=True)
class TagSpan:
    """Tags for the frames of a source between ``start`` and ``end`` seconds (inclusive)."""

    start: float
    end: float
    tags: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class ClipSource:
    """One clip to build a database from.

    Attributes
    ----------
    name
        The source's name (unique within a build): BVH file stem or glTF clip name.
    clip
        The clip, over ``skeleton``'s joints.
    skeleton
        Its skeleton.
    start, end
        The clip times (seconds) to take; default the whole clip, ``[0, clip.duration]``.
    tags
        Tags of every frame.
    spans
        Tags of parts of the clip (:class:`TagSpan`).
    """

    name: str
    clip: Clip
    skeleton: Skeleton
    start: float = 0.0
    end: float | None = None
    tags: tuple[str, ...] = ()
    spans: tuple[TagSpan, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.clip.num_targets != self.skeleton.num_joints:
            raise InvalidInputError(
                f"clip {self.name!r} animates {self.clip.num_targets} joints but its skeleton has "
                f"{self.skeleton.num_joints}"
            )
        end = self.clip.duration if self.end is None else float(self.end)
        start = float(self.start)
        if not (np.isfinite(start) and np.isfinite(end) and 0.0 <= start < end <= self.clip.duration + 1e-9):
            raise InvalidInputError(
                f"clip {self.name!r}: start {start} and end {end} must satisfy 0 <= start < end <= its duration "
                f"{self.clip.duration}"
            )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", min(end, self.clip.duration))
        object.__setattr__(self, "tags", check_tags(self.tags, f"clip {self.name!r} tags"))
        for span in self.spans:
            check_tags(span.tags, f"clip {self.name!r} span tags")
            if not (np.isfinite(span.start) and np.isfinite(span.end) and span.start <= span.end):
                raise InvalidInputError(f"clip {self.name!r}: span {span.start}–{span.end} must be ordered seconds")

    def frame_tags(self, times: Any) -> list[tuple[str, ...]]:
        """The tags of frames at clip ``times`` ``(F,)``."""
        out = []
        for t in np.asarray(times, dtype=np.float64):
            held = [tag for s in self.spans if s.start <= t <= s.end for tag in s.tags]
            out.append(tuple(dict.fromkeys((*self.tags, *held))))
        return out


def _read_sidecar(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise AssetError(f"cannot read the tags file: {exc.strerror}", file=str(path)) from None
    try:
        text = raw.decode("utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AssetError(
            f"not a valid {'JSON' if path.suffix.lower() == '.json' else 'TOML'} file: {exc}", file=str(path)
        ) from None
    clips = data.get("clips") if isinstance(data, dict) else None
    if not isinstance(clips, dict) or set(data) != {"clips"}:
        raise AssetError("a tags file holds one table, 'clips', of clip name → entry", file=str(path))
    return clips


def _apply_sidecar(source: ClipSource, entry: Any, file: str) -> ClipSource:
    where = f"clips.{source.name}"
    if not isinstance(entry, dict) or set(entry) - set(SIDECAR_KEYS):
        raise AssetError(f"an entry must be a table with keys among {list(SIDECAR_KEYS)}", file=file, where=where)
    try:
        spans = tuple(
            TagSpan(float(s["start"]), float(s["end"]), check_tags(s.get("tags", ()), f"{where}.spans[{k}].tags"))
            for k, s in enumerate(entry.get("spans", ()))
        )
        return ClipSource(
            source.name,
            source.clip,
            source.skeleton,
            start=float(entry.get("start", source.start)),
            end=float(entry["end"]) if "end" in entry else source.end,
            tags=(*source.tags, *check_tags(entry.get("tags", ()), f"{where}.tags")),
            spans=spans,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise AssetError(f"bad entry: {exc}", file=file, where=where) from None


def load_sources(
    paths: Sequence[str | Path], *, tags_file: str | Path | None = None, scale: float | None = None
) -> list[ClipSource]:
    """Read BVH takes and glTF files into :class:`ClipSource` s (see the module docstring).

    Parameters
    ----------
    paths
        ``.bvh``, ``.gltf`` or ``.glb`` files.
    tags_file
        A sidecar (``.toml`` or ``.json``) with tags and time ranges per source name (names it
        lists that are not sources are warned about: one sidecar may serve several builds).
    scale
        Metres per BVH file unit (default: detected, :func:`engine.io.load_bvh`).

    Raises
    ------
    AssetError
        A file that cannot be read or parsed, an unknown suffix, a bad sidecar, two sources of
        one name.
    """
    sources: list[ClipSource] = []
    for raw in paths:
        path = Path(raw)
        suffix = path.suffix.lower()
        if suffix == ".bvh":
            anim = load_bvh(path, scale=scale)
            start = anim.calibration_frames * anim.frame_time
            sources.append(ClipSource(path.stem, anim.clip, anim.skeleton, start=start, tags=tags_from_name(path.stem)))
        elif suffix in (".gltf", ".glb"):
            character = load_character(path)
            if not character.clips:
                raise AssetError("the file has no clips to build a database from", file=str(path))
            sources.extend(
                ClipSource(name, clip, character.skeleton, tags=tags_from_name(name))
                for name, clip in character.clips.items()
            )
        else:
            raise AssetError(f"unknown clip file type {suffix!r}: give .bvh, .gltf or .glb files", file=str(path))
    names = [s.name for s in sources]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise AssetError(f"two clips are named {duplicates[0]!r}: source names must be unique")
    if tags_file is None:
        return sources
    file = str(tags_file)
    entries: Mapping[str, Any] = _read_sidecar(Path(tags_file))
    unknown = sorted(set(entries) - set(names))
    if unknown:
        warnings.warn(f"{file}: the tags file names clips that are not given: {unknown}", OssaWarning, stacklevel=2)
    return [_apply_sidecar(s, entries[s.name], file) if s.name in entries else s for s in sources]
