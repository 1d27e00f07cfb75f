"""Feature vectors: the pose part from a root-space pose and its velocity, the trajectory part from roots.

One formula for both ends of a search: :func:`pose_features` computes the database's rows at
build time and the runtime query's pose part from the player's current pose, and
:func:`trajectory_features` turns future roots (the database's own, or a desired trajectory)
into the trajectory part. Columns and spaces are described in :mod:`engine.motion_matching.layout`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.anim.velocity import PoseVelocity
from engine.errors import InvalidInputError
from engine.math import quat_conjugate, quat_rotate, trusted
from engine.math._checks import FloatArray, as_array
from engine.motion_matching.kinematics import model_velocities
from engine.motion_matching.layout import POSE_GROUPS, FeatureLayout
from engine.motion_matching.root import yaw_quaternions


def pose_features(
    layout: FeatureLayout,
    skeleton: Skeleton,
    pose: Pose,
    velocity: PoseVelocity,
    root_velocity: Any,
    root_yaw_rate: Any,
) -> FloatArray:
    """The pose columns of feature vectors ``(..., P)`` (every pose group of ``layout``, in order).

    Parameters
    ----------
    layout
        The feature layout (which joints each group reads).
    skeleton
        The database's skeleton.
    pose
        Local pose ``(...,  J)`` **in root space** (the root at the origin facing ``+Z``, as the
        database's clips play).
    velocity
        The pose's velocity ``(..., J)``, in root space.
    root_velocity
        ``(..., 3)`` the root's own velocity in the world, expressed in root axes (m/s).
    root_yaw_rate
        ``(...)`` the root's turning rate about ``+Y`` (rad/s).

    Returns
    -------
    FloatArray
        ``(..., P)``: positions in root space, velocities in the world expressed in root axes
        (``v_root + ω × p + v_pose``).
    """
    groups = [g for g in layout.groups if g.name in POSE_GROUPS]
    joints = sorted({j for g in groups for j in layout.joints[g.name]})
    positions, rates = model_velocities(skeleton, pose, velocity, joints)
    batch = pose.shape[:-1]
    root_velocity = as_array(root_velocity, "root_velocity", (3,))
    root_yaw_rate = as_array(root_yaw_rate, "root_yaw_rate")
    if root_velocity.shape != (*batch, 3) or root_yaw_rate.shape != batch:
        raise InvalidInputError(
            f"root_velocity must be {(*batch, 3)} and root_yaw_rate {batch} for poses {pose.shape}, got "
            f"{root_velocity.shape} and {root_yaw_rate.shape}"
        )
    spin = np.zeros((*batch, 1, 3))
    spin[..., 0, 1] = root_yaw_rate
    world_rates = root_velocity[..., None, :] + np.cross(spin, positions) + rates
    columns = []
    for group in groups:
        rows = [joints.index(j) for j in layout.joints[group.name]]
        values = positions if group.name.endswith("_positions") else world_rates
        columns.append(values[..., rows, :].reshape((*batch, 3 * len(rows))))
    return np.concatenate(columns, axis=-1) if columns else np.zeros((*batch, 0))


def trajectory_features(
    layout: FeatureLayout, root_position: Any, root_yaw: Any, future_positions: Any, future_yaws: Any
) -> FloatArray:
    """The trajectory columns ``(..., 4H)``: future roots seen from the current one.

    Parameters
    ----------
    layout
        The feature layout (``H = len(layout.horizons)``).
    root_position, root_yaw
        The current root: ``(..., 3)`` world position, ``(...)`` yaw.
    future_positions, future_yaws
        The root at each horizon: ``(..., H, 3)`` world positions, ``(..., H)`` yaws.

    Returns
    -------
    FloatArray
        ``(..., 4H)``: the ``x, z`` of each future position in root space, then the ``x, z`` of
        each future facing in root axes (``sin``, ``cos`` of the yaw difference).
    """
    position = as_array(root_position, "root_position", (3,))
    yaw = as_array(root_yaw, "root_yaw")
    futures = as_array(future_positions, "future_positions", (3,))
    future_yaws = as_array(future_yaws, "future_yaws")
    count = len(layout.horizons)
    batch = yaw.shape
    if position.shape != (*batch, 3) or futures.shape != (*batch, count, 3) or future_yaws.shape != (*batch, count):
        raise InvalidInputError(
            f"for {count} horizons and roots {batch}: root_position must be {(*batch, 3)}, future_positions "
            f"{(*batch, count, 3)}, future_yaws {(*batch, count)}; got {position.shape}, {futures.shape}, "
            f"{future_yaws.shape}"
        )
    with trusted():
        local = quat_rotate(quat_conjugate(yaw_quaternions(yaw))[..., None, :], futures - position[..., None, :])
    turn = future_yaws - yaw[..., None]
    parts = {
        "trajectory_positions": np.stack((local[..., 0], local[..., 2]), axis=-1),
        "trajectory_directions": np.stack((np.sin(turn), np.cos(turn)), axis=-1),
    }
    columns = [parts[g.name].reshape((*batch, 2 * count)) for g in layout.groups if g.name in parts]
    return np.concatenate(columns, axis=-1)


def feature_vectors(pose_part: FloatArray, trajectory_part: FloatArray) -> FloatArray:
    """Whole raw feature vectors ``(..., D)`` from their pose and trajectory columns (layout order)."""
    return np.concatenate((pose_part, trajectory_part), axis=-1)


def normalisation(features: FloatArray, layout: FeatureLayout) -> tuple[FloatArray, FloatArray, tuple[str, ...]]:
    """Per-column offsets and scales making ``(raw − offset) · scale`` the weighted, normalised features.

    ``offset`` is each column's mean over the frames; per group, ``scale = weight / σ`` with ``σ``
    the mean of the group's column standard deviations (Holden's rule). A group constant over
    every frame (``σ = 0``) keeps ``σ = 1`` and is returned in the third value.
    """
    offset = features.mean(axis=0)
    deviation = features.std(axis=0)
    scale = np.zeros(features.shape[1])
    constant = []
    for group in layout.groups:
        sigma = float(deviation[group.columns].mean())
        if not sigma > 0.0:
            constant.append(group.name)
            sigma = 1.0
        scale[group.columns] = group.weight / sigma
    return offset, scale, tuple(constant)
