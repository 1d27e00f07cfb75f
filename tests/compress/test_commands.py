"""``ossa compress``, ``ossa decompress`` and ``ossa inspect LIB``: end to end, and their one-line errors."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from engine.anim import sample
from engine.cli import main
from engine.compress import load_library
from engine.errors import OssaWarning
from engine.io import load_character
from engine.io.bvh import load_bvh
from tests.compress.files import write_take
from tests.compress.reference import shell_displacement


@pytest.fixture(scope="module")
def takes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("takes")
    write_take(folder / "walk.bvh")
    write_take(folder / "jog.bvh", frames=12, period=0.6)
    return folder


def run(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(arguments)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_compress_inspect_decompress(takes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    library = tmp_path / "walks.ossalib"
    status, out, err = run(
        ["compress", str(takes / "walk.bvh"), str(takes / "jog.bvh"), "--out", str(library), "--tolerance", "0.02"],
        capsys,
    )
    assert status == 0, err
    assert "walk: " in out
    assert "jog: " in out
    assert f"wrote {library}: 2 clips" in out
    assert "ossa compress: warning:" in err  # the BVH unit is detected and said
    status, out, _ = run(["inspect", str(library)], capsys)
    assert status == 0
    assert "Ossa clip library, format version 1: 2 clips on 1 skeleton(s)" in out
    assert out.count("tolerance 0.0200 cm guaranteed (held on every checked time)") == 2
    glb = tmp_path / "walks.glb"
    status, out, _ = run(["decompress", str(library), "--out", str(glb)], capsys)
    assert status == 0
    assert f"wrote {glb}: 38 joints, 2 clips: jog, walk" in out
    # the glTF plays the source within the tolerance, at the source's key times
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        source = load_bvh(takes / "walk.bvh")
    character = load_character(glb)
    played = character.clips["walk"]
    times = source.clip.channels[0].times
    moved = shell_displacement(
        source.skeleton,
        sample(source.clip, source.skeleton.rest_pose, times),
        sample(played, character.skeleton.rest_pose, times),
        np.full(source.skeleton.num_joints, 0.03),
    )
    assert moved.max() <= 2.0e-4 + 1e-6  # float32 keys of the glTF on top of the 0.02 cm
    assert load_library(library)["walk"].info["source"]["file"] == str(takes / "walk.bvh")


def test_a_library_of_two_skeletons_decompresses_to_two_files(
    takes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = tmp_path / "two.ossalib"
    big = write_take(tmp_path / "big" / "big.bvh")
    big.write_text(big.read_text().replace("OFFSET 0.000000", "OFFSET 0.000001", 1))  # another skeleton
    assert run(["compress", str(takes / "walk.bvh"), str(big), "--out", str(library)], capsys)[0] == 0
    status, _out, _ = run(["decompress", str(library), "--out", str(tmp_path / "two.glb")], capsys)
    assert status == 0
    assert (tmp_path / "two.glb").is_file()
    assert (tmp_path / "two-1.glb").is_file()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["compress", "{missing}", "--out", "{out}"], "ossa compress: error: {missing}: no such file or folder"),
        (
            ["compress", "{walk}", "--out", "{out}", "--tolerance", "0"],
            "ossa compress: error: argument --tolerance: expected a positive number of centimetres, got '0'",
        ),
        (
            ["compress", "{walk}", "--out", "{out}", "--effector", "Tail=5"],
            "ossa compress: error: --effector names joints no input has: ['Tail']",
        ),
        (
            ["compress", "{walk}", "--out", "{out}", "--effector", "5"],
            "ossa compress: error: argument --effector: expected JOINT=CM (a joint name and a radius in cm), got '5'",
        ),
        (
            ["compress", "{walk}", "{walk_copy}", "--out", "{out}"],
            "ossa compress: error: two inputs give a clip named 'walk': {walk} and {walk_copy}",
        ),
        (
            ["compress", "{text}", "--out", "{out}"],
            "ossa compress: error: {text}: not a clip file: expected one of .bvh, .glb, .gltf",
        ),
        (
            ["inspect", "{corrupt}"],
            "ossa inspect: error: {corrupt}: header: checksum mismatch: the file is corrupted",
        ),
        (
            ["inspect", "{library}", "--scale", "cm"],
            "ossa inspect: error: --scale and --clips apply to model files; lib.ossalib is a clip library",
        ),
        (
            ["decompress", "{corrupt}", "--out", "{out_glb}"],
            "ossa decompress: error: {corrupt}: header: checksum mismatch",
        ),
        (
            ["decompress", "{library}", "--out", "{out}"],
            "ossa decompress: error: argument --out: expected a .glb or .gltf file name, got '{out}'",
        ),
    ],
)
def test_errors_are_one_line(
    takes: Path, tmp_path: Path, arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    library = tmp_path / "lib.ossalib"
    assert main(["compress", str(takes / "walk.bvh"), "--out", str(library)]) == 0
    corrupt = tmp_path / "corrupt.ossalib"
    data = bytearray(library.read_bytes())
    data[-100] ^= 1
    corrupt.write_bytes(bytes(data))
    copy = tmp_path / "again" / "walk.bvh"
    copy.parent.mkdir()
    copy.write_text((takes / "walk.bvh").read_text())
    (tmp_path / "notes.txt").write_text("hello")
    names = {
        "missing": str(tmp_path / "nope.bvh"),
        "out": str(tmp_path / "out.ossalib"),
        "walk": str(takes / "walk.bvh"),
        "walk_copy": str(copy),
        "text": str(tmp_path / "notes.txt"),
        "corrupt": str(corrupt),
        "library": str(library),
        "out_glb": str(tmp_path / "out.glb"),
    }
    capsys.readouterr()
    with pytest.raises(SystemExit) if "argument" in message else _nothing():
        status = main([a.format(**names) for a in arguments])
        assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(message.format(**names)), err[-1]


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False
