"""Skinning palette, glTF joint matrices and the CPU skins against per-vertex reference loops."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim import (
    Pose,
    Skeleton,
    joint_matrices,
    model_from_pose,
    skin_vertices,
    skin_vertices_dq,
    skinning_palette,
)
from engine.anim.mesh import MeshData
from engine.errors import InvalidInputError, SkeletonMismatchError
from tests.reference import local_to_model_recursive, skin_vertices_dq_loop, skin_vertices_loop, trs_matrix


def random_affine(rng: np.random.Generator, count: int, scale: bool = True) -> np.ndarray:
    m = np.tile(np.eye(4), (count, 1, 1))
    r = Rotation.random(count, random_state=rng).as_matrix()
    s = rng.uniform(0.5, 2.0, (count, 1, 3)) if scale else np.ones((count, 1, 3))
    m[:, :3, :3] = r * s
    m[:, :3, 3] = rng.normal(size=(count, 3))
    return m


def two_set_mesh(rng: np.random.Generator, vertices: int = 40, joints: int = 6) -> MeshData:
    """Eight influences per vertex (JOINTS_0/1, WEIGHTS_0/1), sums not 1, two unweighted vertices."""
    weights = rng.uniform(0, 1, (vertices, 8)) * (rng.random((vertices, 8)) < 0.7)
    weights[:, :4] *= 0.9  # sums well below 1 happen in real files
    weights[[3, 17]] = 0.0
    return MeshData(
        rng.normal(size=(vertices, 3)),
        normals=rng.normal(size=(vertices, 3)),
        joints=rng.integers(0, joints, (vertices, 8)),
        weights=weights,
    )


def bind_skeleton(rng: np.random.Generator) -> Skeleton:
    """Five joints whose inverse bind matrices invert their rest model matrices."""
    parents = np.array([-1, 0, 1, 0, 3])
    t = rng.normal(size=(5, 3))
    r = Rotation.random(5, random_state=rng).as_quat()
    s = rng.uniform(0.5, 2, (5, 3))
    local = np.stack([trs_matrix(*trs) for trs in zip(t, r, s, strict=True)])
    ibm = np.linalg.inv(local_to_model_recursive(parents, local))
    return Skeleton([f"j{i}" for i in range(5)], parents, t, r, s, ibm)


# --- palette and joint matrices ----------------------------------------------------------------


def test_palette_is_model_times_inverse_bind(rng: np.random.Generator) -> None:
    skeleton = bind_skeleton(rng)
    model = random_affine(rng, 3 * 5).reshape(3, 5, 4, 4)
    palette = skinning_palette(skeleton, model)
    for c in range(3):
        for j in range(5):
            np.testing.assert_allclose(palette[c, j], model[c, j] @ skeleton.inverse_bind_matrices[j], atol=1e-12)


def test_palette_of_the_bind_pose_is_identity(rng: np.random.Generator) -> None:
    skeleton = bind_skeleton(rng)
    palette = skinning_palette(skeleton, model_from_pose(skeleton, skeleton.rest_pose))
    np.testing.assert_allclose(palette, np.tile(np.eye(4), (5, 1, 1)), atol=1e-12)


def test_joint_matrices_follow_the_gltf_formula(rng: np.random.Generator) -> None:
    world = random_affine(rng, 2 * 4).reshape(2, 4, 4, 4)
    mesh_node = random_affine(rng, 2)
    ibm = random_affine(rng, 4)
    got = joint_matrices(world, mesh_node, ibm)
    for c in range(2):
        for j in range(4):
            np.testing.assert_allclose(got[c, j], np.linalg.inv(mesh_node[c]) @ world[c, j] @ ibm[j], atol=1e-12)
    # a single mesh node broadcasts over characters
    np.testing.assert_allclose(
        joint_matrices(world, mesh_node[0], ibm)[1], np.linalg.inv(mesh_node[0]) @ world[1] @ ibm
    )


# --- linear blend skinning -----------------------------------------------------------------------


def test_linear_skinning_matches_the_per_vertex_loop_with_two_influence_sets(rng: np.random.Generator) -> None:
    mesh = two_set_mesh(rng)
    palette = random_affine(rng, 3 * 6).reshape(3, 6, 4, 4)
    palette[1, 2, :3, 0] *= -1  # a mirrored joint: normals must still face out
    positions, normals = skin_vertices(mesh, palette)
    assert positions.shape == normals.shape == (3, 40, 3)  # type: ignore[union-attr]
    for c in range(3):
        ref_p, ref_n = skin_vertices_loop(palette[c], mesh.positions, mesh.normals, mesh.joints, mesh.weights)
        np.testing.assert_allclose(positions[c], ref_p, atol=1e-12)
        np.testing.assert_allclose(normals[c], ref_n, atol=1e-12)  # type: ignore[index]


def test_unweighted_vertices_stay_at_their_bind_position(rng: np.random.Generator) -> None:
    mesh = two_set_mesh(rng)
    positions, normals = skin_vertices(mesh, random_affine(rng, 6))
    np.testing.assert_array_equal(positions[[3, 17]], mesh.positions[[3, 17]])
    assert normals is not None
    unit = mesh.normals[[3, 17]] / np.linalg.norm(mesh.normals[[3, 17]], axis=-1, keepdims=True)  # type: ignore[index]
    np.testing.assert_allclose(normals[[3, 17]], unit, atol=1e-15)


def test_weights_are_l1_normalised() -> None:
    palette = np.tile(np.eye(4), (2, 1, 1))
    palette[1, :3, 3] = [2.0, 0.0, 0.0]
    mesh = MeshData(np.zeros((1, 3)), joints=[[0, 1, 0, 0]], weights=[[0.2, 0.2, 0.0, 0.0]])
    positions, normals = skin_vertices(mesh, palette)
    np.testing.assert_allclose(positions, [[1.0, 0.0, 0.0]], atol=1e-15)
    assert normals is None


def test_a_flattening_joint_keeps_the_normal_of_its_plane() -> None:
    palette = np.diag([1.0, 1.0, 0.0, 1.0])[None]  # squashes z: the surface becomes the z = 0 plane
    mesh = MeshData(np.zeros((1, 3)), normals=[[0.3, 0.0, 0.8]], joints=[[0, 0, 0, 0]], weights=[[1.0, 0, 0, 0]])
    _, normals = skin_vertices(mesh, palette)
    np.testing.assert_allclose(normals, [[0.0, 0.0, 1.0]], atol=1e-15)


# --- dual-quaternion skinning --------------------------------------------------------------------


def test_dual_quaternion_skinning_matches_the_per_vertex_loop(rng: np.random.Generator) -> None:
    mesh = two_set_mesh(rng)
    rotations = Rotation.random(6, random_state=rng).as_quat()
    translations = rng.normal(size=(6, 3))
    palette = np.tile(np.eye(4), (6, 1, 1))
    palette[:, :3, :3] = Rotation.from_quat(rotations).as_matrix()
    palette[:, :3, 3] = translations
    positions, normals = skin_vertices_dq(mesh, palette)
    expected = skin_vertices_dq_loop(rotations, translations, mesh.positions, mesh.joints, mesh.weights)
    np.testing.assert_allclose(positions, expected, atol=1e-12)
    assert normals is not None
    np.testing.assert_allclose(np.linalg.norm(normals, axis=-1), 1.0, atol=1e-12)


def test_dual_quaternions_keep_volume_where_linear_blending_collapses() -> None:
    # Two joints along x, the second twisted 180° about x; a vertex half-way weighted 50/50.
    palette = np.tile(np.eye(4), (2, 1, 1))
    palette[1, :3, :3] = Rotation.from_rotvec([np.pi, 0, 0]).as_matrix()
    mesh = MeshData([[0.0, 1.0, 0.0]], joints=[[0, 1, 0, 0]], weights=[[0.5, 0.5, 0, 0]])
    linear, _ = skin_vertices(mesh, palette)
    dual, _ = skin_vertices_dq(mesh, palette)
    np.testing.assert_allclose(linear, [[0.0, 0.0, 0.0]], atol=1e-15)  # the candy wrapper
    np.testing.assert_allclose(np.linalg.norm(dual[0, 1:]), 1.0, atol=1e-12)


def test_dual_quaternions_with_scaled_or_mirrored_joints_match_the_matrix_for_one_influence(
    rng: np.random.Generator,
) -> None:
    palette = random_affine(rng, 3)
    palette[2, :3, 1] *= -1
    joints = [[0, 0, 0, 0], [1, 0, 0, 0], [2, 0, 0, 0]]
    weights = [[1.0, 0, 0, 0]] * 3
    mesh = MeshData(rng.normal(size=(3, 3)), normals=rng.normal(size=(3, 3)), joints=joints, weights=weights)
    dq_positions, dq_normals = skin_vertices_dq(mesh, palette)
    lbs_positions, lbs_normals = skin_vertices(mesh, palette)
    np.testing.assert_allclose(dq_positions, lbs_positions, atol=1e-12)
    np.testing.assert_allclose(dq_normals, lbs_normals, atol=1e-12)  # type: ignore[arg-type]


# --- bad input -----------------------------------------------------------------------------------


def test_skinning_errors_name_the_problem(rng: np.random.Generator) -> None:
    mesh = two_set_mesh(rng)
    for skin in (skin_vertices, skin_vertices_dq):
        with pytest.raises(SkeletonMismatchError, match=r"uses joint index 5 but the palette has 3 joints"):
            skin(mesh, random_affine(rng, 3))
        with pytest.raises(InvalidInputError, match=r"has no JOINTS_n/WEIGHTS_n influences"):
            skin(MeshData(np.zeros((2, 3)), name="rock"), random_affine(rng, 6))
        with pytest.raises(InvalidInputError, match=r"mesh must be a MeshData, got dict"):
            skin({}, random_affine(rng, 6))  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match=r"palette must have shape \(\.\.\., J, 4, 4\), got \(4, 4\)"):
            skin(mesh, np.eye(4))
        with pytest.raises(InvalidInputError, match=r"palette must be finite"):
            skin(mesh, np.full((6, 4, 4), np.nan))
    flat = random_affine(rng, 6)
    flat[2, :3, 1] = 0.0
    with pytest.raises(InvalidInputError, match=r"zero-length basis column"):
        skin_vertices_dq(mesh, flat)


def test_palette_and_joint_matrix_errors(rng: np.random.Generator) -> None:
    skeleton = bind_skeleton(rng)
    with pytest.raises(SkeletonMismatchError, match=r"model must have shape \(\.\.\., 5, 4, 4\), got \(2, 4, 4, 4\)"):
        skinning_palette(skeleton, random_affine(rng, 8).reshape(2, 4, 4, 4))
    with pytest.raises(
        SkeletonMismatchError, match=r"world_joints must have shape \(\.\.\., 3, 4, 4\), got \(4, 4, 4\)"
    ):
        joint_matrices(random_affine(rng, 4), np.eye(4), random_affine(rng, 3))
    with pytest.raises(InvalidInputError, match=r"inverse_bind must have shape \(J, 4, 4\), got \(4, 4\)"):
        joint_matrices(random_affine(rng, 4), np.eye(4), np.eye(4))
    with pytest.raises(InvalidInputError, match=r"world_mesh_node must have shape \(\.\.\., 4, 4\), got \(3,\)"):
        joint_matrices(random_affine(rng, 4), np.zeros(3), random_affine(rng, 4))


def test_skinning_a_posed_skeleton_end_to_end(rng: np.random.Generator) -> None:
    skeleton = bind_skeleton(rng)
    mesh = two_set_mesh(rng, joints=5)
    rest = skeleton.rest_pose
    pose = Pose(rest.translations, Rotation.random(5, random_state=rng).as_quat(), rest.scales)
    positions, _ = skin_vertices(mesh, skinning_palette(skeleton, model_from_pose(skeleton, pose)))
    bind_positions, _ = skin_vertices(mesh, skinning_palette(skeleton, model_from_pose(skeleton, rest)))
    np.testing.assert_allclose(bind_positions, mesh.positions, atol=1e-12)
    assert not np.allclose(positions, mesh.positions)


def test_palette_out_buffer_and_any_model_layout(rng: np.random.Generator) -> None:
    skeleton = bind_skeleton(rng)
    model = random_affine(rng, 2 * 5).reshape(2, 5, 4, 4)
    expected = model @ skeleton.inverse_bind_matrices
    out = np.empty((2, 5, 4, 4))
    assert skinning_palette(skeleton, model, out=out) is out
    np.testing.assert_allclose(out, expected, atol=1e-12)
    np.testing.assert_allclose(skinning_palette(skeleton, np.asfortranarray(model)), expected, atol=1e-12)
    np.testing.assert_allclose(skinning_palette(skeleton, model[0]), expected[0], atol=1e-12)
    with pytest.raises(InvalidInputError, match=r"out must be a float64 array shaped \(2, 5, 4, 4\)"):
        skinning_palette(skeleton, model, out=np.empty((5, 4, 4)))
