"""Creating or adopting the GL context, and what its errors say."""

from __future__ import annotations

import moderngl
import pytest

from engine.errors import GLContextError
from engine.render import check_context, create_context


class FakeContext:
    """Stands in for a context of another driver: a version code and the info strings."""

    def __init__(self, version_code: int, version: str, vertex_blocks: int = 16) -> None:
        self.version_code = version_code
        self.info = {
            "GL_VERSION": version,
            "GL_RENDERER": "FakeGPU",
            "GL_VENDOR": "Fake Inc.",
            "GL_MAX_VERTEX_SHADER_STORAGE_BLOCKS": vertex_blocks,
        }
        self.released = False

    def release(self) -> None:
        self.released = True


@pytest.mark.gl
def test_session_context_is_4_3_core_with_vertex_storage_blocks(ctx):
    assert ctx.version_code >= 430
    assert ctx.info["GL_MAX_VERTEX_SHADER_STORAGE_BLOCKS"] >= 1
    assert check_context(ctx) is ctx


def test_too_old_version_says_what_was_found():
    with pytest.raises(
        GLContextError, match=r"needs OpenGL 4\.3 core.*found OpenGL 4\.1 Metal \(FakeGPU, Fake Inc\.\)"
    ):
        check_context(FakeContext(410, "4.1 Metal"))


def test_no_vertex_storage_blocks_is_refused():
    with pytest.raises(GLContextError, match="allows 0 vertex shader storage blocks"):
        check_context(FakeContext(430, "4.3", vertex_blocks=0))


def test_missing_egl_says_what_to_install(monkeypatch):
    def no_egl(**kwargs):
        raise Exception("libEGL.so not loaded")  # what moderngl/glcontext raise

    monkeypatch.setattr(moderngl, "create_standalone_context", no_egl)
    with pytest.raises(GLContextError, match=r"libEGL\.so not loaded.*apt-get install libegl1 libgl1 libegl-mesa0"):
        create_context(standalone=True)


def test_old_egl_driver_reports_the_best_version_available(monkeypatch):
    old = FakeContext(330, "3.3 (Core Profile) Mesa 12.0")

    def only_3_3(**kwargs):
        if "require" in kwargs:
            raise Exception("eglCreateContext failed (0x3009)")
        return old

    monkeypatch.setattr(moderngl, "create_standalone_context", only_3_3)
    with pytest.raises(GLContextError, match=r"best available is OpenGL 3\.3 \(Core Profile\) Mesa 12\.0"):
        create_context(standalone=True)
    assert old.released


def test_adopting_without_a_current_context_explains_the_window_setup(monkeypatch):
    def none_current(**kwargs):
        raise Exception("(detect) glXGetCurrentContext: cannot detect OpenGL context")

    monkeypatch.setattr(moderngl, "create_context", none_current)
    with pytest.raises(GLContextError, match=r"no current OpenGL context to adopt.*pygame\.OPENGL.*standalone=True"):
        create_context()


def test_adopted_context_is_checked(monkeypatch):
    monkeypatch.setattr(moderngl, "create_context", lambda **kwargs: FakeContext(330, "3.3"))
    with pytest.raises(GLContextError, match=r"found OpenGL 3\.3"):
        create_context()
