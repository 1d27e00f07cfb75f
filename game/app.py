"""One pygame + moderngl loop shared by the programs: events → fixed-step update(dt) → render → flip.

A program is an object with ``setup(ctx, size)``, ``update(dt, controls)`` and
``render(ctx, framebuffer)``; :func:`run` owns the window (or the offscreen target with
``--headless``), the input, the fixed time step and screenshots. Common options, for every program:

- ``--model FILE``: what to play, any ``.gltf``/``.glb`` scene (every mesh node drawn: skinned,
  rigid, node-animated, morphed; a file without a skin is an object) or a ``.bvh`` take
  (:mod:`game.model`);
  ``--scale M``: its metres per file unit, when the guess from its height is wrong;
- ``--headless``: render offscreen through EGL, no window (CI, servers); without ``--frames`` a
  headless run stops after :data:`HEADLESS_FRAMES` frames and says so;
- ``--frames N``: stop after N frames; ``--screenshot FILE``: save the last frame as PNG (its folder
  must exist, as for ``ossa``'s outputs: checked before anything runs); a headless run says how far
  it is every :data:`PROGRESS_SECONDS` (frame N/M and an estimate of the time left);
- ``--size WxH``: the window or offscreen image, 16x16 up to the GL driver's largest framebuffer;
- ``--script FILE``: replay recorded input, one ``FRAME ACTION [ARGS]`` line each
  (``0 down w``, ``90 up w``, ``30 press space``, ``10 mouse 40 -5``, ``0 down left shift``: key
  names are pygame's, spaces included, any case; ``#`` starts a comment). An unknown action or
  key name is an error naming the line. Scripted and headless runs advance exactly one fixed
  step per frame, so they are repeatable.

Every message a program prints goes to stderr as one line ``PROGRAM: KIND: TEXT``
(:func:`say`), ``KIND`` being ``error``, ``warning`` or ``note``, as argparse writes its errors.
The exit status is 0, 2 when no OpenGL context could be made (or an :class:`OssaError` stopped
the program), 3 when the context holds a GL error at the end of the run (``ctx.error``), and
130 when Ctrl-C stopped it (screenshots and reports are still written).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import moderngl
import numpy as np
import pygame

from engine.cli.options import add_clips
from engine.errors import GLContextError, InvalidInputError, OssaError
from engine.render.context import create_context, release_context
from game.model import Model, load_model

FIXED_DT = 1.0 / 60.0
MAX_STEPS_PER_FRAME = 5
HEADLESS_FRAMES = 300
"""Frames a headless run without ``--frames`` renders (5 s of 60 Hz steps)."""
PROGRESS_SECONDS = 5.0
"""A headless run says how far it is (frame N/M, an ETA) this often, in seconds of wall time."""
INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT, as shells report it)."""

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


