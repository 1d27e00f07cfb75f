"""Look-at orientations and view matrices that never flip or return NaN at the poles.

A camera orientation ``q`` maps camera axes to world axes (docs/conventions.md): the camera looks
down its local −Z, its right is local +X and its screen-up is local +Y, so the world forward is
``quat_rotate(q, (0, 0, -1))``. :func:`look_at` builds ``q`` from the basis

- ``forward = normalize(target - eye)``,
- ``right = normalize(forward × up)``,
- ``screen_up = right × forward``,

which is seed 002's construction, except for the case the seed gets wrong: when ``forward ∥ up``
(looking straight up or down) ``forward × up`` is zero. Seed 002 takes ``cross(up, forward)`` there
and divides by zero. Here the answer depends on whether the caller passes last frame's orientation:

``previous`` given (tracking: continuous)
    Of the two look-ats whose right vector is perpendicular to ``up`` (upright, and rolled 180°
    about the view direction) the result is the one nearer ``previous`` (upright on a tie).
    Exactly at the pole, where ``forward × up`` vanishes, the right vector is ``previous``'s,
    projected onto the new image plane (or ``forward × previous_up`` if ``previous``'s right
    lies along ``forward``). A target that passes exactly over the camera therefore makes it
    tilt over smoothly, as a camera on a tripod head does, and not spin 180° in one frame; it
    stays upside down until called without ``previous``. A target that passes at a small
    angle ``δ`` from the pole needs a 180° turn about ``up`` over about ``2δ`` of target motion:
    that is the geometry of a camera with no roll (a pan-tilt head's "keyhole"), not a flip,
    and smoothing (:mod:`engine.camera.smoothing`) is the tool to soften it.
``previous`` omitted (stateless: upright)
    The result is always upright (zero roll). Exactly at the pole, where "upright" has no
    meaning, the right vector is ``normalize(fallback_heading × up)``: the limit reached by
    pitching a camera that faces ``fallback_heading`` (default −Z, the unrotated camera)
    straight up or down. If that is zero too, any perpendicular is used. A target passing over
    the pole therefore flips the roll by 180°: pass ``previous`` to avoid that.

``eye == target`` has no forward direction. It raises :class:`~engine.errors.DegenerateInputError`
unless ``previous`` is given, in which case that orientation is returned unchanged.

Examples
--------
>>> import numpy as np
>>> from engine.math import quat_rotate
>>> q = look_at([0.0, 0.0, 0.0], [3.0, 0.0, 0.0])             # look along +X
>>> np.round(quat_rotate(q, [0.0, 0.0, -1.0]), 6) + 0.0
array([1., 0., 0.])
>>> right, screen_up, forward = camera_axes(look_at([0.0, 5.0, 0.0], [0.0, 0.0, 0.0]))  # straight down
>>> np.round(right, 6) + 0.0, np.round(screen_up, 6) + 0.0
(array([1., 0., 0.]), array([ 0.,  0., -1.]))

Tracking a batch of targets, passing last frame's orientations:

>>> eye = np.zeros((2, 3))
>>> q = look_at(eye, [[0.0, 1.0, -1.0], [1.0, 0.0, 0.0]])
>>> q = look_at(eye, [[0.0, 1.0, 0.0], [1.0, 0.1, 0.0]], previous=q)   # camera 0: straight up
>>> np.round(camera_axes(q)[0][0], 6) + 0.0                           # kept its right vector
array([1., 0., 0.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import DegenerateInputError
from engine.math import (
    any_perpendicular,
    matrix_from_quat,
    quat_canonical,
    quat_from_matrix,
    quat_multiply,
    quat_rotate,
)
from engine.math._checks import FloatArray, as_array, nonzero_norm
from engine.math.vec import vec_normalize

#: World up used when none is given.
WORLD_UP = (0.0, 1.0, 0.0)
#: The unrotated camera's forward: the heading assumed at the poles without ``previous``.
DEFAULT_HEADING = (0.0, 0.0, -1.0)
#: ``|target - eye|`` at or below this (relative to ``1 + |eye|``) counts as ``eye == target``.
COINCIDENT_TOLERANCE = 1e-12
#: ``|forward × up|`` at or below this is "exactly at the pole": the fallback right vector is used.
POLE_TOLERANCE = 1e-12
#: The rolled candidate wins only if it is nearer ``previous`` by more than this (in ``|dot|``).
TIE_TOLERANCE = 1e-9

_X = np.array([1.0, 0.0, 0.0])
_Y = np.array([0.0, 1.0, 0.0])
_Z = np.array([0.0, 0.0, 1.0])
_ROLL_180 = np.array([0.0, 0.0, 1.0, 0.0])  # half turn about the camera's own Z (view) axis


def camera_axes(orientation: Any) -> tuple[FloatArray, FloatArray, FloatArray]:
    """World-space ``(right, screen_up, forward)`` unit vectors ``(..., 3)`` of camera orientations.

    ``right = q·(+X)``, ``screen_up = q·(+Y)``, ``forward = q·(−Z)`` for unit quaternions
    ``orientation (..., 4)``.
    """
    q = as_array(orientation, "orientation", (4,))
    return quat_rotate(q, _X), quat_rotate(q, _Y), -quat_rotate(q, _Z)


def _orientation_from_basis(right: FloatArray, forward: FloatArray) -> FloatArray:
    """Unit quaternions whose columns are ``(right, right × forward, -forward)``."""
    screen_up = np.cross(right, forward)
    return quat_from_matrix(np.stack((right, screen_up, -forward), axis=-1))


def _pole_right(forward: FloatArray, up: FloatArray, heading: FloatArray) -> FloatArray:
    """Right vectors at the pole without ``previous``: ``heading × up`` on the image plane, else any perpendicular."""
    right = np.cross(heading, up)
    right = right - np.sum(right * forward, axis=-1, keepdims=True) * forward
    norm = np.linalg.norm(right, axis=-1, keepdims=True)
    return np.where(norm > POLE_TOLERANCE, right / np.maximum(norm, POLE_TOLERANCE), any_perpendicular(forward))


def look_at(
    eye: Any,
    target: Any,
    up: Any = WORLD_UP,
    previous: Any = None,
    *,
    fallback_heading: Any = DEFAULT_HEADING,
) -> FloatArray:
    """Orientation ``(..., 4)`` of a camera at ``eye`` looking at ``target`` (its −Z towards it).

    Parameters
    ----------
    eye, target
        Positions ``(..., 3)`` in world space; they broadcast against each other.
    up
        World up ``(..., 3)``, any non-zero length. The result's right vector is perpendicular
        to it (away from the poles, see the module docstring).
    previous
        Last frame's orientations ``(..., 4)``, or ``None``. When given, the result is continuous
        through the poles and ``eye == target`` returns ``previous``.
    fallback_heading
        ``(..., 3)``: without ``previous``, exactly at the pole the right vector is
        ``normalize(fallback_heading × up)``, or any perpendicular if that is zero too.

    Returns
    -------
    FloatArray
        Unit quaternions ``(..., 4)`` with ``w >= 0``.

    Raises
    ------
    InvalidInputError
        NaN/inf in any input, or a wrong shape.
    DegenerateInputError
        ``up`` of zero length, or ``eye == target`` without ``previous``.
    """
    eye = as_array(eye, "eye", (3,))
    target = as_array(target, "target", (3,))
    up = vec_normalize(up, "up")
    heading = as_array(fallback_heading, "fallback_heading", (3,))

    delta = target - eye
    distance = np.linalg.norm(delta, axis=-1, keepdims=True)
    coincident = distance <= COINCIDENT_TOLERANCE * (1.0 + np.linalg.norm(eye, axis=-1, keepdims=True))
    if previous is None and np.any(coincident):
        index = tuple(int(i) for i in np.argwhere(coincident[..., 0])[0])
        raise DegenerateInputError(
            f"eye and target must differ (no forward direction) unless previous is given, got eye == target"
            f"{f' at index {index}' if index else ''}"
        )
    forward = delta / np.where(coincident, 1.0, distance)

    if previous is None:
        right_up = np.cross(forward, up)
        sin_up = np.linalg.norm(right_up, axis=-1, keepdims=True)
        at_pole = sin_up <= POLE_TOLERANCE
        right = right_up / np.maximum(sin_up, POLE_TOLERANCE)
        if np.any(at_pole):  # rare: only then pay for the fallback
            right = np.where(at_pole, _pole_right(forward, up, heading), right)
        return _orientation_from_basis(right, forward)

    prev = as_array(previous, "previous", (4,))
    prev_norm = np.linalg.norm(prev, axis=-1, keepdims=True)
    nonzero_norm(prev_norm[..., 0], "previous", "quaternion")
    prev = prev / prev_norm
    prev_right, prev_up, prev_forward = camera_axes(prev)
    forward = np.where(coincident, prev_forward, forward)
    right_up = np.cross(forward, up)
    sin_up = np.linalg.norm(right_up, axis=-1, keepdims=True)

    # at the pole: previous right projected onto the image plane (prev up if forward turned onto it)
    carried = prev_right - np.sum(prev_right * forward, axis=-1, keepdims=True) * forward
    carried = np.where(np.linalg.norm(carried, axis=-1, keepdims=True) < 0.5, np.cross(forward, prev_up), carried)
    carried = carried / np.linalg.norm(carried, axis=-1, keepdims=True)
    at_pole = sin_up <= POLE_TOLERANCE
    upright = _orientation_from_basis(
        np.where(at_pole, carried, right_up / np.maximum(sin_up, POLE_TOLERANCE)), forward
    )
    rolled = quat_multiply(upright, _ROLL_180)
    use_rolled = np.abs(np.sum(rolled * prev, axis=-1)) > np.abs(np.sum(upright * prev, axis=-1)) + TIE_TOLERANCE
    q = np.where(use_rolled[..., None], rolled, upright)
    return quat_canonical(np.where(coincident, prev, q))


def view_matrix(position: Any, orientation: Any) -> FloatArray:
    """World-to-camera matrices ``(..., 4, 4)`` of cameras at ``position`` with ``orientation``.

    The inverse of the camera's model matrix ``T(position) · R(orientation)``: rotation block
    ``Rᵀ`` and translation ``-Rᵀ·position``. Feed it, then :func:`engine.math.perspective`, to
    the shaders.

    Parameters
    ----------
    position
        Camera positions ``(..., 3)`` in world space.
    orientation
        Unit quaternions ``(..., 4)`` (camera axes to world axes).

    Examples
    --------
    >>> import numpy as np
    >>> v = view_matrix([0.0, 0.0, 5.0], [0.0, 0.0, 0.0, 1.0])
    >>> v @ np.array([0.0, 0.0, 0.0, 1.0])     # the origin is 5 m in front (camera z = -5)
    array([ 0.,  0., -5.,  1.])
    """
    position = as_array(position, "position", (3,))
    rotation_t = np.swapaxes(matrix_from_quat(as_array(orientation, "orientation", (4,))), -1, -2)
    shape = np.broadcast_shapes(position.shape[:-1], rotation_t.shape[:-2])
    out = np.zeros((*shape, 4, 4))
    out[..., :3, :3] = rotation_t
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", rotation_t, position)
    out[..., 3, 3] = 1.0
    return out


def look_at_matrix(
    eye: Any,
    target: Any,
    up: Any = WORLD_UP,
    previous: Any = None,
    *,
    fallback_heading: Any = DEFAULT_HEADING,
) -> FloatArray:
    """View matrices ``(..., 4, 4)`` of :func:`look_at` cameras: ``view_matrix(eye, look_at(...))``.

    Away from the poles this equals the classic ``gluLookAt`` matrix. Arguments and errors are
    those of :func:`look_at`.
    """
    q = look_at(eye, target, up, previous, fallback_heading=fallback_heading)
    return view_matrix(eye, q)
