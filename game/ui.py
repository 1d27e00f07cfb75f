"""2-D overlays drawn with pygame into surfaces and composited over the 3-D frame.

Text (pygame fonts), value bars, and plot strips are drawn on a pygame ``Surface``, uploaded
as one texture and drawn as a screen-space rectangle (``shaders/overlay.*``). Every control a
program shows is also driven by keys, so scripted input reaches all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import moderngl
import numpy as np
import pygame

from engine.render.shaders import load_program

TEXT = (235, 235, 235)
DIM = (150, 150, 150)
ACCENT = (255, 200, 80)
PANEL = (20, 22, 28, 190)
SERIES_COLORS = ((255, 120, 90), (90, 200, 255), (140, 230, 120), (240, 200, 80), (200, 140, 255), (255, 255, 255))


class Overlay:
    """Draws pygame surfaces over the GL frame at pixel positions (origin top-left)."""

    def __init__(self, ctx: moderngl.Context, screen_size: tuple[int, int]) -> None:
        self.ctx = ctx
        self.screen_size = screen_size
        self.program = load_program(ctx, "overlay.vert", "overlay.frag")
        corners = np.array([0, 0, 1, 0, 0, 1, 1, 1], dtype=np.float32)
        self.vao = ctx.vertex_array(self.program, [(ctx.buffer(corners.tobytes()), "2f", "corner")])
        self.textures: dict[tuple[int, int], moderngl.Texture] = {}
        pygame.font.init()
        self.font = pygame.font.Font(None, 22)

    def draw(self, surface: pygame.Surface, position: tuple[int, int], tint: Sequence[float] = (1, 1, 1, 1)) -> None:
        """Draw ``surface`` with its top-left corner at ``position`` pixels."""
        size = surface.get_size()
        texture = self.textures.get(size)
        if texture is None:
            texture = self.textures[size] = self.ctx.texture(size, 4)
            texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
        texture.write(pygame.image.tobytes(surface, "RGBA"))
        texture.use(0)
        self.program["image"] = 0
        self.program["tint"] = tuple(tint)
        self.program["screen_size"] = self.screen_size
        self.program["rect"] = (*position, *size)
        self.ctx.enable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        self.ctx.disable(moderngl.DEPTH_TEST)
        self.vao.render(moderngl.TRIANGLE_STRIP)
        self.ctx.disable(moderngl.BLEND)

    def text_panel(self, lines: Sequence[str | tuple[str, tuple[int, int, int]]], width: int = 0) -> pygame.Surface:
        """A translucent panel with one line of text per entry (``(text, colour)`` to colour one)."""
        rendered = [
            self.font.render(*(line, True, TEXT) if isinstance(line, str) else (line[0], True, line[1]))
            for line in lines
        ]
        height = 8 + sum(r.get_height() + 2 for r in rendered)
        surface = pygame.Surface((max([width, *(r.get_width() + 16 for r in rendered)]), height), pygame.SRCALPHA)
        surface.fill(PANEL)
        y = 4
        for r in rendered:
            surface.blit(r, (8, y))
            y += r.get_height() + 2
        return surface

    def bars(
        self,
        rows: Sequence[tuple[str, float]],
        width: int = 320,
        selected: int | None = None,
        value_range: tuple[float, float] = (0.0, 1.0),
    ) -> pygame.Surface:
        """A panel of labelled value bars (sliders), one row per ``(label, value)``.

        Row ``k``'s bar has the colour of plot series ``k`` (so a slider and its plot line match);
        the ``selected`` row is marked with ``>`` and drawn in the accent colour. The bars start
        after the longest label (labels are cut to leave them at least 48 pixels); the value is
        printed after the bar and the bar clipped to ``value_range``.
        """
        low, high = value_range
        line = self.font.get_linesize() + 2
        surface = pygame.Surface((width, 8 + line * len(rows)), pygame.SRCALPHA)
        surface.fill(PANEL)
        labels = [
            self.font.render(("> " if k == selected else "  ") + label, True, ACCENT if k == selected else TEXT)
            for k, (label, _) in enumerate(rows)
        ]
        bar_x = min(max([label.get_width() for label in labels], default=0) + 16, width - 100)
        bar_width = width - bar_x - 52
        for k, ((_, value), label) in enumerate(zip(rows, labels, strict=True)):
            y = 4 + k * line
            surface.blit(label, (8, y), (0, 0, bar_x - 12, line))
            fraction = (min(max(value, low), high) - low) / (high - low)
            color = SERIES_COLORS[k % len(SERIES_COLORS)]
            pygame.draw.rect(surface, DIM, (bar_x, y + 3, bar_width, line - 8), 1)
            pygame.draw.rect(surface, color, (bar_x, y + 3, round(bar_width * fraction), line - 8))
            surface.blit(self.font.render(f"{value:.2f}", True, TEXT), (bar_x + bar_width + 8, y))
        return surface

    def plot(
        self,
        series: Sequence[np.ndarray],
        labels: Sequence[str],
        size: tuple[int, int] = (420, 140),
        y_range: tuple[float, float] = (0.0, 1.0),
        title: str = "",
    ) -> pygame.Surface:
        """A plot strip: each series (oldest sample first) as a coloured polyline with a legend."""
        surface = pygame.Surface(size, pygame.SRCALPHA)
        surface.fill(PANEL)
        width, height = size
        low, high = y_range
        for k, raw in enumerate(series):
            values = np.asarray(raw, dtype=float)
            if values.size < 2:
                continue
            x = np.linspace(4, width - 4, values.size)
            y = height - 6 - (np.clip(values, low, high) - low) / (high - low) * (height - 24)
            pygame.draw.lines(
                surface, SERIES_COLORS[k % len(SERIES_COLORS)], False, np.stack((x, y), axis=1).tolist(), 2
            )
        legend_x = 8
        if title:
            label = self.font.render(title, True, TEXT)
            surface.blit(label, (legend_x, 2))
            legend_x += label.get_width() + 12
        for k, name in enumerate(labels):
            label = self.font.render(name, True, SERIES_COLORS[k % len(SERIES_COLORS)])
            surface.blit(label, (legend_x, 2))
            legend_x += label.get_width() + 10
        return surface
