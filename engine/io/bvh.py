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
  choice other than centimetres warns (:class:`UnitWarning`, an OssaWarning) naming the unit and
  the height it gives; a skeleton that is not a humanoid is read in centimetres.
- Keys: frame ``k`` is at ``k · frame_time`` seconds; the clip's duration is
  ``(frames − 1) · frame_time``. Rotation keys are sign-unflipped along time so that linear
  interpolation between neighbouring frames takes the short way.
- Calibration frames: the CMU database's MotionBuilder- and Daz-friendly conversions (and others)
  put a reference pose (a T-pose) before the capture as frame 0. The reader tells it
  (:attr:`BvhAnimation.calibration_frames`): the root's rotation is exactly zero in frame 0 and the
  body jumps from it into frame 1 by more than :data:`CALIBRATION_JUMP` times the median motion
  from one frame to the next. :attr:`BvhAnimation.clip` keeps every frame, as the file has them
  (``ossa evaluate``, three.js); :attr:`BvhAnimation.captured_clip` starts at the first captured
  frame (``ossa convert``, ``ossa retarget`` and the programs play that).

Malformed files raise :class:`~engine.errors.AssetError` with ``where="line N"``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.humanoid import find_humanoid
from engine.anim.local_to_model import local_to_model
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.anim.units import UNITS, unit_for_height
from engine.errors import AssetError, InvalidInputError, OssaWarning, SkeletonMismatchError
from engine.io.bvh_text import CHANNELS, MOTION, Joint, kept_joints, parse_hierarchy, parse_motion
from engine.math._checks import FloatArray, trusted
from engine.math.quat import quat_conjugate, quat_from_euler, quat_from_matrix, quat_multiply, unflip

#: Named axis conversions: 3×3 matrices taking a file's axes to Ossa's (+Y up, right-handed).
AXES: dict[str, FloatArray] = {
    "y_up": np.eye(3),
    # Z-up, −Y forward (Blender, 3ds Max): (x, y, z) → (x, z, −y), a −90° turn about X.
    "z_up": np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]]),
}

#: The unit read when the skeleton's height cannot tell (not a humanoid).
DEFAULT_UNIT = "centimetres"
#: Rest-pose joint span of a standing adult along up, metres (a 1.5–2 m person), aimed at by
#: :func:`detect_unit`.
STANDING_HEIGHT = 1.6
#: Heights (metres) of a detected figure that are believable for a person; outside, the warning says so.
PLAUSIBLE_HEIGHTS = (1.0, 2.5)
#: Frame 0 is a calibration pose when the body jumps into frame 1 by more than this many times the
#: median jump between later frames (and the root's rotation is exactly zero in frame 0). Measured on
#: the shared and corpus takes: 21-218 where frame 0 is a MotionBuilder or Daz calibration T-pose,
#: 0.1-4.2 where it is captured.
CALIBRATION_JUMP = 10.0
#: Frames after the first that :func:`calibration_frames` compares the first jump with.
CALIBRATION_WINDOW = 600


class UnitWarning(OssaWarning):
    """A BVH file's lengths were read in a unit other than centimetres (the message names it and the height)."""


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
    calibration_frames
        How many frames at the start are a converter's calibration pose, not capture (0 or 1; see
        the module docstring).
    """

    skeleton: Skeleton
    clip: Clip
    frame_time: float
    channel_names: tuple[tuple[str, ...], ...]
    motion: FloatArray
    scale: float = 0.01
    unit: str = DEFAULT_UNIT
    calibration_frames: int = 0

    @property
    def num_frames(self) -> int:
        """Number of frames ``F``."""
        return int(self.motion.shape[0])

    @property
    def captured_clip(self) -> Clip:
        """:attr:`clip` from the first captured frame on, shifted to start at 0 (itself without calibration frames)."""
        if not self.calibration_frames:
            return self.clip
        start = self.calibration_frames * self.frame_time
        with trusted():
            channels = tuple(
                Channel(c.target, c.path, c.interpolation, c.times[self.calibration_frames :] - start,
                        c.values[self.calibration_frames :])
                for c in self.clip.channels
            )  # fmt: skip
        return Clip(self.clip.name, channels, self.clip.num_targets, self.clip.markers)

    @property
    def calibration_note(self) -> str | None:
        """One line saying that frame 0 is a calibration pose and what plays instead; ``None`` without one."""
        if not self.calibration_frames:
            return None
        return "frame 0 is the converter's calibration pose (a T-pose), not capture: the take plays from frame 1"

    @property
    def clips(self) -> tuple[Clip, ...]:
        """``(clip,)``: the same shape of answer as a glTF character's clips."""
        return (self.clip,)

    @property
    def meshes(self) -> tuple[()]:
        """``()``: a BVH file has no meshes."""
        return ()


