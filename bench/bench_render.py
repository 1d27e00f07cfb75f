"""GPU skinning frame time for 1…1000 instanced CesiumMen, and palette upload bandwidth.

Headless (EGL), so it runs unchanged on a machine with a GPU or on Mesa's llvmpipe (CPU).

Frame rows: clear + one palette upload for all characters + one instanced draw + ``ctx.finish()``
at 640×360, characters on a grid facing the camera, each at its own time in the walk cycle (the
palettes are sampled before timing: sampling and FK have their own benchmarks). ``ms/char``
shows the scaling: it stays flat when the cost is linear in the character count.

Upload rows: :func:`engine.render.pack_palette` (float64 → float32 column-major, NaN scan) plus
the one ``buffer.write``, synchronised with ``ctx.finish()``; DQS adds its compute pass that
turns the matrices into dual-quaternion records on the GPU. MB/s counts the bytes sent.

Morph rows: the same frame for ``--morph-characters`` CesiumMen whose mesh carries ``T``
synthetic morph targets (position and normal displacements), all weights non-zero, plus the
upload of the ``(C, T)`` weights; ``ms/target`` is ``(frame(T) − frame(0)) / T``, the GPU cost of
one more target for all those characters, and ``ns/vert·target`` the same per morphed vertex. A
last row keeps the most targets but only 4 non-zero weights: the shader skips zero weights.

Run: ``python bench/bench_render.py [--repeat N] [--counts 1,10,100,1000] [--size 640x360]
[--targets 0,1,4,16,64] [--morph-characters 100]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.anim import model_from_pose, sample, skinning_palette
from engine.anim.mesh import MeshData
from engine.errors import OssaWarning
from engine.io import Character, load_character
from engine.math import perspective
from engine.render import MorphWeightBuffer, OffscreenTarget, PaletteBuffer, SkinnedMesh, create_context

SHARED = Path(__file__).resolve().parents[2] / "shared" / "assets"


def palettes_at(character: Character, times: np.ndarray) -> np.ndarray:
    """World-space palettes ``(len(times), J, 4, 4)`` of the first clip."""
    clip = next(iter(character.clips.values()))
    pose = sample(clip, character.skeleton.rest_pose, times)
    return character.root_transform @ skinning_palette(character.skeleton, model_from_pose(character.skeleton, pose))


def median_ms(fn: Callable[..., object], repeat: int, *args: object) -> float:
    fn(*args)  # warm-up: first use compiles shaders and allocates buffers
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def grid(count: int) -> np.ndarray:
    """``(count, 4, 4)`` world transforms: a square grid on the ground, 1 m apart, centred on x."""
    side = int(np.ceil(np.sqrt(count)))
    index = np.arange(count)
    worlds = np.tile(np.eye(4), (count, 1, 1))
    worlds[:, 0, 3] = (index % side - (side - 1) / 2) * 1.0
    worlds[:, 2, 3] = -(index // side) * 1.0
    return worlds


def camera(count: int, aspect: float) -> tuple[np.ndarray, np.ndarray]:
    """A view that frames a grid of ``count`` characters.

    The frame rows all use the camera of the largest count, so each character covers about
    the same pixels in every row and ``ms/char`` compares like with like.
    """
    side = int(np.ceil(np.sqrt(count)))
    view = np.eye(4)
    view[:3, 3] = [0.0, -1.0 - 0.3 * side, -2.5 - 0.7 * side]
    tilt = np.radians(18.0)
    pitch = np.array(
        [[1, 0, 0, 0], [0, np.cos(tilt), -np.sin(tilt), 0], [0, np.sin(tilt), np.cos(tilt), 0], [0, 0, 0, 1]]
    )
    return pitch @ view, perspective(np.radians(45.0), aspect, 0.1, 10.0 + 3.0 * side)


def frame(ctx, target, palette, mesh, palettes, worlds, view, projection) -> None:
    """One frame: clear, one palette upload, one instanced draw, wait for the GPU."""
    with target:
        target.clear((0.1, 0.1, 0.1, 1.0))
        palette.upload(palettes)
        mesh.draw(palette, view, projection, worlds)
    ctx.finish()


def morph_frame(ctx, target, palette, weights, mesh, palettes, values, worlds, view, projection) -> None:
    """One frame of a morphed mesh: clear, palette and weight uploads, one instanced draw, wait."""
    with target:
        target.clear((0.1, 0.1, 0.1, 1.0))
        palette.upload(palettes)
        if weights is not None:
            weights.upload(values)
        mesh.draw(palette, view, projection, worlds, morph_weights=weights)
    ctx.finish()


def with_targets(mesh: MeshData, targets: int, rng: np.random.Generator) -> MeshData:
    """``mesh`` with ``targets`` random morph targets (positions ±1 cm, normals ±0.1)."""
    if targets == 0:
        return mesh
    shape = (targets, mesh.num_vertices, 3)
    return MeshData(
        mesh.positions,
        indices=mesh.indices,
        normals=mesh.normals,
        uvs=mesh.uvs,
        joints=mesh.joints,
        weights=mesh.weights,
        base_color=mesh.base_color,
        morph_positions=rng.uniform(-0.01, 0.01, shape),
        morph_normals=rng.uniform(-0.1, 0.1, shape),
    )


def upload(ctx, palette, palettes) -> None:
    """Pack and write all palettes, wait for the GPU."""
    palette.upload(palettes)
    ctx.finish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--counts", default="1,10,100,1000")
    parser.add_argument("--size", default="640x360")
    parser.add_argument("--targets", default="0,1,4,16,64")
    parser.add_argument("--morph-characters", type=int, default=100)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    width, height = (int(v) for v in args.size.split("x"))

    ctx = create_context(standalone=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)  # 210 vertices with weights not summing to 1
        character = load_character(SHARED / "khronos" / "cesium_man.gltf")
    mesh = SkinnedMesh(ctx, character.meshes[0])
    joints = character.skeleton.num_joints
    print(f"{ctx.info['GL_RENDERER']} | {ctx.info['GL_VERSION']}")
    print(
        f"CesiumMan: {mesh.num_vertices} vertices, {len(character.meshes[0].indices) // 3} triangles, "
        f"{joints} joints; {width}×{height}; median of {args.repeat} frames\n"
    )
    print(f"{'method':<7}{'characters':>11}{'frame ms':>11}{'ms/char':>10}{'Mvert/s':>10}")
    target = OffscreenTarget(ctx, (width, height))
    for method in ("lbs", "dqs"):
        palette = PaletteBuffer(ctx, joints, method=method)
        for count in counts:
            palettes = palettes_at(character, np.linspace(0.0, 2.0, count, endpoint=False))
            worlds = grid(count)
            view, projection = camera(max(counts), width / height)

            ms = median_ms(frame, args.repeat, ctx, target, palette, mesh, palettes, worlds, view, projection)
            vertices_per_s = count * mesh.num_vertices / (ms / 1e3) / 1e6
            print(f"{method:<7}{count:>11}{ms:>11.2f}{ms / count:>10.3f}{vertices_per_s:>10.2f}")
        palette.release()

    print(f"\n{'upload':<7}{'characters':>11}{'MB':>9}{'ms':>9}{'MB/s':>9}")
    for method in ("lbs", "dqs"):
        palette = PaletteBuffer(ctx, joints, method=method)
        for count in (100, 1000, 10000):
            palettes = palettes_at(character, np.linspace(0.0, 2.0, count, endpoint=False))

            ms = median_ms(upload, max(args.repeat, 10), ctx, palette, palettes)
            megabytes = count * joints * 64 / 1e6
            print(f"{method:<7}{count:>11}{megabytes:>9.3f}{ms:>9.3f}{megabytes / (ms / 1e3):>9.0f}")
        palette.release()

    count = args.morph_characters
    print(f"\n{'morph':<7}{'targets':>12}{'characters':>11}{'frame ms':>10}{'ms/target':>11}{'ns/vert·target':>16}")
    rng = np.random.default_rng(0)
    palette = PaletteBuffer(ctx, joints)
    palettes = palettes_at(character, np.linspace(0.0, 2.0, count, endpoint=False))
    worlds = grid(count)
    view, projection = camera(count, width / height)
    baseline = None
    rows = [(int(t), int(t)) for t in args.targets.split(",")]
    rows.append((rows[-1][0], 4))  # a face rig at rest: most weights 0, which the shader skips
    for targets, active in rows:
        morphed = SkinnedMesh(ctx, with_targets(character.meshes[0], targets, rng))
        weights = MorphWeightBuffer(ctx, targets) if targets else None
        values = rng.uniform(0.1, 1.0, (count, targets))
        values[:, active:] = 0.0
        ms = median_ms(
            morph_frame, args.repeat, ctx, target, palette, weights, morphed, palettes, values, worlds, view, projection
        )
        baseline = ms if targets == 0 or baseline is None else baseline
        per_target = (ms - baseline) / targets if targets else 0.0
        per_vertex = per_target * 1e6 / (count * morphed.num_vertices)
        label = f"{targets}" if active == targets else f"{targets} ({active} ≠ 0)"
        print(f"{'lbs':<7}{label:>12}{count:>11}{ms:>10.2f}{per_target:>11.3f}{per_vertex:>16.2f}")
        morphed.release()
        if weights is not None:
            weights.release()
    palette.release()


if __name__ == "__main__":
    main()
