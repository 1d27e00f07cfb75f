"""Biovision BVH motion capture → :class:`~engine.anim.Skeleton` and :class:`~engine.anim.Clip`.

A BVH file has two parts. ``HIERARCHY`` lists one tree of joints, each with an ``OFFSET`` from
its parent and the ``CHANNELS`` it animates, in the order their numbers appear on a frame line;
``End Site`` blocks mark the tips of chains. ``MOTION`` gives ``Frames:``, ``Frame Time:`` and one
line of numbers per frame.

What this reader decides (see ``docs/conventions.md`` for the target conventions):

- Rotations: each joint's rotation channels, read in the order the file lists them, are an
  **intrinsic** Euler sequence in degrees (``Zrotation Xrotation Yrotation`` is intrinsic
  ``"ZXY"``: ``q = q_z · q_x · q_y``). Every joint has its own order. Missing rotation axes are 0.
- Translations: a joint's local translation is its ``OFFSET``; each position channel replaces
  that axis of the offset (the root's usual ``0 0 0`` offset then gives the absolute position;
  exporters that write six channels on every joint write the offset back, which this keeps).
- Rest pose: offsets with identity rotations; inverse bind matrices are the inverse rest
  model matrices. Joints are in file order, which is depth-first (parents before children).
- Units and axes: every length is multiplied by ``scale``, metres per file unit, and the whole
  motion is expressed in Ossa axes through ``axes`` (see :func:`parse_bvh`). BVH has no unit
  field, so by default the unit is **detected** from the skeleton's height (:func:`detect_unit`):
  the rest pose of a standing human spans about :data:`STANDING_HEIGHT` metres of joints (a
  1.5–2 m person; crown and soles lie outside the joints), and the unit among :data:`UNITS` that
  comes closest is chosen: centimetres for most files, CMU's ``inches / 0.45`` (about 0.0564 m)
  for the CMU database's BVH conversions, inches, millimetres, feet or metres for others. A
  choice other than centimetres warns (:class:`~engine.errors.OssaWarning`) naming the unit and
  the height it gives; a skeleton that is not a humanoid is read in centimetres.
- Keys: frame ``k`` is at ``k · frame_time`` seconds; the clip's duration is
  ``(frames − 1) · frame_time``. Rotation keys are sign-unflipped along time so that linear
  interpolation between neighbouring frames takes the short way.

Malformed files raise :class:`~engine.errors.AssetError` with ``where="line N"``.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.humanoid import find_humanoid
from engine.anim.skeleton import Skeleton
from engine.anim.units import UNITS, unit_for_height
from engine.errors import AssetError, InvalidInputError, OssaWarning, SkeletonMismatchError
from engine.math._checks import FloatArray, trusted
from engine.math.quat import quat_conjugate, quat_from_euler, quat_from_matrix, quat_multiply, unflip

#: Named axis conversions: 3×3 matrices taking a file's axes to Ossa's (+Y up, right-handed).
AXES: dict[str, FloatArray] = {
    "y_up": np.eye(3),
    # Z-up, −Y forward (Blender, 3ds Max): (x, y, z) → (x, z, −y), a −90° turn about X.
    "z_up": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]),
}

_CHANNELS = {
    "xposition": ("position", 0),
    "yposition": ("position", 1),
    "zposition": ("position", 2),
    "xrotation": ("rotation", 0),
    "yrotation": ("rotation", 1),
    "zrotation": ("rotation", 2),
}
#: Deepest joint nesting read (the root is depth 0); the parser recurses once per level.
MAX_JOINT_DEPTH = 512
#: The unit read when the skeleton's height cannot tell (not a humanoid).
DEFAULT_UNIT = "centimetres"
#: Rest-pose joint span of a standing adult along up, metres (a 1.5–2 m person), aimed at by
#: :func:`detect_unit`.
STANDING_HEIGHT = 1.6
#: Heights (metres) of a detected figure that are believable for a person; outside, the warning says so.
PLAUSIBLE_HEIGHTS = (1.0, 2.5)

_FRAMES = re.compile(r"^\s*frames\s*:\s*(\S*)\s*$", re.IGNORECASE)
_FRAME_TIME = re.compile(r"^\s*frame\s+time\s*:\s*(\S*)\s*$", re.IGNORECASE)
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_MOTION = re.compile(r"^[ \t]*MOTION[ \t]*\r?$", re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True, eq=False)
class BvhAnimation:
    """A BVH file read into runtime types, plus the raw numbers for tools and tests.

    Attributes
    ----------
    skeleton
        Joints in file (depth-first) order, ``End Site`` tips included when asked for; rest
        translations are the scaled, axis-converted offsets, rest rotations the identity.
    clip
        LINEAR channels, one key per frame: a rotation channel for every joint with rotation
        channels and a translation channel for every joint with position channels. Joints
        without channels (and end sites) have no channel: sampling gives their rest pose.
    frame_time
        Seconds between frames, as in ``Frame Time:``.
    channel_names
        For each joint of ``skeleton``, its channel names as the file lists them (``()`` for end
        sites and joints without channels).
    motion
        The ``MOTION`` numbers as written, ``(F, N)`` for ``F`` frames and ``N`` channels in file
        units and degrees; read-only.
    scale
        Metres per file unit used for every length.
    unit
        How ``scale`` was chosen, e.g. ``"centimetres (detected: the figure stands 1.53 m)"`` or
        ``"× 0.5 (given)"``.
    """

    skeleton: Skeleton
    clip: Clip
    frame_time: float
    channel_names: tuple[tuple[str, ...], ...]
    motion: FloatArray
    scale: float = 0.01
    unit: str = DEFAULT_UNIT

    @property
    def num_frames(self) -> int:
        """Number of frames ``F``."""
        return int(self.motion.shape[0])

    @property
    def clips(self) -> tuple[Clip, ...]:
        """``(clip,)``: the same shape of answer as a glTF character's clips."""
        return (self.clip,)

    @property
    def meshes(self) -> tuple[()]:
        """``()``: a BVH file has no meshes."""
        return ()


