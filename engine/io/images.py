"""Decoding glTF images (PNG, JPEG) into RGBA arrays with Pillow."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, UnidentifiedImageError


def decode_image(data: bytes) -> np.ndarray:
    """An encoded image (PNG, JPEG, …) as read-only ``(H, W, 4)`` uint8 RGBA, first row = top.

    Raises
    ------
    ValueError
        If Pillow cannot decode ``data``.
    """
    try:
        with Image.open(io.BytesIO(data)) as image:
            rgba = np.asarray(image.convert("RGBA"), dtype=np.uint8).copy()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    rgba.flags.writeable = False
    return rgba
