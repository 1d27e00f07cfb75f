"""Shader files by name: includes, defines, and errors that name the file and line."""

from __future__ import annotations

import pytest

from engine.errors import ShaderError
from engine.render import load_program, shader_path, shader_source
from engine.render.shaders import SHADER_DIR, load_compute, uniform

SHIPPED = [("skinning.vert", "lit.frag"), ("skinning_dq.vert", "lit.frag"), ("lines.vert", "lines.frag")]

VERTEX_OK = "#version 430 core\nin vec3 in_position;\nvoid main() {\n    gl_Position = vec4(in_position, 1.0);\n}\n"
FRAGMENT_OK = "#version 430 core\nout vec4 f_color;\nvoid main() {\n    f_color = vec4(1.0);\n}\n"


@pytest.fixture
def shader_dir(tmp_path):
    (tmp_path / "ok.vert").write_text(VERTEX_OK)
    (tmp_path / "ok.frag").write_text(FRAGMENT_OK)
    return tmp_path


def test_missing_shader_file_names_it_and_lists_what_exists():
    with pytest.raises(ShaderError, match=r"'nope\.vert' not found in .*shaders \(available: .*skinning\.vert"):
        shader_path("nope.vert")


@pytest.mark.gl
def test_missing_shader_file_in_load_program(ctx):
    with pytest.raises(ShaderError, match=r"'missing\.frag' not found"):
        load_program(ctx, "skinning.vert", "missing.frag", defines={"INFLUENCE_SETS": 1})


@pytest.mark.gl
@pytest.mark.parametrize(("vertex", "fragment"), SHIPPED)
@pytest.mark.parametrize("sets", [1, 2])
def test_every_shipped_shader_compiles_and_links(ctx, vertex, fragment, sets):
    program = load_program(ctx, vertex, fragment, defines={"INFLUENCE_SETS": sets})
    assert "u_view" in program
    program.release()


def test_includes_are_pasted_once_with_line_directives(shader_dir):
    (shader_dir / "common.glsl").write_text("float twice(float x) {\n    return 2.0 * x;\n}\n")
    (shader_dir / "main.vert").write_text(
        '#version 430 core\n#include "common.glsl"\n#include "common.glsl"\nvoid main() {}\n'
    )
    source, files = shader_source("main.vert", {"SETS": 2}, shader_dir)
    assert files == ["main.vert", "common.glsl"]
    assert source.count("float twice") == 1
    lines = source.split("\n")
    assert lines[:3] == ["#version 430 core", "#define SETS 2", "#line 2 0"]
    assert "#line 10001 0" in lines
    assert lines[-2:] == ["void main() {}", ""]
    assert "#line 4 0" in lines


def test_include_cycle_is_an_error(shader_dir):
    (shader_dir / "a.glsl").write_text('#include "b.glsl"\n')
    (shader_dir / "b.glsl").write_text('#include "a.glsl"\n')
    (shader_dir / "cycle.vert").write_text('#version 430 core\n#include "a.glsl"\n')
    with pytest.raises(ShaderError, match=r"#include cycle cycle\.vert -> a\.glsl -> b\.glsl -> a\.glsl"):
        shader_source("cycle.vert", directory=shader_dir)


def test_shader_without_version_is_an_error(shader_dir):
    (shader_dir / "bare.vert").write_text("void main() {}\n")
    with pytest.raises(ShaderError, match=r"bare\.vert, line 1: a shader must start with #version"):
        shader_source("bare.vert", directory=shader_dir)


@pytest.mark.gl
def test_compile_error_in_an_included_file_names_that_file_and_line(ctx, shader_dir):
    (shader_dir / "helpers.glsl").write_text("// helpers\nvec4 broken() {\n    return undeclared_thing;\n}\n")
    (shader_dir / "uses.vert").write_text(
        '#version 430 core\n#include "helpers.glsl"\nvoid main() {\n    gl_Position = broken();\n}\n'
    )
    with pytest.raises(
        ShaderError, match=r"compiling uses\.vert \+ ok\.frag failed:[\s\S]*helpers\.glsl, line 3: .*undeclared_thing"
    ):
        load_program(ctx, "uses.vert", "ok.frag", directory=shader_dir)


@pytest.mark.gl
def test_compile_error_after_defines_and_includes_keeps_the_main_file_line(ctx, shader_dir):
    (shader_dir / "helpers.glsl").write_text("float one() {\n    return 1.0;\n}\n")
    (shader_dir / "late.frag").write_text(
        '#version 430 core\n#include "helpers.glsl"\nout vec4 f_color;\nvoid main() {\n    f_color = nope;\n}\n'
    )
    with pytest.raises(ShaderError, match=r"late\.frag, line 5: .*nope"):
        load_program(ctx, "ok.vert", "late.frag", defines={"A": 1, "B": 2}, directory=shader_dir)


@pytest.mark.gl
def test_link_error_names_the_program(ctx, shader_dir):
    (shader_dir / "wants.frag").write_text(
        "#version 430 core\nin vec3 v_missing;\nout vec4 f_color;\n"
        "void main() {\n    f_color = vec4(v_missing, 1.0);\n}\n"
    )
    with pytest.raises(ShaderError, match=r"linking ok\.vert \+ wants\.frag failed"):
        load_program(ctx, "ok.vert", "wants.frag", directory=shader_dir)


@pytest.mark.gl
def test_compute_shader_compiles_and_its_errors_name_file_and_line(ctx, shader_dir):
    assert "u_count" in load_compute(ctx, "palette_dq.comp")
    (shader_dir / "bad.comp").write_text(
        "#version 430 core\nlayout(local_size_x = 1) in;\nvoid main() {\n    x = 1;\n}\n"
    )
    with pytest.raises(ShaderError, match=r"compiling bad\.comp failed:[\s\S]*bad\.comp, line 4: "):
        load_compute(ctx, "bad.comp", directory=shader_dir)


@pytest.mark.gl
def test_uniform_lookup_names_the_missing_uniform(ctx):
    program = load_program(ctx, "lines.vert", "lines.frag")
    assert uniform(program, "u_view").name == "u_view"
    with pytest.raises(ShaderError, match="no active uniform 'u_nothing'"):
        uniform(program, "u_nothing")
    program.release()


def test_shader_dir_is_the_repository_folder():
    assert (SHADER_DIR / "skinning.vert").is_file()
    assert SHADER_DIR.name == "shaders"
