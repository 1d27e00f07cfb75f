"""The fixed CesiumMan scene of the golden-image test, and the command that regenerates its PNG.

Regenerate after an intended change to the renderer, look at the image, and commit it::

    python -m tests.render.make_golden

The scene: CesiumMan's first clip at t = 0.5 s, linear blend skinning, camera on +Z at
``CAMERA`` looking down −Z, 40° vertical field of view, 96×72 pixels, the default light.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from engine.anim import model_from_pose, sample, skinning_palette
from engine.errors import OssaWarning
from engine.io import Character, load_character
from engine.math import perspective
from engine.render import OffscreenTarget, SkinnedMesh, create_context, save_png
from tests.conftest import SHARED_ASSETS

GOLDEN = Path(__file__).resolve().parent / "golden" / "cesium_man_lbs.png"
SIZE = (96, 72)
TIME = 0.5
CAMERA = np.array([0.0, 0.75, 2.6])
BACKGROUND = (0.1, 0.1, 0.1, 1.0)


def load_cesium_man(shared: Path = SHARED_ASSETS) -> Character:
    """CesiumMan, without the loader's note that 210 vertices had weights not summing to 1."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OssaWarning)
        return load_character(shared / "khronos" / "cesium_man.gltf")


def palettes_at(character: Character, times: np.ndarray) -> np.ndarray:
    """World-space skinning palettes ``(len(times), J, 4, 4)`` of the first clip."""
    clip = next(iter(character.clips.values()))
    pose = sample(clip, character.skeleton.rest_pose, np.asarray(times, dtype=np.float64))
    return character.root_transform @ skinning_palette(character.skeleton, model_from_pose(character.skeleton, pose))


def camera() -> tuple[np.ndarray, np.ndarray]:
    """``view`` and ``projection`` of the scene."""
    view = np.eye(4)
    view[:3, 3] = -CAMERA
    return view, perspective(np.radians(40.0), SIZE[0] / SIZE[1], 0.1, 10.0)


def render_cesium_man(ctx, character: Character, method: str = "lbs") -> np.ndarray:
    """The scene as ``(H, W, 4)`` uint8, top row first."""
    mesh = SkinnedMesh(ctx, character.meshes[0])
    view, projection = camera()
    with OffscreenTarget(ctx, SIZE) as target:
        target.clear(BACKGROUND)
        mesh.draw(palettes_at(character, np.array([TIME])), view, projection, method=method)
        image = target.read()
    target.release()
    mesh.release()
    return image


def main() -> None:
    ctx = create_context(standalone=True)
    GOLDEN.parent.mkdir(exist_ok=True)
    path = save_png(GOLDEN, render_cesium_man(ctx, load_cesium_man()))
    print(f"wrote {path} on {ctx.info['GL_RENDERER']}")


if __name__ == "__main__":
    main()
