"""The ``ossa`` command line: its package shape, and every user-facing error as the one line it prints.

Errors Ossa raises print ``ossa COMMAND: error: …`` and exit 2; argparse's own errors
(``ossa COMMAND: error: argument …``) exit 2 too. Each case below asserts the whole last line.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from engine.backend import backend_description
from engine.cli import COMMANDS, build_parser, main
from tests.anim.rigs import rig, to_bvh, walk
from tests.conftest import ROOT
from tests.io.gltf_builder import skinned_document
from tests.io.test_mocap_commands import TINY

MANNEQUIN = ROOT / "assets" / "mannequin.glb"


# --- the package ------------------------------------------------------------------------------------


def engine_import_graph() -> dict[str, set[str]]:
    """Module → engine modules it imports at run time (``from a.b import c`` counts ``a.b.c`` when it is a module)."""
    modules = {}
    for path in (ROOT / "engine").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        modules[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        tree = ast.parse(path.read_text())
        # imports under `if TYPE_CHECKING:` never run: annotations may name each other's classes
        typing_only = {
            id(inner)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
            for inner in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                    for a in node.names
                }
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_the_engine_has_no_import_cycle() -> None:
    graph = engine_import_graph()
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for other in sorted(graph[module]):
            assert state.get(other) != 1, " → ".join([*path, module, other])
            if other not in state:
                visit(other, [*path, module])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
    assert "engine.cli.retarget" in graph


def test_every_subcommand_is_a_module_imported_by_name() -> None:
    package = ROOT / "engine" / "cli"
    for path in package.glob("*.py"):
        assert "importlib" not in path.read_text(), path
    assert [c.__name__ for c in COMMANDS] == [
        "engine.cli.inspect",
        "engine.cli.evaluate",
        "engine.cli.convert",
        "engine.cli.retarget",
        "engine.cli.make_mannequin",
        "engine.cli.graph",
        "engine.cli.mm",
        "engine.cli.compress",
        "engine.cli.decompress",
        "engine.cli.build",
    ]
    choices = build_parser()._subparsers._group_actions[0].choices
    assert list(choices) == [
        "inspect",
        "evaluate",
        "convert",
        "retarget",
        "make-mannequin",
        "graph",
        "mm",
        "compress",
        "decompress",
        "build",
    ]


def test_version_and_console_entry(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    expected = f"ossa {engine.__version__} (backend: {backend_description()})\n"
    assert capsys.readouterr().out == expected
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'ossa = "engine.cli:main"' in pyproject
    command = [sys.executable, "-m", "engine.cli", "--version"]
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=True)
    assert run.stdout == expected
    forced = subprocess.run(
        command, capture_output=True, text=True, cwd=ROOT, check=True, env={**os.environ, "OSSA_BACKEND": "numpy"}
    )
    assert forced.stdout.startswith(f"ossa {engine.__version__} (backend: numpy ")


def test_no_command_prints_the_help(capsys) -> None:
    assert main([]) == 0
    assert "inspect" in capsys.readouterr().out


# --- every error, one line --------------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Small inputs: a 3-joint BVH, a CMU-unit walk, a skinned glTF, one without skins, maps."""
    tiny = tmp_path / "tiny.bvh"
    tiny.write_text(TINY)
    cmu = rig("cmu")
    walk_bvh = tmp_path / "walk.bvh"
    walk_bvh.write_text(to_bvh(cmu, *walk(cmu, np.array([0.0, 0.1])), frame_time=0.1))
    skinned = skinned_document()
    skinned.doc["nodes"][0]["name"] = "spine"  # a non-joint node first: the joint becomes "spine#2"
    skinned_path = skinned.write(tmp_path / "skinned.gltf", "embedded")
    bare = skinned_document()
    del bare.doc["skins"]
    del bare.doc["nodes"][3]["skin"]
    bare.doc["meshes"][0]["primitives"][0]["attributes"] = {
        k: v for k, v in bare.doc["meshes"][0]["primitives"][0]["attributes"].items() if k in ("POSITION", "NORMAL")
    }
    bare_path = bare.write(tmp_path / "bare.gltf", "embedded")
    no_clips = skinned_document()
    del no_clips.doc["animations"]
    no_clips_path = no_clips.write(tmp_path / "still.gltf", "embedded")
    maps = {}
    for name, text in {
        "bad_json": "{",
        "not_object": '["hips"]',
        "torso": json.dumps({"hips": "hip", "spine": "spine"}),
        "unknown": json.dumps({"hips": "hip", "spiine": "head"}),
        "twice": json.dumps({"hips": "hip", "spine": "hip"}),
        "upside_down": json.dumps({"hips": "head", "spine": "hip"}),
        "two_tops": json.dumps({"spine": "upper_leg_l", "leg": "upper_leg_r"}),
    }.items():
        maps[name] = tmp_path / f"{name}.json"
        maps[name].write_text(text)
    return {
        "tiny": tiny,
        "walk": walk_bvh,
        "skinned": skinned_path,
        "bare": bare_path,
        "still": no_clips_path,
        "missing": tmp_path / "missing.bvh",
        "missing_gltf": tmp_path / "missing.glb",
        "dir": tmp_path,
        **{f"map_{k}": v for k, v in maps.items()},
    }


