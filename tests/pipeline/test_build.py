"""``ossa build``: a row per clip, failures recorded, byte-identical outputs on any executor, a cache reused."""

from __future__ import annotations

import json
import os
import pickle
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine.cli import main
from engine.compress import load_library
from engine.pipeline.build import CACHE_FOLDER, LIBRARY_NAME, MANIFEST_NAME, plan, run_build
from engine.pipeline.executors import Progress, process_pool, serial
from engine.pipeline.task import Settings, build_clip
from tests.compress.files import write_take

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings(tolerance=1e-4, shell=0.03)


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sources") / "takes"
    write_take(folder / "walk.bvh")
    write_take(folder / "jog.bvh", frames=12, period=0.6)
    write_take(folder / "more" / "stroll.bvh", frames=10, period=1.4)
    (folder / "broken.bvh").write_text("HIERARCHY\nROOT Hips\n{\n")
    (folder / "notes.txt").write_text("not a clip")
    return folder


def outputs(folder: Path) -> tuple[bytes, bytes]:
    return (folder / LIBRARY_NAME).read_bytes(), (folder / MANIFEST_NAME).read_bytes()


@pytest.fixture(scope="module")
def built(sources: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("built")
    run_build(plan([sources], SETTINGS), out, serial)
    return out


def test_every_clip_gets_a_row_and_a_failing_one_does_not_stop_the_build(built: Path) -> None:
    manifest = json.loads((built / MANIFEST_NAME).read_text())
    rows = {row["name"]: row for row in manifest["clips"]}
    assert list(rows) == ["takes/broken", "takes/jog", "takes/more/stroll", "takes/walk"]
    assert rows["takes/broken"]["error"].startswith("takes/broken.bvh: line 4:")
    ok = [row for row in rows.values() if row["error"] is None]
    assert len(ok) == 3
    for row in ok:
        assert row["max_error_cm"] <= 0.01
        assert row["p99_error_cm"] <= row["max_error_cm"]
        assert row["ratio"] > 1
        assert row["joints"] == 38
        assert len(row["sha256"]) == 64
        assert row["root_motion"]["joint"] == "Hips"
        assert row["root_motion"]["travel_m"] > 0
        assert any("lengths read as" in w for w in row["warnings"])
        assert "/tmp" not in json.dumps(row)
    library = load_library(built / LIBRARY_NAME)
    assert library.names == ("takes/jog", "takes/more/stroll", "takes/walk")


def test_a_rerun_reuses_every_built_clip_and_writes_the_same_bytes(sources: Path, built: Path, tmp_path: Path) -> None:
    before = outputs(built)
    calls: list[str] = []

    def counting(tasks, deliver) -> None:  # type: ignore[no-untyped-def]
        calls.extend(t.name for t in tasks)
        serial(tasks, deliver)

    report = run_build(plan([sources], SETTINGS), built, counting)
    assert calls == ["takes/broken"]  # only the failed clip is tried again
    assert report.reused == 3
    assert report.failed == 1
    assert outputs(built) == before
    changed = run_build(plan([sources], Settings(tolerance=2e-4, shell=0.03)), tmp_path, serial)
    assert changed.reused == 0
    assert changed.built == 3


def test_the_task_is_pure_and_travels(sources: Path) -> None:
    task = plan([sources], SETTINGS)[1]
    again = pickle.loads(pickle.dumps(task))
    first, second = build_clip(task), build_clip(again)
    assert first.library == second.library
    assert first.row == second.row
    assert first.key == task.key


def test_retargeting_onto_a_target_character(sources: Path, tmp_path: Path) -> None:
    target = ROOT / "assets" / "mannequin.glb"
    tasks = [t for t in plan([sources], SETTINGS, target) if t.name == "takes/jog"]
    report = run_build(tasks, tmp_path, serial)
    (row,) = report.rows
    assert row["error"] is None, row["error"]
    assert row["target"] == "mannequin.glb"
    assert row["joints"] == 25
    assert load_library(tmp_path / LIBRARY_NAME).skeletons[0].num_joints == 25


def test_the_build_command(sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["build", str(sources), "--out", str(tmp_path), "-j", "1"])
    out = capsys.readouterr().out
    assert status == 1  # a clip failed
    assert "takes/broken: failed: takes/broken.bvh: line 4:" in out
    assert f"wrote {tmp_path / LIBRARY_NAME} and {tmp_path / MANIFEST_NAME}: 4 clips, 3 built" in out
    assert (tmp_path / CACHE_FOLDER).is_dir()


def test_the_progress_bar_draws_on_a_terminal_only() -> None:
    class Terminal(list):  # type: ignore[type-arg]
        def isatty(self) -> bool:
            return True

        def write(self, text: str) -> None:
            self.append(text)

        def flush(self) -> None:
            pass

    terminal = Terminal()
    progress = Progress(terminal, width=10)  # type: ignore[arg-type]
    progress(0, 4, 0)
    progress(2, 4, 1)
    progress(4, 4, 1)
    assert "[#####-----] 2/4 clips, 1 failed" in terminal[1]
    assert "ETA" in terminal[1]
    assert terminal[-1] == "\n"
    silent = Progress(open(os.devnull, "w"))  # noqa: SIM115
    silent(1, 2, 0)
    assert not silent.enabled


@pytest.mark.slow
def test_a_process_pool_writes_the_same_bytes(sources: Path, built: Path, tmp_path: Path) -> None:
    report = run_build(plan([sources], SETTINGS), tmp_path, process_pool(2))
    assert report.built == 3
    assert report.failed == 1
    assert outputs(tmp_path) == outputs(built)


@pytest.mark.slow
def test_a_dask_cluster_with_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from engine.pipeline.executors import dask_cluster  # noqa: PLC0415

    for k in range(8):  # long enough (about a second of work) for a worker to be caught busy
        write_take(tmp_path / "takes" / f"take{k}.bvh", frames=40 + 5 * k, period=0.8 + 0.1 * k)
    tasks = plan([tmp_path / "takes"], SETTINGS)
    run_build(tasks, tmp_path / "serial", serial)
    killed: list[int] = []
    done = threading.Event()
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster.scheduler_address) as watcher,
    ):

        def kill_a_busy_worker() -> None:
            while not done.is_set() and not killed:
                busy = [address for address, keys in watcher.processing().items() if keys]
                try:
                    if busy:
                        pid = watcher.run(os.getpid, workers=[busy[0]])[busy[0]]
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                except (OSError, KeyError, distributed.comm.CommClosedError):
                    pass  # that worker just went: look again
                time.sleep(0.002)

        thread = threading.Thread(target=kill_a_busy_worker)
        thread.start()
        try:
            report = run_build(tasks, tmp_path / "dask", dask_cluster(cluster.scheduler_address))
        finally:
            done.set()
            thread.join()
    assert killed, "no worker was caught busy"
    assert len(report.rows) == 8
    assert report.built == 8
    assert outputs(tmp_path / "dask") == outputs(tmp_path / "serial")


def test_root_motion_is_measured_from_the_first_key_to_the_last_in_metres() -> None:
    from engine.anim import Channel, Clip, Skeleton  # noqa: PLC0415
    from engine.pipeline.task import _root_motion  # noqa: PLC0415

    skeleton = Skeleton(["root", "leg"], [-1, 0], [[0, 1, 0], [0, -0.5, 0]])
    times = np.array([1.0, 1.5, 3.0])  # a clip that starts at 1 s
    moved = Channel(0, "translation", "LINEAR", times, [[0, 1, 0], [30, 1, 40], [60, 1, 80]])
    turn = Channel(
        0, "rotation", "LINEAR", times, [[0, 0, 0, 1], [0, 0.3826834, 0, 0.9238795], [0, 0.7071068, 0, 0.7071068]]
    )
    motion = _root_motion(skeleton, Clip("walk", (moved, turn), 2), 0.01)  # centimetres
    assert motion == {"joint": "root", "travel_m": 1.0, "yaw_deg": 90.0, "speed_m_s": 0.5}
