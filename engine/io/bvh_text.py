"""The text of a BVH file: its ``HIERARCHY`` as joints and its ``MOTION`` as one array of numbers.

:func:`parse_hierarchy` reads every joint and End Site (name, parent, ``OFFSET``, ``CHANNELS``)
in file order, which is depth-first; :func:`parse_motion` reads ``Frames:``, ``Frame Time:`` and
the frame lines in one C-level parse, falling back to a slow scan only to name the first bad line.
Malformed text raises :class:`~engine.errors.AssetError` with ``where="line N"``. What the numbers
mean (units, axes, Euler orders, the skeleton and clip they make) is :mod:`engine.io.bvh`.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from engine.errors import AssetError, OssaWarning
from engine.math._checks import FloatArray

CHANNELS = {
    "xposition": ("position", 0),
    "yposition": ("position", 1),
    "zposition": ("position", 2),
    "xrotation": ("rotation", 0),
    "yrotation": ("rotation", 1),
    "zrotation": ("rotation", 2),
}
#: Deepest joint nesting read (the root is depth 0); the parser recurses once per level.
MAX_JOINT_DEPTH = 512
_FRAMES = re.compile(r"^\s*frames\s*:\s*(\S*)\s*$", re.IGNORECASE)
_FRAME_TIME = re.compile(r"^\s*frame\s+time\s*:\s*(\S*)\s*$", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
MOTION = re.compile(r"^[ \t]*MOTION[ \t]*\r?$", re.MULTILINE | re.IGNORECASE)


@dataclass
class Joint:
    """One ``ROOT``/``JOINT`` or ``End Site`` as written: its parent's index in file order, offset, channel names."""

    name: str
    parent: int
    offset: tuple[float, float, float]
    channels: tuple[str, ...]
    line: int
    end_site: bool = False


class _Tokens:
    """The hierarchy as a stream of ``(token, line number)`` pairs."""

    def __init__(self, text: str, first_line: int, file: str | None) -> None:
        self.items = [(tok, n) for n, line in enumerate(text.splitlines(), first_line) for tok in line.split()]
        self.pos = 0
        self.file = file
        self.last_line = first_line + text.count("\n")  # where the hierarchy text stops

    def error(self, message: str, line: int | None = None) -> AssetError:
        return AssetError(message, file=self.file, where=f"line {self.line if line is None else line}")

    @property
    def line(self) -> int:
        return self.items[self.pos][1] if self.pos < len(self.items) else self.last_line

    def peek(self) -> str | None:
        return self.items[self.pos][0] if self.pos < len(self.items) else None

    def next(self, what: str) -> str:
        if self.pos >= len(self.items):
            raise self.error(f"unexpected end of HIERARCHY: expected {what}")
        self.pos += 1
        return self.items[self.pos - 1][0]

    def expect(self, word: str) -> None:
        line = self.line
        got = self.next(repr(word))
        if got.lower() != word.lower():
            raise self.error(f"expected {word!r}, got {got!r}", line)

    def rest_of_line(self, what: str) -> list[str]:
        line = self.line
        out = []
        while self.pos < len(self.items) and self.items[self.pos][1] == line and self.items[self.pos][0] != "{":
            out.append(self.items[self.pos][0])
            self.pos += 1
        if not out:
            raise self.error(f"expected {what} on this line", line)
        return out

    def number(self, what: str) -> float:
        line = self.line
        tok = self.next(what)
        try:
            value = float(tok)
        except ValueError:
            raise self.error(f"expected {what} (a number), got {tok!r}", line) from None
        if not np.isfinite(value):
            raise self.error(f"{what} must be finite, got {tok!r}", line)
        return value


