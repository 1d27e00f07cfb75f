"""``Player.end_frame``: the pose, the stages and finalize in one call, the same numbers as the three calls.

Without post-blend stages or additive layers, on the compiled kernels, the characters are posed
and composed in one pass, an inertialized or spring transition's offsets added in it; those in a
frozen or dead-blend transition are composed after their blend. The reference is the player itself
called step by step (``pose``, ``run_stages``, ``finalize``): bit for bit, with transitions of
every stage kind in progress, LOD subsets given unsorted and repeated, upload records of both
dtypes, with and without stored model matrices, and a root-motion joint.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from engine.anim import subtree_mask
from engine.backend import BufferFrame
from engine.errors import InvalidInputError
from engine.player import Player
from engine.procedural.mannequin import build_mannequin

BACKENDS = ("numba", "numpy")
COUNT = 9


@pytest.fixture(scope="module")
def mannequin():
    return build_mannequin()


def crowd(mannequin, backend: str, *, additive: bool = False) -> tuple[Player, list[int]]:
    """Walk and run blended, the wave over the upper body (an override of them), optionally an additive lean."""
    player = Player(mannequin.skeleton, COUNT, backend=backend, root_motion="root")
    clips = mannequin.clips
    rows = [player.add_layer(clips[name]) for name in ("walk", "run")]
    upper = subtree_mask(mannequin.skeleton, "spine")
    rows.append(player.add_layer(clips["wave"], mask=upper))
    override = player.add_override(range(rows[0], rows[1] + 1), upper)
    if additive:
        rows.append(player.add_layer(clips["lean_look"], additive=True))
    rng = np.random.default_rng(5)
    player.set_weights(rows, rng.uniform(0.1, 1.0, (len(rows), COUNT)))
    player.set_override_weights(override, player.weights[rows[2]])
    return player, rows


def frames(player: Player, rows: list[int], end, dues) -> list[np.ndarray]:
    """One frame per entry of ``dues`` at 60 FPS, switches of every kind started on the way; each frame's outputs."""
    switches = {1: ([1, 4, 5], "inertialize"), 2: ([2], "dead_blend"), 3: ([6], "spring"), 4: ([7, 4], "frozen")}
    shown = []
    for frame, due in enumerate(dues):
        player.begin_frame(1 / 60)
        player.advance_layers(rows, player.raw_times[rows] + 1 / 60, True)
        if frame in switches:
            characters, kind = switches[frame]
            new = np.random.default_rng(frame).uniform(0.1, 1.0, (len(rows), len(characters)))
            change = functools.partial(player.set_weights, rows, new, characters)
            player.switch(characters, kind, 0.25, change, half_life=0.05)
        shown.extend(end(player, due))
        shown.extend(player.pose_buffer.arrays())
        shown.extend((player.root_motion.translation, player.root_motion.yaw))
    shown.extend((player.model, player.palette))  # every character current, the unposed ones too
    return [np.array(array) for array in shown]


def step_by_step(records, model: bool, player: Player, due) -> list[np.ndarray]:
    player.pose(due)
    player.run_stages()
    palette = player.finalize(records, model=model)
    return [records.copy() if records is not None else palette.to_array()]


def in_one_call(records, model: bool, player: Player, due) -> list[np.ndarray]:
    palette = player.end_frame(due, records, model=model)
    return [records.copy() if records is not None else palette.to_array()]


DUES = [None, np.array([5, 1, 1, 7, 2]), None, np.array([8, 0, 6, 4]), None, np.array([3]), None]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("dtype", "model"), [(None, True), (None, False), (np.float32, False), (np.float32, True), (np.float64, False)]
)
@pytest.mark.parametrize("additive", [False, True])
def test_end_frame_is_pose_stages_finalize_bit_for_bit(mannequin, backend, dtype, model, additive) -> None:
    outputs = []
    for end in (step_by_step, in_one_call):
        player, rows = crowd(mannequin, backend, additive=additive)
        records = None if dtype is None else np.zeros((COUNT, mannequin.skeleton.num_joints, 4, 4), dtype)
        outputs.append(frames(player, rows, functools.partial(end, records, model), DUES))
        assert player.transitions.active().size  # transitions in progress at the end
    for mine, theirs in zip(*outputs, strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_end_frame_composes_only_frozen_and_dead_blend_transitions_apart(mannequin, monkeypatch) -> None:
    """The one pass is taken, inertialized and spring transitions in it: ``finalize``'s own pass composes the others."""
    player, rows = crowd(mannequin, "numba")
    frames(player, rows, functools.partial(in_one_call, None, True), DUES[:3])
    composed = []
    finalize = BufferFrame.finalize

    def spy(self, **given):
        composed.append(np.sort(given["characters"]))
        return finalize(self, **given)

    monkeypatch.setattr(BufferFrame, "finalize", spy)
    due = np.array([0, 1, 2, 3, 4, 5])
    player.begin_frame(1 / 60)
    player.end_frame(due)
    np.testing.assert_array_equal(np.concatenate(composed), player.transitions.blending(due))
    assert 0 < len(composed[0]) < player.transitions.active(due).size  # [2] a dead blend; [1, 4, 5] inertialized


@pytest.mark.parametrize("backend", BACKENDS)
def test_end_frame_runs_the_stages_before_composing(mannequin, backend) -> None:
    """A post-blend stage's edit is in the matrices, as with the three calls."""

    def bend(player: Player) -> None:
        player.pose_buffer.rotations[:, 5] = np.array([0.0, 0.0, np.sin(0.2), np.cos(0.2)])[:, None]  # (4, J, C)
        player.pose_changed(5)

    outputs = []
    for end in (step_by_step, in_one_call):
        player, rows = crowd(mannequin, backend)
        player.stages.append(bend)
        outputs.append(frames(player, rows, functools.partial(end, None, True), DUES[:4]))
    for mine, theirs in zip(*outputs, strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_bad_records_are_refused_before_anything_is_posed(mannequin) -> None:
    player, rows = crowd(mannequin, "numba")
    player.end_frame()
    before = [array.copy() for array in player.pose_buffer.arrays()]
    player.begin_frame(1 / 60)
    player.advance_layers(rows, player.raw_times[rows] + 1 / 60, True)
    joints = mannequin.skeleton.num_joints
    for bad in (np.zeros((COUNT, joints + 1, 4, 4), np.float32), np.zeros((COUNT, joints, 4, 4), np.int32)):
        with pytest.raises(InvalidInputError, match="records must be"):
            player.end_frame(records=bad)
    for mine, theirs in zip(player.pose_buffer.arrays(), before, strict=True):
        np.testing.assert_array_equal(mine, theirs)
