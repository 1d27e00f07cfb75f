"""GPU skinning and rendering of the Khronos sample characters (CesiumMan, RiggedSimple)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from engine.anim import skin_vertices, skin_vertices_dq
from engine.errors import OssaWarning
from engine.io import load_character
from engine.render import SkinnedMesh, load_png
from tests.render import make_golden
from tests.render.meshes import assert_close_relative

pytestmark = [pytest.mark.gl, pytest.mark.assets]

TIMES = np.array([0.0, 0.3, 0.77, 1.5, 2.0])  # one instance per time: one instanced transform feedback
CPU_SKIN = {"lbs": skin_vertices, "dqs": skin_vertices_dq}


@pytest.fixture(scope="module")
def characters(shared_assets):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)  # CesiumMan has 210 vertices with weights not summing to 1
        return {
            "cesium_man": make_golden.load_cesium_man(shared_assets),
            "rigged_simple": load_character(shared_assets / "khronos" / "rigged_simple.gltf"),
        }


@pytest.mark.parametrize("method", ["lbs", "dqs"])
@pytest.mark.parametrize("name", ["cesium_man", "rigged_simple"])
def test_gpu_skin_equals_cpu_reference_at_several_times(ctx, characters, name, method):
    character = characters[name]
    palettes = make_golden.palettes_at(character, TIMES)
    for mesh in character.meshes:
        gpu = SkinnedMesh(ctx, mesh)
        positions, normals = gpu.skin(palettes, method=method)
        cpu_positions, cpu_normals = CPU_SKIN[method](mesh, palettes)
        assert_close_relative(positions, cpu_positions, rel=1e-4)
        np.testing.assert_allclose(normals, cpu_normals, atol=1e-4)
        gpu.release()


def test_dqs_equals_lbs_on_rigid_single_influence_vertices_of_cesium_man(ctx, characters):
    character = characters["cesium_man"]
    mesh = character.meshes[0]
    rigid = mesh.weights.max(axis=1) / mesh.weights.sum(axis=1) == 1.0
    assert rigid.sum() > 400
    gpu = SkinnedMesh(ctx, mesh)
    palettes = make_golden.palettes_at(character, TIMES)
    lbs, dqs = gpu.skin(palettes, method="lbs")[0], gpu.skin(palettes, method="dqs")[0]
    assert_close_relative(dqs[:, rigid], lbs[:, rigid], rel=2e-6)
    assert np.abs(dqs[:, ~rigid] - lbs[:, ~rigid]).max() > 1e-4  # blended vertices do differ
    gpu.release()


def projected_box(ctx, character) -> tuple[np.ndarray, np.ndarray]:
    """Pixel bounding box (x, y from the top-left) of CesiumMan's CPU-skinned vertices."""
    positions, _ = skin_vertices(character.meshes[0], make_golden.palettes_at(character, np.array([make_golden.TIME])))
    view, projection = make_golden.camera()
    clip = np.einsum("ij,vj->vi", projection @ view, np.concatenate((positions[0], np.ones((len(positions[0]), 1))), 1))
    ndc = clip[:, :2] / clip[:, 3:]
    width, height = make_golden.SIZE
    pixels = np.stack(((ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height), axis=-1)
    return pixels.min(axis=0), pixels.max(axis=0)


@pytest.mark.parametrize("method", ["lbs", "dqs"])
def test_rendered_silhouette_is_where_the_projection_puts_the_skinned_vertices(ctx, characters, method):
    image = make_golden.render_cesium_man(ctx, characters["cesium_man"], method)
    background = np.round(np.array(make_golden.BACKGROUND[:3]) * 255)  # clear() writes the value as is
    silhouette = np.abs(image[..., :3].astype(int) - background).max(axis=-1) > 2
    assert silhouette.sum() > 300
    rows, columns = np.nonzero(silhouette)
    low, high = projected_box(ctx, characters["cesium_man"])
    np.testing.assert_allclose([columns.min(), rows.min()], low, atol=1.5)
    np.testing.assert_allclose([columns.max() + 1, rows.max() + 1], high, atol=1.5)
    centre = (low + high) / 2
    np.testing.assert_allclose(
        [(columns.min() + columns.max() + 1) / 2, (rows.min() + rows.max() + 1) / 2], centre, atol=1.5
    )


def test_golden_image(ctx, characters, tmp_path):
    """Compared with a tolerance for rasteriser and JPEG-decoder differences between machines.

    Regenerate with ``python -m tests.render.make_golden`` (see that module) after an intended change.
    """
    image = make_golden.render_cesium_man(ctx, characters["cesium_man"])
    golden = load_png(make_golden.GOLDEN)
    assert image.shape == golden.shape
    difference = np.abs(image.astype(int) - golden.astype(int)).max(axis=-1)
    if (difference > 48).mean() > 0.01 or difference.mean() > 2.0:
        path = tmp_path / "cesium_man_actual.png"
        make_golden.save_png(path, image)
        pytest.fail(
            f"rendering differs from {make_golden.GOLDEN.name}: {(difference > 48).mean():.2%} of pixels off by > 48, "
            f"mean difference {difference.mean():.2f}; actual image in {path}. If the change is intended, run "
            "python -m tests.render.make_golden"
        )
