"""Compressed clips at run time: ``sample``, a bank of raw and compressed clips on both backends, the kernel cache."""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from engine.anim import Pose, Skeleton, sample
from engine.anim.layout import PoseBuffer
from engine.backend import ClipBank, FrameState, evaluate_frame, kernel_cache, sample_blend
from engine.compress import ClipLibrary, CompressedClip, compress_clip
from engine.compress.metric import model_transforms, shell_error, shell_radii
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


@pytest.fixture(scope="module")
def mixed(library: ClipLibrary, walking: Walk) -> ClipBank:
    """The three compressed clips and, last, the walk's raw clip."""
    return ClipBank(library.skeletons[0], [*library.clips, walking.clip])


def times_for(clips: list[CompressedClip], chosen: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random times, sample times and their neighbours one ulp away, clip ends, outside the clip."""
    durations = np.array([c.duration for c in clips])[chosen]
    times = rng.uniform(-0.1, 1.1, chosen.size) * durations
    rates = np.array([c.rate for c in clips])[chosen]
    on_sample = rng.integers(0, 20, chosen.size) / rates
    times[::4] = on_sample[::4]
    times[1::4] = np.nextafter(on_sample[1::4], -np.inf)
    times[2::8] = durations[2::8]
    times[3::8] = np.nextafter(durations[3::8], np.inf)
    times[5::16] = -1.0
    return times


def empty_pose(count: int, joints: int) -> Pose:
    return Pose(np.zeros((count, joints, 3)), np.zeros((count, joints, 4)), np.zeros((count, joints, 3)))


def played(bank: ClipBank, chosen: np.ndarray, characters: int) -> FrameState:
    state = FrameState(bank, 1, characters, threads=2)
    for k in range(bank.num_clips):
        state.play(0, k, np.flatnonzero(chosen == k))
    return state


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_one_compressed_layer_is_sample_of_the_compressed_clip(
    library: ClipLibrary, mixed: ClipBank, rng: np.random.Generator, backend: str
) -> None:
    """One layer at weight 1 is the numpy reference decoder's pose: exact but for the blend's renormalisation."""
    count = 200
    chosen = rng.integers(0, 3, count)
    times = times_for(list(library.clips), chosen, rng)
    state = played(mixed, chosen, count)
    pose = sample_blend(state, times[None], np.ones((1, count)), out=empty_pose(count, 38), backend=backend)
    rest = library.skeletons[0].rest_pose
    for c in range(count):
        alone = sample(library.clips[chosen[c]], rest, times[c])
        np.testing.assert_array_equal(pose.translations[c], alone.translations)
        np.testing.assert_array_equal(pose.scales[c], alone.scales)
        np.testing.assert_allclose(pose.rotations[c], alone.rotations, rtol=0.0, atol=1e-15)
    expected = np.array([library.clips[chosen[c]].keys(times[c : c + 1])[0][0] for c in range(count)])
    np.testing.assert_array_equal(state.cursors[0], expected)


@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_and_numpy_backends_agree_on_mixed_layers(
    library: ClipLibrary, mixed: ClipBank, rng: np.random.Generator, threads: int
) -> None:
    """Two layers, raw and compressed clips mixed per character, partial weights: palettes and cursors agree."""
    count = 120
    state = FrameState(mixed, 2, count, threads=2)
    times = np.empty((2, count))
    for layer in range(2):
        chosen = rng.integers(0, mixed.num_clips, count)
        for k in range(mixed.num_clips):
            state.play(layer, k, np.flatnonzero(chosen == k))
        clips = [*library.clips, library.clips[0]]  # the raw walk has the compressed walk's times
        times[layer] = times_for(clips, chosen, rng)
    weights = rng.uniform(0.0, 1.0, (2, count))
    weights[0, ::7] = 0.0
    compiled = evaluate_frame(state, times, weights, out=state.new_palette(np.float64), threads=threads)
    cursors = state.cursors.copy()
    reference = evaluate_frame(state, times, weights, out=state.new_palette(np.float64), backend="numpy")
    np.testing.assert_allclose(compiled, reference, rtol=0.0, atol=1e-12)
    weighted = weights > 0.0
    np.testing.assert_array_equal(cursors[weighted], state.cursors[weighted])


@pytest.mark.parametrize("fps", [30.0, 60.0, 144.0, None])
def test_streams_at_any_frame_rate_equal_fresh_evaluations(
    library: ClipLibrary, rng: np.random.Generator, fps: float | None
) -> None:
    """Playing frame after frame (cursors reused) gives the poses of each frame evaluated alone."""
    bank = ClipBank(library.skeletons[0], list(library.clips))
    count = 12
    chosen = np.arange(count) % 3
    state, fresh = played(bank, chosen, count), played(bank, chosen, count)
    steps = np.full(40, 1.0 / fps) if fps else rng.uniform(0.0, 0.05, 40)
    start = rng.uniform(0.0, 1.0, count)
    ones = np.ones((1, count))
    for clock in np.cumsum(steps):
        times = (start + clock)[None]
        streamed = sample_blend(state, times, ones, out=empty_pose(count, 38))
        fresh.cursors[:] = 0
        alone = sample_blend(fresh, times, ones, out=empty_pose(count, 38))
        for a, b in zip(streamed.arrays(), alone.arrays(), strict=True):
            np.testing.assert_array_equal(a, b)


def test_within_the_tolerance_of_the_raw_clip(walking: Walk, rng: np.random.Generator) -> None:
    """The fused frame on the compressed walk stays within its tolerance (shell metric) of the raw walk's."""
    bank = ClipBank(walking.skeleton, [walking.clip, walking.compressed])
    count = 64
    state = FrameState(bank, 2, count).play(1, 1)
    times = np.tile(rng.uniform(0.0, walking.clip.duration, count), (2, 1))
    raw = sample_blend(state, times, np.array([[1.0] * count, [0.0] * count]), out=empty_pose(count, 38))
    compressed = sample_blend(state, times, np.array([[0.0] * count, [1.0] * count]), out=empty_pose(count, 38))
    skeleton = walking.skeleton
    errors = shell_error(
        model_transforms(skeleton, PoseBuffer.from_pose(raw)),
        model_transforms(skeleton, PoseBuffer.from_pose(compressed)),
        shell_radii(skeleton, 0.03),
    )
    assert 0.0 < errors.max() <= walking.compressed.info["tolerance_m"]


def test_a_compressed_clip_of_another_skeleton_is_refused(walking: Walk) -> None:
    skeleton = walking.skeleton
    longer = Skeleton(skeleton.names, skeleton.parents, np.asarray(skeleton.rest_translations) * 1.01)
    with pytest.raises(
        SkeletonMismatchError,
        match=r"clips\[1\] \('walk'\) was compressed for another skeleton than the bank's: "
        r"the rest translations differ at joint 2 \('LeftUpLeg'\)",
    ):
        ClipBank(longer, [walking.clip, walking.compressed])
    with pytest.raises(
        SkeletonMismatchError, match=r"clips\[0\] \('walk'\) animates 38 targets but the skeleton has 1"
    ):
        ClipBank(Skeleton(["a"], [-1]), [walking.compressed])
    unknown = replace(walking.compressed, skeleton=None)  # no skeleton recorded: the joint count is checked
    assert ClipBank(longer, [unknown]).num_clips == 1


def test_the_bank_names_and_counts_compressed_clips(mixed: ClipBank) -> None:
    assert mixed.names == ("walk", "loop", "run", "walk")
    np.testing.assert_array_equal(mixed.compressed, [0, 1, 2, -1])
    assert mixed.compressed_arrays[0].shape[0] == 3
    empty = ClipBank(mixed.skeleton, [mixed.clips[3]])
    assert [a.dtype for a in empty.compressed_arrays] == [a.dtype for a in mixed.compressed_arrays]
    assert [a.ndim for a in empty.compressed_arrays] == [a.ndim for a in mixed.compressed_arrays]
    assert not any(a.flags.writeable for a in mixed.compressed_arrays)


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
    with pytest.raises(SkeletonMismatchError, match="clip 'walk' was compressed for another skeleton: the rest"):
        ClipLibrary([(other, walking.compressed)])
    moved = replace(walking.compressed, name="big", skeleton=other)
    two = ClipLibrary([(walking.skeleton, walking.compressed), (other, moved)])
    assert len(two.skeletons) == 2
    assert two.skeleton_index == (0, 1)


def test_the_kernel_cache_follows_the_modules_it_inlines(tmp_path: Path) -> None:
    """A changed inlined module drops the kernel module's cached files (and only those), once."""
    for name in ("_kernels.run-1.py311.nbi", "_kernels.run-1.py311.1.nbc", "other.run-1.py311.nbi"):
        (tmp_path / name).write_bytes(b"cached")
    dispatcher = SimpleNamespace(stats=SimpleNamespace(cache_path=str(tmp_path)))
    modules = (kernel_cache,)
    assert kernel_cache.follow(dispatcher, "engine/backend/_kernels.py", modules)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_kernels.inlined.sha256", "other.run-1.py311.nbi"]
    assert (tmp_path / "_kernels.inlined.sha256").read_text() == kernel_cache.sources_digest(modules)
    (tmp_path / "_kernels.run-1.py311.nbi").write_bytes(b"cached again, by these sources")
    assert not kernel_cache.follow(dispatcher, "engine/backend/_kernels.py", modules)
    assert (tmp_path / "_kernels.run-1.py311.nbi").exists()
    (tmp_path / "_kernels.inlined.sha256").write_text("another digest")
    assert kernel_cache.follow(dispatcher, "engine/backend/_kernels.py", modules)
    assert not (tmp_path / "_kernels.run-1.py311.nbi").exists()


def test_the_frame_kernels_key_their_cache_by_the_decoder() -> None:
    """The backend's kernel module left the digest of the modules it inlines beside its cache.

    The decoder of compressed clips, and the transition stage's offsets (added within the pass).
    """
    kernels = importlib.import_module("engine.backend._kernels")  # numba: imported where it is tested
    helpers = importlib.import_module("engine.backend._sampling_kernels")
    decoder, quantize, library = (
        importlib.import_module(f"engine.compress.{n}") for n in ("_kernels", "quantize", "library")
    )
    offsets = tuple(importlib.import_module(f"engine.backend.{n}") for n in ("_pose_offset_kernels", "_offset_kernels"))
    stamp = Path(kernels.run_serial.stats.cache_path) / "_kernels.inlined.sha256"
    assert stamp.read_text() == kernel_cache.sources_digest((helpers, decoder, quantize, library, *offsets))
