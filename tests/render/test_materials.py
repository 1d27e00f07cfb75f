"""What the fragment shader draws of a material: lit base colour, plus emissive, or unlit (KHR_materials_unlit).

A camera-facing quad lit head-on by a light of colour L with ambient A: a lit surface of base
colour c is ``c·(A + L)`` (cosine 1), plus its emissive colour; an unlit one is ``c`` whatever the
light. The shader writes sRGB, so the expected linear values are encoded the same way here.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim.mesh import MeshData
from engine.math import perspective
from engine.render import OffscreenTarget, SkinnedMesh
from tests.render.meshes import translation

pytestmark = pytest.mark.gl

QUAD = {
    "positions": [[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]],
    "normals": [[0, 0, 1]] * 4,
    "indices": [0, 1, 2, 0, 2, 3],
}
LIGHT, AMBIENT = np.array([0.5, 0.5, 0.5]), np.array([0.1, 0.1, 0.1])


def srgb(linear: np.ndarray) -> np.ndarray:
    """What the shader writes for linear colour ``linear``: ``255 · clamp(c)^(1/2.2)``."""
    return 255.0 * np.clip(linear, 0.0, 1.0) ** (1.0 / 2.2)


def centre_pixel(ctx, mesh: MeshData) -> np.ndarray:  # type: ignore[no-untyped-def]
    view, projection = translation((0.0, 0.0, -2.0)), perspective(np.radians(60.0), 1.0, 0.1, 10.0)
    gpu = SkinnedMesh(ctx, mesh)
    with OffscreenTarget(ctx, (16, 16)) as target:
        target.clear()
        gpu.draw(
            np.eye(4)[None, None], view, projection, light_direction=(0, 0, -1), light_color=LIGHT, ambient=AMBIENT
        )
        pixel = target.read()[8, 8, :3].astype(float)
    gpu.release()
    return pixel


BASE = np.array([0.8, 0.4, 0.2, 1.0])


def test_a_lit_surface_is_base_times_light(ctx) -> None:  # type: ignore[no-untyped-def]
    np.testing.assert_allclose(
        centre_pixel(ctx, MeshData(**QUAD, base_color=BASE)), srgb(BASE[:3] * (AMBIENT + LIGHT)), atol=1.5
    )


def test_emissive_light_adds_to_the_lit_colour(ctx) -> None:  # type: ignore[no-untyped-def]
    emissive = np.array([0.0, 0.3, 0.1])
    pixel = centre_pixel(ctx, MeshData(**QUAD, base_color=BASE, emissive=emissive))
    np.testing.assert_allclose(pixel, srgb(BASE[:3] * (AMBIENT + LIGHT) + emissive), atol=1.5)


def test_an_unlit_surface_is_its_base_colour(ctx) -> None:  # type: ignore[no-untyped-def]
    pixel = centre_pixel(ctx, MeshData(**QUAD, base_color=BASE, unlit=True))
    np.testing.assert_allclose(pixel, srgb(BASE[:3]), atol=1.5)
