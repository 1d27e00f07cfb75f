"""A procedurally built humanoid mannequin: skeleton, skinned capsule mesh and keyframed clips.

The character faces +Z with +Y up (glTF), stands on ``y = 0`` and measures about 1.75 m.
Its rest pose is a T-pose (all local rotations identity, arms along ±X, its left is +X).

Clips are sampled at 30 keys per second from closed-form motion:

- ``idle``: breathing, 3 s loop.
- ``walk`` (1.2 m/s) and ``run`` (3.0 m/s): one gait cycle each, phase-aligned (left foot down
  at time 0, right foot at half the cycle, both as markers) for sync groups; legs are solved
  analytically so the stance foot stays planted while the root moves forward (root motion on
  the ``root`` joint).
- ``jump``: crouch, take-off, flight, landing.
- ``wave``: the right arm only, for upper-body masked layering.
- ``lean_look``: spine lean and head turn, starting at the rest pose: an additive clip whose
  reference is its first frame.

Examples
--------
>>> from engine.procedural.mannequin import build_mannequin
>>> mannequin = build_mannequin()
>>> mannequin.skeleton.num_joints, sorted(mannequin.clips)
(25, ['idle', 'jump', 'lean_look', 'run', 'wave', 'walk'])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.anim.clip import Channel, Clip, Clips
from engine.anim.local_to_model import local_to_model
from engine.anim.mesh import MeshData
from engine.anim.skeleton import Skeleton
from engine.math._checks import FloatArray
from engine.math.mat import affine_inverse
from engine.math.quat import quat_from_axis_angle, quat_identity, quat_multiply, unflip

KEYS_PER_SECOND = 30
THIGH = SHIN = 0.42
ANKLE_HEIGHT = 0.06
X, Y, Z = np.eye(3)

#: (name, parent, offset from the parent in metres), parents before children.
JOINTS: tuple[tuple[str, str | None, tuple[float, float, float]], ...] = (
    ("root", None, (0.0, 0.0, 0.0)),
    ("hips", "root", (0.0, 0.95, 0.0)),
    ("spine", "hips", (0.0, 0.1, 0.0)),
    ("chest", "spine", (0.0, 0.15, 0.0)),
    ("upper_chest", "chest", (0.0, 0.15, 0.0)),
    ("neck", "upper_chest", (0.0, 0.15, 0.0)),
    ("head", "neck", (0.0, 0.1, 0.0)),
    ("clavicle_l", "upper_chest", (0.04, 0.1, 0.0)),
    ("upper_arm_l", "clavicle_l", (0.14, 0.0, 0.0)),
    ("lower_arm_l", "upper_arm_l", (0.28, 0.0, 0.0)),
    ("hand_l", "lower_arm_l", (0.25, 0.0, 0.0)),
    ("fingers_l", "hand_l", (0.08, 0.0, 0.0)),
    ("clavicle_r", "upper_chest", (-0.04, 0.1, 0.0)),
    ("upper_arm_r", "clavicle_r", (-0.14, 0.0, 0.0)),
    ("lower_arm_r", "upper_arm_r", (-0.28, 0.0, 0.0)),
    ("hand_r", "lower_arm_r", (-0.25, 0.0, 0.0)),
    ("fingers_r", "hand_r", (-0.08, 0.0, 0.0)),
    ("upper_leg_l", "hips", (0.1, -0.05, 0.0)),
    ("lower_leg_l", "upper_leg_l", (0.0, -THIGH, 0.0)),
    ("foot_l", "lower_leg_l", (0.0, -SHIN, 0.0)),
    ("toes_l", "foot_l", (0.0, -0.025, 0.12)),
    ("upper_leg_r", "hips", (-0.1, -0.05, 0.0)),
    ("lower_leg_r", "upper_leg_r", (0.0, -THIGH, 0.0)),
    ("foot_r", "lower_leg_r", (0.0, -SHIN, 0.0)),
    ("toes_r", "foot_r", (0.0, -0.025, 0.12)),
)

#: Capsules of the body: (joint that drives it, end joint or a leaf offset, radius).
SEGMENTS: tuple[tuple[str, str | tuple[float, float, float], float], ...] = (
    ("hips", "spine", 0.13),
    ("spine", "chest", 0.13),
    ("chest", "upper_chest", 0.15),
    ("upper_chest", "neck", 0.14),
    ("neck", "head", 0.05),
    ("head", (0.0, 0.16, 0.02), 0.1),
    ("clavicle_l", "upper_arm_l", 0.05),
    ("upper_arm_l", "lower_arm_l", 0.05),
    ("lower_arm_l", "hand_l", 0.045),
    ("hand_l", "fingers_l", 0.04),
    ("fingers_l", (0.07, 0.0, 0.0), 0.03),
    ("clavicle_r", "upper_arm_r", 0.05),
    ("upper_arm_r", "lower_arm_r", 0.05),
    ("lower_arm_r", "hand_r", 0.045),
    ("hand_r", "fingers_r", 0.04),
    ("fingers_r", (-0.07, 0.0, 0.0), 0.03),
    ("upper_leg_l", "lower_leg_l", 0.075),
    ("lower_leg_l", "foot_l", 0.055),
    ("foot_l", "toes_l", 0.045),
    ("toes_l", (0.0, 0.0, 0.06), 0.035),
    ("upper_leg_r", "lower_leg_r", 0.075),
    ("lower_leg_r", "foot_r", 0.055),
    ("foot_r", "toes_r", 0.045),
    ("toes_r", (0.0, 0.0, 0.06), 0.035),
)

BASE_COLOR = np.array([0.85, 0.55, 0.3, 1.0])


@dataclass(frozen=True)
class Mannequin:
    """The generated character: skeleton, one skinned mesh, clips by name."""

    skeleton: Skeleton
    mesh: MeshData
    clips: Clips


def build_skeleton() -> Skeleton:
    """The mannequin's 25-joint skeleton with inverse bind matrices of its T-pose."""
    names = [name for name, _, _ in JOINTS]
    parents = [-1 if parent is None else names.index(parent) for _, parent, _ in JOINTS]
    offsets = np.array([offset for _, _, offset in JOINTS])
    rest = Skeleton(names, parents, offsets)
    model = local_to_model(rest, rest.rest_pose.matrices())
    return Skeleton(names, parents, offsets, inverse_bind_matrices=affine_inverse(model))


