"""Root motion in a build: the clip played in place, the root's own keys kept beside it.

:func:`in_place` takes the root's planar travel out of a clip: the root's translation keeps its
height along the up of the root's parent space, its rotation loses the twist about that up
(:func:`~engine.anim.rootmotion.remove_planar`), at the union of the root's key times (LINEAR keys).
:func:`root_track_info` writes the root's source channels (its scale too), exactly, as the JSON value of
``info["root_track"]`` (``docs/clip_library_format.md``), which
:meth:`CompressedClip.root_track <engine.compress.clip.CompressedClip.root_track>` reads back for
the player's keyed root travel.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.additive import restrict_clip
from engine.anim.clip import Channel, Clip
from engine.anim.rootmotion import parent_up, remove_planar
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.math._checks import trusted

#: The channels that carry the root's travel.
TRAVEL_PATHS = ("translation", "rotation")


def root_channels(clip: Clip, root: int) -> tuple[Channel, ...]:
    """The translation and rotation channels of joint ``root`` in ``clip``."""
    return tuple(c for c in clip.channels if c.target == root and c.path in TRAVEL_PATHS)


def in_place(skeleton: Skeleton, clip: Clip, root: int) -> Clip:
    """``clip`` with joint ``root`` in place about the up of its parent space (other channels as they are)."""
    channels = root_channels(clip, root)
    if not channels:
        return clip
    times = np.unique(np.concatenate([c.times for c in channels]))
    pose = sample(restrict_clip(clip, [root]), skeleton.rest_pose.joints([root]), times)
    translations, rotations = remove_planar(pose.translations[:, 0], pose.rotations[:, 0], parent_up(skeleton, root))
    with trusted():
        made = (
            Channel(root, "translation", "LINEAR", times, translations),
            Channel(root, "rotation", "LINEAR", times, rotations),
        )
    kept = tuple(c for c in clip.channels if not (c.target == root and c.path in TRAVEL_PATHS))
    return Clip(clip.name, (*kept, *made), clip.num_targets, clip.markers)


def root_track_info(clip: Clip, root: int) -> dict[str, Any]:
    """The JSON value of ``info["root_track"]``: joint ``root``'s channels of ``clip`` (scale too), keys exact."""
    return {
        "joint": root,
        "channels": [
            {"path": c.path, "interpolation": c.interpolation, "times": c.times.tolist(), "values": c.values.tolist()}
            for c in clip.channels
            if c.target == root and c.path in (*TRAVEL_PATHS, "scale")
        ],
    }
