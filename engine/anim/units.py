"""Length units of character files, and the one that makes a figure a standing person.

BVH has no unit field and glTF files, metres by specification, often come in centimetres or inches
from their exporters. What decides is the figure itself: a standing adult is 1.5-2 m tall, and the
common units are far enough apart (the closest two, inches and CMU units, differ by a factor of
2.2) that at most one of them makes a given height a person. Two readers use this:

- the BVH reader (:func:`engine.io.bvh.detect_unit`) measures the rest pose's joint span (crown
  and soles lie outside the joints, so it aims at 1.6 m);
- the programs (:func:`game.measure.guess_unit`) measure the animated mesh of a glTF character or
  a converted take (aiming at the middle of 1.4-2.2 m).

Both ask :func:`unit_for_height` which of :data:`UNITS` comes closest, by ratio.

Examples
--------
>>> unit_for_height(175.0, 1.7)
('centimetres', 0.01)
>>> unit_for_height(30.0, 1.7)[0]   # the CMU database's skeletons
'CMU units (inches / 0.45)'
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType

import numpy as np

from engine.errors import InvalidInputError

#: Length units character files are written in: name → metres per file unit. CMU's mocap database
#: measures in inches divided by its ASF files' ``length 0.45``: 0.0254 / 0.45 ≈ 0.0564 m.
UNITS = MappingProxyType(
    {
        "millimetres": 0.001,
        "centimetres": 0.01,
        "inches": 0.0254,
        "CMU units (inches / 0.45)": 0.0254 / 0.45,
        "feet": 0.3048,
        "metres": 1.0,
    }
)


def unit_for_height(height: float, standing: float, units: Iterable[str] | None = None) -> tuple[str, float]:
    """The unit in which a figure ``height`` file units tall stands closest to ``standing`` metres.

    Parameters
    ----------
    height
        The figure's height in file units, positive.
    standing
        The height aimed at, metres, positive (what the caller's measure of a standing adult gives).
    units
        Names of :data:`UNITS` to choose from (default: all of them, in that order).

    Returns
    -------
    tuple
        ``(name, metres per file unit)`` of the unit minimising ``|log(height · metres / standing)|``;
        the first listed wins a tie.

    Raises
    ------
    InvalidInputError
        A height or standing height that is not a positive finite number, or an unknown unit name.
    """
    for value, name in ((height, "height"), (standing, "standing")):
        if not (np.isfinite(value) and value > 0.0):
            raise InvalidInputError(f"{name} must be a positive finite number, got {value}")
    names = list(UNITS) if units is None else list(units)
    unknown = [name for name in names if name not in UNITS]
    if unknown or not names:
        raise InvalidInputError(f"units must be names of {list(UNITS)}, got {names}")
    best = min(names, key=lambda name: abs(np.log(height * UNITS[name] / standing)))
    return best, UNITS[best]
