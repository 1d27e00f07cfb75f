"""Debug lines for testbeds: bones, joint axes, rotations as axis + angle, IK targets, frusta.

Calls during a frame only collect line segments (validated, in world space); :meth:`DebugDraw.flush`
uploads them all and draws them with one ``GL_LINES`` call, then empties the list.
Following seed 002's debugging advice, :meth:`DebugDraw.rotation` shows a quaternion as what it
means: its axis, and an arc sweeping its angle about that axis.
"""

from __future__ import annotations

from typing import Any

import moderngl
import numpy as np

from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math import any_perpendicular, axis_angle_from_quat, gl_pack, quat_from_axis_angle, quat_rotate
from engine.math._checks import FloatArray, as_array
from engine.render.shaders import load_program, uniform

Color = tuple[float, float, float, float]

BONE_COLOR: Color = (1.0, 0.85, 0.2, 1.0)
AXIS_COLORS: tuple[Color, Color, Color] = ((1.0, 0.2, 0.2, 1.0), (0.2, 1.0, 0.2, 1.0), (0.3, 0.4, 1.0, 1.0))
ROTATION_AXIS_COLOR: Color = (1.0, 0.3, 1.0, 1.0)
ROTATION_ARC_COLOR: Color = (0.3, 1.0, 1.0, 1.0)
TARGET_COLOR: Color = (1.0, 0.5, 0.1, 1.0)
FRUSTUM_COLOR: Color = (0.8, 0.8, 0.8, 1.0)

# Octahedron around an IK target: the 6 tips (±x, ±y, ±z) and its 12 edges, plus the 3 axes.
_TIPS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], dtype=np.float64)
_TARGET_EDGES = np.array(
    [
        [0, 2],
        [0, 3],
        [0, 4],
        [0, 5],
        [1, 2],
        [1, 3],
        [1, 4],
        [1, 5],
        [2, 4],
        [2, 5],
        [3, 4],
        [3, 5],
        [0, 1],
        [2, 3],
        [4, 5],
    ]
)
# Clip-space cube corners (x, y, z = ±1, bit 0 = x, bit 1 = y, bit 2 = z) and its 12 edges.
_CUBE = np.array([[(i & 1) * 2 - 1, (i >> 1 & 1) * 2 - 1, (i >> 2 & 1) * 2 - 1, 1] for i in range(8)], np.float64)
_CUBE_EDGES = np.array([[a, a | bit] for a in range(8) for bit in (1, 2, 4) if not a & bit])


def frustum_corners(view: Any, projection: Any) -> FloatArray:
    """World-space corners ``(8, 3)`` of a camera's view volume.

    Corner ``i`` is the clip-space point with x = +1 if bit 0 of ``i`` is set (else −1), y from
    bit 1 and z from bit 2 (+1 = far plane), mapped back through ``inverse(projection @ view)``.
    """
    view = as_array(view, "view", (4, 4))
    projection = as_array(projection, "projection", (4, 4))
    if view.shape != (4, 4) or projection.shape != (4, 4):
        raise InvalidInputError(f"view and projection must be (4, 4), got {view.shape} and {projection.shape}")
    corners = np.linalg.inv(projection @ view) @ _CUBE.T
    return (corners[:3] / corners[3]).T


