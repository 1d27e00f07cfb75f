"""The demo's world: a gently uneven ground, glowing collectibles, and the meshes that draw them.

The engine draws skinned meshes only, so every static object here is a **single-joint mesh**
(every vertex weighted 1 to joint 0): its palette is the object's world transform, and an
instanced draw with ``K`` palettes draws ``K`` copies (the items).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.mesh import MeshData
from engine.math import matrix_from_trs, quat_from_axis_angle
from engine.math._checks import FloatArray

#: Ground waves ``(amplitude m, kx, kz, phase)``: ``y = Σ a·sin(kx·x + kz·z + phase)``; steepest slope ≈ 0.2.
WAVES = np.array([(0.18, 0.35, 0.12, 0.4), (0.12, -0.2, 0.45, 1.3), (0.06, 0.8, 0.6, 2.0)])
GRASS = ((96, 150, 74), (84, 134, 64), (60, 100, 48))
ITEM_HOVER = 0.5
"""Height of an item's centre above the ground, metres."""


def single_joint_mesh(
    positions: Any,
    indices: Any,
    normals: Any,
    color: Any,
    *,
    uvs: Any = None,
    texture: np.ndarray | None = None,
    name: str = "",
) -> MeshData:
    """A :class:`MeshData` whose every vertex follows joint 0 with weight 1 (palette = its transform)."""
    count = len(positions)
    joints = np.zeros((count, 4), dtype=np.intp)
    weights = np.zeros((count, 4))
    weights[:, 0] = 1.0
    return MeshData(
        positions,
        np.asarray(indices).reshape(-1),
        normals,
        uvs,
        joints,
        weights,
        base_color=np.asarray(color, dtype=np.float64),
        texture=texture,
        name=name,
    )


def sphere(radius: float, rings: int = 12, sides: int = 20) -> tuple[FloatArray, np.ndarray, FloatArray]:
    """A UV sphere: positions ``(V, 3)``, counter-clockwise (outward) triangles ``(T, 3)``, normals ``(V, 3)``."""
    theta = np.linspace(0.0, np.pi, rings + 1)[:, None]  # from +Y down
    phi = np.linspace(0.0, 2.0 * np.pi, sides + 1)[None, :]
    normals = np.stack(
        np.broadcast_arrays(np.sin(theta) * np.sin(phi), np.cos(theta), np.sin(theta) * np.cos(phi)), axis=-1
    ).reshape(-1, 3)
    grid = np.arange((rings + 1) * (sides + 1)).reshape(rings + 1, sides + 1)
    a, b, c, d = grid[:-1, :-1], grid[1:, :-1], grid[:-1, 1:], grid[1:, 1:]
    triangles = np.concatenate((np.stack((a, b, c), -1).reshape(-1, 3), np.stack((c, b, d), -1).reshape(-1, 3)))
    return radius * normals, triangles, normals


def gem(radius: float) -> tuple[FloatArray, np.ndarray, FloatArray]:
    """A faceted octahedron (taller than wide), flat normals: positions, triangles, normals."""
    tips = np.array([[1, 0, 0], [0, 0, 1], [-1, 0, 0], [0, 0, -1], [0, 1.5, 0], [0, -1.5, 0]]) * radius
    faces = [((k + 1) % 4, k, 4) for k in range(4)] + [(k, (k + 1) % 4, 5) for k in range(4)]
    positions = tips[np.array(faces)].reshape(-1, 3)
    corners = positions.reshape(-1, 3, 3)
    face = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    normals = np.repeat(face / np.linalg.norm(face, axis=-1, keepdims=True), 3, axis=0)
    return positions, np.arange(len(positions)).reshape(-1, 3), normals


def disc(radius: float, sides: int = 24) -> tuple[FloatArray, np.ndarray, FloatArray]:
    """A flat disc in the XZ plane facing +Y: positions, triangles (a fan), normals."""
    angles = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    rim = np.stack((np.sin(angles), np.zeros(sides), np.cos(angles)), axis=-1) * radius
    positions = np.concatenate((np.zeros((1, 3)), rim))
    k = np.arange(sides)
    triangles = np.stack((np.zeros(sides, dtype=int), 1 + k, 1 + (k + 1) % sides), axis=-1)
    return positions, triangles, np.tile([0.0, 1.0, 0.0], (sides + 1, 1))


