"""The whole scene on the GPU: skinned, rigid and morphed meshes, points and lines, many skins.

GPU results (transform feedback, float32) are held to the CPU reference
:func:`engine.anim.scene.instance_vertices` (float64, itself checked against the glTF formulas
and three.js in tests/io/test_scene.py) within 1e-4 of the largest coordinate; rendered pixels
to where the projection of the CPU vertices puts them; the drawn mesh-node count to the file.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.anim import Skeleton, skin_vertices
from engine.anim.mesh import MeshData
from engine.anim.morph import morph_vertices
from engine.anim.scene import MeshInstance, Scene, instance_vertices
from engine.camera import look_at_matrix
from engine.errors import InvalidInputError, OssaWarning, SkeletonMismatchError
from engine.io import load_gltf
from engine.math import matrix_from_trs, perspective, quat_from_axis_angle, transform_points
from engine.render import MorphWeightBuffer, OffscreenTarget, SceneRenderer, SkinnedMesh, vertex_normals
from tests.io.gltf_builder import scene_document
from tests.render.meshes import assert_close_relative, random_mesh, random_palettes

pytestmark = pytest.mark.gl

ASSETS = [
    "khronos/cesium_man.gltf",
    "khronos/rigged_simple.gltf",
    "khronos/interpolation_test.gltf",
    "khronos/box_animated.gltf",
    "fox/glTF-Binary/Fox.glb",
]
SIZE = (96, 72)


@pytest.fixture(scope="module")
def scene_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scene_document().write(tmp_path_factory.mktemp("scene") / "scene.gltf")


def placements(count: int) -> np.ndarray:
    """``(count, 4, 4)`` character placements: turned and moved apart."""
    turns = quat_from_axis_angle([0.0, 1.0, 0.0], np.linspace(0.0, 2.0, count))
    return matrix_from_trs(np.stack([np.arange(count) * 3.0, np.zeros(count), -np.arange(count)], 1), turns, np.ones(3))


def mesh_nodes_in_file(path: Path) -> int:
    """Mesh nodes of the default scene, counted from the JSON (GLB: its JSON chunk)."""
    data = path.read_bytes()
    doc = json.loads(data[20 : 20 + int.from_bytes(data[12:16], "little")] if data[:4] == b"glTF" else data)
    nodes = doc["nodes"]
    stack = list(doc["scenes"][doc.get("scene", 0)]["nodes"])
    count = 0
    while stack:
        node = nodes[stack.pop()]
        count += "mesh" in node
        stack.extend(node.get("children", []))
    return count


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_every_instance_on_the_gpu_equals_the_cpu_reference(ctx, scene_file, method):
    """Skinned with a non-joint node between joints, rigid under a joint and a node, morphed, points, lines."""
    scene = load_gltf(scene_file).scene
    renderer = SceneRenderer(ctx, scene, method=method)
    times = np.array([-0.5, 0.0, 0.4, 1.0, 1.7, 2.0, 3.0])  # one character per time
    worlds = placements(times.size)
    for clip in scene.clips:
        frame = scene.sample(clip, times)
        gpu = renderer.skin(frame, worlds)
        checked = 0
        for i, instance in enumerate(scene.instances):
            for p in range(len(instance.primitives)):
                positions, normals = instance_vertices(scene, frame, i, p, method=method)
                assert_close_relative(gpu[i][p][0], transform_points(worlds[:, None], positions), rel=1e-4)
                if normals is not None:
                    turned = np.einsum("cij,cvj->cvi", worlds[:, :3, :3], normals)  # rigid placements
                    np.testing.assert_allclose(gpu[i][p][1], turned, atol=1e-4)
                checked += 1
        assert checked == 5
    renderer.release()


def test_drawn_mesh_nodes_equal_the_file_and_every_primitive_is_drawn(ctx, scene_file):
    scene = load_gltf(scene_file).scene
    renderer = SceneRenderer(ctx, scene)
    # nodes 0-7 (skin 0 on 2-4, the rigid mesh at 5 and 7), then skin 1's four joints as extra records 8-11
    assert (renderer.records.offsets, renderer.weight_offsets) == ((2, 5, 8, 7), {0: 0, 1: 2, 3: 3})
    view = look_at_matrix([0.0, 2.0, 9.0], [1.0, 1.5, 0.0], [0.0, 1.0, 0.0])
    with OffscreenTarget(ctx, SIZE) as target:
        target.clear()
        renderer.draw(scene.sample("move", np.array([0.5, 1.5])), view, perspective(0.8, 96 / 72, 0.1, 50.0))
    assert renderer.drawn_mesh_nodes == mesh_nodes_in_file(scene_file) == 4
    assert renderer.drawn_primitives == 5
    renderer.release()


@pytest.mark.assets
@pytest.mark.parametrize("relative", ASSETS)
def test_drawn_mesh_nodes_of_the_shared_assets(ctx, shared_assets, relative):
    path = shared_assets / relative
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        scene = load_gltf(path).scene
    renderer = SceneRenderer(ctx, scene)
    frame = scene.sample(next(iter(scene.clips)), np.array([0.3])) if scene.clips else scene.rest_frame((1,))
    with OffscreenTarget(ctx, (32, 32)) as target:
        target.clear()
        renderer.draw(frame, np.eye(4), np.eye(4))
    assert renderer.drawn_mesh_nodes == mesh_nodes_in_file(path)
    renderer.release()


def test_rendered_rigid_and_skinned_parts_sit_where_the_projection_puts_them(ctx, scene_file):
    """The silhouette's box equals the box of the projected CPU vertices of the triangle meshes."""
    scene = load_gltf(scene_file).scene
    renderer = SceneRenderer(ctx, scene)
    view = look_at_matrix([1.0, 2.0, 8.0], [1.0, 1.5, 0.0], [0.0, 1.0, 0.0])
    projection = perspective(0.9, SIZE[0] / SIZE[1], 0.1, 50.0)
    frame = scene.sample("move", np.array([1.3]))
    with OffscreenTarget(ctx, SIZE) as target:
        target.clear((0.0, 0.0, 0.0, 1.0))
        renderer.draw(frame, view, projection, ambient=(1.0, 1.0, 1.0))
        image = target.read()
    points = [
        instance_vertices(scene, frame, i, p)[0][0]
        for i, instance in enumerate(scene.instances)
        for p, mesh in enumerate(instance.primitives)
        if mesh.mode == "TRIANGLES"
    ]
    clip = np.einsum("ij,vj->vi", projection @ view, np.concatenate([np.c_[p, np.ones(len(p))] for p in points]))
    ndc = clip[:, :2] / clip[:, 3:]
    pixels = np.stack(((ndc[:, 0] + 1) / 2 * SIZE[0], (1 - ndc[:, 1]) / 2 * SIZE[1]), axis=-1)
    rows, columns = np.nonzero(image[..., :3].max(axis=-1) > 8)
    np.testing.assert_allclose([columns.min(), rows.min()], pixels.min(axis=0), atol=1.5)
    np.testing.assert_allclose([columns.max() + 1, rows.max() + 1], pixels.max(axis=0), atol=1.5)
    renderer.release()


