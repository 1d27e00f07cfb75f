"""Morph targets and the runtime Scene's own checks, against per-vertex loops (tests/reference.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.anim import Skeleton
from engine.anim.mesh import MeshData
from engine.anim.morph import morph_vertices
from engine.anim.scene import MeshInstance, Scene, SceneSkin, instance_vertices
from engine.anim.skinning import skin_vertices, skin_vertices_dq
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import matrix_from_trs
from tests.reference import skin_vertices_dq_loop, skin_vertices_loop


def morphed_mesh(rng: np.random.Generator, vertices: int = 7, targets: int = 3, joints: int = 4) -> MeshData:
    normals = rng.normal(size=(vertices, 3))
    weights = rng.uniform(0.1, 1.0, (vertices, 4))
    return MeshData(
        positions=rng.uniform(-1, 1, (vertices, 3)),
        normals=normals / np.linalg.norm(normals, axis=1, keepdims=True),
        joints=rng.integers(0, joints, (vertices, 4)),
        weights=weights / weights.sum(axis=1, keepdims=True),
        morph_positions=rng.normal(size=(targets, vertices, 3)),
        morph_normals=0.3 * rng.normal(size=(targets, vertices, 3)),
    )


def morph_loop(mesh: MeshData, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One vertex and one target at a time: ``p + Σ_t w_t Δp_t``, ``normalize(n + Σ_t w_t Δn_t)``."""
    positions = np.array(mesh.positions, dtype=float)
    normals = np.array(mesh.normals, dtype=float)
    for v in range(mesh.num_vertices):
        for t in range(mesh.num_targets):
            positions[v] += weights[t] * mesh.morph_positions[t, v]
            normals[v] += weights[t] * mesh.morph_normals[t, v]
        normals[v] /= np.linalg.norm(normals[v])
    return positions, normals


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=20)
def test_morph_vertices_equals_the_per_vertex_sum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mesh = morphed_mesh(rng)
    weights = rng.uniform(-0.5, 1.5, (5, mesh.num_targets))
    positions, normals = morph_vertices(mesh, weights)
    for c in range(5):
        expected_positions, expected_normals = morph_loop(mesh, weights[c])
        np.testing.assert_allclose(positions[c], expected_positions, atol=1e-12)
        np.testing.assert_allclose(normals[c], expected_normals, atol=1e-12)


def test_zero_weights_and_no_targets_give_the_base_shape(rng: np.random.Generator) -> None:
    mesh = morphed_mesh(rng)
    positions, normals = morph_vertices(mesh, np.zeros(mesh.num_targets))
    np.testing.assert_array_equal(positions, mesh.positions)
    np.testing.assert_allclose(normals, mesh.normals, atol=1e-15)
    plain = MeshData(positions=mesh.positions)
    positions, normals = morph_vertices(plain, np.zeros((2, 0)))
    assert positions.shape == (2, mesh.num_vertices, 3)
    assert normals is None


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_morph_then_skin_equals_skinning_the_morphed_mesh_vertex_by_vertex(
    rng: np.random.Generator, method: str
) -> None:
    """glTF: morph first (bind space), then skin."""
    mesh = morphed_mesh(rng)
    weights = rng.uniform(0, 1, (3, mesh.num_targets))
    quats = rng.normal(size=(3, 4, 4))
    quats /= np.linalg.norm(quats, axis=-1, keepdims=True)
    translations = rng.uniform(-1, 1, (3, 4, 3))
    palettes = matrix_from_trs(translations, quats, np.ones(3))
    positions, normals = morph_vertices(mesh, weights)
    skin = skin_vertices if method == "lbs" else skin_vertices_dq
    skinned, skinned_normals = skin(mesh, palettes, positions=positions, normals=normals)
    for c in range(3):
        if method == "lbs":
            expected, expected_normals = skin_vertices_loop(
                palettes[c], positions[c], normals[c], mesh.joints, mesh.weights
            )
            np.testing.assert_allclose(skinned_normals[c], expected_normals, atol=1e-10)
        else:
            expected = skin_vertices_dq_loop(quats[c], translations[c], positions[c], mesh.joints, mesh.weights)
        np.testing.assert_allclose(skinned[c], expected, atol=1e-10)


