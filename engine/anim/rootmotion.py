"""Root motion: the root joint's horizontal travel and heading, taken out of the pose as deltas.

The *planar transform* of a root joint is its heading (yaw about up) and its horizontal
translation, in the root's parent space. Up is +Y there by default (``docs/conventions.md``);
a root below a Z-up correction node (CesiumMan, a Blender armature turned +90° about X) has
another up in its parent space, which every function here takes as ``up``:
:func:`parent_up` reads it from a skeleton (model-space +Y seen through the parent's rest
transform). The pose keeps the rest of the motion — the height along up and the swing left after
removing the yaw — so it plays in place, while the game moves the character by the deltas.

A planar transform is stored as ``(yaw, w)`` with ``w = z + i·x`` complex, ``x`` and ``z`` the
coordinates in the plane across up (for ``up = +Y`` the parent space's own x and z; otherwise
those of the frame the shortest arc from up to +Y turns the parent space into): rotating by
``yaw`` about up is then ``w · exp(i·yaw)``, and composing "``a`` then ``b`` in ``a``'s frame" is
``(yaw_a + yaw_b, w_a + exp(i·yaw_a) · w_b)``. Powers (``n`` loops of a clip at once, in either
direction) have the closed form of a geometric series.

For a clip played from raw time ``a`` to ``b`` (see :mod:`engine.anim.events`) the delta is
``D = M(l_a)⁻¹ · M(0) · L^n · M(0)⁻¹ · M(l_b)`` where ``M(l)`` is the root's planar transform at
clip time ``l``, ``L = M(0)⁻¹ M(duration)`` is one loop's travel and ``n`` the number of wraps
between ``a`` and ``b`` (always 0 for once and ping-pong, whose clip time runs back over the same
ground). So N loops travel exactly N times one loop, whatever ``dt`` does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.local_to_model import model_from_pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array
from engine.math.quat import quat_conjugate, quat_from_two_vectors, quat_multiply, quat_rotate
from engine.math.vec import vec_normalize

ComplexArray = npt.NDArray[np.complex128]

#: Up of a root's parent space unless told otherwise (docs/conventions.md: +Y up).
UP = (0.0, 1.0, 0.0)
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
        """Translation ``(..., 3)`` as ``(x, 0, z)`` (``up = +Y``; :meth:`translation_in` for another up)."""
        return np.stack((self.w.imag, np.zeros_like(self.w.real), self.w.real), axis=-1)

    def translation_in(self, up: Any = UP) -> FloatArray:
        """Translation ``(..., 3)`` in the parent space whose up is ``up`` (across it: no component along up)."""
        return quat_rotate(quat_conjugate(_to_y_up(_unit(up))), self.translation)


def _unit(up: Any) -> FloatArray:
    """``up`` as one unit 3-vector; :class:`InvalidInputError` naming it otherwise."""
    u = as_array(up, "up", (3,))
    if u.shape != (3,):
        raise InvalidInputError(f"up must be one 3-vector, got shape {u.shape}")
    return vec_normalize(u, "up")


def _to_y_up(u: FloatArray) -> FloatArray:
    """The shortest-arc rotation ``(4,)`` taking unit ``u`` onto +Y (a half turn about +X for −Y); read-only."""
    return _to_y_up_of(float(u[0]), float(u[1]), float(u[2]))


@functools.lru_cache(maxsize=64)
def _to_y_up_of(x: float, y: float, z: float) -> FloatArray:
    """:func:`_to_y_up` kept per up (a root track asks for the same one every frame)."""
    rotation = quat_from_two_vectors(np.array([x, y, z]), UP, fallback=(1.0, 0.0, 0.0))
    rotation.flags.writeable = False
    return rotation


def parent_up(skeleton: Skeleton, joint: int) -> FloatArray:
    """Up ``(3,)`` in ``joint``'s parent space: model-space +Y seen through the parent's rest transform.

    ``(0, 1, 0)`` for a root joint; ``(0, 0, 1)`` for a joint below CesiumMan's Z-up correction node.
    """
    parent = int(skeleton.parents[joint])
    if parent < 0:
        return np.array(UP)
    rest = model_from_pose(skeleton, skeleton.rest_pose)[parent, :3, :3]
    up = np.linalg.solve(rest, UP)
    return up / np.linalg.norm(up)


def yaw_from_quat(q: Any, up: Any = UP) -> FloatArray:
    """Heading ``(...)`` in ``(-π, π]``: the twist of unit quaternions ``(..., 4)`` about ``up``.

    ``q = twist · swing`` with ``twist = (u (q⃗ · u), q_w) / |·|`` and a swing without a component
    along ``u``; the heading is ``2·atan2(q⃗ · u, q_w)`` (0 for a pure 180° swing).
    """
    q = as_array(q, "q", (4,))
    yaw = 2.0 * np.arctan2(q[..., :3] @ _unit(up), q[..., 3])
    return np.where(yaw > np.pi, yaw - 2.0 * np.pi, np.where(yaw <= -np.pi, yaw + 2.0 * np.pi, yaw))


def planar_from_root(translations: Any, rotations: Any, up: Any = UP) -> Planar:
    """Planar transforms of root joints from their translations ``(..., 3)`` and rotations ``(..., 4)``."""
    u = _unit(up)
    t = quat_rotate(_to_y_up(u), as_array(translations, "translations", (3,)))
    return Planar(yaw_from_quat(rotations, u), t[..., 2] + 1j * t[..., 0])


def remove_planar(translations: Any, rotations: Any, up: Any = UP) -> tuple[FloatArray, FloatArray]:
    """The in-place root: ``M⁻¹ · root`` keeps the height along ``up`` and the swing, drops the rest.

    Returns translations ``(..., 3)`` along ``up`` (``(0, y, 0)`` for +Y) and rotations
    ``(..., 4)`` without a twist about ``up`` (``twist⁻¹ · q``).
    """
    t = as_array(translations, "translations", (3,))
    q = as_array(rotations, "rotations", (4,))
    u = _unit(up)
    half = 0.5 * yaw_from_quat(q, u)
    untwist = np.zeros(q.shape)
    untwist[..., :3] = -np.sin(half)[..., None] * u
    untwist[..., 3] = np.cos(half)
    return (t @ u)[..., None] * u, quat_multiply(untwist, q)


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
