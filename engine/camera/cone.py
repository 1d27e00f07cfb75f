"""Cone constraints on orientations: exact clamping, and a swing-twist variant.

:func:`cone_clamp` keeps an orientation within ``limit`` radians of a centre orientation. The
distance is the angle of the rotation between them. Inside the cone the input comes back
unchanged. Outside, the result is the point of the great arc from the centre towards the input
whose angle is exactly ``limit``: ``slerp(centre, q, limit / angle)``. Seed 002 instead nudges the
orientation back by a fixed factor, which leaves it outside the cone or pulls it too far in.

:func:`swing_twist_clamp` limits the two parts of the rotation separately. The *swing* moves a
chosen axis, for a camera the view direction (local −Z). The *twist* is the roll about that
axis. This is the constraint a third-person camera (how far the view may turn away from the
character's facing, and how much it may roll) and an IK joint limit need.
:func:`swing_twist` is the decomposition itself.

All functions take unit quaternions ``(..., 4)`` (docs/conventions.md) and broadcast.

Examples
--------
>>> import numpy as np
>>> from engine.math import quat_angle, quat_from_axis_angle
>>> centre = quat_from_axis_angle([0.0, 1.0, 0.0], 0.0)
>>> q = quat_from_axis_angle([0.0, 1.0, 0.0], [0.2, 1.5])         # inside, outside a 0.5 rad cone
>>> clamped = cone_clamp(q, centre, 0.5)
>>> np.round(quat_angle(centre, clamped), 12)
array([0.2, 0.5])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.camera._params import check_angle_limit
from engine.math import kernels, quat_angle
from engine.math._checks import FloatArray, as_array
from engine.math.vec import vec_normalize

#: The camera's view axis in its own frame: the default axis for :func:`swing_twist_clamp`.
VIEW_AXIS = (0.0, 0.0, -1.0)


def cone_clamp(orientation: Any, centre: Any, limit: Any) -> FloatArray:
    """Clamp orientations to within ``limit`` radians of ``centre``, exactly onto the cone's edge.

    Parameters
    ----------
    orientation
        Unit quaternions ``(..., 4)`` to constrain.
    centre
        Unit quaternions ``(..., 4)``: the cone's axis (the centre orientation).
    limit
        Half-angle of the cone in ``(0, π]`` radians, scalar or ``(...)``. ``π`` allows everything.

    Returns
    -------
    FloatArray
        ``(..., 4)``: ``orientation`` itself (same values, same sign) where its angle to ``centre``
        is at most ``limit``. Elsewhere it is ``centre · (centre⁻¹·orientation) ** (limit / angle)``,
        which is ``slerp(centre, orientation, limit / angle)``: on the great arc, at exactly
        ``limit`` from the centre. It is computed through ``log``/``exp``, whose ``atan2``-based
        angle keeps ``limit`` exact to rounding even for tiny cones.

    Raises
    ------
    InvalidInputError
        NaN/inf, a wrong shape, or ``limit`` outside ``(0, π]``.
    """
    q = as_array(orientation, "orientation", (4,))
    centre = as_array(centre, "centre", (4,))
    limit = check_angle_limit(limit, "limit")
    angle = quat_angle(centre, q)
    outside = angle > limit
    factor = np.where(outside, limit / np.where(outside, angle, 1.0), 1.0)
    clamped = kernels.mul(centre, kernels.power(kernels.mul(kernels.conj(centre), q), factor))
    return np.where(outside[..., None], clamped, q)


def swing_twist(orientation: Any, axis: Any = VIEW_AXIS) -> tuple[FloatArray, FloatArray]:
    """Split rotations into ``swing · twist``: a twist about ``axis``, then a swing that moves it.

    Parameters
    ----------
    orientation
        Unit quaternions ``(..., 4)``.
    axis
        The twist axis ``(..., 3)`` (normalised here), in the frame the rotation acts on: the
        camera's local view axis ``-Z`` by default, or a bone's own axis for an IK joint.

    Returns
    -------
    swing, twist
        Unit quaternions ``(..., 4)`` with ``orientation == swing · twist`` (up to sign). The
        twist rotates about ``axis``. The swing's axis is perpendicular to ``axis``, and its
        angle is the angle between ``axis`` and ``orientation·axis``. For a swing of exactly
        180° the twist is undefined; it is then the identity.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.math import quat_from_axis_angle, quat_multiply
    >>> roll = quat_from_axis_angle([0.0, 0.0, -1.0], 0.3)
    >>> pitch = quat_from_axis_angle([1.0, 0.0, 0.0], 0.4)
    >>> swing, twist = swing_twist(quat_multiply(pitch, roll))
    >>> bool(np.allclose(swing, pitch) and np.allclose(twist, roll))
    True
    """
    q = as_array(orientation, "orientation", (4,))
    return kernels.swing_twist(q, vec_normalize(axis, "axis"))


def swing_twist_clamp(
    orientation: Any, centre: Any, swing_limit: Any, twist_limit: Any, axis: Any = VIEW_AXIS
) -> FloatArray:
    """Limit the swing of ``axis`` and the twist about it, both relative to ``centre``.

    The rotation from the centre, ``centre⁻¹ · orientation``, is split by :func:`swing_twist`.
    The swing is clamped exactly, keeping its axis with the angle brought down to
    ``swing_limit``: the view direction then lies on the cone of half-angle ``swing_limit``
    around the centre's. The twist angle is clamped to ``[-twist_limit, twist_limit]``. The two
    are then recombined (:func:`engine.math.kernels.swing_twist_clamp`, the clamp the IK joint
    limits use too).

    Parameters
    ----------
    orientation, centre
        Unit quaternions ``(..., 4)``.
    swing_limit
        Largest angle between ``centre·axis`` and ``orientation·axis``, in ``(0, π]`` radians.
    twist_limit
        Largest roll about the axis, in ``[0, π]`` radians. ``0`` removes all roll relative to
        the centre, and ``π`` leaves the roll free.
    axis
        The constrained axis in the orientations' own frame, ``(..., 3)``; default the camera's
        view axis ``(0, 0, -1)``.

    Returns
    -------
    FloatArray
        ``(..., 4)``: ``orientation`` unchanged where both parts are within their limits.

    Raises
    ------
    InvalidInputError
        NaN/inf, a wrong shape, ``swing_limit`` outside ``(0, π]`` or ``twist_limit`` outside
        ``[0, π]``.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.math import quat_from_axis_angle, quat_rotate
    >>> from engine.math.vec import angle_between
    >>> centre = np.array([0.0, 0.0, 0.0, 1.0])
    >>> q = quat_from_axis_angle([1.0, 0.0, 0.0], 1.2)           # pitched up 1.2 rad
    >>> out = swing_twist_clamp(q, centre, swing_limit=0.5, twist_limit=0.0)
    >>> round(float(angle_between(quat_rotate(out, [0, 0, -1]), [0, 0, -1])), 12)
    0.5
    """
    q = as_array(orientation, "orientation", (4,))
    centre = as_array(centre, "centre", (4,))
    swing_limit = check_angle_limit(swing_limit, "swing_limit")
    twist_limit = check_angle_limit(twist_limit, "twist_limit", allow_zero=True)
    axis = vec_normalize(axis, "axis")
    relative, changed = kernels.swing_twist_clamp(kernels.mul(kernels.conj(centre), q), axis, swing_limit, twist_limit)
    return np.where(changed[..., None], kernels.mul(centre, relative), q)
