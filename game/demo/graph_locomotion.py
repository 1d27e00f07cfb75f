"""The demo character's locomotion: one animation graph, the shipped one or one made for the model.

The graph holds every decision of the character's body: which gait and direction to blend,
when to start and land a jump, how to move between them (inertialized transitions). The player
sets the parameters each step (:meth:`GraphLocomotion.control`: the planar velocity asked for in
the character's frame, ``grounded``, the ``jump`` trigger) and the graph writes its layers into
the character's :class:`~engine.player.Player`.

- **The shipped graph** (``game/demo/locomotion.toml``): idle, a 2-D directional blend space of
  walks and runs in four directions (the mannequin's sideways and backward gaits come from
  :mod:`engine.procedural.strafe`), jump and land. Bound with the model's root as the root-motion
  joint: each clip plays in place and the player's root motion — each clip's exact keyed travel,
  weighted like the pose — moves the character, so its feet do not slide at any blend.
- **A graph made for the model** (:func:`fallback_document`) when it lacks the shipped graph's
  clips (CesiumMan, the Fox, …): one state, a 1-D blend space over the speed of its idle, walk
  and run clips at their measured ground speeds (:func:`game.measure.analyze_gait`), and its jump.
  In-place gaits move the character by each clip's ground speed times the clip time it played.

Examples
--------
>>> import numpy as np
>>> from game.model import load_model
>>> from game.demo.player import Player
>>> from game.demo.world import Terrain
>>> player = Player(load_model(), Terrain())
>>> player.graph.state, player.graph.strafes
('idle', True)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.errors import AssetError
from engine.graph import GraphRuntime, bind_graph, load_graph, parse_graph
from engine.graph.definition import Blend2DMotion, ClipMotion, GraphDefinition
from engine.math import quat_conjugate, quat_rotate
from engine.player import Player
from engine.procedural.mannequin import JOINTS, build_skeleton
from engine.procedural.strafe import build_strafe_clips
from engine.render.scene_renderer import SceneRecords
from game.model import Model

GRAPH = Path(__file__).with_name("locomotion.toml")
"""The demo's locomotion graph."""
RUN_TIME_SCALE = 1.8
"""How much faster the walk of a model without a run clip plays at its run."""
GLIDE_SPEEDS = (1.2, 3.0)
"""Walk and run speeds, m/s, of a model whose clips do not walk (it glides)."""


class GraphLocomotion:
    """One character's locomotion graph (module docstring); made by :func:`load_locomotion`.

    Parameters
    ----------
    runtime
        The graph running on one character (on the character's player).
    stands_in
        Clips the graph plays that the model does not have, by the model's clip each stands for
        (the strafe gaits: ``walk_left`` → ``walk``).
    gaits
        Ground speed and heading-frame direction of each in-place gait clip, by clip name: what
        those clips carry the character by (root-motion clips carry it by the player's travel).
    notes
        What the graph does instead of what the model lacks.
    """

    def __init__(
        self,
        runtime: GraphRuntime,
        stands_in: dict[str, str],
        gaits: dict[str, float],
        notes: list[str],
    ) -> None:
        self.runtime = runtime
        self.stands_in = stands_in
        self.notes = notes
        definition = runtime.graph.definition
        motion = definition.root.states["locomotion"].motion
        self.strafes = isinstance(motion, Blend2DMotion)
        """Whether the graph blends sideways and backward gaits (Ctrl strafes)."""
        self._speeds = _gait_speeds(definition, gaits)
        leaves = runtime.graph.leaves
        self._clip_of = [stands_in.get(leaf.clip.name, leaf.clip.name) for leaf in leaves]
        self._in_place = np.array([gaits.get(leaf.clip.name, 0.0) for leaf in leaves])

    @property
    def state(self) -> str:
        """The current state: ``locomotion`` or ``jump`` (and ``idle``, ``land`` in the shipped graph)."""
        return self.runtime.state_names()[0]

    @property
    def airborne(self) -> bool:
        """Whether the jump is playing (its flight, before the landing)."""
        return self.state == "jump"

    def gait_speed(self, direction: Any, run: bool) -> float:
        """Ground speed, m/s, of the walk (or run) in ``direction`` ``(3,)`` of the character's frame.

        The blend space's walk and run samples span an ellipse each (forward and back, left and
        right); the speed is that ellipse's radius in the direction, so a key held sideways asks
        for the sideways gait, not a blend towards the run.
        """
        side, ahead = self._speeds["run" if run else "walk"]
        x, z = float(direction[0]), float(direction[2])
        length = np.hypot(x, z)
        if length == 0.0:
            return 0.0
        return float(length / np.hypot(x / side, z / ahead))

    def clip_weights(self) -> dict[str, float]:
        """How much each of the model's clips weighs in the pose now (the graph's layer weights), by name.

        A generated clip counts as the clip it stands for (:attr:`stands_in`), so the weights
        name the model's clips only (:meth:`game.model.Model.ground` measures those).
        """
        weights: dict[str, float] = {}
        player = self.runtime.player
        for name, layer in zip(self._clip_of, self.runtime.layers.tolist(), strict=True):
            if not player.layer(layer).additive:
                weights[name] = weights.get(name, 0.0) + float(player.weights[layer, 0])
        return weights

    def control(self, velocity: Any, facing: Any, grounded: bool = True, jump: bool = False) -> None:
        """Set the parameters from the player's motion and write the graph's layers for the player's frame.

        Parameters
        ----------
        velocity
            The planar world velocity ``(3,)`` the character asks for, m/s.
        facing
            Its orientation about +Y ``(4,)``: the velocity is turned into its own frame (+Z forward,
            +X its left), so facing one way and moving another strafes.
        grounded
            Whether it stands on the ground (a jump lands when it is).
        jump
            Start a jump now (it waits while the character is airborne).
        """
        local = quat_rotate(quat_conjugate(np.asarray(facing, dtype=float)), np.asarray(velocity, dtype=float))
        parameters = self.runtime.parameters
        parameters.set_float("vx", float(local[0]))
        parameters.set_float("vz", float(local[2]))
        parameters.set_float("speed", float(np.hypot(local[0], local[2])))
        parameters.set_bool("grounded", bool(grounded))
        if jump:
            parameters.set_trigger("jump")
        self.runtime.control()

    def in_place_travel(self, dt: float) -> float:
        """Metres the in-place gait clips carried the character forward this step.

        Each clip's ground speed times the clip seconds it played, weighted like the pose.
        """
        player = self.runtime.player
        layers = self.runtime.layers
        weights = player.weights[layers, 0]
        rates = player.rates[layers, 0]
        return float(np.sum(weights * self._in_place * rates) * dt / max(float(weights.sum()), 1.0))


