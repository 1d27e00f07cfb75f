"""What a :class:`~engine.motion_matching.controller.MatchingController` is told and what it reports.

:class:`ControllerOptions` (how it searches, switches and moves, checked when made) and
:class:`SearchRecord` (the last frame's searches, for tests and overlays).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.errors import InvalidInputError
from engine.math._checks import FloatArray, IntArray
from engine.motion_matching.search import METHODS
from engine.motion_matching.trajectory import FACING_HALF_LIFE, VELOCITY_HALF_LIFE

#: Transition kinds a switch may use (the player's stage kinds that inertialize the current output).
SWITCH_KINDS = ("spring", "inertialize")
#: Seconds a switch within the range playing jumps at least (:attr:`ControllerOptions.min_jump`).
MIN_JUMP = 0.0
#: Where the query's pose part comes from.
POSE_SOURCES = ("player", "database")


@dataclass(frozen=True)
class ControllerOptions:
    """How a :class:`~engine.motion_matching.controller.MatchingController` searches, switches and moves.

    Lengths are in the database's units.

    Attributes
    ----------
    interval
        Seconds between a character's scheduled searches (staggered over the characters).
    sharp_speed, sharp_turn
        A request whose velocity moved by more than ``sharp_speed`` (units/s), or whose facing
        turned by more than ``sharp_turn`` (radians), since the character's last search is
        searched at once.
    bias
        Cost every frame but the continuing one pays (:func:`~engine.motion_matching.search.search`).
    min_jump
        Seconds: a switch to a frame of the range playing jumps at least this far from the frame
        playing (the search's ``near``; Unreal's pose jump threshold), so that a character holding
        still does not keep replaying the same fraction of a second; 0 (the default) turns it off.
        On the CMU set 0.2 s takes standing-still switches from 7.9 to 5.2 a second, but changes
        which switches a walk makes, and one of them can move a joint a little (0.5 %) faster
        than the clips' fastest step.
    include, exclude
        Tag filters of every search (tag names).
    method
        The search method (:data:`~engine.motion_matching.search.METHODS`).
    kind, half_life, duration
        The switch's transition (:data:`SWITCH_KINDS`): a spring of ``half_life`` seconds or
        the quintic over ``duration`` seconds.
    pose_from
        ``"player"`` (the player's output and its velocity) or ``"database"`` (the features of
        the frame playing).
    velocity_half_life, facing_half_life
        The simulation's springs (:mod:`engine.motion_matching.trajectory`).
    adjust_half_life, adjust_yaw_half_life, adjust_ratio
        The pull of the root toward the simulation (:func:`~engine.motion_matching.motion.adjust_roots`);
        ``adjust_ratio`` 0 turns it off.
    clamp_distance, clamp_angle
        How far the simulation may lead the character (units, radians).
    """

    interval: float = 0.1
    sharp_speed: float = 0.5
    sharp_turn: float = 0.5
    bias: float = 0.01
    min_jump: float = MIN_JUMP
    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] | None = None
    method: str = "boxes"
    kind: str = "spring"
    half_life: float = 0.1
    duration: float = 0.3
    pose_from: str = "player"
    velocity_half_life: float = VELOCITY_HALF_LIFE
    facing_half_life: float = FACING_HALF_LIFE
    adjust_half_life: float = 0.1
    adjust_yaw_half_life: float = 0.2
    adjust_ratio: float = 0.5
    clamp_distance: float = 0.15
    clamp_angle: float = 0.5 * np.pi

    def __post_init__(self) -> None:
        positive = ("interval", "half_life", "velocity_half_life", "facing_half_life", "adjust_half_life")
        for name in (*positive, "adjust_yaw_half_life", "clamp_distance", "clamp_angle"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value > 0.0):
                raise InvalidInputError(f"{name} must be a positive number, got {value!r}")
        for name in ("sharp_speed", "sharp_turn", "bias", "min_jump", "duration", "adjust_ratio"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise InvalidInputError(f"{name} must be a number >= 0, got {value!r}")
        for name, value, allowed in (
            ("kind", self.kind, SWITCH_KINDS),
            ("method", self.method, METHODS),
            ("pose_from", self.pose_from, POSE_SOURCES),
        ):
            if value not in allowed:
                raise InvalidInputError(f"{name} must be one of {allowed}, got {value!r}")


@dataclass
class SearchRecord:
    """The last frame's searches: who searched, with what, and what was found (for tests and overlays).

    Attributes
    ----------
    characters
        ``(K,)`` the characters that searched.
    queries
        ``(K, D)`` their normalised queries.
    current
        ``(K,)`` their continuing frames.
    frames, costs
        ``(K,)`` the search's answers (:class:`~engine.motion_matching.search.SearchResult`).
    switched
        ``(K,)`` whether each switched.
    play_on
        ``(K,)`` whether each could play on into its range's end margin (the search's ``play_on``).
    """

    characters: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    queries: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    current: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    frames: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    costs: FloatArray = field(default_factory=lambda: np.zeros(0))
    switched: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    play_on: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