def _axes_matrix(axes: str | Any) -> FloatArray:
    if isinstance(axes, str):
        if axes not in AXES:
            raise InvalidInputError(f"axes must be one of {sorted(AXES)} or a 3×3 orthogonal matrix, got {axes!r}")
        return AXES[axes]
    matrix = np.asarray(axes, dtype=np.float64)
    if matrix.shape != (3, 3) or not np.allclose(matrix @ matrix.T, np.eye(3), atol=1e-9):
        raise InvalidInputError(f"axes must be a 3×3 orthogonal matrix, got {matrix.tolist()!r}")
    return matrix


def _euler_groups(joints: list[Joint], columns: list[dict[str, int]]) -> dict[str, tuple[list[int], list[list[int]]]]:
    """Group rotating joints by Euler order: ``order -> (joint indices, (Jg, 3) motion columns)``.

    A missing axis points at column ``-1``, which the caller fills with zeros.
    """
    groups: dict[str, tuple[list[int], list[list[int]]]] = {}
    for j, joint in enumerate(joints):
        rot = [c for c in joint.channels if CHANNELS[c.lower()][0] == "rotation"]
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


def _choose_scale(joints: list[Joint], conversion: FloatArray, file: str | None) -> tuple[float, str]:
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
            UnitWarning,
            stacklevel=4,
        )
    return scale, how


def calibration_frames(skeleton: Skeleton, clip: Clip, motion: FloatArray, root_rotations: list[int]) -> int:
    """How many frames at the start of a take are a converter's calibration pose: 0 or 1 (module docstring).

    ``motion`` are the file's numbers ``(F, N)`` and ``root_rotations`` the columns of the root's
    rotation channels. The jumps are root-relative joint displacements (RMS over the joints).
    """
    frames = motion.shape[0]
    if frames < 3 or not root_rotations or np.any(motion[0, root_rotations] != 0.0):
        return 0
    count = min(frames, CALIBRATION_WINDOW + 1)
    times = np.arange(count) * (clip.duration / (frames - 1))
    with trusted():
        model = local_to_model(skeleton, sample(clip, skeleton.rest_pose, times).matrices())[..., :3, 3]
    relative = model - model[:, :1]
    jumps = np.sqrt(np.mean(np.sum(np.diff(relative, axis=0) ** 2, axis=-1), axis=-1))
    return int(jumps[0] > CALIBRATION_JUMP * max(float(np.median(jumps[1:])), 1e-12 * float(np.ptp(relative))))


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
    match = MOTION.search(text)
    every_joint = parse_hierarchy(text if match is None else text[: match.start()], file)
    joints = kept_joints(every_joint, end_sites, file)
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
    motion, frame_time = parse_motion(rest, motion_line + 1, next_column, file)
    if scale is None:
        scale, unit = _choose_scale(every_joint, conversion, file)
    else:
        unit = f"× {scale:g} (given)"
    skeleton = _build_skeleton(joints, offsets, scale, conversion)
    clip = _build_clip(joints, columns, offsets, motion, frame_time, scale, conversion, name)
    root_rotations = [k for c, k in columns[0].items() if CHANNELS[c][0] == "rotation"] if joints else []
    calibration = calibration_frames(skeleton, clip, motion, root_rotations)
    channel_names = tuple(j.channels for j in joints)
    return BvhAnimation(skeleton, clip, frame_time, channel_names, motion, scale, unit, calibration)


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


def _build_skeleton(joints: list[Joint], offsets: FloatArray, scale: float, conversion: FloatArray) -> Skeleton:
    rest = scale * offsets @ conversion.T
    parents = np.array([j.parent for j in joints], dtype=np.intp)
    model = np.zeros_like(rest)
    for j, p in enumerate(parents):  # build time: parents precede children
        model[j] = rest[j] + (model[p] if p >= 0 else 0.0)
    inverse_bind = np.tile(np.eye(4), (len(joints), 1, 1))
    inverse_bind[:, :3, 3] = -model
    return Skeleton([j.name for j in joints], parents, rest, None, None, inverse_bind)


def _build_clip(
    joints: list[Joint],
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
    joints: list[Joint], columns: list[dict[str, int]], motion: FloatArray, times: FloatArray, conversion: FloatArray
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
