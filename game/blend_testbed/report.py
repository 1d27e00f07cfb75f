"""The testbed's ``--report``: effective weights and method errors per step, as CSV and a PNG plot.

Files written to the report folder:

- ``blend_weights.csv``: ``step, time`` (seconds of program time) and one column per clip (its
  effective weight; the additive clip's column is named ``"NAME (additive)"``);
- ``blend_errors.csv``: ``step, time, joint, name, slerp_deg, naive_deg``: per step and joint,
  the rotation angle of the slerp chain's and the naive sum's local rotation from ours;
- ``blend_report.png``: the weights over time, the largest per-joint error over time, and each
  joint's largest error over the run.

matplotlib is imported only here, and only when a report is written.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.math._checks import FloatArray
from game.ui import SERIES_COLORS

WEIGHTS_FILE = "blend_weights.csv"
ERRORS_FILE = "blend_errors.csv"
PLOT_FILE = "blend_report.png"
ERROR_COLUMNS = ("slerp_deg", "naive_deg")


@dataclass
class Recorder:
    """Weights ``(K,)`` and errors ``(2, J)`` of every update step, kept until the report goes to ``directory``."""

    directory: Path
    clips: list[str]
    joints: list[str]
    times: list[float] = field(default_factory=list)
    weights: list[FloatArray] = field(default_factory=list)
    errors: list[FloatArray] = field(default_factory=list)

    def record(self, time: float, weights: FloatArray, errors: FloatArray) -> None:
        """Keep one step: program time, effective weights ``(K,)``, errors from ours ``(2, J)`` in degrees."""
        self.times.append(time)
        self.weights.append(np.array(weights, dtype=np.float64))
        self.errors.append(np.array(errors, dtype=np.float64))


def write_report(recorder: Recorder) -> list[Path]:
    """Write the two CSV files and the PNG into the recorder's ``directory`` (created); return their paths."""
    directory = recorder.directory
    directory.mkdir(parents=True, exist_ok=True)
    times = np.array(recorder.times)
    weights = np.array(recorder.weights).reshape(len(times), len(recorder.clips))
    errors = np.array(recorder.errors).reshape(len(times), len(ERROR_COLUMNS), len(recorder.joints))
    paths = [directory / WEIGHTS_FILE, directory / ERRORS_FILE, directory / PLOT_FILE]
    with paths[0].open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["step", "time", *recorder.clips])
        rows = zip(times, weights, strict=True)
        writer.writerows([step, f"{t:.6f}", *(f"{w:.6f}" for w in row)] for step, (t, row) in enumerate(rows))
    with paths[1].open("w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(["step", "time", "joint", "name", *ERROR_COLUMNS])
        writer.writerows(
            [step, f"{t:.6f}", joint, name, *(f"{e:.6f}" for e in errors[step, :, joint])]
            for step, t in enumerate(times)
            for joint, name in enumerate(recorder.joints)
        )
    plot_report(times, weights, errors, recorder, paths[2])
    return paths


def plot_report(times: FloatArray, weights: FloatArray, errors: FloatArray, recorder: Recorder, path: Path) -> None:
    """Three panels: weights over time, largest joint error over time, largest error per joint."""
    from matplotlib.figure import Figure  # noqa: PLC0415 (lazy: only a report needs matplotlib)

    figure = Figure(figsize=(10, 10), layout="constrained")
    top, middle, bottom = figure.subplots(3, 1)
    for k, name in enumerate(recorder.clips):
        top.plot(times, weights[:, k], color=np.array(SERIES_COLORS[k % len(SERIES_COLORS)]) / 255.0, label=name)
    top.set(title="effective weights (user weight x fade)", xlabel="time (s)", ylabel="weight", ylim=(-0.05, 1.05))
    top.set_facecolor("#202228")  # the testbed's slider colours, white included, read as on screen
    top.legend(loc="upper right", fontsize="small")
    labels = ("slerp chain", "naive unaligned sum (the seed's bug)")
    colors = ("tab:blue", "tab:red")
    for m, (label, color) in enumerate(zip(labels, colors, strict=True)):
        middle.plot(times, errors[:, m].max(axis=1, initial=0.0), color=color, label=label)
    middle.set(title="largest per-joint angle from ours (aligned weighted sum)", xlabel="time (s)", ylabel="degrees")
    middle.legend(loc="upper right", fontsize="small")
    positions = np.arange(len(recorder.joints))
    for m, (label, color) in enumerate(zip(labels, colors, strict=True)):
        worst = errors[:, m].max(axis=0, initial=0.0)
        bottom.bar(positions + (m - 0.5) * 0.4, worst, width=0.4, color=color, label=label)
    bottom.set(title="largest angle from ours over the run, per joint", ylabel="degrees")
    bottom.set_xticks(positions, recorder.joints, rotation=70, fontsize="x-small")
    bottom.legend(loc="upper right", fontsize="small")
    figure.savefig(path, dpi=80)
