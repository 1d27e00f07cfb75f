"""Synthetic skinned meshes and palettes for the GPU skinning tests."""

from __future__ import annotations

import numpy as np

from engine.anim.mesh import MeshData
from engine.math import matrix_from_trs, quat_from_axis_angle


def translation(offset: tuple[float, float, float]) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = offset
    return m


def twisted_cylinder(radius: float = 0.5, length: float = 2.0, rings: int = 41, sides: int = 48) -> MeshData:
    """A closed cylinder along +Y from 0 to ``length`` over 2 joints (root at 0, joint 1 at length/2).

    Weights ramp linearly from joint 0 to joint 1 between y = length/4 and y = 3·length/4, so
    the middle ring is weighted half and half. Triangles face outward (counter-clockwise).
    """
    heights = np.linspace(0.0, length, rings)
    angles = np.linspace(0.0, 2 * np.pi, sides, endpoint=False)
    ring = np.stack((np.cos(angles), np.zeros(sides), -np.sin(angles)), axis=-1)
    side = (radius * ring[None, :, :] + heights[:, None, None] * np.array([0.0, 1.0, 0.0])).reshape(-1, 3)
    positions = np.concatenate((side, [[0.0, 0.0, 0.0], [0.0, length, 0.0]]))
    normals = np.concatenate((np.tile(ring, (rings, 1)), [[0.0, -1.0, 0.0], [0.0, 1.0, 0.0]]))
    r, s = np.meshgrid(np.arange(rings - 1), np.arange(sides), indexing="ij")
    a, b = r * sides + s, r * sides + (s + 1) % sides
    quads = np.stack((a, b, b + sides, a, b + sides, a + sides), axis=-1).reshape(-1, 3)
    bottom, top = len(side), len(side) + 1
    s = np.arange(sides)
    caps_bottom = np.stack((np.full(sides, bottom), (s + 1) % sides, s), axis=-1)
    last = (rings - 1) * sides
    caps_top = np.stack((np.full(sides, top), last + s, last + (s + 1) % sides), axis=-1)
    indices = np.concatenate((quads, caps_bottom, caps_top)).reshape(-1)
    upper = np.clip((positions[:, 1] - 0.25 * length) / (0.5 * length), 0.0, 1.0)
    joints = np.tile([0, 1, 0, 0], (len(positions), 1))
    weights = np.stack((1 - upper, upper, np.zeros_like(upper), np.zeros_like(upper)), axis=-1)
    return MeshData(positions=positions, indices=indices, normals=normals, joints=joints, weights=weights, name="cyl")


def twist_palette(angle: float, length: float = 2.0) -> np.ndarray:
    """``(1, 2, 4, 4)``: joint 0 still, joint 1 twisted by ``angle`` about +Y at its bind position."""
    joint = translation((0.0, 0.5 * length, 0.0))
    twist = matrix_from_trs(np.zeros(3), quat_from_axis_angle([0.0, 1.0, 0.0], angle), np.ones(3))
    return np.stack((np.eye(4), joint @ twist @ np.linalg.inv(joint)))[None]


def enclosed_volume(positions: np.ndarray, indices: np.ndarray) -> float:
    """Volume of a closed outward-facing triangle mesh (divergence theorem)."""
    a, b, c = (positions[..., indices.reshape(-1, 3)[:, k], :] for k in range(3))
    return float(np.einsum("...i,...i->...", a, np.cross(b, c)).sum(axis=-1) / 6.0)


def random_mesh(rng: np.random.Generator, joints: int, sets: int = 1, vertices: int = 60) -> MeshData:
    """Random positions, unit normals and influences over ``sets`` sets (some weights zero)."""
    positions = rng.uniform(-1.0, 1.0, (vertices, 3))
    normals = rng.normal(size=(vertices, 3))
    normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
    influence = rng.integers(0, joints, (vertices, 4 * sets))
    weights = rng.uniform(0.0, 1.0, (vertices, 4 * sets)) * (rng.uniform(size=(vertices, 4 * sets)) > 0.3)
    weights[:, 0] += 0.05
    weights /= weights.sum(axis=1, keepdims=True)
    indices = rng.integers(0, vertices, 3 * vertices)
    return MeshData(positions=positions, normals=normals, indices=indices, joints=influence, weights=weights)


def random_palettes(rng: np.random.Generator, characters: int, joints: int, scale: str = "rigid") -> np.ndarray:
    """``(C, J, 4, 4)`` random ``T·R·S``; ``scale`` is ``rigid``, ``uniform`` or ``nonuniform``."""
    quats = rng.normal(size=(characters, joints, 4))
    quats /= np.linalg.norm(quats, axis=-1, keepdims=True)
    shifts = rng.uniform(-2.0, 2.0, (characters, joints, 3))
    if scale == "rigid":
        scales = np.ones((characters, joints, 3))
    elif scale == "uniform":
        scales = np.repeat(rng.uniform(0.5, 2.0, (characters, joints, 1)), 3, axis=-1)
    else:
        scales = rng.uniform(0.5, 2.0, (characters, joints, 3))
    return matrix_from_trs(shifts, quats, scales)


def assert_close_relative(actual: np.ndarray, desired: np.ndarray, rel: float = 1e-4) -> None:
    """``max |actual − desired| ≤ rel · max |desired|`` (float32 GPU against float64 CPU)."""
    actual, desired = np.asarray(actual), np.asarray(desired)
    assert actual.shape == desired.shape
    error = np.abs(actual - desired).max()
    assert error <= rel * np.abs(desired).max(), f"max error {error:.3g} > {rel} × {np.abs(desired).max():.3g}"
