"""Root motion in the player: each layer's root track, the exact per-frame deltas, their weighted sum.

The math (planar transforms, the delta over loops) is :mod:`engine.anim.rootmotion`. Here each
layer keeps its clip's root channels as a one-joint compiled clip with its planar transforms at
the clip's ends (:class:`RootTrack`); a frame's start and end raw times give each layer's exact
keyed delta (:meth:`RootTrack.delta`), and :class:`RootSum` averages them with the layers'
weights at the root joint — the travel of the frame, the same at any frame rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.anim.additive import restrict_clip
from engine.anim.clip import Channel, Clip, SampledClip
from engine.anim.compiled_clip import CompiledClip, compile_clip
from engine.anim.events import Loop, clip_time
from engine.anim.pose import Pose
from engine.anim.rootmotion import UP, Planar, planar_from_root, root_motion_delta
from engine.anim.sampling import sample
from engine.math._checks import FloatArray, IntArray, trusted

if TYPE_CHECKING:
    from engine.player.layers import Layer


@dataclass(frozen=True)
class RootMotion:
    """The root's planar travel during the last frame, per character.

    ``translation`` ``(C, 3)`` is the travel across up in the character's frame at the start of the
    frame (``(x, 0, z)`` when up is +Y: the root joint's parent space, in which it is measured,
    may have another up, :func:`engine.anim.rootmotion.parent_up`) and ``yaw`` ``(C,)`` the turn
    about up in radians: move the character by its current heading applied to ``translation``,
    then add ``yaw`` to its heading.
    """

    translation: FloatArray
    yaw: FloatArray

    @classmethod
    def still(cls, characters: int) -> RootMotion:
        """No travel for ``characters`` characters."""
        return cls(np.zeros((characters, 3)), np.zeros(characters))


@dataclass(frozen=True, eq=False)
class RootTrack:
    """The root joint's channels of one clip, as a one-joint clip, and its end transforms."""

    compiled: CompiledClip
    rest: Pose
    first: Planar
    last: Planar
    up: tuple[float, float, float] = UP

    @classmethod
    def of(cls, clip: Clip | SampledClip, rest: Pose, root: int, up: tuple[float, float, float] = UP) -> RootTrack:
        """The track of joint ``root`` in ``clip`` (rest pose ``rest`` ``(J,)``, ``up`` of the root's parent space).

        A compressed clip's root: the root's own keys stored beside it by ``ossa build``
        (:meth:`~engine.anim.clip.SampledClip.root_track`), else its root sampled at its sample
        times into LINEAR keys (:func:`root_keys`).
        """
        if isinstance(clip, Clip):
            keys = restrict_clip(clip, [root])
        else:  # a compressed clip: the keys a build stored beside it, or its root sampled
            keys = clip.root_track(root) or root_keys(clip, rest, root)
        compiled = compile_clip(keys)
        root_rest = rest.joints([root])
        ends = sample(compiled, root_rest, np.array([0.0, clip.duration]))
        planar = planar_from_root(ends.translations[:, 0], ends.rotations[:, 0], up)
        return cls(compiled, root_rest, Planar(planar.yaw[0], planar.w[0]), Planar(planar.yaw[1], planar.w[1]), up)

    def planar(self, times: FloatArray) -> Planar:
        """Planar transforms of the root at clip times ``times``."""
        pose = sample(self.compiled, self.rest, times)
        return planar_from_root(pose.translations[..., 0, :], pose.rotations[..., 0, :], self.up)

    def delta(self, start: FloatArray, times: FloatArray, wraps: FloatArray, duration: float, loop: Loop) -> Planar:
        """The planar delta ``(K,)`` of a frame that moved the raw time from ``start`` to clip ``times``.

        ``wraps`` counts the loops crossed (:func:`~engine.anim.events.wrap_raw`); they add whole
        loops of travel in :attr:`Loop.REPEAT` only. The yaw is wrapped to ``[-π, π)``.
        """
        begin_time = clip_time(start, duration, loop)
        both = self.planar(np.concatenate((begin_time, times)))
        count = start.shape[0]
        begin = Planar(both.yaw[:count], both.w[:count])
        finish = Planar(both.yaw[count:], both.w[count:])
        loops = wraps if loop == Loop.REPEAT else 0.0
        delta = root_motion_delta(begin, finish, self.first, self.last, loops)
        return Planar((delta.yaw + np.pi) % (2.0 * np.pi) - np.pi, delta.w)


def root_keys(clip: SampledClip, rest: Pose, root: int) -> Clip:
    """Joint ``root`` of a compressed clip as a one-joint clip: its pose at every sample time, LINEAR keys.

    Between samples the keys slerp where the compressed clip lerps and normalises: the two differ
    by the cube of the angle between samples (below 1e-6 rad a frame of 30 Hz mocap).
    """
    times = clip.key_times
    pose = sample(clip, rest, times).joints([root])
    with trusted():
        channels = tuple(
            Channel(0, path, "LINEAR", times, values[:, 0])
            for path, values in zip(("translation", "rotation", "scale"), pose.arrays(), strict=True)
        )
    return Clip(clip.name, channels, 1)


class RootSum:
    """The weighted sum of one frame's layer deltas, per character (reset at the start of a frame).

    :meth:`add` takes each layer's delta with its weight at the root joint; :meth:`motion`
    divides by ``max(Σ weight, threshold)`` (the rest pose, which fills in below the threshold,
    does not travel), as the blend weighs the poses.
    """

    def __init__(self, characters: int, up: Any = UP) -> None:
        self.up = np.asarray(up, dtype=np.float64)
        """The root's parent-space up: the travel is measured across it."""
        self.yaw = np.zeros(characters)
        self.w = np.zeros(characters, dtype=np.complex128)
        self.weight = np.zeros(characters)

    def reset(self) -> None:
        """Start a frame: no travel yet."""
        self.yaw[:] = 0.0
        self.w[:] = 0.0
        self.weight[:] = 0.0

    def add(self, characters: IntArray | slice, delta: Planar, weight: FloatArray) -> None:
        """Add one layer's ``delta`` ``(K,)`` at root weight ``weight`` ``(K,)`` for ``characters``."""
        self.yaw[characters] += weight * delta.yaw
        self.w[characters] += weight * delta.w
        self.weight[characters] += weight

    def add_layers(
        self, layers: list[Layer], characters: IntArray, at_root: FloatArray, moved: tuple[FloatArray, ...]
    ) -> None:
        """Add each layer's exact keyed delta of ``characters`` ``(K,)``, weighted by ``at_root`` ``(n, K)``.

        ``moved`` = the layers' raw times before, after and the whole loops crossed ``(n, K)``.
        """
        start, raw, wraps = moved
        for k, layer in enumerate(layers):  # loop over the moved layers
            if layer.root is None:
                continue
            who = np.flatnonzero(at_root[k] > 0.0)
            if not who.size:
                continue
            times = clip_time(raw[k, who], layer.duration, layer.loop)
            delta = layer.root.delta(start[k, who], times, wraps[k, who], layer.duration, layer.loop)
            self.add(characters[who], delta, at_root[k, who])

    def motion(self, threshold: float) -> RootMotion:
        """The frame's :class:`RootMotion`."""
        norm = np.maximum(self.weight, threshold)
        return RootMotion(Planar(self.yaw / norm, self.w / norm).translation_in(self.up), self.yaw / norm)
