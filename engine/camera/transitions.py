"""Scripted camera transitions between fixed viewpoints (cut-scenes): blends, holds and cuts.

A :class:`CameraSequence` is a list of viewpoint keys (position, orientation) on a timeline.
Between consecutive keys there is a *blend* (interpolate over a duration, with an easing), a
*hold* (stay put for a duration) or a *cut* (jump, zero duration). Build one with
:meth:`CameraSequence.start` and the chained methods :meth:`~CameraSequence.blend_to`,
:meth:`~CameraSequence.hold` and :meth:`~CameraSequence.cut_to`. Each returns a new immutable
sequence. Sample it at any array of times with :meth:`~CameraSequence.sample`.

Interpolation within a blend:

- ``rotation="squad"`` (default): spherical quadrangle interpolation (:func:`engine.math.quat_squad`)
  with control points chosen so that the angular velocity is continuous in *time* (C¹) through
  every intermediate viewpoint of a run of blends, also when the blends have different
  durations. At key ``i`` the body-frame velocity (in quaternion-log units per second) is the
  central difference ``ω_i = (L_{i-1} + L_i) / (d_{i-1} + d_i)`` with ``L_j = log(q_j⁻¹ q_{j+1})``
  and durations ``d``. The control points that realise it are
  ``a_i = q_i · exp((d_i·ω_i - L_i) / 2)`` (leaving ``i``) and
  ``b_{i+1} = q_{i+1} · exp((L_i - d_i·ω_{i+1}) / 2)`` (arriving at ``i + 1``). With equal
  durations these reduce to the classic :func:`engine.math.squad_control_points`.
  ``rotation="slerp"``: piecewise slerp (C⁰ at the keys).
- ``path="spline"`` (default): cubic Hermite with the same central-difference velocities
  (non-uniform Catmull-Rom), so position too is C¹ in time. ``path="linear"``: piecewise lerp.

Key velocities: central differences between two blends; half the chord velocity at the first
and last key of a run of blends, i.e. next to a cut or an end (the classic "duplicate the end
key" rule); zero next to a hold, so holds are perfectly still and the motion eases into them.

Easing maps each blend's local time ``u`` in ``[0, 1]`` before interpolation (:data:`EASINGS`).
``"linear"`` keeps the C¹ motion through intermediate keys. ``"smoothstep"`` and the other
ease-in-out curves stop at each key; they are C¹ too, trivially.

Examples
--------
>>> import numpy as np
>>> from engine.camera.look_at import look_at
>>> eyes = np.array([[0.0, 2.0, 8.0], [6.0, 3.0, 4.0], [8.0, 2.0, -2.0], [0.0, 10.0, 0.1]])
>>> views = look_at(eyes, [0.0, 1.0, 0.0])
>>> seq = (CameraSequence.start(eyes[0], views[0])
...        .blend_to(eyes[1], views[1], duration=2.0, easing="smoothstep")
...        .hold(1.0)
...        .blend_to(eyes[2], views[2], duration=1.5)
...        .cut_to(eyes[3], views[3]))
>>> seq.duration
4.5
>>> positions, orientations = seq.sample(np.array([0.0, 2.5, 4.5]))
>>> np.round(positions, 6) + 0.0
array([[ 0. ,  2. ,  8. ],
       [ 6. ,  3. ,  4. ],
       [ 0. , 10. ,  0.1]])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.camera._params import check_positive
from engine.errors import InvalidInputError
from engine.math import quat_conjugate, quat_exp, quat_log, quat_multiply, quat_slerp, quat_squad, unflip
from engine.math._checks import FloatArray, as_array


def _smoothstep(u: FloatArray) -> FloatArray:
    return u * u * (3.0 - 2.0 * u)


def _smootherstep(u: FloatArray) -> FloatArray:
    return u * u * u * (u * (6.0 * u - 15.0) + 10.0)


#: Easing curves by name: maps of ``[0, 1]`` onto itself with ``f(0) = 0`` and ``f(1) = 1``.
EASINGS: dict[str, Callable[[FloatArray], FloatArray]] = {
    "linear": lambda u: u,
    "smoothstep": _smoothstep,
    "smootherstep": _smootherstep,
    "ease_in": lambda u: u * u,
    "ease_out": lambda u: u * (2.0 - u),
    "sine": lambda u: 0.5 - 0.5 * np.cos(np.pi * u),
}
_EASING_LIST = list(EASINGS.values())
#: Segment kinds between consecutive keys.
BLEND, HOLD, CUT = "blend", "hold", "cut"
ROTATION_MODES = ("squad", "slerp")
PATH_MODES = ("spline", "linear")


def ease(name: str, u: Any) -> FloatArray:
    """Apply the easing curve ``name`` (a key of :data:`EASINGS`) to ``u`` clipped to ``[0, 1]``."""
    if name not in EASINGS:
        raise InvalidInputError(f"easing must be one of {sorted(EASINGS)}, got {name!r}")
    return EASINGS[name](np.clip(as_array(u, "u"), 0.0, 1.0))


def _key_velocities(chords: FloatArray, durations: FloatArray, kinds: tuple[str, ...]) -> FloatArray:
    """Velocity ``(K, n)`` at each key from per-segment chords ``(K-1, n)`` (see the module docstring)."""
    count = len(kinds) + 1
    velocity = np.zeros((count, chords.shape[-1]))
    for i in range(count):  # build time: one pass over the keys
        left = kinds[i - 1] if i > 0 else None
        right = kinds[i] if i < count - 1 else None
        if HOLD in (left, right):
            continue
        if left == BLEND and right == BLEND:
            velocity[i] = (chords[i - 1] + chords[i]) / (durations[i - 1] + durations[i])
        elif left == BLEND:
            velocity[i] = 0.5 * chords[i - 1] / durations[i - 1]
        elif right == BLEND:
            velocity[i] = 0.5 * chords[i] / durations[i]
    return velocity


@dataclass(frozen=True, eq=False)
class CameraSequence:
    """An immutable timeline of camera viewpoints joined by blends, holds and cuts.

    Prefer the builder (:meth:`start`, then :meth:`blend_to`, :meth:`hold`, :meth:`cut_to`) or
    :meth:`from_keys`; the constructor validates everything the builder guarantees.

    Attributes
    ----------
    times
        Key times ``(K,)`` in seconds, non-decreasing: equal only across a cut.
    positions
        Key positions ``(K, 3)`` in world space.
    orientations
        Key orientations ``(K, 4)``, unit quaternions (signs made continuous here).
    kinds
        ``K - 1`` segment kinds: ``"blend"``, ``"hold"`` (both keys equal, duration ``> 0``) or
        ``"cut"`` (duration 0).
    easings
        ``K - 1`` easing names from :data:`EASINGS` (ignored for holds and cuts).
    rotation
        ``"squad"`` (C¹ through keys) or ``"slerp"``.
    path
        ``"spline"`` (cubic Hermite, C¹) or ``"linear"``.
    """

    times: FloatArray
    positions: FloatArray
    orientations: FloatArray
    kinds: tuple[str, ...] = ()
    easings: tuple[str, ...] = ()
    rotation: str = "squad"
    path: str = "spline"
    _velocities: FloatArray = field(init=False, repr=False, compare=False)
    _control_out: FloatArray = field(init=False, repr=False, compare=False)
    _control_in: FloatArray = field(init=False, repr=False, compare=False)
    _easing_codes: npt.NDArray[np.intp] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        times = as_array(self.times, "times")
        positions = as_array(self.positions, "positions", (3,))
        orientations = as_array(self.orientations, "orientations", (4,))
        count = times.shape[0] if times.ndim == 1 else -1
        if count < 1 or positions.shape != (count, 3) or orientations.shape != (count, 4):
            raise InvalidInputError(
                f"times, positions and orientations must have shapes (K,), (K, 3), (K, 4) with K >= 1, got "
                f"{times.shape}, {positions.shape}, {orientations.shape}"
            )
        if len(self.kinds) != count - 1 or len(self.easings) != count - 1:
            raise InvalidInputError(
                f"kinds and easings must hold K - 1 = {count - 1} entries, "
                f"got {len(self.kinds)} and {len(self.easings)}"
            )
        if self.rotation not in ROTATION_MODES:
            raise InvalidInputError(f"rotation must be one of {ROTATION_MODES}, got {self.rotation!r}")
        if self.path not in PATH_MODES:
            raise InvalidInputError(f"path must be one of {PATH_MODES}, got {self.path!r}")
        norms = np.linalg.norm(orientations, axis=-1)
        if np.any(np.abs(norms - 1.0) > 1e-6):
            raise InvalidInputError(f"orientations must be unit quaternions, got norms {norms}")
        durations = np.diff(times)
        for i, (kind, easing) in enumerate(zip(self.kinds, self.easings, strict=True)):
            self._check_segment(i, kind, easing, float(durations[i]), positions, orientations)
        orientations = unflip(orientations / norms[:, None], axis=0)
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "positions", positions)
        object.__setattr__(self, "orientations", orientations)
        for name in ("times", "positions", "orientations"):
            getattr(self, name).flags.writeable = False
        self._precompute(durations)

    @staticmethod
    def _check_segment(
        i: int, kind: str, easing: str, duration: float, positions: FloatArray, orientations: FloatArray
    ) -> None:
        if kind not in (BLEND, HOLD, CUT):
            raise InvalidInputError(f"kinds[{i}] must be 'blend', 'hold' or 'cut', got {kind!r}")
        if easing not in EASINGS:
            raise InvalidInputError(f"easings[{i}] must be one of {sorted(EASINGS)}, got {easing!r}")
        if (kind == CUT) != (duration == 0.0) or duration < 0.0:
            expected = "0" if kind == CUT else "> 0"
            raise InvalidInputError(f"segment {i} ({kind}) must last {expected} seconds, got {duration}")
        if kind == HOLD and not (
            np.allclose(positions[i], positions[i + 1], rtol=0, atol=1e-12)
            and abs(abs(float(orientations[i] @ orientations[i + 1])) - 1.0) <= 1e-12
        ):
            raise InvalidInputError(f"segment {i} is a hold, so keys {i} and {i + 1} must be the same viewpoint")

    def _precompute(self, durations: FloatArray) -> None:
        """Key velocities for the position spline and squad control points (build time)."""
        safe = np.where(durations > 0, durations, 1.0)
        velocities = _key_velocities(np.diff(self.positions, axis=0), safe, self.kinds)
        q = self.orientations
        logs = quat_log(quat_multiply(quat_conjugate(q[:-1]), q[1:])) if len(q) > 1 else np.zeros((0, 3))
        omega = _key_velocities(logs, safe, self.kinds)
        control_out = quat_multiply(q[:-1], quat_exp(0.5 * (safe[:, None] * omega[:-1] - logs)))
        control_in = quat_multiply(q[1:], quat_exp(0.5 * (logs - safe[:, None] * omega[1:])))
        object.__setattr__(self, "_velocities", velocities)
        object.__setattr__(self, "_control_out", control_out)
        object.__setattr__(self, "_control_in", control_in)
        names = list(EASINGS)
        codes = np.array([names.index(e) if k == BLEND else 0 for k, e in zip(self.kinds, self.easings, strict=True)])
        object.__setattr__(self, "_easing_codes", codes.astype(np.intp))

    # --- builder ------------------------------------------------------------------------------

    @classmethod
    def start(
        cls, position: Any, orientation: Any, *, time: float = 0.0, rotation: str = "squad", path: str = "spline"
    ) -> CameraSequence:
        """A sequence holding one viewpoint at ``time``; extend it with the chained methods."""
        return cls(
            np.array([time], dtype=np.float64),
            as_array(position, "position", (3,)).reshape(1, 3),
            as_array(orientation, "orientation", (4,)).reshape(1, 4),
            rotation=rotation,
            path=path,
        )

    def _append(self, position: Any, orientation: Any, duration: float, kind: str, easing: str) -> CameraSequence:
        return CameraSequence(
            np.append(self.times, self.times[-1] + duration),
            np.vstack((self.positions, as_array(position, "position", (3,)).reshape(1, 3))),
            np.vstack((self.orientations, as_array(orientation, "orientation", (4,)).reshape(1, 4))),
            (*self.kinds, kind),
            (*self.easings, easing),
            self.rotation,
            self.path,
        )

    def blend_to(self, position: Any, orientation: Any, duration: float, easing: str = "linear") -> CameraSequence:
        """Append a blend of ``duration > 0`` seconds to a new viewpoint, shaped by ``easing``."""
        return self._append(position, orientation, float(check_positive(duration, "duration")), BLEND, easing)

    def hold(self, duration: float) -> CameraSequence:
        """Append ``duration > 0`` seconds of standing still at the last viewpoint."""
        return self._append(
            self.positions[-1], self.orientations[-1], float(check_positive(duration, "duration")), HOLD, "linear"
        )

    def cut_to(self, position: Any, orientation: Any) -> CameraSequence:
        """Append an instant cut to a new viewpoint (zero duration)."""
        return self._append(position, orientation, 0.0, CUT, "linear")

    @classmethod
    def from_keys(
        cls,
        times: Any,
        positions: Any,
        orientations: Any,
        *,
        easing: str = "linear",
        rotation: str = "squad",
        path: str = "spline",
    ) -> CameraSequence:
        """A sequence blending through keys at strictly increasing ``times (K,)``, one easing for all."""
        times = as_array(times, "times")
        if times.ndim != 1 or np.any(np.diff(times) <= 0):
            raise InvalidInputError(f"times must be a strictly increasing 1-D array, got {times}")
        count = times.shape[0]
        return cls(times, positions, orientations, (BLEND,) * (count - 1), (easing,) * (count - 1), rotation, path)

    # --- sampling -----------------------------------------------------------------------------

    @property
    def duration(self) -> float:
        """Seconds from the first key to the last."""
        return float(self.times[-1] - self.times[0])

    def sample(self, t: Any) -> tuple[FloatArray, FloatArray]:
        """Positions ``t.shape + (3,)`` and orientations ``t.shape + (4,)`` at times ``t`` (seconds).

        Times before the first key or after the last are clamped. At the time of a cut the
        sequence already shows the viewpoint cut to.
        """
        t = as_array(t, "t")
        if len(self.times) == 1:
            shape = t.shape
            return np.broadcast_to(self.positions[0], (*shape, 3)).copy(), np.broadcast_to(
                self.orientations[0], (*shape, 4)
            ).copy()
        t = np.clip(t, self.times[0], self.times[-1])
        seg = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.times) - 2)
        start = self.times[seg]
        duration = self.times[seg + 1] - start
        u = np.where(duration > 0, (t - start) / np.where(duration > 0, duration, 1.0), 1.0)
        codes = self._easing_codes[seg]
        for code in np.unique(self._easing_codes):  # one pass per distinct curve, not per sample
            u = np.where(codes == code, _EASING_LIST[code](u), u)
        return self._positions_at(seg, u, duration), self._orientations_at(seg, u)

    def _positions_at(self, seg: Any, u: FloatArray, duration: FloatArray) -> FloatArray:
        p0, p1 = self.positions[seg], self.positions[seg + 1]
        uu = u[..., None]
        if self.path == "linear":
            return p0 + uu * (p1 - p0)
        u2, u3 = uu * uu, uu * uu * uu
        h00, h10, h01, h11 = 2 * u3 - 3 * u2 + 1, u3 - 2 * u2 + uu, -2 * u3 + 3 * u2, u3 - u2
        d = duration[..., None]
        return h00 * p0 + h10 * d * self._velocities[seg] + h01 * p1 + h11 * d * self._velocities[seg + 1]

    def _orientations_at(self, seg: Any, u: FloatArray) -> FloatArray:
        q0, q1 = self.orientations[seg], self.orientations[seg + 1]
        if self.rotation == "slerp":
            return quat_slerp(q0, q1, u)
        return quat_squad(q0, q1, self._control_out[seg], self._control_in[seg], u)