def _parse_joint(tokens: _Tokens, name: str, line: int, parent: int, joints: list[Joint], depth: int = 0) -> None:
    """Parse ``{ OFFSET … CHANNELS … children }`` of the joint called ``name`` (declared on ``line``)."""
    tokens.expect("{")
    tokens.expect("OFFSET")
    offset = (tokens.number("OFFSET x"), tokens.number("OFFSET y"), tokens.number("OFFSET z"))
    index = len(joints)
    joints.append(Joint(name, parent, offset, (), line))
    if (tokens.peek() or "").lower() == "channels":
        tokens.next("CHANNELS")
        count_line = tokens.line
        count_tok = tokens.next("the channel count")
        if not count_tok.isdigit():
            raise tokens.error(f"CHANNELS must be followed by a count, got {count_tok!r}", count_line)
        names: list[str] = []
        for _ in range(int(count_tok)):
            chan_line = tokens.line
            chan = tokens.next(f"{count_tok} channel names")
            if chan.lower() not in CHANNELS:
                raise tokens.error(
                    f"unknown channel {chan!r} of joint {name!r}: expected one of "
                    "Xposition Yposition Zposition Xrotation Yrotation Zrotation",
                    chan_line,
                )
            if chan.lower() in (c.lower() for c in names):
                raise tokens.error(f"channel {chan!r} of joint {name!r} is listed twice", chan_line)
            names.append(chan)
        joints[index].channels = tuple(names)
    while True:
        word_line = tokens.line
        word = tokens.next("JOINT, End Site or '}'")
        low = word.lower()
        if low == "}":
            return
        if low == "joint":
            child = " ".join(tokens.rest_of_line("a joint name"))
            if depth >= MAX_JOINT_DEPTH:
                raise tokens.error(f"joints nested more than {MAX_JOINT_DEPTH} levels deep", word_line)
            _parse_joint(tokens, child, word_line, index, joints, depth + 1)
        elif low == "end":
            site = tokens.next("'Site'")
            if site.lower() != "site":
                raise tokens.error(f"expected 'End Site', got 'End {site}'", word_line)
            tokens.expect("{")
            tokens.expect("OFFSET")
            tip = (tokens.number("OFFSET x"), tokens.number("OFFSET y"), tokens.number("OFFSET z"))
            tokens.expect("}")
            joints.append(Joint(f"{name}_End", index, tip, (), word_line, end_site=True))
        elif low == "root":
            raise tokens.error("a second ROOT inside a joint: BVH files hold one tree", word_line)
        else:
            raise tokens.error(f"expected JOINT, End Site or '}}' in joint {name!r}, got {word!r}", word_line)


def parse_hierarchy(text: str, file: str | None) -> list[Joint]:
    """Every joint and End Site (flagged ``end_site``) in file order."""
    tokens = _Tokens(text, 1, file)
    if tokens.peek() is None:
        raise AssetError("the file is empty: expected HIERARCHY", file=file, where="line 1")
    tokens.expect("HIERARCHY")
    root_line = tokens.line
    tokens.expect("ROOT")
    joints: list[Joint] = []
    root = " ".join(tokens.rest_of_line("the root joint's name"))
    _parse_joint(tokens, root, root_line, -1, joints)
    if tokens.peek() is not None:
        line = tokens.line
        word = tokens.next("")
        if word.lower() == "root":
            raise tokens.error(
                f"a second ROOT: this reader takes one skeleton per file (first ROOT at line {root_line})", line
            )
        raise tokens.error(f"unexpected {word!r} after the hierarchy (expected MOTION)", line)
    return joints


def kept_joints(joints: list[Joint], end_sites: bool, file: str | None) -> list[Joint]:
    """``joints`` without End Sites unless ``end_sites``, parents renumbered; names must be unique."""
    keep = [j for j in joints if end_sites or not j.end_site]
    new_index = {id(j): k for k, j in enumerate(keep)}
    out = [
        Joint(j.name, -1 if j.parent < 0 else new_index[id(joints[j.parent])], j.offset, j.channels, j.line, j.end_site)
        for j in keep
    ]
    seen: dict[str, int] = {}
    for joint in out:
        if joint.name in seen:
            raise AssetError(
                f"joint name {joint.name!r} is used twice (first at line {seen[joint.name]})",
                file=file,
                where=f"line {joint.line}",
            )
        seen[joint.name] = joint.line
    return out


