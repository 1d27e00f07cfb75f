"""BufferFrame: the frame jobs over batch-innermost buffers, on both backends, against the crowd jobs."""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim import Pose
from engine.anim.layout import MatrixBuffer, PoseBuffer
from engine.anim.velocity import PoseVelocity
from engine.backend import ClipBank, FrameState, finalize, sample_blend
from engine.backend.buffers import BufferFrame
from engine.backend.stage import INERTIALIZE, SPRING
from engine.errors import InvalidInputError
from engine.math._checks import trusted
from engine.math.quat import quat_normalize
from engine.player.transitions import Capture, TransitionStage
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


def stage_in_transition(count: int, joints: int, rng: np.random.Generator) -> TransitionStage:
    """A compiled transition stage with 60 of ``count`` characters inertialized, on a spring or frozen."""
    stage = TransitionStage(count, joints, compiled=True)
    stage.animate({"translation": np.arange(0, joints, 2), "rotation": np.arange(joints), "scale": np.array([1])})
    members = rng.permutation(count)[:60]
    with trusted():
        source, target = (
            Capture(
                Pose(
                    rng.normal(size=(60, joints, 3)),
                    quat_normalize(rng.normal(size=(60, joints, 4))),
                    1 + 0.1 * rng.normal(size=(60, joints, 3)),
                ),
                PoseVelocity(*(rng.normal(size=(60, joints, 3)) for _ in range(3))),
                rng.normal(size=(60, 3)),
            )
            for _ in range(2)
        )
    for kind, rows in (("inertialize", slice(0, 25)), ("spring", slice(25, 45)), ("frozen", slice(45, 60))):
        picked = members[rows]
        stage.begin(picked, kind, 0.4, 0.2, source.take(rows), target.take(rows), np.zeros(picked.size))
    return stage


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("compose", [False, True])
def test_the_stage_in_the_pass_is_the_stage_after_it(synthetic_bank: ClipBank, threads: int, compose: bool) -> None:
    """``stage``: the inertialized and spring offsets between each blend and its compose, bit for bit as after the pass.

    The reference: the pass without it, the stage's offsets on the pose
    (:meth:`~engine.player.transitions.TransitionStage.apply`), then :meth:`BufferFrame.finalize`.
    Characters in no transition or a frozen one are posed as without a stage.
    """
    count, joints = 80, synthetic_bank.num_joints
    rng = np.random.default_rng(31)
    stage = stage_in_transition(count, joints, rng)
    clock = np.full(count, 0.1)
    chosen = np.sort(rng.choice(count, 50, replace=False))
    offset = chosen[np.isin(stage.kind[chosen], (INERTIALIZE, SPRING))]
    outputs = []
    for how in ("in the pass", "after it", "none"):
        frame, times, weights = frame_for(synthetic_bank, count, seed=5)
        frame.state.threads = threads
        pose = PoseBuffer(*(np.zeros((count, joints, width)).transpose(2, 1, 0) for width in (3, 4, 3)), (count,))
        frame = BufferFrame(frame.state, pose, MatrixBuffer.empty(count, joints), MatrixBuffer.empty(count, joints))
        given = {"characters": chosen, "threshold": 0.5, "backend": "numba"}
        if how == "in the pass":
            frame.sample_blend(times, weights, compose=compose, stage=stage.in_pass(clock), **given)
        else:
            frame.sample_blend(times, weights, **given)
            if how == "after it":
                stage.apply(frame.pose, clock, offset)
            if compose:
                frame.finalize(characters=chosen, backend="numba")
        written = [array[..., chosen] for array in frame.pose.arrays()]
        if compose:
            written += [frame.palette.entries[..., chosen], frame.model.entries[..., chosen]]
        outputs.append(written)
    fused, after, plain = outputs
    for mine, theirs, bare in zip(fused, after, plain, strict=True):
        np.testing.assert_array_equal(mine, theirs)
        moved = np.any(mine != bare, axis=tuple(range(mine.ndim - 1)))  # per chosen character
        np.testing.assert_array_equal(moved, np.isin(chosen, offset))


def test_the_stage_in_the_pass_needs_the_compiled_backend(synthetic_bank: ClipBank) -> None:
    frame, times, weights = frame_for(synthetic_bank, 80, seed=6)
    stage = stage_in_transition(80, synthetic_bank.num_joints, np.random.default_rng(32))
    with pytest.raises(InvalidInputError, match="offsets run in the pass on the compiled backend only"):
        frame.sample_blend(times, weights, backend="numpy", stage=stage.in_pass(np.zeros(80)))
