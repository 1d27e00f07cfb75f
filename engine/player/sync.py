"""Phase-locked clips: the one rule every controller syncs gaits by.

Clips that share a normalised phase (``time = phase · duration``) put their feet down together
at any blend when the phase advances at the **weighted mean of their cycle rates**
``speed / duration`` — walk (1 s) and run (0.7 s) blended 50/50 step at a period between the
two. The Animator's :class:`~engine.animator.SyncGroup`, the graph's synced clips and the demo's
crowd all advance their phases with :func:`synced_rate`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.math._checks import FloatArray


def synced_rate(weights: Any, rates: Any) -> FloatArray:
    """The shared phase rate ``(...)`` of clips with ``weights`` and cycle ``rates`` ``(P, ...)``.

    ``Σ w·r / Σ w``; where every weight is 0, the unweighted mean of the rates. ``rates`` may be
    per clip ``(P, 1)`` or per clip and character; the result has the characters' shape.

    Examples
    --------
    >>> synced_rate([[0.5], [0.5]], [[1.0], [1 / 0.7]]).round(4).tolist()
    [1.2143]
    """
    w, r = np.asarray(weights, dtype=np.float64), np.asarray(rates, dtype=np.float64)
    products = w * r
    if w.shape != products.shape:
        w = np.broadcast_to(w, products.shape)
    total, weighted = _clip_sum(np.stack((w, products), axis=1))  # both sums in one pass over the clips
    plain: FloatArray | float = 0.0  # the unweighted mean, needed only where no clip has weight
    if not np.all(total > 0.0):
        plain = _clip_sum(np.broadcast_to(r, products.shape)) / max(products.shape[0], 1)
    return np.where(total > 0.0, weighted / np.where(total > 0.0, total, 1.0), plain)


def _clip_sum(values: FloatArray) -> FloatArray:
    """``Σ`` over the clip axis, one clip after the other: the same rounding for any number of characters.

    (numpy sums a single character's clips pairwise but a batch's row by row.)
    """
    total = np.zeros(values.shape[1:])
    for row in values:  # loop over clips
        total = total + row
    return total
