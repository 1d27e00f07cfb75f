"""Morph-target weights of the layers playing, mixed per character in the renderer's layout.

A :class:`MorphTargets` lists a scene's morphed mesh instances (those with ``T > 0`` targets), in
instance order, and their default weights: one character's weights are one row ``(W,)``, every
morphed instance's ``T`` weights one after the other, the layout
:class:`~engine.render.SceneRenderer` uploads. Each layer's clip may carry ``"weights"`` channels
(targeting the instance's node); :meth:`MorphTargets.mix` mixes them like poses:

    weights = (max(1 - W, 0) · defaults + Σ_l w_l · clip_l(t_l)) / max(W, 1),   W = Σ_l w_l

over the blended (non-additive) layers with weight, a clip's instance without a channel counting
with its defaults — a total weight below 1 is made up by the defaults, as the rest pose makes up
a pose blend.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.anim.clip import WEIGHTS_PATH, Clip
from engine.anim.sampling import sample_channel
from engine.anim.scene import Scene
from engine.math._checks import FloatArray, IntArray


@dataclass(frozen=True, eq=False)
class MorphTargets:
    """A scene's morphed instances (module docstring).

    Attributes
    ----------
    nodes
        ``(I,)`` the hierarchy node of each morphed instance.
    offsets
        ``(I + 1,)`` where each instance's weights start in a row (the last entry is ``W``).
    defaults
        ``(W,)`` every morphed instance's default weights.
    """

    nodes: IntArray
    offsets: IntArray
    defaults: FloatArray

    @classmethod
    def from_scene(cls, scene: Scene) -> MorphTargets:
        """The morphed instances of ``scene`` (none when no mesh has targets)."""
        morphed = [instance for instance in scene.instances if instance.num_targets]
        sizes = [instance.num_targets for instance in morphed]
        defaults = np.concatenate([instance.weights for instance in morphed]) if morphed else np.zeros(0)
        return cls(
            np.array([instance.node for instance in morphed], dtype=np.intp),
            np.cumsum([0, *sizes]).astype(np.intp),
            defaults,
        )

    @property
    def size(self) -> int:
        """``W``, the weights per character."""
        return int(self.defaults.size)

    def mix(self, clips: list[Clip], times: FloatArray, weights: FloatArray, out: FloatArray) -> FloatArray:
        """The mixed weights of ``clips`` at ``times`` with ``weights`` (both ``(n, C)``) into ``out`` ``(C, W)``."""
        total = weights.sum(axis=0)
        out[...] = np.maximum(1.0 - total, 0.0)[:, None] * self.defaults
        for clip, time, weight in zip(clips, times, weights, strict=True):  # loop over weighted layers
            played = np.zeros_like(out) + self.defaults
            for channel in clip.channels:  # the clip's weights channels (a few)
                if channel.path != WEIGHTS_PATH:
                    continue
                slot = int(np.searchsorted(self.nodes, channel.target))
                if slot < self.nodes.size and self.nodes[slot] == channel.target:
                    played[:, self.offsets[slot] : self.offsets[slot + 1]] = sample_channel(channel, time)
            out += weight[:, None] * played
        out /= np.maximum(total, 1.0)[:, None]
        return out
