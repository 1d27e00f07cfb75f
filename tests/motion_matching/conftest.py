"""Shared data of the motion-matching tests: a synthetic turning walk, the CMU database, random databases."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim.clip import Channel, Clip
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.errors import OssaWarning
from engine.math import unflip
from engine.motion_matching import BuildOptions, ClipSource, Database, build_database, load_sources
from engine.motion_matching.layout import make_layout
from engine.procedural.mannequin import Mannequin, build_mannequin

HERE = Path(__file__).resolve().parent
CMU_TAGS = HERE.parents[1] / "game" / "demo" / "cmu_locomotion.toml"
#: A BVH take of a two-bone chain: no humanoid, nothing to retarget onto a character.
SNAKE_BVH = """HIERARCHY
ROOT Base
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT Segment
  {
    OFFSET 0 20 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 20 0
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.0333333
0 0 0 0 0 0 0 0 0
1 0 0 0 5 0 10 0 0
2 0 0 0 10 0 20 0 0
"""
#: Key rate of the synthetic walk (twice the database's 60 fps: every other key is a database frame).
SOURCE_FPS = 120.0


@pytest.fixture(scope="session")
def mannequin() -> Mannequin:
    return build_mannequin()


def turning_walk(mannequin: Mannequin, seconds: float = 3.0, turn: float = 0.9, name: str = "turning_walk") -> Clip:
    """The mannequin's walk looped for ``seconds`` along a curve, LINEAR keys at :data:`SOURCE_FPS`.

    The walk's forward travel is bent: heading ``yaw(t) = turn/0.8 · (1 − cos 0.8t)`` (up to
    ``turn`` rad/s), the ground path the integral of the walk's speed along that heading; the
    root's sideways and vertical sway turn with the heading.
    """
    skeleton = mannequin.skeleton
    walk = mannequin.clips["walk"]
    times = np.arange(round(seconds * SOURCE_FPS) + 1) / SOURCE_FPS
    loops, phase = np.divmod(times, walk.duration)
    pose = sample(walk, skeleton.rest_pose, phase)
    ends = sample(walk, skeleton.rest_pose, np.array([0.0, walk.duration])).translations[:, 0]
    root = pose.translations[:, 0] + loops[:, None] * (ends[1] - ends[0])
    yaw = turn / 0.8 * (1.0 - np.cos(0.8 * times))
    heading = Rotation.from_rotvec(np.outer(yaw, [0.0, 1.0, 0.0]))
    forward = heading.apply([0.0, 0.0, 1.0]) * np.gradient(root[:, 2], times)[:, None]
    path = np.concatenate(
        (np.zeros((1, 3)), np.cumsum(0.5 * (forward[1:] + forward[:-1]) * np.diff(times)[:, None], 0))
    )
    sway = root * [1.0, 1.0, 0.0]
    translations = path + heading.apply(sway)
    rotations = (heading * Rotation.from_quat(pose.rotations[:, 0])).as_quat()
    channels = [
        Channel(0, "translation", "LINEAR", times, translations),
        Channel(0, "rotation", "LINEAR", times, unflip(rotations, axis=0)),
    ]
    for j in range(1, skeleton.num_joints):
        channels.append(Channel(j, "rotation", "LINEAR", times, unflip(pose.rotations[:, j], axis=0)))
        channels.append(Channel(j, "translation", "LINEAR", times, pose.translations[:, j]))
    return Clip(name, tuple(channels), skeleton.num_joints)


@pytest.fixture(scope="session")
def turning_source(mannequin: Mannequin) -> ClipSource:
    return ClipSource("turning_walk", turning_walk(mannequin), mannequin.skeleton, tags=("walk", "turn"))


@pytest.fixture(scope="session")
def turning_database(turning_source: ClipSource, mannequin: Mannequin) -> Database:
    """The turning walk and a straight run (tagged), mirrored, at 60 fps."""
    run = ClipSource("run", mannequin.clips["run"], mannequin.skeleton, tags=("run",))
    return build_database([turning_source, run], options=BuildOptions(end_margin=10))


@pytest.fixture(scope="session")
def cmu_sources(shared_assets: Path) -> list[ClipSource]:
    files = sorted((shared_assets / "cmu_locomotion_bvh").glob("*.bvh"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)  # the BVH unit detection says "CMU units" for each take
        return load_sources(files, tags_file=CMU_TAGS)


@pytest.fixture(scope="session")
def cmu_database(cmu_sources: list[ClipSource], mannequin: Mannequin) -> Database:
    """The CMU locomotion set retargeted onto the mannequin (16_01 left out: a jump)."""
    usable = [s for s in cmu_sources if s.name != "16_01"]
    return build_database(usable, mannequin.skeleton)


def random_database(
    rng: np.random.Generator,
    frames: int,
    ranges: int = 3,
    tags: int = 3,
    end_margin: int = 2,
    width: int = 27,
    integers: bool = False,
) -> Database:
    """A database of random features over a two-joint skeleton (the search sees only features, ranges, tags).

    With ``integers`` the features are small whole numbers searched as they are (offset 0, scale 1), so
    every squared distance is exact.
    """
    skeleton = Skeleton(["a", "b"], [-1, 0])
    layout = make_layout({"hip_velocity": (0,)}, (1, 2, 3, 4, 5, 6), None)
    assert layout.width == width
    cuts = np.sort(rng.choice(np.arange(3, frames - 2), size=ranges - 1, replace=False)) if ranges > 1 else []
    stops = np.append(cuts, frames).astype(np.intp)
    rotations = np.zeros((frames, 2, 4))
    rotations[..., 3] = 1.0
    features = rng.integers(-3, 4, (frames, width)).astype(float) if integers else rng.normal(size=(frames, width))
    return Database(
        skeleton=skeleton,
        fps=60.0,
        layout=layout,
        translations=np.zeros((frames, 2, 3)),
        rotations=rotations,
        scales=np.ones((frames, 2, 3)),
        root_positions=np.zeros((frames, 3)),
        root_yaws=np.zeros(frames),
        root_velocities=np.zeros((frames, 3)),
        root_yaw_rates=np.zeros(frames),
        range_starts=np.concatenate(([0], stops[:-1])).astype(np.intp),
        range_stops=stops,
        range_names=tuple(f"r{k}" for k in range(ranges)),
        range_sources=tuple(f"r{k}" for k in range(ranges)),
        range_mirrored=np.zeros(ranges, dtype=bool),
        tag_names=tuple(f"t{k}" for k in range(tags)),
        frame_tags=rng.integers(0, 1 << tags, frames).astype(np.uint64),
        end_margin=end_margin,
        features=features,
        offset=np.zeros(width) if integers else features.mean(axis=0),
        scale=np.ones(width) if integers else rng.uniform(0.2, 3.0, width) / features.std(axis=0),
    )