class DebugDraw:
    """Collects coloured world-space line segments and draws them in one call per flush.

    Parameters
    ----------
    ctx
        The OpenGL context.

    Examples
    --------
    ::

        debug = DebugDraw(ctx)
        debug.bones(skeleton, world @ model_matrices)
        debug.axes(world @ model_matrices, length=0.05)
        debug.rotation(pose.rotations[0, elbow], origin=elbow_position)
        debug.flush(view, projection)
    """

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self.program = load_program(ctx, "lines.vert", "lines.frag")
        self._buffer = ctx.buffer(reserve=2 * 7 * 4 * 256)
        self._vao = ctx.vertex_array(self.program, [(self._buffer, "3f 4f", "in_position", "in_color")])
        self._segments: list[np.ndarray] = []

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        """What was collected since the last flush: endpoints ``(N, 2, 3)`` and colours ``(N, 2, 4)``."""
        if not self._segments:
            return np.zeros((0, 2, 3), np.float32), np.zeros((0, 2, 4), np.float32)
        collected = np.concatenate(self._segments)
        return collected[..., :3], collected[..., 3:]

    def lines(self, starts: Any, ends: Any, color: Any = BONE_COLOR) -> None:
        """Add segments from ``starts`` to ``ends`` (both ``(..., 3)``, broadcast).

        ``color`` is one RGBA ``(4,)`` or one per segment ``(..., 4)``.
        """
        starts = as_array(starts, "starts", (3,))
        ends = as_array(ends, "ends", (3,))
        color = as_array(color, "color", (4,))
        starts, ends = np.broadcast_arrays(starts, ends)
        try:
            color = np.broadcast_to(color, (*starts.shape[:-1], 4))
        except ValueError:
            raise InvalidInputError(
                f"color must be (4,) or one RGBA per segment {(*starts.shape[:-1], 4)}, got {color.shape}"
            ) from None
        segment = np.empty((*starts.shape[:-1], 2, 7), dtype=np.float32)
        segment[..., 0, :3], segment[..., 1, :3] = starts, ends
        segment[..., :, 3:] = color[..., None, :]
        self._segments.append(segment.reshape(-1, 2, 7))

    def bones(self, skeleton: Skeleton, model_matrices: Any, color: Any = BONE_COLOR) -> None:
        """A line from each joint's parent to the joint.

        ``model_matrices`` ``(..., J, 4, 4)``: joint transforms in the space to draw in (world,
        for a placed character: ``world @ model``).
        """
        matrices = as_array(model_matrices, "model_matrices", (4, 4))
        if matrices.ndim < 3 or matrices.shape[-3] != skeleton.num_joints:
            raise SkeletonMismatchError(
                f"model_matrices must have shape (..., {skeleton.num_joints}, 4, 4), got {matrices.shape}"
            )
        children = np.nonzero(skeleton.parents >= 0)[0]
        positions = matrices[..., :3, 3]
        self.lines(positions[..., skeleton.parents[children], :], positions[..., children, :], color)

    def axes(self, matrices: Any, length: float = 0.1) -> None:
        """Each frame's x, y, z axes (red, green, blue) of ``length`` from its origin; ``(..., 4, 4)``."""
        matrices = as_array(matrices, "matrices", (4, 4))
        origin = matrices[..., None, :3, 3]
        tips = origin + length * np.swapaxes(matrices[..., :3, :3], -1, -2)
        self.lines(np.broadcast_to(origin, tips.shape), tips, np.array(AXIS_COLORS))

    def rotation(
        self,
        rotations: Any,
        origin: Any = (0.0, 0.0, 0.0),
        length: float = 0.2,
        *,
        segments: int = 24,
        axis_color: Any = ROTATION_AXIS_COLOR,
        arc_color: Any = ROTATION_ARC_COLOR,
    ) -> None:
        """Show unit quaternions ``(..., 4)`` as their axis and angle, at ``origin`` ``(..., 3)``.

        The axis is a line of ``length`` from the origin. The angle is an arc of radius
        ``length / 2`` in the plane perpendicular to the axis, from a reference spoke to the
        spoke rotated by the angle (right-hand rule about the axis), with ``segments`` pieces.
        The identity shows as the axis ``(1, 0, 0)`` and no arc length.
        """
        axis, angle = axis_angle_from_quat(rotations)
        origin = as_array(origin, "origin", (3,))
        shape = np.broadcast_shapes(axis.shape, origin.shape)
        axis, origin = np.broadcast_to(axis, shape), np.broadcast_to(origin, shape)
        angle = np.broadcast_to(angle, shape[:-1])
        self.lines(origin, origin + length * axis, axis_color)
        fractions = np.linspace(0.0, 1.0, segments + 1)
        sweep = quat_from_axis_angle(axis[..., None, :], angle[..., None] * fractions)
        spoke = 0.5 * length * any_perpendicular(axis)
        arc = origin[..., None, :] + quat_rotate(sweep, spoke[..., None, :])
        self.lines(arc[..., :-1, :], arc[..., 1:, :], arc_color)
        self.lines(np.stack((origin, origin), axis=-2), arc[..., [0, -1], :], arc_color)

    def target(self, positions: Any, size: float = 0.05, color: Any = TARGET_COLOR) -> None:
        """An IK target: an octahedron of radius ``size`` with its three axes, at ``(..., 3)``."""
        positions = as_array(positions, "positions", (3,))
        tips = positions[..., None, :] + size * _TIPS
        self.lines(tips[..., _TARGET_EDGES[:, 0], :], tips[..., _TARGET_EDGES[:, 1], :], color)

    def frustum(self, view: Any, projection: Any, color: Any = FRUSTUM_COLOR) -> None:
        """The 12 edges of a camera's view volume from its ``view`` and ``projection`` ``(4, 4)``."""
        corners = frustum_corners(view, projection)
        self.lines(corners[..., _CUBE_EDGES[:, 0], :], corners[..., _CUBE_EDGES[:, 1], :], color)

    def clear(self) -> None:
        """Drop the collected segments without drawing."""
        self._segments.clear()

    def flush(self, view: Any, projection: Any, *, depth_test: bool = True) -> None:
        """Draw everything collected since the last flush with one call, then clear.

        ``depth_test=False`` draws the lines over the scene (e.g. bones inside a mesh).
        """
        view = as_array(view, "view", (4, 4))
        projection = as_array(projection, "projection", (4, 4))
        if not self._segments:
            return
        vertices = np.concatenate(self._segments).reshape(-1, 7)
        self._segments.clear()
        if vertices.nbytes > self._buffer.size:
            self._buffer.orphan(max(vertices.nbytes, 2 * self._buffer.size))
        self._buffer.write(vertices)
        uniform(self.program, "u_view").write(gl_pack(view))
        uniform(self.program, "u_projection").write(gl_pack(projection))
        if depth_test:
            self.ctx.enable(moderngl.DEPTH_TEST)
        else:
            self.ctx.disable(moderngl.DEPTH_TEST)
        self._vao.render(moderngl.LINES, vertices=len(vertices))

    def release(self) -> None:
        """Free the GPU buffer, vertex array and program."""
        self._vao.release()
        self._buffer.release()
        self.program.release()
