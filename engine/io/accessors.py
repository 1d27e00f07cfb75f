"""glTF accessor layouts and decoding: raw bytes → numpy arrays, as the glTF 2.0 spec defines them.

Pure functions over bytes; bounds and index checks (with file and JSON path in the error) are
the caller's job (:mod:`engine.io.gltf`). Component types, element shapes and the
normalised-integer formulas follow section 3.6.2 ("Accessor data types") of the spec:

==============  =====================  ==============================
componentType   numpy                  normalised int → float
==============  =====================  ==============================
5120 BYTE       ``int8``               ``max(c / 127, -1)``
5121 UBYTE      ``uint8``              ``c / 255``
5122 SHORT      ``int16``              ``max(c / 32767, -1)``
5123 USHORT     ``uint16``             ``c / 65535``
5125 UINT       ``uint32``             (never normalised)
5126 FLOAT      ``float32``            (never normalised)
==============  =====================  ==============================

Matrices are stored column-major; the decoded arrays are in math layout ``M[row, col]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.math._checks import FloatArray

#: Little-endian numpy dtype of each glTF component type.
COMPONENT_DTYPES: dict[int, np.dtype] = {
    5120: np.dtype("<i1"),
    5121: np.dtype("<u1"),
    5122: np.dtype("<i2"),
    5123: np.dtype("<u2"),
    5125: np.dtype("<u4"),
    5126: np.dtype("<f4"),
}

#: Component types that may carry ``normalized: true``.
NORMALIZABLE = (5120, 5121, 5122, 5123)

#: Shape of one element of each accessor type, in math layout (rows, cols) for matrices.
ELEMENT_SHAPES: dict[str, tuple[int, ...]] = {
    "SCALAR": (),
    "VEC2": (2,),
    "VEC3": (3,),
    "VEC4": (4,),
    "MAT2": (2, 2),
    "MAT3": (3, 3),
    "MAT4": (4, 4),
}

#: Divisor of the normalised-integer formula for each integer component type.
_NORM_DIVISORS = {5120: 127.0, 5121: 255.0, 5122: 32767.0, 5123: 65535.0}


@dataclass(frozen=True)
class ElementLayout:
    """Byte layout of one accessor element.

    ``size`` is the byte size of one element including matrix column padding;
    ``column_stride`` is the byte distance between matrix columns (equal to
    ``rows · component_size`` except for the padded MAT2/MAT3 cases of the spec).
    """

    shape: tuple[int, ...]
    component_size: int
    column_stride: int
    size: int


def element_layout(component_type: int, accessor_type: str) -> ElementLayout:
    """Byte layout of one element of ``accessor_type`` made of ``component_type`` components.

    Matrix columns start on 4-byte boundaries: MAT2 of 1-byte components and MAT3 of 1- or
    2-byte components are padded per column, as the spec's "data alignment" section requires.

    Examples
    --------
    >>> element_layout(5126, "VEC3").size
    12
    >>> element_layout(5121, "MAT3")  # 3 bytes per column, padded to 4
    ElementLayout(shape=(3, 3), component_size=1, column_stride=4, size=12)
    """
    shape = ELEMENT_SHAPES[accessor_type]
    component_size = COMPONENT_DTYPES[component_type].itemsize
    if len(shape) == 2:
        rows, cols = shape
        column_stride = -(-rows * component_size // 4) * 4
        return ElementLayout(shape, component_size, column_stride, cols * column_stride)
    count = int(np.prod(shape, dtype=int))
    return ElementLayout(shape, component_size, count * component_size, count * component_size)


def read_elements(
    data: bytes | memoryview,
    offset: int,
    count: int,
    component_type: int,
    accessor_type: str,
    stride: int | None = None,
) -> np.ndarray:
    """Copy ``count`` elements starting at byte ``offset`` of ``data`` into a new array.

    Parameters
    ----------
    data
        The bytes of a buffer view (or of a whole buffer).
    offset
        Byte offset of the first element inside ``data``.
    count
        Number of elements.
    component_type, accessor_type
        glTF ``componentType`` (5120…5126) and ``type`` (``"SCALAR"`` … ``"MAT4"``).
    stride
        Bytes from one element to the next; ``None`` means tightly packed.

    Returns
    -------
    numpy.ndarray
        ``(count, *shape)`` of the component's own dtype (native byte order), matrices
        ``(count, rows, cols)`` in math layout. The caller guarantees that the range lies
        inside ``data``.
    """
    layout = element_layout(component_type, accessor_type)
    dtype = COMPONENT_DTYPES[component_type]
    step = layout.size if stride is None else stride
    if len(layout.shape) == 2:
        rows, cols = layout.shape
        shape: tuple[int, ...] = (count, cols, rows)
        strides: tuple[int, ...] = (step, layout.column_stride, layout.component_size)
    else:
        shape = (count, *layout.shape)
        strides = (step,) + ((layout.component_size,) if layout.shape else ())
    view = np.ndarray(shape, dtype=dtype, buffer=data, offset=offset, strides=strides)
    values = view.astype(dtype.newbyteorder("="), copy=True)
    return np.swapaxes(values, -1, -2).copy() if len(layout.shape) == 2 else values


def quantization_step(component_type: int, normalized: bool) -> float:
    """The decoded step between neighbouring values of a normalized integer component (0 for others).

    >>> quantization_step(5120, True), quantization_step(5126, False)
    (0.007874015748031496, 0.0)
    """
    return 1.0 / _NORM_DIVISORS[component_type] if normalized and component_type in _NORM_DIVISORS else 0.0


def dequantize(values: np.ndarray, component_type: int, normalized: bool) -> FloatArray:
    """Accessor values as float64: normalised integers by the spec's formulas, others cast.

    Examples
    --------
    >>> dequantize(np.array([-128, -127, 0, 127], dtype=np.int8), 5120, True)
    array([-1., -1.,  0.,  1.])
    >>> dequantize(np.array([0, 51, 255], dtype=np.uint8), 5121, True)
    array([0. , 0.2, 1. ])
    """
    with np.errstate(invalid="ignore"):  # signalling NaNs become quiet ones; callers check finiteness
        floats = np.asarray(values, dtype=np.float64)
    if not normalized:
        return floats
    decoded = floats / _NORM_DIVISORS[component_type]
    if component_type in (5120, 5122):
        decoded = np.maximum(decoded, -1.0)
    return decoded
