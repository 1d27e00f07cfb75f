"""Clip banks for the backend tests: the shared assets' real clips, the mannequin, a synthetic rig.

``probe_times`` makes the times that stress sampling: before the first key, after the last,
exactly on every merged key, one float ulp either side of each (``np.nextafter``), and random.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from engine.anim import Channel, Clip, Skeleton
from engine.backend import ClipBank, FrameState
from engine.errors import OssaWarning
from engine.io import load_character, load_gltf
from engine.procedural.mannequin import build_mannequin


def probe_times(bank: ClipBank, clip: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` times for clip ``clip`` of ``bank``: key times, their float neighbours, outside, random."""
    keys = bank.clips[clip].timeline
    span = max(float(keys[-1] - keys[0]), 1e-3)
    special = np.concatenate(
        (
            keys,
            np.nextafter(keys, -np.inf),
            np.nextafter(keys, np.inf),
            [keys[0] - span, keys[0] - 1e-9, keys[-1] + 1e-9, keys[-1] + span],
        )
    )
    random = rng.uniform(keys[0] - 0.1 * span, keys[-1] + 0.1 * span, count)
    chosen = rng.choice(special, size=min(count, special.size), replace=False)
    random[: chosen.size] = chosen
    return rng.permutation(random)


def crowd(bank: ClipBank, layers: int, count: int, rng: np.random.Generator) -> tuple[FrameState, np.ndarray]:
    """A state whose layers play random clips per character, and probing times for them."""
    state = FrameState(bank, layers, count)
    times = np.empty((layers, count))
    for layer in range(layers):
        clips = rng.integers(0, bank.num_clips, count)
        for k in range(bank.num_clips):
            chosen = np.flatnonzero(clips == k)
            if chosen.size:
                state.play(layer, k, chosen)
                times[layer, chosen] = probe_times(bank, k, chosen.size, rng)
    return state, times


@pytest.fixture(scope="session")
def mannequin_bank() -> ClipBank:
    mannequin = build_mannequin()
    return ClipBank(mannequin.skeleton, list(mannequin.clips.values()))


@pytest.fixture(scope="session")
def fox_bank(shared_assets: Path) -> ClipBank:
    fox = load_character(shared_assets / "fox" / "glTF-Binary" / "Fox.glb", textures=False)
    return ClipBank(fox.skeleton, [fox.clips[name] for name in ("Survey", "Walk", "Run")])


@pytest.fixture(scope="session")
def cesium_bank(shared_assets: Path) -> ClipBank:
    with warnings.catch_warnings():  # CesiumMan's weights do not sum to 1 (a load-time warning)
        warnings.simplefilter("ignore", OssaWarning)
        cesium = load_character(shared_assets / "khronos" / "cesium_man.gltf", textures=False)
    return ClipBank(cesium.skeleton, list(cesium.clips.values()))


@pytest.fixture(scope="session")
def interpolation_bank(shared_assets: Path) -> ClipBank:
    """Khronos InterpolationTest: STEP, LINEAR and CUBICSPLINE on translation, rotation and scale."""
    asset = load_gltf(shared_assets / "khronos" / "interpolation_test.gltf", textures=False)
    return ClipBank(asset.hierarchy, asset.clips)


def synthetic_rig(seed: int = 3) -> tuple[Skeleton, list[Clip]]:
    """Nine joints, every interpolation on every path, one-key and static channels, gaps in the
    animated joints (non-consecutive targets), non-unit rest scales, projective inverse binds."""
    rng = np.random.default_rng(seed)
    parents = [-1, 0, 1, 1, 0, 4, 5, 2, 7]
    count = len(parents)
    rest_t = rng.normal(0, 0.3, (count, 3))
    rest_r = Rotation.random(count, random_state=seed).as_quat()
    rest_s = rng.uniform(0.5, 1.5, (count, 3))
    ibm = np.tile(np.eye(4), (count, 1, 1))
    ibm[:, :3, :] += rng.normal(0, 0.2, (count, 3, 4))
    ibm[3, 3, :] = (0.01, -0.02, 0.0, 1.1)  # one joint's inverse bind is not affine
    skeleton = Skeleton([f"j{i}" for i in range(count)], parents, rest_t, rest_r, rest_s, ibm)

    def keys(n: int, start: float = 0.0) -> np.ndarray:
        return np.sort(start + rng.uniform(0, 2.0, n)) if n > 1 else np.array([start + 0.7])

    def rotations(n: int) -> np.ndarray:
        q = Rotation.random(n, random_state=int(rng.integers(1 << 30))).as_quat()
        return q * rng.choice([-1.0, 1.0], (n, 1))  # signs flip between keys

    clips = []
    for c in range(3):
        channels = []
        for j, (mode, path) in enumerate(
            [
                ("LINEAR", "rotation"),
                ("STEP", "rotation"),
                ("CUBICSPLINE", "rotation"),
                ("LINEAR", "translation"),
                ("STEP", "translation"),
                ("CUBICSPLINE", "translation"),
                ("LINEAR", "scale"),
                ("CUBICSPLINE", "scale"),
            ]
        ):
            target = (j * 2 + c) % count
            n = 1 if (j + c) % 5 == 0 else int(rng.integers(2, 9))
            times = keys(n, start=0.1 * c)
            width = 4 if path == "rotation" else 3
            if mode == "CUBICSPLINE":
                values = rng.normal(0, 0.3, (n, 3, width))
                values[:, 1] = rotations(n) if path == "rotation" else rng.normal(0, 1, (n, width))
            else:
                values = rotations(n) if path == "rotation" else rng.normal(0, 1, (n, width))
            if path == "scale":
                values = values + (2.0 if mode != "CUBICSPLINE" else 0.0)
            channels.append(Channel(target, path, mode, times, values))
        for k in (0, 8):  # two more slerp channels at non-consecutive joints
            if all(ch.target != (k + c) % count or ch.path != "rotation" for ch in channels):
                channels.append(Channel((k + c) % count, "rotation", "LINEAR", keys(4), rotations(4)))
        clips.append(Clip(f"synthetic{c}", channels, count))
    return skeleton, clips


@pytest.fixture(scope="session")
def synthetic_bank() -> ClipBank:
    skeleton, clips = synthetic_rig()
    return ClipBank(skeleton, clips)
