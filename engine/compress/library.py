"""A clip library: compressed clips and the skeletons they play on, packed in flat arrays.

:class:`ClipLibrary` is what a library file holds (:mod:`engine.compress.fileformat`) and what the
compiled sampler reads (:mod:`engine.compress._kernels`, through :func:`kernel_arrays`). Every per-clip array of
:class:`~engine.compress.clip.CompressedClip` is concatenated over the clips into one flat array
(its rows in clip order), and ``clip_table`` ``(K, len(TABLE_FIELDS))`` int64 tells where each
clip's rows begin; ``clip_times`` ``(K, 2)`` float64 holds each clip's start time and rate. The
skeletons' rest poses are concatenated too: ``rest`` ``(R, 10)`` float64 (translation, rotation
x y z w, scale per joint), ``parents`` ``(R,)`` int64 and ``inverse_binds`` ``(R, 4, 4)``, with
skeleton ``s`` owning ``skeleton_rows[s]:skeleton_rows[s + 1]``. A clip loaded from a file is a
set of views into these arrays: nothing is copied or decoded.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.compress.clip import CLIP_ARRAYS, CompressedClip, constant_values
from engine.compress.quantize import CONSTANT, DEFAULT, PATH_OFFSET, PATH_WIDTH
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray

#: Columns of :attr:`ClipLibrary.clip_table`: each clip's sizes, then the first row it owns in
#: every flat array, then its skeleton and that skeleton's first rest row.
TABLE_FIELDS = (
    "joints",
    "samples",
    "loops",
    "constants_count",
    "animated",
    "segments_count",
    "words_count",
    *(f"{name}_row" for name in CLIP_ARRAYS),
    "skeleton",
    "rest_row",
)
COLUMN = {name: k for k, name in enumerate(TABLE_FIELDS)}
Int64Array = npt.NDArray[np.int64]


def _rows(clip: CompressedClip) -> dict[str, int]:
    return {name: int(getattr(clip, name).reshape(-1, *CLIP_ARRAYS[name][1]).shape[0]) for name in CLIP_ARRAYS}


def skeleton_difference(a: Skeleton, b: Skeleton) -> str | None:
    """What first differs between two skeletons (joints, hierarchy, rest pose, inverse binds), or ``None``."""
    if a.names != b.names:
        first = next((k for k, (x, y) in enumerate(zip(a.names, b.names, strict=False)) if x != y), None)
        if first is None:
            return f"{a.num_joints} joints against {b.num_joints}"
        return f"joint {first} is {a.names[first]!r} against {b.names[first]!r}"
    for name, x, y in (
        ("parents", a.parents, b.parents),
        ("rest translations", a.rest_translations, b.rest_translations),
        ("rest rotations", a.rest_rotations, b.rest_rotations),
        ("rest scales", a.rest_scales, b.rest_scales),
        ("inverse bind matrices", a.inverse_bind_matrices, b.inverse_bind_matrices),
    ):
        if not np.array_equal(x, y):
            joint = int(np.nonzero(np.any((x != y).reshape(x.shape[0], -1), axis=1))[0][0])
            return f"the {name} differ at joint {joint} ({a.names[joint]!r})"
    return None


def same_skeleton(a: Skeleton, b: Skeleton) -> bool:
    """Whether two skeletons have the same joints, hierarchy, rest pose and inverse binds (exactly)."""
    return skeleton_difference(a, b) is None


@dataclass(frozen=True, eq=False)
class ClipLibrary:
    """Compressed clips and their skeletons, packed (see the module docstring).

    Build one from ``(skeleton, clip)`` pairs; equal skeletons are stored once. Clip names must be
    unique. ``library["walk"]`` is a clip, ``library.skeleton_of("walk")`` its skeleton.

    Attributes
    ----------
    skeletons
        The distinct skeletons, in order of first use.
    clips
        The clips, in the order given.
    skeleton_index
        ``(K,)`` the skeleton of each clip.
    """

    skeletons: tuple[Skeleton, ...]
    clips: tuple[CompressedClip, ...]
    skeleton_index: tuple[int, ...]

    def __init__(self, entries: Sequence[tuple[Skeleton, CompressedClip]]) -> None:
        skeletons: list[Skeleton] = []
        clips: list[CompressedClip] = []
        index: list[int] = []
        names: set[str] = set()
        for k, (skeleton, clip) in enumerate(entries):
            if not isinstance(skeleton, Skeleton) or not isinstance(clip, CompressedClip):
                raise InvalidInputError(
                    f"entries[{k}] must be a (Skeleton, CompressedClip) pair, got "
                    f"({type(skeleton).__name__}, {type(clip).__name__})"
                )
            if clip.num_targets != skeleton.num_joints:
                raise SkeletonMismatchError(
                    f"clip {clip.name!r} animates {clip.num_targets} joints but its skeleton has {skeleton.num_joints}"
                )
            if clip.skeleton is not None and (difference := skeleton_difference(clip.skeleton, skeleton)):
                raise SkeletonMismatchError(f"clip {clip.name!r} was compressed for another skeleton: {difference}")
            if clip.name in names:
                raise InvalidInputError(f"two clips are named {clip.name!r}; library clip names must be unique")
            names.add(clip.name)
            found = next((s for s, known in enumerate(skeletons) if same_skeleton(known, skeleton)), None)
            if found is None:
                skeletons.append(skeleton)
                found = len(skeletons) - 1
            clips.append(clip)
            index.append(found)
        object.__setattr__(self, "skeletons", tuple(skeletons))
        object.__setattr__(self, "clips", tuple(clips))
        object.__setattr__(self, "skeleton_index", tuple(index))

    @classmethod
    def from_packed(
        cls,
        skeletons: Sequence[Skeleton],
        clips: Sequence[CompressedClip],
        skeleton_index: Sequence[int],
        packed: dict[str, np.ndarray],
    ) -> ClipLibrary:
        """A library over already-packed arrays (a loaded file); ``clips`` are views into them."""
        library = object.__new__(cls)
        object.__setattr__(library, "skeletons", tuple(skeletons))
        object.__setattr__(library, "clips", tuple(clips))
        object.__setattr__(library, "skeleton_index", tuple(int(s) for s in skeleton_index))
        library.__dict__["packed"] = packed
        return library

    def __len__(self) -> int:
        return len(self.clips)

    def __iter__(self) -> Iterator[CompressedClip]:
        return iter(self.clips)

    @property
    def names(self) -> tuple[str, ...]:
        """Clip names, by index."""
        return tuple(clip.name for clip in self.clips)

    def index(self, name: str) -> int:
        """Index of the clip called ``name``; unknown names raise :class:`InvalidInputError` listing the names."""
        try:
            return self.names.index(name)
        except ValueError:
            raise InvalidInputError(f"no clip named {name!r} in this library; it has {list(self.names)}") from None

    def __getitem__(self, name: str) -> CompressedClip:
        return self.clips[self.index(name)]

    def skeleton_of(self, clip: str | int) -> Skeleton:
        """The skeleton clip ``clip`` (name or index) plays on."""
        k = self.index(clip) if isinstance(clip, str) else int(clip)
        return self.skeletons[self.skeleton_index[k]]

    @property
    def nbytes(self) -> int:
        """Bytes of every packed array."""
        return int(sum(array.nbytes for array in self.packed.values()))

    @cached_property
    def packed(self) -> dict[str, np.ndarray]:
        """The flat arrays of the module docstring, by name (read-only)."""
        table = np.zeros((len(self.clips), len(TABLE_FIELDS)), dtype=np.int64)
        skeleton_rows = np.cumsum([0] + [s.num_joints for s in self.skeletons], dtype=np.int64)
        offsets = dict.fromkeys(CLIP_ARRAYS, 0)
        for k, clip in enumerate(self.clips):
            rows = _rows(clip)
            table[k, : COLUMN["words_count"] + 1] = (
                clip.num_targets,
                clip.num_samples,
                int(clip.loops),
                rows["constants"],
                int(clip.animated[0].size),
                rows["segments"],
                rows["words"],
            )
            for name in CLIP_ARRAYS:
                table[k, COLUMN[f"{name}_row"]] = offsets[name]
                offsets[name] += rows[name]
            table[k, COLUMN["skeleton"]] = self.skeleton_index[k]
            table[k, COLUMN["rest_row"]] = skeleton_rows[self.skeleton_index[k]]
        packed = {
            "clip_table": table,
            "clip_times": np.array([(c.start, c.rate) for c in self.clips], dtype=np.float64).reshape(-1, 2),
        }
        for name, (_, tail) in CLIP_ARRAYS.items():
            packed[name] = _joined([getattr(clip, name).reshape(-1, *tail) for clip in self.clips], name)
        packed |= skeleton_arrays(self.skeletons)
        for array in packed.values():
            array.flags.writeable = False
        return packed

    def renamed(self, names: Sequence[str]) -> ClipLibrary:
        """The same library with the clips called ``names`` (one per clip, unique)."""
        if len(names) != len(self.clips):
            raise InvalidInputError(f"names must give one name per clip ({len(self.clips)}), got {len(names)}")
        return ClipLibrary(
            [
                (self.skeletons[s], replace(c, name=str(n)))
                for c, s, n in zip(self.clips, self.skeleton_index, names, strict=True)
            ]
        )

    def __repr__(self) -> str:
        return f"ClipLibrary({len(self.clips)} clips on {len(self.skeletons)} skeletons, {self.nbytes} bytes)"


def skeleton_arrays(skeletons: Sequence[Skeleton]) -> dict[str, np.ndarray]:
    """``rest`` ``(R, 10)``, ``parents`` ``(R,)``, ``inverse_binds`` ``(R, 4, 4)``, ``skeleton_rows`` ``(S + 1,)``."""
    rest: list[FloatArray] = [
        np.concatenate((s.rest_translations, s.rest_rotations, s.rest_scales), axis=1) for s in skeletons
    ]
    return {
        "rest": np.concatenate(rest) if rest else np.zeros((0, 10)),
        "parents": np.concatenate([s.parents for s in skeletons]).astype(np.int64)
        if skeletons
        else np.zeros(0, np.int64),
        "inverse_binds": np.concatenate([s.inverse_bind_matrices for s in skeletons])
        if skeletons
        else np.zeros((0, 4, 4)),
        "skeleton_rows": np.cumsum([0] + [s.num_joints for s in skeletons], dtype=np.int64),
    }


def row_counts(row: Any) -> dict[str, int]:
    """How many rows of each flat array the clip of ``clip_table`` row ``row`` owns."""
    joints, segments, animated = (int(row[COLUMN[n]]) for n in ("joints", "segments_count", "animated"))
    return {
        "kinds": joints,
        "refs": joints,
        "constants": int(row[COLUMN["constants_count"]]),
        "clip_ranges": animated,
        "formats": segments * animated,
        "ranges": segments * animated,
        "segments": segments,
        "words": int(row[COLUMN["words_count"]]),
    }


def clip_views(packed: dict[str, Any], k: int, name: str, info: dict[str, Any], skeleton: Skeleton) -> CompressedClip:
    """Clip ``k`` of ``packed`` (on ``skeleton``) as a :class:`CompressedClip` of views (no copy)."""
    row = packed["clip_table"][k]
    start, rate = (float(v) for v in packed["clip_times"][k])
    segments, animated = int(row[COLUMN["segments_count"]]), int(row[COLUMN["animated"]])
    counts = row_counts(row)
    views = {}
    for array, count in counts.items():
        first = int(row[COLUMN[f"{array}_row"]])
        views[array] = packed[array][first : first + count]
    views["formats"] = views["formats"].reshape(segments, animated)
    views["ranges"] = views["ranges"].reshape(segments, animated, 6)
    samples, loops = int(row[COLUMN["samples"]]), bool(row[COLUMN["loops"]])
    return CompressedClip(name, counts["kinds"], start, rate, samples, loops, info=info, skeleton=skeleton, **views)


#: Columns of the compiled sampler's clip table (:func:`kernel_arrays`): sizes, then first rows.
KERNEL_FIELDS = ("samples", "loops", "animated", "tracks_row", "decoding_row", "segments_row", "words_row")
#: Bits per component in a packed :func:`kernel_arrays` decoding row (``b0 + 64·b1 + 4096·b2``).
BITS_SHIFT = 6


def kernel_arrays(clips: Sequence[CompressedClip], rest: Pose) -> tuple[np.ndarray, ...]:
    """What the compiled sampler (:mod:`engine.compress._kernels`) reads for ``clips`` on rest pose ``rest`` ``(J,)``.

    Read-only, C-ordered, and of the same types whatever the clips (none included):

    - ``table`` ``(K, len(KERNEL_FIELDS))`` int64 and ``times`` ``(K, 2)`` (start, rate);
    - ``decoding`` ``(Σ S·A, 8)`` float64, per segment and animated track (segment-major): the
      offsets and steps of :func:`~engine.compress.quantize.dequantization` (three each), the
      three component bits packed (``b0 + 64·b1 + 4096·b2``) and the dropped component
      (:meth:`CompressedClip.decoding`: the segment ranges decoded once, 64 bytes a segment and track;
      the samples stay packed);
    - ``segments``, ``words``: the clips' bits as a library file holds them;
    - ``statics`` ``(K, 10, J)``: each clip's pose where nothing moves (component-major: the rest
      values of default tracks, constants with rotations normalised, as
      :meth:`CompressedClip.fill` writes them); ``tracks`` ``(ΣA, 2)`` int64: each animated track's
      joint and first pose row (translation 0, rotation 3, scale 7), clip by clip.
    """
    joints = rest.translations.shape[0]
    table = np.zeros((len(clips), len(KERNEL_FIELDS)), dtype=np.int64)
    statics = np.zeros((len(clips), 10, joints))
    decoding, tracks = [], []
    rows = [0, 0, 0, 0]
    for k, clip in enumerate(clips):
        joint, path = clip.animated
        segments = clip.segments.shape[0]
        table[k] = (clip.num_samples, clip.loops, joint.size, *rows)
        rows = [rows[0] + joint.size, rows[1] + segments * joint.size, rows[2] + segments, rows[3] + clip.words.size]
        offset, step, bits, dropped = clip.decoding(np.arange(segments))
        packed = bits[..., 0] + (bits[..., 1] << BITS_SHIFT) + (bits[..., 2] << (2 * BITS_SHIFT))
        decoding.append(np.concatenate((offset, step, packed[..., None], dropped[..., None]), axis=-1).reshape(-1, 8))
        tracks.append(np.stack((joint, np.asarray(PATH_OFFSET)[path]), axis=1))
        for p, values in enumerate(rest.arrays()):
            block = statics[k, PATH_OFFSET[p] : PATH_OFFSET[p] + PATH_WIDTH[p]]
            default = clip.kinds[:, p] == DEFAULT
            block[:, default] = values[default].T
            constant = clip.kinds[:, p] == CONSTANT
            stored = constant_values(clip.constants[clip.refs[constant, p]], p == 1)
            block[:, constant] = stored[:, : PATH_WIDTH[p]].T
    arrays = (
        table,
        np.array([(c.start, c.rate) for c in clips], dtype=np.float64).reshape(-1, 2),
        np.concatenate(decoding) if decoding else np.zeros((0, 8)),
        _joined([c.segments for c in clips], "segments"),
        _joined([c.words for c in clips], "words"),
        statics,
        np.concatenate(tracks).astype(np.int64) if tracks else np.zeros((0, 2), dtype=np.int64),
    )
    for array in arrays:
        array.flags.writeable = False
    return arrays


def _joined(parts: list[np.ndarray], name: str) -> np.ndarray:
    dtype, tail = CLIP_ARRAYS[name]
    return np.concatenate(parts).astype(dtype) if parts else np.zeros((0, *tail), dtype=dtype)
