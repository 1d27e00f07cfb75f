"""Hypothesis strategies shared by the tests: a plain module of functions returning strategies.

Every strategy draws float64 numpy arrays (or floats) in the layouts of ``docs/conventions.md``.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engine.anim.skeleton import Skeleton

_COMPONENT = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)


def quaternions(min_norm: float = 0.1, max_norm: float = 10.0) -> st.SearchStrategy[np.ndarray]:
    """Non-unit, non-zero quaternions ``(4,)`` with ``min_norm <= |q| <= max_norm``."""
    return st.tuples(unit_quaternions(), st.floats(min_norm, max_norm)).map(lambda qs: qs[0] * qs[1])


def unit_quaternions() -> st.SearchStrategy[np.ndarray]:
    """Unit quaternions ``(4,)``, both signs, spread over the whole 3-sphere."""
    return (
        hnp.arrays(np.float64, (4,), elements=_COMPONENT)
        .filter(lambda q: np.linalg.norm(q) > 0.2)
        .map(lambda q: q / np.linalg.norm(q))
    )


def unit_quaternion_arrays(max_batch: int = 8) -> st.SearchStrategy[np.ndarray]:
    """Batches ``(N, 4)`` of unit quaternions, ``1 <= N <= max_batch``."""
    return st.integers(1, max_batch).flatmap(
        lambda n: st.lists(unit_quaternions(), min_size=n, max_size=n).map(np.stack)
    )


def vectors(max_norm: float = 10.0) -> st.SearchStrategy[np.ndarray]:
    """3-vectors ``(3,)`` with components in ``[-max_norm, max_norm]`` (zero allowed)."""
    return hnp.arrays(np.float64, (3,), elements=st.floats(-max_norm, max_norm))


def nonzero_vectors(min_norm: float = 0.1, max_norm: float = 10.0) -> st.SearchStrategy[np.ndarray]:
    """3-vectors ``(3,)`` with ``|v| >= min_norm``."""
    return vectors(max_norm).filter(lambda v: np.linalg.norm(v) >= min_norm)


def unit_vectors() -> st.SearchStrategy[np.ndarray]:
    """Unit 3-vectors ``(3,)`` (e.g. rotation axes)."""
    return nonzero_vectors(min_norm=0.2, max_norm=1.0).map(lambda v: v / np.linalg.norm(v))


def angles(limit: float = np.pi) -> st.SearchStrategy[float]:
    """Angles in radians in ``[-limit, limit]``."""
    return st.floats(-limit, limit)


def scales(min_abs: float = 0.2, max_abs: float = 5.0, mirror: bool = False) -> st.SearchStrategy[np.ndarray]:
    """Per-axis scales ``(3,)`` with ``min_abs <= |s| <= max_abs``; negative only with ``mirror``."""
    magnitude = hnp.arrays(np.float64, (3,), elements=st.floats(min_abs, max_abs))
    if not mirror:
        return magnitude
    signs = hnp.arrays(np.float64, (3,), elements=st.sampled_from([-1.0, 1.0]))
    return st.tuples(magnitude, signs).map(lambda ms: ms[0] * ms[1])


@st.composite
def skeletons(draw: st.DrawFn, min_joints: int = 1, max_joints: int = 12) -> Skeleton:
    """Valid skeletons: ``parents[i] < i`` (several roots possible), random rest TRS with mirrored scales."""
    count = draw(st.integers(min_joints, max_joints))
    parents = [draw(st.integers(-1, i - 1)) for i in range(count)]
    translations = [draw(vectors(max_norm=3.0)) for _ in range(count)]
    rotations = [draw(unit_quaternions()) for _ in range(count)]
    joint_scales = [draw(scales(0.5, 2.0, mirror=True)) for _ in range(count)]
    return Skeleton(
        [f"joint{i}" for i in range(count)],
        np.array(parents, dtype=np.intp),
        np.reshape(translations, (count, 3)),
        np.reshape(rotations, (count, 4)),
        np.reshape(joint_scales, (count, 3)),
    )
