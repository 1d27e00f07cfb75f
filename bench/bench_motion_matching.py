"""Motion matching over the CMU locomotion takes on the mannequin: the database, the search, a crowd's cost.

The database is the 13 locomotion takes of ``../shared/assets/cmu_locomotion_bvh`` (16_01, a
standing jump, is left out) retargeted onto the mannequin, mirrored, at 60 fps, with the tags of
``game/demo/cmu_locomotion.toml``.

Tables:

1. **Database**: frames (all and searchable), bytes in memory and on disk, build time (loading
   the BVH files not included, and included), load time.
2. **Search, µs per query**, one thread, on queries as a controller makes them: a character playing
   frame ``f`` searches with the pose columns of ``f`` (continuing frame ``f``) and the trajectory
   the springs predict (:func:`~engine.motion_matching.predict_trajectory`) from the root's motion
   at ``f`` towards a request: *held* (its own velocity and facing) or *changed* (a new speed of
   0–3 m/s in a new direction, a new facing within ±120°). ``bias`` 0.01. Methods: ``brute``
   (every frame, early outs per block), ``boxes`` (Holden's 64/16-frame boxes), ``kdtree``, and
   the numpy backend's plain brute force.
3. **A crowd of 1000 characters searching at 10 Hz** at 60 frames per second: each frame a sixth
   of them (167) search. Per frame: the query (the predicted trajectory and
   :func:`~engine.motion_matching.query_features` from the characters' root-space poses and
   velocities, which the player hands over) and the search; per second of game, the fraction of
   one core (goal < 10 %).

4. **The controller for 1000 characters** (:class:`~engine.motion_matching.controller.MatchingController`
   on one engine player, as ``--crowd 1000 --motion-matching`` runs it): each character walks
   toward its own random waypoints (a new one every 2-6 s, a sharp change that searches at once);
   per 60 Hz frame the CPU time of the controller's searches (queries from the player's captured
   poses, or with Holden's shortcut the features of the frames playing, ``pose_from="database"``;
   the batched search; the switches), and of the whole frame: the controller, the player's
   sampling, transition stage and composition, and the skinning palettes
   (:meth:`~engine.player.Player.finalize` into a float32 buffer). Medians over 120 frames after
   one second of warm-up.
5. **Locomotion quality** (``bench/_matching_quality.py``): foot sliding, trajectory error and
   switches per second of the demo's character on its scripted tour and on random paths, motion
   matching against the demo's state machine (``--quality``; about a minute).

Timings are medians of interleaved runs (``bench/_timing.py``), wall time, and for the crowd also
the CPU time of the calling thread (the numbers that matter on a loaded machine).

Run: ``python bench/bench_motion_matching.py [--repeat 15] [--quality]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _matching_quality import quality_table
from _timing import median_ms

from engine.anim.velocity import pose_velocity
from engine.errors import OssaWarning
from engine.io import load_character
from engine.motion_matching import (
    Trajectory,
    build_database,
    horizon_times,
    load_database,
    load_sources,
    predict_trajectory,
    query_features,
    save_database,
    search,
)
from engine.motion_matching.controller import ControllerOptions, MatchingController
from engine.motion_matching.search import search_index

ROOT = Path(__file__).resolve().parents[1]
TAKES = ROOT.parent / "shared" / "assets" / "cmu_locomotion_bvh"
TAGS = ROOT / "game" / "demo" / "cmu_locomotion.toml"
MANNEQUIN = ROOT / "assets" / "mannequin.glb"
BIAS = 0.01


def sources() -> list:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)  # "CMU units" for every take
        return [s for s in load_sources(sorted(TAKES.glob("*.bvh")), tags_file=TAGS) if s.name != "16_01"]


def controller_frames(db, count: int, frames: int, warmup: int, pose_from: str) -> tuple[float, float, float]:
    """Median CPU ms per 60 Hz frame of the controller's searches, of the whole frame, and searches a frame."""
    rng = np.random.default_rng(11)
    options = ControllerOptions(pose_from=pose_from)
    matcher = MatchingController(db, count, positions=rng.uniform(-20.0, 20.0, (count, 3)), options=options)
    palettes = np.zeros((count, db.skeleton.num_joints, 4, 4), dtype=np.float32)
    goals = rng.uniform(-20.0, 20.0, (count, 3))
    changes = rng.uniform(2.0, 6.0, count)
    search_s: list[float] = []
    searched = matcher._search

    def timed_search(due: np.ndarray) -> None:
        start = time.thread_time()
        searched(due)
        search_s.append(time.thread_time() - start)

    matcher._search = timed_search  # type: ignore[method-assign]
    dt, totals, searches, counted = 1.0 / 60.0, [], [], []
    for frame in range(warmup + frames):
        changes -= dt
        due = changes <= 0.0
        goals[due] = rng.uniform(-20.0, 20.0, (int(due.sum()), 3))
        changes[due] = rng.uniform(2.0, 6.0, int(due.sum()))
        heading = (goals - matcher.positions) * [1.0, 0.0, 1.0]
        velocity = heading / np.maximum(np.linalg.norm(heading, axis=-1, keepdims=True), 1e-9) * 1.4
        search_s.clear()
        before = int(matcher.searches.sum())
        start = time.thread_time()
        player = matcher.player
        player.begin_frame(dt)
        matcher.control(velocity, np.arctan2(heading[:, 0], heading[:, 2]))
        player.pose()
        player.run_stages()
        player.finalize(palettes)
        if frame >= warmup:
            totals.append(time.thread_time() - start)
            searches.append(sum(search_s))
            counted.append(int(matcher.searches.sum()) - before)
    return 1e3 * float(np.median(searches)), 1e3 * float(np.median(totals)), float(np.mean(counted))


