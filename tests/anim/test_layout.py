"""The explicit batch-innermost layout: buffers, C-ordered public results, subtree recomputation, workspaces.

References: the recursive per-joint oracle of ``tests/reference.py`` for model matrices, plain
numpy arrays for the layout round trips, and numpy's own semantics (a C-ordered array's
``reshape`` is a view) for "writes are never lost".
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.anim import (
    Channel,
    Clip,
    Pose,
    Skeleton,
    apply_additive,
    blend,
    local_to_model,
    model_from_pose,
    sample,
    skinning_palette,
)
from engine.anim.compiled_clip import compiled, compiled_channel
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.animator import Animator
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import trusted, validating
from tests.anim.test_local_to_model import random_pose, reference_model
from tests.strategies import skeletons


def walk_clip(joints: int) -> Clip:
    times = np.linspace(0.0, 1.0, 5)
    rng = np.random.default_rng(1)
    q = rng.normal(size=(5, 4))
    channels = [
        Channel(j, "rotation", "LINEAR", times, q / np.linalg.norm(q, axis=1, keepdims=True)) for j in range(joints)
    ]
    channels.append(Channel(0, "translation", "LINEAR", times, rng.normal(size=(5, 3))))
    return Clip("walk", channels, joints)


# --- every public job returns ordinary C-ordered arrays -------------------------------------------


def test_public_results_are_c_ordered_so_writes_through_reshape_land(rng: np.random.Generator) -> None:
    """The issue's example: ``reshape(-1, 4, 4)[:] = 0`` used to write into a copy of a transposed view."""
    skeleton = Skeleton(["a", "b", "c"], [-1, 0, 1])
    clip = walk_clip(3)
    pose = sample(clip, skeleton.rest_pose, [0.1, 0.2, 0.7, 0.9])
    model = model_from_pose(skeleton, pose)
    results = [
        *pose.arrays(),
        model,
        local_to_model(skeleton, pose.matrices()),
        skinning_palette(skeleton, model),
        *blend(skeleton.rest_pose, [pose, pose], [0.5, 0.5]).arrays(),
        *apply_additive(pose, pose, 0.5).arrays(),
    ]
    for array in results:
        assert array.flags.c_contiguous
        array.reshape(-1, array.shape[-1])[:] = 0.0
        assert not array.any()  # the write went through the view


def test_animator_results_are_read_only_copies_that_refuse_writes() -> None:
    skeleton = Skeleton(["a", "b"], [-1, 0])
    animator = Animator(skeleton, 3)
    animator.action(walk_clip(2)).play()
    animator.update(0.1)
    for array in (*animator.local_pose.arrays(), animator.model, animator.palette):
        assert array.flags.c_contiguous
        with pytest.raises(ValueError, match="read-only"):
            array.reshape(-1)[:] = 0.0
    np.testing.assert_array_equal(animator.model, animator.model_buffer.to_array())


# --- buffers as inputs and outputs ---------------------------------------------------------------------


def test_pose_buffer_round_trip_and_views(rng: np.random.Generator) -> None:
    skeleton = Skeleton(list("abcd"), [-1, 0, 1, 1])
    pose = random_pose(skeleton, rng, (2, 3))
    buffer = PoseBuffer.from_pose(pose)
    assert buffer.shape == pose.shape
    assert buffer.batch == (2, 3)
    assert buffer.count == 6
    assert buffer.rotations.shape == (4, 4, 6)
    assert buffer.rotations.flags.c_contiguous
    for got, want in zip(buffer.to_pose().arrays(), pose.arrays(), strict=True):
        np.testing.assert_array_equal(got, want)
    # component k of joint j of character b sits at [k, j, b]
    np.testing.assert_array_equal(buffer.rotations[2, 3], pose.rotations.reshape(6, 4, 4)[:, 3, 2])
    flat = PoseBuffer.from_pose(random_pose(skeleton, rng, (5,)))
    part = flat.characters(slice(1, 4))
    assert part.shape == (3, 4)
    assert np.shares_memory(part.rotations, flat.rotations)
    picked = flat.gather(np.array([1, 3]))
    np.testing.assert_array_equal(picked.rotations, flat.to_pose().rotations[:, [1, 3]])
    flat.scatter(np.array([1, 3]), Pose.identity(2))
    np.testing.assert_array_equal(flat.to_pose().rotations[:, [1, 3]], Pose.identity(2, (5,)).rotations)
    stack = PoseBuffer.empty(5, 4, layers=3)
    assert stack.num_layers == 3
    assert stack.layer(1).shape == (5, 4)
    assert stack.first_layers(2).shape == (2, 5, 4)
    rest = skeleton.rest_pose
    stack.layer(2).assign(rest)
    np.testing.assert_array_equal(stack.layer(2).to_pose().translations, np.broadcast_to(rest.translations, (5, 4, 3)))


