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
    w = np.asarray(weights, dtype=np.float64)
    r = np.broadcast_to(np.asarray(rates, dtype=np.float64), np.broadcast_shapes(w.shape, np.shape(rates)))
    w = np.broadcast_to(w, r.shape)
    total, weighted, plain = _clip_sum(w), _clip_sum(w * r), _clip_sum(r) / max(r.shape[0], 1)
    return np.where(total > 0.0, weighted / np.where(total > 0.0, total, 1.0), plain)


def _clip_sum(values: FloatArray) -> FloatArray:
    """``Σ`` over the clip axis, one clip after the other: the same rounding for any number of characters.

    (numpy sums a single character's clips pairwise but a batch's row by row.)
    """
    total = np.zeros(values.shape[1:])
    for row in values:  # loop over clips
        total = total + row
    return total
