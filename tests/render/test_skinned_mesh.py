"""GPU skinning against the CPU reference skins, read back with transform feedback."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim.mesh import MeshData
from engine.anim.skinning import skin_vertices, skin_vertices_dq
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import matrix_from_trs, perspective, quat_from_axis_angle, transform_points, trusted
from engine.render import OffscreenTarget, PaletteBuffer, SkinnedMesh, pack_palette
from engine.render.skinned_mesh import RECORD_FLOATS
from tests.render.meshes import (
    assert_close_relative,
    enclosed_volume,
    random_mesh,
    random_palettes,
    translation,
    twist_palette,
    twisted_cylinder,
)

pytestmark = pytest.mark.gl

CPU_SKIN = {"lbs": skin_vertices, "dqs": skin_vertices_dq}


def world_normals(worlds: np.ndarray, normals: np.ndarray) -> np.ndarray:
    """Normals through the inverse transpose of each world matrix (test-side, plain numpy)."""
    inverse_transpose = np.swapaxes(np.linalg.inv(worlds[:, :3, :3]), -1, -2)
    n = np.einsum("cij,cvj->cvi", inverse_transpose, normals)
    return n / np.linalg.norm(n, axis=-1, keepdims=True)


@pytest.mark.parametrize("method", ["lbs", "dqs"])
@pytest.mark.parametrize("sets", [1, 2])
@pytest.mark.parametrize("scale", ["rigid", "uniform", "nonuniform"])
def test_gpu_skin_matches_cpu_reference(ctx, rng, method, sets, scale):
    joints, characters = 7, 3
    mesh = random_mesh(rng, joints, sets)
    palettes = random_palettes(rng, characters, joints, scale)
    worlds = matrix_from_trs(
        rng.uniform(-5, 5, (characters, 3)), quat_from_axis_angle([0, 1, 0], [0.3, 1.0, 2.0]), np.ones(3)
    )
    gpu = SkinnedMesh(ctx, mesh)
    positions, normals = gpu.skin(palettes, worlds, method=method)
    cpu_positions, cpu_normals = CPU_SKIN[method](mesh, palettes)
    assert_close_relative(positions, transform_points(worlds[:, None], cpu_positions))
    np.testing.assert_allclose(normals, world_normals(worlds, cpu_normals), atol=2e-4)
    gpu.release()


def test_palette_buffer_shared_by_meshes_and_reused_across_frames(ctx, rng):
    mesh_a, mesh_b = random_mesh(rng, 5), random_mesh(rng, 5, sets=2)
    palette = PaletteBuffer(ctx, 5, method="dqs")
    a, b = SkinnedMesh(ctx, mesh_a), SkinnedMesh(ctx, mesh_b)
    for frame in range(2):
        palettes = random_palettes(rng, 2 + frame, 5, "uniform")
        palette.upload(palettes)
        assert palette.characters == 2 + frame
        for gpu, mesh in ((a, mesh_a), (b, mesh_b)):
            assert_close_relative(gpu.skin(palette)[0], skin_vertices_dq(mesh, palettes)[0])
    for resource in (a, b, palette):
        resource.release()


def test_palette_buffer_grows_past_its_first_size(ctx, rng):
    mesh = random_mesh(rng, 4)
    gpu = SkinnedMesh(ctx, mesh)
    palette = PaletteBuffer(ctx, 4)
    palette.upload(random_palettes(rng, 1, 4))
    palettes = random_palettes(rng, 40, 4)
    palette.upload(palettes)
    assert_close_relative(gpu.skin(palette)[0], skin_vertices(mesh, palettes)[0])
    gpu.release()
    palette.release()


def test_column_major_upload_of_a_single_translation(ctx):
    """One vertex, one joint translating by (1, 2, 3): a row-major upload would leave it in place."""
    mesh = MeshData(
        positions=[[0.5, 0.0, 0.0]], normals=[[0.0, 0.0, 1.0]], joints=[[0, 0, 0, 0]], weights=[[1, 0, 0, 0]]
    )
    gpu = SkinnedMesh(ctx, mesh)
    for method in ("lbs", "dqs"):
        positions, normals = gpu.skin(translation((1.0, 2.0, 3.0))[None, None], method=method)
        np.testing.assert_allclose(positions, [[[1.5, 2.0, 3.0]]], atol=1e-6)
        np.testing.assert_allclose(normals, [[[0.0, 0.0, 1.0]]], atol=1e-6)
    gpu.release()


def test_dqs_equals_lbs_on_rigid_single_influence_vertices(ctx, rng):
    joints = 6
    base = random_mesh(rng, joints, vertices=80)
    weights = np.zeros((80, 4))
    weights[:, 0] = 1.0
    mesh = MeshData(positions=base.positions, normals=base.normals, joints=base.joints, weights=weights)
    palettes = random_palettes(rng, 2, joints, "uniform")
    gpu = SkinnedMesh(ctx, mesh)
    lbs, dqs = gpu.skin(palettes, method="lbs"), gpu.skin(palettes, method="dqs")
    assert_close_relative(dqs[0], lbs[0], rel=1e-6)
    np.testing.assert_allclose(dqs[1], lbs[1], atol=1e-6)
    gpu.release()


def test_unweighted_vertices_keep_their_bind_position(ctx, rng):
    base = random_mesh(rng, 3, vertices=10)
    weights = base.weights.copy()
    weights[:4] = 0.0
    mesh = MeshData(positions=base.positions, normals=base.normals, joints=base.joints, weights=weights)
    palettes = random_palettes(rng, 1, 3)
    gpu = SkinnedMesh(ctx, mesh)
    for method in ("lbs", "dqs"):
        positions, _ = gpu.skin(palettes, method=method)
        np.testing.assert_allclose(positions[0, :4], mesh.positions[:4], atol=1e-6)
        assert_close_relative(positions, CPU_SKIN[method](mesh, palettes)[0])
    gpu.release()


def test_unnormalised_weights_are_normalised_like_the_cpu_reference(ctx, rng):
    base = random_mesh(rng, 4, vertices=20)
    mesh = MeshData(positions=base.positions, normals=base.normals, joints=base.joints, weights=base.weights * 0.97)
    palettes = random_palettes(rng, 1, 4)
    gpu = SkinnedMesh(ctx, mesh)
    assert_close_relative(gpu.skin(palettes)[0], skin_vertices(mesh, palettes)[0])
    gpu.release()


def test_missing_normals_are_computed_outward(ctx):
    cylinder = twisted_cylinder(rings=5, sides=12)
    mesh = MeshData(
        positions=cylinder.positions, indices=cylinder.indices, joints=cylinder.joints, weights=cylinder.weights
    )
    gpu = SkinnedMesh(ctx, mesh)
    _, normals = gpu.skin(np.broadcast_to(np.eye(4), (1, 2, 4, 4)))
    side = slice(12, 48)  # the middle rings: normals point away from the axis
    radial = mesh.positions[side] * [1, 0, 1]
    assert np.all(np.einsum("vi,vi->v", normals[0, side], radial) > 0.3)
    gpu.release()


@pytest.mark.parametrize("angle", [np.pi / 2, np.pi])
def test_twisted_cylinder_dqs_keeps_volume_lbs_collapses(ctx, angle):
    """The candy-wrapper case: half-weighted vertices under a twist about the limb's axis.

    LBS moves the middle ring to radius r·|cos(θ/2)|; DQS keeps r. Measured on the GPU output.
    """
    mesh = twisted_cylinder()
    gpu = SkinnedMesh(ctx, mesh)
    middle = np.isclose(mesh.positions[:, 1], 1.0) & (np.linalg.norm(mesh.positions * [1, 0, 1], axis=-1) > 0.1)
    rest_volume = enclosed_volume(mesh.positions, mesh.indices)
    measured = {}
    for method in ("lbs", "dqs"):
        positions, _ = gpu.skin(twist_palette(angle), method=method)
        radius = np.linalg.norm(positions[0, middle] * [1, 0, 1], axis=-1)
        measured[method] = (radius.mean(), enclosed_volume(positions[0], mesh.indices) / rest_volume)
    lbs_radius, lbs_volume = measured["lbs"]
    dqs_radius, dqs_volume = measured["dqs"]
    np.testing.assert_allclose(lbs_radius, 0.5 * abs(np.cos(angle / 2)), atol=1e-5)
    np.testing.assert_allclose(dqs_radius, 0.5, atol=1e-5)
    assert lbs_volume < (0.92 if angle < 3 else 0.7)
    assert abs(dqs_volume - 1.0) < 0.01
    gpu.release()


def test_nonuniform_scale_uses_two_phase_dqs_like_the_cpu(ctx):
    """A joint scaled non-uniformly: DQS stretches first, then blends the rigid parts (no fallback)."""
    mesh = twisted_cylinder(rings=9, sides=16)
    palettes = twist_palette(np.pi / 3) @ np.diag([1.5, 1.0, 0.5, 1.0])
    gpu = SkinnedMesh(ctx, mesh)
    positions, normals = gpu.skin(palettes, method="dqs")
    cpu_positions, cpu_normals = skin_vertices_dq(mesh, palettes)
    assert_close_relative(positions, cpu_positions)
    np.testing.assert_allclose(normals, cpu_normals, atol=2e-4)
    gpu.release()


def test_dq_records_made_on_the_gpu_rebuild_the_matrix(ctx):
    """rotation(real) · stretch = M₃ and 2·(dual · conj(real)) = translation, checked with scipy."""
    rng = np.random.default_rng(3)
    palettes = random_palettes(rng, 2, 5, "nonuniform")
    palettes[1, 2, :3, 0] *= -1.0  # a mirror
    palettes[0, 1, :3, :3] = Rotation.from_rotvec([np.pi, 0, 0]).as_matrix()  # half turns: Shepperd's other branches
    palettes[0, 2, :3, :3] = Rotation.from_rotvec([0, np.pi, 0]).as_matrix()
    palettes[0, 3, :3, :3] = Rotation.from_rotvec([0, 0, np.pi]).as_matrix()
    palette = PaletteBuffer(ctx, 5, method="dqs")
    palette.upload(palettes)
    records = palette.records().astype(np.float64)
    assert records.shape == (2, 5, RECORD_FLOATS["dqs"])
    real, dual = records[..., :4], records[..., 4:8]
    np.testing.assert_allclose(np.linalg.norm(real, axis=-1), 1.0, atol=1e-6)
    stretch = np.swapaxes(records[..., 8:].reshape(2, 5, 3, 4)[..., :3], -1, -2)
    rotation = Rotation.from_quat(real.reshape(-1, 4)).as_matrix().reshape(2, 5, 3, 3)
    np.testing.assert_allclose(rotation @ stretch, palettes[..., :3, :3], atol=1e-5)
    rv, rw, dv, dw = real[..., :3], real[..., 3:], dual[..., :3], dual[..., 3:]
    np.testing.assert_allclose(2 * (rw * dv - dw * rv + np.cross(rv, dv)), palettes[..., :3, 3], atol=1e-5)
    lbs = PaletteBuffer(ctx, 5)
    lbs.upload(palettes)
    np.testing.assert_allclose(lbs.records().reshape(2, 5, 4, 4), np.swapaxes(palettes, -1, -2), rtol=1e-6)
    np.testing.assert_array_equal(lbs.records(), pack_palette(palettes))
    palette.release()
    lbs.release()


def test_draw_renders_each_instance_where_the_projection_puts_it(ctx):
    """Three cylinders at x = −1.5, 0, 1.5 in one instanced draw: three blobs at the projected columns."""
    mesh = twisted_cylinder(rings=5, sides=16)
    gpu = SkinnedMesh(ctx, mesh)
    worlds = np.stack([translation((x, -1.0, 0.0)) for x in (-1.5, 0.0, 1.5)])
    view = translation((0.0, 0.0, -6.0))
    projection = perspective(np.radians(45.0), 2.0, 0.1, 20.0)
    with OffscreenTarget(ctx, (96, 48)) as target:
        target.clear((0.0, 0.0, 0.0, 1.0))
        gpu.draw(np.broadcast_to(np.eye(4), (3, 2, 4, 4)), view, projection, worlds)
        image = target.read()
    lit = image[..., :3].max(axis=-1) > 0
    clip = np.einsum("ij,cj->ci", projection @ view, np.array([[x, 0.0, 0.0, 1.0] for x in (-1.5, 0.0, 1.5)]))
    columns = (clip[:, 0] / clip[:, 3] * 0.5 + 0.5) * 96
    for column in columns:
        assert lit[:, int(column)].sum() > 10
    assert not lit[:, :5].any()
    assert not lit[:, -5:].any()
    assert not lit[:, int(columns[0] + columns[1]) // 2].any()
    gpu.release()


def test_texture_and_material_colour(ctx):
    """A camera-facing quad: the material colour without a texture, texture × colour with one."""
    quad = {
        "positions": [[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]],
        "normals": [[0, 0, 1]] * 4,
        "uvs": [[0, 1], [1, 1], [1, 0], [0, 0]],
        "indices": [0, 1, 2, 0, 2, 3],
        "joints": [[0, 0, 0, 0]] * 4,
        "weights": [[1, 0, 0, 0]] * 4,
    }
    texture = np.zeros((2, 2, 4), np.uint8)
    texture[..., 0] = 255  # red
    texture[..., 3] = 255
    meshes = {
        "material": MeshData(**quad, base_color=[0.0, 1.0, 0.0, 1.0]),
        "texture": MeshData(**quad, base_color=[1.0, 1.0, 1.0, 1.0], texture=texture),
    }
    view, projection = translation((0.0, 0.0, -2.0)), perspective(np.radians(60.0), 1.0, 0.1, 10.0)
    colors = {}
    for name, mesh in meshes.items():
        gpu = SkinnedMesh(ctx, mesh)
        with OffscreenTarget(ctx, (16, 16)) as target:
            target.clear()
            gpu.draw(np.eye(4)[None, None], view, projection, light_direction=(0, 0, -1))
            colors[name] = target.read()[8, 8]
        gpu.release()
    np.testing.assert_array_equal(colors["material"][[0, 2]], [0, 0])
    assert colors["material"][1] > 200
    np.testing.assert_array_equal(colors["texture"][[1, 2]], [0, 0])
    assert colors["texture"][0] > 200


def test_more_than_two_influence_sets_is_refused(ctx, rng):
    with pytest.raises(InvalidInputError, match="3 influence sets"):
        SkinnedMesh(ctx, random_mesh(rng, 4, sets=3))


def test_too_many_joints_for_the_storage_block(ctx):
    limit = int(ctx.info["GL_MAX_SHADER_STORAGE_BLOCK_SIZE"])
    with pytest.raises(InvalidInputError, match="too many joints for the storage-buffer palette layout"):
        PaletteBuffer(ctx, limit // 64 + 1)
    palette = PaletteBuffer(ctx, 1000)
    too_many = np.broadcast_to(np.eye(4), (palette.max_characters + 1, 1000, 4, 4))  # no memory behind it
    with pytest.raises(InvalidInputError, match=f"at most {palette.max_characters} characters"):
        palette.upload(too_many)
    palette.release()


def test_palette_shape_and_joint_count_errors(ctx, rng):
    palette = PaletteBuffer(ctx, 4)
    with pytest.raises(InvalidInputError, match=r"palettes must have shape \(C, J, 4, 4\)"):
        palette.upload(np.eye(4)[None])
    with pytest.raises(SkeletonMismatchError, match="3 joints per character, this buffer was made for 4"):
        palette.upload(random_palettes(rng, 1, 3))
    gpu = SkinnedMesh(ctx, random_mesh(rng, 6))
    palette.upload(random_palettes(rng, 1, 4))
    with pytest.raises(SkeletonMismatchError, match="the palette has 4 joints"):
        gpu.skin(palette)
    with pytest.raises(InvalidInputError, match="empty"):
        gpu.skin(PaletteBuffer(ctx, 6))
    with pytest.raises(InvalidInputError, match=r"instance_transforms must have shape \(2, 4, 4\)"):
        gpu.skin(random_palettes(rng, 2, 6), np.eye(4)[None])
    with pytest.raises(InvalidInputError, match="method must be 'lbs' or 'dqs'"):
        gpu.skin(random_palettes(rng, 1, 6), method="slerp")
    flat = random_palettes(rng, 1, 6)
    flat[0, 4, :3, 1] = 0.0
    dq_palette = PaletteBuffer(ctx, 6, method="dqs")
    with pytest.raises(InvalidInputError, match=r"zero-length basis column at \(character, joint\) = \(0, 4\)"):
        dq_palette.upload(flat)
    assert dq_palette.characters == 0
    dq_palette.release()
    with pytest.raises(InvalidInputError, match="joint_count must be ≥ 1"):
        PaletteBuffer(ctx, 0)
    gpu.release()
    palette.release()


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_nan_or_float32_overflow_never_reaches_the_gpu(ctx, rng, method):
    mesh = random_mesh(rng, 3)
    palette = PaletteBuffer(ctx, 3, method=method)
    gpu = SkinnedMesh(ctx, mesh)
    good = random_palettes(rng, 2, 3)
    palette.upload(good)
    for value in (np.nan, 1e39):  # 1e39 is finite in float64, inf in float32
        bad = good.copy()
        bad[1, 2, 0, 3] = value
        with pytest.raises(InvalidInputError, match=r"palettes must be finite in float32.*\(1, 2\)"):
            palette.upload(bad)
    positions, _ = gpu.skin(palette)  # the buffer still holds the last good upload
    assert np.isfinite(positions).all()
    assert_close_relative(positions, CPU_SKIN[method](mesh, good)[0])
    worlds = np.broadcast_to(np.eye(4), (2, 4, 4)).copy()
    worlds[0, 0, 0] = np.inf
    with pytest.raises(InvalidInputError, match=r"instance_transforms must be finite in float32.*\(0,\)"):
        gpu.skin(palette, worlds)
    gpu.release()
    palette.release()


def test_trusted_mode_skips_the_finiteness_scan(ctx, rng):
    palette = PaletteBuffer(ctx, 2)
    bad = random_palettes(rng, 1, 2)
    bad[0, 0, 0, 0] = np.nan
    with trusted():
        palette.upload(bad)
    assert palette.characters == 1
    palette.release()