@pytest.mark.parametrize("targets", [1, 3, 16])
def test_morphed_skinned_mesh_with_its_own_weights_equals_the_cpu(ctx, rng, targets):
    base = random_mesh(rng, 5, sets=2)
    mesh = MeshData(
        base.positions,
        indices=base.indices,
        normals=base.normals,
        joints=base.joints,
        weights=base.weights,
        morph_positions=rng.normal(size=(targets, base.num_vertices, 3)),
        morph_normals=0.2 * rng.normal(size=(targets, base.num_vertices, 3)),
    )
    palettes = random_palettes(rng, 4, 5, "uniform")
    weights = rng.uniform(-0.5, 1.5, (4, targets))
    weights[1] = 0.0  # the shader skips zero weights: one character all zero, one target zero for another
    weights[2, 0] = 0.0
    gpu = SkinnedMesh(ctx, mesh)
    positions, normals = gpu.skin(palettes, morph_weights=weights)
    morphed, morphed_normals = morph_vertices(mesh, weights)
    cpu, cpu_normals = skin_vertices(mesh, palettes, positions=morphed, normals=morphed_normals)
    assert_close_relative(positions, cpu)
    np.testing.assert_allclose(normals, cpu_normals, atol=2e-4)
    base_shape, _ = gpu.skin(palettes)  # no weights: the base shape
    assert_close_relative(base_shape, skin_vertices(mesh, palettes)[0])
    gpu.release()


def test_rigid_mesh_is_skinned_to_one_record_at_its_offset(ctx, rng):
    mesh = MeshData(positions=rng.normal(size=(6, 3)), name="static")
    gpu = SkinnedMesh(ctx, mesh)
    assert gpu.rigid
    records = random_palettes(rng, 2, 3, "nonuniform")
    positions, _ = gpu.skin(records, joint_offset=2)
    assert_close_relative(positions, transform_points(records[:, 2, None], mesh.positions))
    with pytest.raises(SkeletonMismatchError, match=r"uses joint 0 from record 3 on, the palette has 3 joints"):
        gpu.skin(records, joint_offset=3)
    gpu.release()


