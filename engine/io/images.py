"""Decoding glTF images (PNG, JPEG) into RGBA arrays with Pillow."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, UnidentifiedImageError

#: Largest image decoded (pixels): 8192 × 8192, 256 MiB as RGBA. The header is checked first, so a
#: small file claiming a huge image is refused before anything is allocated.
MAX_IMAGE_PIXELS = 1 << 26


def decode_image(data: bytes) -> np.ndarray:
    """An encoded image (PNG, JPEG, …) as read-only ``(H, W, 4)`` uint8 RGBA, first row = top.

    Raises
    ------
    ValueError
        If Pillow cannot decode ``data``, or the image has more than :data:`MAX_IMAGE_PIXELS`.
    """
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > MAX_IMAGE_PIXELS:
                raise ValueError(
                    f"{image.width}×{image.height} pixels is more than the {MAX_IMAGE_PIXELS} Ossa decodes"
                )
            rgba = np.asarray(image.convert("RGBA"), dtype=np.uint8).copy()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    rgba.flags.writeable = False
    return rgba