def test_matrix_buffer_round_trip(rng: np.random.Generator) -> None:
    matrices = rng.normal(size=(2, 3, 5, 4, 4))
    buffer = MatrixBuffer.from_array(matrices)
    assert buffer.entries.shape == (4, 4, 5, 6)
    assert buffer.shape == matrices.shape
    np.testing.assert_array_equal(buffer.to_array(), matrices)
    np.testing.assert_array_equal(buffer.entries[1, 2, 4], matrices.reshape(6, 5, 4, 4)[:, 4, 1, 2])
    np.testing.assert_array_equal(buffer.gather([0, 4]), matrices[:, :, [0, 4]])
    np.testing.assert_array_equal(buffer.gather(3), matrices[:, :, 3])
    with pytest.raises(InvalidInputError, match=r"out must be a float64 array shaped \(2, 3, 5, 4, 4\)"):
        buffer.to_array(np.empty((6, 5, 4, 4)))


@given(skeletons(), st.integers(0, 2**32 - 1))
def test_buffers_in_and_out_give_the_array_results(skeleton: Skeleton, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pose = random_pose(skeleton, rng, (4,))
    expected = reference_model(skeleton, pose)
    ws = Workspace()
    model = model_from_pose(
        skeleton, PoseBuffer.from_pose(pose), out=MatrixBuffer.empty(4, skeleton.num_joints), workspace=ws
    )
    np.testing.assert_allclose(model.to_array(), expected, atol=1e-12, rtol=1e-12)
    again = local_to_model(
        skeleton, MatrixBuffer.from_array(pose.matrices()), out=MatrixBuffer.empty(4, skeleton.num_joints)
    )
    np.testing.assert_allclose(again.to_array(), expected, atol=1e-12, rtol=1e-12)
    palette = skinning_palette(skeleton, model, out=MatrixBuffer.empty(4, skeleton.num_joints), workspace=ws)
    np.testing.assert_allclose(palette.to_array(), expected @ skeleton.inverse_bind_matrices, atol=1e-12, rtol=1e-12)


def test_sample_and_blend_into_buffers_equal_the_pose_results() -> None:
    skeleton = Skeleton(["a", "b", "c"], [-1, 0, 1])
    clip = walk_clip(3)
    times = np.array([0.05, 0.5, 0.95])
    ws = Workspace()
    layers = PoseBuffer.empty(3, 3, layers=2)
    sample(clip, skeleton.rest_pose, times, out=layers.layer(0), workspace=ws)
    sample(clip, skeleton.rest_pose, times[::-1], out=layers.layer(1), workspace=ws)
    poses = [sample(clip, skeleton.rest_pose, times), sample(clip, skeleton.rest_pose, times[::-1])]
    for got, want in zip(
        layers.to_pose().arrays(),
        Pose(*(np.stack(a) for a in zip(*(p.arrays() for p in poses), strict=True))).arrays(),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)
    out = blend(skeleton.rest_pose, layers, [0.3, 0.7], out=PoseBuffer.empty(3, 3), workspace=ws)
    for got, want in zip(out.to_pose().arrays(), blend(skeleton.rest_pose, poses, [0.3, 0.7]).arrays(), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-15)


def test_buffer_shape_mismatches_are_refused() -> None:
    skeleton = Skeleton(["a", "b"], [-1, 0])
    with pytest.raises(InvalidInputError, match=r"out must be a Pose or PoseBuffer shaped \(3, 2\)"):
        sample(walk_clip(2), skeleton.rest_pose, [0.0, 0.1, 0.2], out=PoseBuffer.empty(2, 2))
    with pytest.raises(InvalidInputError, match=r"out must be a MatrixBuffer for batch \(3,\) and 2 joints"):
        model_from_pose(skeleton, skeleton.rest_pose.broadcast_to((3,)), out=MatrixBuffer.empty(4, 2))
    with pytest.raises(InvalidInputError, match=r"pose must be a single-layer PoseBuffer"):
        model_from_pose(skeleton, PoseBuffer.empty(3, 2, layers=2))
    with pytest.raises(SkeletonMismatchError, match=r"pose has 3 joints but the buffer has 2"):
        PoseBuffer.empty(1, 2).assign(Pose.identity(3))


# --- subtree recomputation (from_joint) --------------------------------------------------------------------


@given(skeletons(min_joints=2), st.integers(0, 2**32 - 1), st.data())
def test_from_joint_recomputes_exactly_the_subtree(skeleton: Skeleton, seed: int, data: st.DataObject) -> None:
    """After changing joint ``j``'s local transform, recomputing from ``j`` equals a full recomputation."""
    rng = np.random.default_rng(seed)
    joint = data.draw(st.integers(0, skeleton.num_joints - 1))
    before = random_pose(skeleton, rng, (3,))
    after = before.copy()
    after.rotations[:, joint] = random_pose(skeleton, rng, (3,)).rotations[:, joint]
    after.translations[:, joint] += 0.5
    expected = reference_model(skeleton, after)
    inside = np.zeros(skeleton.num_joints, dtype=bool)
    inside[skeleton.subtree(joint)] = True
    for out in (model_from_pose(skeleton, before), MatrixBuffer.from_array(model_from_pose(skeleton, before))):
        kept = out.copy() if isinstance(out, np.ndarray) else out.to_array()
        result = model_from_pose(skeleton, after, out=out, from_joint=joint)
        array = result if isinstance(result, np.ndarray) else result.to_array()
        np.testing.assert_allclose(array, expected, atol=1e-12, rtol=1e-12)
        np.testing.assert_array_equal(array[:, ~inside], kept[:, ~inside])  # nobody else was touched
    local = after.matrices()
    out = local_to_model(skeleton, before.matrices())
    np.testing.assert_allclose(
        local_to_model(skeleton, local, out=out, from_joint=joint), expected, atol=1e-12, rtol=1e-12
    )


def test_from_joint_needs_out_and_a_valid_joint() -> None:
    skeleton = Skeleton(["a", "b"], [-1, 0])
    pose = skeleton.rest_pose
    with pytest.raises(InvalidInputError, match=r"from_joint needs out="):
        model_from_pose(skeleton, pose, from_joint=1)
    with pytest.raises(SkeletonMismatchError, match=r"from_joint = 2 is out of range"):
        model_from_pose(skeleton, pose, out=np.zeros((2, 4, 4)), from_joint=2)


def test_subtree_plans_are_computed_once_on_the_skeleton() -> None:
    skeleton = Skeleton(["a", "b", "c", "d"], [-1, 0, 1, 0])
    assert skeleton.subtree_plan(1) is skeleton.subtree_plan(1)
    joints, levels = skeleton.subtree_plan(1)
    assert joints == slice(1, 3)
    assert len(levels) == 2
    assert skeleton.plan is skeleton.plan
    assert len(skeleton.plan) == 2


def test_a_clip_is_compiled_once() -> None:
    clip = walk_clip(2)
    assert compiled(clip) is compiled(clip)
    assert compiled_channel(clip.channels[0]) is compiled_channel(clip.channels[0])


# --- the workspace --------------------------------------------------------------------------------------------


def test_workspace_arrays_never_overlap_and_scopes_give_memory_back() -> None:
    ws = Workspace()
    with ws.scope():
        a = ws.empty((100,))
        with ws.scope():
            b = ws.empty((3, 7))
            c = ws.empty((50,))
            assert not np.shares_memory(b, c)
            assert not np.shares_memory(a, b)
            assert not np.shares_memory(a, c)
        d = ws.empty((10,))
        assert not np.shares_memory(a, d)
        assert np.shares_memory(d, b)  # b's memory was given back and is reused
    held = ws.nbytes
    for _ in range(3):
        with ws.scope():
            ws.empty((100,))
            ws.empty((50,))
    assert ws.nbytes == held  # nothing allocated once the peak was reached


def test_jobs_reuse_a_workspace_without_allocating_again() -> None:
    skeleton = Skeleton(["a", "b", "c"], [-1, 0, 1])
    clip = walk_clip(3)
    ws = Workspace()
    pose = PoseBuffer.empty(50, 3)
    model = MatrixBuffer.empty(50, 3)
    times = np.linspace(0.0, 1.0, 50)
    sample(clip, skeleton.rest_pose, times, out=pose, workspace=ws)
    model_from_pose(skeleton, pose, out=model, workspace=ws)
    held = ws.nbytes
    for _ in range(3):
        sample(clip, skeleton.rest_pose, times, out=pose, workspace=ws)
        model_from_pose(skeleton, pose, out=model, workspace=ws)
    assert ws.nbytes == held
    with pytest.raises(InvalidInputError, match=r"workspace must be a Workspace or None, got dict"):
        sample(clip, skeleton.rest_pose, times, workspace={})  # type: ignore[arg-type]


# --- trusted() is a context variable ---------------------------------------------------------------------------


def test_trusted_holds_for_the_current_thread_only() -> None:
    inside, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def trusting() -> None:
        with trusted():
            inside.set()
            release.wait(5.0)

    worker = threading.Thread(target=trusting)
    worker.start()
    inside.wait(5.0)
    seen.append(validating())  # the worker is inside trusted(): this thread still validates
    release.set()
    worker.join()
    assert seen == [True]
    with trusted():
        assert not validating()
        other: list[bool] = []
        thread = threading.Thread(target=lambda: other.append(validating()))
        thread.start()
        thread.join()
        assert other == [True]  # a new thread starts validating
    assert validating()
