"""Root motion: the root joint's horizontal travel and heading, taken out of the pose as deltas.

The *planar transform* of a root joint is its heading (yaw about +Y) and its horizontal
translation (x, z), in the root's parent space (+Y up, ``docs/conventions.md``). The pose keeps
the rest of the motion — height and the swing (pitch/roll) left after removing the yaw — so it
plays in place, while the game moves the character by the deltas.

A planar transform is stored as ``(yaw, w)`` with ``w = z + i·x`` complex: rotating by ``yaw``
about +Y is then ``w · exp(i·yaw)``, and composing "``a`` then ``b`` in ``a``'s frame" is
``(yaw_a + yaw_b, w_a + exp(i·yaw_a) · w_b)``. Powers (``n`` loops of a clip at once, in either
direction) have the closed form of a geometric series.

For a clip played from raw time ``a`` to ``b`` (see :mod:`engine.anim.events`) the delta is
``D = M(l_a)⁻¹ · M(0) · L^n · M(0)⁻¹ · M(l_b)`` where ``M(l)`` is the root's planar transform at
clip time ``l``, ``L = M(0)⁻¹ M(duration)`` is one loop's travel and ``n`` the number of wraps
between ``a`` and ``b`` (always 0 for once and ping-pong, whose clip time runs back over the same
ground). So N loops travel exactly N times one loop, whatever ``dt`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.math._checks import FloatArray, as_array
from engine.math.quat import quat_multiply

ComplexArray = npt.NDArray[np.complex128]

#: Below this ``|1 - exp(i·yaw)|`` a loop counts as not turning: ``L^n`` uses ``n·w``.
STRAIGHT_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Planar:
    """Planar transforms: heading ``yaw`` ``(...)`` in radians and ``w = z + i·x`` ``(...)`` complex."""

    yaw: FloatArray
    w: ComplexArray

    def then(self, other: Planar) -> Planar:
        """``self`` followed by ``other`` expressed in ``self``'s frame."""
        return Planar(self.yaw + other.yaw, self.w + np.exp(1j * self.yaw) * other.w)

    def inverse(self) -> Planar:
        """The transform undoing ``self``."""
        return Planar(-self.yaw, -np.exp(-1j * self.yaw) * self.w)

    def power(self, n: Any) -> Planar:
        """``self`` applied ``n`` times (integer ``n``, negative for the inverse), in closed form."""
        n = np.asarray(n, dtype=np.float64)
        rotor = np.exp(1j * self.yaw)
        straight = np.abs(1.0 - rotor) < STRAIGHT_TOLERANCE
        safe = np.where(straight, 2.0, 1.0 - rotor)
        series = np.where(straight, n, (1.0 - np.exp(1j * n * self.yaw)) / safe)
        return Planar(n * self.yaw, self.w * series)

    @property
    def translation(self) -> FloatArray:
        """Translation ``(..., 3)`` as ``(x, 0, z)``."""
        return np.stack((self.w.imag, np.zeros_like(self.w.real), self.w.real), axis=-1)


def yaw_from_quat(q: Any) -> FloatArray:
    """Heading ``(...)`` in ``(-π, π]``: the twist of unit quaternions ``(..., 4)`` about +Y.

    ``q = twist · swing`` with ``twist = (0, q_y, 0, q_w) / |·|`` and a swing without a Y
    component; the heading is ``2·atan2(q_y, q_w)`` (0 for a pure 180° swing).
    """
    q = as_array(q, "q", (4,))
    yaw = 2.0 * np.arctan2(q[..., 1], q[..., 3])
    return np.where(yaw > np.pi, yaw - 2.0 * np.pi, np.where(yaw <= -np.pi, yaw + 2.0 * np.pi, yaw))


def planar_from_root(translations: Any, rotations: Any) -> Planar:
    """Planar transforms of root joints from their translations ``(..., 3)`` and rotations ``(..., 4)``."""
    t = as_array(translations, "translations", (3,))
    return Planar(yaw_from_quat(rotations), t[..., 2] + 1j * t[..., 0])


def remove_planar(translations: Any, rotations: Any) -> tuple[FloatArray, FloatArray]:
    """The in-place root: ``M⁻¹ · root`` keeps the height and the swing, drops x, z and the yaw.

    Returns translations ``(..., 3)`` as ``(0, y, 0)`` and rotations ``(..., 4)`` without a
    +Y twist (``twist⁻¹ · q``).
    """
    t = as_array(translations, "translations", (3,))
    q = as_array(rotations, "rotations", (4,))
    half = 0.5 * yaw_from_quat(q)
    untwist = np.zeros(q.shape)
    untwist[..., 1] = -np.sin(half)
    untwist[..., 3] = np.cos(half)
    in_place = np.zeros(t.shape)
    in_place[..., 1] = t[..., 1]
    return in_place, quat_multiply(untwist, q)


def root_motion_delta(begin: Planar, end: Planar, first: Planar, last: Planar, loops: Any) -> Planar:
    """Planar delta of one update: ``M(l_a)⁻¹ · M(0) · L^n · M(0)⁻¹ · M(l_b)`` (module docstring).

    Parameters
    ----------
    begin, end
        Root planar transforms at the clip times before and after the update, ``(C,)``.
    first, last
        Root planar transforms at clip time 0 and at the clip's end (scalars or ``(C,)``).
    loops
        Wraps ``n`` crossed during the update ``(C,)``: positive forwards, negative backwards.

    Returns
    -------
    Planar
        The delta in the character's frame at the start of the update: the game moves the
        character by ``translation`` rotated by its current heading, then turns it by ``yaw``.
    """
    loop = first.inverse().then(last)
    return begin.inverse().then(first).then(loop.power(loops)).then(first.inverse()).then(end)
