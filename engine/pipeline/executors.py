"""Where the tasks of a build run: in this process, on a local process pool, or on a Dask cluster.

Each executor is ``executor(tasks, deliver)``: it runs :func:`~engine.pipeline.task.build_clip`
once per task and hands every result to ``deliver`` as it arrives. None of them changes a result.

- :func:`serial`: one after the other, in this process (``-j 1``).
- :func:`process_pool`: ``jobs`` worker processes (``-j N``), started with ``spawn``.
- :func:`dask_cluster`: one task per clip on the ``dask.distributed`` scheduler at an address
  (``--scheduler tcp://host:8786``). The workers need only Ossa installed; each task carries its
  files. A task whose worker dies is run again elsewhere by the scheduler, and each result is
  delivered once (results are keyed by the task's content hash). Needs ``pip install 'ossa[cluster]'``.

:class:`Progress` draws the progress line (a bar with the rate and ETA on a terminal).
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import TextIO

from engine.errors import InvalidInputError
from engine.pipeline.task import ClipResult, ClipTask, build_clip

Deliver = Callable[[ClipResult], None]


def serial(tasks: Sequence[ClipTask], deliver: Deliver) -> None:
    """Run every task in this process, in order."""
    for task in tasks:
        deliver(build_clip(task))


def process_pool(jobs: int) -> Callable[[Sequence[ClipTask], Deliver], None]:
    """An executor of ``jobs`` worker processes (``serial`` for one)."""
    if jobs < 1:
        raise InvalidInputError(f"-j must be at least 1, got {jobs}")
    if jobs == 1:
        return serial

    def run(tasks: Sequence[ClipTask], deliver: Deliver) -> None:
        if not tasks:
            return
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
            for future in as_completed([pool.submit(build_clip, task) for task in tasks]):
                deliver(future.result())

    return run


def dask_cluster(address: str) -> Callable[[Sequence[ClipTask], Deliver], None]:
    """An executor on the Dask scheduler at ``address`` (``tcp://host:8786``)."""
    try:
        from distributed import Client  # noqa: PLC0415 (optional: pip install 'ossa[cluster]')
        from distributed import as_completed as dask_completed  # noqa: PLC0415
    except ImportError as error:
        raise InvalidInputError(
            f"--scheduler needs dask.distributed (pip install 'ossa[cluster]'), which failed to import: {error}"
        ) from None

    def run(tasks: Sequence[ClipTask], deliver: Deliver) -> None:
        if not tasks:
            return
        try:
            client = Client(address, timeout=30)
        except OSError as error:
            raise InvalidInputError(f"--scheduler {address}: cannot connect: {error}") from None
        try:
            futures = [client.submit(build_clip, task, key=f"ossa-clip-{task.key}", pure=True) for task in tasks]
            for future in dask_completed(futures):
                deliver(future.result())
        finally:
            client.close()

    return run


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    return (
        f"{seconds // 3600}h {seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m {seconds % 60:02d}s"
    )


class Progress:
    """``progress(done, total, failed)``: a bar with clips per second and ETA on a terminal, else nothing."""

    def __init__(self, stream: TextIO | None = None, *, width: int = 30) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.start = time.monotonic()
        self.first: int | None = None
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())

    def __call__(self, done: int, total: int, failed: int) -> None:
        """Draw ``done`` of ``total`` clips (``failed`` of them failed), with the rate since the first call."""
        if self.first is None:
            self.first = done
            self.start = time.monotonic()
        if not self.enabled or total == 0:
            return
        elapsed = time.monotonic() - self.start
        fresh = done - self.first
        rate = fresh / elapsed if elapsed > 0 and fresh else 0.0
        eta = f"ETA {_duration((total - done) / rate)}" if rate > 0 and done < total else "ETA ?"
        filled = round(self.width * done / total)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(f"\r[{bar}] {done}/{total} clips, {failed} failed, {rate:.2f} clips/s, {eta}   ")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()

    def __repr__(self) -> str:
        return f"Progress(terminal={self.enabled})"