def test_meshdata_checks_morph_targets_and_modes(rng: np.random.Generator) -> None:
    positions = rng.normal(size=(4, 3))
    with pytest.raises(InvalidInputError, match=r"morph_positions must have shape \(T ≥ 1, 4, 3\), got \(2, 3, 3\)"):
        MeshData(positions, morph_positions=np.zeros((2, 3, 3)))
    with pytest.raises(InvalidInputError, match="morph_normals need morph_positions"):
        MeshData(positions, morph_normals=np.zeros((2, 4, 3)))
    with pytest.raises(InvalidInputError, match=r"morph_normals must have the shape of morph_positions \(2, 4, 3\)"):
        MeshData(positions, morph_positions=np.zeros((2, 4, 3)), morph_normals=np.zeros((1, 4, 3)))
    with pytest.raises(InvalidInputError, match="mode must be one of"):
        MeshData(positions, mode="TRIANGLE_FAN")
    with pytest.raises(InvalidInputError, match=r"indices of a LINES mesh must be a flat integer array of 2·E"):
        MeshData(positions, indices=[0, 1, 2], mode="LINES")
    lines = MeshData(positions, indices=[0, 1, 1, 2, 2, 3], mode="LINES")
    assert (lines.num_elements, MeshData(positions, mode="POINTS").num_elements) == (3, 4)
    with pytest.raises(InvalidInputError, match=r"weights must have shape \(\.\.\., 2\)"):
        morph_vertices(MeshData(positions, morph_positions=np.zeros((2, 4, 3))), np.zeros(3))


def test_scene_checks_its_parts(rng: np.random.Generator) -> None:
    hierarchy = Skeleton(["root", "a", "b"], [-1, 0, 1])
    skinned = MeshData(rng.normal(size=(3, 3)), joints=np.zeros((3, 4), int), weights=np.tile([1.0, 0, 0, 0], (3, 1)))
    rigid = MeshData(rng.normal(size=(3, 3)), morph_positions=np.ones((1, 3, 3)))
    skin = SceneSkin("s", np.array([1, 2]), np.tile(np.eye(4), (2, 1, 1)))
    with pytest.raises(InvalidInputError, match=r"primitives\[0\] \(''\) has 1 morph targets but the instance has 0"):
        MeshInstance(0, None, (rigid,))
    with pytest.raises(InvalidInputError, match=r"is skinned but the instance's skin is None"):
        MeshInstance(0, None, (skinned,))
    with pytest.raises(InvalidInputError, match=r"instances\[0\].skin = 1 but the scene has 1 skins"):
        Scene(hierarchy, (skin,), (MeshInstance(2, 1, (skinned,)),))
    with pytest.raises(InvalidInputError, match=r"instances 0 and 1 share node 2"):
        Scene(hierarchy, (skin,), (MeshInstance(2, 0, (skinned,)), MeshInstance(2, None, ())))
    with pytest.raises(InvalidInputError, match=r"skins\[0\].joints must be hierarchy indices below 3"):
        Scene(hierarchy, (SceneSkin("s", np.array([3]), np.eye(4)[None]),), ())
    far = MeshData(rng.normal(size=(3, 3)), joints=np.full((3, 4), 2), weights=np.tile([1.0, 0, 0, 0], (3, 1)))
    with pytest.raises(SkeletonMismatchError, match=r"instances\[0\] uses joint 2 but skin 0 has 2"):
        Scene(hierarchy, (skin,), (MeshInstance(2, 0, (far,)),))


def test_rigid_instance_follows_its_node_and_normals_use_the_inverse_transpose(rng: np.random.Generator) -> None:
    hierarchy = Skeleton(
        ["root", "part"], [-1, 0], rest_translations=[[0, 0, 0], [1, 2, 3]], rest_scales=[[1, 1, 1], [2, 1, 1]]
    )
    normals = rng.normal(size=(3, 3))
    mesh = MeshData(rng.normal(size=(3, 3)), normals=normals / np.linalg.norm(normals, axis=1, keepdims=True))
    scene = Scene(hierarchy, (), (MeshInstance(1, None, (mesh,)),))
    frame = scene.rest_frame()
    positions, turned = instance_vertices(scene, frame, 0, 0)
    np.testing.assert_allclose(positions, mesh.positions * [2, 1, 1] + [1, 2, 3], atol=1e-12)
    expected = mesh.normals * [0.5, 1, 1]  # inverse transpose of diag(2, 1, 1)
    np.testing.assert_allclose(turned, expected / np.linalg.norm(expected, axis=1, keepdims=True), atol=1e-12)
