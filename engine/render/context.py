"""The one place an OpenGL context is created or adopted.

Ossa's shaders need OpenGL **4.3 core**: the skinning palette lives in a shader storage buffer
read by the vertex stage (see :mod:`engine.render.storage_buffers` for why not a uniform block).
Two ways in:

- a window's context (pygame with ``pygame.OPENGL``): create the window first, then call
  ``create_context()``, which adopts the context current on this thread;
- headless (tests, benchmarks, screenshots on a server): ``create_context(standalone=True)``
  makes an EGL context with no window (Mesa's llvmpipe renders it on the CPU when there is no
  GPU) and binds a 1×1 framebuffer, so draws and transform feedback are valid before any
  offscreen target is bound.

macOS stops at OpenGL 4.1 and therefore cannot run these shaders.
"""

from __future__ import annotations

from typing import Any

import moderngl

from engine.errors import GLContextError

REQUIRED_VERSION = 430
"""Minimum ``ctx.version_code`` (major·100 + minor·10): 4.3 core, for vertex-stage storage buffers."""

HEADLESS_PACKAGES = "libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri"
"""Debian/Ubuntu packages that provide headless EGL with Mesa (llvmpipe when there is no GPU)."""


def _version_text(ctx: Any) -> str:
    info = ctx.info
    return f"OpenGL {info.get('GL_VERSION', '?')} ({info.get('GL_RENDERER', '?')}, {info.get('GL_VENDOR', '?')})"


def check_context(ctx: Any) -> moderngl.Context:
    """Return ``ctx`` if it can run Ossa's shaders, else raise :class:`GLContextError`.

    Checks the version (≥ 4.3) and that the vertex stage can read at least one shader storage
    block. The message says what was found.
    """
    if ctx.version_code < REQUIRED_VERSION:
        raise GLContextError(
            f"Ossa needs OpenGL 4.3 core (storage buffers for skinning palettes), found {_version_text(ctx)}. "
            "Update the GPU driver; for software rendering install Mesa ≥ 20 "
            f"(apt-get install {HEADLESS_PACKAGES})."
        )
    blocks = int(ctx.info.get("GL_MAX_VERTEX_SHADER_STORAGE_BLOCKS", 0))
    if blocks < 1:
        raise GLContextError(
            f"Ossa's skinning shaders read a storage buffer in the vertex stage, but {_version_text(ctx)} "
            f"allows {blocks} vertex shader storage blocks (GL_MAX_VERTEX_SHADER_STORAGE_BLOCKS)."
        )
    return ctx


def create_context(*, standalone: bool = False) -> moderngl.Context:
    """Create a headless OpenGL 4.3 context, or adopt the one current on this thread.

    Parameters
    ----------
    standalone
        ``True``: a new EGL context without a window, with a 1×1 framebuffer bound.
        ``False``: the context a window made current (e.g. ``pygame.display.set_mode(...,
        pygame.OPENGL | pygame.DOUBLEBUF)`` with a 4.3 core profile requested through
        ``pygame.display.gl_set_attribute``).

    Returns
    -------
    moderngl.Context
        A context that passed :func:`check_context`.

    Raises
    ------
    GLContextError
        No context could be made or found (the message says what to install or do), or the
        one found is older than 4.3 (the message says which version it is).
    """
    if not standalone:
        try:
            ctx = moderngl.create_context()
        except Exception as exc:
            raise GLContextError(
                f"no current OpenGL context to adopt ({exc}). Open the window with pygame.OPENGL first and request "
                "a 4.3 core profile, or pass standalone=True for a headless EGL context."
            ) from None
        return check_context(ctx)
    try:
        ctx = moderngl.create_standalone_context(**_egl(require=REQUIRED_VERSION))
    except Exception as exc:
        found = _probe_standalone()
        if found is not None:
            raise GLContextError(
                f"EGL gave no OpenGL 4.3 core context ({exc}); the best available is {found}. "
                f"Update the GPU driver or Mesa (apt-get install {HEADLESS_PACKAGES})."
            ) from None
        raise GLContextError(
            f"could not create a headless EGL OpenGL context ({exc}). "
            f"Install EGL and Mesa's drivers: apt-get install {HEADLESS_PACKAGES}."
        ) from None
    framebuffer = ctx.simple_framebuffer((1, 1))
    framebuffer.use()
    ctx.extra = {"default_framebuffer": framebuffer}
    return check_context(ctx)


def _egl(**options: Any) -> dict[str, Any]:
    """Keyword arguments for ``moderngl.create_standalone_context`` selecting the EGL backend."""
    return {"backend": "egl", **options}


def release_context(ctx: moderngl.Context) -> None:
    """Unbind ``ctx`` from this thread, then free it (for contexts from ``create_context(standalone=True)``).

    ``ctx.release()`` alone leaves a standalone EGL context current; a window opened later in the
    same process then cannot make its GLX context current (``BadAccess``, and Xlib ends the process).
    """
    ctx.__exit__(None, None, None)  # restores "no context" on this thread
    ctx.release()


def _probe_standalone() -> str | None:
    """Describe the EGL context made without a version requirement, or ``None`` if none can be made."""
    try:
        ctx = moderngl.create_standalone_context(**_egl())
    except Exception:
        return None
    try:
        return _version_text(ctx)
    finally:
        ctx.release()
