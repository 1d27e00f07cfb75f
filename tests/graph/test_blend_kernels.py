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
from engine.graph._blend_kernels import ANGLE_WEIGHT, gradient_weights, turns

LOCOMOTION = [[0.0, 0.0]] + [[x * s, z * s] for s in (1.2, 3.0) for x, z in ((0, 1), (0, -1), (1, 0), (-1, 0))]


def kernel_weights(space: GradientBand, values: np.ndarray) -> np.ndarray:
    """The kernel's weights as a one-machine graph computes them (``CompiledLayers._blend_weights``)."""
    count = space.points.shape[0]
    polar = (np.zeros(0), np.zeros((0, 0)))
    if space.mode == "directional":
        cross, dot = np.full((count, values.shape[0]), np.nan), np.full((count, values.shape[0]), np.nan)
        turns(values, space.points, cross, dot)
        polar = (np.hypot(values[:, 0], values[:, 1]), np.arctan2(cross, dot))
    out = np.full((values.shape[0], count), np.nan)
    gradient_weights(values, space.points, space.tables, polar, out)
    return out


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
