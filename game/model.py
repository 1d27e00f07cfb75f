"""Characters for the programs: the generated mannequin by default, any glTF character with ``--model``.

:func:`load_model` loads a file with :func:`engine.io.load_character` and measures it, so that a
program can place any character the same way. The returned :class:`Model`'s ``frame`` maps the
skeleton's model space to the **character frame**: +Y up, +Z forward, metres, the bind-pose mesh
standing on ``y = 0`` — whatever the file's units (the Fox is in centimetres), up axis
(CesiumMan's skeleton is Z-up under a correction node) or facing (CesiumMan walks along +X).

Facing and ground speed are read from the motion itself by :func:`analyze_gait`: a clip whose
root joint travels is root motion (speed = travel / duration); an in-place clip moves its
planted feet backwards at the ground speed, so the median velocity of the lowest joints while
they touch the ground gives both the speed and, reversed, the direction of travel.

Clips are given roles by name (:func:`clip_roles`): ``idle``/``survey``/``stand``, ``walk``,
``run``/``jog``, ``jump``, ``wave``. A program falls back on whatever is missing and says so.

Examples
--------
>>> model = load_model()                      # assets/mannequin.glb
>>> model.roles.walk, round(model.gaits["walk"].speed, 2), model.gaits["walk"].root_motion
('walk', 1.2, True)
>>> round(model.height, 2)
1.87
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.sampling import sample
from engine.anim.skeleton import Skeleton
from engine.errors import AssetError
from engine.io import Character, load_character
from engine.math import matrix_from_trs, quat_from_axis_angle, transform_points
from engine.math._checks import FloatArray

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "assets" / "mannequin.glb"
"""The generated mannequin (``ossa make-mannequin`` writes it)."""

#: Lower-case name fragments that give a clip a role, by role (first match in file order wins).
ROLE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "idle": ("idle", "survey", "stand", "breath"),
    "walk": ("walk",),
    "run": ("run", "jog", "sprint"),
    "jump": ("jump",),
    "wave": ("wave",),
}
#: A model taller than this (in its file's units) is taken to be in centimetres.
CENTIMETRE_HEIGHT = 10.0


@dataclass(frozen=True)
class ClipRoles:
    """Clip names by role, ``None`` where the file has no clip for it."""

    idle: str | None = None
    walk: str | None = None
    run: str | None = None
    jump: str | None = None
    wave: str | None = None


def clip_roles(names: list[str] | tuple[str, ...]) -> ClipRoles:
    """Give clips roles by their names (:data:`ROLE_KEYWORDS`, case-insensitive, first match wins).

    >>> clip_roles(["Survey", "Walk", "Run"])
    ClipRoles(idle='Survey', walk='Walk', run='Run', jump=None, wave=None)
    """
    found: dict[str, str] = {}
    for role, keywords in ROLE_KEYWORDS.items():
        match = next((n for n in names if any(k in n.lower() for k in keywords) and n not in found.values()), None)
        if match is not None:
            found[role] = match
    return ClipRoles(**found)


@dataclass(frozen=True)
class Gait:
    """How a clip moves over the ground, in the character frame.

    Attributes
    ----------
    speed
        Ground speed in metres per second at playback speed 1 (0: not a gait).
    direction
        ``(3,)`` horizontal unit direction of travel (``+Z`` when ``speed`` is 0).
    root_motion
        Whether the root joint carries the travel (else the clip walks in place).
    """

    speed: float
    direction: FloatArray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    root_motion: bool = False

    @property
    def moves(self) -> bool:
        """Whether the clip travels (a walk or a run), in place or not."""
        return self.speed > 0.0


def analyze_gait(skeleton: Skeleton, clip: Clip, frame: FloatArray, height: float, samples: int = 60) -> Gait:
    """Ground speed and direction of one loop of ``clip`` (see the module docstring).

    Parameters
    ----------
    skeleton, clip
        The character's skeleton and one of its clips.
    frame
        ``(4, 4)`` skeleton model space → a +Y-up frame in metres.
    height
        The character's height in that frame, metres: the scale of the thresholds (a root
        that travels less than 5 % of it is in place; a gait moves its feet faster than 15 %
        of it per second; feet are the lowest joints that swing by more than 5 % of it; "touching
        the ground" is within 2 % of a foot's lowest point).
    samples
        Poses sampled over the loop.
    """
    if clip.duration <= 0.0:
        return Gait(0.0)
    times = np.linspace(0.0, clip.duration, samples + 1)
    points = transform_points(frame, model_from_pose(skeleton, sample(clip, skeleton.rest_pose, times))[..., :3, 3])
    travel = (points[-1, 0] - points[0, 0]) * [1.0, 0.0, 1.0]
    distance = float(np.linalg.norm(travel))
    if distance > 0.05 * height:
        return Gait(distance / clip.duration, travel / distance, root_motion=True)
    heights = points[:-1, :, 1]
    lowest = heights.min(axis=0)
    swings = np.ptp(points[:, :, [0, 2]], axis=0).max(axis=-1) > 0.05 * height  # a foot moves; a pivot does not
    if not swings.any():
        return Gait(0.0)
    feet = swings & (lowest <= lowest[swings].min() + 0.03 * height)
    velocity = (points[1:, feet] - points[:-1, feet]) * ([1.0, 0.0, 1.0] / (times[1] - times[0]))
    planted = heights[:, feet] <= lowest[feet] + 0.02 * height
    ground = -np.median(velocity[planted], axis=0)
    speed = float(np.linalg.norm(ground))
    if speed < 0.15 * height:
        return Gait(0.0)
    return Gait(speed, ground / speed)


@dataclass(frozen=True, eq=False)
class Model:
    """A loaded character placed in the character frame (see the module docstring).

    Attributes
    ----------
    path
        The file read.
    character
        What :func:`engine.io.load_character` returned.
    frame
        ``(4, 4)`` skeleton model space → character frame: ``lift · facing · scale ·
        root_transform``. A character at world transform ``W`` draws with ``W @ frame``.
    height
        Bind-pose mesh height in metres.
    roles
        Clip names by role.
    gaits
        :class:`Gait` of the ``walk`` and ``run`` role clips and of the first clip, by clip name.
    notes
        One line per adjustment made (units, facing), for the programs' overlays.
    warnings
        Text of the loader's warnings (the programs show them instead of failing).
    """

    path: Path
    character: Character
    frame: FloatArray
    height: float
    roles: ClipRoles
    gaits: dict[str, Gait]
    notes: tuple[str, ...]
    warnings: tuple[str, ...]

    @property
    def name(self) -> str:
        """The file's name without its suffix."""
        return self.path.stem

    @property
    def skeleton(self) -> Skeleton:
        """The character's skeleton."""
        return self.character.skeleton


