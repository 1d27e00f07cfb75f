"""What ``ossa inspect LIB`` prints: the library's skeletons and clips, their sizes, ratios and errors."""

from __future__ import annotations

from pathlib import Path

from engine.compress.fileformat import VERSION
from engine.compress.library import ClipLibrary


def _cm(metres: object) -> str:
    return f"{float(metres) * 100:.4f}" if isinstance(metres, int | float) else "?"


def summarize_library(library: ClipLibrary, path: Path) -> str:
    """A readable summary of ``library`` (read from ``path``)."""
    size = path.stat().st_size if path.exists() else library.nbytes
    raw = sum(int(c.info.get("raw_float32_bytes", 0)) for c in library.clips)
    packed = sum(c.nbytes for c in library.clips)
    lines = [
        f"{path}",
        f"Ossa clip library, format version {VERSION}: {len(library.clips)} clips on {len(library.skeletons)} "
        f"skeleton(s), {size} bytes (clip data {packed} bytes; raw float32 {raw} bytes, "
        f"{raw / packed if packed else 0.0:.2f}:1)",
        "",
        "skeletons:",
    ]
    for s, skeleton in enumerate(library.skeletons):
        lines.append(f"  {s}: {skeleton.num_joints} joints, root {skeleton.names[0]!r}")
    lines += ["", "clips (errors: largest shell displacement over every checked time, verified on the packed bits):"]
    for k, clip in enumerate(library.clips):
        info = clip.info
        tolerance = info.get("tolerance_m")
        held = isinstance(tolerance, float) and float(info.get("max_error_m", 1.0)) <= tolerance
        lines.append(
            f"  {k} {clip.name!r}: skeleton {library.skeleton_index[k]}, {clip.num_samples} samples at "
            f"{clip.rate:.6g}/s ({clip.span:.4g} s){', loops' if clip.loops else ''}, "
            f"{clip.animated[0].size} animated tracks, {clip.nbytes} bytes, ratio {float(info.get('ratio', 0.0)):.2f}:1"
        )
        lines.append(
            f"      error max {_cm(info.get('max_error_m'))} cm, p99 {_cm(info.get('p99_error_m'))} cm at "
            f"{info.get('checked_times', '?')} times; tolerance {_cm(tolerance)} cm "
            + ("guaranteed (held on every checked time)" if held else "NOT held")
        )
        source = info.get("source")
        if isinstance(source, dict):
            lines.append(f"      source {source.get('file')} clip {source.get('clip')!r} ({source.get('unit')})")
    return "\n".join(lines)