def key_name(text: str) -> str | None:
    """Pygame's own name of the key called ``text`` (any case), or ``None`` when pygame knows no such key.

    >>> key_name("Left Shift"), key_name("F12"), key_name("shiftt")
    ('left shift', 'f12', None)
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "pygame.init() has not been called": the key table needs no init
        try:
            return str(pygame.key.name(pygame.key.key_code(text)))
        except ValueError:
            return None


def read_script(path: Path) -> list[ScriptEvent]:
    """Parse an input script; a bad line raises :class:`InvalidInputError` naming the file and line."""
    events = []
    try:
        text = path.read_text()
    except OSError as exc:
        raise InvalidInputError(f"--script {path}: cannot read it: {exc.strerror}") from None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue
        where = f"--script {path}, line {number}"
        if len(line) < 2 or not line[0].isdigit() or line[1] not in SCRIPT_ACTIONS:
            raise InvalidInputError(
                f"{where}: expected 'FRAME ACTION [ARGS]' with ACTION in {SCRIPT_ACTIONS}, got {raw.strip()!r}"
            )
        if line[1] == "mouse":
            if len(line) != 4 or not all(_is_number(v) for v in line[2:]):
                raise InvalidInputError(f"{where}: 'mouse' takes 2 numbers (DX DY), got {raw.strip()!r}")
            args = tuple(line[2:])
        else:
            if len(line) < 3:
                raise InvalidInputError(f"{where}: {line[1]!r} takes a key name, got {raw.strip()!r}")
            name = key_name(" ".join(line[2:]))  # "left shift"
            if name is None:
                raise InvalidInputError(
                    f"{where}: unknown key {' '.join(line[2:])!r} (pygame key names: w, left shift, space, f12, ...)"
                )
            args = (name,)
        events.append(ScriptEvent(int(line[0]), line[1], args))
    return sorted(events, key=lambda e: e.frame)


def _is_number(text: str) -> bool:
    try:
        return bool(np.isfinite(float(text)))
    except ValueError:
        return False


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


def common_parser(module: str, description: str) -> argparse.ArgumentParser:
    """An argument parser for ``python -m MODULE`` with the options every program takes."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument(
        "--model",
        type=Path,
        help="a .gltf/.glb/.vrm scene (characters, rigid parts, animated objects, morphs) or a .bvh take "
        "(default: assets/mannequin.glb)",
    )
    add_clips(parser, "--model")
    parser.add_argument(
        "--scale", type=float, help="the model's metres per file unit (default: guessed from its height)"
    )
    parser.add_argument("--headless", action="store_true", help="render offscreen with EGL (no window)")
    parser.add_argument(
        "--frames",
        type=int,
        default=0,
        help=f"stop after this many frames (0: until the window closes; headless: {HEADLESS_FRAMES})",
    )
    parser.add_argument("--screenshot", type=Path, help="save the last frame to this PNG file")
    parser.add_argument("--script", type=Path, help="replay input from this file (see game/app.py)")
    parser.add_argument("--size", default="960x540", help="window size WIDTHxHEIGHT (default 960x540)")
    parser.set_defaults(prog=parser.prog)  # what every message starts with (:func:`say`)
    return parser


def say(prog: str, kind: str, text: str) -> None:
    """Print ``PROG: KIND: TEXT`` to stderr: how every program reports errors, warnings and notes."""
    print(f"{prog}: {kind}: {text}", file=sys.stderr)


#: What a program says before its first frame on the compiled kernels (:func:`kernels_ready` after).
COMPILING = "compiling the animation kernels once (cached after: about a second next time)"


def kernels_ready(prog: str, started: float) -> None:
    """Say how long the kernels took since ``started`` (``time.perf_counter``): after the player's ``warm_up``."""
    say(prog, "note", f"kernels ready in {time.perf_counter() - started:.1f} s")


def load_program_model(args: argparse.Namespace) -> Model:
    """The ``--model`` (``--scale``) character, its notes and loader warnings said (:func:`say`)."""
    model = load_model(args.model, scale=args.scale, clips=tuple(args.clips))
    for note in model.notes:
        say(args.prog, "note", f"{model.path.name}: {note}")
    for warning in model.warnings:
        say(args.prog, "warning", warning)
    return model


def parse_size(text: str) -> tuple[int, int]:
    """``"960x540"`` → ``(960, 540)``."""
    try:
        width, height = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise InvalidInputError(f"--size must look like 960x540, got {text!r}") from None
    if width < 16 or height < 16:
        raise InvalidInputError(f"--size must be at least 16x16, got {text!r}")
    return width, height


def check_size(ctx: moderngl.Context, size: tuple[int, int]) -> None:
    """Raise :class:`InvalidInputError` when ``size`` exceeds what ``ctx`` can render into."""
    largest = min(int(ctx.info["GL_MAX_RENDERBUFFER_SIZE"]), *(int(v) for v in ctx.info["GL_MAX_VIEWPORT_DIMS"]))
    if max(size) > largest:
        raise InvalidInputError(
            f"--size {size[0]}x{size[1]} is larger than this OpenGL driver renders, {largest}x{largest} at most"
        )