def _mesh_points(character: Character) -> FloatArray:
    """Bind-pose vertices of every mesh ``(V, 3)``, skeleton model space (or the root joint if none)."""
    if not character.meshes:
        return np.zeros((1, 3))
    return np.concatenate([np.asarray(mesh.positions) for mesh in character.meshes])


def load_model(path: str | Path | None = None) -> Model:
    """Load ``path`` (default :data:`DEFAULT_MODEL`) and measure it into a :class:`Model`.

    Raises
    ------
    AssetError
        The file is missing, not glTF, or has no skin (the message says which).
    """
    path = Path(path) if path is not None else DEFAULT_MODEL
    if not path.is_file():
        hint = " (run `ossa make-mannequin` to write it)" if path == DEFAULT_MODEL else ""
        raise AssetError(f"model file not found: {path}{hint}", file=str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        character = load_character(path)
    notes = []
    points = transform_points(character.root_transform, _mesh_points(character))
    size = float(np.ptp(points[:, 1])) or 1.0
    scale = 0.01 if size > CENTIMETRE_HEIGHT else 1.0
    if scale != 1.0:
        notes.append(f"{size:.0f} units tall: read as centimetres (scaled by 0.01)")
    height = size * scale
    base = np.diag([scale, scale, scale, 1.0]) @ character.root_transform
    roles = clip_roles(list(character.clips))
    first = next(iter(character.clips), None)
    probe = roles.walk or roles.run or first
    yaw = 0.0
    if probe is not None:
        travel = analyze_gait(character.skeleton, character.clips[probe], base, height).direction
        yaw = float(np.round(np.arctan2(travel[0], travel[2]) / (np.pi / 2)) * (np.pi / 2))  # models are axis-aligned
    if yaw != 0.0:
        notes.append(f"'{probe}' travels {np.degrees(yaw):+.0f}° from +Z: turned to face +Z")
    facing = matrix_from_trs(np.zeros(3), quat_from_axis_angle([0.0, 1.0, 0.0], -yaw), np.ones(3)) @ base
    lift = -float(transform_points(facing, _mesh_points(character))[:, 1].min())
    frame = matrix_from_trs([0.0, lift, 0.0], [0.0, 0.0, 0.0, 1.0], np.ones(3)) @ facing
    gaits = {
        name: analyze_gait(character.skeleton, character.clips[name], frame, height)
        for name in dict.fromkeys(n for n in (roles.walk, roles.run, first) if n is not None)
    }
    return Model(
        path,
        character,
        frame,
        height,
        roles,
        gaits,
        tuple(notes),
        tuple(str(w.message) for w in caught),
    )
