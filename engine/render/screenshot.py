"""Offscreen framebuffers, framebuffer readback and PNG files.

PNG is written with ``zlib`` and ``struct`` from the standard library (8-bit RGB or RGBA,
filter type 0 on every row, no interlacing), so the engine needs no imaging package;
:func:`load_png` reads exactly that subset back (enough for golden-image tests).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from types import TracebackType
from typing import Any

import moderngl
import numpy as np

from engine.errors import AssetError, InvalidInputError

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPES = {3: 2, 4: 6}  # channels -> PNG colour type (RGB, RGBA)


def save_png(path: str | Path, image: Any) -> Path:
    """Write an ``(H, W, 3)`` or ``(H, W, 4)`` uint8 image (first row = top) as a PNG file.

    Returns the path written. Raises :class:`InvalidInputError` for other shapes or dtypes.
    """
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in _COLOR_TYPES or 0 in image.shape:
        raise InvalidInputError(f"image must be a non-empty (H, W, 3|4) uint8 array, got {image.shape} {image.dtype}")
    height, width, channels = image.shape
    rows = np.concatenate((np.zeros((height, 1), np.uint8), image.reshape(height, width * channels)), axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, _COLOR_TYPES[channels], 0, 0, 0)
    path = Path(path)
    path.write_bytes(
        _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b"")
    )
    return path


def _chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def load_png(path: str | Path) -> np.ndarray:
    """Read a PNG written by :func:`save_png` as ``(H, W, 3|4)`` uint8 (first row = top).

    Raises
    ------
    AssetError
        Not a PNG, a corrupt chunk, or a variant outside what :func:`save_png` writes
        (bit depth ≠ 8, palette/grey colour types, interlacing, row filters other than 0).
    """
    path = Path(path)
    data = path.read_bytes()
    if not data.startswith(_SIGNATURE):
        raise AssetError("not a PNG file (bad signature)", file=str(path))
    offset, header, compressed = len(_SIGNATURE), b"", []
    while offset + 8 <= len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        tag, body = data[offset + 4 : offset + 8], data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[offset + 8 + length : offset + 12 + length] or b"\0\0\0\0")
        if len(body) != length or crc != zlib.crc32(tag + body):
            raise AssetError(f"chunk {tag!r} is truncated or fails its CRC", file=str(path), where=f"byte {offset}")
        if tag == b"IHDR":
            header = body
        elif tag == b"IDAT":
            compressed.append(body)
        offset += 12 + length
    if len(header) != 13 or not compressed:
        raise AssetError("missing IHDR or IDAT chunk", file=str(path))
    width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    channels = {v: k for k, v in _COLOR_TYPES.items()}.get(color_type)
    if depth != 8 or channels is None or interlace:
        raise AssetError(
            f"only 8-bit RGB/RGBA non-interlaced PNGs are read, got bit depth {depth}, colour type {color_type}, "
            f"interlace {interlace}",
            file=str(path),
            where="IHDR",
        )
    try:
        raw = np.frombuffer(zlib.decompress(b"".join(compressed)), np.uint8)
        rows = raw.reshape(height, 1 + width * channels)
    except (zlib.error, ValueError) as exc:
        raise AssetError(
            f"image data does not decode to {height} rows of {width} pixels: {exc}", file=str(path)
        ) from None
    if rows[:, 0].any():
        row = int(np.argmax(rows[:, 0] != 0))
        raise AssetError(f"row filter {rows[row, 0]} is not supported (only 0)", file=str(path), where=f"row {row}")
    return rows[:, 1:].reshape(height, width, channels).copy()


def read_framebuffer(framebuffer: moderngl.Framebuffer) -> np.ndarray:
    """The framebuffer's first colour attachment as ``(H, W, 4)`` uint8 RGBA, first row = top."""
    width, height = framebuffer.size
    pixels = np.frombuffer(framebuffer.read(components=4, alignment=1), dtype=np.uint8)
    return pixels.reshape(height, width, 4)[::-1].copy()


def save_screenshot(framebuffer: moderngl.Framebuffer, path: str | Path) -> Path:
    """Save what ``framebuffer`` (an :class:`OffscreenTarget`'s, or ``ctx.screen``) shows as a PNG."""
    return save_png(path, read_framebuffer(framebuffer))


class OffscreenTarget:
    """An RGBA8 colour + depth framebuffer to render into without a window.

    Use it as a context manager: ``with target:`` binds it (and sets the viewport to its size),
    and the framebuffer bound before is bound again on exit.

    Parameters
    ----------
    ctx
        The OpenGL context.
    size
        ``(width, height)`` in pixels.
    """

    def __init__(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        width, height = (int(v) for v in size)
        if width < 1 or height < 1:
            raise InvalidInputError(f"size must be two positive integers (width, height), got {size}")
        self.ctx = ctx
        self.size = (width, height)
        self._color = ctx.renderbuffer(self.size, 4)
        self._depth = ctx.depth_renderbuffer(self.size)
        self.framebuffer = ctx.framebuffer(color_attachments=[self._color], depth_attachment=self._depth)
        self._previous: list[Any] = []

    def __enter__(self) -> OffscreenTarget:
        self._previous.append(self.ctx.fbo)
        self.framebuffer.use()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        previous = self._previous.pop()
        if previous is not None:
            previous.use()

    def clear(self, color: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)) -> None:
        """Clear colour to ``color`` (linear RGBA in [0, 1]) and depth to the far plane."""
        self.framebuffer.clear(*color, depth=1.0)

    def read(self) -> np.ndarray:
        """The rendered image, ``(H, W, 4)`` uint8 RGBA with the first row at the top."""
        return read_framebuffer(self.framebuffer)

    def save(self, path: str | Path) -> Path:
        """Write the rendered image as a PNG; returns the path."""
        return save_png(path, self.read())

    def release(self) -> None:
        """Free the framebuffer and its attachments."""
        for resource in (self.framebuffer, self._color, self._depth):
            resource.release()
