"""Every corpus mocap take retargeted onto every humanoid of the corpus, judged as the programs draw it.

Each take (the manifest's BVH files: the CMU takes, the pirouette, the PyMO walk, the assimp and
bvhtoolbox files) goes onto each humanoid target (the generated mannequin, CesiumMan, BCN
Epileptic, the Unreal-named GDQuest mannequin, the KayKit mannequin, the VALID human) with
:func:`engine.io.mocap_commands.retarget_file`, the ``ossa retarget`` path. The result is loaded as
the programs load it (:func:`game.model.load_model`) and placed as they draw a clip playing alone:
``frame`` lowered by ``ground``, the root in place when the model has root motion. The source is
its captured clip (the calibration frame left out) in its own +Y-up metres. Both are sampled at
:data:`SAMPLES` times over the clip and compared in each body's own frame (lateral = left hip −
right hip across up, up, forward = lateral × up):

- **upright**: the spine (hips → chest) leans at most :data:`LEAN_SLACK` degrees more than the
  source's, every frame;
- **limbs**: every upper arm and forearm points within :data:`MAX_ANGLE` degrees of the source's,
  every frame; every thigh and shin within :data:`LEG_ANGLE` in 95 % of the frames (planted feet
  bend the legs);
- **bends**: wherever the source's elbow or knee bends more than :data:`CLEAR_BEND` degrees, the
  target's bends the same way (the normals of the two bend planes agree), or is straight;
- **feet**: wherever a source foot (the ankle and every joint below it) is down, within
  :data:`DOWN` leg lengths of the take's floor (its :data:`FLOOR_PERCENT` percentile of lowest
  points), the target's (the vertices following those joints) is down too, within
  :data:`DOWN_SLACK` more; and the figure floats over the drawn ground (the clip's lowest point)
  no further than the source over its take's lowest;
- **shadow**: the hips stay over the shadow (the character frame's origin, where the demo draws
  it) within :data:`SHADOW` heights when the model plays in place; a take without root motion (no
  travel from its first frame to its last) may stray as far as the source strays from its start;
- **frame**: the clip's bounds are at most :data:`WIDTH` heights across;
- **travel**: the drawn root's travel over the take (played with its motion), in the body's frame
  at the start, is the source hips' travel scaled by the leg lengths, within :data:`TRAVEL_SLACK`.

:data:`LIMITS` states the looser limits of the KayKit chibi. Which joints are the
shoulder/elbow/wrist, hip/knee/ankle and hips/chest comes from the manifest's ``limbs`` (identified
by hand), not from the engine's humanoid detection, which is under test. The whole sweep is
``slow`` (:data:`FAST` pairs run by default; ``python3 -m pytest -m slow
tests/corpus/test_corpus_retarget.py`` runs every pair: 21 minutes on two busy cores).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.anim import model_from_pose, sample
from engine.anim.skinning import skinning_palette
from engine.io import load_gltf
from engine.io.bvh import BvhAnimation, load_bvh
from engine.io.mocap_commands import Retargeted, RetargetSource, retarget_file, retarget_source
from game.bounds import clip_motion, sample_poses
from game.model import DEFAULT_MODEL, Model, load_model
from tests.corpus.corpus import BVH, Corpus, by_id

SAMPLES = 60
"""Times sampled over each take."""
LEAN_SLACK = 15.0
"""Degrees the target's spine may lean further from up than the source's, every frame."""
MAX_ANGLE = 5.0
"""Degrees between a source arm segment and the target's, each in its own body frame, every frame."""
LEG_ANGLE = 25.0
"""Degrees between a source leg segment and the target's, in 95 % of the frames (planted feet bend the legs)."""
CLEAR_BEND = 25.0
"""Degrees of elbow or knee bend above which the side it bends to is clear."""
STRAIGHT = 5.0
"""Degrees of bend under which a target limb is straight (it bends neither way)."""
DOWN = 0.04
"""Leg lengths over the take's floor within which a source foot is down."""
DOWN_SLACK = 0.1
"""Leg lengths a target foot may be further up than the source's where the source's is down, and the
figure may float further over the drawn ground than the source over its floor."""
FLOOR_PERCENT = 5.0
"""Percentile of a take's frames by lowest point that counts as its floor (a lone dip does not)."""
SHADOW = 0.2
"""Heights the hips may stray from the shadow (the character frame's origin; the demo's disc is 0.22 across)."""
WIDTH = 1.5
"""Heights the clip's bounds may measure across (the programs frame the figure by them)."""
TRAVEL_SLACK = 0.1
"""Fraction of the source's scaled travel, plus that many leg lengths, the root's travel may miss by."""
LIMITS = {"kaykit-mannequin": {"leg": 45.0, "down": 0.35}}
"""Looser stated limits by target. The KayKit mannequin is a chibi: its shoes are 0.8 of its leg
long and its hips 0.9 of it wide (a performer's: 0.3 and 0.25), so following the take's foot and
pelvis turns lifts and sinks its soles by several centimetres; planting them bends its shins up to
42° off the take's (95th percentile), and where the plant would fold a knee (a kneel) a foot stays
up to 0.33 legs over the floor."""

