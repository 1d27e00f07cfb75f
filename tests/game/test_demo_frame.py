"""The demo's frame is a straight line: controllers → player → IK stage → local→model once → palette records once.

The player's controllers (the locomotion graph, the wave) write their layers, the engine player
poses, the IK stage edits that pose in place (hips drop, two-bone feet, neck/head aim), and one
finalize writes the model matrices and the palette records the renderer uploads as they are.
Counted per step: every local→model composition goes through ``engine.anim.local_to_model._compose``
(whole skeleton, ``skeleton.plan``, or a subtree) or, on the compiled backend, the kernels'
``BufferFrame.finalize`` (the whole skeleton, with the palette unless ``palette=False``); every
other palette goes through ``engine.anim.skinning.skinning_palette``; the scene's own frame
(``Scene.frame``, per-skin palettes again) and pose copies into another animator
(``Animator.advance(base=)``, gone) never run.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from engine.anim import model_from_pose
from engine.anim.scene import Scene
from engine.backend import BufferFrame
from game.demo.player import Player
from game.demo.world import Terrain
from game.model import load_model

STEP = 1.0 / 60.0
# the modules, not the functions engine.anim.local_to_model / skinning that shadow their names on the package
local_to_model_module = importlib.import_module("engine.anim.local_to_model")
compose_module = importlib.import_module("engine.player.compose")


@pytest.fixture(scope="module")
def model():
    return load_model()


def test_one_composition_and_one_palette_per_step(model, monkeypatch: pytest.MonkeyPatch) -> None:
    """Per step: local→model once over the whole skeleton, the IK's subtrees only, one palette, no scene frame."""
    player = Player(model, Terrain(), position=(-15.0, 10.0))  # on a slope: the feet and hips move
    skeleton = player.skeleton
    plans: list[object] = []
    palettes: list[int] = []
    compose = local_to_model_module._compose
    palette = compose_module.skinning_palette
    kernels = BufferFrame.finalize

    def counting(m, plan, affine, workspace):
        plans.append(plan)
        compose(m, plan, affine, workspace)

    def counted_kernels(frame, **kwargs):
        plans.append(skeleton.plan)
        if kwargs.get("palette", True):
            palettes.append(1)
        return kernels(frame, **kwargs)

    def counted_palette(*args, **kwargs):
        palettes.append(1)
        return palette(*args, **kwargs)

    def no_scene_frame(*args, **kwargs):
        raise AssertionError("Scene.frame: the per-skin palettes computed a second time")

    monkeypatch.setattr(local_to_model_module, "_compose", counting)
    monkeypatch.setattr(compose_module, "skinning_palette", counted_palette)
    monkeypatch.setattr(BufferFrame, "finalize", counted_kernels)
    monkeypatch.setattr(Scene, "frame", no_scene_frame)
    look = np.array([3.0, 1.5, 0.0])
    for step in range(90):
        plans.clear()
        palettes.clear()
        player.update(STEP, [0.0, 0.0, 1.0], run=step > 45, jump=False, look_at=look)
        full = [plan for plan in plans if plan is skeleton.plan]
        partial = [plan for plan in plans if plan is not skeleton.plan]
        assert len(full) == 1, step  # the one pass over the whole skeleton
        assert 1 <= len(partial) <= 5, step  # hips, two legs, neck: subtrees only
        assert all(len(plan) < len(skeleton.plan) + 1 for plan in partial)
        assert len(palettes) == 1, step  # the palette records: computed once


def test_the_records_are_the_palettes_of_the_fitted_pose(model) -> None:
    """The player's pose, matrices and palette records are one frame: the palettes of the model of the pose."""
    player = Player(model, Terrain(), position=(-15.0, 10.0))
    for _ in range(40):
        player.update(STEP, [0.0, 0.0, 1.0], run=False, jump=False, look_at=np.array([3.0, 1.5, 0.0]))
    skeleton = player.skeleton
    expected = model_from_pose(skeleton, player.pose)  # a fresh full composition of the final pose
    np.testing.assert_allclose(player.model_matrices, expected, atol=1e-12)
    skin = model.scene.skins[0]
    got = np.swapaxes(player.palette_records[0], -1, -2)  # column-major float32 records
    first = player.records.offsets[0]
    np.testing.assert_allclose(
        got[first : first + skin.num_joints], expected[skin.joints] @ skin.inverse_bind_matrices, atol=1e-5
    )
    assert not np.allclose(player.clip_model, player.model_matrices)  # the IK stage moved something
