"""Tests of engine.anim.blendspace: closed-form cases and hypothesis properties of 1-D and 2-D weights."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine.anim.blendspace import GradientBand, linear_weights
from engine.errors import InvalidInputError

WALK, RUN = 1.2, 3.0


def locomotion_points(directions: int = 8, speeds: tuple[float, ...] = (WALK, RUN)) -> np.ndarray:
    """Idle at the origin, then ``directions`` evenly spread headings at each speed: (sideways, forward)."""
    angles = np.arange(directions) * 2.0 * np.pi / directions
    ring = np.stack((np.sin(angles), np.cos(angles)), axis=-1)
    return np.concatenate([np.zeros((1, 2)), *(speed * ring for speed in speeds)])


# --- 1-D ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (-1.0, [1.0, 0.0, 0.0]),
        (0.0, [1.0, 0.0, 0.0]),
        (0.6, [0.5, 0.5, 0.0]),
        (1.2, [0.0, 1.0, 0.0]),
        (np.nextafter(1.2, 0.0), [0.0, 1.0, 0.0]),
        (2.1, [0.0, 0.5, 0.5]),
        (3.0, [0.0, 0.0, 1.0]),
        (9.0, [0.0, 0.0, 1.0]),
    ],
)
def test_linear_weights_table(value, expected):
    np.testing.assert_allclose(linear_weights([0.0, 1.2, 3.0], value), expected, atol=1e-15)


@given(
    hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-10, 10), unique=True).map(np.sort),
    st.floats(-20.0, 20.0),
)
def test_linear_weights_properties(positions, value):
    weights = linear_weights(positions, value)
    assert np.all(weights >= 0.0)
    assert weights.sum() == pytest.approx(1.0, abs=1e-15)
    # linear precision: the weighted positions give back the (clamped) value
    assert weights @ positions == pytest.approx(np.clip(value, positions[0], positions[-1]), abs=1e-9)
    for k, position in enumerate(positions):
        np.testing.assert_array_equal(linear_weights(positions, position), np.eye(positions.size)[k])


def test_linear_weights_validate():
    with pytest.raises(InvalidInputError, match="increase strictly"):
        linear_weights([0.0, 0.0], 0.5)
    with pytest.raises(InvalidInputError, match="non-empty 1-D"):
        linear_weights([], 0.5)
    with pytest.raises(InvalidInputError, match="values must be finite"):
        linear_weights([0.0, 1.0], np.nan)


# --- 2-D: closed-form cases -------------------------------------------------------------------------


def test_directional_blends_speed_linearly_along_a_ray():
    space = GradientBand(locomotion_points(), "directional")
    for fraction in (0.0, 0.25, 0.5, 0.9):
        speed = WALK + fraction * (RUN - WALK)
        weights = space.weights([0.0, speed])
        np.testing.assert_allclose(weights[[1, 9]], [1.0 - fraction, fraction], atol=1e-12)
        assert weights.sum() - weights[1] - weights[9] == pytest.approx(0.0, abs=1e-12)


def test_directional_blends_heading_linearly_at_one_speed():
    space = GradientBand(locomotion_points(4), "directional")  # idle, walk N E S W, run N E S W
    for fraction in (0.0, 0.3, 0.5, 0.8):
        angle = fraction * np.pi / 2
        weights = space.weights(WALK * np.array([np.sin(angle), np.cos(angle)]))
        np.testing.assert_allclose(weights[[1, 2]], [1.0 - fraction, fraction], atol=1e-12)


def test_directional_blends_idle_radially():
    space = GradientBand(locomotion_points(), "directional")
    weights = space.weights([0.0, 0.3 * WALK])
    np.testing.assert_allclose(weights[[0, 1]], [0.7, 0.3], atol=1e-12)


def test_cartesian_on_a_line_is_linear_interpolation():
    space = GradientBand([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], "cartesian")
    np.testing.assert_allclose(
        space.weights([[0.5, 0.0], [2.0, 0.0], [5.0, 0.0]]),
        [[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.0, 0.0, 1.0]],
        atol=1e-15,
    )


def test_a_single_sample_takes_everything():
    for mode in ("cartesian", "directional"):
        np.testing.assert_array_equal(
            GradientBand([[1.0, 2.0]], mode).weights([[5.0, -3.0], [0.0, 0.0]]), [[1.0], [1.0]]
        )


def test_gradient_band_validates():
    with pytest.raises(InvalidInputError, match="mode must be one of"):
        GradientBand([[0.0, 0.0]], "barycentric")
    with pytest.raises(InvalidInputError, match="distinct"):
        GradientBand([[0.0, 1.0], [0.0, 1.0]])
    with pytest.raises(InvalidInputError, match="shape"):
        GradientBand([1.0, 2.0, 3.0])
    with pytest.raises(InvalidInputError, match="values must be finite"):
        GradientBand([[0.0, 1.0], [1.0, 0.0]]).weights([np.inf, 0.0])


# --- 2-D: properties ----------------------------------------------------------------------------------

COORDINATE = st.floats(-4.0, 4.0, allow_nan=False, allow_infinity=False)


def separated(points: np.ndarray, gap: float = 0.05) -> bool:
    distances = np.linalg.norm(points[:, None] - points[None, :], axis=-1) + np.eye(len(points)) * 1e9
    return bool(distances.min() >= gap)


cartesian_layouts = hnp.arrays(np.float64, st.tuples(st.integers(2, 9), st.just(2)), elements=COORDINATE).filter(
    separated
)


def check_partition(weights: np.ndarray) -> None:
    assert np.all(weights >= 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-12)


@given(
    cartesian_layouts,
    hnp.arrays(np.float64, (2,), elements=COORDINATE),
    hnp.arrays(np.float64, (2,), elements=st.floats(-1, 1)),
)
def test_cartesian_weights_partition_unity_and_vary_continuously(points, value, direction):
    space = GradientBand(points, "cartesian")
    weights = space.weights(value)
    check_partition(weights)
    # every influence is Lipschitz with constant 1/d_min and their sum is at least 1/2, so the
    # normalised weights are Lipschitz with constant 2(P + 1)/d_min
    step = 1e-7 * direction
    moved = space.weights(value + step)
    gap = np.linalg.norm(points[:, None] - points[None, :], axis=-1)[~np.eye(len(points), dtype=bool)].min()
    assert np.abs(moved - weights).max() <= 2.0 * (len(points) + 1) / gap * np.linalg.norm(step) * (1 + 1e-6) + 1e-15
    assert space.influences(value).sum() >= 0.5 - 1e-12


@given(cartesian_layouts, st.sampled_from(["cartesian", "directional"]))
def test_exact_at_every_sample_point(points, mode):
    if mode == "directional" and np.sum(np.all(points == 0.0, axis=1)) > 1:
        return
    space = GradientBand(points, mode)
    np.testing.assert_array_equal(space.weights(points), np.eye(len(points)))


@st.composite
def directional_layouts(draw):
    """Idle at the origin plus 4-8 headings (jittered up to 15°) at one or two speeds."""
    count = draw(st.integers(4, 8))
    jitter = draw(hnp.arrays(np.float64, (count,), elements=st.floats(-0.26, 0.26)))
    angles = np.arange(count) * 2.0 * np.pi / count + jitter
    speeds = draw(st.sampled_from([(1.0,), (1.2, 3.0), (0.5, 2.0)]))
    ring = np.stack((np.sin(angles), np.cos(angles)), axis=-1)
    return np.concatenate([np.zeros((1, 2)), *(s * ring for s in speeds)])


@given(
    directional_layouts(),
    st.floats(0.0, 2.0 * np.pi),
    st.floats(0.0, 4.0),
    hnp.arrays(np.float64, (2,), elements=st.floats(-1, 1)),
)
def test_directional_weights_partition_unity_and_vary_continuously(points, heading, speed, direction):
    space = GradientBand(points, "directional")
    value = speed * np.array([np.sin(heading), np.cos(heading)])
    weights = space.weights(value)
    check_partition(weights)
    assert space.influences(value).sum() > 0.0  # never the nearest-sample fallback for such layouts
    step = 1e-7 * direction
    moved = space.weights(value + step)
    # the angle to a value moves by |δ|/|p|: the bound grows near the origin, where idle takes over
    assert np.abs(moved - weights).max() <= 50.0 * np.linalg.norm(step) / max(speed, 1e-3) + 1e-12


def test_weights_are_batched():
    space = GradientBand(locomotion_points(), "directional")
    values = np.random.default_rng(5).normal(size=(4, 3, 2))
    batched = space.weights(values)
    assert batched.shape == (4, 3, 17)
    np.testing.assert_allclose(batched[2, 1], space.weights(values[2, 1]), atol=0)


def johansen_weights(points: np.ndarray, value: np.ndarray, mode: str) -> np.ndarray:
    """The gradient band weights of one value, written out per sample pair from the module docstring's formula."""
    count = len(points)

    def polar(v: np.ndarray, i: int, j: int) -> np.ndarray:  # p_iv in the directional form, with partner j
        p_i, p_j = points[i], points[j]
        mean = (np.hypot(*p_i) + np.hypot(*p_j)) / 2.0
        angle = 0.0
        if np.any(p_i != 0.0) and np.any(v != 0.0):
            angle = np.arctan2(p_i[0] * v[1] - p_i[1] * v[0], p_i[0] * v[0] + p_i[1] * v[1])
        return np.array([(np.hypot(*v) - np.hypot(*p_i)) / mean, 2.0 * angle])

    def toward(v: np.ndarray, i: int, j: int) -> np.ndarray:
        return v - points[i] if mode == "cartesian" else polar(v, i, j)

    influence = np.full(count, np.inf)
    for i in range(count):
        for j in range(count):
            if i != j:
                pair = toward(points[j], i, j)
                influence[i] = min(influence[i], 1.0 - toward(value, i, j) @ pair / (pair @ pair))
    influence = np.maximum(influence, 0.0)
    if influence.sum() <= 0.0:  # the nearest sample
        influence = np.eye(count)[np.argmin(np.linalg.norm(points - value, axis=-1))]
    return influence / influence.sum()


@pytest.mark.parametrize("mode", ["cartesian", "directional"])
def test_weights_equal_the_pairwise_formula(mode):
    """Against the formula evaluated pair by pair (an independent reference of the batched arrays)."""
    rng = np.random.default_rng(23)
    for points in (locomotion_points(), locomotion_points(4), rng.normal(size=(6, 2)) * 2.0):
        space = GradientBand(points, mode)
        values = np.concatenate((rng.normal(size=(40, 2)) * 2.0, points, [[0.0, 0.0]]))
        expected = np.array([johansen_weights(points, v, mode) for v in values])
        np.testing.assert_allclose(space.weights(values), expected, rtol=0, atol=1e-12)
