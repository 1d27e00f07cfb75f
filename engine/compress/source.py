"""What the compressor measures against: a clip resampled on a uniform grid, and the times it is checked at.

The grid is the clip's own rate: ``N`` samples from the first key to the last, their spacing the
median key interval (a BVH take or a baked glTF clip keeps exactly its keys), or the smallest
multiple of it up to :data:`RATE_MULTIPLES` that puts every key on a sample. When the grid cannot
carry the clip within half the tolerance at its key times (keys off the grid, a step, a cubic
between sparse keys), the rate is doubled, up to :data:`MAX_DOUBLINGS` times.

The *checked times* are every grid sample, every key time of the source and the midpoint between
consecutive key times: the error the compressor guarantees is the largest over them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from engine.anim.clip import Clip
from engine.anim.pose import Pose
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.compress.metric import largest_singular_value, model_transforms, shell_error
from engine.compress.quantize import interpolate
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, trusted

#: Times the grid's rate may be doubled to carry a clip whose keys are not on a uniform grid.
MAX_DOUBLINGS = 3
#: Share of the tolerance the grid alone (before quantization) may use at the checked times.
GRID_SHARE = 0.5
#: A clip loops (its last sample is stored as its first) when the two poses differ by less than
#: this share of the tolerance everywhere.
LOOP_SHARE = 1e-3
#: Checked times are measured in blocks of this many (memory stays ``O(block · J)``).
CHECK_BLOCK = 4096


@dataclass(frozen=True, eq=False)
class Grid:
    """``count`` uniform sample times from ``start`` at ``rate`` samples per second."""

    start: float
    rate: float
    count: int

    @property
    def times(self) -> FloatArray:
        """``(count,)`` sample times."""
        return self.start + np.arange(self.count) / self.rate if self.count > 1 else np.array([self.start])

    def times_on(self, keys: FloatArray) -> FloatArray:
        """:attr:`times`, each replaced by the key time it falls on (within rounding), so a step samples its key."""
        times = self.times
        nearest = (
            np.clip(np.searchsorted(keys, times), 1, keys.size - 1) if keys.size > 1 else np.zeros(times.size, np.intp)
        )
        below, above = keys[np.maximum(nearest - 1, 0)], keys[nearest]
        closest = np.where(np.abs(times - below) <= np.abs(above - times), below, above)
        close = np.abs(closest - times) <= 1e-9 * np.maximum(1.0, np.abs(times))
        return np.where(close, closest, times)

    def doubled(self) -> Grid:
        """The grid with a sample between every two samples."""
        return Grid(self.start, 2.0 * self.rate, 2 * self.count - 1)


@dataclass(frozen=True, eq=False)
class Source:
    """A clip prepared for compression (see the module docstring).

    Attributes
    ----------
    skeleton, clip, radii, tolerance
        What is compressed and how exactly: shell radii ``(J,)`` and the tolerance, metres.
    grid
        The uniform samples.
    pose
        The clip at the grid times ``(N, J)`` (unit rotations).
    linear, origin
        Model-space linear parts ``(N, J, 3, 3)`` and origins ``(N, J, 3)`` of ``pose``.
    scale
        ``(N, J)`` the largest singular value of each joint's model linear part (its shell's
        model-space scale); ``parent_scale`` the same of its parent (1 for roots).
    loops
        Whether the first and last samples are the same pose (the last is stored as the first).
    checked_times
        ``(V,)`` sorted times the error is measured at.
    """

    skeleton: Skeleton
    clip: Clip
    radii: FloatArray
    tolerance: float
    grid: Grid
    pose: Pose
    linear: FloatArray
    origin: FloatArray
    scale: FloatArray
    parent_scale: FloatArray
    loops: bool
    checked_times: FloatArray

    def reference_blocks(self) -> Iterator[tuple[slice, tuple[FloatArray, FloatArray]]]:
        """The source's model transforms at the checked times, block by block: ``(rows, (A, o))``."""
        for begin in range(0, self.checked_times.size, CHECK_BLOCK):
            rows = slice(begin, min(begin + CHECK_BLOCK, self.checked_times.size))
            with trusted():
                pose = sample(self.clip, self.skeleton.rest_pose, self.checked_times[rows])
            yield rows, model_transforms(self.skeleton, pose)


def _key_times(clip: Clip) -> FloatArray:
    if not any(c.path in ("translation", "rotation", "scale") for c in clip.channels):
        return np.zeros(1)
    return np.unique(np.concatenate([c.times for c in clip.channels if c.path != "weights"]))


#: Multiples of the median key rate tried for a grid that holds every key (1/24 s keys with a
#: 0.2 s gap need 5: 120 per second).
RATE_MULTIPLES = 8
#: A key lies on a grid when it is within this fraction of a step of a sample.
ON_GRID = 1e-3


