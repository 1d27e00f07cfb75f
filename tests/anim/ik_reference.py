"""Independent references for the IK tests: forward kinematics with scipy, skeleton/pose builders.

Nothing here calls the engine's math: local matrices come from scipy's ``Rotation`` and are
composed joint by joint, so a wrong convention in the engine cannot cancel out in the tests.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton


def forward_kinematics(skeleton: Skeleton, pose: Pose) -> np.ndarray:
    """Model matrices ``(..., J, 4, 4)``: ``model[j] = model[parent[j]] @ T R S``, one joint at a time."""
    rotations = np.asarray(pose.rotations, dtype=float)
    batch = rotations.shape[:-2]
    count = skeleton.num_joints
    translations = np.broadcast_to(pose.translations, (*batch, count, 3)).reshape(-1, count, 3)
    scales = np.broadcast_to(pose.scales, (*batch, count, 3)).reshape(-1, count, 3)
    flat = rotations.reshape(-1, count, 4)
    out = np.zeros((flat.shape[0], count, 4, 4))
    for c in range(flat.shape[0]):
        for j in range(count):
            local = np.eye(4)
            local[:3, :3] = Rotation.from_quat(flat[c, j]).as_matrix() * scales[c, j][None, :]
            local[:3, 3] = translations[c, j]
            parent = skeleton.parents[j]
            out[c, j] = local if parent < 0 else out[c, parent] @ local
    return out.reshape(*batch, count, 4, 4)


def positions(skeleton: Skeleton, pose: Pose) -> np.ndarray:
    """Model-space joint positions ``(..., J, 3)`` by :func:`forward_kinematics`."""
    return forward_kinematics(skeleton, pose)[..., :3, 3]


def bone_lengths(skeleton: Skeleton, points: np.ndarray) -> np.ndarray:
    """Distances ``(..., J - roots)`` from every non-root joint to its parent."""
    children = np.nonzero(skeleton.parents >= 0)[0]
    return np.linalg.norm(points[..., children, :] - points[..., skeleton.parents[children], :], axis=-1)


def random_rotations(rng: np.random.Generator, shape: tuple[int, ...], max_angle: float) -> np.ndarray:
    """Unit quaternions ``shape + (4,)`` with angles uniform in ``[0, max_angle]`` about random axes."""
    axes = rng.normal(size=(*shape, 3))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    angles = rng.uniform(0.0, max_angle, size=shape)
    return Rotation.from_rotvec((axes * angles[..., None]).reshape(-1, 3)).as_quat().reshape(*shape, 4)


def leg_skeleton(rng: np.random.Generator, *, twist_joint: bool = False, root_scale: float = 0.01) -> Skeleton:
    """``root → pelvis → hip → [twist] → knee → ankle → toe`` plus a side branch, like a real rig.

    The root carries a uniform ``root_scale`` (a centimetre rig under a 0.01 node) and every
    joint a random rest rotation, so local axes are nowhere near model axes.
    """
    names = ["root", "pelvis", "hip"] + (["thigh_twist"] if twist_joint else []) + ["knee", "ankle", "toe", "spine"]
    index = {n: i for i, n in enumerate(names)}
    parents = [-1, 0, 1] + ([2] if twist_joint else []) + [index["knee"] - 1, index["knee"], index["ankle"], 1]
    count = len(names)
    translations = rng.normal(size=(count, 3)) * 10.0
    translations[index["root"]] = 0.0
    for name, length in (("knee", 45.0), ("ankle", 40.0), ("toe", 12.0)):
        direction = rng.normal(size=3)
        translations[index[name]] = direction / np.linalg.norm(direction) * length
    if twist_joint:
        translations[index["thigh_twist"]] = translations[index["knee"]] * 0.5
        translations[index["knee"]] *= 0.5
    rotations = random_rotations(rng, (count,), np.pi)
    scales = np.ones((count, 3))
    scales[index["root"]] = root_scale
    return Skeleton(names, parents, translations, rotations, scales)


def chain_skeleton(rng: np.random.Generator, links: int, *, zero_bone: int | None = None) -> Skeleton:
    """A single chain ``j0 → … → j{links}`` with random rest rotations and bone lengths 0.1–0.4."""
    count = links + 1
    directions = rng.normal(size=(count, 3))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    translations = directions * rng.uniform(0.1, 0.4, size=(count, 1))
    translations[0] = 0.0
    if zero_bone is not None:
        translations[zero_bone] = 0.0
    rotations = random_rotations(rng, (count,), np.pi)
    return Skeleton([f"j{i}" for i in range(count)], np.arange(count) - 1, translations, rotations)


def perturbed_pose(skeleton: Skeleton, rng: np.random.Generator, characters: int, max_angle: float) -> Pose:
    """The rest pose for ``characters`` characters, each joint turned by up to ``max_angle`` in its own frame."""
    pose = skeleton.rest_pose.broadcast_to((characters,))
    turns = Rotation.from_quat(random_rotations(rng, (characters, skeleton.num_joints), max_angle).reshape(-1, 4))
    rest = Rotation.from_quat(pose.rotations.reshape(-1, 4))
    pose.rotations = (rest * turns).as_quat().reshape(characters, skeleton.num_joints, 4)
    return pose
