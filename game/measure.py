"""What the programs read from a model's clips and motion: clip roles by name, gaits, units.

:func:`~game.model.load_model` takes these measurements of any file it loads:

- :func:`clip_roles`: which clip is the idle, the walk, the run, the jump and the wave, by name;
- :func:`analyze_gait`: how fast and which way a clip travels over the ground, from its root's
  travel or, in place, from its planted feet;
- :func:`guess_unit`: the file's unit, from the figure's animated height.

Examples
--------
>>> clip_roles(["Idle", "Walk_Loop", "Sprint"])
ClipRoles(idle='Idle', walk='Walk_Loop', run='Sprint', jump=None, wave=None)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.skeleton import Skeleton
from engine.anim.units import UNITS, unit_for_height
from engine.math import transform_points
from engine.math._checks import FloatArray
from game.bounds import sample_poses

#: Lower-case name fragments that give a clip a role, by role (first match in file order wins).
ROLE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "idle": ("idle", "survey", "stand", "breath"),
    "walk": ("walk",),
    "run": ("run", "jog", "sprint"),
    "jump": ("jump",),
    "wave": ("wave",),
}
FIGURE_HEIGHTS = (0.25, 3.0)
"""Metres: a model whose animated height lies here is taken to be in metres already."""
HUMAN_HEIGHTS = (1.4, 2.2)
"""Metres: an upright figure in another unit is read in the unit that makes it this tall."""
UPRIGHT_RATIO = 1.5
"""A figure at least this many times taller than deep (along its facing) is upright, a biped."""
FIGURE_UNITS = ("centimetres", "inches", "millimetres")
"""Units (names of :data:`engine.anim.units.UNITS`) tried in this order for a figure that is not a human."""


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

    A name with the words of one role only wins over one with another role's words too: KayKit's
    ``Jump_Idle`` is a jump, its ``Idle`` the idle, whatever their order.

    >>> clip_roles(["Survey", "Walk", "Run"])
    ClipRoles(idle='Survey', walk='Walk', run='Run', jump=None, wave=None)
    >>> clip_roles(["Rig|Jump_Idle", "Rig|Jump_Land", "Rig|Idle_A"]).idle
    'Rig|Idle_A'
    """

    def roles_of(name: str) -> int:
        return sum(any(k in name.lower() for k in keywords) for keywords in ROLE_KEYWORDS.values())

    found: dict[str, str] = {}
    for role, keywords in ROLE_KEYWORDS.items():
        matches = [n for n in names if any(k in n.lower() for k in keywords) and n not in found.values()]
        if matches:
            found[role] = min(matches, key=roles_of)  # the first of the fewest roles
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


def analyze_gait(
    skeleton: Skeleton, clip: Clip, frame: FloatArray, height: float, root: int, samples: int = 60
) -> Gait:
    """Ground speed and direction of one loop of ``clip`` (see the module docstring).

    Parameters
    ----------
    skeleton, clip
        The scene's hierarchy and one of its clips.
    frame
        ``(4, 4)`` scene world space → a +Y-up frame in metres.
    height
        The character's height in that frame, metres: the scale of the thresholds (a root
        that travels less than 5 % of it is in place; a gait moves its root or its feet faster
        than 15 % of it per second; feet are the lowest nodes that swing by more than 5 % of
        it, within its lowest quarter; "touching the ground" is within 2 % of a foot's lowest
        point).
    root
        The root joint's node: its travel is root motion.
    samples
        Poses sampled over the loop.
    """
    if clip.duration <= 0.0:
        return Gait(0.0)
    times = np.linspace(0.0, clip.duration, samples + 1)
    points = transform_points(frame, model_from_pose(skeleton, sample_poses(skeleton, clip, times))[..., :3, 3])
    travel = (points[-1, root] - points[0, root]) * [1.0, 0.0, 1.0]
    distance = float(np.linalg.norm(travel))
    if distance > 0.05 * height:
        speed = distance / clip.duration
        if speed < 0.15 * height:  # a dancer drifting, not a walk: played in place, not steered by
            return Gait(0.0, root_motion=True)
        return Gait(speed, travel / distance, root_motion=True)
    heights = points[:-1, :, 1]
    lowest = heights.min(axis=0)
    swings = np.ptp(points[:, :, [0, 2]], axis=0).max(axis=-1) > 0.05 * height  # a foot moves; a pivot does not
    swings &= lowest <= lowest.min() + 0.25 * height  # a foot is near the ground, a waving hand is not
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


def guess_unit(height: float, upright: bool, character: bool = True) -> tuple[float, str, str]:
    """Metres per file unit for a figure ``height`` units tall, the unit's name, and a note (``""``: metres).

    Heights within :data:`FIGURE_HEIGHTS` are metres. Otherwise an ``upright`` figure is read in
    the unit that makes it a standing human (:func:`engine.anim.units.unit_for_height`, aiming at
    the middle of :data:`HUMAN_HEIGHTS`) when that unit brings it within :data:`HUMAN_HEIGHTS`;
    a ``character`` (a file with a skin) in the first of :data:`FIGURE_UNITS` that brings it
    within :data:`FIGURE_HEIGHTS`. Otherwise metres, the glTF unit: an object without a skin
    (a wall of animated cubes) may be any size.

    >>> guess_unit(1.8, True), guess_unit(175.0, True)[:2], guess_unit(70.0, True)[:2], guess_unit(79.0, False)[:2]
    ((1.0, 'metres', ''), (0.01, 'centimetres'), (0.0254, 'inches'), (0.01, 'centimetres'))
    >>> guess_unit(10.1, True, character=False)
    (1.0, 'metres', '10.1 units tall, no skin: an object, kept in metres')
    """
    low, high = FIGURE_HEIGHTS
    if low <= height <= high:
        return 1.0, "metres", ""
    shape = "upright" if upright else "not upright"
    if upright and np.isfinite(height) and height > 0.0:
        unit, metres = unit_for_height(height, float(np.sqrt(HUMAN_HEIGHTS[0] * HUMAN_HEIGHTS[1])))
        if HUMAN_HEIGHTS[0] <= height * metres <= HUMAN_HEIGHTS[1]:
            return metres, unit, f"{height:.3g} units tall, {shape}: read as {unit}, a {height * metres:.2f} m human"
    if not character:
        return 1.0, "metres", f"{height:.3g} units tall, no skin: an object, kept in metres"
    for unit in FIGURE_UNITS:  # CMU units and feet are for human figures only
        metres = UNITS[unit]
        if low <= height * metres <= high:
            return metres, unit, f"{height:.3g} units tall, {shape}: read as {unit} ({height * metres:.2f} m)"
    return 1.0, "metres", f"{height:.3g} units tall: no common unit makes it {low:g}-{high:g} m, kept as metres"
