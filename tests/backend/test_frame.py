"""evaluate_frame / sample_blend / finalize: the compiled backend against the numpy one and a slow oracle.

The numpy backend is the batched jobs of engine.anim; the oracle below is written joint by joint
from the glTF formulas (tests/reference.py) and shares no code with either backend.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.anim import Pose, sample
from engine.anim.blending import REST_THRESHOLD
from engine.backend import ClipBank, FrameState, evaluate_frame, finalize, sample_blend
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import gl_pack
from tests.backend.conftest import crowd, probe_times, synthetic_rig
from tests.helpers import assert_quat_allclose
from tests.reference import interpolate_gltf, local_to_model_recursive, trs_matrix

BACKENDS = ("numba", "numpy")


def random_weights(layers: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Weights with zeros (skipped layers), tiny totals (the rest pose fills in) and large ones."""
    weights = rng.uniform(0.0, 1.0, (layers, count))
    weights[rng.random((layers, count)) < 0.25] = 0.0
    weights[:, rng.random(count) < 0.1] *= 0.02
    weights[:, rng.random(count) < 0.05] *= 40.0
    return weights


def run_both(state_for, times, weights, *, dtype=np.float64, threshold=0.1):
    """Palette, model matrices and final cursors from each backend, each on a fresh state."""
    results = {}
    for backend in BACKENDS:
        state = state_for()
        palette = state.new_palette(dtype)
        model = np.zeros(palette.shape)
        evaluate_frame(state, times, weights, out=palette, model_out=model, threshold=threshold, backend=backend)
        results[backend] = (palette, model, state.cursors.copy())
    return results


def clone(state: FrameState, threads: int | None = None) -> FrameState:
    """A fresh state (cursors at 0) playing the same clips with the same masks."""
    copy = FrameState(state.bank, state.num_layers, state.num_characters, threads=threads)
    for layer in range(state.num_layers):
        for k in range(state.bank.num_clips):
            chosen = np.flatnonzero(state.clip_ids[layer] == k)
            if chosen.size:
                copy.play(layer, k, chosen)
        copy.set_mask(layer, state.masks[layer])
    return copy


# --- the two backends agree on real clips -------------------------------------------------------