def _nominal_grid(keys: FloatArray) -> Grid:
    """The coarsest grid at a multiple of the median key rate that holds every key, else the median rate's."""
    if keys.size == 1 or keys[-1] <= keys[0]:
        return Grid(float(keys[0]), 1.0, 1)
    duration = float(keys[-1] - keys[0])
    step = float(np.median(np.diff(keys)))
    for multiple in range(1, RATE_MULTIPLES + 1):
        intervals = max(1, round(multiple * duration / step))
        x = (keys - keys[0]) * (intervals / duration)
        if np.all(np.abs(x - np.rint(x)) <= ON_GRID):
            return Grid(float(keys[0]), intervals / duration, intervals + 1)
    intervals = max(1, round(duration / step))
    return Grid(float(keys[0]), intervals / duration, intervals + 1)


def _checked_times(keys: FloatArray, grid: Grid) -> FloatArray:
    middles = 0.5 * (keys[:-1] + keys[1:])
    return np.unique(np.concatenate((grid.times_on(keys), keys, middles)))


def _exact(clip: Clip, grid: Grid, keys: FloatArray) -> bool:
    """Whether the grid holds the clip exactly at its checked times: LINEAR channels, every key on a sample.

    Then the grid's samples are the keys, and at the midpoints between keys a normalised lerp and
    a slerp agree (both halve the arc): no measurement needed.
    """
    if not all(c.interpolation == "LINEAR" for c in clip.channels if c.path != "weights"):
        return False
    if grid.count == 1:
        return keys.size == 1
    x = (keys - grid.start) * grid.rate
    return bool(np.all(np.abs(x - np.rint(x)) <= ON_GRID) and keys.size == grid.count)


def _grid_error(skeleton: Skeleton, clip: Clip, grid: Grid, radii: FloatArray, times: FloatArray) -> float:
    """Largest shell error at ``times`` of the float64 grid samples interpolated as the decoder does."""
    with trusted():
        at_grid = sample(clip, skeleton.rest_pose, grid.times_on(np.unique(times)))
        reference = sample(clip, skeleton.rest_pose, times)
    x = np.clip((times - grid.start) * grid.rate, 0.0, grid.count - 1)
    first = np.minimum(np.floor(x).astype(np.intp), grid.count - 1)
    second = np.minimum(first + 1, grid.count - 1)
    u = (x - first)[:, None]
    parts = []
    for values, rotation in ((at_grid.translations, False), (at_grid.rotations, True), (at_grid.scales, False)):
        padded = np.zeros((*values.shape[:-1], 4))
        padded[..., : values.shape[-1]] = values
        parts.append(interpolate(padded[first], padded[second], u, rotation)[..., : values.shape[-1]])
    with trusted():
        played = Pose(*parts)
    error = shell_error(model_transforms(skeleton, reference), model_transforms(skeleton, played), radii)
    return float(error.max(initial=0.0))


def prepare(skeleton: Skeleton, clip: Clip, radii: FloatArray, tolerance: float) -> Source:
    """Resample ``clip`` on its grid and measure what the compressor needs (see :class:`Source`).

    Raises
    ------
    SkeletonMismatchError
        When the clip animates another number of joints than the skeleton has.
    InvalidInputError
        When no grid of up to ``2^MAX_DOUBLINGS`` times the clip's rate carries it within half
        the tolerance (keys far off any uniform grid).
    """
    if clip.num_targets != skeleton.num_joints:
        raise SkeletonMismatchError(
            f"clip {clip.name!r} animates {clip.num_targets} targets but the skeleton has {skeleton.num_joints} joints"
        )
    keys = _key_times(clip)
    grid = _nominal_grid(keys)
    for doubling in range(MAX_DOUBLINGS + 1):
        times = _checked_times(keys, grid)
        if _exact(clip, grid, keys):
            break
        error = _grid_error(skeleton, clip, grid, radii, times)
        if error <= GRID_SHARE * tolerance:
            break
        if doubling == MAX_DOUBLINGS:
            raise InvalidInputError(
                f"clip {clip.name!r}: even {grid.rate:g} samples per second ({2**MAX_DOUBLINGS} times its key rate) "
                f"miss its keys by {error / tolerance:.3g} times the tolerance (keys far off any uniform grid)"
            )
        grid = grid.doubled()
    with trusted():
        pose = sample(clip, skeleton.rest_pose, grid.times_on(keys))
    linear, origin = model_transforms(skeleton, pose)
    scale = largest_singular_value(linear)
    parents = skeleton.parents
    parent_scale = np.where(parents >= 0, scale[:, np.maximum(parents, 0)], 1.0)
    ends = shell_error((linear[0], origin[0]), (linear[-1], origin[-1]), radii)
    loops = bool(grid.count > 2 and ends.max(initial=0.0) <= LOOP_SHARE * tolerance)
    return Source(skeleton, clip, radii, tolerance, grid, pose, linear, origin, scale, parent_scale, loops, times)
