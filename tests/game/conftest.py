"""Fixtures for the programs' tests: a display for the real-window runs.

``display`` gives the tests marked ``window`` an X display: ``$DISPLAY`` when one is set, otherwise
an ``Xvfb`` server started here for the session (``-displayfd`` lets the server pick a free display
number, so parallel sessions do not collide) and stopped at the end. Without Xvfb the tests skip,
or fail under ``OSSA_REQUIRE_GL=1`` (CI installs it).
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Iterator

import pytest

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


@pytest.fixture(scope="session")
def display() -> Iterator[str]:
    """The X display the window tests open their windows on (``$DISPLAY`` is set to it meanwhile)."""
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
