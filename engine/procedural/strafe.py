"""Directional gait clips for the mannequin: walking and running backwards and sideways (strafing).

The mannequin (:mod:`engine.procedural.mannequin`) walks and runs forwards only; a 2-D blend
space over the character's planar velocity needs gaits in other directions. Each clip here is one
gait cycle like the mannequin's ``walk`` and ``run`` (same period, duty factor, markers
``left_foot_down`` at 0 and ``right_foot_down`` at half the cycle, root motion on ``root``) with
the root travelling along ``heading`` (radians from +Z towards +X, the character's left): 0 is
forwards, ``π`` backwards, ``±π/2`` sideways. During stance each foot stays planted while the
hips move over it; the legs are solved analytically in 3-D (hip roll, then hip and knee pitch in
the rolled plane, the foot kept level).

Examples
--------
>>> from engine.procedural.mannequin import build_skeleton
>>> sorted(build_strafe_clips(build_skeleton()))
['run_back', 'run_left', 'run_right', 'walk_back', 'walk_left', 'walk_right']
"""

from __future__ import annotations

import numpy as np

from engine.anim.clip import Clip
from engine.anim.skeleton import Skeleton
from engine.math._checks import FloatArray
from engine.procedural.mannequin import (
    SHIN,
    THIGH,
    X,
    Y,
    Z,
    _arms_down,
    _Motion,
    _rot,
    _times,
    foot_cycle,
)

#: Headings of the generated clips, radians from forward (+Z) towards the character's left (+X).
HEADINGS = {"back": np.pi, "left": np.pi / 2, "right": -np.pi / 2}

#: (period s, speed m/s, duty, hip height, bob, lift, lean, arm swing): the mannequin's walk and run.
GAITS = {
    "walk": (1.0, 1.2, 0.6, 0.84, 0.01, 0.12, 0.05, 0.35),
    "run": (0.7, 3.0, 0.35, 0.80, 0.03, 0.25, 0.2, 0.8),
}

#: Sideways gaits move at this fraction of the forward speed (shorter strides keep the legs from crossing).
SIDEWAYS_SPEED = 0.7


def strafe_speed(gait: str, heading: float) -> float:
    """Ground speed in m/s of ``gait`` along ``heading``: the forward speed, less when going sideways."""
    return GAITS[gait][1] * (1.0 - (1.0 - SIDEWAYS_SPEED) * abs(float(np.sin(heading))))


def _solve_leg_3d(motion: _Motion, side: str, hip_height: FloatArray, ankle: FloatArray) -> None:
    """Turn hip, knee and ankle so the ankle reaches ``ankle`` = (sideways, height, forward) from under the hip.

    The hip rolls about Z to put the leg's plane through the target, the hip and knee pitch about
    X in that plane (law of cosines, knee bending forwards) and the foot undoes both to stay level.
    """
    drop = (hip_height - 0.05) - ankle[:, 1]
    roll = np.arctan2(ankle[:, 0], drop)
    height = np.hypot(drop, ankle[:, 0])
    forward = ankle[:, 2]
    reach = np.minimum(np.hypot(height, forward), 0.999 * (THIGH + SHIN))
    toward = np.arctan2(-forward, height)
    spread = np.arccos(np.clip((THIGH**2 + reach**2 - SHIN**2) / (2 * THIGH * reach), -1.0, 1.0))
    knee = np.pi - np.arccos(np.clip((THIGH**2 + SHIN**2 - reach**2) / (2 * THIGH * SHIN), -1.0, 1.0))
    hip = toward - spread
    motion.rotate(f"upper_leg_{side}", _rot(X, hip))
    motion.rotate(f"upper_leg_{side}", _rot(Z, roll))
    motion.rotate(f"lower_leg_{side}", _rot(X, knee))
    motion.rotate(f"foot_{side}", _rot(Z, -roll))
    motion.rotate(f"foot_{side}", _rot(X, -(hip + knee)))


def strafe_clip(skeleton: Skeleton, name: str, gait: str, heading: float) -> Clip:
    """One gait cycle of ``gait`` (``"walk"`` or ``"run"``) travelling along ``heading`` radians.

    Parameters
    ----------
    skeleton
        The mannequin's skeleton (:func:`~engine.procedural.mannequin.build_skeleton`).
    name
        The clip's name.
    gait
        ``"walk"`` or ``"run"``: period, speed, duty factor and style of the mannequin's gaits.
    heading
        Direction of travel, radians from forwards (+Z) towards the character's left (+X).
    """
    period, _, duty, hip_height, bob, lift, lean, arm_swing = GAITS[gait]
    speed = strafe_speed(gait, heading)
    times = _times(period)
    motion = _Motion(skeleton, times)
    phase = times / period
    direction = np.array([np.sin(heading), 0.0, np.cos(heading)])
    stride = speed * period * duty  # the distance the root travels while a foot is planted
    height = hip_height + bob * np.cos(4 * np.pi * phase)
    motion.translate("root", speed * times[:, None] * direction)
    motion.translate("hips", np.stack((0 * times, height, 0 * times), axis=-1))
    lean_axis = np.cross(Y, direction)  # lean into the direction of travel
    motion.rotate("spine", _rot(np.tile(lean_axis, (times.size, 1)), np.full_like(times, lean)))
    motion.rotate("chest", _rot(Y, -0.12 * np.cos(2 * np.pi * phase)))
    for side, offset in (("l", 0.0), ("r", 0.5)):
        along, up = foot_cycle(phase - offset, duty, stride, lift)
        ankle = np.stack((along * direction[0], up, along * direction[2]), axis=-1)
        _solve_leg_3d(motion, side, height, ankle)
    _arms_down(motion, arm_swing * np.cos(2 * np.pi * phase), np.full_like(times, 0.3 + 0.6 * (gait == "run")))
    return motion.clip(name, {"left_foot_down": (0.0,), "right_foot_down": (0.5 * period,)})


def build_strafe_clips(skeleton: Skeleton) -> dict[str, Clip]:
    """Walk and run backwards, left and right: ``{"walk_back": ..., "run_left": ..., ...}``."""
    return {
        f"{gait}_{direction}": strafe_clip(skeleton, f"{gait}_{direction}", gait, heading)
        for gait in GAITS
        for direction, heading in HEADINGS.items()
    }