@dataclass
class _Joint:
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


def _parse_joint(tokens: _Tokens, name: str, line: int, parent: int, joints: list[_Joint], depth: int = 0) -> None:
    """Parse ``{ OFFSET … CHANNELS … children }`` of the joint called ``name`` (declared on ``line``)."""
    tokens.expect("{")
    tokens.expect("OFFSET")
    offset = (tokens.number("OFFSET x"), tokens.number("OFFSET y"), tokens.number("OFFSET z"))
    index = len(joints)
    joints.append(_Joint(name, parent, offset, (), line))
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
            if chan.lower() not in _CHANNELS:
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
            joints.append(_Joint(f"{name}_End", index, tip, (), word_line, end_site=True))
        elif low == "root":
            raise tokens.error("a second ROOT inside a joint: BVH files hold one tree", word_line)
        else:
            raise tokens.error(f"expected JOINT, End Site or '}}' in joint {name!r}, got {word!r}", word_line)


def _parse_hierarchy(text: str, file: str | None) -> list[_Joint]:
    """Every joint and End Site (flagged ``end_site``) in file order."""
    tokens = _Tokens(text, 1, file)
    if tokens.peek() is None:
        raise AssetError("the file is empty: expected HIERARCHY", file=file, where="line 1")
    tokens.expect("HIERARCHY")
    root_line = tokens.line
    tokens.expect("ROOT")
    joints: list[_Joint] = []
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


