"""Load GLSL files from ``shaders/`` by name and build programs whose errors name file and line.

This module is the only code that knows where the shader files live. Two small source
features on top of GLSL:

- ``#include "name.glsl"`` on a line of its own pastes another file of ``shaders/`` (once per
  program; includes may nest, cycles are an error);
- ``defines={"NAME": value}`` adds ``#define NAME value`` lines right after ``#version``.

Each pasted file gets its own block of line numbers through ``#line``: file ``k`` of the
program (``k = 0`` for the named file) starts at line ``k · 10000 + 1``. Source-string numbers
would be the obvious tool, but Mesa reports string 0 for some errors whatever ``#line`` said,
while line numbers survive everywhere. The driver's messages (``0:20014(7): error: ...`` on
Mesa, ``0(20014) : error ...`` on NVIDIA) are rewritten as ``skin_common.glsl, line 14: ...``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import moderngl

from engine.errors import ShaderError

SHADER_DIR = Path(__file__).resolve().parents[2] / "shaders"
"""The ``shaders/`` folder at the repository root."""

LINES_PER_FILE = 10000
"""Line-number block of each pasted file (a shader file may have fewer lines than this)."""

_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$')
_LOCATION = re.compile(r"^(?:ERROR:\s*)?(\d+)[:(](\d+)\)?(?:\(\d+\))?\s*:?\s*(.*)$")


def shader_path(name: str, directory: Path = SHADER_DIR) -> Path:
    """Path of the shader file ``name`` in ``directory``; :class:`ShaderError` if it is missing."""
    path = directory / name
    if not path.is_file():
        available = ", ".join(sorted(p.name for p in directory.glob("*") if p.is_file())) or "none"
        raise ShaderError(f"shader file {name!r} not found in {directory} (available: {available})")
    return path


def shader_source(
    name: str, defines: Mapping[str, int | float | str] | None = None, directory: Path = SHADER_DIR
) -> tuple[str, list[str]]:
    """Assemble the source of shader ``name`` with its includes and defines.

    Returns
    -------
    source
        GLSL text for the driver.
    files
        File names in order of first use (``files[0] == name``); file ``k``'s line ``n`` has the
        GLSL line number ``k · LINES_PER_FILE + n``.
    """
    files: list[str] = []
    body = _expand(name, directory, files, stack=())
    lines = body.split("\n")
    if not lines[0].startswith("#version"):
        raise ShaderError(f"{name}, line 1: a shader must start with #version, got {lines[0]!r}")
    header = [f"#define {key} {value}" for key, value in (defines or {}).items()]
    if header:
        lines = [lines[0], *header, "#line 2 0", *lines[1:]]
    return "\n".join(lines), files


def _expand(name: str, directory: Path, files: list[str], stack: tuple[str, ...]) -> str:
    if name in stack:
        raise ShaderError(f"{stack[-1]}: #include cycle {' -> '.join((*stack, name))}")
    text = shader_path(name, directory).read_text()
    if name in files:
        return ""
    files.append(name)
    number = len(files) - 1
    out = []
    for line_number, line in enumerate(text.split("\n"), start=1):
        match = _INCLUDE.match(line)
        if match is None:
            out.append(line)
            continue
        included = _expand(match.group(1), directory, files, (*stack, name))
        start = files.index(match.group(1)) * LINES_PER_FILE + 1
        out.extend((f"#line {start} 0", included, f"#line {number * LINES_PER_FILE + line_number + 1} 0"))
    return "\n".join(out)


def _locate(message: str, files: Sequence[str]) -> str:
    """Rewrite driver messages ``0:L(C): text`` as ``file, line L mod 10000: text``."""
    out = []
    for line in message.splitlines():
        match = _LOCATION.match(line.strip())
        number, line_number = divmod(int(match.group(2)), LINES_PER_FILE) if match else (len(files), 0)
        if match and number < len(files):
            out.append(f"{files[number]}, line {line_number}: {match.group(3)}")
        elif line.strip() and not set(line.strip()) <= {"="}:
            out.append(line.strip())
    return "\n".join(out)


def load_program(
    ctx: moderngl.Context,
    vertex: str,
    fragment: str | None = None,
    *,
    defines: Mapping[str, int | float | str] | None = None,
    varyings: Sequence[str] = (),
    directory: Path = SHADER_DIR,
) -> moderngl.Program:
    """Compile and link a program from shader files of ``shaders/``.

    Parameters
    ----------
    ctx
        The OpenGL context.
    vertex, fragment
        File names, e.g. ``"skinning.vert"`` and ``"lit.frag"``. Without a fragment shader the
        program is for transform feedback and ``varyings`` names the captured outputs.
    defines
        ``#define`` lines added to both stages.
    varyings
        Vertex outputs captured by transform feedback, interleaved in this order.
    directory
        Where the files are (tests point it at a temporary folder).

    Raises
    ------
    ShaderError
        A file is missing, or compiling or linking fails; the message names the file and line.
    """
    vertex_source, vertex_files = shader_source(vertex, defines, directory)
    fragment_source, fragment_files = (None, []) if fragment is None else shader_source(fragment, defines, directory)
    try:
        return ctx.program(vertex_shader=vertex_source, fragment_shader=fragment_source, varyings=tuple(varyings) or ())
    except moderngl.Error as exc:
        text = str(exc)
        stage_files = fragment_files if "fragment_shader" in text else vertex_files
        names = " + ".join(n for n in (vertex, fragment) if n)
        if "Linker" in text or "link" in text.lower().split("\n", 1)[0]:
            raise ShaderError(f"linking {names} failed:\n{_locate(text, stage_files)}") from None
        raise ShaderError(f"compiling {names} failed:\n{_locate(text, stage_files)}") from None


def load_compute(
    ctx: moderngl.Context,
    name: str,
    *,
    defines: Mapping[str, int | float | str] | None = None,
    directory: Path = SHADER_DIR,
) -> moderngl.ComputeShader:
    """Compile the compute shader file ``name`` of ``shaders/`` (see :func:`load_program`).

    Raises
    ------
    ShaderError
        The file is missing or fails to compile; the message names the file and line.
    """
    source, files = shader_source(name, defines, directory)
    try:
        return ctx.compute_shader(source)
    except moderngl.Error as exc:
        raise ShaderError(f"compiling {name} failed:\n{_locate(str(exc), files)}") from None


def uniform(program: moderngl.Program | moderngl.ComputeShader, name: str) -> moderngl.Uniform:
    """The uniform ``name`` of ``program``; :class:`ShaderError` if the program has no such uniform."""
    member = program.get(name, None)
    if not isinstance(member, moderngl.Uniform):
        raise ShaderError(f"the program has no active uniform {name!r} (not declared, or unused and optimised out)")
    return member
