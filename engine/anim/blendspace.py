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
        self._at_origin = (samples[:, 0] == 0.0) & (samples[:, 1] == 0.0)
        if mode == "directional":
            average = 0.5 * (self._magnitudes[:, None] + self._magnitudes[None, :])  # (P, P)
            if np.any((average == 0.0) & ~np.eye(count, dtype=bool)):  # only with two samples at 0
                raise InvalidInputError("points must be distinct, got two samples at the origin")
            self._average = np.where(average > 0.0, average, 1.0).T.copy()  # [j, i]: the pair's mean speed
        # Laid out [j, i, value]: the minimum over the partners j is then one pass over whole
        # blocks, and every step runs along the values. p_ij = p_iv at v = p_j, computed by the
        # same arithmetic as for values, so that a value exactly at sample j gives h_i = 1 - 1 = 0
        # exactly for every other sample i.
        partners, samples_i = np.meshgrid(np.arange(count), np.arange(count), indexing="ij")
        at_partner = [np.broadcast_to(part, (count, count, count)) for part in self._toward(samples)]
        self._pairs = tuple(part[partners, samples_i, partners][..., None] for part in at_partner)  # [j, i, 1]
        lengths = self._pairs[0] * self._pairs[0] + self._pairs[1] * self._pairs[1]
        lengths[np.arange(count), np.arange(count)] = 1.0
        self._lengths = lengths
        self._itself = np.where(np.eye(count, dtype=bool), np.inf, 0.0)[..., None]  # a sample does not limit itself

    def _toward(self, values: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The two components of ``p_iv`` from every sample ``i`` to ``values`` ``(K, 2)``, per partner ``j``.

        Each broadcasts to ``(P, P, K)`` indexed ``[j, i, k]`` (one that is the same for every
        partner has an axis of 1 there).
        """
        value_x, value_y = values[:, 0], values[:, 1]
        if self.mode == "cartesian":  # the same for every j
            return (value_x - self.points[:, 0, None])[None], (value_y - self.points[:, 1, None])[None]
        size, angle = self.polar(values)
        radial = (size - self._magnitudes[:, None]) / self._average[..., None]  # (P, P, K)
        return radial, angle[None]

    def polar(self, values: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The speeds ``|p|`` ``(K,)`` of ``values`` ``(K, 2)`` and ``k·∠(p_i, p)`` from every sample ``(P, K)``.

        The signed angle is 0 when either vector is the zero vector (the directional mode's terms).
        """
        value_x, value_y = values[:, 0], values[:, 1]
        x, y = self.points[:, 0, None], self.points[:, 1, None]
        cross = x * value_y - y * value_x
        dot = x * value_x + y * value_y
        zero = self._at_origin[:, None] | ((value_x == 0.0) & (value_y == 0.0))
        return np.hypot(value_x, value_y), ANGLE_WEIGHT * np.where(zero, 0.0, np.arctan2(cross, dot))

    @property
    def tables(self) -> tuple[FloatArray, ...]:
        """What a compiled evaluation reads (:func:`influences`' terms), indexed ``[j, i]`` (partner, sample).

        The components of ``p_ij`` and ``|p_ij|²`` ``(P, P)`` (1 where ``j = i``), the samples'
        speeds ``(P,)`` and, in directional mode, the pairs' mean speeds ``(P, P)`` (else ones).
        """
        pairs_x, pairs_y, lengths = (array[..., 0] for array in (*self._pairs, self._lengths))
        average = self._average if self.mode == "directional" else np.ones_like(lengths)
        return pairs_x, pairs_y, lengths, self._magnitudes, average

    def influences(self, values: Any) -> FloatArray:
        """Unnormalised influences ``h_i`` ``(..., P)`` of ``values`` ``(..., 2)``, clamped at 0."""
        v = as_array(values, "values", (2,))
        count = self.points.shape[0]
        if count == 1:
            return np.ones((*v.shape[:-1], 1))
        first, second = self._toward(v.reshape(-1, 2))
        along = first * self._pairs[0]
        along += second * self._pairs[1]  # p_iv · p_ij
        along /= self._lengths
        h = np.subtract(1.0, along, out=along)
        h += self._itself  # inf for j = i, + 0 (exact) elsewhere
        lowest = np.maximum(h.min(axis=0), 0.0)  # (P, K)
        return np.ascontiguousarray(lowest.T).reshape(*v.shape[:-1], count)

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
