"""Checked reading of small JSON values every glTF stage needs: number arrays, quaternions, names.

Each function takes the :class:`~engine.io.gltf.GltfDocument` it reports to, so its errors and
warnings name the file and the JSON path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engine.io.gltf import GltfDocument
from engine.math._checks import FloatArray

#: A quaternion whose norm is further than this from 1 is normalised with a warning.
QUAT_NORM_TOLERANCE = 1e-3
#: Largest magnitude of a node's translation, rotation, scale or matrix entry: glTF's numeric data
#: is float32 (accessors) and so is the GPU's, and bigger values overflow the transforms downstream.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def numbers(doc: GltfDocument, value: Any, n: int, where: str, default: list[float] | None) -> FloatArray:
    """``value`` as ``n`` finite float32-range numbers (``default`` when absent)."""
    if value is None:
        return np.array(default, dtype=np.float64)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise doc.error(f"expected {n} numbers, got {value!r}", where) from None
    if array.shape != (n,) or not np.isfinite(array).all():
        raise doc.error(f"expected {n} finite numbers, got {value!r}", where)
    if np.abs(array).max() > FLOAT32_MAX:
        raise doc.error(f"{value!r} exceeds the float32 range (±{FLOAT32_MAX:.7g}) of glTF data", where)
    return array


def unit_quaternions(doc: GltfDocument, q: FloatArray, where: str, step: float = 0.0) -> FloatArray:
    """Quaternions ``(K, 4)`` normalised; a zero one raises, a norm far from 1 warns.

    ``step`` is the quantization step of normalized integer components: four components off by
    half a step each move the norm by up to one step, which is not worth a warning.
    """
    norms = np.linalg.norm(q, axis=-1)
    if np.any(norms < 1e-12):
        k = int(np.argmin(norms))
        raise doc.error(f"quaternion {k} is zero {q[k].tolist()}; rotations must be unit quaternions", where)
    off = np.abs(norms - 1.0)
    if off.max() > QUAT_NORM_TOLERANCE + step:
        k = int(np.argmax(off))
        doc.warn(f"quaternion {k} has norm {norms[k]:.6g}, not 1; normalised", where)
    return q / norms[:, None]


def unique_names(raw: Sequence[str | None], prefix: str) -> list[str]:
    """``raw`` names made unique: unnamed entries become ``<prefix><i>``, repeats get ``#<i>``.

    Examples
    --------
    >>> unique_names(["hip", None, "hip", ""], "node")
    ['hip', 'node1', 'hip#2', 'node3']
    """
    names: list[str] = []
    seen: set[str] = set()
    for i, name in enumerate(raw):
        candidate = name if isinstance(name, str) and name else f"{prefix}{i}"
        if candidate in seen:
            candidate = f"{candidate}#{i}"
            while candidate in seen:
                candidate += "'"
        seen.add(candidate)
        names.append(candidate)
    return names