MANNEQUIN_LIMBS = {
    "arm_l": ["upper_arm_l", "lower_arm_l", "hand_l"],
    "arm_r": ["upper_arm_r", "lower_arm_r", "hand_r"],
    "leg_l": ["upper_leg_l", "lower_leg_l", "foot_l"],
    "leg_r": ["upper_leg_r", "lower_leg_r", "foot_r"],
    "spine": ["hips", "chest"],
}
TARGETS = ("mannequin", "cesium-man", "bcn-epileptic", "gdquest-mannequiny", "kaykit-mannequin", "valid-avatar")
"""The corpus's humanoids (not the Fox): the generated mannequin and the manifest's entries."""
FAST = {
    ("cmu-16-01", "mannequin"),  # the cgspeed names and T-pose arms
    ("pirouette", "cesium-man"),  # Z-up below CesiumMan's correction node: upside down before
    ("bvhtoolbox-mixamo", "kaykit-mannequin"),  # a take without net travel, hips under KayKit's root
}
"""Pairs run by default (a few seconds each); the rest are ``slow``."""
LIMBS = ("arm_l", "arm_r", "leg_l", "leg_r")


def pairs() -> Iterator[Any]:
    """Every BVH entry × target, the pairs outside :data:`FAST` marked ``slow``."""
    for source in BVH:
        for target in TARGETS:
            marks = () if (source["id"], target) in FAST else (pytest.mark.slow,)
            yield pytest.param(source, target, id=f"{source['id']}-on-{target}", marks=marks)


@dataclass(frozen=True)
class Body:
    """Joint positions ``(T, J, 3)`` of a figure over the samples, +Y up, metres, and its limbs' joints."""

    positions: np.ndarray
    limbs: dict[str, list[int]]
    rest: np.ndarray
    """Rest joint positions ``(J, 3)``, in the same space."""

    def at(self, limb: str, k: int) -> np.ndarray:
        return self.positions[:, self.limbs[limb][k]]

    @functools.cached_property
    def basis(self) -> np.ndarray:
        """``(T, 3, 3)`` rows: lateral, up, forward."""
        hips = self.at("leg_l", 0) - self.at("leg_r", 0)
        lateral = hips * [1.0, 0.0, 1.0]
        lateral /= np.linalg.norm(lateral, axis=1, keepdims=True)
        up = np.broadcast_to([0.0, 1.0, 0.0], lateral.shape)
        return np.stack([lateral, up, np.cross(lateral, up)], axis=1)

    def local(self, vectors: np.ndarray) -> np.ndarray:
        """Unit ``vectors`` ``(T, 3)`` in the body frame."""
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return np.einsum("tij,tj->ti", self.basis, unit)

    def segments(self, limb: str) -> tuple[np.ndarray, np.ndarray]:
        """The upper and lower segment vectors ``(T, 3)`` of ``limb``."""
        return self.at(limb, 1) - self.at(limb, 0), self.at(limb, 2) - self.at(limb, 1)

    def bend(self, limb: str) -> tuple[np.ndarray, np.ndarray]:
        """Degrees ``(T,)`` the limb bends, and the bend plane's normal ``(T, 3)`` in the body frame."""
        upper, lower = self.segments(limb)
        cosine = np.sum(upper * lower, axis=1) / np.linalg.norm(upper, axis=1) / np.linalg.norm(lower, axis=1)
        return np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0))), self.local(np.cross(upper, lower))

    def lean(self) -> np.ndarray:
        """Degrees ``(T,)`` between the spine (hips → chest) and up."""
        spine = self.at("spine", 1) - self.at("spine", 0)
        return np.degrees(np.arccos(np.clip(spine[:, 1] / np.linalg.norm(spine, axis=1), -1.0, 1.0)))

    @functools.cached_property
    def leg(self) -> float:
        """Rest length of the left leg (hip → knee → ankle): the scale of the foot thresholds."""
        hip, knee, ankle = (self.rest[j] for j in self.limbs["leg_l"])
        return float(np.linalg.norm(knee - hip) + np.linalg.norm(ankle - knee))