ERRORS: list[tuple[str, list[str], str]] = [
    # inspect
    ("inspect missing", ["inspect", "{missing}"],
     "ossa inspect: error: {missing}: cannot read the file: No such file or directory"),
    ("inspect --scale on glTF", ["inspect", "{skinned}", "--scale", "cm"],
     "ossa inspect: error: --scale applies to .bvh files; skinned.gltf is glTF, whose lengths are metres"),
    ("inspect bad --scale", ["inspect", "{tiny}", "--scale", "yards"],
     "ossa inspect: error: argument --scale: expected metres per file unit (a positive number such as 0.01) or a "
     "unit (mm, cm, in, cmu, ft, m), got 'yards'"),
    ("inspect zero --scale", ["inspect", "{tiny}", "--scale", "0"],
     "ossa inspect: error: argument --scale: expected metres per file unit (a positive number such as 0.01) or a "
     "unit (mm, cm, in, cmu, ft, m), got '0'"),
    # evaluate
    ("evaluate bad --times", ["evaluate", "{tiny}", "--times", "0,x"],
     "ossa evaluate: error: argument --times: expected comma-separated seconds, got '0,x'"),
    ("evaluate infinite --times", ["evaluate", "{tiny}", "--times", "0,inf"],
     "ossa evaluate: error: argument --times: times must be finite, got '0,inf'"),
    ("evaluate BVH --clip", ["evaluate", "{tiny}", "--times", "0", "--clip", "walk"],
     "ossa evaluate: error: --clip walk: a BVH file has one clip, 0 or 'tiny'"),
    ("evaluate --clip range", ["evaluate", "{skinned}", "--times", "0", "--clip", "7"],
     "ossa evaluate: error: --clip 7 is out of range: the file has 2 clip(s)"),
    ("evaluate --out unwritable", ["evaluate", "{tiny}", "--times", "0", "--out", "{dir}/no/such/dir/out.json"],
     "ossa evaluate: error: --out {dir}/no/such/dir/out.json: cannot write: No such file or directory"),
    ("evaluate --scale on glTF", ["evaluate", "{skinned}", "--times", "0", "--scale", "1"],
     "ossa evaluate: error: --scale applies to .bvh files; skinned.gltf is glTF, whose lengths are metres"),
    # convert
    ("convert OUT suffix", ["convert", "{tiny}", "{dir}/out.fbx"],
     "ossa convert: error: argument out: expected a .glb or .gltf file name, got '{dir}/out.fbx'"),
    ("convert missing", ["convert", "{missing}", "{dir}/out.glb"],
     "ossa convert: error: {missing}: cannot read the file: No such file or directory"),
    ("convert OUT unwritable", ["convert", "{tiny}", "{dir}/tiny.bvh/out.glb"],
     "ossa convert: error: OUT {dir}/tiny.bvh/out.glb: cannot write: Not a directory"),
    # retarget
    ("retarget --out suffix", ["retarget", "{tiny}", str(MANNEQUIN), "--out", "{dir}/o.txt"],
     "ossa retarget: error: argument --out: expected a .glb or .gltf file name, got '{dir}/o.txt'"),
    ("retarget missing source", ["retarget", "{missing}", str(MANNEQUIN), "--out", "{dir}/o.glb"],
     "ossa retarget: error: {missing}: cannot read the file: No such file or directory"),
    ("retarget missing target", ["retarget", "{tiny}", "{missing_gltf}", "--out", "{dir}/o.glb"],
     "ossa retarget: error: {missing_gltf}: cannot read the file: No such file or directory"),
    ("retarget target without skin", ["retarget", "{tiny}", "{bare}", "--out", "{dir}/o.glb"],
     "ossa retarget: error: {bare}: TARGET has no skin: nothing to retarget"),
    ("retarget source without clips", ["retarget", "{still}", str(MANNEQUIN), "--out", "{dir}/o.glb"],
     "ossa retarget: error: {still}: SOURCE has no clips to retarget"),
    ("retarget --clip on BVH", ["retarget", "{tiny}", str(MANNEQUIN), "--out", "{dir}/o.glb", "--clip", "x"],
     "ossa retarget: error: --clip 'x': a .bvh SOURCE has one clip; leave --clip out"),
    ("retarget --clip unknown", ["retarget", "{skinned}", str(MANNEQUIN), "--out", "{dir}/o.glb", "--clip", "run"],
     "ossa retarget: error: --clip 'run': SOURCE's clips are ['wave', 'animation1']"),
    ("retarget --scale on glTF source",
     ["retarget", "{skinned}", str(MANNEQUIN), "--out", "{dir}/o.glb", "--scale", "1"],
     "ossa retarget: error: --scale applies to .bvh files; skinned.gltf is glTF, whose lengths are metres"),
    ("retarget --map missing",
     ["retarget", "{tiny}", "{skinned}", "--out", "{dir}/o.glb", "--map", "{dir}/none.json"],
     "ossa retarget: error: {dir}/none.json: --map: cannot read the joint map: No such file or directory"),
    ("retarget --map JSON", ["retarget", "{tiny}", "{skinned}", "--out", "{dir}/o.glb", "--map", "{map_bad_json}"],
     "ossa retarget: error: {map_bad_json}: --map: the joint map is not valid JSON: Expecting property name "
     "enclosed in double quotes: line 1 column 2 (char 1)"),
    ("retarget --map shape", ["retarget", "{tiny}", "{skinned}", "--out", "{dir}/o.glb", "--map", "{map_not_object}"],
     '''ossa retarget: error: {map_not_object}: --map: the joint map must be a JSON object {{"source joint": '''
     '''"target joint", ...}}'''),
    ("retarget --map '#' names", ["retarget", "{tiny}", "{skinned}", "--out", "{dir}/o.glb", "--map", "{map_torso}"],
     "ossa retarget: error: --map {map_torso} names joints that do not exist: target joints 'spine' (several "
     "joints share that name and are called ['spine#2'] here: the glTF reader adds '#' and the node index to "
     "repeats)"),
    ("retarget --map typo", ["retarget", "{tiny}", "{skinned}", "--out", "{dir}/o.glb", "--map", "{map_unknown}"],
     "ossa retarget: error: --map {map_unknown} names joints that do not exist: source joints 'spiine' (did you "
     "mean 'spine'?)"),
    ("retarget --map twice", ["retarget", "{tiny}", "{skinned}", "--out", "{dir}/o.glb", "--map", "{map_twice}"],
     "ossa retarget: error: --map {map_twice} sends both 'hips' and 'spine' to target joint 'hip'"),
    ("retarget --map hierarchy", ["retarget", "{tiny}", "{skinned}", "--out", "{dir}/o.glb", "--map",
                                  "{map_upside_down}"],
     "ossa retarget: error: --map {map_upside_down} breaks the hierarchy: 'hips' → 'head': the nearest mapped "
     "ancestor of 'hips' is none but that of 'head' is 'hip'"),
    ("retarget --map tops", ["retarget", "{tiny}", str(MANNEQUIN), "--out", "{dir}/o.glb", "--map", "{map_two_tops}"],
     "ossa retarget: error: --map {map_two_tops} must have one pair above all others (the hips) to carry the "
     "translation, got 2: ['spine', 'leg']"),
    ("retarget no humanoid", ["retarget", "{tiny}", str(MANNEQUIN), "--out", "{dir}/o.glb"],
     "ossa retarget: error: cannot propose a joint map: the source is not a humanoid skeleton (5 joints): no joint "
     "where a spine and two legs meet (no joint has three limbs of two or more joints). Give --map MAP.json by "
     "hand to map only what corresponds"),
    ("retarget --save-map unwritable", ["retarget", "{walk}", str(MANNEQUIN), "--out", "{dir}/o.glb", "--save-map",
                                        "{dir}/no/map.json"],
     "ossa retarget: error: --save-map {dir}/no/map.json: cannot write: No such file or directory"),
    ("retarget --out unwritable", ["retarget", "{walk}", str(MANNEQUIN), "--out", "{dir}/tiny.bvh/o.glb"],
     "ossa retarget: error: --out {dir}/tiny.bvh/o.glb: cannot write: Not a directory"),
    # make-mannequin
    ("make-mannequin OUT suffix", ["make-mannequin", "{dir}/m.obj"],
     "ossa make-mannequin: error: argument out: expected a .glb or .gltf file name, got '{dir}/m.obj'"),
    ("make-mannequin OUT unwritable", ["make-mannequin", "{dir}/tiny.bvh/m.glb"],
     "ossa make-mannequin: error: OUT {dir}/tiny.bvh/m.glb: cannot write: Not a directory"),
]  # fmt: skip


