"""The programs' model space: legs found by shape, metres into a centimetre armature."""

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
    player = Player(model, Terrain())
    names = model.skeleton.names
    assert player.legs is not None
    assert [[names[j] for j in (leg.start, leg.mid, leg.end)] for leg in player.legs] == [
        ["lThigh", "lShin", "lFoot"],
        ["rThigh", "rShin", "rFoot"],
    ]
    assert not any(note.startswith("foot IK off") for note in player.notes)


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
