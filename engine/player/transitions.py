"""The player's transition stage: non-crossfade transitions as one post-blend step over the output pose.

A crossfade is weights (its controller ramps the layers). Every other transition starts from the
player's own output — what it showed at the moment of the switch, with its velocity
(:meth:`engine.player.Player.capture`) — and changes the blended pose afterwards, per character:

============  ==========================================================================
kind          the output during the transition (``e`` seconds in, ``α = e / T``)
============  ==========================================================================
frozen        a snapshot of the output at the switch blended into the layers' pose with
              weights ``(1 - α, α)`` (also a crossfade that interrupts a transition)
inertialize   the layers' pose plus the offset from the source decaying with Bollo's
              quintic (:func:`~engine.anim.inertialization.quintic_decay`); exact at ``T``
spring        the same offset decaying with a critically damped spring (half-life); it ends
              after :data:`SPRING_SETTLE` half-lives (offset below 1e-13 of its start)
dead_blend    the source extrapolated with decaying velocity, blended into the layers' pose
              with ``smoothstep(α)`` (:func:`~engine.anim.inertialization.dead_blend`)
============  ==========================================================================

Root motion follows suit: the planar velocity offset at the switch (source minus target)
decays with the kind's curve ``d`` (1 at the switch, 0 at the end: the quintic
``1 - 10s³ + 15s⁴ - 6s⁵``, ``e^{-yt}(1 + yt)``, ``1 - smoothstep``, ``1 - α``), and its exact
integral over each frame is added to the layers' keyed travel, so an inertialized switch from
running to standing slows the character down over the transition instead of stopping it dead.

Offsets live on the joints some layer animates (per path); the state is per character, so a
new switch replaces the one in progress after capturing the output it produced.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from engine.anim.blending import interpolate_poses
from engine.anim.inertialization import dead_blend, offset_pose, offset_velocity, pose_offsets
from engine.anim.layout import PoseBuffer
from engine.anim.pose import Pose
from engine.anim.velocity import PoseVelocity, blend_velocity
from engine.backend.stage import (
    DEAD_BLEND,
    FROZEN,
    INERTIALIZE,
    NONE,
    SPRING,
    apply_blends,
    character_major,
    character_views,
)
from engine.errors import InvalidInputError
from engine.math._checks import BoolArray, FloatArray, IntArray, shaped, trusted
from engine.player.offsets import Offsets

#: The stage's kinds by name (their codes: :mod:`engine.backend.stage`; ``NONE``: no transition in progress).
KINDS = {"frozen": FROZEN, "inertialize": INERTIALIZE, "spring": SPRING, "dead_blend": DEAD_BLEND}
#: Half-lives after which a spring transition ends: its offset is then below ``1e-13`` of its start.
SPRING_SETTLE = 20.0


@dataclass
class Capture:
    """The output of some characters at one instant, with its velocity (:meth:`engine.player.Player.capture`).

    Attributes
    ----------
    pose, velocity
        ``(K, J)`` local pose and its time derivative.
    root
        ``(K, 3)`` the root's planar velocity in the character's frame: ``(vx, vz, yaw rate)``
        (zeros without a root-motion joint).
    """

    pose: Pose
    velocity: PoseVelocity
    root: FloatArray

    def take(self, index: IntArray | slice) -> Capture:
        """The captures of the entries ``index`` ``(K,)`` (copies; views of a slice)."""
        with trusted():
            return Capture(self.pose[index], self.velocity[index], self.root[index])


def end_time(kind: IntArray, duration: FloatArray, half_life: FloatArray) -> FloatArray:
    """When each transition ends, seconds after its start (a spring after :data:`SPRING_SETTLE` half-lives)."""
    return np.where(kind == SPRING, SPRING_SETTLE * half_life, duration)


def decay_integral(kind: IntArray, elapsed: FloatArray, duration: FloatArray, half_life: FloatArray) -> FloatArray:
    """``∫₀^e d(τ) dτ`` of each kind's root-velocity decay ``d`` (module docstring), seconds."""
    safe = np.where(duration > 0.0, duration, 1.0)
    s = np.clip(elapsed / safe, 0.0, 1.0)
    quintic = s - 2.5 * s**4 + 3.0 * s**5 - s**6
    smooth = s - s**3 + 0.5 * s**4
    linear = s - 0.5 * s * s
    rate = 1.6783469900166608 / np.where(half_life > 0.0, half_life, 1.0)  # SPRING_RATE
    t = np.maximum(elapsed, 0.0)
    spring = (2.0 - np.exp(-rate * t) * (2.0 + rate * t)) / rate
    per_kind = np.select(
        [kind == INERTIALIZE, kind == DEAD_BLEND, kind == FROZEN], [quintic, smooth, linear], default=0.0
    )
    return np.where(kind == SPRING, spring, np.where(duration > 0.0, per_kind * duration, 0.0))