def _framebuffer(ctx: moderngl.Context, size: tuple[int, int]) -> moderngl.Framebuffer:
    """An offscreen colour + depth target of ``size``; a driver refusal is an :class:`InvalidInputError`."""
    check_size(ctx, size)
    try:
        return ctx.simple_framebuffer(size)
    except moderngl.Error as exc:
        raise InvalidInputError(
            f"--size {size[0]}x{size[1]}: the OpenGL driver cannot make an image that large ({exc})"
        ) from None


def check_output(path: Path | None, flag: str) -> None:
    """Refuse an output file whose folder does not exist, before any work (as ``ossa``'s outputs do)."""
    if path is not None and not path.parent.is_dir():
        raise InvalidInputError(f"{flag} {path}: cannot write: No such file or directory")


def save_png(framebuffer: moderngl.Framebuffer, path: Path) -> Path:
    """Save ``framebuffer``'s colour as a PNG (rows flipped: GL's first row is the bottom)."""
    width, height = framebuffer.size
    pixels = np.frombuffer(framebuffer.read(components=3), dtype=np.uint8).reshape(height, width, 3)[::-1]
    pygame.image.save(
        pygame.image.frombuffer(np.ascontiguousarray(pixels).tobytes(), (width, height), "RGB"), str(path)
    )
    return path


def _no_display_message(prog: str, reason: str) -> str:
    return (
        f"cannot open a window: {reason}.\n"
        f"Run headless instead (offscreen EGL):  {prog} --headless --frames 300 --screenshot out.png\n"
        f"or under a virtual display:            xvfb-run -a {prog}"
    )


def _open_window(prog: str, size: tuple[int, int], title: str) -> moderngl.Context:
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise GLContextError(_no_display_message(prog, "no DISPLAY or WAYLAND_DISPLAY is set"))
    pygame.display.gl_set_attribute(pygame.GL_CONTEXT_MAJOR_VERSION, 4)
    pygame.display.gl_set_attribute(pygame.GL_CONTEXT_MINOR_VERSION, 3)
    pygame.display.gl_set_attribute(pygame.GL_CONTEXT_PROFILE_MASK, pygame.GL_CONTEXT_PROFILE_CORE)
    pygame.display.gl_set_attribute(pygame.GL_DEPTH_SIZE, 24)
    try:
        pygame.display.set_mode(size, pygame.OPENGL | pygame.DOUBLEBUF)
    except pygame.error as exc:
        screens = pygame.display.get_desktop_sizes()
        if screens and all(size[0] > w or size[1] > h for w, h in screens):
            largest = max(screens, key=lambda s: s[0] * s[1])
            raise InvalidInputError(
                f"--size {size[0]}x{size[1]}: no window that large could be opened on this "
                f"{largest[0]}x{largest[1]} screen ({exc})"
            ) from None
        raise GLContextError(_no_display_message(prog, f"pygame could not open an OpenGL 4.3 window ({exc})")) from None
    pygame.display.set_caption(title)
    return create_context()


def _key_name(event: pygame.event.Event) -> str:
    return str(pygame.key.name(event.key))


def frame_limit(args: argparse.Namespace) -> int:
    """Frames to run: ``--frames``, or :data:`HEADLESS_FRAMES` for a headless run without it (said); 0 = no limit."""
    if args.frames < 0:
        raise InvalidInputError(f"--frames must be 0 (until the window closes) or more, got {args.frames}")
    if args.headless and args.frames == 0:
        say(args.prog, "warning", f"--headless without --frames: stopping after {HEADLESS_FRAMES} frames")
        return HEADLESS_FRAMES
    return int(args.frames)


