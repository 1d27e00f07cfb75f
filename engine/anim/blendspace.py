"""Blend-space weights: 1-D piecewise linear, and 2-D gradient band interpolation (Cartesian and polar).

A blend space places ``P`` samples (clips, or sub-trees) at points of a parameter space; for a
parameter value it returns one weight per sample, non-negative and summing to 1, for
:func:`~engine.anim.blending.blend`. All functions take values for any number of characters at
once, ``(...)`` or ``(..., 2)``, and return weights ``(..., P)``.

- :func:`linear_weights` (1-D): between two neighbouring positions the weight goes linearly
  from one to the other; beyond the ends the end sample has weight 1.
- :class:`GradientBand` (2-D, freeform), after R. S. Johansen, *Automated Semi-Procedural
  Animation for Character Locomotion* (MSc thesis, Aarhus University, 2009), the scheme Unity's
  "2D Freeform Cartesian" and "2D Freeform Directional" blend trees use. Each sample ``i`` gets
  the influence ``h_i(p) = min_j (1 - (p_ip · p_ij) / |p_ij|²)`` over the other samples ``j``,
  clamped at 0, and the weights are the influences normalised. ``p_ij`` is a vector from
  sample ``i`` to ``j`` and ``p_ip`` from ``i`` to the value ``p``:

  - ``"cartesian"``: plain differences, ``p_ij = p_j - p_i``;
  - ``"directional"`` (polar): ``p_ij = ((|p_j| - |p_i|) / ((|p_i| + |p_j|)/2), k·∠(p_i, p_j))``
    and ``p_ip = ((|p| - |p_i|) / ((|p_i| + |p_j|)/2), k·∠(p_i, p))`` with the signed angle
    ``∠`` (0 when either vector is zero) and ``k = 2``: samples on one ray blend by speed,
    samples at one speed blend by direction, the way velocity-driven locomotion (forward, strafe,
    backward at walk and run speeds) wants it.

  Properties (tested with hypothesis): the weights are non-negative and sum to 1; at a sample
  point that sample has weight exactly 1; they vary continuously with ``p`` — in the polar form
  that needs the samples to surround the directions used (the angle jumps by ``2π`` behind a
  sample) and a sample at the origin for ``p`` near zero, as Unity asks of its directional
  trees. The Cartesian influences sum to at least ½ (the nearest sample's is ``>= ½``); where
  no polar influence is positive, the nearest sample takes weight 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, as_array

#: How much a radian of direction counts against a relative change of speed in the polar form.
ANGLE_WEIGHT = 2.0

MODES = ("cartesian", "directional")


def linear_weights(positions: Any, values: Any) -> FloatArray:
    """1-D blend-space weights ``(..., P)`` of ``values`` ``(...)`` for samples at ``positions`` ``(P,)``.

    ``positions`` must increase strictly.

    Examples
    --------
    >>> linear_weights([0.0, 1.2, 3.0], [0.6, 2.1, 5.0]).round(2).tolist()
    [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]]
    """
    points = as_array(positions, "positions")
    if points.ndim != 1 or points.size == 0:
        raise InvalidInputError(f"positions must be a non-empty 1-D array, got shape {points.shape}")
    if np.any(np.diff(points) <= 0.0):
        raise InvalidInputError(f"positions must increase strictly, got {points.tolist()}")
    v = as_array(values, "values")
    weights = np.zeros((*v.shape, points.size))
    if points.size == 1:
        weights[...] = 1.0
        return weights
    low = np.clip(np.searchsorted(points, v, side="right") - 1, 0, points.size - 2)
    t = np.clip((v - points[low]) / (points[low + 1] - points[low]), 0.0, 1.0)
    np.put_along_axis(weights, low[..., None], (1.0 - t)[..., None], axis=-1)
    np.put_along_axis(weights, (low + 1)[..., None], t[..., None], axis=-1)
    return weights


def _signed_angle(a: FloatArray, b: FloatArray) -> FloatArray:
    """Angle from 2-D vectors ``a`` to ``b`` in ``(-π, π]``; 0 when either is the zero vector."""
    cross = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    dot = a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]
    zero = np.all(a == 0.0, axis=-1) | np.all(b == 0.0, axis=-1)
    return np.where(zero, 0.0, np.arctan2(cross, dot))


class GradientBand:
    """2-D freeform blend space over sample ``points`` ``(P, 2)`` (see the module docstring).

    Parameters
    ----------
    points
        Distinct sample positions ``(P, 2)``, e.g. ``(sideways, forward)`` velocities in m/s.
    mode
        ``"cartesian"`` or ``"directional"`` (polar gradient bands).

    Examples
    --------
    >>> space = GradientBand([[0, 0], [0, 1.2], [1.2, 0], [-1.2, 0], [0, -1.2]], "directional")
    >>> space.weights([[0.0, 1.2], [0.6, 0.6]]).round(3).tolist()
    [[0.0, 1.0, 0.0, 0.0, 0.0], [0.227, 0.387, 0.387, 0.0, 0.0]]
    """

    def __init__(self, points: Any, mode: str = "cartesian") -> None:
        if mode not in MODES:
            raise InvalidInputError(f"mode must be one of {MODES}, got {mode!r}")
        samples = as_array(points, "points", (2,))
        if samples.ndim != 2 or samples.shape[0] == 0:
            raise InvalidInputError(f"points must have shape (P, 2) with P >= 1, got {samples.shape}")
        count = samples.shape[0]
        same = np.all(samples[:, None] == samples[None, :], axis=-1) & ~np.eye(count, dtype=bool)
        if same.any():
            first, second = (int(k) for k in np.argwhere(same)[0])
            raise InvalidInputError(
                f"points must be distinct, got points[{first}] == points[{second}] == {samples[first].tolist()}"
            )
        self.points = samples.copy()
        self.points.flags.writeable = False
        self.mode = mode
        self._magnitudes = np.hypot(samples[:, 0], samples[:, 1])
        if mode == "directional":
            self._average = 0.5 * (self._magnitudes[:, None] + self._magnitudes[None, :])  # (P, P)
            if np.any((self._average == 0.0) & ~np.eye(count, dtype=bool)):  # only with two samples at 0
                raise InvalidInputError("points must be distinct, got two samples at the origin")
        # p_ij = p_iv at v = p_j, computed by the same arithmetic as for values, so that a value
        # exactly at sample j gives h_i = 1 - 1 = 0 exactly for every other sample i.
        rows, columns = np.meshgrid(np.arange(count), np.arange(count), indexing="ij")
        self._pairs = self._pair_vectors(samples)[columns, rows, columns]  # (P, P, 2)
        lengths = np.einsum("ijk,ijk->ij", self._pairs, self._pairs)
        np.fill_diagonal(lengths, 1.0)
        self._lengths = lengths

    def _pair_vectors(self, values: FloatArray) -> FloatArray:
        """``p_iv`` ``(..., P, P, 2)`` from every sample ``i`` to ``values`` ``(..., 2)``, per partner ``j``."""
        count = self.points.shape[0]
        if self.mode == "cartesian":
            difference = values[..., None, :] - self.points  # (..., P, 2): same for every j
            return np.broadcast_to(difference[..., :, None, :], (*values.shape[:-1], count, count, 2))
        size = np.hypot(values[..., 0], values[..., 1])
        safe = np.where(self._average > 0.0, self._average, 1.0)
        radial = (size[..., None, None] - self._magnitudes[:, None]) / safe  # (..., P, P)
        angle = ANGLE_WEIGHT * _signed_angle(self.points, values[..., None, :])  # (..., P)
        return np.stack((radial, np.broadcast_to(angle[..., None], radial.shape)), axis=-1)

    def influences(self, values: Any) -> FloatArray:
        """Unnormalised influences ``h_i`` ``(..., P)`` of ``values`` ``(..., 2)``, clamped at 0."""
        v = as_array(values, "values", (2,))
        count = self.points.shape[0]
        if count == 1:
            return np.ones((*v.shape[:-1], 1))
        toward = self._pair_vectors(v)  # (..., P, P, 2)
        h = 1.0 - np.einsum("...ijk,ijk->...ij", toward, self._pairs) / self._lengths
        diagonal = np.arange(count)
        h[..., diagonal, diagonal] = np.inf  # a sample does not limit itself
        return np.maximum(h.min(axis=-1), 0.0)

    def weights(self, values: Any) -> FloatArray:
        """Blend weights ``(..., P)`` of ``values`` ``(..., 2)``: non-negative, summing to 1."""
        h = self.influences(values)
        total = h.sum(axis=-1, keepdims=True)
        empty = total[..., 0] <= 0.0
        if np.any(empty):  # polar bands can leave a value with no positive influence: nearest sample
            v = as_array(values, "values", (2,))
            nearest = np.argmin(np.linalg.norm(v[..., None, :] - self.points, axis=-1), axis=-1)
            fallback = np.eye(self.points.shape[0])[nearest]
            h = np.where(empty[..., None], fallback, h)
            total = np.where(empty[..., None], 1.0, total)
        return h / total
