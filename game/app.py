"""One pygame + moderngl loop shared by the programs: events → fixed-step update(dt) → render → flip.

A program is an object with ``setup(ctx, size)``, ``update(dt, controls)`` and
``render(ctx, framebuffer)``; :func:`run` owns the window (or the offscreen target with
``--headless``), the input, the fixed time step and screenshots. Common options, for every program:

- ``--headless``: render offscreen through EGL, no window (CI, servers);
- ``--frames N``: stop after N frames; ``--screenshot FILE``: save the last frame as PNG;
- ``--script FILE``: replay recorded input, one ``FRAME ACTION [ARGS]`` line each
  (``0 down w``, ``90 up w``, ``30 press space``, ``10 mouse 40 -5``, ``0 down left shift``: key
  names are pygame's, spaces included; ``#`` starts a comment).
  Scripted and headless runs advance exactly one fixed step per frame, so they are repeatable.

The exit status is 0, 2 when no OpenGL context could be made (or an :class:`OssaError` stopped
the program), and 3 when the context holds a GL error at the end of the run (``ctx.error``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import moderngl
import numpy as np
import pygame

from engine.errors import GLContextError, InvalidInputError, OssaError
from engine.render.context import create_context, release_context

FIXED_DT = 1.0 / 60.0
MAX_STEPS_PER_FRAME = 5

#: pygame key names (``pygame.key.name``) are the names scripts and programs use.
SCRIPT_ACTIONS = ("down", "up", "press", "mouse")


@dataclass
class Controls:
    """Input as the programs see it: keys held, keys pressed this step, mouse motion this step."""

    held: set[str] = field(default_factory=set)
    pressed: set[str] = field(default_factory=set)
    mouse: np.ndarray = field(default_factory=lambda: np.zeros(2))

    def down(self, key: str) -> None:
        """Start holding ``key`` (also counts as a press)."""
        if key not in self.held:
            self.pressed.add(key)
        self.held.add(key)

    def up(self, key: str) -> None:
        """Release ``key``."""
        self.held.discard(key)

    def axis(self, negative: str, positive: str) -> float:
        """-1, 0 or 1 from two keys (e.g. ``axis("s", "w")``)."""
        return float(positive in self.held) - float(negative in self.held)

    def end_step(self) -> None:
        """Forget this step's presses and mouse motion."""
        self.pressed.clear()
        self.mouse[:] = 0.0


@dataclass(frozen=True)
class ScriptEvent:
    """One line of an input script."""

    frame: int
    action: str
    args: tuple[str, ...]


def read_script(path: Path) -> list[ScriptEvent]:
    """Parse an input script; bad lines raise :class:`InvalidInputError` naming the line."""
    events = []
    try:
        text = path.read_text()
    except OSError as exc:
        raise InvalidInputError(f"cannot read the input script {path}: {exc.strerror}") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        where = f"{path}, line {number}"
        if len(line) < 2 or not line[0].isdigit() or line[1] not in SCRIPT_ACTIONS:
            raise InvalidInputError(
                f"{where}: expected 'FRAME ACTION [ARGS]' with ACTION in {SCRIPT_ACTIONS}, got {raw!r}"
            )
        if line[1] == "mouse" and len(line) != 4:
            raise InvalidInputError(f"{where}: 'mouse' takes 2 arguments (DX DY), got {raw!r}")
        if line[1] != "mouse" and len(line) < 3:
            raise InvalidInputError(f"{where}: {line[1]!r} takes a key name, got {raw!r}")
        args = tuple(line[2:]) if line[1] == "mouse" else (" ".join(line[2:]),)  # "left shift"
        events.append(ScriptEvent(int(line[0]), line[1], args))
    return sorted(events, key=lambda e: e.frame)


def apply_script(events: Sequence[ScriptEvent], frame: int, controls: Controls) -> None:
    """Feed the script's events for ``frame`` into ``controls``."""
    for event in events:
        if event.frame != frame:
            continue
        if event.action == "down":
            controls.down(event.args[0])
        elif event.action == "up":
            controls.up(event.args[0])
        elif event.action == "press":
            controls.pressed.add(event.args[0])
        else:
            controls.mouse += [float(event.args[0]), float(event.args[1])]


class Program(Protocol):
    """What :func:`run` drives."""

    title: str
    finished: bool

    def setup(self, ctx: moderngl.Context, size: tuple[int, int]) -> None:
        """Create GL resources once the context exists."""

    def update(self, dt: float, controls: Controls) -> None:
        """Advance the simulation by ``dt`` seconds."""

    def render(self, ctx: moderngl.Context, framebuffer: moderngl.Framebuffer) -> None:
        """Draw the current state into ``framebuffer``."""


