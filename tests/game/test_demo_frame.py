"""The demo's frame on the animator's staged frame: one full local→model pass per step.

The player advances the animator (blended local pose), runs its IK stage on the animator's own
pose (hips drop, two-bone feet, neck/head aim) and finalizes. Every local→model composition goes
through ``engine.anim.local_to_model._compose``; counting its calls, and whether each ran over the
whole skeleton (``skeleton.plan``) or over a subtree, shows what a step costs. Before the staged
frame the demo composed the whole skeleton four times per step (the animator's update, then three
``model_from_pose`` calls of its own around the IK).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from engine.anim import model_from_pose
from game.demo.player import Player
from game.demo.world import Terrain
from game.model import load_model

STEP = 1.0 / 60.0
# the module, not the function engine.anim.local_to_model that shadows its name on the package
local_to_model_module = importlib.import_module("engine.anim.local_to_model")


@pytest.fixture(scope="module")
def model():
    return load_model()


def test_one_full_composition_per_step_and_subtrees_for_the_ik(model, monkeypatch: pytest.MonkeyPatch) -> None:
    skeleton = model.skeleton
    player = Player(model, Terrain(), position=(-15.0, 10.0))  # on a slope: the feet and hips move
    plans: list[object] = []
    compose = local_to_model_module._compose

    def counting(m, plan, affine, workspace):
        plans.append(plan)
        compose(m, plan, affine, workspace)

    monkeypatch.setattr(local_to_model_module, "_compose", counting)
    look = np.array([3.0, 1.5, 0.0])
    for step in range(90):
        plans.clear()
        player.update(STEP, [0.0, 0.0, 1.0], run=step > 45, jump=False, look_at=look)
        full = [plan for plan in plans if plan is skeleton.plan]
        partial = [plan for plan in plans if plan is not skeleton.plan]
        assert len(full) == 1, step  # the one pass over the whole skeleton
        assert 1 <= len(partial) <= 5, step  # hips, two legs, neck: subtrees only
        assert all(len(plan) < len(skeleton.plan) + 1 for plan in partial)


def test_the_staged_frame_publishes_the_fitted_pose(model) -> None:
    """The player's pose, matrices and scene frame are one consistent frame: the palettes of the model of the pose."""
    player = Player(model, Terrain(), position=(-15.0, 10.0))
    for _ in range(40):
        player.update(STEP, [0.0, 0.0, 1.0], run=False, jump=False, look_at=np.array([3.0, 1.5, 0.0]))
    skeleton = model.skeleton
    expected = model_from_pose(skeleton, player.pose)  # a fresh full composition of the final pose
    np.testing.assert_allclose(player.model_matrices, expected, atol=1e-12)
    np.testing.assert_allclose(player.frame.world[0], expected, atol=1e-12)
    skin = model.scene.skins[0]
    np.testing.assert_allclose(
        player.frame.skin_palettes[0][0], expected[skin.joints] @ skin.inverse_bind_matrices, atol=1e-12
    )
    assert not np.allclose(player.clip_model, player.model_matrices)  # the IK stage moved something
