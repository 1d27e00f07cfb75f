"""The character's root: a smoothed ground frame under the hips, and poses re-expressed in it.

A motion-matching database moves the character by a *root* (Holden's "simulation bone") rather
than by the hips: the hips sway and twist within every stride, the root glides. Per frame:

- **position**: the hips' model-space position dropped onto the ground (``y = 0``), smoothed
  over time with a Gaussian of ``position_sigma`` seconds;
- **facing**: the hips' rotation change from rest applied to the skeleton's rest forward
  (``left × up``, left from the right to the left thigh: :func:`rest_forward`), dropped onto
  the ground, smoothed with a Gaussian of ``direction_sigma`` seconds and normalised; stored as
  a yaw about ``+Y``, ``yaw = 0`` facing ``+Z`` (``docs/conventions.md``).

The ends of a clip are padded by point reflection before smoothing (``2·x₀ − x_k``), so a
straight line at constant speed is left exactly as it is, up to its last frame. Poses in root
space (:func:`to_root_space`) have the root at the origin facing ``+Z``, the motion in the hips
(the joints above them at rest).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.anim.humanoid import UP, Humanoid, rest_positions
from engine.anim.local_to_model import model_from_pose
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import DegenerateInputError, InvalidInputError
from engine.math import (
    matrix_from_quat,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_matrix,
    quat_multiply,
    quat_rotate,
    trusted,
)
from engine.math._checks import FloatArray

#: Default Gaussian widths (seconds) smoothing the root position and facing.
POSITION_SIGMA = 0.2
DIRECTION_SIGMA = 0.3
#: Below this horizontal length (of a unit vector) the hips' forward is taken to point straight up or down.
_VERTICAL = 1e-6


def yaw_quaternions(yaws: FloatArray) -> FloatArray:
    """Unit quaternions ``(..., 4)`` turning by ``yaws`` ``(...)`` radians about ``+Y``."""
    return quat_from_axis_angle(UP, yaws)


def rest_forward(body: Humanoid) -> FloatArray:
    """The rest pose's horizontal facing ``(3,)``: ``left × up`` with left from the right to the left thigh."""
    positions = rest_positions(body.skeleton)
    left = positions[body.roles["upper_leg_l"]] - positions[body.roles["upper_leg_r"]]
    forward = np.array([-left[2], 0.0, left[0]])  # left × (0, 1, 0)
    length = float(np.linalg.norm(forward))
    if length < 1e-9:
        raise DegenerateInputError("the rest thighs are at one place along the ground: no rest facing")
    return forward / length


def gaussian_smooth(signal: FloatArray, sigma: float) -> FloatArray:
    """``signal`` ``(F, k)`` smoothed along axis 0 by a Gaussian of ``sigma`` samples (0: unchanged).

    The ends are padded by point reflection (``2·x₀ − x_k``), which keeps straight lines straight.
    """
    if sigma < 0 or not np.isfinite(sigma):
        raise InvalidInputError(f"smoothing width must be a finite number >= 0, got {sigma}")
    frames = signal.shape[0]
    if sigma == 0 or frames < 2:
        return signal.copy()
    half = min(int(np.ceil(3.0 * sigma)), frames - 1)
    offsets = np.arange(-half, half + 1)
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2)
    kernel /= kernel.sum()
    padded = np.concatenate(
        (2.0 * signal[:1] - signal[half:0:-1], signal, 2.0 * signal[-1:] - signal[-2 : -half - 2 : -1])
    )
    out = np.zeros_like(signal)
    for k, weight in zip(offsets, kernel, strict=True):  # 2·half + 1 shifted adds, over all frames at once
        out += weight * padded[half + k : half + k + frames]
    return out


@dataclass(frozen=True)
class RootTrack:
    """A root per frame: ground positions ``(F, 3)`` (``y = 0``) and yaws ``(F,)`` (radians, unwrapped)."""

    positions: FloatArray
    yaws: FloatArray

    @property
    def rotations(self) -> FloatArray:
        """Yaw quaternions ``(F, 4)``."""
        return yaw_quaternions(self.yaws)


