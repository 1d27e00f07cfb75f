"""The unit that makes a figure a standing person (:mod:`engine.anim.units`), shared by BVH and the programs.

Closed forms: a figure ``h`` units tall reads ``h · m`` metres in a unit of ``m`` metres; two
units ``a`` and ``b`` read it equally far (by ratio) from ``S`` metres where
``h · m_a / S = S / (h · m_b)``, at ``h = S / sqrt(m_a · m_b)``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.anim.units import UNITS, unit_for_height
from engine.errors import InvalidInputError

BY_SIZE = sorted(UNITS, key=UNITS.__getitem__)


def test_the_units_are_their_definitions() -> None:
    assert dict(UNITS) == {
        "millimetres": 0.001,
        "centimetres": 0.01,
        "inches": 0.0254,
        "CMU units (inches / 0.45)": 0.0254 / 0.45,
        "feet": 0.3048,
        "metres": 1.0,
    }


@given(unit=st.sampled_from(list(UNITS)), metres=st.floats(1.2, 2.1))
def test_a_person_in_any_unit_is_read_in_that_unit(unit: str, metres: float) -> None:
    """A 1.2-2.1 m person in any unit: the closest two units differ by 2.2×, so no other one is nearer 1.6 m."""
    assert unit_for_height(metres / UNITS[unit], 1.6) == (unit, UNITS[unit])


@pytest.mark.parametrize(("small", "large"), list(itertools.pairwise(BY_SIZE)))
@pytest.mark.parametrize("standing", [1.6, 1.755])
def test_between_two_units_the_nearer_by_ratio_wins(small: str, large: str, standing: float) -> None:
    """The choice switches between two adjacent floats within 4 ulps of the tie ``S / sqrt(m_a m_b)``.

    Found by bisection over floats: taller reads the smaller unit, shorter the larger one (the
    tie itself is a rounded quotient and square root, and the logs round too: a few ulps).
    """
    boundary = standing / np.sqrt(UNITS[small] * UNITS[large])
    assert unit_for_height(boundary * 1.01, standing)[0] == small
    assert unit_for_height(boundary / 1.01, standing)[0] == large
    low, high = boundary / 1.01, boundary * 1.01
    while np.nextafter(low, np.inf) < high:
        middle = 0.5 * (low + high)
        if unit_for_height(middle, standing)[0] == large:
            low = middle
        else:
            high = middle
    assert unit_for_height(low, standing)[0] == large
    assert unit_for_height(high, standing)[0] == small
    assert abs(high - boundary) <= 4 * np.spacing(boundary)


def test_a_tie_goes_to_the_first_unit_listed() -> None:
    assert unit_for_height(1.0, 1.0, ["metres", "metres"]) == ("metres", 1.0)
    assert unit_for_height(100.0, 1.0, ["centimetres", "metres"]) == ("centimetres", 0.01)
    assert unit_for_height(10.0, 1.0, ["centimetres", "metres"]) == ("centimetres", 0.01)  # 0.1 m and 10 m: a tie


def test_the_choice_can_be_limited_to_some_units() -> None:
    assert unit_for_height(30.0, 1.7) == ("CMU units (inches / 0.45)", 0.0254 / 0.45)
    assert unit_for_height(30.0, 1.7, ["centimetres", "inches"]) == ("inches", 0.0254)


@pytest.mark.parametrize(
    ("height", "standing", "units", "message"),
    [
        (0.0, 1.6, None, "height must be a positive finite number, got 0.0"),
        (-3.0, 1.6, None, "height must be a positive finite number, got -3.0"),
        (float("nan"), 1.6, None, "height must be a positive finite number, got nan"),
        (float("inf"), 1.6, None, "height must be a positive finite number, got inf"),
        (1.0, 0.0, None, "standing must be a positive finite number, got 0.0"),
        (1.0, 1.6, ["cubits"], "units must be names of "),
        (1.0, 1.6, [], "units must be names of "),
    ],
)
def test_bad_input_names_the_argument(height: float, standing: float, units: list[str] | None, message: str) -> None:
    with pytest.raises(InvalidInputError, match=f"^{message.replace('(', '[(]')}"):
        unit_for_height(height, standing, units)