def _kept(joints: list[_Joint], end_sites: bool, file: str | None) -> list[_Joint]:
    """``joints`` without End Sites unless ``end_sites``, parents renumbered; names must be unique."""
    keep = [j for j in joints if end_sites or not j.end_site]
    new_index = {id(j): k for k, j in enumerate(keep)}
    out = [
        _Joint(
            j.name, -1 if j.parent < 0 else new_index[id(joints[j.parent])], j.offset, j.channels, j.line, j.end_site
        )
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


def _parse_motion(text: str, first_line: int, num_channels: int, file: str | None) -> tuple[FloatArray, float]:
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


def _axes_matrix(axes: str | Any) -> FloatArray:
    if isinstance(axes, str):
        if axes not in AXES:
            raise InvalidInputError(f"axes must be one of {sorted(AXES)} or a 3×3 orthogonal matrix, got {axes!r}")
        return AXES[axes]
    matrix = np.asarray(axes, dtype=np.float64)
    if matrix.shape != (3, 3) or not np.allclose(matrix @ matrix.T, np.eye(3), atol=1e-9):
        raise InvalidInputError(f"axes must be a 3×3 orthogonal matrix, got {matrix.tolist()!r}")
    return matrix


def _euler_groups(joints: list[_Joint], columns: list[dict[str, int]]) -> dict[str, tuple[list[int], list[list[int]]]]:
    """Group rotating joints by Euler order: ``order -> (joint indices, (Jg, 3) motion columns)``.

    A missing axis points at column ``-1``, which the caller fills with zeros.
    """
    groups: dict[str, tuple[list[int], list[list[int]]]] = {}
    for j, joint in enumerate(joints):
        rot = [c for c in joint.channels if _CHANNELS[c.lower()][0] == "rotation"]
        if not rot:
            continue
        listed = [c[0].upper() for c in rot]
        order = "".join(listed + [a for a in "XYZ" if a not in listed])
        cols = [columns[j].get(f"{a.lower()}rotation", -1) for a in order]
        members, table = groups.setdefault(order, ([], []))
        members.append(j)
        table.append(cols)
    return groups


def detect_unit(skeleton: Skeleton, up: Any = (0.0, 1.0, 0.0)) -> tuple[str, float, float] | None:
    """The length unit that makes ``skeleton`` (in file units) a standing human, or ``None``.

    Returns ``(unit name, metres per file unit, rest height in metres)``: the unit of
    :data:`~engine.anim.units.UNITS` whose reading of the rest pose's joint span along ``up`` is
    closest (by ratio) to :data:`STANDING_HEIGHT` (:func:`~engine.anim.units.unit_for_height`, which
    the programs' glTF characters use too). ``None`` when the skeleton is not a humanoid
    (:func:`~engine.anim.humanoid.find_humanoid`), whose height says nothing about its unit.

    Examples
    --------
    >>> from engine.procedural.mannequin import build_skeleton
    >>> mannequin = build_skeleton()  # metres: 1.47 m of joints
    >>> detect_unit(mannequin)[:2]
    ('metres', 1.0)
    """
    try:
        find_humanoid(skeleton, up)
    except SkeletonMismatchError:
        return None
    heights = _rest_positions(skeleton) @ np.asarray(up, dtype=np.float64)
    span = float(np.ptp(heights))
    if span <= 0.0:
        return None
    name, scale = unit_for_height(span, STANDING_HEIGHT)
    return name, scale, span * scale


def _rest_positions(skeleton: Skeleton) -> FloatArray:
    positions = np.zeros((skeleton.num_joints, 3))
    for j, parent in enumerate(skeleton.parents):  # parents precede children; rest rotations are identity
        positions[j] = skeleton.rest_translations[j] + (positions[parent] if parent >= 0 else 0.0)
    return positions


def _choose_scale(joints: list[_Joint], conversion: FloatArray, file: str | None) -> tuple[float, str]:
    """``(scale, how it was chosen)`` for a file read without a scale (see :func:`detect_unit`)."""
    offsets = np.array([j.offset for j in joints], dtype=np.float64).reshape(-1, 3)
    found = detect_unit(_build_skeleton(joints, offsets, 1.0, conversion))
    if found is None:
        return UNITS[DEFAULT_UNIT], f"{DEFAULT_UNIT} (assumed: not a humanoid, so its height tells no unit)"
    name, scale, height = found
    how = f"{name} (detected: the figure's joints span {height:.2f} m)"
    low, high = PLAUSIBLE_HEIGHTS
    if name != DEFAULT_UNIT or not low <= height <= high:
        doubt = "" if low <= height <= high else f"; no unit gives a {low:g}–{high:g} m figure"
        warnings.warn(
            f"{file or 'BVH'}: lengths read as {name} (× {scale:.6g} m): the figure's joints then span {height:.2f} "
            f"m{doubt}; pass scale (ossa: --scale) if that is wrong",
            OssaWarning,
            stacklevel=4,
        )
    return scale, how


def parse_bvh(
    text: str,
    *,
    file: str | None = None,
    scale: float | None = None,
    axes: str | Any = "y_up",
    end_sites: bool = True,
    name: str = "bvh",
) -> BvhAnimation:
    """Read BVH ``text`` into a :class:`BvhAnimation`.

    Parameters
    ----------
    text
        The whole file. LF or CRLF line endings, tabs, numbers like ``.0083333`` and trailing
        blank lines are all accepted.
    file
        The file name, used in error messages only.
    scale
        Metres per file unit: multiplies every length (offsets and position channels); 0.01 for
        centimetres, 1.0 keeps file units. ``None`` detects the unit from the skeleton's height
        (:func:`detect_unit`, warning unless it is centimetres).
    axes
        ``"y_up"`` (the file already is right-handed with +Y up, as most BVH files are),
        ``"z_up"`` (+Z up, −Y forward), or a 3×3 orthogonal matrix ``M`` with ``v_ossa = M @
        v_file``. Rotations are conjugated by it, so a handedness flip (``det M = −1``) works too.
    end_sites
        Keep each ``End Site`` as a leaf joint named ``<parent>_End`` (no channels): it carries
        the tip of the chain (top of the head, toes, finger tips). The unit is detected with them
        either way.
    name
        The clip's name.

    Raises
    ------
    AssetError
        With ``where="line N"`` for: missing HIERARCHY or MOTION, bad nesting (or deeper than
        :data:`MAX_JOINT_DEPTH`), a second ROOT,
        unknown or repeated channel names, duplicate joint names, a frame count that does not match
        the frame lines, a frame line with the wrong count of numbers, a non-numeric or non-finite
        value, a Frame Time that is not a positive number.
    InvalidInputError
        For a non-positive ``scale`` or an ``axes`` that is neither a known name nor orthogonal.
    """
    if scale is not None and not (np.isfinite(scale) and scale > 0):
        raise InvalidInputError(f"scale must be a positive finite number, got {scale}")
    conversion = _axes_matrix(axes)
    match = _MOTION.search(text)
    every_joint = _parse_hierarchy(text if match is None else text[: match.start()], file)
    joints = _kept(every_joint, end_sites, file)
    if match is None:
        raise AssetError(
            "no MOTION section: the file ends after the hierarchy",
            file=file,
            where=f"line {text.count(chr(10)) + 1}",
        )
    motion_line = text.count("\n", 0, match.start()) + 1
    columns: list[dict[str, int]] = []
    offsets = np.array([j.offset for j in joints], dtype=np.float64).reshape(-1, 3)
    next_column = 0
    for joint in joints:
        columns.append({c.lower(): next_column + k for k, c in enumerate(joint.channels)})
        next_column += len(joint.channels)
    newline = text.find("\n", match.end())
    rest = text[newline + 1 :] if newline >= 0 else ""
    motion, frame_time = _parse_motion(rest, motion_line + 1, next_column, file)
    if scale is None:
        scale, unit = _choose_scale(every_joint, conversion, file)
    else:
        unit = f"× {scale:g} (given)"
    skeleton = _build_skeleton(joints, offsets, scale, conversion)
    clip = _build_clip(joints, columns, offsets, motion, frame_time, scale, conversion, name)
    return BvhAnimation(skeleton, clip, frame_time, tuple(j.channels for j in joints), motion, scale, unit)


def load_bvh(
    path: str | Path, *, scale: float | None = None, axes: str | Any = "y_up", end_sites: bool = True
) -> BvhAnimation:
    r"""Read the BVH file at ``path`` (see :func:`parse_bvh` for the options and errors).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> bvh = pathlib.Path(tempfile.mkdtemp()) / "wave.bvh"
    >>> _ = bvh.write_text(
    ...     "HIERARCHY\nROOT hips\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition"
    ...     " Zrotation Xrotation Yrotation\n JOINT arm\n {\n  OFFSET 10 0 0\n  CHANNELS 1 Zrotation\n"
    ...     "  End Site\n  {\n   OFFSET 10 0 0\n  }\n }\n}\nMOTION\nFrames: 2\nFrame Time: .5\n"
    ...     "0 90 0 0 0 0 0\n0 90 0 0 0 0 45\n"
    ... )
    >>> anim = load_bvh(bvh)
    >>> anim.skeleton.names, anim.clip.duration
    (('hips', 'arm', 'arm_End'), 0.5)
    >>> anim.skeleton.rest_translations[1], anim.unit  # 10 cm → 0.1 m: a two-bone arm is no humanoid
    (array([0.1, 0. , 0. ]), 'centimetres (assumed: not a humanoid, so its height tells no unit)')
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AssetError(f"cannot read the file: {exc.strerror}", file=str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return parse_bvh(text, file=str(path), scale=scale, axes=axes, end_sites=end_sites, name=path.stem)


def _convert_rotations(rotations: FloatArray, conversion: FloatArray) -> FloatArray:
    """Express rotations ``(..., 4)`` in converted axes: ``M R Mᵀ`` as a quaternion."""
    proper = conversion if np.linalg.det(conversion) > 0 else -conversion
    if np.allclose(proper, np.eye(3)):
        return rotations
    c = quat_from_matrix(proper)
    return quat_multiply(quat_multiply(c, rotations), quat_conjugate(c))


def _build_skeleton(joints: list[_Joint], offsets: FloatArray, scale: float, conversion: FloatArray) -> Skeleton:
    rest = scale * offsets @ conversion.T
    parents = np.array([j.parent for j in joints], dtype=np.intp)
    model = np.zeros_like(rest)
    for j, p in enumerate(parents):  # build time: parents precede children
        model[j] = rest[j] + (model[p] if p >= 0 else 0.0)
    inverse_bind = np.tile(np.eye(4), (len(joints), 1, 1))
    inverse_bind[:, :3, 3] = -model
    return Skeleton([j.name for j in joints], parents, rest, None, None, inverse_bind)


def _build_clip(
    joints: list[_Joint],
    columns: list[dict[str, int]],
    offsets: FloatArray,
    motion: FloatArray,
    frame_time: float,
    scale: float,
    conversion: FloatArray,
    name: str,
) -> Clip:
    frames = motion.shape[0]
    if frames == 0:
        return Clip(name, (), len(joints))
    times = np.arange(frames, dtype=np.float64) * frame_time
    channels: list[Channel] = []
    with trusted():  # the motion was checked finite: skip the channels' NaN scans
        channels.extend(_rotation_channels(joints, columns, motion, times, conversion))
        channels.extend(_translation_channels(columns, offsets, motion, times, scale, conversion))
    channels.sort(key=lambda c: (c.target, c.path))
    return Clip(name, tuple(channels), len(joints))


def _rotation_channels(
    joints: list[_Joint], columns: list[dict[str, int]], motion: FloatArray, times: FloatArray, conversion: FloatArray
) -> list[Channel]:
    """One LINEAR rotation channel per joint with rotation channels, one Euler call per order."""
    padded = np.concatenate((motion, np.zeros((motion.shape[0], 1))), axis=1)  # column -1 reads 0
    channels: list[Channel] = []
    for order, (members, table) in _euler_groups(joints, columns).items():
        angles = np.radians(padded[:, np.array(table)])  # (F, Jg, 3) in the joint's listed order
        quats = unflip(_convert_rotations(quat_from_euler(angles, order), conversion), axis=0)
        channels.extend(Channel(j, "rotation", "LINEAR", times, quats[:, k]) for k, j in enumerate(members))
    return channels


def _translation_channels(
    columns: list[dict[str, int]],
    offsets: FloatArray,
    motion: FloatArray,
    times: FloatArray,
    scale: float,
    conversion: FloatArray,
) -> list[Channel]:
    """One LINEAR translation channel per joint with position channels: offset, axes replaced."""
    slots = [
        (j, axis, columns[j][key])
        for j in range(len(columns))
        for axis, key in enumerate(("xposition", "yposition", "zposition"))
        if key in columns[j]
    ]
    if not slots:
        return []
    joint, axis, column = (np.array(v, dtype=np.intp) for v in zip(*slots, strict=True))
    moving, slot = np.unique(joint, return_inverse=True)
    translations = np.repeat(offsets[moving][None], motion.shape[0], axis=0)  # (F, Jm, 3)
    translations[:, slot, axis] = motion[:, column]
    translations = scale * translations @ conversion.T
    return [Channel(int(j), "translation", "LINEAR", times, translations[:, k]) for k, j in enumerate(moving)]