def decay_weight(kind: IntArray, elapsed: FloatArray, duration: FloatArray, half_life: FloatArray) -> FloatArray:
    """``d(e)`` of each kind's root-velocity decay (module docstring); 0 for no transition.

    Each curve is computed for the entries of its kind only (a start captures a few kinds).
    """
    weight = np.zeros(np.shape(kind))
    for code in np.unique(kind).tolist():  # loop over the kinds present (a start: usually one)
        curve = _DECAYS.get(code)
        if curve is None:
            continue
        picked = kind == code
        if picked.all():  # one kind: no gathers
            return curve(elapsed, duration, half_life)
        weight[picked] = curve(elapsed[picked], duration[picked], half_life[picked])
    return weight


def _progress(elapsed: FloatArray, duration: FloatArray) -> FloatArray:
    """``α = e / T`` clipped to ``[0, 1]`` (1 for ``T = 0``)."""
    safe = np.where(duration > 0.0, duration, 1.0)
    return np.where(duration > 0.0, np.clip(elapsed / safe, 0.0, 1.0), 1.0)


def _spring_weight(elapsed: FloatArray, duration: FloatArray, half_life: FloatArray) -> FloatArray:  # noqa: ARG001
    """``e^{-yt}(1 + yt)``."""
    rate = 1.6783469900166608 / np.where(half_life > 0.0, half_life, 1.0)
    t = np.maximum(elapsed, 0.0)
    return np.exp(-rate * t) * (1.0 + rate * t)


def _quintic_weight(elapsed: FloatArray, duration: FloatArray, half_life: FloatArray) -> FloatArray:  # noqa: ARG001
    """``1 - 10s³ + 15s⁴ - 6s⁵``."""
    s = _progress(elapsed, duration)
    return 1.0 - s**3 * (10.0 - 15.0 * s + 6.0 * s * s)


def _smooth_weight(elapsed: FloatArray, duration: FloatArray, half_life: FloatArray) -> FloatArray:  # noqa: ARG001
    """``1 - smoothstep(α)``."""
    s = _progress(elapsed, duration)
    return 1.0 - s * s * (3.0 - 2.0 * s)


def _linear_weight(elapsed: FloatArray, duration: FloatArray, half_life: FloatArray) -> FloatArray:  # noqa: ARG001
    """``1 - α``."""
    return 1.0 - _progress(elapsed, duration)


#: Each stage kind's root-velocity decay ``d(e)`` from ``(elapsed, duration, half_life)``.
_DECAYS = {INERTIALIZE: _quintic_weight, SPRING: _spring_weight, DEAD_BLEND: _smooth_weight, FROZEN: _linear_weight}