def _gait_speeds(definition: GraphDefinition, gaits: dict[str, float]) -> dict[str, tuple[float, float]]:
    """``{"walk": (sideways, forward), "run": ...}``: of the shipped blend space's samples, or the gaits' speeds."""
    motion = definition.root.states["locomotion"].motion
    if not isinstance(motion, Blend2DMotion):
        walk, run = gaits.get("#walk", GLIDE_SPEEDS[0]), gaits.get("#run", GLIDE_SPEEDS[1])
        return {"walk": (walk, walk), "run": (run, run)}
    clips = [child.clip if isinstance(child, ClipMotion) else "" for child in motion.children]
    speeds = {}
    for gait in ("walk", "run"):
        points = np.abs([p for p, clip in zip(motion.positions, clips, strict=True) if clip.startswith(gait)])
        speeds[gait] = (float(points[:, 0].max()), float(points[:, 1].max()))
    return speeds


def _strafe_clips(model: Model) -> dict[str, Clip]:
    """The mannequin's generated sideways and backward gaits on the model's hierarchy (none for other models)."""
    names = model.skeleton.names
    if not all(name in names for name, _, _ in JOINTS):
        return {}
    nodes = [names.index(name) for name, _, _ in JOINTS]
    count = model.skeleton.num_joints
    return {
        name: Clip(
            clip.name,
            tuple(Channel(nodes[c.target], c.path, c.interpolation, c.times, c.values) for c in clip.channels),
            count,
            clip.markers,
        )
        for name, clip in build_strafe_clips(build_skeleton()).items()
    }


def _gait_points(name: str, speed: float, *, stops: bool, faster: bool) -> list[dict[str, Any]]:
    """Blend-space points of gait ``name`` at ``speed`` m/s, and at 0 and faster on request.

    With ``stops`` it slows to a stop at 0 too; with ``faster`` it plays :data:`RUN_TIME_SCALE`
    times faster at as many times its speed.
    Points of one clip at several clip speeds play it time-scaled: they share its phase, which
    advances at their weighted mean rate (:func:`engine.player.synced_rate`), and pose it alike.
    """
    points = [{"at": 0.0, "clip": name, "speed": 0.0}] if stops else []
    points.append({"at": speed, "clip": name})
    if faster:
        points.append({"at": RUN_TIME_SCALE * speed, "clip": name, "speed": RUN_TIME_SCALE})
    return points


