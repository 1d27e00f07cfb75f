"""The blending testbed's clips: which to blend, the body masks, and their playback on two animators.

:func:`choose_clips` picks the blended, additive and synced clips from the model's and the
command line's; :func:`body_masks` splits the body in two for the masks (M); :class:`Playback`
plays every clip as an action of two :class:`~engine.animator.Animator` s, with and without the
sync group; :func:`sample_layers` samples clips alone (the side-by-side view's layers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.anim import Clip, CompiledClip, Pose, Skeleton, sample, subtree_mask
from engine.anim.clip import SampledClip
from engine.animator import Action, Animator
from engine.errors import InvalidInputError
from engine.math._checks import FloatArray
from game.model import Model

MASK_MODES = ("full", "upper", "lower")
"""The masks M cycles through: the whole body, the upper body, the lower body."""


def choose_clips(
    clips: Mapping[str, Clip], additive: str | None, sync: str | None, gaits: Sequence[str | None] = ()
) -> tuple[list[str], str | None, list[str]]:
    """Override clip names, the additive clip (or ``None``) and the sync group's clips.

    Without ``--sync`` the group is ``gaits`` (the model's walk and run clips) when both are
    there, else every clip named like a walk or a run. Raises :class:`InvalidInputError` for a
    named clip the model lacks.
    """
    names = list(clips)
    if not names:
        raise InvalidInputError(f"the model has no animation clips; the testbed needs at least one, got {names}")
    wanted = ["lean_look"] if additive is None else [] if additive.lower() == "none" else [additive]
    if additive is not None and wanted and wanted[0] not in names:
        raise InvalidInputError(f"--additive names clip {additive!r}, but the model's clips are {names}")
    additive_name = next((n for n in wanted if n in names), None)
    overrides = [n for n in names if n != additive_name]
    if not overrides:
        raise InvalidInputError(f"--additive {additive_name!r} leaves no clip to blend; the clips are {names}")
    if sync is None and len([g for g in gaits if g in overrides]) >= 2:
        group = [g for g in gaits if g is not None]
    elif sync is None:
        group = [n for n in overrides if any(key in n.lower() for key in ("walk", "run"))]
    else:
        group = [n.strip() for n in sync.split(",") if n.strip()]
        unknown = [n for n in group if n not in overrides]
        if unknown or len(group) < 2:
            raise InvalidInputError(f"--sync needs at least two of the blended clips {overrides}, got {group}")
    return overrides, additive_name, group if len(group) >= 2 else []


def body_masks(skeleton: Skeleton) -> dict[str, FloatArray | None]:
    """Masks ``(J,)`` per :data:`MASK_MODES` (``None`` = every joint).

    The upper body is the subtree of the first joint named like a spine; without one, the
    largest child subtree of the first joint that branches (hips: spine versus legs); when
    nothing branches, everything below the root.
    """
    spine = next((j for j, name in enumerate(skeleton.names) if "spine" in name.lower()), None)
    if spine is None:
        counts = np.bincount(skeleton.parents[skeleton.parents >= 0], minlength=skeleton.num_joints)
        branch = int(np.argmax(counts >= 2))
        children = np.nonzero(skeleton.parents == branch)[0]
        spine = int(max(children, key=lambda c: skeleton.subtree(int(c)).size, default=branch))
    upper = subtree_mask(skeleton, spine)
    return {"full": None, "upper": upper, "lower": 1.0 - upper}


class Playback:
    """The clips as actions of two animators that get every command, one per sync setting.

    ``animators[0]`` plays freely; in ``animators[1]`` the sync clips form a
    :class:`~engine.animator.SyncGroup`. Toggling sync switches which one is shown; running both
    keeps the switch seamless in weights (the :class:`Animator` cannot dissolve a sync group).
    Row ``k`` of :attr:`actions` is clip ``k``; the additive clip, if any, is the last row.
    """

    def __init__(
        self,
        model: Model,
        overrides: list[str],
        additive: str | None,
        sync: list[str],
        root: int | None,
        start: int = 0,
    ) -> None:
        self.animators = tuple(Animator(model.skeleton, root_motion=root) for _ in range(2))
        # The additive layer moves nodes only: its delta clip is made from the node channels.
        self.actions: tuple[list[Action], ...] = tuple(
            [animator.action(model.clips[n]) for n in overrides]
            + ([animator.action(model.scene.clips[additive].nodes, additive=True)] if additive else [])
            for animator in self.animators
        )
        if sync:
            self.animators[1].sync_group(*(self.actions[1][overrides.index(n)] for n in sync))
        self.additive_row = len(overrides) if additive else None
        self.start = start
        """Row of the clip that plays at first and after a reset (the model's reference clip)."""
        self.reset()

    def reset(self) -> None:
        """Every clip playing from its start: :attr:`start`'s at weight 1, the others (and the additive) at 0."""
        for actions in self.actions:
            for k, action in enumerate(actions):
                action.reset().set_weight(1.0 if k == self.start else 0.0)

    def set_weight(self, row: int, weight: float) -> None:
        """Play clip ``row`` at user weight ``weight`` (no fade)."""
        for actions in self.actions:
            actions[row].play().set_weight(weight)

    def crossfade(self, source: int, target: int, duration: float, warp: bool) -> None:
        """Fade ``target`` in from its start to ``source``'s weight while ``source`` fades out."""
        for actions in self.actions:
            weight = float(actions[source].effective_weight[0])
            actions[target].stop().set_weight(weight)
            actions[source].crossfade_to(actions[target], duration, warp=warp)

    def fade_in(self, target: int, duration: float) -> None:
        """Fade ``target`` in from its start to weight 1 (nothing to crossfade from)."""
        for actions in self.actions:
            actions[target].stop().set_weight(1.0).fade_in(duration)

    def set_mask(self, row: int, mask: FloatArray | None) -> None:
        """Restrict clip ``row`` to the joints of ``mask`` (``None``: all joints)."""
        for actions in self.actions:
            actions[row].set_mask(mask)

    def update(self, dt: float) -> None:
        """Advance both animators by ``dt`` seconds of animation time."""
        for animator in self.animators:
            animator.update(dt)


def sample_layers(clips: Sequence[CompiledClip | SampledClip], times: Sequence[float], skeleton: Skeleton) -> Pose:
    """Local poses ``(N, J)`` of ``clips`` sampled at their own ``times``."""
    poses = [sample(clip, skeleton.rest_pose, time) for clip, time in zip(clips, times, strict=True)]
    if not poses:
        return Pose(
            np.zeros((0, skeleton.num_joints, 3)),
            np.zeros((0, skeleton.num_joints, 4)),
            np.zeros((0, skeleton.num_joints, 3)),
        )
    return Pose(
        np.stack([p.translations for p in poses]),
        np.stack([p.rotations for p in poses]),
        np.stack([p.scales for p in poses]),
    )
