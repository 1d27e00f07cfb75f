"""The demo character's locomotion driven through an animation graph (``game/demo/locomotion.toml``).

The graph holds every decision the player code used to make with actions and weights: which gait
and direction to blend (a 2-D blend space over the planar velocity in the character's frame: walk,
run, strafe, back), when to start and land a jump, and how to move between them (inertialized
transitions). The player sets four parameters and a trigger per step (:meth:`GraphLocomotion.drive`)
and reads back a local pose played in place and the root motion that goes with it: the graph is
bound with the model's root as its root-motion joint (``bind_graph(..., root_motion=...)``), so
each clip plays in place and the root's planar velocity — blended and inertialized like the pose
— is the travel (:attr:`GraphLocomotion.travel`). The character moves by it and its feet do not
slide, whatever the blend (walk and run synced at a rate between their own) or the transition.

Works with the generated mannequin (whose sideways and backward gaits come from
:mod:`engine.procedural.strafe`); :func:`load_locomotion` returns ``None`` for a model without the
graph's clips, which then keeps the player's action-based locomotion.

Examples
--------
>>> import numpy as np
>>> from game.model import load_model
>>> locomotion = load_locomotion(load_model())
>>> pose = locomotion.drive(1 / 60, velocity=np.array([0.0, 0.0, 1.2]), facing=np.array([0.0, 0.0, 0.0, 1.0]))
>>> locomotion.state, pose.shape
('locomotion', (26,))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.pose import Pose
from engine.errors import AssetError
from engine.graph import GraphRuntime, bind_graph, load_graph
from engine.graph.definition import Blend2DMotion, ClipMotion, GraphDefinition
from engine.math import quat_conjugate, quat_rotate
from engine.procedural.mannequin import JOINTS, build_skeleton
from engine.procedural.strafe import build_strafe_clips
from game.model import Model

GRAPH = Path(__file__).with_name("locomotion.toml")
"""The demo's locomotion graph."""


class GraphLocomotion:
    """One character's locomotion graph (see the module docstring); make it with :func:`load_locomotion`.

    Parameters
    ----------
    runtime
        The graph running on one character, bound with a root-motion joint or without one (then
        :attr:`travel` is the velocity asked for times ``dt``: clips made in place).
    clips
        The clips it was bound with, by name (the model's and the generated ones).
    stands_in
        Clips the graph plays that the model does not have, by the model's clip each was made
        from (the generated strafe gaits: ``walk_left`` → ``walk``); see :meth:`clip_weights`.
    """

    def __init__(
        self, runtime: GraphRuntime, clips: dict[str, Clip] | None = None, stands_in: dict[str, str] | None = None
    ) -> None:
        self.runtime = runtime
        self.clips = clips or {}
        self.stands_in = stands_in or {}
        self.travel = np.zeros(3)
        """The root's planar travel ``(x, 0, z)`` during the last :meth:`drive`, in the root's parent space, metres."""
        self._gaits = _gait_speeds(runtime.graph.definition)

    @property
    def state(self) -> str:
        """The current state: ``idle``, ``locomotion``, ``jump`` or ``land``."""
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
        side, ahead = self._gaits["run" if run else "walk"]
        x, z = float(direction[0]), float(direction[2])
        length = np.hypot(x, z)
        if length == 0.0:
            return 0.0
        return float(length / np.hypot(x / side, z / ahead))

    def clip_weights(self) -> dict[str, float]:
        """How much each of the model's clips shapes the current state now (its blend tree), by name.

        A generated clip counts as the clip it was made from (:attr:`stands_in`), so the weights
        name the model's clips only (:meth:`game.model.Model.ground` measures those).
        """
        runtime = self.runtime
        state = runtime.root.bound.states[int(runtime.root.state[0])]
        weights: dict[str, float] = {}
        for leaf, weight in state.node.leaves(runtime.parameters, np.zeros(1, dtype=np.intp), False):
            name = self.stands_in.get(leaf.clip.name, leaf.clip.name)
            weights[name] = weights.get(name, 0.0) + float(weight[0])
        return weights

    def drive(self, dt: float, velocity: Any, facing: Any, grounded: bool = True, jump: bool = False) -> Pose:
        """Set the parameters from the player's motion, advance ``dt`` seconds, return the local pose ``(J,)``.

        The pose is a copy of the runtime's (no model matrices are composed here: the player's
        frame does that once, after its IK); :attr:`travel` is the root motion of the step.

        Parameters
        ----------
        dt
            Seconds.
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
        self.runtime.advance(dt)
        pose = self.runtime.evaluate()[0].copy()
        if self.runtime.graph.root_motion is None:
            self.travel = local * [1.0, 0.0, 1.0] * dt
        else:
            self.travel = self.runtime.root_translation[0].copy()
        return pose


def _gait_speeds(definition: GraphDefinition) -> dict[str, tuple[float, float]]:
    """``{"walk": (sideways, forward), "run": ...}``: the largest ``|x|``, ``|z|`` of the walk and run samples."""
    motion = definition.root.states["locomotion"].motion
    assert isinstance(motion, Blend2DMotion)
    clips = [child.clip if isinstance(child, ClipMotion) else "" for child in motion.children]
    speeds = {}
    for gait in ("walk", "run"):
        points = np.abs([p for p, clip in zip(motion.positions, clips, strict=True) if clip.startswith(gait)])
        speeds[gait] = (float(points[:, 0].max()), float(points[:, 1].max()))
    return speeds


def _strafe_clips(model: Model) -> dict[str, Clip]:
    """The mannequin's generated sideways and backward gaits on the model's hierarchy (none for other models).

    The clips are made for the mannequin's 25-joint skeleton and moved onto the model's nodes of
    the same names: the skinned mannequin and the one built of rigid parts both have them all.
    """
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


def load_locomotion(model: Model, graph: Path = GRAPH) -> GraphLocomotion | None:
    """The locomotion graph bound to ``model``'s character, or ``None`` when it lacks the graph's clips.

    The mannequin gets its sideways and backward gaits generated (:func:`build_strafe_clips`).
    """
    made = _strafe_clips(model)
    clips = {**model.clips, **made}
    definition = load_graph(graph)
    root = model.root if any(g.root_motion for g in model.gaits.values()) else None
    try:
        bound = bind_graph(definition, model.skeleton, clips, root_motion=root)
    except AssetError:
        return None
    return GraphLocomotion(GraphRuntime(bound, 1), clips, {name: name.split("_")[0] for name in made})