def grass_texture(size: int = 128) -> np.ndarray:
    """A two-tone checker (two squares per side) with darker edges: ``(size, size, 4)`` uint8 RGBA."""
    cells = (np.arange(size) * 2) // size
    image = np.empty((size, size, 4), dtype=np.uint8)
    image[..., :3] = np.where(((cells[:, None] + cells[None, :]) % 2 == 0)[..., None], GRASS[0], GRASS[1])
    edge = np.zeros(size, dtype=bool)
    edge[[0, size // 2 - 1, size // 2, size - 1]] = True
    image[edge | edge[:, None]] = (*GRASS[2], 255)
    image[..., 3] = 255
    return image


class Terrain:
    """The ground: a height field ``y = h(x, z)`` made of a few long, low sine waves (:data:`WAVES`).

    Parameters
    ----------
    half_size
        The playable square is ``[-half_size, half_size]²`` metres.
    """

    def __init__(self, half_size: float = 24.0) -> None:
        self.half_size = float(half_size)

    def height(self, x: Any, z: Any) -> FloatArray:
        """Ground height ``(...)`` at world ``x``, ``z`` ``(...)``."""
        x, z = np.asarray(x, dtype=float)[..., None], np.asarray(z, dtype=float)[..., None]
        amplitude, kx, kz, phase = WAVES.T
        return np.sum(amplitude * np.sin(kx * x + kz * z + phase), axis=-1)

    def normal(self, x: Any, z: Any) -> FloatArray:
        """Unit ground normals ``(..., 3)`` at ``x``, ``z`` (from the analytic gradient)."""
        x, z = np.asarray(x, dtype=float)[..., None], np.asarray(z, dtype=float)[..., None]
        amplitude, kx, kz, phase = WAVES.T
        slope = amplitude * np.cos(kx * x + kz * z + phase)
        n = np.stack((-np.sum(slope * kx, -1), np.ones(x.shape[:-1]), -np.sum(slope * kz, -1)), axis=-1)
        return n / np.linalg.norm(n, axis=-1, keepdims=True)

    def clamp(self, position: FloatArray, margin: float = 1.0) -> FloatArray:
        """``position`` ``(3,)`` kept inside the playable square (less ``margin``), on the ground."""
        limit = self.half_size - margin
        x, z = np.clip(position[[0, 2]], -limit, limit)
        return np.array([x, float(self.height(x, z)), z])

    def mesh(self, extent: float = 60.0, cells: int = 120, tile: float = 2.0) -> MeshData:
        """The ground as a single-joint grid mesh, ``cells²`` quads textured every ``tile`` metres.

        It covers ``[-extent, extent]²``, beyond the playable square, so the horizon is ground.
        """
        ticks = np.linspace(-extent, extent, cells + 1)
        x, z = np.meshgrid(ticks, ticks, indexing="ij")
        positions = np.stack((x, self.height(x, z), z), axis=-1).reshape(-1, 3)
        grid = np.arange((cells + 1) ** 2).reshape(cells + 1, cells + 1)
        a, b, c, d = grid[:-1, :-1], grid[:-1, 1:], grid[1:, :-1], grid[1:, 1:]  # b: +z, c: +x
        triangles = np.concatenate((np.stack((a, b, c), -1).reshape(-1, 3), np.stack((c, b, d), -1).reshape(-1, 3)))
        return single_joint_mesh(
            positions,
            triangles,
            self.normal(x, z).reshape(-1, 3),
            (1.0, 1.0, 1.0, 1.0),
            uvs=positions[:, [0, 2]] / tile,
            texture=grass_texture(),
            name="ground",
        )


class Collectibles:
    """``count`` items hovering over the ground: the first straight ahead of the start, the rest scattered.

    Parameters
    ----------
    terrain
        The ground they hover over (:data:`ITEM_HOVER` metres up).
    count
        Number of items, ``>= 1``.
    seed
        Seed of the scatter (the same seed, the same layout).
    first
        ``(x, z)`` of the first item: on the start's line of sight, so the goal is visible at once.
    ring
        ``(inner, outer)`` radii in metres of the annulus the others are scattered in.
    spacing
        Least distance between two items, metres.
    """

    def __init__(
        self,
        terrain: Terrain,
        count: int,
        seed: int,
        first: tuple[float, float] = (0.6, 4.0),
        ring: tuple[float, float] = (5.0, 18.0),
        spacing: float = 3.0,
    ) -> None:
        rng = np.random.default_rng(seed)
        spots = [np.asarray(first, dtype=float)]
        while len(spots) < count:  # rejection sampling, once at load time
            radius = np.sqrt(rng.uniform(ring[0] ** 2, ring[1] ** 2))
            angle = rng.uniform(0.0, 2.0 * np.pi)
            spot = radius * np.array([np.sin(angle), np.cos(angle)])
            if min(np.linalg.norm(spot - s) for s in spots) >= spacing:
                spots.append(spot)
        xz = np.array(spots[:count])
        self.positions = np.stack((xz[:, 0], terrain.height(xz[:, 0], xz[:, 1]) + ITEM_HOVER, xz[:, 1]), axis=-1)
        """Item centres ``(N, 3)``, world space."""
        self.collected = np.zeros(count, dtype=bool)
        """Which items were picked up ``(N,)``."""

    @property
    def remaining(self) -> int:
        """How many items are left."""
        return int((~self.collected).sum())

    def reset(self) -> None:
        """Put every item back."""
        self.collected[:] = False

    def collect(self, position: Any, radius: float) -> np.ndarray:
        """Pick up the items within ``radius`` metres (horizontally) of ``position``; their indices."""
        distance = np.linalg.norm((self.positions - position)[:, [0, 2]], axis=-1)
        taken = np.nonzero(~self.collected & (distance < radius))[0]
        self.collected[taken] = True
        return taken

    def nearest(self, position: Any) -> FloatArray | None:
        """Centre ``(3,)`` of the nearest item left, or ``None`` when all are collected."""
        left = self.positions[~self.collected]
        if not len(left):
            return None
        return left[np.argmin(np.linalg.norm(left - position, axis=-1))]

    def transforms(self, time: float, scale: float = 1.0) -> FloatArray:
        """World transforms ``(K, 4, 4)`` of the items left: spinning and bobbing, each out of phase."""
        index = np.nonzero(~self.collected)[0]
        phase = time * 2.0 + index * 1.7
        centres = self.positions[index] + np.stack((0 * phase, 0.08 * np.sin(phase), 0 * phase), axis=-1)
        spin = quat_from_axis_angle([0.0, 1.0, 0.0], phase)
        return matrix_from_trs(centres, spin, np.full((len(index), 3), scale))
