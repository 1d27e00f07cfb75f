"""The demo's locomotion graph (game/demo/locomotion.toml) and the function that drives it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.anim import sample
from engine.anim.rootmotion import remove_planar
from engine.cli import main
from engine.math import quat_from_axis_angle
from engine.player import Player as Posing
from engine.procedural.strafe import build_strafe_clips
from engine.render.scene_renderer import scene_records
from game.demo.graph_locomotion import GRAPH, load_locomotion
from game.model import load_model
from tests.helpers import assert_quat_allclose

FORWARD = np.array([0.0, 0.0, 1.0])
LEFT = np.array([1.0, 0.0, 0.0])
FACING = np.array([0.0, 0.0, 0.0, 1.0])
DT = 1.0 / 60.0


@pytest.fixture(scope="module")
def model():
    return load_model()


def test_the_graph_checks_against_the_mannequin(capsys):
    assert main(["graph", "check", str(GRAPH), "--model", "mannequin"]) == 0
    out = capsys.readouterr().out
    assert "states" in out
    assert "warning" not in out
    assert "plays 10 clips" in out


def locomotion_of(model, graph=GRAPH):
    """The model's locomotion graph on a player of its palette records' skeleton, as the demo makes it."""
    records = scene_records(model.scene)
    posing = Posing(records.skeleton, 1, root_motion=model.root if model.root_motion else None)
    return load_locomotion(model, posing, records, graph)


class Player:
    """The player's side: a velocity eased towards the wanted one (half-life 0.12 s, as the demo's speed)."""

    def __init__(self, locomotion):
        self.locomotion, self.velocity = locomotion, np.zeros(3)

    def drive(self, seconds, wanted, facing=FACING, jump=False):
        poses = []
        posing = self.locomotion.runtime.player
        for k in range(round(seconds / DT)):
            self.velocity += (np.asarray(wanted) - self.velocity) * (1.0 - 0.5 ** (DT / 0.12))
            posing.begin_frame(DT)
            self.locomotion.control(self.velocity, facing, grounded=True, jump=jump and k == 0)
            posing.pose()
            poses.append(posing.local_pose[0])
        return poses


def test_a_session_walk_strafe_run_jump(model):
    locomotion = locomotion_of(model)
    assert locomotion.strafes
    player = Player(locomotion)
    poses = player.drive(0.5, np.zeros(3))
    assert locomotion.state == "idle"
    poses += player.drive(1.0, 1.2 * FORWARD)
    assert locomotion.state == "locomotion"
    poses += player.drive(2.0, 0.84 * LEFT)  # facing forward, moving to its left: strafing
    assert locomotion.state == "locomotion"
    assert not locomotion.runtime.in_transition()[0]
    # at the blend space's walk_left point the pose is that clip's, in place (the eased velocity is
    # within 1e-5 of the point after 2 s)
    skeleton = model.skeleton
    clip = build_strafe_clips(skeleton)["walk_left"]
    expected = sample(clip, skeleton.rest_pose, locomotion.runtime.root.phase[:1] * clip.duration)[0]
    expected.translations[0], expected.rotations[0] = remove_planar(expected.translations[0], expected.rotations[0])
    np.testing.assert_allclose(poses[-1].translations, expected.translations, atol=1e-5)
    assert_quat_allclose(poses[-1].rotations, expected.rotations, atol=1e-5)
    poses += player.drive(0.6, 3.0 * FORWARD, jump=True)
    assert locomotion.state == "jump"
    poses += player.drive(0.4, 3.0 * FORWARD)
    assert locomotion.state == "land"
    poses += player.drive(1.0, np.zeros(3))
    assert locomotion.state == "idle"
    rotations = np.stack([p.rotations for p in poses])
    translations = np.stack([p.translations for p in poses])
    np.testing.assert_allclose(translations[:, 0, [0, 2]], 0.0, atol=1e-12)  # played in place
    step = np.degrees(2.0 * np.arccos(np.clip(np.abs(np.sum(rotations[1:] * rotations[:-1], axis=-1)), 0.0, 1.0)))
    assert step.max() < 20.0  # per 1/60 s: no pop anywhere in the session


def test_facing_turns_the_velocity_into_the_character_frame(model):
    locomotion = locomotion_of(model)
    turned = quat_from_axis_angle([0.0, 1.0, 0.0], np.pi / 2)  # facing +X
    Player(locomotion).drive(2.0, 1.2 * LEFT, facing=turned)  # moving along its own forward
    parameters = locomotion.runtime.parameters
    assert parameters.get("vz")[0] == pytest.approx(1.2, rel=1e-3)
    assert parameters.get("vx")[0] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.assets
def test_a_model_without_the_clips_gets_a_graph_of_its_own(shared_assets: Path):
    fox = load_model(shared_assets / "fox" / "glTF-Binary" / "Fox.glb")
    locomotion = locomotion_of(fox)
    assert not locomotion.strafes
    assert locomotion.runtime.graph.played == ("Survey", "Walk", "Run")
    assert locomotion.gait_speed(FORWARD, run=True) == pytest.approx(fox.gaits["Run"].speed)