def requests(db, frames: np.ndarray, changed: bool, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Desired velocity ``(C, 3)`` and yaw ``(C,)`` per character: its own motion, or a new one."""
    yaws = db.root_yaws[frames]
    velocity = np.einsum("cij,cj->ci", _yaw_matrices(yaws), db.root_velocities[frames])
    if not changed:
        return velocity, yaws
    heading = yaws + rng.uniform(-np.pi, np.pi, frames.size)
    speed = rng.uniform(0.0, 3.0, frames.size)
    desired = np.stack((np.sin(heading), np.zeros_like(heading), np.cos(heading)), axis=-1) * speed[:, None]
    return desired, yaws + rng.uniform(-2 * np.pi / 3, 2 * np.pi / 3, frames.size)


def _yaw_matrices(yaws: np.ndarray) -> np.ndarray:
    c, s = np.cos(yaws), np.sin(yaws)
    zero, one = np.zeros_like(c), np.ones_like(c)
    return np.stack((c, zero, s, zero, one, zero, -s, zero, c), axis=-1).reshape(-1, 3, 3)


def playing_poses(db, frames: np.ndarray) -> tuple:
    """The root-space poses of characters playing ``frames`` and their velocities (what a player hands over)."""
    pose = db.poses(frames)
    return pose, pose_velocity(db.poses(np.maximum(frames - 1, 0)), pose, 1.0 / db.fps)


def queries(db, frames: np.ndarray, changed: bool, rng: np.random.Generator, played: tuple | None = None) -> np.ndarray:
    """The normalised queries of characters playing ``frames`` (the pose part theirs, the trajectory predicted)."""
    return make_queries(db, frames, playing_request(db, frames, changed, rng, played))


def playing_request(
    db, frames: np.ndarray, changed: bool, rng: np.random.Generator, played: tuple | None = None
) -> tuple:
    """What a controller holds when it searches: the pose, simulation and request of characters at ``frames``."""
    pose, velocity = playing_poses(db, frames) if played is None else played
    state = Trajectory(
        db.root_positions[frames],
        np.einsum("cij,cj->ci", _yaw_matrices(db.root_yaws[frames]), db.root_velocities[frames]),
        np.zeros((frames.size, 3)),
        db.root_yaws[frames],
        db.root_yaw_rates[frames],
    )
    return pose, velocity, state, *requests(db, frames, changed, rng)


def make_queries(db, frames: np.ndarray, held: tuple) -> np.ndarray:
    """The searching work a controller does per query: the predicted trajectory and the query's features."""
    pose, velocity, state, desired, yaw = held
    future, future_yaws = predict_trajectory(state, desired, yaw, horizon_times(db))
    return query_features(
        db,
        pose,
        velocity,
        db.root_velocities[frames],
        db.root_yaw_rates[frames],
        db.root_positions[frames],
        db.root_yaws[frames],
        future,
        future_yaws,
    )


def cpu_ms(fn, repeat: int) -> float:
    """Median CPU time of ``fn`` on this thread (the serial kernels run on it), in ms."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        fn()
        times.append(time.thread_time() - start)
    return 1e3 * float(np.median(times))


def search_times(db, made: np.ndarray, playing: np.ndarray, repeat: int) -> list[float]:
    """Milliseconds per call (µs per query for 1000 queries): numba brute, boxes, k-d tree; numpy."""
    runs = [
        lambda m=m: search(db, made, current=playing, bias=BIAS, method=m, threads=1)
        for m in ("brute", "boxes", "kdtree")
    ]
    runs.append(lambda: search(db, made, current=playing, bias=BIAS, backend="numpy"))
    return median_ms(runs, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quality", action="store_true", help="also the locomotion quality table (about a minute)")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    mannequin = load_character(MANNEQUIN).skeleton

    started = time.perf_counter()
    loaded = sources()
    load_s = time.perf_counter() - started
    build_ms = median_ms([lambda: build_database(loaded, mannequin)], max(1, args.repeat // 5))[0]
    db = build_database(loaded, mannequin)
    with tempfile.TemporaryDirectory() as folder:
        path = save_database(db, Path(folder) / "cmu.npz")
        file_bytes = path.stat().st_size
        read_ms = median_ms([lambda: load_database(path)], 3)[0]
    search_index(db)  # built once per database, before the first search
    print("Database: 13 CMU takes on the mannequin, mirrored, 60 fps")
    searchable = int(db.searchable.sum())
    print(f"  frames {db.num_frames} ({searchable} searchable), {db.num_ranges} ranges, {db.layout.width} features")
    print(f"  {db.nbytes / 1e6:.1f} MB in memory, {file_bytes / 1e6:.1f} MB on disk")
    print(f"  build {build_ms:.0f} ms (+ {1e3 * load_s:.0f} ms reading the BVH files), load {read_ms:.0f} ms")

    playing = rng.choice(np.flatnonzero(db.searchable), 1000)
    print("\nSearch, µs per query, one thread (1000 queries per call)")
    print(f"  {'method':<16}{'held':>10}{'changed':>10}")
    held = search_times(db, queries(db, playing, False, rng), playing, args.repeat)
    changed = search_times(db, queries(db, playing, True, rng), playing, args.repeat)
    for name, a, b in zip(("numba brute", "numba boxes", "numba kdtree", "numpy brute"), held, changed, strict=True):
        print(f"  {name:<16}{a:>10.1f}{b:>10.1f}")

    per_frame = 1000 // 6 + 1
    searching = playing[:per_frame]
    holding = playing_request(db, searching, True, rng)
    made = make_queries(db, searching, holding)
    query_ms, search_ms = median_ms(
        [
            lambda: make_queries(db, searching, holding),
            lambda: search(db, made, current=searching, bias=BIAS, method="boxes", threads=1),
        ],
        args.repeat,
    )
    query_cpu = cpu_ms(lambda: make_queries(db, searching, holding), args.repeat)
    search_cpu = cpu_ms(lambda: search(db, made, current=searching, bias=BIAS, method="boxes", threads=1), args.repeat)
    print(f"\n1000 characters searching at 10 Hz at 60 fps: {per_frame} searches a frame ('changed' requests)")
    print(f"  {'ms a frame':<12}{'query':>8}{'search':>8}   % of one core: searching, with the queries")
    for label, q_ms, s_ms in (("wall", query_ms, search_ms), ("cpu", query_cpu, search_cpu)):
        print(f"  {label:<12}{q_ms:>8.2f}{s_ms:>8.2f}   {6 * s_ms:.1f} %, {6 * (q_ms + s_ms):.1f} %")

    print("\nThe controller for 1000 characters at 60 fps (CPU ms a frame, medians of 120 frames)")
    print(f"  {'current pose from':<20}{'searches':>9}{'search ms':>10}{'% core':>8}{'frame ms':>10}{'x budget':>9}")
    for pose_from in ("player", "database"):
        search_cpu_ms, frame_cpu_ms, per_frame_searches = controller_frames(db, 1000, 120, 60, pose_from)
        print(
            f"  {pose_from:<20}{per_frame_searches:>9.0f}{search_cpu_ms:>10.2f}{6 * search_cpu_ms:>8.1f}"
            f"{frame_cpu_ms:>10.2f}{1000 / 60 / frame_cpu_ms:>9.2f}"
        )
    if args.quality:
        print()
        print(quality_table())


if __name__ == "__main__":
    main()
