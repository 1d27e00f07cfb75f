"""Clip compression on every real clip available: ratio, shell error, compress time, decode speed; beside gltfpack.

    python3 bench/bench_compress.py                 # every clip, gltfpack (npm, installed into a temp folder)
    python3 bench/bench_compress.py --quick         # the 14 shared CMU takes only, no gltfpack
    python3 bench/bench_compress.py --crowd-only    # the 1000-character frame, compressed vs raw

Clips: the shared CMU takes, pirouette and the PyMO walk (mocap), the characters' clips (Fox,
CesiumMan, gdquest mannequin), the corpus's mocap and converted characters when
``~/.cache/ossa-corpus`` holds them, and the generated mannequin's clips. "raw" is ACL's measure:
10 float32 (translation, rotation, scale) per joint per sample; "src" is the source's own animated
channels as float32 keys (what a glTF stores). Errors are the largest shell displacement (3 cm
shells) over every checked time (samples, source keys, midpoints between keys), measured through
the whole hierarchy, for Ossa and for gltfpack alike; p99 over every joint at every checked time.
A row "CMU at 24 Hz" resamples the shared takes at ACL's CMU rate (its source is the resampled clip).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.anim import Channel, Clip, Pose, Skeleton, sample  # noqa: E402
from engine.backend import ClipBank, FrameState, evaluate_frame, sample_blend  # noqa: E402
from engine.compress import compress_clip, shell_radii  # noqa: E402
from engine.compress.compressor import measure  # noqa: E402
from engine.compress.metric import model_transforms, shell_error  # noqa: E402
from engine.compress.source import prepare  # noqa: E402
from engine.errors import OssaError, OssaWarning  # noqa: E402
from engine.io import load_character  # noqa: E402
from engine.io.bvh_character import bone_mesh  # noqa: E402
from engine.io.clip_sources import read_clip_sources  # noqa: E402
from engine.io.gltf_writer import save_gltf  # noqa: E402
from engine.math._checks import trusted  # noqa: E402

SHARED = ROOT.parent / "shared" / "assets"
CORPUS = Path(os.environ.get("OSSA_CORPUS", Path.home() / ".cache" / "ossa-corpus"))
GLTFPACK_VERSION = "1.3.0"


@dataclass
class Case:
    group: str
    name: str
    skeleton: Skeleton
    clip: Clip
    metres: float


@dataclass
class Row:
    case: Case
    raw: int
    source: int
    size: int
    max_cm: float
    p99_cm: float
    seconds: float
    errors: np.ndarray = field(repr=False)
    pack_size: int | None = None
    pack_max_cm: float | None = None
    pack_p99_cm: float | None = None
    pack_errors: np.ndarray | None = field(default=None, repr=False)


def cases(quick: bool) -> list[Case]:
    found: list[Case] = []

    def add(group: str, path: Path) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", OssaWarning)
                sources, _ = read_clip_sources(path)
        except OssaError as error:
            print(f"  skipped {path}: {error}")
            return
        found.extend(Case(group, s.name, s.skeleton, s.clip, s.metres_per_unit) for s in sources if s.clip.channels)

    for path in sorted((SHARED / "cmu_locomotion_bvh").glob("*.bvh")):
        add("mocap: shared CMU", path)
    if quick:
        return found
    for path in (
        SHARED / "pirouette_bvh" / "pirouette.bvh",
        SHARED / "pymo_av_walk_bvh" / "AV_8Walk_Meredith_HVHA_Rep1.bvh",
    ):
        add("mocap: other", path)
    for path in sorted(CORPUS.rglob("*.bvh")) if CORPUS.is_dir() else []:
        add("mocap: corpus", path)
    characters = [SHARED / "fox" / "glTF-Binary" / "Fox.glb", SHARED / "khronos" / "cesium_man.gltf"]
    characters += [SHARED / "gdquest_mannequiny" / "mannequiny.glb"]
    characters += (
        sorted((CORPUS / "files" / "assimp-testmodels" / "converted").glob("*.glb")) if CORPUS.is_dir() else []
    )
    for path in characters:
        add("characters", path)
    add("mannequin", ROOT / "assets" / "mannequin.glb")
    return found


def resampled(case: Case, rate: float) -> Case:
    """The case's clip resampled at ``rate`` (LINEAR keys on every channel of the source)."""
    clip = case.clip
    start = min(c.start for c in clip.channels)
    times = start + np.arange(int(np.floor(clip.duration * rate)) + 1) / rate
    pose = sample(clip, case.skeleton.rest_pose, times)
    arrays = {"translation": pose.translations, "rotation": pose.rotations, "scale": pose.scales}
    with trusted():
        channels = tuple(Channel(c.target, c.path, "LINEAR", times, arrays[c.path][:, c.target]) for c in clip.channels)
    return Case(
        "mocap: CMU at 24 Hz (ACL's rate)",
        case.name,
        case.skeleton,
        Clip(clip.name, channels, clip.num_targets),
        case.metres,
    )