def fallback_document(model: Model) -> tuple[dict[str, Any], dict[str, float], list[str]]:
    """A graph for a model without the shipped graph's clips: the document, the gaits' speeds, notes.

    One ``locomotion`` state blends over the speed: the idle at 0, the walk and the run at their
    measured ground speeds, walk and run synced. A missing idle: the walk slows to a stop; a
    missing run: the walk plays faster; no walk: the first clip, time-scaled to the speed when it
    is a gait, else played as is while the character glides. The jump, when the model has one,
    plays from any state and lands back at its exit time. The speeds hold each in-place gait
    clip's ground speed by name and ``#walk``/``#run``: the speeds the walk and run are asked at.
    """
    roles, gaits = model.roles, model.gaits
    notes: list[str] = []
    walk = roles.walk if roles.walk is not None and gaits[roles.walk].moves else None
    locomotion: dict[str, Any]
    speeds: dict[str, float] = {}
    if walk is not None:
        faster = roles.run is not None and gaits[roles.run].moves and gaits[roles.run].speed > 1.1 * gaits[walk].speed
        run = roles.run if faster else None
        idle = [{"at": 0.0, "clip": roles.idle, "sync": False}] if roles.idle else []
        if not roles.idle:
            notes.append("no idle clip: the walk slows to a stop")
        points = idle + _gait_points(walk, gaits[walk].speed, stops=not roles.idle, faster=run is None)
        if run is not None:
            points.append({"at": gaits[run].speed, "clip": run})
        else:
            notes.append(f"no run clip: '{walk}' plays faster")
        locomotion = {"blend1d": "speed", "points": points}
        speeds["#walk"], speeds["#run"] = gaits[walk].speed, float(points[-1]["at"])
        moving = [walk] + ([run] if run is not None else [])
    else:
        name = model.reference or next(iter(model.clips))  # the first clip that plays (not a zero-length RESET)
        moving = [name] if gaits[name].moves else []
        if moving:
            points = _gait_points(name, gaits[name].speed, stops=True, faster=True)
            locomotion = {"blend1d": "speed", "points": points}
            speeds["#walk"], speeds["#run"] = gaits[name].speed, float(points[-1]["at"])
            notes.append(f"no idle/walk/run clips: '{name}' plays in place, time-scaled to the speed")
        else:
            locomotion = {"clip": name}
            notes.append(f"no walk clip ('{name}' is not a gait): the character glides")
    for name in moving:
        if not gaits[name].root_motion:
            speeds[name] = gaits[name].speed
    states: dict[str, Any] = {"locomotion": {"motion": locomotion}}
    document: dict[str, Any] = {
        "name": f"{model.name} locomotion",
        "parameters": {
            "vx": {"type": "float"},
            "vz": {"type": "float"},
            "speed": {"type": "float"},
            "grounded": {"type": "bool", "default": True},
            "jump": {"type": "trigger"},
        },
        "start": "locomotion",
        "states": states,
    }
    if roles.jump:
        move = {"kind": "inertialize", "duration": 0.3}
        back = {"to": "locomotion", "exit_time": 1.0, "conditions": [{"parameter": "grounded"}]}
        states["jump"] = {"motion": {"clip": roles.jump, "loop": False}, "transitions": [back | move]}
        document["any_state"] = [
            {"to": "jump", "conditions": [{"parameter": "jump"}, {"parameter": "grounded"}]} | move
        ]
    else:
        notes.append("no jump clip: Space does nothing")
    return document, speeds, notes


def load_locomotion(model: Model, player: Player, records: SceneRecords, graph: Path | None = GRAPH) -> GraphLocomotion:
    """The locomotion graph of ``model``'s character on ``player`` (over ``records.skeleton``).

    The shipped graph (``graph``) when the model has its clips (the mannequin, with its strafe
    gaits generated), else :func:`fallback_document`'s; ``graph=None`` always takes the latter.

    Raises
    ------
    AssetError
        The model has no clip at all (nothing to play).
    """
    if not model.clips:
        raise AssetError(f"{model.name} has no clips: no locomotion to play")
    made = _strafe_clips(model)
    clips = {name: records.clip(clip) for name, clip in {**model.clips, **made}.items()}
    root = model.root if model.root_motion else None
    bound = None
    if graph is not None:
        try:
            bound = bind_graph(load_graph(graph), records.skeleton, clips, root_motion=root)
        except AssetError:
            bound = None
    if bound is not None:
        stands_in = {name: name.split("_")[0] for name in made}
        return GraphLocomotion(GraphRuntime(bound, 1, player=player), stands_in, {}, [])
    document, speeds, notes = fallback_document(model)
    bound = bind_graph(parse_graph(document, document["name"]), records.skeleton, clips, root_motion=root)
    runtime = GraphRuntime(bound, 1, player=player)
    standing = [time / model.clips[name].duration for name, time in model.standing.items()]
    if standing:  # without an idle the gait stands still: at its lowest point (Model.standing), not at 0
        runtime.root.phase[:] = standing[0]
    return GraphLocomotion(runtime, {}, speeds, notes)
