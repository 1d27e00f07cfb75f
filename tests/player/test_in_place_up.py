"""The compiled kernels play the root in place about its parent space's up, as the numpy jobs do.

Reference: the numpy backend (engine.anim.rootmotion.remove_planar with the root's parent up),
to 1e-12, on a root below a tilted correction node whose up is neither +Y nor an axis.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation

from engine.anim import Skeleton
from engine.anim.clip import Channel, Clip
from engine.anim.rootmotion import parent_up
from engine.player import Player


def tilted_walk() -> tuple[Skeleton, Clip, Clip]:
    """A root below a node turned 70° about an oblique axis, two clips turning and travelling differently."""
    correction = Rotation.from_rotvec(np.radians(70.0) * np.array([1.0, 0.3, -0.5]) / np.sqrt(1.34)).as_quat()
    rest = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.5, 0.0]])
    skeleton = Skeleton(
        ["corrector", "hips", "spine"], [-1, 0, 1], rest, rest_rotations=[correction, [0, 0, 0, 1], [0, 0, 0, 1]]
    )
    times = np.linspace(0.0, 1.0, 9)
    clips = []
    for k, (turn, swing) in enumerate(((2.5, 0.3), (-1.2, 0.6))):
        path = np.stack([times * (1 + k), 0.1 * np.sin(6 * times), 1.0 + 0.05 * np.cos(5 * times)], axis=1)
        rotations = Rotation.from_rotvec(np.outer(turn * times, parent_up(skeleton, 1))) * Rotation.from_rotvec(
            np.outer(swing * np.sin(4 * times), [1.0, 0.0, 0.0])
        )
        channels = (
            Channel(1, "translation", "LINEAR", times, path),
            Channel(1, "rotation", "LINEAR", times, rotations.as_quat()),
        )
        clips.append(Clip(f"walk{k}", channels, 3))
    return skeleton, clips[0], clips[1]


def test_both_backends_play_the_root_in_place_about_its_parent_up() -> None:
    skeleton, first, second = tilted_walk()
    up = parent_up(skeleton, 1)
    assert abs(up[1]) < 0.9  # neither +Y nor -Y
    count = 7
    poses = []
    for backend in ("numba", "numpy"):
        player = Player(skeleton, count, backend=backend, root_motion="hips")
        rows = [player.add_layer(first), player.add_layer(second)]
        player.set_weights(rows, np.stack([np.linspace(0.1, 0.9, count), np.linspace(0.8, 0.2, count)]))
        player.set_time(rows, np.linspace(0.0, 0.95, count))
        player.pose()
        poses.append((player.local_pose.translations[:, 1], player.local_pose.rotations[:, 1]))
    for compiled, reference in zip(*poses, strict=True):
        np.testing.assert_allclose(compiled, reference, rtol=0.0, atol=1e-12)
    alone = Player(skeleton, count, backend="numba", root_motion="hips")
    row = alone.add_layer(first)
    alone.set_weights(row, 1.0)
    alone.set_time(row, np.linspace(0.0, 0.95, count))
    alone.pose()
    height = alone.local_pose.translations[:, 1]
    np.testing.assert_allclose(height - (height @ up)[:, None] * up, 0.0, atol=1e-12)  # along up only
