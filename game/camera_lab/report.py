"""The lab's ``--report DIR``: the smoothing and filter experiments as CSV files, PNG plots and a table.

Files written to the report folder:

- ``smoothing.csv``: ``method, fps, frame, time_s, angle_to_target_deg``: every frame of every
  smoothing run (:func:`~game.camera_lab.experiments.smoothing_runs`);
- ``smoothing_summary.csv``: ``method, fps, final_error_deg, time_to_95_s, max_diff_vs_144fps_deg``:
  the table below;
- ``filters.csv``: ``filter, parameter, value, jitter_rad_s2, lag_ms``: the jitter/lag sweep
  (:func:`~game.camera_lab.experiments.filter_sweep`);
- ``smoothing.png``: angle to the target against time, one panel per method with one line per
  frame rate, and each run's angle from the 144 FPS run (log scale);
- ``filters.png``: jitter against lag as each filter's knob turns, and the lab's default
  settings' angle from the clean path over time.

matplotlib is imported only here, and only when a report is written.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from engine.math import quat_angle
from game.camera_lab import experiments as ex
from game.ui import SERIES_COLORS

SMOOTHING_FILE = "smoothing.csv"
SUMMARY_FILE = "smoothing_summary.csv"
FILTERS_FILE = "filters.csv"
SMOOTHING_PLOT = "smoothing.png"
FILTERS_PLOT = "filters.png"
SMOOTHING_COLUMNS = ("method", "fps", "frame", "time_s", "angle_to_target_deg")
SUMMARY_COLUMNS = ("method", "fps", "final_error_deg", "time_to_95_s", "max_diff_vs_144fps_deg")
FILTER_COLUMNS = ("filter", "parameter", "value", "jitter_rad_s2", "lag_ms")
FLOOR = 1e-12
"""Smallest difference (degrees) shown on the log-scale plot: exact agreement is drawn there."""


def fps_color(k: int) -> tuple[float, float, float]:
    """The lab's colour of frame rate ``FPS[k]`` (30 red, 60 blue, 144 green) as matplotlib RGB."""
    r, g, b = SERIES_COLORS[k]
    return (r / 255.0, g / 255.0, b / 255.0)


def format_table(rows: list[ex.SmoothingRow]) -> str:
    """The report table as text: one line per method and frame rate."""
    lines = [
        f"Camera smoothing, half-life {ex.HALF_LIFE} s: the target is cut {ex.CUT_TIME} s in, runs a circle "
        f"from {ex.RUN_START} s, the run ends at {ex.DURATION} s.",
        "final error: angle to the (running) target at the end; to 95 %: seconds from the cut to 95 % of the "
        "jump closed;",
        "max diff vs 144 FPS: largest angle between this run and the same method at 144 FPS, at every 1/6 s.",
        "",
        f"{'method':<12} {'FPS':>4} {'final error (deg)':>18} {'to 95 % (s)':>12} {'max diff vs 144 FPS (deg)':>26}",
    ]
    lines += [
        f"{row.method:<12} {row.fps:>4} {row.final_error:>18.4f} {row.time_to_95:>12.4f} {row.spread:>26.2e}"
        for row in rows
    ]
    return "\n".join(lines)


def format_filters(filters: ex.FilterRuns) -> str:
    """One line per filter of the lab's jitter scene: jitter and lag."""
    lines = [f"Stabilisation ({ex.TRACKER_RATE} Hz tracker, jitter {ex.JITTER} rad per axis):"]
    lines += [
        f"{name:<12} jitter {filters.jitter[name]:8.1f} rad/s^2   lag {1000.0 * filters.lag[name]:6.1f} ms"
        for name in ex.FILTERS
    ]
    return "\n".join(lines)


def write_report(directory: Path) -> tuple[list[Path], str]:
    """Run the experiments and write the report files into ``directory`` (created).

    Returns
    -------
    paths, table
        The files written, and the text of :func:`format_table` and :func:`format_filters`.
    """
    directory.mkdir(parents=True, exist_ok=True)
    experiments = ex.run_experiments()
    runs, filters = experiments.smoothing, experiments.filters
    rows = ex.smoothing_table(runs)
    sweep = ex.filter_sweep()
    paths = [directory / name for name in (SMOOTHING_FILE, SUMMARY_FILE, FILTERS_FILE, SMOOTHING_PLOT, FILTERS_PLOT)]
    with paths[0].open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(SMOOTHING_COLUMNS)
        for (method, fps), run in runs.items():
            angles = np.degrees(run.errors)
            writer.writerows(
                [method, fps, k, f"{t:.6f}", f"{a:.9f}"] for k, (t, a) in enumerate(zip(run.times, angles, strict=True))
            )
    with paths[1].open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(SUMMARY_COLUMNS)
        writer.writerows(
            [row.method, row.fps, f"{row.final_error:.9f}", f"{row.time_to_95:.9f}", f"{row.spread:.6e}"]
            for row in rows
        )
    with paths[2].open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(FILTER_COLUMNS)
        writer.writerows(
            [p.filter, p.parameter, f"{p.value:.6g}", f"{p.jitter:.6f}", f"{1000.0 * p.lag:.3f}"] for p in sweep
        )
    plot_smoothing(runs, paths[3])
    plot_filters(filters, sweep, paths[4])
    return paths, format_table(rows) + "\n\n" + format_filters(filters)