def test_morph_weight_errors(ctx, rng):
    mesh = MeshData(rng.normal(size=(6, 3)), morph_positions=rng.normal(size=(2, 6, 3)), name="face")
    gpu = SkinnedMesh(ctx, mesh)
    records = random_palettes(rng, 3, 1)
    with pytest.raises(InvalidInputError, match=r"morph_weights must have shape \(3, 2\).*'face'.*got \(3, 1\)"):
        gpu.skin(records, morph_weights=np.zeros((3, 1)))
    shared = MorphWeightBuffer(ctx, 3)
    shared.upload(np.zeros((3, 3)))
    with pytest.raises(InvalidInputError, match=r"weight_offset 2 \+ 2 morph targets exceeds the buffer's 3 weights"):
        gpu.skin(records, morph_weights=shared, weight_offset=2)
    shared.upload(np.zeros((2, 3)))
    with pytest.raises(InvalidInputError, match="the morph weights hold 2 characters but the palette 3"):
        gpu.skin(records, morph_weights=shared)
    with pytest.raises(InvalidInputError, match=r"weights must have shape \(C ≥ 1, 3\), got \(2, 2\)"):
        shared.upload(np.zeros((2, 2)))
    with pytest.raises(InvalidInputError, match=r"weights must be finite in float32"):
        shared.upload(np.full((1, 3), np.inf))
    shared.release()
    gpu.release()


def test_lines_and_points_are_drawn_as_lines_and_points(ctx):
    """A horizontal line and a point, rigid, lit fully: pixels on the line's row and at the point."""
    line = MeshData(np.array([[-0.5, 0.0, 0.0], [0.5, 0.0, 0.0]]), indices=np.array([0, 1]), mode="LINES")
    point = MeshData(np.array([[0.0, 0.5, 0.0]]), mode="POINTS")
    scene = Scene(Skeleton(["a", "b"], [-1, -1]), (), (MeshInstance(0, None, (line,)), MeshInstance(1, None, (point,))))
    renderer = SceneRenderer(ctx, scene)
    with OffscreenTarget(ctx, (32, 32)) as target:
        target.clear((0.0, 0.0, 0.0, 1.0))
        renderer.draw(scene.rest_frame((1,)), np.eye(4), np.eye(4), ambient=(1.0, 1.0, 1.0))
        image = target.read()[..., :3].max(axis=-1)
    lit_rows, lit_columns = np.nonzero(image > 100)
    assert set(lit_rows.tolist()) <= {7, 8, 15, 16}  # y = 0.5 → row 8 from the top; y = 0 → row 16
    assert lit_columns[np.isin(lit_rows, [15, 16])].min() <= 8
    assert lit_columns[np.isin(lit_rows, [15, 16])].max() >= 23
    assert np.isin(lit_rows, [7, 8]).sum() >= 1
    assert renderer.drawn_mesh_nodes == 2
    renderer.release()


def test_normals_of_a_mesh_without_them_and_of_leftover_vertices():
    """Area-weighted normals for triangles; +Y for a vertex on no triangle (the 4th of a non-indexed list)."""
    positions = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [5.0, 5.0, 5.0]])
    np.testing.assert_allclose(vertex_normals(positions, None), [[0, 1, 0]] * 4)
    positions[3] = [0.0, 1.0, 0.0]
    np.testing.assert_allclose(vertex_normals(positions, np.array([0, 1, 3]))[[0, 1, 3]], [[0, 0, 1]] * 3)


def test_a_primitive_with_nothing_to_draw_is_not_counted(ctx):
    """A strip too short for a triangle loads with a warning (empty list); it is kept but not drawn."""
    empty = MeshData(np.zeros((2, 3)), indices=np.zeros(0, dtype=int))
    line = MeshData(np.zeros((2, 3)), indices=np.array([0, 1]), mode="LINES")
    scene = Scene(Skeleton(["a", "b"], [-1, -1]), (), (MeshInstance(0, None, (empty,)), MeshInstance(1, None, (line,))))
    renderer = SceneRenderer(ctx, scene)
    with OffscreenTarget(ctx, (8, 8)) as target:
        target.clear()
        renderer.draw(scene.rest_frame((2,)), np.eye(4), np.eye(4))
    assert (renderer.drawn_mesh_nodes, renderer.drawn_primitives) == (1, 1)
    assert renderer.skin(scene.rest_frame((2,)))[0][0][0].shape == (2, 2, 3)
    renderer.release()
