"""local_to_model / model_from_pose against the recursive per-joint oracle."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.anim import Pose, Skeleton, local_to_model, model_from_pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from tests.reference import local_to_model_recursive, trs_matrix
from tests.strategies import skeletons


def random_pose(skeleton: Skeleton, rng: np.random.Generator, batch: tuple[int, ...] = ()) -> Pose:
    shape = (*batch, skeleton.num_joints)
    q = rng.normal(size=(*shape, 4))
    scales = rng.uniform(0.5, 2.0, (*shape, 3)) * rng.choice([-1.0, 1.0], (*shape, 3))
    return Pose(rng.normal(size=(*shape, 3)), q / np.linalg.norm(q, axis=-1, keepdims=True), scales)


def reference_model(skeleton: Skeleton, pose: Pose) -> np.ndarray:
    """Per character, per joint: T·R·S written out, then composed by recursion."""
    flat = pose.translations.reshape(-1, skeleton.num_joints, 3)
    out = []
    for c in range(flat.shape[0]):
        local = np.stack(
            [
                trs_matrix(t, r, s)
                for t, r, s in zip(
                    flat[c],
                    pose.rotations.reshape(flat.shape[0], -1, 4)[c],
                    pose.scales.reshape(flat.shape[0], -1, 3)[c],
                    strict=True,
                )
            ]
        )
        out.append(local_to_model_recursive(skeleton.parents, local))
    return np.stack(out).reshape(*pose.shape, 4, 4)


def random_valid_order(parents: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random permutation ``new -> old`` that still lists every parent before its children."""
    placed: list[int] = []
    ready = [j for j in range(len(parents)) if parents[j] < 0]
    while ready:
        j = ready.pop(int(rng.integers(len(ready))))
        placed.append(j)
        ready.extend(int(c) for c in np.nonzero(parents == j)[0])
    return np.array(placed)


@given(skeletons(), st.integers(0, 2**32 - 1))
def test_batched_matches_the_recursive_reference(skeleton: Skeleton, seed: int) -> None:
    rng = np.random.default_rng(seed)
    pose = random_pose(skeleton, rng, (3,))
    expected = reference_model(skeleton, pose)
    np.testing.assert_allclose(local_to_model(skeleton, pose.matrices()), expected, atol=1e-12, rtol=1e-12)
    np.testing.assert_allclose(model_from_pose(skeleton, pose), expected, atol=1e-12, rtol=1e-12)


@given(skeletons(min_joints=2), st.integers(0, 2**32 - 1))
def test_another_parents_first_order_gives_the_same_model_matrices(skeleton: Skeleton, seed: int) -> None:
    rng = np.random.default_rng(seed)
    order = random_valid_order(skeleton.parents, rng)  # new index -> old index
    new_index = np.argsort(order)
    parents = np.where(skeleton.parents[order] < 0, -1, new_index[skeleton.parents[order]])
    reordered = Skeleton([skeleton.names[j] for j in order], parents)
    pose = random_pose(skeleton, rng, (2,))
    moved = Pose(pose.translations[:, order], pose.rotations[:, order], pose.scales[:, order])
    np.testing.assert_allclose(
        model_from_pose(reordered, moved), model_from_pose(skeleton, pose)[:, order], atol=1e-12, rtol=1e-12
    )
    np.testing.assert_allclose(
        local_to_model(reordered, moved.matrices()), local_to_model(skeleton, pose.matrices())[:, order], atol=1e-12
    )


@pytest.mark.parametrize("batch", [(), (1,), (5,), (2, 3)])
def test_model_from_pose_equals_local_to_model_of_the_matrices(
    batch: tuple[int, ...], rng: np.random.Generator
) -> None:
    parents = np.array([-1, 0, 1, 2, 1, 4, 0, 6, 7, -1, 9])
    skeleton = Skeleton([f"j{i}" for i in range(len(parents))], parents)
    pose = random_pose(skeleton, rng, batch)
    model = model_from_pose(skeleton, pose)
    assert model.shape == (*batch, len(parents), 4, 4)
    np.testing.assert_allclose(model, local_to_model(skeleton, pose.matrices()), atol=1e-12, rtol=1e-12)
    np.testing.assert_allclose(model[..., 3, :], np.broadcast_to([0, 0, 0, 1.0], model[..., 3, :].shape), atol=0)


def test_a_chain_of_translations_adds_up() -> None:
    skeleton = Skeleton(["a", "b", "c"], [-1, 0, 1], rest_translations=[[1, 0, 0], [0, 2, 0], [0, 0, 3]])
    model = model_from_pose(skeleton, skeleton.rest_pose)
    np.testing.assert_array_equal(model[:, :3, 3], [[1, 0, 0], [1, 2, 0], [1, 2, 3]])