@pytest.mark.parametrize("bank_name", ["mannequin_bank", "synthetic_bank"])
def test_backends_agree_to_1e12(bank_name, request, rng):
    bank = request.getfixturevalue(bank_name)
    state, times = crowd(bank, 3, 300, rng)
    state.set_mask(2, rng.uniform(0.0, 1.0, bank.num_joints))
    weights = random_weights(3, 300, rng)
    results = run_both(lambda: clone(state), times, weights)
    (pal_a, model_a, cursors_a), (pal_b, model_b, cursors_b) = results["numba"], results["numpy"]
    np.testing.assert_allclose(pal_a, pal_b, rtol=0, atol=1e-12)
    np.testing.assert_allclose(model_a, model_b, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(cursors_a, cursors_b)


@pytest.mark.assets
@pytest.mark.parametrize("bank_name", ["fox_bank", "cesium_bank", "interpolation_bank"])
def test_backends_agree_on_the_shared_assets(bank_name, request, rng):
    """Fox Survey/Walk/Run blends, CesiumMan, and InterpolationTest's STEP/LINEAR/CUBICSPLINE channels."""
    bank = request.getfixturevalue(bank_name)
    layers = min(3, bank.num_clips)
    state, times = crowd(bank, layers, 200, rng)
    weights = random_weights(layers, 200, rng)
    for dtype, tolerance in ((np.float64, 1e-12), (np.float32, 1e-6)):
        results = run_both(lambda: clone(state), times, weights, dtype=dtype)
        scale = max(1.0, float(np.abs(results["numpy"][0]).max()))
        np.testing.assert_allclose(results["numba"][0], results["numpy"][0], rtol=0, atol=tolerance * scale)
        np.testing.assert_allclose(results["numba"][1], results["numpy"][1], rtol=0, atol=1e-12 * scale)


def test_float32_palette_is_gl_pack_of_the_float64_one(mannequin_bank, rng):
    """Column-major float32 as engine.math.gl_pack lays it out, bit for bit, from the same numbers."""
    state, times = crowd(mannequin_bank, 2, 50, rng)
    weights = random_weights(2, 50, rng)
    wide, narrow = state.new_palette(np.float64), state.new_palette(np.float32)
    evaluate_frame(clone(state), times, weights, out=wide)
    evaluate_frame(clone(state), times, weights, out=narrow)
    np.testing.assert_array_equal(narrow, gl_pack(np.swapaxes(wide, -1, -2)))
    assert narrow.dtype == np.float32
    assert narrow.flags.c_contiguous


# --- against the slow oracle (glTF formulas, one joint at a time) --------------------------------


def oracle_palette(bank: ClipBank, clips, times, weights, masks, threshold) -> np.ndarray:
    """Palette ``(J, 4, 4)`` of one character: each channel from the spec, blended, composed."""
    skeleton = bank.skeleton
    joints = skeleton.num_joints
    layers = []
    for clip_index, t in zip(clips, times, strict=True):
        clip = bank.clips[clip_index].clip
        values = [
            skeleton.rest_translations.copy(),
            skeleton.rest_rotations.copy(),
            skeleton.rest_scales.copy(),
        ]
        for channel in clip.channels:
            value = interpolate_gltf(channel.times, channel.values, channel.interpolation, channel.path, t)
            values[("translation", "rotation", "scale").index(channel.path)][channel.target] = value
        layers.append(values)
    local = np.empty((joints, 4, 4))
    for j in range(joints):
        w = np.array([weights[n] * masks[n][j] for n in range(len(layers))])
        total = w.sum()
        rest_w = max(threshold - total, 0.0)
        positive = np.flatnonzero(w > 0)
        reference = layers[positive[0]][1][j] if positive.size else skeleton.rest_rotations[j]
        q = sum(w[n] * math.copysign(1.0, layers[n][1][j] @ reference) * layers[n][1][j] for n in positive)
        q = q + rest_w * math.copysign(1.0, skeleton.rest_rotations[j] @ reference) * skeleton.rest_rotations[j]
        t = (sum(w[n] * layers[n][0][j] for n in positive) + rest_w * skeleton.rest_translations[j]) / (total + rest_w)
        s = (sum(w[n] * layers[n][2][j] for n in positive) + rest_w * skeleton.rest_scales[j]) / (total + rest_w)
        local[j] = trs_matrix(t, q / np.linalg.norm(q), s)
    return local_to_model_recursive(skeleton.parents, local) @ skeleton.inverse_bind_matrices


@pytest.mark.parametrize("backend", BACKENDS)
def test_matches_the_spec_oracle(backend, synthetic_bank, rng):
    state, times = crowd(synthetic_bank, 3, 40, rng)
    state.set_mask(1, rng.uniform(0.0, 1.0, synthetic_bank.num_joints))
    weights = random_weights(3, 40, rng)
    palette = state.new_palette(np.float64)
    evaluate_frame(state, times, weights, out=palette, backend=backend)
    for c in range(40):
        expected = oracle_palette(
            synthetic_bank, state.clip_ids[:, c], times[:, c], weights[:, c], state.masks, REST_THRESHOLD
        )
        np.testing.assert_allclose(np.swapaxes(palette[c], -1, -2), expected, rtol=0, atol=1e-9)


# --- sampling is exactly engine.anim.sample -------------------------------------------------------


@pytest.mark.parametrize("bank_name", ["mannequin_bank", "synthetic_bank"])
def test_one_layer_is_sample_exactly(bank_name, request, rng):
    """Weight 1 on one layer: translations and scales bit-identical, rotations within an ulp."""
    bank = request.getfixturevalue(bank_name)
    for k in range(bank.num_clips):
        times = probe_times(bank, k, 120, rng)
        state = FrameState(bank, 1, times.size).play(0, k)
        local = Pose(
            np.zeros((times.size, bank.num_joints, 3)),
            np.zeros((times.size, bank.num_joints, 4)),
            np.zeros((times.size, bank.num_joints, 3)),
        )
        sample_blend(state, times[None], np.ones((1, times.size)), out=local)
        expected = sample(bank.clips[k], bank.skeleton.rest_pose, times)
        np.testing.assert_array_equal(local.translations, expected.translations)
        np.testing.assert_array_equal(local.scales, expected.scales)
        assert_quat_allclose(local.rotations, expected.rotations, atol=4e-16)


# --- cursors: history never changes a result -----------------------------------------------------


@pytest.mark.parametrize("fps", [30.0, 60.0, 144.0, None])
def test_streams_at_any_frame_rate_equal_fresh_evaluations(fps, fox_or_mannequin, rng):
    """Forward, backward, jumps and random dt: the cursor-started search always finds the segment
    a fresh binary search finds, so every frame is bit-identical to a state with no history."""
    bank = fox_or_mannequin
    state, times = crowd(bank, 2, 24, rng)
    weights = random_weights(2, 24, rng)
    palette, fresh = state.new_palette(np.float64), state.new_palette(np.float64)
    for frame in range(90):
        if fps is None:
            dt = rng.choice([rng.uniform(0, 0.05), -rng.uniform(0, 0.05), rng.uniform(-3, 3), 0.0])
        else:
            dt = 1.0 / fps if frame % 30 < 25 else -2.0 / fps  # some frames play backwards
        times += dt
        if frame % 17 == 0:
            times[:, ::3] = rng.uniform(-1.0, 3.0, times[:, ::3].shape)  # jumps
        evaluate_frame(state, times, weights, out=palette)
        evaluate_frame(clone(state), times, weights, out=fresh)
        np.testing.assert_array_equal(palette, fresh)
        expected_cursors = clone(state)
        evaluate_frame(expected_cursors, times, weights, out=fresh, backend="numpy")
        weighted = weights > 0
        np.testing.assert_array_equal(state.cursors[weighted], expected_cursors.cursors[weighted])


@pytest.fixture(params=["mannequin", "fox"])
def fox_or_mannequin(request):
    name = "mannequin_bank" if request.param == "mannequin" else "fox_bank"
    return request.getfixturevalue(name)


def test_any_cursor_value_is_safe(mannequin_bank, rng):
    state, times = crowd(mannequin_bank, 2, 64, rng)
    weights = random_weights(2, 64, rng)
    expected = state.new_palette(np.float64)
    evaluate_frame(clone(state), times, weights, out=expected)
    for garbage in (rng.integers(-(10**9), 10**9, state.cursors.shape), np.full(state.cursors.shape, 2**62)):
        state.cursors[...] = garbage
        palette = state.new_palette(np.float64)
        evaluate_frame(state, times, weights, out=palette)
        np.testing.assert_array_equal(palette, expected)


@given(st.data())
def test_segment_search_equals_searchsorted(data):
    from engine.backend.select import kernels  # noqa: PLC0415 (imports numba)

    timeline = np.unique(np.array(data.draw(st.lists(st.floats(-5, 5), min_size=1, max_size=40))))
    t = data.draw(st.sampled_from([*timeline, *np.nextafter(timeline, 9), *np.nextafter(timeline, -9), -9.0, 9.0]))
    start = data.draw(st.integers(-3, timeline.size + 3))
    found = kernels().find_segment(timeline, 0, timeline.size, float(t), start)
    assert found == max(int(np.searchsorted(timeline, t, side="right")) - 1, 0)


# --- threads, subsets, staged calls ----------------------------------------------------------------


def test_threads_give_identical_results(mannequin_bank, rng):
    state, times = crowd(mannequin_bank, 2, 1000, rng)
    weights = random_weights(2, 1000, rng)
    one, many = state.new_palette(), state.new_palette()
    serial, parallel = clone(state), clone(state, threads=2)
    evaluate_frame(serial, times, weights, out=one, threads=1)
    evaluate_frame(parallel, times, weights, out=many, threads=2)
    np.testing.assert_array_equal(one, many)
    np.testing.assert_array_equal(serial.cursors, parallel.cursors)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_subset_leaves_the_others_untouched(backend, mannequin_bank, rng):
    state, times = crowd(mannequin_bank, 2, 40, rng)
    weights = random_weights(2, 40, rng)
    full = state.new_palette()
    evaluate_frame(clone(state), times, weights, out=full, backend=backend)
    chosen = np.array([3, 7, 8, 20, 39])
    palette = np.full_like(full, 7.0)
    cursors = state.cursors.copy()
    evaluate_frame(state, times, weights, out=palette, characters=chosen, backend=backend)
    np.testing.assert_array_equal(palette[chosen], full[chosen])
    others = np.setdiff1d(np.arange(40), chosen)
    assert np.all(palette[others] == 7.0)
    np.testing.assert_array_equal(state.cursors[:, others], cursors[:, others])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sample_blend_then_finalize_is_the_fused_frame(backend, synthetic_bank, rng):
    state, times = crowd(synthetic_bank, 2, 30, rng)
    weights = random_weights(2, 30, rng)
    fused, staged = state.new_palette(np.float64), state.new_palette(np.float64)
    fused_model, staged_model = np.zeros(fused.shape), np.zeros(fused.shape)
    evaluate_frame(clone(state), times, weights, out=fused, model_out=fused_model, backend=backend)
    joints = synthetic_bank.num_joints
    local = Pose(np.zeros((30, joints, 3)), np.zeros((30, joints, 4)), np.zeros((30, joints, 3)))
    sample_blend(state, times, weights, out=local, backend=backend)
    finalize(state, local, out=staged, model_out=staged_model, backend=backend)
    np.testing.assert_array_equal(staged, fused)
    np.testing.assert_array_equal(staged_model, fused_model)


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_weight_gives_the_rest_pose(backend, synthetic_bank):
    state = FrameState(synthetic_bank, 2, 3)
    palette = state.new_palette(np.float64)
    evaluate_frame(state, np.zeros((2, 3)), np.zeros((2, 3)), out=palette, backend=backend)
    skeleton = synthetic_bank.skeleton
    local = np.stack(
        [
            trs_matrix(*rest)
            for rest in zip(skeleton.rest_translations, skeleton.rest_rotations, skeleton.rest_scales, strict=True)
        ]
    )
    expected = local_to_model_recursive(skeleton.parents, local) @ skeleton.inverse_bind_matrices
    np.testing.assert_allclose(np.swapaxes(palette, -1, -2), np.broadcast_to(expected, (3, 9, 4, 4)), atol=1e-12)


def test_float32_tables_stay_within_float32_rounding(rng):
    skeleton, clips = synthetic_rig()
    wide, narrow = ClipBank(skeleton, clips), ClipBank(skeleton, clips, table_dtype=np.float32)
    state, times = crowd(wide, 2, 100, rng)
    weights = random_weights(2, 100, rng)
    exact, rounded = state.new_palette(np.float64), state.new_palette(np.float64)
    evaluate_frame(clone(state), times, weights, out=exact, backend="numba")  # float32 tables: compiled only
    narrow_state = FrameState(narrow, 2, 100)
    for layer in range(2):
        for k in range(3):
            chosen = np.flatnonzero(state.clip_ids[layer] == k)
            if chosen.size:
                narrow_state.play(layer, k, chosen)
    evaluate_frame(narrow_state, times, weights, out=rounded, backend="numba")
    error = np.abs(rounded - exact).max() / np.abs(exact).max()
    assert 1e-9 < error < 1e-5  # float32 rounding of the keys, no worse


# --- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_times_and_weights_are_named(backend, mannequin_bank):
    state = FrameState(mannequin_bank, 2, 5)
    palette = state.new_palette()
    times, weights = np.zeros((2, 5)), np.ones((2, 5))
    for name, value, match in (
        ("times", np.nan, r"times\[1, 3\] must be finite seconds, got nan"),
        ("times", np.inf, r"times\[1, 3\] must be finite seconds, got inf"),
        ("weights", -0.5, r"weights\[1, 3\] must be finite and non-negative, got -0.5"),
        ("weights", np.nan, r"weights\[1, 3\] must be finite and non-negative, got nan"),
    ):
        bad_times, bad_weights = times.copy(), weights.copy()
        (bad_times if name == "times" else bad_weights)[1, 3] = value
        with pytest.raises(InvalidInputError, match=match):
            evaluate_frame(state, bad_times, bad_weights, out=palette, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_arrays_raise(backend, mannequin_bank):
    state = FrameState(mannequin_bank, 2, 4)
    good = state.new_palette()
    times, weights = np.zeros((2, 4)), np.ones((2, 4))
    cases = [
        ({"out": good[:3]}, r"out must be a writable C-contiguous float32 or float64 array shaped \(4, 25, 4, 4\)"),
        ({"out": good.astype(np.float16)}, "out must be"),
        ({"out": np.zeros((4, 25, 4, 4, 1), np.float32)[..., 0][:, :, ::-1]}, "out must be"),
        ({"out": good, "model_out": np.zeros((4, 25, 4, 4), np.float32)}, "model_out must be"),
        ({"out": good, "characters": [0, 4]}, r"characters must lie in \[0, 4\), got 4"),
        ({"out": good, "characters": [[0]]}, "characters must be a 1-D index array"),
        ({"out": good, "characters": [0.5]}, "characters must be integer indices"),
        ({"out": good, "threshold": 0.0}, "threshold must be positive"),
        ({"out": good, "threads": 0}, "threads must be a positive integer"),
    ]
    for kwargs, match in cases:
        with pytest.raises(InvalidInputError, match=match):
            evaluate_frame(state, times, weights, backend=backend, **kwargs)
    with pytest.raises(InvalidInputError, match=r"times must have shape \(layers, characters\) = \(2, 4\)"):
        evaluate_frame(state, np.zeros((4, 2)), weights, out=good, backend=backend)
    with pytest.raises(InvalidInputError, match="backend must be one of"):
        evaluate_frame(state, times, weights, out=good, backend="cuda")


def test_state_and_bank_validation(mannequin_bank, synthetic_bank):
    with pytest.raises(InvalidInputError, match="layers and characters must be at least 1"):
        FrameState(mannequin_bank, 0, 3)
    state = FrameState(mannequin_bank, 2, 3)
    with pytest.raises(InvalidInputError, match=r"layer must be in \[0, 2\), got 2"):
        state.play(2, 0)
    with pytest.raises(InvalidInputError, match="no clip named 'swim'"):
        state.play(0, "swim")
    with pytest.raises(InvalidInputError, match="clip must be a name or an index below 6"):
        state.play(0, 6)
    with pytest.raises(SkeletonMismatchError, match=r"mask must have shape \(25,\)"):
        state.set_mask(0, np.ones(24))
    with pytest.raises(InvalidInputError, match="mask must be non-negative"):
        state.set_mask(0, -np.ones(25))
    with pytest.raises(SkeletonMismatchError, match=r"clips\[0\] \('synthetic0'\) animates 9 targets"):
        ClipBank(mannequin_bank.skeleton, synthetic_bank.clips)
    with pytest.raises(InvalidInputError, match="table_dtype must be float64 or float32"):
        ClipBank(mannequin_bank.skeleton, mannequin_bank.clips, table_dtype=np.float16)
    with pytest.raises(InvalidInputError, match="clips must be a non-empty sequence"):
        ClipBank(mannequin_bank.skeleton, [])
    with pytest.raises(ValueError, match="read-only"):
        state.clip_ids[0, 0] = 1