def gltfpack_binary(folder: Path) -> str | None:
    found = shutil.which("gltfpack")
    if found:
        return found
    if shutil.which("npm") is None:
        return None
    try:
        subprocess.run(
            [
                "npm",
                "install",
                "--silent",
                "--no-audit",
                "--no-fund",
                "--prefix",
                str(folder),
                f"gltfpack@{GLTFPACK_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=300,
        )
    except (subprocess.SubprocessError, OSError) as error:
        print(f"  gltfpack unavailable: {error}")
        return None
    return str(folder / "node_modules" / ".bin" / "gltfpack")


def animation_bytes(path: Path) -> int:
    """Bytes of the buffer views an animation reads (their compressed size under EXT_meshopt_compression)."""
    import pygltflib  # noqa: PLC0415 (the bench reads gltfpack's file; engine.io is the project's reader)

    gltf = pygltflib.GLTF2().load(str(path))
    views = {gltf.accessors[a].bufferView for an in gltf.animations for s in an.samplers for a in (s.input, s.output)}
    total = 0
    for v in views:
        view = gltf.bufferViews[v]
        meshopt = (view.extensions or {}).get("EXT_meshopt_compression")
        total += meshopt["byteLength"] if meshopt else view.byteLength
    return total


def gltfpack_errors(binary: str, case: Case, times: np.ndarray, folder: Path) -> tuple[int, np.ndarray]:
    """gltfpack's animation size (-cc) and its shell errors ``(V, J)`` at ``times``, by Ossa's metric."""
    source = folder / "in.glb"
    save_gltf(source, case.skeleton, [case.clip], [bone_mesh(case.skeleton)])
    plain, packed = folder / "out.glb", folder / "outc.glb"
    for out, extra in ((plain, []), (packed, ["-cc"])):
        subprocess.run(
            [binary, "-i", str(source), "-o", str(out), "-kn", *extra], check=True, capture_output=True, timeout=300
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        character = load_character(plain, textures=False)
    played = (
        character.clips[case.clip.name] if case.clip.name in character.clips else next(iter(character.clips.values()))
    )
    theirs = sample(played, character.skeleton.rest_pose, times)
    order = [character.skeleton.index(n) for n in case.skeleton.names]
    with trusted():
        pose = Pose(theirs.translations[:, order], theirs.rotations[:, order], theirs.scales[:, order])
        reference = sample(case.clip, case.skeleton.rest_pose, times)
    radii = shell_radii(case.skeleton, 0.03 / case.metres)
    errors = shell_error(model_transforms(case.skeleton, reference), model_transforms(case.skeleton, pose), radii)
    return animation_bytes(packed), errors * case.metres


def run_case(case: Case, binary: str | None) -> Row:
    start = time.perf_counter()
    compressed = compress_clip(case.skeleton, case.clip, metres_per_unit=case.metres)
    seconds = time.perf_counter() - start
    info = compressed.info
    source = prepare(case.skeleton, case.clip, shell_radii(case.skeleton, 0.03 / case.metres), 1e-4 / case.metres)
    errors = measure(compressed, source) * case.metres
    row = Row(
        case,
        info["raw_float32_bytes"],
        info["source_float32_bytes"],
        compressed.nbytes,
        info["max_error_m"] * 100,
        info["p99_error_m"] * 100,
        seconds,
        errors,
    )
    if binary is not None:
        with tempfile.TemporaryDirectory(prefix="ossa-bench-") as folder:
            try:
                size, pack = gltfpack_errors(binary, case, source.checked_times, Path(folder))
            except (subprocess.SubprocessError, OssaError, KeyError) as error:
                print(f"  gltfpack failed on {case.name}: {error}")
            else:
                row.pack_size, row.pack_errors = size, pack
                row.pack_max_cm, row.pack_p99_cm = pack.max() * 100, np.percentile(pack, 99) * 100
    return row


def decode_speed(rows: list[Row], characters: int = 1000) -> tuple[float, float]:
    """Median ns per joint of one pose sampled from the bits (``sample_blend``): compiled and numpy, over every clip."""
    compiled, reference = [], []
    rng = np.random.default_rng(0)
    for row in rows:
        case = row.case
        clip = compress_clip(case.skeleton, case.clip, metres_per_unit=case.metres)
        state = FrameState(ClipBank(case.skeleton, [clip]), 1, characters, threads=1).play(0, 0, np.arange(characters))
        joints = case.skeleton.num_joints
        out = Pose(
            np.zeros((characters, joints, 3)), np.zeros((characters, joints, 4)), np.zeros((characters, joints, 3))
        )
        times, weights = rng.uniform(clip.start, clip.duration, (1, characters)), np.ones((1, characters))
        sample_blend(state, times, weights, out=out, backend="numba")
        for backend, store in (("numba", compiled), ("numpy", reference)):
            best = math.inf
            for _ in range(5):
                begin = time.perf_counter()
                sample_blend(state, times, weights, out=out, backend=backend)
                best = min(best, time.perf_counter() - begin)
            store.append(best / characters / case.skeleton.num_joints * 1e9)
    return float(np.median(compiled)), float(np.median(reference))


def table(rows: list[Row]) -> None:
    print(
        f"\n{'clip':44s} {'joints':>6s} {'samples':>7s} {'ratio':>7s} {'vs src':>7s} {'max cm':>8s} {'p99 cm':>8s}"
        f" {'s':>6s}"
        f" {'gltfpack':>9s} {'max cm':>8s} {'p99 cm':>8s}"
    )
    for r in rows:
        c = r.case
        pack = (
            f" {r.raw / r.pack_size:8.2f}: {r.pack_max_cm:8.4f} {r.pack_p99_cm:8.4f}" if r.pack_size else f" {'-':>9s}"
        )
        print(
            f"{c.name[:44]:44s} {c.skeleton.num_joints:6d} {r.raw // (40 * c.skeleton.num_joints):7d}"
            f" {r.raw / r.size:6.2f}:"
            f" {r.source / r.size:6.2f}: {r.max_cm:8.4f} {r.p99_cm:8.4f} {r.seconds:6.2f}{pack}"
        )


def aggregates(rows: list[Row]) -> None:
    print(
        f"\n{'group':38s} {'clips':>5s} {'raw MB':>7s} {'ratio':>7s} {'max cm':>8s} {'p99 cm':>8s} {'<0.01cm':>8s}"
        f" {'s/clip':>7s} | gltfpack -cc: {'ratio':>7s} {'max cm':>8s} {'p99 cm':>8s}"
    )
    groups = [*sorted({r.case.group for r in rows}), "all mocap", "everything"]
    for group in groups:
        chosen = [
            r
            for r in rows
            if r.case.group == group
            or group == "everything"
            or (group == "all mocap" and r.case.group.startswith("mocap") and "24 Hz" not in r.case.group)
        ]
        if not chosen:
            continue
        raw, size = sum(r.raw for r in chosen), sum(r.size for r in chosen)
        errors = np.concatenate([r.errors.ravel() for r in chosen])
        line = (
            f"{group:38s} {len(chosen):5d} {raw / 1e6:7.2f} {raw / size:6.2f}: {errors.max() * 100:8.4f} "
            f"{np.percentile(errors, 99) * 100:8.4f} {np.mean(errors <= 1e-4) * 100:7.2f}% "
            f"{np.median([r.seconds for r in chosen]):7.2f}"
        )
        packed = [r for r in chosen if r.pack_size]
        if packed:
            pack_errors = np.concatenate([r.pack_errors.ravel() for r in packed])  # type: ignore[union-attr]
            line += (
                f" | {sum(r.raw for r in packed) / sum(r.pack_size for r in packed):13.2f}: "  # type: ignore[misc]
                f"{pack_errors.max() * 100:8.4f} {np.percentile(pack_errors, 99) * 100:8.4f}"
            )
        print(line)


def crowd_frame(characters: int = 1000, repeats: int = 30) -> None:
    """The 1000-character fused frame on raw clips against the same frame on their compressed clips, one thread."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        sources, _ = read_clip_sources(SHARED / "cmu_locomotion_bvh" / "02_01.bvh")
        others, _ = read_clip_sources(SHARED / "cmu_locomotion_bvh" / "02_02.bvh")
    skeleton, clips = sources[0].skeleton, [sources[0].clip, others[0].clip]
    rng = np.random.default_rng(1)
    playing = np.nonzero(rng.integers(0, 2, characters))[0]
    times = rng.uniform(0.0, 2.4, characters)
    weights, rest = np.ones((1, characters)), np.zeros((1, characters))
    banks = {
        "raw": ClipBank(skeleton, clips),
        "compressed": ClipBank(skeleton, [compress_clip(skeleton, c) for c in clips]),
    }
    states = {name: FrameState(bank, 1, characters, threads=1).play(0, 1, playing) for name, bank in banks.items()}
    palette = states["raw"].new_palette()
    jobs = {}
    for name, state in states.items():
        jobs[f"{name}: evaluate_frame (fused sample + blend + model + palette)"] = (state, weights)
    jobs["either: evaluate_frame with the layer at weight 0 (no sampling)"] = (states["raw"], rest)
    for state, w in jobs.values():
        evaluate_frame(state, times[None], w, out=palette)
    seconds: dict[str, list[float]] = {name: [] for name in jobs}
    for r in range(repeats):  # the jobs interleaved, frame after frame (cursor reuse), in one run
        for name, (state, w) in jobs.items():
            begin = time.perf_counter()
            evaluate_frame(state, (times + r / 60)[None], w, out=palette)
            seconds[name].append(time.perf_counter() - begin)
    median = {name: float(np.median(values)) for name, values in seconds.items()}
    print(
        f"\n{characters} characters, {skeleton.num_joints} joints, one thread (median of {repeats} frames at 60 FPS):"
    )
    for name, value in median.items():
        print(f"  {name:66s} {value * 1e3:7.3f} ms")
    raw, compressed, without = median.values()
    sampling, raw_sampling = compressed - without, raw - without
    print(
        f"  the fused frame on compressed clips: {compressed / raw:.2f} x the raw frame; its sampling "
        f"{sampling * 1e3:.3f} ms against {raw_sampling * 1e3:.3f} ms ({sampling / raw_sampling:.2f} x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the shared CMU takes only, no gltfpack")
    parser.add_argument("--crowd-only", action="store_true", help="only the 1000-character frame")
    parser.add_argument("--no-gltfpack", action="store_true")
    args = parser.parse_args()
    if not args.crowd_only:
        found = cases(args.quick)
        cmu = [c for c in found if c.group == "mocap: shared CMU"]
        found += [resampled(c, 24.0) for c in cmu]
        print(f"{len(found)} clips")
        with tempfile.TemporaryDirectory(prefix="ossa-gltfpack-") as npm:
            binary = None if args.quick or args.no_gltfpack else gltfpack_binary(Path(npm))
            print(
                f"gltfpack: {binary or 'not run'} "
                "(defaults: resampled at 30 Hz, 12-bit rotations, 16-bit translations; -cc)"
            )
            rows = []
            for case in found:
                rows.append(run_case(case, binary))
                print(f"  {case.group}: {case.name}: {rows[-1].raw / rows[-1].size:.2f}:1 in {rows[-1].seconds:.2f} s")
        table(rows)
        aggregates(rows)
        compiled, reference = decode_speed([r for r in rows if r.case.group == "mocap: shared CMU"])
        print(
            f"\ndecompression of one pose (1000 random times per shared CMU take, median over takes, one thread): "
            f"compiled {compiled:.1f} ns per joint, numpy reference {reference:.1f} ns per joint"
        )
    crowd_frame()


if __name__ == "__main__":
    main()
