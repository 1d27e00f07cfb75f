"""The GL test session: one standalone EGL context, made here and only here.

Every test that takes the ``ctx`` fixture starts with no pending GL error and the context's
default 1×1 framebuffer bound, and fails in teardown if it leaves a GL error behind. Without a
usable context the GL tests skip with the reason, or fail when ``OSSA_REQUIRE_GL=1`` (CI).
"""

from __future__ import annotations

from collections.abc import Iterator

import moderngl
import pytest

from engine.errors import GLContextError
from engine.render import create_context, release_context
from tests.conftest import require_or_skip


@pytest.fixture(scope="session")
def gl_session() -> Iterator[moderngl.Context]:
    try:
        context = create_context(standalone=True)
    except GLContextError as exc:
        require_or_skip(f"no OpenGL 4.3 context for the GL tests: {exc}", "OSSA_REQUIRE_GL")
    yield context
    release_context(context)


@pytest.fixture
def ctx(gl_session: moderngl.Context) -> Iterator[moderngl.Context]:
    error = gl_session.error
    assert error == "GL_NO_ERROR", f"a GL error was pending before the test: {error}"
    gl_session.extra["default_framebuffer"].use()
    gl_session.enable_only(moderngl.NOTHING)
    yield gl_session
    error = gl_session.error
    assert error == "GL_NO_ERROR", f"the test left a GL error: {error}"