def common_parser(description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every program takes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--headless", action="store_true", help="render offscreen with EGL (no window)")
    parser.add_argument("--frames", type=int, default=0, help="stop after this many frames (0: run until closed)")
    parser.add_argument("--screenshot", type=Path, help="save the last frame to this PNG file")
    parser.add_argument("--script", type=Path, help="replay input from this file (see game/app.py)")
    parser.add_argument("--size", default="960x540", help="window size WIDTHxHEIGHT (default 960x540)")
    return parser


def parse_size(text: str) -> tuple[int, int]:
    """``"960x540"`` → ``(960, 540)``."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise InvalidInputError(f"--size must look like 960x540, got {text!r}") from None
    if width < 16 or height < 16:
        raise InvalidInputError(f"--size must be at least 16x16, got {text!r}")
    return width, height


def save_png(framebuffer: moderngl.Framebuffer, path: Path) -> Path:
    """Save ``framebuffer``'s colour as a PNG (rows flipped: GL's first row is the bottom)."""
    width, height = framebuffer.size
    pixels = np.frombuffer(framebuffer.read(components=3), dtype=np.uint8).reshape(height, width, 3)[::-1]
    path.parent.mkdir(parents=True, exist_ok=True)
    pygame.image.save(
        pygame.image.frombuffer(np.ascontiguousarray(pixels).tobytes(), (width, height), "RGB"), str(path)
    )
    return path


def _no_display_message(reason: str) -> str:
    module = Path(sys.argv[0]).parent.name if sys.argv and sys.argv[0] else "game.demo"
    return (
        f"cannot open a window: {reason}.\n"
        f"Run headless instead (offscreen EGL):  python -m game.{module} --headless --frames 300 --screenshot out.png\n"
        f"or under a virtual display:            xvfb-run -a python -m game.{module}"
    )


def _open_window(size: tuple[int, int], title: str) -> moderngl.Context:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise GLContextError(_no_display_message("no DISPLAY or WAYLAND_DISPLAY is set"))
    pygame.display.gl_set_attribute(pygame.GL_CONTEXT_MAJOR_VERSION, 4)
    pygame.display.gl_set_attribute(pygame.GL_CONTEXT_MINOR_VERSION, 3)
    pygame.display.gl_set_attribute(pygame.GL_CONTEXT_PROFILE_MASK, pygame.GL_CONTEXT_PROFILE_CORE)
    pygame.display.gl_set_attribute(pygame.GL_DEPTH_SIZE, 24)
    try:
        pygame.display.set_mode(size, pygame.OPENGL | pygame.DOUBLEBUF)
    except pygame.error as exc:
        raise GLContextError(_no_display_message(f"pygame could not open an OpenGL 4.3 window ({exc})")) from None
    pygame.display.set_caption(title)
    return create_context()


def _key_name(event: pygame.event.Event) -> str:
    return str(pygame.key.name(event.key))


def run(program: Program, args: argparse.Namespace) -> int:
    """Run ``program`` until it finishes, the window closes or ``--frames`` is reached."""
    size = parse_size(args.size)
    script = read_script(args.script) if args.script else []
    pygame.font.init()  # only what is used: pygame.init() would also open the audio device
    if not args.headless:
        pygame.display.init()
    try:
        if args.headless:
            ctx = create_context(standalone=True)
            target = ctx.simple_framebuffer(size)
        else:
            ctx = _open_window(size, program.title)
            target = ctx.detect_framebuffer()
    except GLContextError as exc:
        print(f"{program.title}: {exc}", file=sys.stderr)
        pygame.quit()
        return 2
    _ = ctx.error  # reading clears what the window system left pending: not the program's error
    # Screenshots are rendered offscreen: reading a window's default framebuffer back is a GL error.
    capture = target if args.headless else ctx.simple_framebuffer(size)
    program.setup(ctx, size)
    controls = Controls()
    status = 0
    deterministic = args.headless or bool(script)
    frame, lag, last = 0, 0.0, time.perf_counter()
    screenshot_dir = Path("screenshots")
    try:
        while not program.finished and (args.frames <= 0 or frame < args.frames):
            if not args.headless and not _pump_events(controls):
                break
            apply_script(script, frame, controls)
            if "f12" in controls.pressed:
                capture.use()
                program.render(ctx, capture)
                print(f"saved {save_png(capture, screenshot_dir / f'{program.title}-{frame:05d}.png')}")
            now = time.perf_counter()
            lag = FIXED_DT if deterministic else min(lag + now - last, MAX_STEPS_PER_FRAME * FIXED_DT)
            last = now
            while lag >= FIXED_DT - 1e-12:
                program.update(FIXED_DT, controls)
                controls.end_step()
                lag -= FIXED_DT
            target.use()
            program.render(ctx, target)
            if not args.headless:
                pygame.display.flip()
            frame += 1
        if args.screenshot:
            if capture is not target:  # the last frame again, offscreen
                capture.use()
                program.render(ctx, capture)
            print(f"saved {save_png(capture, args.screenshot)}")
        error = ctx.error
        if error != "GL_NO_ERROR":
            print(f"{program.title}: OpenGL error at the end of the run: {error}", file=sys.stderr)
            status = 3
    finally:
        if args.headless:  # unbind, then free: a context left current blocks a later window's (GLX) one
            release_context(ctx)
        pygame.quit()
    return status


def _pump_events(controls: Controls) -> bool:
    """Move pygame's events into ``controls``; ``False`` when the window was closed."""
    for event in pygame.event.get():
        if event.type == pygame.QUIT:
            return False
        if event.type == pygame.KEYDOWN:
            controls.down(_key_name(event))
        elif event.type == pygame.KEYUP:
            controls.up(_key_name(event))
        elif event.type == pygame.MOUSEMOTION and any(event.buttons):
            controls.mouse += event.rel
    return True


def main(
    factory: Callable[[argparse.Namespace], Program], parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> int:
    """Parse ``argv`` with ``parser``, build the program and run it; errors print, not trace."""
    args = parser.parse_args(argv)
    try:
        return run(factory(args), args)
    except OssaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
