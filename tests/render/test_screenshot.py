"""PNG files (checked with pygame's independent decoder) and offscreen framebuffer readback."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pygame
import pytest

from engine.errors import AssetError, InvalidInputError
from engine.render import OffscreenTarget, load_png, read_framebuffer, save_png, save_screenshot


def pygame_pixels(path) -> np.ndarray:
    """(H, W, 4) RGBA as decoded by SDL_image (a reference that shares no code with save_png)."""
    surface = pygame.image.load(str(path))
    width, height = surface.get_size()
    return np.frombuffer(pygame.image.tobytes(surface, "RGBA"), np.uint8).reshape(height, width, 4)


@pytest.mark.parametrize("channels", [3, 4])
def test_png_is_read_back_identically_by_pygame_and_load_png(tmp_path, rng, channels):
    image = rng.integers(0, 256, (7, 13, channels), dtype=np.uint8)
    path = save_png(tmp_path / "image.png", image)
    reference = pygame_pixels(path)
    np.testing.assert_array_equal(reference[..., :channels], image)
    if channels == 3:
        assert (reference[..., 3] == 255).all()
    np.testing.assert_array_equal(load_png(path), image)


def test_save_png_refuses_other_images(tmp_path):
    for bad in (np.zeros((4, 4, 4), np.float32), np.zeros((4, 4), np.uint8), np.zeros((0, 4, 3), np.uint8)):
        with pytest.raises(InvalidInputError, match=r"image must be a non-empty \(H, W, 3\|4\) uint8 array"):
            save_png(tmp_path / "bad.png", bad)


def chunk(tag: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))


def png_bytes(header: bytes, rows: bytes) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def test_load_png_refuses_what_it_does_not_read(tmp_path):
    good = tmp_path / "good.png"
    save_png(good, np.zeros((2, 2, 3), np.uint8))
    cases = {
        "not a PNG file": b"GIF89a....",
        "fails its CRC": good.read_bytes()[:-5] + b"\0\0\0\0\0",
        "only 8-bit RGB/RGBA": png_bytes(struct.pack(">IIBBBBB", 2, 2, 16, 2, 0, 0, 0), bytes(2 * 13)),
        r"row filter 1 is not supported": png_bytes(
            struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0), bytes(7) + b"\1" + bytes(6)
        ),
        "does not decode to 2 rows": png_bytes(struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0), bytes(5)),
    }
    for message, data in cases.items():
        path = tmp_path / "case.png"
        path.write_bytes(data)
        with pytest.raises(AssetError, match=message) as info:
            load_png(path)
        assert info.value.file == str(path)


@pytest.mark.gl
def test_offscreen_readback_has_the_top_row_first(ctx):
    with OffscreenTarget(ctx, (8, 6)) as target:
        target.clear((0.0, 0.0, 1.0, 1.0))
        target.framebuffer.clear(1.0, 0.0, 0.0, 1.0, viewport=(0, 3, 8, 3))  # GL y up: the upper half
        image = target.read()
    assert image.shape == (6, 8, 4)
    np.testing.assert_array_equal(image[:3, :, :3], np.broadcast_to([255, 0, 0], (3, 8, 3)))
    np.testing.assert_array_equal(image[3:, :, :3], np.broadcast_to([0, 0, 255], (3, 8, 3)))
    target.release()


@pytest.mark.gl
def test_offscreen_target_restores_the_previous_framebuffer(ctx):
    previous = ctx.fbo
    outer, inner = OffscreenTarget(ctx, (4, 4)), OffscreenTarget(ctx, (2, 2))
    with outer:
        assert ctx.fbo is outer.framebuffer
        with inner:
            assert ctx.fbo is inner.framebuffer
            assert tuple(ctx.viewport) == (0, 0, 2, 2)
        assert ctx.fbo is outer.framebuffer
    assert ctx.fbo is previous
    outer.release()
    inner.release()
    with pytest.raises(InvalidInputError, match=r"size must be two positive integers"):
        OffscreenTarget(ctx, (0, 4))


@pytest.mark.gl
def test_screenshot_file_holds_what_the_framebuffer_shows(ctx, tmp_path):
    with OffscreenTarget(ctx, (5, 3)) as target:
        target.clear((0.0, 1.0, 0.0, 1.0))
        path = save_screenshot(target.framebuffer, tmp_path / "shot.png")
        np.testing.assert_array_equal(pygame_pixels(path), read_framebuffer(target.framebuffer))
        np.testing.assert_array_equal(load_png(target.save(tmp_path / "again.png")), target.read())
    target.release()
