"""The programs' model space: legs found by shape, metres in and out of a centimetre armature."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.anim.ik import two_bone_ik
from engine.anim.local_to_model import model_from_pose
from engine.math import transform_points
from game.demo.player import Player
from game.demo.world import Terrain
from tests.game.characters import cached_model


@pytest.mark.assets
def test_the_pirouette_gets_foot_ik_from_the_legs_humanoid_detection_finds(shared_assets: Path) -> None:
    """``lThigh``, ``lShin``, ``lFoot``: no ``left``/``foot`` pair by name, the legs ``ossa retarget`` finds."""
    model = cached_model(shared_assets / "pirouette_bvh" / "pirouette.bvh")
    names = model.skeleton.names
    legs = model.legs()
    assert legs is not None
    assert [[names[j] for j in leg] for leg in legs] == [["lThigh", "lShin", "lFoot"], ["rThigh", "rShin", "rFoot"]]
    player = Player(model, Terrain())
    assert player.legs is not None
    assert not any(note.startswith("foot IK off") for note in player.notes)


@pytest.mark.assets
def test_unnamed_joints_get_their_legs_by_shape(shared_assets: Path) -> None:
    """CesiumMan's joints are unnamed (``node9``) and Z-up below a correction node: the scene's up finds them."""
    model = cached_model(shared_assets / "khronos" / "cesium_man.gltf")
    np.testing.assert_allclose(model.model_up, [0.0, 1.0, 0.0], atol=1e-9)  # the scene's world, the node above
    legs = model.legs()
    assert legs is not None
    assert all(model.skeleton.names[j].startswith("node") for leg in legs for j in leg)
    assert Player(model, Terrain()).legs is not None


@pytest.mark.assets
def test_ik_targets_in_metres_reach_a_centimetre_armature_through_to_model(shared_assets: Path) -> None:
    """The Fox's model space is in centimetres: a target 5 cm over the ankle, in metres, lands 5 cm over it."""
    model = cached_model(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    assert model.scale == pytest.approx(0.01)
    skeleton = model.skeleton
    pose = skeleton.rest_pose
    world = model_from_pose(skeleton, pose)
    hip, knee, ankle = (skeleton.names.index(n) for n in ("b_LeftLeg01_015", "b_LeftLeg02_016", "b_LeftFoot01_017"))
    placed = transform_points(model.frame, world[ankle, :3, 3])  # character frame, metres
    wanted = placed + np.array([0.0, 0.05, 0.0])
    solved = two_bone_ik(skeleton, world, hip, knee, ankle, model.to_model(wanted), [0.0, 0.0, 1.0])
    reached = transform_points(model.frame, model_from_pose(skeleton, solved.apply(pose))[ankle, :3, 3])
    np.testing.assert_allclose(reached, wanted, atol=1e-4)