class TransitionStage:
    """Every character's non-crossfade transition (see the module docstring).

    Attributes
    ----------
    kind
        ``(C,)`` the transition in progress (:data:`NONE`, :data:`FROZEN`, ...).
    start, duration, half_life
        ``(C,)`` the player clock at the switch, ``T``, and the half-life (spring, dead blend).
    root_offset
        ``(C, 3)`` the planar velocity offset ``(vx, vz, yaw rate)`` at the switch.
    compiled
        Whether :meth:`apply` runs on the compiled kernels (for a character-major pose, as the
        numba player keeps it; any other on numpy) or on numpy; also whether :meth:`begin` and
        :meth:`apply_captured` compute the inertialized and spring offsets on them.
    """

    def __init__(self, characters: int, joints: int, *, compiled: bool = False) -> None:
        self.kind = np.zeros(characters, dtype=np.intp)
        self.start = np.zeros(characters)
        self.duration = np.zeros(characters)
        self.half_life = np.ones(characters)
        self.root_offset = np.zeros((characters, 3))
        self.joints = joints
        self.compiled = compiled
        # snapshots of frozen and dead-blend switches: pose rows t, q, s and velocity rows v, ω, ṡ per character
        self._snapshot_rows = np.zeros((characters, 10, joints))
        self._snapshot_rows[:, 6] = 1.0
        self._snapshot_velocity = np.zeros((characters, 9, joints))
        t, r, sc = (self._snapshot_rows[:, a:b].transpose(1, 2, 0) for a, b in ((0, 3), (3, 7), (7, 10)))
        self._snapshot = PoseBuffer(t, r, sc, (characters,))
        self._offsets = Offsets(characters)

    def saved(self) -> tuple[Any, ...]:
        """Every character's transition as it is now, copied: what :meth:`restore` puts back."""
        arrays = (self.kind, self.start, self.duration, self.half_life, self.root_offset)
        snapshots = (self._snapshot_rows, self._snapshot_velocity)
        return tuple((array, array.copy()) for array in (*arrays, *snapshots)), self._offsets.saved()

    def restore(self, saved: tuple[Any, ...]) -> None:
        """Put back the transitions :meth:`saved` copied (in place: the same arrays, what a kernel was compiled for)."""
        arrays, offsets = saved
        for array, copy in arrays:
            array[...] = copy
        self._offsets.restore(offsets)

    def active(self, characters: IntArray | None = None) -> IntArray:
        """Indices of the characters (of ``characters``; ``None``: all) with a transition in progress, ascending."""
        return np.flatnonzero(_of(self.kind != NONE, characters))

    def idle(self, characters: IntArray | None = None) -> IntArray:
        """Indices of the characters (of ``characters``; ``None``: all) with no transition in progress, ascending."""
        return np.flatnonzero(_of(self.kind == NONE, characters))

    def animate(self, animated: dict[str, IntArray]) -> None:
        """The joints each path's layers animate (offsets are kept there only)."""
        self._offsets.animate(animated)

    def begin(
        self,
        characters: IntArray,
        kind: str,
        duration: Any,
        half_life: Any,
        source: Capture,
        target: Capture,
        at: Any,
        threads: int = 1,
    ) -> None:
        """Start ``kind`` for ``characters`` ``(K,)`` at clock ``at``, from ``source`` to ``target`` (captures).

        ``threads``: of the compiled offsets' start (blocks of characters; the same numbers).
        """
        code = KINDS.get(kind)
        if code is None:
            raise InvalidInputError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        count = characters.size
        length = shaped(np.asarray(duration, dtype=np.float64), (count,))
        half = shaped(np.asarray(half_life, dtype=np.float64), (count,))
        if not (np.all(length >= 0.0) and np.all((half > 0.0) & (half < np.inf))):  # NaN fails both
            raise InvalidInputError(f"duration must be >= 0 and half_life > 0 seconds, got {length} and {half}")
        self.kind[characters] = code
        self.start[characters] = at
        self.duration[characters] = length
        self.half_life[characters] = half
        moving = np.zeros((count, 3)) if code == FROZEN else source.root
        self.root_offset[characters] = moving - target.root
        if code in (FROZEN, DEAD_BLEND):
            rows = PoseBuffer.from_pose(source.pose)
            for mine, theirs in zip(self._snapshot.arrays(), rows.arrays(), strict=True):
                mine[..., characters] = theirs
            for k, name in enumerate(("linear", "angular", "scaling")):
                self._snapshot_velocity[characters, 3 * k : 3 * k + 3] = getattr(source.velocity, name).transpose(
                    0, 2, 1
                )
            return
        lengths = length if code == INERTIALIZE else half
        if self.compiled:
            self._offsets.start_compiled(
                code, characters, (source.pose, source.velocity), (target.pose, target.velocity), lengths, threads
            )
            return
        offsets, rates = pose_offsets(source.pose, source.velocity, target.pose, target.velocity)
        self._offsets.store(code, characters, offsets, rates, lengths)

    def stop(self, characters: Any) -> None:
        """End the transitions of ``characters`` now (a cut: the layers' pose from here on)."""
        self.kind[characters] = NONE

    def expire(self, clock: FloatArray) -> None:
        """End the transitions whose time is up at ``clock`` ``(C,)``."""
        busy = self.kind != NONE
        if busy.any():
            done = busy & (clock - self.start >= end_time(self.kind, self.duration, self.half_life))
            self.kind[done] = NONE

    def travel(self, characters: Any, begin: FloatArray, end: FloatArray) -> FloatArray:
        """``(K, 3)`` the root correction ``(x, z, yaw)`` between clock ``begin`` and ``end`` of ``characters``."""
        kind, start = self.kind[characters], self.start[characters]
        duration, half = self.duration[characters], self.half_life[characters]
        spent = decay_integral(kind, end - start, duration, half) - decay_integral(kind, begin - start, duration, half)
        return self.root_offset[characters] * spent[:, None]

    def passing(self, characters: IntArray | None = None) -> IntArray:
        """Indices of the characters (of ``characters``; ``None``: all) whose stage the pass runs, ascending.

        Every character but those in a frozen or dead-blend transition (:meth:`blending`, :meth:`in_pass`).
        """
        return np.flatnonzero(_of(~_blends(self.kind), characters))

    def blending(self, characters: IntArray | None = None) -> IntArray:
        """Indices of the characters (of ``characters``; ``None``: all) in a frozen or dead blend, ascending."""
        return np.flatnonzero(_of(_blends(self.kind), characters))

    def in_pass(self, clock: FloatArray) -> tuple[Any, ...]:
        """The inertialized and spring offsets at player ``clock`` as the compiled pass adds them.

        The ``stage`` of :meth:`engine.backend.BufferFrame.sample_blend`: each character's offsets
        added between its blend and its compose, the numbers of the compiled :meth:`apply`; the
        frozen and dead blends are not in it (:meth:`apply_blends`).
        """
        return self._offsets.in_pass(clock, (self.start, self.kind, self.duration))

    def apply_blends(self, pose: PoseBuffer, clock: FloatArray, characters: IntArray) -> None:
        """The frozen and dead-blend transitions of ``characters`` (only those) on a compiled ``pose``, in place."""
        if characters.size:
            snapshots = (self._snapshot_rows, self._snapshot_velocity)
            timing = (self.duration, self.half_life)
            elapsed = clock[characters] - self.start[characters]
            apply_blends(characters, elapsed, self.kind[characters], timing, snapshots, pose)

    def apply(self, pose: PoseBuffer, clock: FloatArray, characters: IntArray, threads: int = 1) -> None:
        """The stage on ``pose`` (the layers' blend, in place) for ``characters`` with a transition in progress.

        ``threads``: of the compiled offsets (blocks of characters; the same numbers).
        """
        if self.compiled and character_major(pose):
            transitions = (self.start, self.kind, self.duration)
            views = character_views(pose)
            if self._offsets.apply_compiled(characters, clock, transitions, views, threads):  # and some blends
                self.apply_blends(pose, clock, self.blending(characters))
            return
        elapsed = clock[characters] - self.start[characters]
        kinds = self.kind[characters]
        for code in (INERTIALIZE, SPRING):
            picked = kinds == code
            if picked.any():
                self._offsets.apply(code, characters[picked], pose, elapsed[picked])
        for code in (FROZEN, DEAD_BLEND):
            picked = np.flatnonzero(kinds == code)
            if not picked.size:
                continue
            members = characters[picked]
            live = _gather(pose, members)
            done, _ = self._blend(code, members, live, None, elapsed[picked])
            rows = PoseBuffer.from_pose(done)
            for mine, theirs in zip(pose.arrays(), rows.arrays(), strict=True):
                mine[..., members] = theirs

    def apply_captured(self, capture: Capture, characters: IntArray, at: FloatArray, threads: int = 1) -> None:
        """The stage on a :class:`Capture` of ``characters`` at player clock ``at`` ``(K,)`` (pose and velocity).

        ``threads``: of the compiled offsets (blocks of rows; the same numbers).
        """
        codes: tuple[int, ...] = (INERTIALIZE, SPRING, FROZEN, DEAD_BLEND)
        kinds = self.kind[characters]
        if self.compiled:  # the offsets on the kernels, in place, with the root's
            transitions = (self.start, self.kind, self.duration, self.half_life, self.root_offset)
            if not self._offsets.offset_compiled(characters, at, transitions, capture, threads):
                return  # every row decayed there, or in no transition
            codes = (FROZEN, DEAD_BLEND)
            busy = np.flatnonzero(_blends(kinds))
        else:
            busy = np.flatnonzero(kinds != NONE)
        if not busy.size:
            return
        elapsed = at - self.start[characters]
        members, spent = characters[busy], elapsed[busy]
        for code in codes:
            picked = np.flatnonzero(kinds[busy] == code)
            if not picked.size:
                continue
            part, part_velocity = capture.pose[busy[picked]], capture.velocity[busy[picked]]
            if code in (INERTIALIZE, SPRING):
                offsets, rates = self._offsets.full(code, members[picked], spent[picked], self.joints)
                done, done_velocity = offset_pose(part, offsets), offset_velocity(part, part_velocity, offsets, rates)
            else:
                done, maybe = self._blend(code, members[picked], part, part_velocity, spent[picked])
                assert maybe is not None
                done_velocity = maybe
            for field in fields(Pose):
                getattr(capture.pose, field.name)[busy[picked]] = getattr(done, field.name)
            for field in fields(PoseVelocity):
                getattr(capture.velocity, field.name)[busy[picked]] = getattr(done_velocity, field.name)
        weight = decay_weight(kinds[busy], spent, self.duration[members], self.half_life[members])
        capture.root[busy] += self.root_offset[members] * weight[:, None]

    def _blend(
        self, code: int, members: IntArray, live: Pose, live_velocity: PoseVelocity | None, elapsed: FloatArray
    ) -> tuple[Pose, PoseVelocity | None]:
        """A frozen or dead blend of ``members``' snapshots into ``live`` ``(K, J)`` (and their velocity)."""
        snapshot = _gather(self._snapshot, members)
        with trusted():
            rows = self._snapshot_velocity[members].transpose(0, 2, 1)
            snapshot_velocity = PoseVelocity(rows[..., 0:3], rows[..., 3:6], rows[..., 6:9])
        duration = self.duration[members]
        if code == DEAD_BLEND:
            return dead_blend(
                snapshot, snapshot_velocity, live, elapsed, duration, self.half_life[members], live_velocity
            )
        safe = np.where(duration > 0.0, duration, 1.0)
        alpha = np.where(duration > 0.0, np.clip(elapsed / safe, 0.0, 1.0), 1.0)
        pose = interpolate_poses(snapshot, live, alpha, method="nlerp")
        if live_velocity is None:
            return pose, None
        slope = np.where(alpha < 1.0, 1.0 / safe, 0.0)
        still = PoseVelocity.zeros(live.shape)
        velocity = blend_velocity(
            [snapshot, live],
            [still, live_velocity],
            np.stack((1.0 - alpha, alpha)),
            weight_rates=np.stack((-slope, slope)),
        )
        return pose, velocity


def _gather(buffer: PoseBuffer, members: IntArray) -> Pose:
    """Characters ``members`` of a single-layer buffer as a C-ordered pose ``(K, J)``."""
    arrays = [np.ascontiguousarray(array[..., members].transpose(2, 1, 0)) for array in buffer.arrays()]
    with trusted():
        return Pose(*arrays)


def _blends(kinds: IntArray) -> BoolArray:
    """Where ``kinds`` are frozen or dead-blend transitions: a blend with a snapshot, not offsets."""
    return (kinds == FROZEN) | (kinds == DEAD_BLEND)


def _of(flags: BoolArray, characters: IntArray | None) -> BoolArray:
    """``flags`` ``(C,)`` where ``characters`` (``None``: all) are: a mask, not a sorted intersection (each once)."""
    if characters is None:
        return flags
    chosen = np.zeros_like(flags)
    chosen[characters] = True
    return flags & chosen