@functools.cache
def source_take(path: Path) -> tuple[BvhAnimation, RetargetSource]:
    """The take read once: as the tests measure it and as ``ossa retarget`` plays it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unit read: the test measures in whatever it gives
        return load_bvh(path), retarget_source(path)


def source_body(take: BvhAnimation, limbs: dict[str, list[str]], times: np.ndarray) -> Body:
    skeleton = take.skeleton
    world = model_from_pose(skeleton, sample(take.captured_clip, skeleton.rest_pose, times))
    rest = model_from_pose(skeleton, skeleton.rest_pose)
    return Body(world[..., :3, 3], {k: [skeleton.index(j) for j in v] for k, v in limbs.items()}, rest[:, :3, 3])


def drawn_body(model: Model, limbs: dict[str, list[str]], times: np.ndarray, *, in_place: bool = True) -> Body:
    """The figure as the programs draw the clip alone (``in_place=False``: the root with its motion)."""
    name = next(iter(model.clips))
    frame = model.frame.copy()
    frame[1, 3] -= model.ground({name: 1.0})
    skeleton = model.skeleton
    pose = sample_poses(skeleton, model.clips[name], times, in_place=model.in_place if in_place else None)
    world = frame @ model_from_pose(skeleton, pose)
    rest = frame @ model_from_pose(skeleton, skeleton.rest_pose)
    indices = {k: [skeleton.index(j) for j in v] for k, v in limbs.items()}
    return Body(world[..., :3, 3], indices, rest[:, :3, 3])


@functools.cache
def target_file(target: str, corpus: Corpus) -> tuple[Path, dict[str, list[str]]]:
    """The target's file and its limbs' joint names (the manifest gives glTF node indices)."""
    if target == "mannequin":
        return DEFAULT_MODEL, MANNEQUIN_LIMBS
    entry = by_id(target)
    path = corpus.path(entry)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asset = load_gltf(path)
    names = asset.hierarchy.names
    return path, {k: [names[asset.hierarchy_index(j)] for j in v] for k, v in entry["covers"]["limbs"].items()}


def subtree(parents: np.ndarray, joint: int) -> list[int]:
    """``joint`` and every joint below it."""
    inside = np.zeros(len(parents), dtype=bool)
    for j, parent in enumerate(parents):  # parents precede children
        inside[j] = j == joint or (parent >= 0 and bool(inside[parent]))
    return np.nonzero(inside)[0].tolist()


def foot_heights(done: Retargeted, model: Model, limbs: dict[str, list[str]], times: np.ndarray) -> np.ndarray:
    """``(T, 2)`` height of each foot's lowest vertex (those following the ankle or a joint below it), drawn."""
    character, skeleton = done.target, done.target.skeleton
    world = model_from_pose(skeleton, sample(done.clip, skeleton.rest_pose, times))
    palette = skinning_palette(skeleton, world)  # (T, J, 4, 4)
    lowered = model.frame.copy()
    lowered[1, 3] -= model.ground({next(iter(model.clips)): 1.0})
    height = (lowered @ character.root_transform)[1]  # drawn height of a model-space point
    feet = []
    for leg in ("leg_l", "leg_r"):
        joints = subtree(skeleton.parents, skeleton.index(limbs[leg][2]))
        lowest = np.full(len(times), np.inf)
        for mesh in character.meshes:
            if mesh.joints is None or mesh.weights is None:
                continue
            mine = np.isin(mesh.joints[np.arange(len(mesh.joints)), np.argmax(mesh.weights, axis=1)], joints)
            if mine.any():  # linear blend skinning of those vertices only
                blend = np.einsum("vk,tvkij->tvij", mesh.weights[mine], palette[:, mesh.joints[mine]])
                placed = np.einsum(
                    "tvij,vj->tvi", blend[..., :3, :], np.column_stack([mesh.positions[mine], np.ones(mine.sum())])
                )
                lowest = np.minimum(lowest, (placed @ height[:3] + height[3]).min(axis=1))
        feet.append(lowest)
    return np.stack(feet, axis=1)


