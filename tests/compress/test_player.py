"""Compressed clips in the player: the Animator and the graph play them from their bits, fused or numpy.

The fused kernels equal the numpy jobs, which sample the
compressed clips through ``sample`` (the reference decoder), to 1e-12 at 30/60/144 FPS and random
dt, crossfades and root motion included; the same scenario on the raw clips moves every joint
within the compression tolerance (0.01 cm at 3 cm shells: joint positions within 0.02 cm), and
the root's travel too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from engine.anim import Clip
from engine.animator import Animator
from engine.errors import InvalidInputError
from engine.graph import GraphRuntime, bind_graph, parse_graph
from tests.compress.conftest import Walk

COUNT = 20
FRAMES = 30
STEPS = {"30fps": 1 / 30, "60fps": 1 / 60, "144fps": 1 / 144, "random-dt": None}
POSITION = 2e-4  # metres: twice the default tolerance (it bounds points 3 cm from each joint)


def steps(step: float | None) -> np.ndarray:
    if step is not None:
        return np.full(FRAMES, step)
    return np.random.default_rng(7).uniform(0.0, 0.05, (FRAMES, COUNT))


def animate(walking: Walk, looping: Walk, raw: bool, backend: str, step: float | None) -> list[dict[str, Any]]:
    """A walk and a loop, crossfaded on every other character, root motion on the hips, frame by frame."""
    walk, loop = (walking.clip, looping.clip) if raw else (walking.compressed, looping.compressed)
    animator = Animator(walking.skeleton, COUNT, backend=backend, root_motion=0)
    walking_action = animator.action(walk).play()
    looping_action = animator.action(loop).play().set_weight(np.linspace(0.0, 1.0, COUNT))
    frames = []
    for f, dt in enumerate(steps(step)):
        if f == 8:
            walking_action.crossfade_to(looping_action, 0.2, characters=slice(0, None, 2))
        animator.advance(dt)
        animator.finalize()
        motion = animator.root_motion
        frames.append({"model": animator.model.copy(), "travel": motion.translation.copy(), "yaw": motion.yaw.copy()})
    return frames


@pytest.mark.parametrize("step", list(STEPS.values()), ids=list(STEPS))
def test_the_fused_animator_on_compressed_clips_equals_the_numpy_reference(
    walking: Walk, looping: Walk, step: float | None
) -> None:
    compiled = animate(walking, looping, raw=False, backend="numba", step=step)
    reference = animate(walking, looping, raw=False, backend="numpy", step=step)
    for mine, theirs in zip(compiled, reference, strict=True):
        for name in mine:
            np.testing.assert_allclose(mine[name], theirs[name], rtol=0.0, atol=1e-12, err_msg=name)


def test_the_animator_on_compressed_clips_is_within_the_tolerance_of_the_raw_clips(
    walking: Walk, looping: Walk
) -> None:
    compressed = animate(walking, looping, raw=False, backend="numba", step=1 / 60)
    raw = animate(walking, looping, raw=True, backend="numba", step=1 / 60)
    worst = max(
        np.abs(a["model"][..., :3, 3] - b["model"][..., :3, 3]).max() for a, b in zip(compressed, raw, strict=True)
    )
    assert 0.0 < worst < POSITION
    travel = sum(a["travel"] for a in compressed) - sum(b["travel"] for b in raw)
    assert np.abs(travel).max() < POSITION


def test_an_additive_compressed_clip_is_refused(walking: Walk) -> None:
    animator = Animator(walking.skeleton, 2)
    with pytest.raises(InvalidInputError, match="an additive layer needs a Clip"):
        animator.action(walking.compressed, additive=True)


GRAPH = {
    "parameters": {"speed": {"type": "float"}},
    "start": "idle",
    "states": {
        "idle": {
            "motion": {"clip": "loop"},
            "transitions": [
                {
                    "to": "walk",
                    "kind": "inertialize",
                    "duration": 0.2,
                    "conditions": [{"parameter": "speed", "op": ">", "value": 0.5}],
                }
            ],
        },
        "walk": {"motion": {"clip": "walk"}},
    },
}


def run_graph(walking: Walk, clips: Mapping[str, Any], backend: str) -> list[np.ndarray]:
    """Half the characters start walking at frame 5 (an inertialization), the rest idle."""
    graph = bind_graph(parse_graph(GRAPH), walking.skeleton, clips)
    runtime = GraphRuntime(graph, num_characters=COUNT, backend=backend)
    models = []
    for f in range(FRAMES):
        runtime.parameters.set_float("speed", np.where(np.arange(COUNT) % 2 == (f < 5), 0.0, 1.0))
        runtime.update(1 / 60)
        models.append(runtime.model.copy())
    return models


def test_the_graph_plays_a_mapping_of_compressed_clips(walking: Walk, looping: Walk) -> None:
    compressed = {"walk": walking.compressed, "loop": looping.compressed}
    raw: dict[str, Clip] = {"walk": walking.clip, "loop": looping.clip}
    fused, reference = run_graph(walking, compressed, "numba"), run_graph(walking, compressed, "numpy")
    for mine, theirs in zip(fused, reference, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=0.0, atol=1e-12)
    for mine, theirs in zip(fused, run_graph(walking, raw, "numba"), strict=True):
        assert np.abs(mine[..., :3, 3] - theirs[..., :3, 3]).max() < POSITION