def _smoothstep(edge0: float, edge1: float, x: FloatArray) -> FloatArray:
    s = np.clip((x - edge0) / (edge1 - edge0), 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def build_mesh(skeleton: Skeleton, rings: int = 10, sides: int = 12) -> MeshData:
    """Capsules around the bones; near each joint the weights blend the two bones that meet there."""
    model = local_to_model(skeleton, skeleton.rest_pose.matrices())
    joint_pos = model[:, :3, 3]
    positions: list[FloatArray] = []
    normals: list[FloatArray] = []
    joints: list[np.ndarray] = []
    weights: list[FloatArray] = []
    indices: list[np.ndarray] = []
    angle = np.linspace(0.0, 2.0 * np.pi, sides, endpoint=False)
    for joint_name, end, radius in SEGMENTS:
        j = skeleton.index(joint_name)
        start = joint_pos[j]
        if isinstance(end, str):
            child = skeleton.index(end)
            stop = joint_pos[child]
        else:
            child = -1
            stop = start + np.asarray(end)
        axis = stop - start
        length = float(np.linalg.norm(axis))
        direction = axis / length
        helper = X if abs(direction @ X) < 0.9 else Z
        side_a = np.cross(direction, helper)
        side_a /= np.linalg.norm(side_a)
        side_b = np.cross(direction, side_a)
        # Axial samples: a hemisphere cap (from its pole), the cylinder, the other cap.
        theta = np.linspace(0.0, np.pi / 2, rings // 2, endpoint=False)
        u = np.concatenate(
            (-radius * np.cos(theta), np.linspace(0.0, length, rings), length + radius * np.cos(theta[::-1]))
        )
        ring_radius = np.concatenate((radius * np.sin(theta), np.full(rings, radius), radius * np.sin(theta[::-1])))
        circle = np.cos(angle)[:, None] * side_a + np.sin(angle)[:, None] * side_b
        ring_centre = start + u[:, None] * direction
        points = ring_centre[:, None, :] + ring_radius[:, None, None] * circle[None, :, :]
        closest = start + np.clip(u, 0.0, length)[:, None] * direction
        normal = points - closest[:, None, :]
        normal_len = np.linalg.norm(normal, axis=-1, keepdims=True)
        pole = np.where(u < length / 2, -1.0, 1.0)[:, None, None] * direction
        normal = np.where(normal_len > 1e-9, normal / np.maximum(normal_len, 1e-12), pole)
        s = np.clip(u / length, 0.0, 1.0) if length > 0 else np.zeros_like(u)
        parent = int(skeleton.parents[j])
        w_parent = 0.5 * _smoothstep(0.25, 0.0, s) * (parent >= 0)
        w_child = 0.5 * _smoothstep(0.75, 1.0, s) * (child >= 0)
        w_own = 1.0 - w_parent - w_child
        base = sum(p.shape[0] for p in positions)
        positions.append(points.reshape(-1, 3))
        normals.append(normal.reshape(-1, 3))
        influence = np.zeros((len(u), 4), dtype=np.intp)
        influence[:, 0] = j
        influence[:, 1] = max(parent, 0)
        influence[:, 2] = max(child, 0)
        weight = np.stack((w_own, w_parent, w_child, np.zeros_like(u)), axis=-1)
        joints.append(np.repeat(influence, sides, axis=0))
        weights.append(np.repeat(weight, sides, axis=0))
        ring = np.arange(len(u) - 1)[:, None]
        around = np.arange(sides)[None, :]
        a = base + ring * sides + around
        b = base + ring * sides + (around + 1) % sides
        c = a + sides
        d = b + sides
        indices.append(np.stack((a, c, b, b, c, d), axis=-1).reshape(-1))
    return MeshData(
        positions=np.concatenate(positions),
        indices=np.concatenate(indices).astype(np.uint32),
        normals=np.concatenate(normals),
        joints=np.concatenate(joints),
        weights=np.concatenate(weights),
        base_color=BASE_COLOR,
        name="mannequin",
    )


# --- motion ------------------------------------------------------------------------------------


def _rot(axis: FloatArray, angle: FloatArray) -> FloatArray:
    return quat_from_axis_angle(axis, np.asarray(angle, dtype=float))


class _Motion:
    """Per-frame local rotations (F, J, 4) and translations (F, J, 3), starting at the rest pose."""

    def __init__(self, skeleton: Skeleton, times: FloatArray) -> None:
        self.skeleton = skeleton
        self.times = times
        frames, count = len(times), skeleton.num_joints
        self.rotations = np.broadcast_to(quat_identity((count,)), (frames, count, 4)).copy()
        self.translations = np.broadcast_to(skeleton.rest_translations, (frames, count, 3)).copy()
        self.animated: set[tuple[int, str]] = set()

    def rotate(self, joint: str, q: FloatArray) -> None:
        j = self.skeleton.index(joint)
        self.rotations[:, j] = quat_multiply(q, self.rotations[:, j])
        self.animated.add((j, "rotation"))

    def translate(self, joint: str, translation: FloatArray) -> None:
        j = self.skeleton.index(joint)
        self.translations[:, j] = translation
        self.animated.add((j, "translation"))

    def clip(self, name: str, markers: dict[str, tuple[float, ...]] | None = None) -> Clip:
        channels = []
        for j, path in sorted(self.animated):
            values = unflip(self.rotations[:, j], axis=0) if path == "rotation" else self.translations[:, j]
            channels.append(Channel(j, path, "LINEAR", self.times, values))
        return Clip(name, tuple(channels), self.skeleton.num_joints, markers)


def _times(duration: float) -> FloatArray:
    return np.linspace(0.0, duration, round(duration * KEYS_PER_SECOND) + 1)


def _arms_down(motion: _Motion, swing: FloatArray, elbow: FloatArray) -> None:
    """Lower the T-pose arms by 72° and swing them about X (positive swings the left arm back)."""
    motion.rotate("upper_arm_l", _rot(Z, np.full_like(swing, -np.radians(72))))
    motion.rotate("upper_arm_r", _rot(Z, np.full_like(swing, np.radians(72))))
    motion.rotate("upper_arm_l", _rot(X, swing))
    motion.rotate("upper_arm_r", _rot(X, -swing))
    motion.rotate("lower_arm_l", _rot(Y, -elbow))
    motion.rotate("lower_arm_r", _rot(Y, elbow))


def _solve_leg(motion: _Motion, side: str, hip_height: FloatArray, ankle: FloatArray) -> None:
    """Pitch hip, knee and ankle (about X) so the ankle reaches ``ankle`` = (height, forward).

    Law of cosines in the sagittal plane, knee bending forward; the foot stays level.
    """
    dy = ankle[:, 0] - (hip_height - 0.05)
    dz = ankle[:, 1]
    reach = np.minimum(np.hypot(dy, dz), 0.999 * (THIGH + SHIN))
    toward = np.arctan2(-dz, -dy)  # pitch that points the straight leg at the ankle
    spread = np.arccos(np.clip((THIGH**2 + reach**2 - SHIN**2) / (2 * THIGH * reach), -1.0, 1.0))
    knee = np.pi - np.arccos(np.clip((THIGH**2 + SHIN**2 - reach**2) / (2 * THIGH * SHIN), -1.0, 1.0))
    hip = toward - spread
    motion.rotate(f"upper_leg_{side}", _rot(X, hip))
    motion.rotate(f"lower_leg_{side}", _rot(X, knee))
    motion.rotate(f"foot_{side}", _rot(X, -(hip + knee)))


def foot_cycle(phase: FloatArray, duty: float, stride: float, lift: float) -> tuple[FloatArray, FloatArray]:
    """A foot's travel along the gait direction and its ankle height over one cycle of ``phase``.

    Planted for the first ``duty`` of the cycle, sliding back by ``stride`` under the advancing
    root; then swung forward (smoothstep) and lifted by up to ``lift`` on a half sine.
    """
    local = phase % 1.0
    stance = local < duty
    through_stance = local / duty
    through_swing = _smoothstep(0.0, 1.0, (local - duty) / (1.0 - duty))
    along = np.where(stance, stride * (0.5 - through_stance), stride * (through_swing - 0.5))
    up = np.where(
        stance, ANKLE_HEIGHT, ANKLE_HEIGHT + lift * np.sin(np.pi * np.clip((local - duty) / (1 - duty), 0, 1))
    )
    return along, up


def _gait(
    skeleton: Skeleton,
    name: str,
    period: float,
    speed: float,
    duty: float,
    hip_height: float,
    bob: float,
    lift: float,
    lean: float,
    arm_swing: float,
) -> Clip:
    """One gait cycle: feet planted during stance while the root advances at ``speed``."""
    times = _times(period)
    motion = _Motion(skeleton, times)
    phase = times / period
    stride = speed * period * duty  # distance the root travels while one foot is planted
    height = hip_height + bob * np.cos(4 * np.pi * phase)
    motion.translate("root", np.stack((0 * times, 0 * times, speed * times), axis=-1))
    motion.translate("hips", np.stack((0 * times, height, 0 * times), axis=-1))
    motion.rotate("spine", _rot(X, np.full_like(times, lean)))
    motion.rotate("chest", _rot(Y, -0.12 * np.cos(2 * np.pi * phase)))
    for side, offset in (("l", 0.0), ("r", 0.5)):
        forward, up = foot_cycle(phase - offset, duty, stride, lift)
        _solve_leg(motion, side, height, np.stack((up, forward), axis=-1))
    _arms_down(motion, arm_swing * np.cos(2 * np.pi * phase), np.full_like(times, 0.3 + 0.6 * (speed > 2)))
    return motion.clip(name, {"left_foot_down": (0.0,), "right_foot_down": (0.5 * period,)})


def _idle(skeleton: Skeleton) -> Clip:
    times = _times(3.0)
    motion = _Motion(skeleton, times)
    breath = np.sin(2 * np.pi * times / 3.0)
    motion.translate("hips", np.stack((0 * times, 0.93 + 0.004 * breath, 0 * times), axis=-1))
    for side in "lr":
        _solve_leg(motion, side, 0.93 + 0.004 * breath, np.stack((np.full_like(times, ANKLE_HEIGHT), 0 * times), -1))
    motion.rotate("chest", _rot(X, -0.03 * breath))
    motion.rotate("neck", _rot(X, 0.02 * breath))
    _arms_down(motion, 0.02 * breath, np.full_like(times, 0.15))
    return motion.clip("idle")


def _jump(skeleton: Skeleton) -> Clip:
    times = _times(1.2)
    motion = _Motion(skeleton, times)
    airborne = (times > 0.4) & (times < 0.9)
    flight = np.clip((times - 0.4) / 0.5, 0.0, 1.0)
    rise = np.where(airborne, 4 * 0.45 * flight * (1 - flight), 0.0)
    crouch = 0.18 * (np.exp(-(((times - 0.3) / 0.1) ** 2)) + np.exp(-(((times - 0.95) / 0.1) ** 2)))
    tuck = np.where(airborne, 0.12 * np.sin(np.pi * flight), 0.0)
    height = 0.93 - crouch
    motion.translate("root", np.stack((0 * times, rise, 0 * times), axis=-1))
    motion.translate("hips", np.stack((0 * times, height, 0 * times), axis=-1))
    motion.rotate("spine", _rot(X, 1.2 * crouch))
    for side in "lr":
        _solve_leg(motion, side, height, np.stack((ANKLE_HEIGHT + tuck, 0 * times), axis=-1))
    _arms_down(motion, -2.0 * np.clip(rise, 0, None) + 1.5 * crouch, np.full_like(times, 0.3))
    return motion.clip("jump", {"take_off": (0.4,), "land": (0.9,)})


def _wave(skeleton: Skeleton) -> Clip:
    times = _times(2.0)
    motion = _Motion(skeleton, times)
    motion.rotate("clavicle_r", _rot(Z, np.full_like(times, -0.2)))
    motion.rotate("upper_arm_r", _rot(Z, np.full_like(times, -0.9)))
    motion.rotate("lower_arm_r", _rot(Z, -0.8 + 0.45 * np.sin(2 * np.pi * 2 * times)))
    motion.rotate("hand_r", _rot(Z, -0.2 + 0.2 * np.sin(2 * np.pi * 2 * times)))
    return motion.clip("wave")


def _lean_look(skeleton: Skeleton) -> Clip:
    times = _times(2.0)
    motion = _Motion(skeleton, times)
    amount = np.sin(np.pi * times / 2.0) ** 2  # 0 at both ends: the first frame is the rest pose
    motion.rotate("spine", _rot(Z, 0.25 * amount))
    motion.rotate("chest", _rot(Z, 0.1 * amount))
    motion.rotate("neck", _rot(Y, 0.4 * amount))
    motion.rotate("head", _rot(Y, 0.3 * amount))
    return motion.clip("lean_look")


CLIP_BUILDERS: dict[str, Callable[[Skeleton], Clip]] = {
    "idle": _idle,
    "walk": lambda s: _gait(s, "walk", 1.0, 1.2, 0.6, 0.84, 0.01, 0.12, 0.05, 0.35),
    "run": lambda s: _gait(s, "run", 0.7, 3.0, 0.35, 0.80, 0.03, 0.25, 0.2, 0.8),
    "jump": _jump,
    "wave": _wave,
    "lean_look": _lean_look,
}


def build_mannequin() -> Mannequin:
    """Build the whole character (deterministic: the same arrays every time)."""
    skeleton = build_skeleton()
    clips = Clips({name: build(skeleton) for name, build in CLIP_BUILDERS.items()})
    return Mannequin(skeleton, build_mesh(skeleton), clips)