def test_wrong_joint_counts_are_rejected(rng: np.random.Generator) -> None:
    skeleton = Skeleton(["a", "b"], [-1, 0])
    other = Skeleton(["a", "b", "c"], [-1, 0, 1])
    with pytest.raises(SkeletonMismatchError, match=r"pose has 3 joints but the skeleton has 2"):
        model_from_pose(skeleton, random_pose(other, rng, (4,)))
    with pytest.raises(SkeletonMismatchError, match=r"local must have shape \(\.\.\., 2, 4, 4\).*got \(3, 4, 4\)"):
        local_to_model(skeleton, np.tile(np.eye(4), (3, 1, 1)))


def test_bad_arguments_are_rejected() -> None:
    skeleton = Skeleton(["a"], [-1])
    with pytest.raises(InvalidInputError, match=r"pose must be a Pose or PoseBuffer, got ndarray"):
        model_from_pose(skeleton, np.eye(4))  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"local must have shape \(\.\.\., 4, 4\), got \(1, 3, 3\)"):
        local_to_model(skeleton, np.zeros((1, 3, 3)))
    with pytest.raises(InvalidInputError, match=r"local must be finite"):
        local_to_model(skeleton, np.full((1, 4, 4), np.nan))


def test_projective_local_matrices_use_the_full_product(rng: np.random.Generator) -> None:
    parents = np.array([-1, 0, 1, 0])
    skeleton = Skeleton(list("abcd"), parents)
    local = rng.normal(size=(2, 4, 4, 4))  # last rows not (0, 0, 0, 1)
    got = local_to_model(skeleton, local)
    for c in range(2):
        np.testing.assert_allclose(got[c], local_to_model_recursive(parents, local[c]), atol=1e-12, rtol=1e-12)


def test_out_buffers_are_filled_and_returned(rng: np.random.Generator) -> None:
    skeleton = Skeleton(["a", "b", "c"], [-1, 0, 1])
    pose = random_pose(skeleton, rng, (4,))
    fresh = model_from_pose(skeleton, pose)
    for out in (np.empty((4, 3, 4, 4)), np.empty_like(fresh)):  # C order, or the batch-innermost order
        assert model_from_pose(skeleton, pose, out=out) is out
        np.testing.assert_array_equal(out, fresh)
        assert local_to_model(skeleton, pose.matrices(), out=out) is out
        np.testing.assert_allclose(out, fresh, atol=1e-12)


def test_results_do_not_depend_on_the_input_layout(rng: np.random.Generator) -> None:
    skeleton = Skeleton(["a", "b", "c", "d"], [-1, 0, 1, 1])
    pose = random_pose(skeleton, rng, (5,))
    fortran = Pose(*(np.asfortranarray(a) for a in (pose.translations, pose.rotations, pose.scales)))
    np.testing.assert_array_equal(model_from_pose(skeleton, fortran), model_from_pose(skeleton, pose))
    local = pose.matrices()
    np.testing.assert_array_equal(local_to_model(skeleton, np.asfortranarray(local)), local_to_model(skeleton, local))


def test_bad_out_buffers_are_rejected(rng: np.random.Generator) -> None:
    skeleton = Skeleton(["a", "b"], [-1, 0])
    pose = random_pose(skeleton, rng, (3,))
    with pytest.raises(
        InvalidInputError,
        match=r"out must be a float64 array shaped \(3, 2, 4, 4\) or a MatrixBuffer, got float64 \(2, 2, 4, 4\)",
    ):
        model_from_pose(skeleton, pose, out=np.empty((2, 2, 4, 4)))
    with pytest.raises(InvalidInputError, match=r"out must be a float64 array shaped .* got float32"):
        model_from_pose(skeleton, pose, out=np.empty((3, 2, 4, 4), dtype=np.float32))
    with pytest.raises(InvalidInputError, match=r"out must be a float64 array shaped .* got list"):
        model_from_pose(skeleton, pose, out=[])  # type: ignore[arg-type]
    grid = random_pose(skeleton, rng, (2, 3))
    strided = np.empty((3, 2, 2, 4, 4)).transpose(1, 0, 2, 3, 4)  # (2, 3) batch axes that cannot merge
    with pytest.raises(InvalidInputError, match=r"out must be reshapeable to \(6, 2, \.\.\.\) without a copy"):
        model_from_pose(skeleton, grid, out=strided)
    frozen = np.empty((3, 2, 4, 4))
    frozen.flags.writeable = False
    with pytest.raises(InvalidInputError, match=r"out must be writable"):
        model_from_pose(skeleton, pose, out=frozen)
