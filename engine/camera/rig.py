"""Game-facing camera objects: an immutable :class:`Camera` and a third-person :class:`FollowRig`.

These hold state and call the pure functions of :mod:`engine.camera`; they have no math of their
own. :func:`orbit_orientation` and :func:`yaw_pitch_from_forward` are the batched helpers the rig
uses, public for other rigs.

A :class:`FollowRig` orbits a character each frame:

1. ``yaw += yaw_input``, ``pitch += pitch_input``, pitch clamped to ``pitch_limits``. Pitch > 0
   looks up, and yaw 0 looks down −Z.
2. If ``cone_limit`` is set and the character's facing is given, the view direction is kept
   within ``cone_limit`` radians of the character's forward (:func:`swing_twist_clamp`, swing
   only). Yaw and pitch are then re-read from the clamped view, so input never winds up past
   the cone's edge.
3. The camera orientation (no roll) and the pivot ``target + pivot_offset`` are smoothed, by
   exponential smoothing or by critically damped springs with the given half-lives. Both are
   frame-rate independent.
4. The camera sits ``distance`` behind the smoothed pivot along the smoothed view direction.
   Collision is the game's business: pass a shortened ``distance`` to :meth:`FollowRig.update`.

Examples
--------
>>> import numpy as np
>>> rig = FollowRig(distance=4.0, pivot_offset=(0.0, 1.5, 0.0), pitch=0.0)
>>> camera = rig.update(1 / 60, target_position=[0.0, 0.0, 0.0])
>>> np.round(camera.position, 6) + 0.0                   # behind (+Z) the pivot, looking down -Z
array([0. , 1.5, 4. ])
>>> camera.view_matrix().shape, camera.projection_matrix(16 / 9).shape
((4, 4), (4, 4))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.camera._params import check_angle_limit, check_dt, check_nonnegative, check_positive
from engine.camera.cone import swing_twist_clamp
from engine.camera.look_at import WORLD_UP, camera_axes, look_at, view_matrix
from engine.camera.smoothing import smooth_position, smooth_rotation
from engine.camera.spring import spring_position, spring_rotation
from engine.errors import InvalidInputError
from engine.math import perspective, quat_from_axis_angle, quat_from_yaw_pitch_roll, quat_multiply
from engine.math._checks import FloatArray, as_array

#: Modes of :class:`FollowRig` smoothing.
SMOOTHING_MODES = ("exponential", "spring", "none")
# a camera looking along a model's +Z forward: the model's frame turned half a turn about +Y
_FACING_TO_VIEW = quat_from_axis_angle([0.0, 1.0, 0.0], np.pi)


def orbit_orientation(yaw: Any, pitch: Any) -> FloatArray:
    """Camera orientations ``(..., 4)`` with no roll: yaw about world +Y, then pitch about the camera's X.

    ``yaw = pitch = 0`` looks down −Z; positive ``pitch`` looks up; ``q = q_yaw · q_pitch``.
    """
    return quat_from_yaw_pitch_roll(yaw, pitch, 0.0)


def yaw_pitch_from_forward(forward: Any) -> tuple[FloatArray, FloatArray]:
    """Yaw and pitch ``(...)`` (radians) of view directions ``(..., 3)``; inverse of :func:`orbit_orientation`.

    Straight up or down the yaw is 0 (no ``asin``, so never NaN for rounded inputs).
    """
    f = as_array(forward, "forward", (3,))
    yaw = np.arctan2(0.0 - f[..., 0], 0.0 - f[..., 2])  # 0.0 - x: no -0.0, so atan2(0, 0) is 0, not -π
    pitch = np.arctan2(f[..., 1], np.hypot(f[..., 0], f[..., 2]))
    return yaw, pitch


@dataclass(frozen=True, eq=False)
class Camera:
    """An immutable camera: pose and lens. Build new ones with :meth:`look_at` or :meth:`with_pose`.

    Attributes
    ----------
    position
        World position ``(3,)``.
    orientation
        Unit quaternion ``(4,)``, camera axes to world (looks down its −Z).
    fov_y
        Vertical field of view in radians, in ``(0, π)``.
    near, far
        Clip distances, ``0 < near < far``.
    """

    position: FloatArray
    orientation: FloatArray
    fov_y: float = float(np.radians(60.0))
    near: float = 0.1
    far: float = 1000.0

    def __post_init__(self) -> None:
        if not (0.0 < self.fov_y < np.pi and 0.0 < self.near < self.far and np.isfinite(self.far)):
            raise InvalidInputError(
                f"Camera needs 0 < fov_y < π and 0 < near < far < inf, got fov_y={self.fov_y}, "
                f"near={self.near}, far={self.far}"
            )
        position = as_array(self.position, "position", (3,)).reshape(3).copy()
        orientation = as_array(self.orientation, "orientation", (4,)).reshape(4).copy()
        position.flags.writeable = False
        orientation.flags.writeable = False
        object.__setattr__(self, "position", position)
        object.__setattr__(self, "orientation", orientation)

    @classmethod
    def look_at(
        cls, eye: Any, target: Any, up: Any = WORLD_UP, previous: Camera | None = None, **lens: float
    ) -> Camera:
        """A camera at ``eye`` looking at ``target`` (:func:`~engine.camera.look_at.look_at`).

        Pass last frame's camera as ``previous`` to stay continuous through the poles; ``lens``
        takes ``fov_y``, ``near``, ``far``.
        """
        q = look_at(eye, target, up, None if previous is None else previous.orientation)
        return cls(as_array(eye, "eye", (3,)), q, **lens)

    def with_pose(self, position: Any, orientation: Any) -> Camera:
        """The same lens at a new pose."""
        return Camera(position, orientation, self.fov_y, self.near, self.far)

    @property
    def right(self) -> FloatArray:
        """World right vector ``(3,)``."""
        return camera_axes(self.orientation)[0]

    @property
    def up(self) -> FloatArray:
        """World screen-up vector ``(3,)``."""
        return camera_axes(self.orientation)[1]

    @property
    def forward(self) -> FloatArray:
        """World view direction ``(3,)``."""
        return camera_axes(self.orientation)[2]

    def view_matrix(self) -> FloatArray:
        """World-to-camera matrix ``(4, 4)``."""
        return view_matrix(self.position, self.orientation)

    def projection_matrix(self, aspect: float) -> FloatArray:
        """OpenGL perspective ``(4, 4)`` for a viewport of ``aspect`` = width / height."""
        return perspective(self.fov_y, aspect, self.near, self.far)

    def view_projection(self, aspect: float) -> FloatArray:
        """``projection @ view`` ``(4, 4)``."""
        return self.projection_matrix(aspect) @ self.view_matrix()


class FollowRig:
    """Third-person orbit camera around a character (see the module docstring for the steps).

    Parameters
    ----------
    distance
        Metres from the pivot to the camera, ``>= 0``.
    pivot_offset
        ``(3,)`` world-space offset from the target position to the orbit pivot (e.g. head height).
    yaw, pitch
        Initial angles in radians.
    pitch_limits
        ``(lowest, highest)`` pitch in radians, within ``[-π/2, π/2]``.
    cone_limit
        Largest angle in ``(0, π]`` between the view direction and the character's forward, or
        ``None`` for a free orbit. Applies when :meth:`update` is given ``target_facing``.
    smoothing
        ``"exponential"``, ``"spring"`` or ``"none"``.
    rotation_half_life, position_half_life
        Half-lives in seconds (``> 0``) of the orientation and pivot smoothing.
    camera
        Lens template (``fov_y``, ``near``, ``far``); its pose is ignored.
    """

    def __init__(
        self,
        *,
        distance: float = 4.0,
        pivot_offset: Any = (0.0, 1.6, 0.0),
        yaw: float = 0.0,
        pitch: float = -0.3,
        pitch_limits: tuple[float, float] = (-1.3, 1.0),
        cone_limit: float | None = None,
        smoothing: str = "exponential",
        rotation_half_life: float = 0.08,
        position_half_life: float = 0.05,
        camera: Camera | None = None,
    ) -> None:
        low, high = (float(v) for v in as_array(pitch_limits, "pitch_limits", (2,)))
        if not -np.pi / 2 <= low <= high <= np.pi / 2:
            raise InvalidInputError(f"pitch_limits must satisfy -π/2 <= low <= high <= π/2, got ({low}, {high})")
        if smoothing not in SMOOTHING_MODES:
            raise InvalidInputError(f"smoothing must be one of {SMOOTHING_MODES}, got {smoothing!r}")
        self.distance = float(check_nonnegative(distance, "distance"))
        self.pivot_offset = as_array(pivot_offset, "pivot_offset", (3,)).reshape(3)
        self.pitch_limits = (low, high)
        self.cone_limit = None if cone_limit is None else float(check_angle_limit(cone_limit, "cone_limit"))
        self.smoothing = smoothing
        self.rotation_half_life = float(check_positive(rotation_half_life, "rotation_half_life"))
        self.position_half_life = float(check_positive(position_half_life, "position_half_life"))
        self.yaw = float(as_array(yaw, "yaw"))
        self.pitch = float(np.clip(as_array(pitch, "pitch"), low, high))
        self._lens = camera if camera is not None else Camera(np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))
        self.camera: Camera | None = None
        self._orientation = np.array([0.0, 0.0, 0.0, 1.0])
        self._angular_velocity = np.zeros(3)
        self._pivot = np.zeros(3)
        self._pivot_velocity = np.zeros(3)
        self._snap = True

    def snap(self) -> None:
        """Skip smoothing on the next update (after a teleport or a cut)."""
        self._snap = True

    def desired_orientation(self, target_facing: Any = None) -> FloatArray:
        """The unsmoothed orientation ``(4,)`` for the current yaw and pitch, cone applied.

        Also writes the clamped yaw and pitch back, so input stops at the cone's edge.
        """
        q = orbit_orientation(self.yaw, self.pitch)
        if self.cone_limit is not None and target_facing is not None:
            centre = quat_multiply(as_array(target_facing, "target_facing", (4,)), _FACING_TO_VIEW)
            q = swing_twist_clamp(q, centre, self.cone_limit, np.pi)
            yaw, pitch = yaw_pitch_from_forward(camera_axes(q)[2])
            self.yaw, self.pitch = float(yaw), float(np.clip(pitch, *self.pitch_limits))
            q = orbit_orientation(self.yaw, self.pitch)
        return q

    def update(
        self,
        dt: float,
        target_position: Any,
        target_facing: Any = None,
        yaw_input: float = 0.0,
        pitch_input: float = 0.0,
        distance: float | None = None,
    ) -> Camera:
        """Advance the rig by ``dt`` seconds and return the camera for this frame.

        Parameters
        ----------
        dt
            Frame time ``>= 0`` in seconds.
        target_position
            The character's world position ``(3,)``.
        target_facing
            The character's orientation ``(4,)`` (model +Z forward), for the cone; ``None``
            leaves the orbit free.
        yaw_input, pitch_input
            Radians to add this frame (e.g. mouse delta × sensitivity).
        distance
            This frame's distance (e.g. shortened by the game's collision probe); ``None`` uses
            :attr:`distance`.
        """
        dt_ = float(check_dt(dt))
        self.yaw += float(as_array(yaw_input, "yaw_input"))
        self.pitch = float(np.clip(self.pitch + float(as_array(pitch_input, "pitch_input")), *self.pitch_limits))
        goal = self.desired_orientation(target_facing)
        pivot_goal = as_array(target_position, "target_position", (3,)).reshape(3) + self.pivot_offset
        if self._snap or self.smoothing == "none":
            self._orientation, self._pivot = goal, pivot_goal
            self._angular_velocity, self._pivot_velocity = np.zeros(3), np.zeros(3)
            self._snap = False
        elif self.smoothing == "exponential":
            self._orientation = smooth_rotation(self._orientation, goal, dt_, half_life=self.rotation_half_life)
            self._pivot = smooth_position(self._pivot, pivot_goal, dt_, half_life=self.position_half_life)
        else:
            self._orientation, self._angular_velocity = spring_rotation(
                self._orientation, self._angular_velocity, goal, dt_, half_life=self.rotation_half_life
            )
            self._pivot, self._pivot_velocity = spring_position(
                self._pivot, self._pivot_velocity, pivot_goal, dt_, half_life=self.position_half_life
            )
        reach = self.distance if distance is None else float(check_nonnegative(distance, "distance"))
        position = self._pivot - reach * camera_axes(self._orientation)[2]
        self.camera = self._lens.with_pose(position, self._orientation)
        return self.camera
