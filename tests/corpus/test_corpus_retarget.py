"""``ossa retarget`` of every corpus mocap take onto every humanoid target: limbs follow the source.

For each source × target pair the take is retargeted with the proposed joint map, both are sampled
at 40 times over the clip, and in each body's own frame (lateral = left hip − right hip, up = +Y,
forward = lateral × up) the test compares:

- the direction of every upper arm, forearm, thigh and shin: the target's follows the source's
  within :data:`MAX_ANGLE` degrees (95th percentile over the frames);
- the side of each hand and foot: wherever the source's is clearly on one side of the hips, the
  target's is on the same side, every frame.

Which joints are the shoulder/elbow/wrist and hip/knee/ankle of each side comes from the manifest's
``limbs`` (identified by hand from names and rest geometry), not from the engine's humanoid
detection, which is what is under test.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.anim import model_from_pose, sample
from engine.io import load_gltf
from engine.io.bvh import load_bvh
from tests.conftest import ROOT
from tests.corpus.corpus import BVH, Corpus, by_id
from tests.corpus.test_corpus_inspect import run_cli

#: Largest angle (degrees, 95th percentile over the frames) between a source limb segment and the
#: target's, each in its own body frame.
MAX_ANGLE = 20.0
#: A hand or foot is clearly on one side when it is this many limb lengths (the two segments) from
#: the mid-plane. Hands need more: proportions differ, and a boxer's guard 7 cm off the mid-plane
#: sits across it on a figure with wider shoulders (Boxing_Toes on CesiumMan).
CLEAR_SIDE = {"arm": 0.25, "leg": 0.05}
MANNEQUIN = {
    "id": "mannequin",
    "limbs": {
        "arm_l": ["upper_arm_l", "lower_arm_l", "hand_l"],
        "arm_r": ["upper_arm_r", "lower_arm_r", "hand_r"],
        "leg_l": ["upper_leg_l", "lower_leg_l", "foot_l"],
        "leg_r": ["upper_leg_r", "lower_leg_r", "foot_r"],
    },
}
TARGETS = [MANNEQUIN, by_id("cesium-man"), by_id("bcn-epileptic")]


def pairs() -> list[Any]:
    """Every BVH entry × target."""
    return [
        pytest.param(
            source,
            target,
            id=f"{source['id']}-on-{target['id']}",
        )
        for source in BVH
        for target in TARGETS
    ]


def world_positions(skeleton: Any, clip: Any, times: np.ndarray) -> np.ndarray:
    """``(T, J, 3)`` joint positions of ``clip`` sampled at ``times`` (the one place that samples)."""
    return np.asarray(model_from_pose(skeleton, sample(clip, skeleton.rest_pose, times)))[..., :3, 3]


def body_frame_readings(positions: np.ndarray, index: dict[str, int], limbs: dict[str, list[str]]) -> dict[str, Any]:
    """Limb-segment directions and end-effector sides, each in the body's own frame per time."""

    def at(name: str) -> np.ndarray:
        return positions[:, index[name]]

    up = np.array([0.0, 1.0, 0.0])
    hips = at(limbs["leg_l"][0]) - at(limbs["leg_r"][0])
    lateral = hips - (hips @ up)[:, None] * up
    lateral /= np.linalg.norm(lateral, axis=1, keepdims=True)
    basis = np.stack([lateral, np.broadcast_to(up, lateral.shape), np.cross(lateral, up)], axis=1)
    middle = (at(limbs["leg_l"][0]) + at(limbs["leg_r"][0])) / 2
    readings: dict[str, Any] = {}
    for limb, (start, joint, end) in limbs.items():
        for segment, (a, b) in (("upper", (start, joint)), ("lower", (joint, end))):
            direction = at(b) - at(a)
            direction /= np.linalg.norm(direction, axis=1, keepdims=True)
            readings[f"{limb}.{segment}"] = np.einsum("tij,tj->ti", basis, direction)
        length = np.linalg.norm(at(joint) - at(start), axis=1) + np.linalg.norm(at(end) - at(joint), axis=1)
        readings[f"{limb}.side"] = np.einsum("tj,tj->t", lateral, at(end) - middle) / length
    return readings


def target_limbs(target: dict[str, Any], path: Path) -> dict[str, list[str]]:
    """The target's limb joints by name (glTF node indices resolved through the loader's names)."""
    limbs = target["limbs"] if target is MANNEQUIN else target["covers"]["limbs"]
    if all(isinstance(j, str) for chain in limbs.values() for j in chain):
        return dict(limbs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asset = load_gltf(path)
    return {k: [asset.hierarchy.names[asset.hierarchy_index(j)] for j in chain] for k, chain in limbs.items()}


@pytest.mark.parametrize(("source", "target"), pairs())
def test_retarget_limbs_follow_the_source_on_the_same_side(
    source: dict[str, Any], target: dict[str, Any], corpus: Corpus, tmp_path: Path
) -> None:
    source_path = corpus.path(source)
    target_path = ROOT / "assets" / "mannequin.glb" if target is MANNEQUIN else corpus.path(target)
    out = tmp_path / "retargeted.glb"
    status, _, err = run_cli("retarget", str(source_path), str(target_path), "--out", str(out))
    assert status == 0, err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        take = load_bvh(source_path)
        result = load_gltf(out)
    times = np.linspace(0.0, take.clip.duration, 40)
    skeleton = take.skeleton
    seen = body_frame_readings(
        world_positions(skeleton, take.clip, times),
        {n: i for i, n in enumerate(skeleton.names)},
        source["covers"]["limbs"],
    )
    moved = body_frame_readings(
        world_positions(result.hierarchy, result.clips[0], times),
        {n: i for i, n in enumerate(result.hierarchy.names)},
        target_limbs(target, target_path),
    )
    for key, expected in seen.items():
        if key.endswith(".side"):
            clear = np.abs(expected) > CLEAR_SIDE[key[:3]]
            assert (np.sign(moved[key][clear]) == np.sign(expected[clear])).all(), f"{key}: on the wrong side"
        else:
            cosine = np.clip(np.sum(expected * moved[key], axis=1), -1.0, 1.0)
            angle = np.percentile(np.degrees(np.arccos(cosine)), 95)
            assert angle <= MAX_ANGLE, f"{key}: {angle:.0f}° from the source's direction"
