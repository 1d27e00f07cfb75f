"""The compiled 2-D blend-space weights (engine.graph._blend_kernels) against GradientBand.weights, bit for bit.

A one-machine graph's factors come from the kernel on the numba backend and from the numpy
reference elsewhere; the compiled graph is checked bit for bit against the numpy one, so the
kernel must be numpy's numbers exactly: random values, the samples themselves (weight exactly 1),
the origin, values a rounding away from a sample, one sample, and more samples than numpy's 8
summation lanes; and the nearest-sample fallback where no influence is positive.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.anim import blendspace
from engine.anim.blendspace import GradientBand
from engine.graph._blend_kernels import ANGLE_WEIGHT, gradient_weights
from engine.graph.compiled import _GradientFactors
from engine.graph.definition import Parameter
from engine.graph.flat import TreeBlend
from engine.graph.parameters import Parameters

LOCOMOTION = [[0.0, 0.0]] + [[x * s, z * s] for s in (1.2, 3.0) for x, z in ((0, 1), (0, -1), (1, 0), (-1, 0))]


def kernel_weights(space: GradientBand, values: np.ndarray) -> np.ndarray:
    """The kernels' weights as a one-machine graph's factors get them (``_GradientFactors.refresh``).

    Every character stale, its values in float parameters ``y``, ``x`` (rows 2 and 1 of three,
    read in the space's order); the factors' first column is no clip of the space's and must stay.
    """
    count, samples = values.shape[0], space.points.shape[0]
    specs = {name: Parameter(name, kind, 0.0) for name, kind in (("a", "float"), ("x", "float"), ("jump", "trigger"))}
    parameters = Parameters({**specs, "y": Parameter("y", "float", 0.0)}, count)
    parameters.set_float("y", values[:, 0])
    parameters.set_float("x", values[:, 1])
    gradient = _GradientFactors(TreeBlend(("y", "x"), space, ()), parameters)
    factors, kept = np.full((count, samples + 1), np.nan), np.full(count, -1, dtype=np.int64)
    gradient.refresh(factors, np.arange(1, samples + 1), kept)
    assert np.isnan(factors[:, 0]).all()
    np.testing.assert_array_equal(kept, parameters.stamps)
    return factors[:, 1:]


def test_only_the_stale_characters_are_weighed() -> None:
    """Characters whose stamps are kept keep their factors; the others get theirs and their stamps."""
    space = GradientBand(LOCOMOTION, "directional")
    parameters = Parameters({name: Parameter(name, "float", 0.0) for name in "xy"}, 6)
    parameters.set_float("x", [0.5, -1.0, 2.0, 0.0, 3.0, 0.1])
    parameters.set_float("y", [1.0, 1.0, 1.0, 0.0, -2.0, 0.2], [0, 1, 2, 3, 4, 5])
    gradient = _GradientFactors(TreeBlend(("x", "y"), space, ()), parameters)
    kept = parameters.stamps.copy()
    kept[[1, 4]] = -1
    factors = np.full((6, 9), np.nan)
    gradient.refresh(factors, np.arange(9), kept)
    np.testing.assert_array_equal(kept, parameters.stamps)
    values = np.stack((parameters.get("x"), parameters.get("y")), axis=-1)
    np.testing.assert_array_equal(factors[[1, 4]], space.weights(values[[1, 4]]))
    assert np.isnan(factors[[0, 2, 3, 5]]).all()
    gradient.refresh(factors, np.arange(9), kept)  # nothing stale now
    assert np.isnan(factors[[0, 2, 3, 5]]).all()


def test_the_kernels_angle_weight_is_the_blend_spaces() -> None:
    assert ANGLE_WEIGHT == blendspace.ANGLE_WEIGHT


@pytest.mark.parametrize(
    ("points", "mode"),
    [
        (LOCOMOTION, "directional"),
        (LOCOMOTION, "cartesian"),
        (np.random.default_rng(1).normal(size=(17, 2)), "directional"),
        (np.random.default_rng(2).normal(size=(5, 2)), "cartesian"),
        ([[0.0, 1.0], [1.0, 0.0], [-1.0, 0.0], [0.0, -1.0]], "directional"),  # no sample at the origin
        ([[0.3, 0.2]], "cartesian"),
    ],
)
def test_the_kernel_is_numpys_weights_bit_for_bit(points, mode) -> None:
    space = GradientBand(points, mode)
    samples = space.points
    values = np.concatenate(
        (
            np.random.default_rng(3).normal(scale=2.0, size=(2000, 2)),
            samples,
            0.5 * samples,
            samples + 1e-17,
            [[0.0, 0.0], [np.nextafter(0.0, 1.0), 0.0], [0.0, -1e-300]],
        )
    )
    expected = space.weights(values)
    got = kernel_weights(space, values)
    np.testing.assert_array_equal(got, expected)
    at_samples = got[2000 : 2000 + samples.shape[0]]
    np.testing.assert_array_equal(at_samples, np.eye(samples.shape[0]))


def test_where_no_influence_is_positive_the_nearest_sample_takes_all() -> None:
    """The fallback (numpy's ``weights``): tables made so that every influence is negative far from the samples."""
    points = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    ones = np.ones((3, 3))
    tables = (ones, ones, ones, np.zeros(3), ones)  # p_ij = (1, 1), |p_ij|² = 1: h_i = 1 - (p - p_i)·(1, 1)
    values = np.array([[5.0, 4.0], [0.9, 3.0], [4.0, -0.5], [0.2, 0.3]])
    out = np.full((4, 3), np.nan)
    gradient_weights(values, points, tables, (np.zeros(0), np.zeros((0, 0))), out)
    nearest = np.argmin(np.linalg.norm(values[:3, None] - points, axis=-1), axis=-1)
    assert nearest.tolist() == [2, 2, 1]
    np.testing.assert_array_equal(out[:3], np.eye(3)[nearest])  # the nearest sample, weight 1
    assert out[3].sum() == pytest.approx(1.0)
    assert np.all(out[3] > 0.0)  # near the samples the influences stay positive
