"""BufferFrame: the frame jobs over batch-innermost buffers, on both backends, against the crowd jobs."""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim import Pose
from engine.anim.layout import MatrixBuffer, PoseBuffer
from engine.backend import ClipBank, FrameState, finalize, sample_blend
from engine.backend.buffers import BufferFrame
from engine.errors import InvalidInputError
from tests.backend.conftest import crowd

BACKENDS = ("numba", "numpy")


def frame_for(bank: ClipBank, count: int, seed: int) -> tuple[BufferFrame, np.ndarray, np.ndarray]:
    """Three layers playing random clips per character with masks, probing times and random weights."""
    rng = np.random.default_rng(seed)
    state, times = crowd(bank, 3, count, rng)
    for layer in range(3):
        state.set_mask(layer, rng.uniform(0.0, 1.0, bank.num_joints))
    weights = rng.uniform(0.0, 1.0, (3, count))
    weights[rng.random((3, count)) < 0.3] = 0.0
    joints = bank.num_joints
    buffers = BufferFrame(
        state, PoseBuffer.empty(count, joints), MatrixBuffer.empty(count, joints), MatrixBuffer.empty(count, joints)
    )
    return buffers, times, weights


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("count", [1, 7, 80])
def test_buffer_frame_equals_the_crowd_jobs(synthetic_bank: ClipBank, backend: str, count: int) -> None:
    """Same pose, model matrices and palette as sample_blend + finalize into ordinary arrays (numpy backend)."""
    frame, times, weights = frame_for(synthetic_bank, count, seed=count)
    frame.sample_blend(times, weights, threshold=0.5, backend=backend)
    frame.finalize(backend=backend)
    joints = synthetic_bank.num_joints
    crowd = FrameState(synthetic_bank, 3, count)
    crowd._clip_ids[:], crowd._masks[:] = frame.state.clip_ids, frame.state.masks
    local = Pose(np.zeros((count, joints, 3)), np.zeros((count, joints, 4)), np.zeros((count, joints, 3)))
    sample_blend(crowd, times, weights, out=local, threshold=0.5, backend="numpy")
    palette, model = np.zeros((count, joints, 4, 4)), np.zeros((count, joints, 4, 4))
    finalize(crowd, local, out=palette, model_out=model, backend="numpy")
    mine = frame.pose.to_pose()
    for name in ("translations", "rotations", "scales"):
        np.testing.assert_allclose(getattr(mine, name), getattr(local, name), rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(frame.model.to_array(), model, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(frame.palette.to_array(), np.swapaxes(palette, -1, -2), rtol=0.0, atol=1e-12)
    np.testing.assert_array_equal(frame.state.cursors, crowd.cursors)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_weights_are_named(mannequin_bank: ClipBank, backend: str) -> None:
    frame, times, weights = frame_for(mannequin_bank, 4, seed=1)
    weights[1, 2] = -1.0
    with pytest.raises(InvalidInputError, match=r"weights\[1, 2\] must be finite and non-negative"):
        frame.sample_blend(times, weights, backend=backend)


def test_buffers_must_fit_the_state(mannequin_bank: ClipBank) -> None:
    state = FrameState(mannequin_bank, 1, 3)
    joints = mannequin_bank.num_joints
    with pytest.raises(InvalidInputError, match="pose must be a single-layer PoseBuffer"):
        BufferFrame(state, PoseBuffer.empty(4, joints), MatrixBuffer.empty(3, joints), MatrixBuffer.empty(3, joints))
    with pytest.raises(InvalidInputError, match="palette must be a MatrixBuffer"):
        BufferFrame(state, PoseBuffer.empty(3, joints), MatrixBuffer.empty(3, joints), MatrixBuffer.empty(3, 2))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("dtype", "model"), [(None, True), (np.float32, False), (np.float64, True)])
def test_sample_blend_composing_is_sample_blend_then_finalize(synthetic_bank: ClipBank, backend, dtype, model) -> None:
    """``compose=True``: the pose, the matrices and the palette (or records) of the same characters, bit for bit."""
    count, joints = 30, synthetic_bank.num_joints
    chosen = np.array([17, 3, 25, 3, 9, 0])
    outputs = []
    for composing in (False, True):
        frame, times, weights = frame_for(synthetic_bank, count, seed=11)
        records = None if dtype is None else np.zeros((count, joints, 4, 4), dtype)
        given = {"characters": chosen, "threshold": 0.5, "backend": backend}
        if composing:
            frame.sample_blend(times, weights, compose=True, records=records, model=model, **given)
        else:
            frame.sample_blend(times, weights, **given)
            frame.finalize(records=records, characters=chosen, backend=backend, model=model)
        written = [array[..., chosen] for array in frame.pose.arrays()]  # the buffers start uninitialised
        written.append(frame.palette.entries[..., chosen] if records is None else records[chosen])
        if model:
            written.append(frame.model.entries[..., chosen])
        outputs.append(written)
    for mine, theirs in zip(*outputs, strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_sample_blend_composing_refuses_bad_records(mannequin_bank: ClipBank) -> None:
    frame, times, weights = frame_for(mannequin_bank, 4, seed=2)
    with pytest.raises(InvalidInputError, match="records must be a float32 or float64 array"):
        frame.sample_blend(times, weights, compose=True, records=np.zeros((4, 2, 4, 4), np.float32))
    frozen = np.zeros((4, mannequin_bank.num_joints, 4, 4), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(InvalidInputError, match="records must be writable"):
        frame.finalize(records=frozen)
