"""Sampling compressed clips: engine.anim.sample, the crowd sampler on both backends (bit for bit), libraries."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from engine.anim import Pose, Skeleton, sample
from engine.anim.layout import PoseBuffer
from engine.compress import ClipLibrary, LibraryCrowd, compress_clip, sample_library
from engine.compress import runtime as runtime_module
from engine.errors import InvalidInputError, SkeletonMismatchError
from tests.compress.conftest import Walk, walk_clip


@pytest.fixture(scope="module")
def library(walking: Walk, looping: Walk) -> ClipLibrary:
    skeleton, run = walk_clip(120.0, 0.5, period=0.6, name="run")
    return ClipLibrary(
        [
            (walking.skeleton, walking.compressed),
            (looping.skeleton, looping.compressed),
            (skeleton, compress_clip(skeleton, run)),
        ]
    )


def times_for(library: ClipLibrary, clips: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random times, clip ends, sample times and their neighbours one ulp away."""
    durations = np.array([c.duration for c in library.clips])[clips]
    times = rng.uniform(-0.1, 1.1, clips.size) * durations
    rates = np.array([c.rate for c in library.clips])[clips]
    k = rng.integers(0, 20, clips.size)
    on_sample = k / rates
    times[::4] = on_sample[::4]
    times[1::4] = np.nextafter(on_sample[1::4], -np.inf)
    times[2::8] = durations[2::8]
    times[3::8] = np.nextafter(durations[3::8], np.inf)
    return times


