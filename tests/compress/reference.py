"""Independent oracles for the compression tests: scipy forward kinematics and shell points, one joint at a time."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton

#: Directions on the unit sphere: the 6 axes, 12 edge midpoints and 8 corners of a cube, normalised.
_CUBE = np.array(
    [(x, y, z) for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1) if (x, y, z) != (0, 0, 0)], float
)
DIRECTIONS = _CUBE / np.linalg.norm(_CUBE, axis=1, keepdims=True)


def model_matrices(skeleton: Skeleton, pose: Pose) -> np.ndarray:
    """``(T, J, 4, 4)`` model matrices of a pose ``(T, J)``, composed joint by joint with scipy."""
    t, q, s = (np.asarray(a) for a in pose.arrays())
    count, joints = q.shape[:2]
    local = np.zeros((count, joints, 4, 4))
    local[..., :3, :3] = Rotation.from_quat(q.reshape(-1, 4)).as_matrix().reshape(count, joints, 3, 3) * s[..., None, :]
    local[..., :3, 3] = t
    local[..., 3, 3] = 1.0
    model = np.empty_like(local)
    for j, parent in enumerate(skeleton.parents):
        model[:, j] = local[:, j] if parent < 0 else model[:, parent] @ local[:, j]
    return model


def shell_displacement(skeleton: Skeleton, reference: Pose, other: Pose, radii: np.ndarray) -> np.ndarray:
    """Largest displacement ``(T, J)`` of 26 points on each joint's shell (and its centre) between two poses."""
    a, b = model_matrices(skeleton, reference), model_matrices(skeleton, other)
    points = np.concatenate((np.zeros((1, 3)), DIRECTIONS))[None, :, :] * radii[:, None, None]  # (J, P, 3)
    pa = np.einsum("tjik,jpk->tjpi", a[..., :3, :3], points) + a[..., None, :3, 3]
    pb = np.einsum("tjik,jpk->tjpi", b[..., :3, :3], points) + b[..., None, :3, 3]
    return np.linalg.norm(pa - pb, axis=-1).max(axis=-1)
