"""Compiled skinning programs and compute shaders, cached per OpenGL context.

Every mesh with the same influence sets and morph switch shares one program, and every
:class:`~engine.render.storage_buffers.PaletteBuffer` of a context one DQ conversion shader; the
cache entries go with their context.
"""

from __future__ import annotations

import weakref
from typing import Any

import moderngl

from engine.render.shaders import load_compute, load_program

_programs: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()


def cached_program(
    ctx: moderngl.Context,
    vertex: str,
    fragment: str | None,
    sets: int,
    varyings: tuple[str, ...] = (),
    *,
    morph: bool = False,
) -> moderngl.Program:
    """Compile once per context and reuse: every mesh with the same influence sets and morph switch shares it."""
    cache = _programs.setdefault(ctx, {})
    key = (vertex, fragment, sets, varyings, morph)
    if key not in cache:
        defines = {"INFLUENCE_SETS": sets, "MORPH": int(morph)}
        cache[key] = load_program(ctx, vertex, fragment, defines=defines, varyings=varyings)
    return cache[key]


def cached_compute(ctx: moderngl.Context, name: str) -> moderngl.ComputeShader:
    """Compile a compute shader once per context."""
    cache = _programs.setdefault(ctx, {})
    if name not in cache:
        cache[name] = load_compute(ctx, name)
    return cache[name]
