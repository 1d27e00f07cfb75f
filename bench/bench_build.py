"""``ossa build`` over a library of 512 clips: clips per second on 1 and 2 local workers and a 2-worker Dask cluster.

    python3 bench/bench_build.py              # 16 takes x 16 time warps x 2 mirrors = 512 clips
    python3 bench/bench_build.py --takes 4    # a smaller library (4 x 32 = 128 clips)

The library: the 16 real mocap takes of ``../shared/assets`` (the 14 CMU takes, pirouette, the PyMO
walk), each cut to its first 1.5 s, played at 16 speeds (0.70x to 1.45x: the same keys at stretched
times, so the grid rate changes too) and mirrored or not (every x coordinate negated: rest offsets,
translations, and rotations conjugated by the mirror, joints not renamed). Each variant is written
as a GLB (skeleton, clip, bone mesh). The three builds must write byte-identical libraries and
manifests; the script checks it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.anim import Channel, Clip, Skeleton, sample  # noqa: E402
from engine.errors import OssaWarning  # noqa: E402
from engine.io.bvh import load_bvh  # noqa: E402
from engine.io.bvh_character import bone_mesh  # noqa: E402
from engine.io.gltf_writer import save_gltf  # noqa: E402
from engine.math._checks import trusted  # noqa: E402
from engine.pipeline.build import LIBRARY_NAME, MANIFEST_NAME, plan, run_build  # noqa: E402
from engine.pipeline.executors import dask_cluster, process_pool  # noqa: E402
from engine.pipeline.task import Settings  # noqa: E402

SHARED = ROOT.parent / "shared" / "assets"
WARPS = np.linspace(0.70, 1.45, 16)
SECONDS = 1.5


def takes() -> list[Path]:
    found = sorted((SHARED / "cmu_locomotion_bvh").glob("*.bvh"))
    return [
        *found,
        SHARED / "pirouette_bvh" / "pirouette.bvh",
        SHARED / "pymo_av_walk_bvh" / "AV_8Walk_Meredith_HVHA_Rep1.bvh",
    ]


def variants(path: Path, folder: Path) -> int:
    """Write the 32 variants of one take into ``folder``; returns how many."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        anim = load_bvh(path)
    skeleton, clip = anim.skeleton, anim.clip
    times = np.arange(int(SECONDS / anim.frame_time) + 1) * anim.frame_time
    pose = sample(clip, skeleton.rest_pose, times)
    written = 0
    for mirrored in (False, True):
        flip = np.array([-1.0, 1.0, 1.0]) if mirrored else np.ones(3)
        rest = np.asarray(skeleton.rest_translations) * flip
        shaped = Skeleton(skeleton.names, skeleton.parents, rest)
        translations = pose.translations * flip
        rotations = pose.rotations * (np.array([1.0, -1.0, -1.0, 1.0]) if mirrored else np.ones(4))
        for k, warp in enumerate(WARPS):
            with trusted():
                channels = tuple(
                    Channel(
                        c.target,
                        c.path,
                        "LINEAR",
                        times * warp,
                        (rotations if c.path == "rotation" else translations)[:, c.target],
                    )
                    for c in clip.channels
                )
            name = f"{path.stem}_{'m' if mirrored else 'o'}{k:02d}"
            save_gltf(folder / f"{name}.glb", shaped, [Clip(name, channels, clip.num_targets)], [bone_mesh(shaped)])
            written += 1
    return written


def timed(name: str, tasks: list, out: Path, executor) -> tuple[float, bytes, bytes]:  # type: ignore[type-arg, no-untyped-def]
    start = time.perf_counter()
    report = run_build(tasks, out, executor)
    seconds = time.perf_counter() - start
    load = os.getloadavg()[0]
    print(
        f"  {name:38s} {len(tasks):4d} clips in {seconds:7.1f} s: {len(tasks) / seconds:6.2f} clips/s "
        f"({report.built} built, {report.failed} failed; load average {load:.1f} at the end)"
    )
    return seconds, (out / LIBRARY_NAME).read_bytes(), (out / MANIFEST_NAME).read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--takes", type=int, default=16, help="how many of the 16 takes to use (32 clips each)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ossa-bench-build-") as temporary:
        folder = Path(temporary)
        sources = folder / "library"
        sources.mkdir()
        start = time.perf_counter()
        count = sum(variants(path, sources) for path in takes()[: args.takes])
        print(f"{count} variant clips written in {time.perf_counter() - start:.1f} s ({os.cpu_count()} CPUs here)")
        tasks = plan([sources], Settings(tolerance=1e-4, shell=0.03))
        results = [timed("1 local worker (-j 1)", tasks, folder / "one", process_pool(1))]
        results.append(timed("2 local workers (-j 2)", tasks, folder / "two", process_pool(2)))
        from distributed import LocalCluster  # noqa: PLC0415 (pip install 'ossa[cluster]')

        with LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster:
            results.append(
                timed(
                    "Dask LocalCluster, 2 worker processes",
                    tasks,
                    folder / "dask",
                    dask_cluster(cluster.scheduler_address),
                )
            )
        one = results[0][0]
        print(
            f"  scaling: 2 local workers {one / results[1][0]:.2f}x, "
            f"Dask (2 workers) {one / results[2][0]:.2f}x the one worker"
        )
        same = all(r[1:] == results[0][1:] for r in results[1:])
        print(f"  libraries and manifests byte-identical across the three: {same}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