@pytest.mark.parametrize("threads", [1, 2])
def test_the_compiled_sampler_equals_the_numpy_reference_bit_for_bit(
    library: ClipLibrary, rng: np.random.Generator, threads: int
) -> None:
    crowd = LibraryCrowd(library, 200, threads=2)
    clips = rng.integers(0, len(library), 200)
    times = times_for(library, clips, rng)
    numpy_pose = sample_library(crowd, clips, times, out=crowd.new_pose(), backend="numpy")
    numpy_cursors = crowd.cursors.copy()
    compiled = sample_library(crowd, clips, times, out=crowd.new_pose(), backend="numba", threads=threads)
    for a, b in zip(numpy_pose.arrays(), compiled.arrays(), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(crowd.cursors, numpy_cursors)


def test_the_crowd_sampler_equals_sample_per_clip(library: ClipLibrary, rng: np.random.Generator) -> None:
    crowd = LibraryCrowd(library, 60)
    clips = rng.integers(0, len(library), 60)
    times = times_for(library, clips, rng)
    pose = sample_library(crowd, clips, times, out=crowd.new_pose())
    rest = library.skeletons[0].rest_pose
    for c in range(60):
        alone = sample(library.clips[clips[c]], rest, times[c])
        for a, b in zip(alone.arrays(), pose[c].arrays(), strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_subset_of_characters_leaves_the_others(library: ClipLibrary) -> None:
    crowd = LibraryCrowd(library, 10)
    out = crowd.new_pose()
    before = out.copy()
    sample_library(crowd, np.zeros(10, np.int64), np.full(10, 0.3), out=out, characters=[2, 5])
    changed = np.nonzero(np.any(out.rotations != before.rotations, axis=(1, 2)))[0]
    assert changed.tolist() == [2, 5]


def test_sample_accepts_a_compressed_clip_with_any_batch_and_out(walking: Walk) -> None:
    rest = walking.skeleton.rest_pose
    times = np.array([[0.1, 0.2], [0.3, 0.4]])
    pose = sample(walking.compressed, rest, times)
    assert pose.rotations.shape == (2, 2, 38, 4)
    buffer = sample(walking.compressed, rest, times.reshape(-1), out=PoseBuffer.empty((4,), 38))
    np.testing.assert_array_equal(buffer.to_pose().rotations, pose.rotations.reshape(4, 38, 4))
    out = Pose(np.zeros((4, 38, 3)), np.zeros((4, 38, 4)), np.zeros((4, 38, 3)))
    assert sample(walking.compressed, rest, times.reshape(-1), out=out) is out
    np.testing.assert_array_equal(out.translations, pose.translations.reshape(4, 38, 3))


def test_sample_checks_a_compressed_clip_like_any_clip(walking: Walk) -> None:
    with pytest.raises(SkeletonMismatchError, match="clip 'walk' animates 38 targets but the rest pose has 1 joints"):
        sample(walking.compressed, Skeleton(["a"], [-1]).rest_pose, 0.0)
    with pytest.raises(InvalidInputError, match="times must be finite seconds, got nan"):
        sample(walking.compressed, walking.skeleton.rest_pose, [0.0, np.nan])


def test_library_names_skeletons_and_errors(library: ClipLibrary, walking: Walk) -> None:
    assert library.names == ("walk", "loop", "run")
    assert len(library.skeletons) == 1
    assert library.skeleton_of("run") is library.skeletons[0]
    assert library["loop"].loops
    with pytest.raises(
        InvalidInputError, match=r"no clip named 'jog' in this library; it has \['walk', 'loop', 'run'\]"
    ):
        library.index("jog")
    with pytest.raises(InvalidInputError, match="two clips are named 'walk'"):
        ClipLibrary([(walking.skeleton, walking.compressed), (walking.skeleton, walking.compressed)])
    with pytest.raises(SkeletonMismatchError, match="clip 'walk' animates 38 joints but its skeleton has 1"):
        ClipLibrary([(Skeleton(["a"], [-1]), walking.compressed)])
    with pytest.raises(InvalidInputError, match=r"entries\[0\] must be a \(Skeleton, CompressedClip\) pair"):
        ClipLibrary([(walking.skeleton, walking.clip)])  # type: ignore[list-item]
    other = Skeleton(
        walking.skeleton.names, walking.skeleton.parents, np.asarray(walking.skeleton.rest_translations) * 2
    )
    two = ClipLibrary([(walking.skeleton, walking.compressed), (other, replace(walking.compressed, name="big"))])
    assert len(two.skeletons) == 2
    assert two.skeleton_index == (0, 1)


def test_crowd_sampler_bad_input(library: ClipLibrary, walking: Walk) -> None:
    crowd = LibraryCrowd(library, 3)
    out = crowd.new_pose()
    with pytest.raises(InvalidInputError, match=r"clips and times must have shape \(3,\), got \(2,\) and \(3,\)"):
        sample_library(crowd, [0, 0], [0.0, 0.0, 0.0], out=out)
    with pytest.raises(InvalidInputError, match=r"clips\[1\] = 7 is not a clip index below 3"):
        sample_library(crowd, [0, 7, 0], [0.0, 0.0, 0.0], out=out)
    with pytest.raises(InvalidInputError, match=r"times\[2\] must be finite seconds, got inf"):
        sample_library(crowd, [0, 0, 0], [0.0, 0.0, np.inf], out=out)
    with pytest.raises(
        InvalidInputError, match=r"out.rotations must be a writable C-contiguous float64 array shaped \(3, 38, 4\)"
    ):
        sample_library(
            crowd, [0, 0, 0], [0.0, 0.0, 0.0], out=Pose(out.translations, np.asfortranarray(out.rotations), out.scales)
        )
    with pytest.raises(InvalidInputError, match=r"characters must be a 1-D index array into \[0, 3\)"):
        sample_library(crowd, [0, 0, 0], [0.0, 0.0, 0.0], out=out, characters=[4])
    other = Skeleton(
        walking.skeleton.names, walking.skeleton.parents, np.asarray(walking.skeleton.rest_translations) * 2
    )
    mixed = ClipLibrary([(walking.skeleton, walking.compressed), (other, replace(walking.compressed, name="big"))])
    with pytest.raises(SkeletonMismatchError, match=r"clips\[0\] \('big'\) plays on another skeleton than the crowd's"):
        sample_library(LibraryCrowd(mixed, 1), [1], [0.0], out=LibraryCrowd(mixed, 1).new_pose())
    with pytest.raises(InvalidInputError, match="library must be a ClipLibrary, got str"):
        LibraryCrowd("lib", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="characters must be at least 1, got 0"):
        LibraryCrowd(library, 0)
    with pytest.raises(InvalidInputError, match="skeleton must be an index below 1, got 1"):
        LibraryCrowd(library, 1, skeleton=1)


def test_the_numba_backend_names_numba_when_it_cannot_be_imported(
    monkeypatch: pytest.MonkeyPatch, library: ClipLibrary
) -> None:
    def missing(name: str) -> None:
        raise ImportError("No module named 'numba'")

    monkeypatch.setattr(runtime_module.importlib, "import_module", missing)
    crowd = LibraryCrowd(library, 1)
    with pytest.raises(
        InvalidInputError, match="the numba backend needs numba, which failed to import: No module named 'numba'"
    ):
        sample_library(crowd, [0], [0.0], out=crowd.new_pose(), backend="numba")