def plot_smoothing(runs: dict[tuple[str, int], ex.SmoothingRun], path: Path) -> None:
    """Angle to the target per method (one line per frame rate), and every run's angle from its 144 FPS twin."""
    from matplotlib.figure import Figure  # noqa: PLC0415 (lazy: only a report needs matplotlib)

    figure = Figure(figsize=(11, 8), layout="constrained")
    axes = figure.subplots(2, 2).ravel()
    for panel, method in zip(axes, ex.METHODS, strict=False):
        for k, fps in enumerate(ex.FPS):
            run = runs[method, fps]
            panel.plot(
                run.times, np.degrees(run.errors), color=fps_color(k), label=f"{fps} FPS", drawstyle="steps-post"
            )
        panel.axvline(ex.CUT_TIME, color="grey", linewidth=0.8)
        panel.axvline(ex.RUN_START, color="grey", linewidth=0.8)
        panel.set(title=f"{method}: angle to target", xlabel="time (s)", ylabel="degrees")
        panel.set_facecolor("#202228")
        panel.legend(loc="upper right", fontsize="small")
    spread = axes[3]
    for method, style in zip(ex.METHODS, ("-", "--", ":"), strict=True):
        reference = runs[method, ex.FPS[-1]]
        theirs = reference.orientations[ex.common_rows(reference)]
        for k, fps in enumerate(ex.FPS[:-1]):
            run = runs[method, fps]
            rows = ex.common_rows(run)
            difference = np.degrees(quat_angle(run.orientations[rows], theirs))
            spread.semilogy(
                run.times[rows], np.maximum(difference, FLOOR), style, color=fps_color(k), label=f"{method} {fps} FPS"
            )
    spread.set(title="angle from the same method at 144 FPS (every 1/6 s)", xlabel="time (s)", ylabel="degrees (log)")
    spread.set_facecolor("#202228")
    spread.legend(loc="center right", fontsize="x-small", ncol=2)
    figure.savefig(path, dpi=80)


def plot_filters(filters: ex.FilterRuns, sweep: list[ex.SweepPoint], path: Path) -> None:
    """Jitter against lag for the filter sweeps (and the lab's settings), and the angle from the clean path."""
    from matplotlib.figure import Figure  # noqa: PLC0415 (lazy: only a report needs matplotlib)

    figure = Figure(figsize=(12, 5), layout="constrained")
    tradeoff, trace = figure.subplots(1, 2)
    for k, name in enumerate(ex.FILTERS):
        points = [p for p in sweep if p.filter == name]
        lags = [1000.0 * p.lag for p in points]
        jitters = [p.jitter for p in points]
        tradeoff.semilogy(lags, jitters, "o-", color=fps_color(k), label=f"{name} ({points[0].parameter})")
        for p in points[1 :: max(1, len(points) // 4)]:
            tradeoff.annotate(f"{p.value:.3g}", (1000.0 * p.lag, p.jitter), fontsize="x-small", color="white")
        tradeoff.plot(1000.0 * filters.lag[name], filters.jitter[name], "*", color=fps_color(k), markersize=14)
    tradeoff.set(
        title="jitter vs lag (stars: the lab's settings)", xlabel="lag (ms)", ylabel="RMS angular acc. (rad/s²)"
    )
    tradeoff.set_facecolor("#202228")
    tradeoff.legend(loc="upper right", fontsize="small")
    times = filters.clean.times
    shown = times <= 4.0
    for k, name in enumerate(ex.FILTERS):
        trace.plot(times[shown], np.degrees(filters.errors[name][shown]), color=fps_color(k), label=name, linewidth=1)
    trace.set(title="angle from the clean head path", xlabel="time (s)", ylabel="degrees")
    trace.set_facecolor("#202228")
    trace.legend(loc="upper right", fontsize="small")
    figure.savefig(path, dpi=80)