class Progress:
    """One line every :data:`PROGRESS_SECONDS` of work on ``total`` items (0: say nothing): item N/M and an ETA.

    >>> progress = Progress("python -m game.demo", 300)
    >>> progress.step(1)  # less than PROGRESS_SECONDS in: nothing said
    """

    def __init__(self, prog: str, total: int, item: str = "frame") -> None:
        self.prog, self.total, self.item = prog, total, item
        self.start = self.last = time.perf_counter()

    def step(self, done: int) -> None:
        """``done`` items are finished: say so when :data:`PROGRESS_SECONDS` passed since the last line."""
        now = time.perf_counter()
        if self.total <= 0 or done >= self.total or now - self.last < PROGRESS_SECONDS:
            return
        self.last = now
        left = (now - self.start) / done * (self.total - done)
        say(
            self.prog,
            "note",
            f"{self.item} {done}/{self.total}, {now - self.start:.0f} s so far, about {left:.0f} s left",
        )


def run(program: Program, args: argparse.Namespace) -> int:
    """Run ``program`` until it finishes, the window closes, ``--frames`` is reached or Ctrl-C."""
    size = parse_size(args.size)
    frames = frame_limit(args)
    script = read_script(args.script) if args.script else []
    pygame.font.init()  # only what is used: pygame.init() would also open the audio device
    if not args.headless:
        pygame.display.init()
    try:
        ctx = create_context(standalone=True) if args.headless else _open_window(args.prog, size, program.title)
    except GLContextError as exc:
        say(args.prog, "error", str(exc))
        pygame.quit()
        return 2
    try:
        return _loop(program, args, ctx, size, frames, script)
    finally:
        if args.headless:  # unbind, then free: a context left current blocks a later window's (GLX) one
            release_context(ctx)
        pygame.quit()


def _loop(
    program: Program,
    args: argparse.Namespace,
    ctx: moderngl.Context,
    size: tuple[int, int],
    frames: int,
    script: Sequence[ScriptEvent],
) -> int:
    """The frame loop of :func:`run`, once the context exists; returns the exit status."""
    _ = ctx.error  # reading clears what the window system left pending: not the program's error
    if args.headless:
        target = _framebuffer(ctx, size)
    else:
        check_size(ctx, size)
        target = ctx.detect_framebuffer()
    # Screenshots are rendered offscreen: reading a window's default framebuffer back is a GL error.
    capture = target if args.headless else _framebuffer(ctx, size)
    program.setup(ctx, size)
    controls = Controls()
    status = 0
    deterministic = args.headless or bool(script)
    frame, lag, last = 0, 0.0, time.perf_counter()
    screenshot_dir = Path("screenshots")
    progress = Progress(args.prog, frames if args.headless else 0)
    try:
        while not program.finished and (frames <= 0 or frame < frames):
            if not args.headless and not _pump_events(controls):
                break
            apply_script(script, frame, controls)
            if "f12" in controls.pressed:
                capture.use()
                program.render(ctx, capture)
                screenshot_dir.mkdir(exist_ok=True)
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
            progress.step(frame)
    except KeyboardInterrupt:
        say(args.prog, "note", f"interrupted (Ctrl-C) after {frame} frames")
        status = INTERRUPTED
    if args.screenshot:
        if capture is not target:  # the last frame again, offscreen
            capture.use()
            program.render(ctx, capture)
        print(f"saved {save_png(capture, args.screenshot)}")
    error = ctx.error
    if error != "GL_NO_ERROR":
        say(args.prog, "error", f"OpenGL error at the end of the run: {error}")
        status = 3
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


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with ``args.prog`` set to the parser's program name (for :func:`say`)."""
    args = parser.parse_args(argv)
    args.prog = parser.prog
    return args


def main(
    factory: Callable[[argparse.Namespace], Program], parser: argparse.ArgumentParser, argv: Sequence[str] | None
) -> int:
    """Parse ``argv`` with ``parser``, build the program and run it; errors print one line, not a trace."""
    args = parse_args(parser, argv)
    try:
        check_output(args.screenshot, "--screenshot")
        return run(factory(args), args)
    except OssaError as exc:
        say(args.prog, "error", str(exc))
        return 2
