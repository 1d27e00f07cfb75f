"""The database file: a numpy ``.npz`` archive (no pickles) with a JSON header; format in docs/motion_matching.md.

:func:`save_database` writes every constructor array of a
:class:`~engine.motion_matching.database.Database` plus a ``header`` (format name, version,
names, the feature layout with its joints by name); :func:`load_database` reads it back and
checks it as the constructor does, so a file that loads is a database that works. Derived
arrays (normalised features, search structures) are recomputed, never read.
"""

from __future__ import annotations

import itertools
import json
import zipfile
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.anim.skeleton import Skeleton
from engine.errors import OssaError
from engine.motion_matching.database import FLOAT_FIELDS, Database, DatabaseError
from engine.motion_matching.layout import FeatureGroup, FeatureLayout

#: The ``format`` field of the header.
FORMAT = "ossa-motion-matching"
#: The version this module writes, and the only one it reads.
VERSION = 1
#: The arrays of a version-1 file besides the header (their shapes: docs/motion_matching.md).
ARRAYS = (
    "skeleton_parents",
    "skeleton_rest_translations",
    "skeleton_rest_rotations",
    "skeleton_rest_scales",
    "skeleton_inverse_bind_matrices",
    *FLOAT_FIELDS,
    "range_starts",
    "range_stops",
    "range_mirrored",
    "frame_tags",
)


def _header(database: Database) -> dict[str, Any]:
    names = database.skeleton.names
    return {
        "format": FORMAT,
        "version": VERSION,
        "fps": database.fps,
        "end_margin": database.end_margin,
        "joint_names": list(names),
        "horizons": list(database.layout.horizons),
        "groups": [
            {
                "name": g.name,
                "start": g.start,
                "stop": g.stop,
                "weight": g.weight,
                "joints": [names[j] for j in database.layout.joints.get(g.name, ())],
            }
            for g in database.layout.groups
        ],
        "range_names": list(database.range_names),
        "range_sources": list(database.range_sources),
        "tag_names": list(database.tag_names),
    }


def save_database(database: Database, path: str | Path) -> Path:
    """Write ``database`` to ``path`` (a compressed ``.npz``, whatever the name); returns the path."""
    skeleton = database.skeleton
    arrays = {
        "header": np.array(json.dumps(_header(database))),
        "skeleton_parents": skeleton.parents,
        "skeleton_rest_translations": skeleton.rest_translations,
        "skeleton_rest_rotations": skeleton.rest_rotations,
        "skeleton_rest_scales": skeleton.rest_scales,
        "skeleton_inverse_bind_matrices": skeleton.inverse_bind_matrices,
        **{name: getattr(database, name) for name in ARRAYS if not name.startswith("skeleton_")},
    }
    path = Path(path)
    try:
        with path.open("wb") as file:  # a file object: numpy would append ".npz" to a bare name
            np.savez_compressed(file, **arrays)
    except OSError as exc:
        raise DatabaseError(f"cannot write the database: {exc.strerror}", file=str(path)) from None
    return path


def _layout(header: dict[str, Any], names: tuple[str, ...]) -> FeatureLayout:
    index = {n: j for j, n in enumerate(names)}
    groups, joints = [], {}
    for g in header["groups"]:
        groups.append(FeatureGroup(str(g["name"]), int(g["start"]), int(g["stop"]), float(g["weight"])))
        if g["joints"]:
            unknown = [n for n in g["joints"] if n not in index]
            if unknown:
                raise DatabaseError(f"group {g['name']!r} reads joints {unknown} the skeleton does not have")
            joints[str(g["name"])] = tuple(index[n] for n in g["joints"])
    if not groups or groups[0].start != 0 or any(a.stop != b.start for a, b in itertools.pairwise(groups)):
        raise DatabaseError("the feature groups must tile the columns in order from 0")
    return FeatureLayout(tuple(groups), tuple(int(h) for h in header["horizons"]), MappingProxyType(joints))


def load_database(path: str | Path) -> Database:
    """Read a database written by :func:`save_database`.

    Raises
    ------
    DatabaseError
        (an :class:`~engine.errors.AssetError`) naming the file: unreadable, not an ``.npz`` of
        this format, another version, a missing or mis-shaped array, inconsistent contents.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            data = {name: archive[name] for name in archive.files}
    except OSError as exc:
        raise DatabaseError(f"cannot read the database: {exc}", file=str(path)) from None
    except (ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise DatabaseError(f"not an Ossa motion-matching database (.npz): {exc}", file=str(path)) from None
    try:
        strays = sorted(name for name, value in data.items() if not isinstance(value, np.ndarray))
        if strays or "header" not in data:
            raise DatabaseError(
                f"not an Ossa motion-matching database: {f'{strays} are not numpy arrays' if strays else 'no header'}"
            )
        header = json.loads(str(data["header"][()]))
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise DatabaseError(f"not an Ossa motion-matching database: the header's format is not {FORMAT!r}")
        if header.get("version") != VERSION:
            raise DatabaseError(f"database version {header.get('version')!r}: this Ossa reads version {VERSION}")
        missing = [name for name in ARRAYS if name not in data]
        if missing:
            raise DatabaseError(f"the file lacks the arrays {missing}")
        names = tuple(str(n) for n in header["joint_names"])
        skeleton = Skeleton(
            names,
            data["skeleton_parents"],
            data["skeleton_rest_translations"],
            data["skeleton_rest_rotations"],
            data["skeleton_rest_scales"],
            data["skeleton_inverse_bind_matrices"],
        )
        return Database(
            skeleton=skeleton,
            fps=float(header["fps"]),
            layout=_layout(header, names),
            range_names=tuple(header["range_names"]),
            range_sources=tuple(header["range_sources"]),
            tag_names=tuple(str(t) for t in header["tag_names"]),
            end_margin=int(header["end_margin"]),
            **{name: data[name] for name in ARRAYS if not name.startswith("skeleton_")},
        )
    except DatabaseError as exc:
        raise DatabaseError(exc.problem, file=str(path), where=exc.where) from None
    except OssaError as exc:
        raise DatabaseError(f"inconsistent database: {exc}", file=str(path)) from None
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as exc:
        raise DatabaseError(f"malformed database header or arrays: {exc!r}", file=str(path)) from None