def readings(source: dict[str, Any], target: str, corpus: Corpus, folder: Path) -> dict[str, tuple[float, float]]:
    """Each check's worst reading over the take and its limit, by what it measures (see the module docstring)."""
    take, played = source_take(corpus.path(source))
    target_path, limbs = target_file(target, corpus)
    done = retarget_file(played, target_path, folder / f"{source['id']}-on-{target}.glb")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = load_model(done.path)
    name = next(iter(model.clips))
    times = np.linspace(0.0, take.captured_clip.duration, SAMPLES)
    seen = source_body(take, source["covers"]["limbs"], times)
    drawn = drawn_body(model, limbs, times)
    found: dict[str, tuple[float, float]] = {}

    limits = {"leg": LEG_ANGLE, "down": DOWN_SLACK, **LIMITS.get(target, {})}
    found["spine's lean beyond the source's, degrees"] = (float((drawn.lean() - seen.lean()).max()), LEAN_SLACK)
    for limb in LIMBS:
        for part, expected, got in zip(("upper", "lower"), seen.segments(limb), drawn.segments(limb), strict=True):
            cosine = np.clip(np.sum(seen.local(expected) * drawn.local(got), axis=1), -1.0, 1.0)
            angles = np.degrees(np.arccos(cosine))
            if limb.startswith("arm"):
                found[f"{limb} {part} off the source's direction, degrees"] = (float(angles.max()), MAX_ANGLE)
            else:  # planted feet bend the legs
                found[f"{limb} {part} off the source's direction, 95th percentile, degrees"] = (
                    float(np.percentile(angles, 95)),
                    limits["leg"],
                )
        bent, seen_normal = seen.bend(limb)
        drawn_bent, drawn_normal = drawn.bend(limb)  # a straight limb bends neither way
        wrong = (bent > CLEAR_BEND) & (drawn_bent > STRAIGHT) & (np.sum(seen_normal * drawn_normal, axis=1) <= 0.0)
        found[f"{limb} bending the other way, frames"] = (float(wrong.sum()), 0.0)
    # each foot (the ankle and all below it: joints in the source, the vertices that follow them in
    # the target) is down, within DOWN legs of the take's floor, where the source's is
    lows = clip_motion(model.scene, model.clips[name], model.frame, root=model.root, in_place=model.root_motion).lows
    target_floor = np.percentile(lows[:, 1], FLOOR_PERCENT) - lows[:, 1].min()  # over the drawn ground
    seen_floor = np.percentile(seen.positions[..., 1].min(axis=1), FLOOR_PERCENT)
    target_feet = foot_heights(done, model, limbs, times)
    for k, leg in enumerate(("leg_l", "leg_r")):
        below = np.isin(np.arange(take.skeleton.num_joints), subtree(take.skeleton.parents, seen.limbs[leg][2]))
        seen_up = (seen.positions[:, below, 1].min(axis=1) - seen_floor) / seen.leg
        down = seen_up <= DOWN
        up = (target_feet[:, k] - target_floor) / drawn.leg
        found[f"{leg} foot up where the source's is down, legs"] = (
            float((up[down] - seen_up[down]).max()) if down.any() else 0.0,
            limits["down"],
        )
    # most of the take (all but 5 %) the figure's lowest point is no further over the drawn ground
    # (the clip's lowest point) than the source's lowest joint over the take's lowest
    floating = target_floor / drawn.leg
    every = take.captured_clip.channels[0].times
    lowest = source_body(take, source["covers"]["limbs"], every).positions[..., 1].min(axis=1)
    seen_floating = (np.percentile(lowest, FLOOR_PERCENT) - lowest.min()) / seen.leg
    found["floating over the drawn ground beyond the source, legs"] = (float(floating - seen_floating), limits["down"])

    hips = np.linalg.norm(drawn.at("spine", 0)[:, [0, 2]], axis=1).max() / model.height
    strays = np.linalg.norm(seen.at("spine", 0)[:, [0, 2]] - seen.at("spine", 0)[0, [0, 2]], axis=1).max() / seen.leg
    allowed = SHADOW if model.root_motion else max(SHADOW, strays * drawn.leg / model.height)
    found["hips from the shadow, heights"] = (float(hips), allowed)
    bounds = model.bounds[name]
    found["clip's bounds across, heights"] = (float(max(bounds.size[0], bounds.size[2])) / model.height, WIDTH)

    moving = drawn_body(model, limbs, times, in_place=False)
    root = model.root if model.root is not None else 0
    travel = (moving.basis[0] @ (moving.positions[-1, root] - moving.positions[0, root]))[[0, 2]]
    expected = (seen.basis[0] @ (seen.at("spine", 0)[-1] - seen.at("spine", 0)[0]))[[0, 2]] * drawn.leg / seen.leg
    miss = np.linalg.norm(travel - expected) / (np.linalg.norm(expected) + drawn.leg)
    found["root's travel off the source's, of it and a leg"] = (float(miss), TRAVEL_SLACK)
    return found


@pytest.mark.parametrize(("source", "target"), pairs())
def test_a_retarget_drawn_by_the_programs_follows_the_source(
    source: dict[str, Any], target: str, corpus: Corpus, tmp_path: Path
) -> None:
    found = readings(source, target, corpus, tmp_path)
    failed = [f"{what}: {got:.3g} (at most {limit:g})" for what, (got, limit) in found.items() if got > limit]
    assert not failed, "; ".join(failed)
