"""A file of clips without a mesh, opened alone: each skin drawn as bones, an instance at a node of its own."""

from __future__ import annotations

import numpy as np

from engine.anim import Skeleton, model_from_pose
from engine.anim.scene import Scene, SceneSkin
from game.model import with_bones


def chain(count: int) -> Skeleton:
    """``count`` joints in a chain, each 1 m above its parent."""
    return Skeleton(
        [f"j{k}" for k in range(count)], [k - 1 for k in range(count)], np.tile([0.0, 1.0, 0.0], (count, 1))
    )


def skin(skeleton: Skeleton, joints: list[int]) -> SceneSkin:
    """A skin of ``joints`` bound at the rest pose."""
    return SceneSkin("", np.array(joints), np.linalg.inv(model_from_pose(skeleton, skeleton.rest_pose)[joints]))


def test_skins_of_the_same_joints_get_a_node_each() -> None:
    skeleton = chain(3)
    scene = with_bones(Scene(skeleton, (skin(skeleton, [1, 2]), skin(skeleton, [1, 2])), ()))
    assert [(i.node, i.skin, i.name) for i in scene.instances] == [(1, 0, "bones of skin 0"), (2, 1, "bones of skin 1")]
    for instance in scene.instances:
        (bones,) = instance.primitives
        assert bones.positions.shape == (24, 3)  # j1 → j2
        np.testing.assert_array_equal(bones.joints[:, 0], 0)


def test_skins_without_a_bone_or_a_free_node_are_not_drawn() -> None:
    skeleton = chain(2)
    skins = (skin(skeleton, [1]), *(skin(skeleton, [0, 1]) for _ in range(3)))  # one joint: no bone
    scene = with_bones(Scene(skeleton, skins, ()))
    assert [(i.node, i.skin) for i in scene.instances] == [(0, 1), (1, 2)]  # skin 3: both nodes taken
    assert with_bones(Scene(skeleton, (skin(skeleton, [1]),), ())).instances == ()
