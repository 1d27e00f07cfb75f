"""The per-clip task of ``ossa build``: a pure function from a :class:`ClipTask` to a :class:`ClipResult`.

:func:`build_clip` needs nothing but its argument: the task carries the bytes of the source file
(and of the buffers a ``.gltf`` references), of the target character when retargeting, and the
settings. It loads the clip (units detected), retargets it, describes its root motion, compresses
it, and returns the clip as a one-clip library file (bytes) with the numbers of its manifest row.
The same task always gives the same result, on any machine that runs the same Ossa: it can be
mapped by a process pool, a Dask cluster, Ray or Spark alike (``docs/compression.md``). A clip
that fails gives a result with ``error`` set instead of raising.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

import engine
from engine.anim.clip import Clip
from engine.anim.retarget import plan_retarget, propose_joint_map, retarget_clip
from engine.anim.rootmotion import planar_from_root
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.compress.compressor import compress_clip
from engine.compress.fileformat import VERSION, library_bytes
from engine.compress.library import ClipLibrary
from engine.errors import OssaError, OssaWarning
from engine.io.character import Character, load_character
from engine.io.clip_sources import character_up, gltf_unit, read_clip_sources
from engine.pipeline.root_track import in_place, root_track_info

#: Bumped whenever the compressor's choices change, so that cached clips are built again.
PIPELINE_VERSION = 2


@dataclass(frozen=True)
class Settings:
    """How every clip of a build is compressed (metres)."""

    tolerance: float
    shell: float
    effectors: tuple[tuple[str, float], ...] = ()
    mesh_shells: bool = False
    scale: float | None = None


@dataclass(frozen=True)
class Files:
    """A file and the files it references, as ``(relative path, bytes)`` pairs; the first is the file itself."""

    items: tuple[tuple[str, bytes], ...]

    @property
    def name(self) -> str:
        """Path of the file itself (relative, POSIX)."""
        return self.items[0][0]

    def sha256(self) -> str:
        """SHA-256 of the file itself."""
        return hashlib.sha256(self.items[0][1]).hexdigest()

    def digest(self) -> str:
        """SHA-256 over every item, names included."""
        h = hashlib.sha256()
        for name, data in self.items:
            h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
        return h.hexdigest()

    def written(self, folder: Path) -> Path:
        """Write the items under ``folder`` (keeping their relative layout); returns the file's path."""
        for name, data in self.items:
            path = folder.joinpath(*PurePosixPath(name).parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return folder.joinpath(*PurePosixPath(self.name).parts)


@dataclass(frozen=True)
class ClipTask:
    """One clip to build: clip ``index`` of ``source``, named ``name`` in the library."""

    source: Files
    index: int
    name: str
    settings: Settings
    target: Files | None = None

    @property
    def key(self) -> str:
        """Content hash of everything the result depends on (what the build's cache is keyed by)."""
        h = hashlib.sha256()
        parts = [
            engine.__version__,
            str(VERSION),
            str(PIPELINE_VERSION),
            self.source.digest(),
            str(self.index),
            self.name,
            json.dumps(asdict(self.settings), sort_keys=True),
            self.target.digest() if self.target else "",
        ]
        h.update("\n".join(parts).encode())
        return h.hexdigest()


@dataclass(frozen=True)
class ClipResult:
    """What a task gives: a manifest row and, unless it failed, the clip as a one-clip library file."""

    key: str
    row: dict[str, Any]
    library: bytes | None = field(default=None, repr=False)

    @property
    def failed(self) -> bool:
        """Whether the clip failed (``row["error"]`` says why)."""
        return self.library is None


def _root_motion(skeleton: Skeleton, clip: Clip, metres_per_unit: float) -> dict[str, Any]:
    """The root joint's planar travel from the clip's first key to its last: what a runtime extracts as root motion."""
    root = int(skeleton.levels[0][0])
    times = np.array([min((c.start for c in clip.channels), default=0.0), clip.duration])
    pose = sample(clip, skeleton.rest_pose, times)
    planar = planar_from_root(pose.translations[:, root], pose.rotations[:, root])
    travel = float(abs(planar.w[1] - planar.w[0])) * metres_per_unit
    yaw = float(np.degrees(np.angle(np.exp(1j * (planar.yaw[1] - planar.yaw[0])))))
    seconds = float(times[1] - times[0])
    return {
        "joint": skeleton.names[root],
        "travel_m": round(travel, 6),
        "yaw_deg": round(yaw, 3),
        "speed_m_s": round(travel / seconds, 6) if seconds > 0 else 0.0,
    }


def _target_character(path: Path) -> Character:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        return load_character(path, textures=False)


def _relative(message: str, folder: str) -> str:
    """``message`` with the task's temporary folder taken out of the paths it names (they read as the files' names)."""
    for part in ("source", "target"):
        message = message.replace(str(Path(folder) / part) + os.sep, "")
    return message


def build_clip(task: ClipTask) -> ClipResult:
    """Build ``task`` (see the module docstring); never raises for a clip that cannot be built."""
    row: dict[str, Any] = {
        "name": task.name,
        "source": task.source.name,
        "clip_index": task.index,
        "sha256": task.source.sha256(),
        "target": task.target.name if task.target else None,
    }
    folder = tempfile.mkdtemp(prefix="ossa-build-")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", OssaWarning)
            sources, notes = read_clip_sources(task.source.written(Path(folder) / "source"), scale=task.settings.scale)
            if not 0 <= task.index < len(sources):
                raise OssaError(f"the file has {len(sources)} clips, not a clip {task.index}")
            source = sources[task.index]
            skeleton, clip, meshes, unit = source.skeleton, source.clip, source.meshes, source.metres_per_unit
            if task.target is not None:
                character = _target_character(task.target.written(Path(folder) / "target"))
                up = character_up(character)
                joint_map = propose_joint_map(skeleton, character.skeleton, source_up=source.up, target_up=up)
                plan = plan_retarget(skeleton, character.skeleton, joint_map, source_up=source.up, target_up=up)
                clip = retarget_clip(plan, clip, name=clip.name)
                skeleton, meshes = character.skeleton, character.meshes
                unit, _ = gltf_unit(character)
            effectors = {k: v for k, v in task.settings.effectors if k in skeleton.names}
            root = int(skeleton.levels[0][0])
            compressed = compress_clip(
                skeleton,
                in_place(skeleton, clip, root),  # the root's travel goes beside it, keyed exactly
                tolerance=task.settings.tolerance,
                shell=task.settings.shell,
                meshes=meshes if task.settings.mesh_shells else (),
                effectors=effectors,
                metres_per_unit=unit,
            )
            motion = _root_motion(skeleton, clip, unit)
            notes = notes + [str(w.message) for w in caught if issubclass(w.category, OssaWarning)]
    except Exception as exc:
        kind = "" if isinstance(exc, OssaError) else f"{type(exc).__name__}: "
        message = f"{kind}{exc}".splitlines()[0] if str(exc) else kind.rstrip(": ")
        row |= {"error": _relative(message, folder), "warnings": []}
        return ClipResult(task.key, row)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    notes = [_relative(note, folder) for note in notes]
    info = compressed.info
    info["source"] = {"file": task.source.name, "clip": source.clip.name, "unit": source.unit, "sha256": row["sha256"]}
    info["root_motion"] = motion
    info["root_track"] = root_track_info(clip, root)
    row |= {
        "error": None,
        "warnings": sorted(set(notes)),
        "clip": source.clip.name,
        "unit": source.unit,
        "duration_s": round(compressed.span, 9),
        "joints": skeleton.num_joints,
        "samples": compressed.num_samples,
        "rate_hz": round(compressed.rate, 6),
        "loops": compressed.loops,
        "compressed_bytes": info["compressed_bytes"],
        "raw_float32_bytes": info["raw_float32_bytes"],
        "ratio": round(info["ratio"], 4),
        "max_error_cm": round(info["max_error_m"] * 100, 6),
        "p99_error_cm": round(info["p99_error_m"] * 100, 6),
        "tolerance_cm": round(task.settings.tolerance * 100, 6),
        "root_motion": motion,
    }
    library = ClipLibrary([(skeleton, replace(compressed, name=task.name))])
    return ClipResult(task.key, row, library_bytes(library))
