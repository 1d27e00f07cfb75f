"""Sampling a crowd from a clip library: every character its own clip and time, in one call.

:func:`sample_library` is the compressed counterpart of sampling a :class:`~engine.backend.ClipBank`:
the compiled backend (numba, :mod:`engine.compress._kernels`, imported on the first call) decodes
each character's two keys straight from the library's bits, with no table decoded at load; the
numpy backend (the reference) runs :meth:`CompressedClip.fill
<engine.compress.clip.CompressedClip.fill>` once per distinct clip. Both give the same numbers.
The backend follows ``OSSA_BACKEND`` as :mod:`engine.backend.select` describes.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.layout import PoseBuffer
from engine.anim.pose import Pose
from engine.backend.select import compiled_module, default_threads, resolve
from engine.compress.library import ClipLibrary
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray

Int64Array = npt.NDArray[np.int64]


def kernels() -> ModuleType:
    """The compiled sampler module, :mod:`engine.compress._kernels` (:func:`~engine.backend.select.compiled_module`)."""
    return compiled_module("engine.compress._kernels")


class LibraryCrowd:
    """Per-crowd state for :func:`sample_library`: the library, the skeleton, cursors and scratch.

    Parameters
    ----------
    library
        The clips the crowd plays; every clip it plays must be on ``skeleton`` (an index into
        ``library.skeletons``).
    characters
        ``C``.
    skeleton
        Index of the skeleton of the crowd (default 0).
    threads
        The most threads a call may use (default :func:`~engine.backend.select.default_threads`).

    Attributes
    ----------
    cursors
        ``(C,)`` int64 first key of each character's last sample.
    """

    def __init__(self, library: ClipLibrary, characters: int, *, skeleton: int = 0, threads: int | None = None) -> None:
        if not isinstance(library, ClipLibrary):
            raise InvalidInputError(f"library must be a ClipLibrary, got {type(library).__name__}")
        if int(characters) < 1:
            raise InvalidInputError(f"characters must be at least 1, got {characters}")
        if not 0 <= int(skeleton) < len(library.skeletons):
            raise InvalidInputError(f"skeleton must be an index below {len(library.skeletons)}, got {skeleton}")
        self.library = library
        self.skeleton = int(skeleton)
        self.threads = default_threads() if threads is None else int(threads)
        if self.threads < 1:
            raise InvalidInputError(f"threads must be a positive integer, got {threads!r}")
        self.cursors = np.zeros(int(characters), dtype=np.int64)
        self.everyone = np.arange(int(characters), dtype=np.int64)
        self._plays = np.array([s == self.skeleton for s in library.skeleton_index], dtype=bool)
        self._scratch: FloatArray | None = None

    @property
    def num_characters(self) -> int:
        """``C``."""
        return int(self.cursors.size)

    @property
    def num_joints(self) -> int:
        """``J`` of the crowd's skeleton."""
        return self.library.skeletons[self.skeleton].num_joints

    def new_pose(self) -> Pose:
        """A pose ``(C, J)`` of C-contiguous float64 arrays to sample into."""
        shape = (self.num_characters, self.num_joints)
        return Pose(np.zeros((*shape, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (*shape, 1)), np.ones((*shape, 3)))

    def scratch(self) -> FloatArray:
        """One ``(10, J)`` block per thread for the compiled sampler (allocated on first use)."""
        if self._scratch is None:
            self._scratch = np.zeros((self.threads, 10, self.num_joints))
        return self._scratch


def _check(
    crowd: LibraryCrowd, clips: Any, times: Any, out: Pose, characters: Any
) -> tuple[Int64Array, FloatArray, Int64Array]:
    count = crowd.num_characters
    clip_ids = np.ascontiguousarray(clips, dtype=np.int64)
    seconds = np.ascontiguousarray(times, dtype=np.float64)
    if clip_ids.shape != (count,) or seconds.shape != (count,):
        raise InvalidInputError(f"clips and times must have shape ({count},), got {clip_ids.shape} and {seconds.shape}")
    chosen = crowd.everyone if characters is None else np.ascontiguousarray(characters, dtype=np.int64)
    if chosen.ndim != 1 or (chosen.size and (chosen.min() < 0 or chosen.max() >= count)):
        raise InvalidInputError(f"characters must be a 1-D index array into [0, {count})")
    picked = clip_ids[chosen]
    if picked.size and (picked.min() < 0 or picked.max() >= len(crowd.library)):
        bad = int(chosen[(picked < 0) | (picked >= len(crowd.library))][0])
        raise InvalidInputError(f"clips[{bad}] = {clip_ids[bad]} is not a clip index below {len(crowd.library)}")
    if picked.size and not crowd._plays[picked].all():
        bad = int(chosen[~crowd._plays[picked]][0])
        raise SkeletonMismatchError(
            f"clips[{bad}] ({crowd.library.names[clip_ids[bad]]!r}) plays on another skeleton than the crowd's"
        )
    finite = np.isfinite(seconds[chosen])
    if not finite.all():
        bad = int(chosen[~finite][0])
        raise InvalidInputError(f"times[{bad}] must be finite seconds, got {seconds[bad]}")
    shape = (count, crowd.num_joints)
    for name, array, width in zip(("translations", "rotations", "scales"), out.arrays(), (3, 4, 3), strict=True):
        if (
            array.shape != (*shape, width)
            or array.dtype != np.float64
            or not array.flags.c_contiguous
            or not array.flags.writeable
        ):
            raise InvalidInputError(
                f"out.{name} must be a writable C-contiguous float64 array shaped {(*shape, width)}, got {array.shape}"
            )
    return clip_ids, seconds, chosen


def sample_library(
    crowd: LibraryCrowd,
    clips: Any,
    times: Any,
    *,
    out: Pose,
    characters: Any = None,
    threads: int | None = None,
    backend: str | None = None,
) -> Pose:
    """The local pose of every (or the given) character: clip ``clips[c]`` at ``times[c]`` seconds.

    Parameters
    ----------
    crowd
        The :class:`LibraryCrowd` (library, skeleton, cursors; cursors are updated).
    clips, times
        ``(C,)`` library clip index and time of each character (used as given; clamped to the clip).
    out
        A pose of C-contiguous float64 arrays ``(C, J, 3)``, ``(C, J, 4)``, ``(C, J, 3)``
        (:meth:`LibraryCrowd.new_pose`); the characters not chosen are left as they are.
    characters
        Optional index array of the characters to sample.
    threads, backend
        Threads of the compiled call (default the crowd's), ``"numba"``, ``"numpy"`` or ``None``.

    Returns
    -------
    Pose
        ``out``.
    """
    clip_ids, seconds, chosen = _check(crowd, clips, times, out, characters)
    if resolve(backend) == "numpy":
        rest = crowd.library.skeletons[crowd.skeleton].rest_pose.arrays()
        for clip in np.unique(clip_ids[chosen]):  # one batched decode per distinct clip
            rows = chosen[clip_ids[chosen] == clip]
            buffer = PoseBuffer.empty((rows.size,), crowd.num_joints)
            crowd.library.clips[int(clip)].fill(rest, seconds[rows], buffer)
            pose = buffer.to_pose()
            out.translations[rows], out.rotations[rows], out.scales[rows] = pose.arrays()
            crowd.cursors[rows] = crowd.library.clips[int(clip)].keys(seconds[rows])[0]
        return out
    workers = max(1, min(crowd.threads if threads is None else int(threads), chosen.size // 32))
    kernels().sample_many(
        crowd.library.arrays, chosen, clip_ids, seconds, crowd.cursors, crowd.scratch(), out.arrays(), workers
    )
    return out
