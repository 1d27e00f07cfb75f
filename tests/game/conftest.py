"""Fixtures for the programs' tests: a display for the real-window runs.

``display`` gives the tests marked ``window`` an X display: ``$DISPLAY`` when one is set, otherwise
an ``Xvfb`` server started here for the session (``-displayfd`` lets the server pick a free display
number, so parallel sessions do not collide) and stopped at the end. Without Xvfb the tests skip,
or fail under ``OSSA_REQUIRE_GL=1`` (CI installs it).

``egl`` (module scope) checks once that a headless OpenGL 4.3 context can be made, skipping (or
failing under ``OSSA_REQUIRE_GL=1``) otherwise, and leaves no context bound.

Before each window test it also unbinds any EGL context still current on this thread: a headless
context left current (``create_context(standalone=True)`` makes it current, ``release()`` does not
unbind it) makes the window's ``glXMakeCurrent`` fail with ``BadAccess``, and Xlib then ends the
whole process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from engine.errors import GLContextError
from engine.render import create_context
from tests.conftest import require_or_skip

XVFB_START_SECONDS = 20.0


def _start_xvfb(executable: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start Xvfb on a free display; ``(process, ":N")``."""
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [executable, "-displayfd", str(write_end), "-screen", "0", "1280x720x24", "-nolisten", "tcp"],
            pass_fds=(write_end,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(write_end)
        write_end = -1
        ready, _, _ = select.select([read_end], [], [], XVFB_START_SECONDS)
        number = os.read(read_end, 64).decode().strip() if ready else ""
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
    if not number.isdigit():
        process.kill()
        process.wait()
        pytest.fail(f"Xvfb did not report a display within {XVFB_START_SECONDS} s (exit code {process.poll()})")
    return process, f":{number}"


def unbind_egl_context() -> None:
    """Make no EGL context current on this thread (nothing to do without libEGL or a current context)."""
    name = ctypes.util.find_library("EGL")
    if name is None:
        return
    egl = ctypes.CDLL(name)
    egl.eglGetCurrentContext.restype = ctypes.c_void_p
    egl.eglGetCurrentDisplay.restype = ctypes.c_void_p
    egl.eglMakeCurrent.argtypes = [ctypes.c_void_p] * 4
    if egl.eglGetCurrentContext():
        egl.eglMakeCurrent(egl.eglGetCurrentDisplay(), None, None, None)


@pytest.fixture
def display(x_display: str) -> str:
    """The X display for a window test (``$DISPLAY`` is set to it), with no EGL context left current."""
    unbind_egl_context()
    return x_display


@pytest.fixture(scope="session")
def x_display() -> Iterator[str]:
    """``$DISPLAY``, or an Xvfb display started for the session (``$DISPLAY`` is set to it meanwhile)."""
    existing = os.environ.get("DISPLAY")
    if existing:
        yield existing
        return
    executable = shutil.which("Xvfb")
    if executable is None:
        require_or_skip("no DISPLAY and no Xvfb to start one (apt-get install xvfb)", "OSSA_REQUIRE_GL")
        return
    process, name = _start_xvfb(executable)
    os.environ["DISPLAY"] = name
    try:
        yield name
    finally:
        del os.environ["DISPLAY"]
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def egl() -> None:
    """A headless OpenGL 4.3 context can be made here (skip, or fail under ``OSSA_REQUIRE_GL=1``, if not)."""
    try:
        context = create_context(standalone=True)
    except GLContextError as exc:
        require_or_skip(f"no OpenGL 4.3 context for the headless runs: {exc}", "OSSA_REQUIRE_GL")
    context.__exit__(None, None, None)  # unbind it: a context left current would block a window's
    context.release()