def run(argv: list[str]) -> int:
    """``main(argv)``'s exit status, argparse's ``SystemExit`` included."""
    try:
        return main(argv)
    except SystemExit as exit_info:
        return int(exit_info.code or 0)


@pytest.mark.parametrize(("arguments", "message"), [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS])
def test_errors_are_one_line(files: dict[str, Path], arguments: list[str], message: str, capsys) -> None:
    names = {k: str(v) for k, v in files.items()}
    assert run([a.format(**names) for a in arguments]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == message.format(**names)
    assert sum(": error: " in line for line in lines) == 1


# --- warnings ------------------------------------------------------------------------------------------


def test_unit_warning_is_one_line_in_the_commands_words(files: dict[str, Path], tmp_path: Path, capsys) -> None:
    assert main(["convert", str(files["walk"]), str(tmp_path / "walk.glb")]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        f"ossa convert: warning: {files['walk']}: lengths read as CMU units (inches / 0.45) (× 0.0564444 m): the "
        "figure's joints then span 1.42 m; pass scale (ossa: --scale) if that is wrong\n"
    )
    assert "lengths × 0.0564444 (CMU units (inches / 0.45) (detected: the figure's joints span 1.42 m))" in captured.out


def test_scale_overrides_the_detection(files: dict[str, Path], capsys) -> None:
    assert main(["inspect", str(files["walk"]), "--scale", "cm"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert "lengths in metres: file units × 0.01, × 0.01 (given)" in captured.out