def _numbers(body: str, num_channels: int) -> FloatArray | None:
    """All frame numbers in one C-level parse, ``(F, N)``; ``None`` if numpy cannot read them."""
    if not body.strip():
        return np.zeros((0, num_channels))
    if num_channels == 0:
        return None
    try:
        return np.loadtxt(io.StringIO(body), dtype=np.float64, comments=None, ndmin=2)
    except ValueError:
        return None


def parse_motion(text: str, first_line: int, num_channels: int, file: str | None) -> tuple[FloatArray, float]:
    """Parse ``Frames:``, ``Frame Time:`` and the frame lines; return ``(motion (F, N), frame_time)``."""
    head = text.split("\n", 2)
    if len(head) < 2:
        raise AssetError(
            "MOTION must be followed by 'Frames:' and 'Frame Time:' lines", file=file, where=f"line {first_line}"
        )
    match = _FRAMES.match(head[0])
    if match is None or not match.group(1).isdigit():
        raise AssetError(f"expected 'Frames: <count>', got {head[0].strip()!r}", file=file, where=f"line {first_line}")
    frames = int(match.group(1))
    match = _FRAME_TIME.match(head[1])
    where = f"line {first_line + 1}"
    if match is None:
        raise AssetError(f"expected 'Frame Time: <seconds>', got {head[1].strip()!r}", file=file, where=where)
    try:
        frame_time = float(match.group(1))
    except ValueError:
        raise AssetError(f"Frame Time must be a number, got {match.group(1)!r}", file=file, where=where) from None
    if not (np.isfinite(frame_time) and frame_time > 0):
        raise AssetError(f"Frame Time must be a positive number of seconds, got {frame_time}", file=file, where=where)
    body = head[2] if len(head) > 2 else ""
    motion = _numbers(body, num_channels)
    if motion is not None and motion.shape[0] > frames and motion.shape[1:] == (num_channels,):
        # Some exporters write one frame line more than 'Frames:' says; readers that trust the
        # count (three.js's BVHLoader, Blender's importer) play the stated frames: so do we.
        warnings.warn(
            f"{file or 'BVH'}: 'Frames: {frames}' (line {first_line}) is followed by {motion.shape[0]} frame "
            f"lines; reading the first {frames}",
            OssaWarning,
            stacklevel=4,
        )
        motion = motion[:frames].copy()
    if motion is None or motion.shape != (frames, num_channels) or not np.isfinite(motion).all():
        _raise_motion_error(body, first_line, frames, num_channels, file)
    motion.flags.writeable = False
    return motion, frame_time


def _raise_motion_error(body: str, frames_line: int, frames: int, num_channels: int, file: str | None) -> NoReturn:
    """Slow path, run only after the fast parse failed: find and report the first problem."""
    lines = [(n, line.split()) for n, line in enumerate(body.split("\n"), frames_line + 2) if line.strip()]
    if len(lines) != frames:
        at = lines[frames][0] if len(lines) > frames else (lines[-1][0] + 1 if lines else frames_line + 2)
        raise AssetError(
            f"'Frames: {frames}' (line {frames_line}) does not match the {len(lines)} frame lines that follow",
            file=file,
            where=f"line {at}",
        )
    for n, tokens in lines:
        if len(tokens) != num_channels:
            raise AssetError(
                f"expected {num_channels} numbers on a frame line (one per channel in HIERARCHY), got {len(tokens)}",
                file=file,
                where=f"line {n}",
            )
        for column, token in enumerate(tokens, 1):
            if not _NUMBER.fullmatch(token) or not np.isfinite(float(token)):
                raise AssetError(
                    f"frame value {column} is {token!r}: expected a finite number", file=file, where=f"line {n}"
                )
    raise AssetError("numpy could not read the frame numbers", file=file, where=f"line {frames_line + 2}")