def root_track(
    hips_positions: FloatArray,
    hips_rotations: FloatArray,
    rest_hips_rotation: FloatArray,
    forward: FloatArray,
    fps: float,
    *,
    position_sigma: float = POSITION_SIGMA,
    direction_sigma: float = DIRECTION_SIGMA,
) -> RootTrack:
    """The root of each frame from the hips' model-space positions ``(F, 3)`` and rotations ``(F, 4)``.

    ``rest_hips_rotation`` ``(4,)`` is the hips' rest model rotation and ``forward`` ``(3,)`` the
    rest facing (:func:`rest_forward`); ``fps`` converts the sigmas (seconds) into frames.
    """
    with trusted():
        change = quat_multiply(hips_rotations, quat_conjugate(rest_hips_rotation))
        facing = quat_rotate(change, np.broadcast_to(forward, hips_positions.shape))
    facing[:, 1] = 0.0
    lengths = np.linalg.norm(facing, axis=-1)
    if np.any(lengths < _VERTICAL):
        frame = int(np.argmin(lengths))
        raise DegenerateInputError(f"frame {frame}: the hips face straight up or down, so the root has no facing")
    facing = gaussian_smooth(facing / lengths[:, None], direction_sigma * fps)
    ground = hips_positions.copy()
    ground[:, 1] = 0.0
    ground = gaussian_smooth(ground, position_sigma * fps)
    ground[:, 1] = 0.0
    yaws = np.unwrap(np.arctan2(facing[:, 0], facing[:, 2]))
    return RootTrack(ground, yaws)


def extend_track(track: RootTrack, count: int) -> RootTrack:
    """``track`` followed by ``count`` frames that continue its last step: same turn, same stride in root space."""
    if track.yaws.size < 2:  # a single frame stands still
        turn, step_world = 0.0, np.zeros(3)
    else:
        turn = track.yaws[-1] - track.yaws[-2]
        step_world = track.positions[-1] - track.positions[-2]
    with trusted():
        step_local = quat_rotate(quat_conjugate(yaw_quaternions(track.yaws[-1])), step_world)
    steps = np.arange(1, count + 1)
    yaws = track.yaws[-1] + turn * steps
    with trusted():
        moves = quat_rotate(yaw_quaternions(yaws), np.broadcast_to(step_local, (count, 3)))
    positions = track.positions[-1] + np.cumsum(moves, axis=0)
    return RootTrack(np.concatenate((track.positions, positions)), np.concatenate((track.yaws, yaws)))


def to_root_space(skeleton: Skeleton, pose: Pose, hips: int, track: RootTrack) -> Pose:
    """``pose`` ``(F, J)`` re-expressed in each frame's root: model space becomes root space.

    The motion is carried by the hips and by the joints hanging from the hips' ancestors (or
    from nothing): each of those gets ``A_p⁻¹ · R⁻¹ · M_p`` in front of its local transform,
    ``M_p`` its parent's model matrix in the frame, ``A_p`` the parent's rest model matrix and
    ``R`` the frame's root. The hips' ancestors themselves are put at rest, so that a rig with a
    joint under the hips (the mannequin's ``root``) has it at the root, still, and the motion
    is in the hips whichever joint carried it in the source. The hips' ancestors are taken rigid.
    """
    ancestors = set()
    joint = int(skeleton.parents[hips])
    while joint >= 0:
        ancestors.add(joint)
        joint = int(skeleton.parents[joint])
    parents = skeleton.parents
    top = {-1} | ancestors
    moved = [j for j in range(skeleton.num_joints) if j not in ancestors and int(parents[j]) in top]
    world = model_from_pose(skeleton, pose)
    rest = model_from_pose(skeleton, skeleton.rest_pose)
    root = np.zeros((pose.shape[0], 4, 4))
    with trusted():
        root[:, :3, :3] = matrix_from_quat(quat_conjugate(track.rotations))
    root[:, :3, 3] = -np.einsum("fij,fj->fi", root[:, :3, :3], track.positions)
    root[:, 3, 3] = 1.0
    out = pose.copy()
    with trusted():
        for j in moved:  # the joints carrying the motion: the hips, and the other top joints (a few)
            parent = int(parents[j])
            change = root if parent < 0 else np.linalg.inv(rest[parent]) @ root @ world[:, parent]
            turn = quat_from_matrix(change[:, :3, :3])
            offset = np.einsum("fij,fj->fi", change[:, :3, :3], out.translations[:, j])
            out.translations[:, j] = offset + change[:, :3, 3]
            out.rotations[:, j] = quat_multiply(turn, out.rotations[:, j])
        for j in ancestors:
            out.translations[:, j] = skeleton.rest_translations[j]
            out.rotations[:, j] = skeleton.rest_rotations[j]
            out.scales[:, j] = skeleton.rest_scales[j]
    return out
