"""The demo character's locomotion driven through an animation graph (``game/demo/locomotion.toml``).

The graph holds every decision the player code used to make with actions and weights: which gait
and direction to blend (a 2-D blend space over the planar velocity in the character's frame: walk,
run, strafe, back), when to start and land a jump, and how to move between them (inertialized
transitions). The player sets four parameters and a trigger per step (:meth:`GraphLocomotion.drive`)
and reads back a local pose, played in place: the graph samples the clips' root motion, which is
taken out of the pose here, and the character moves by its own velocity (the blend space's samples
sit at the clips' ground speeds, so the feet do not slide).

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
('locomotion', (25,))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.anim.clip import Channel, Clip
from engine.anim.pose import Pose
from engine.anim.rootmotion import remove_planar
from engine.errors import AssetError
from engine.graph import GraphRuntime, bind_graph, load_graph
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
        The graph running on one character.
    root
        Index of the joint whose planar motion is taken out of the pose (the character plays in
        place), or ``None``.
    """

    def __init__(self, runtime: GraphRuntime, root: int | None) -> None:
        self.runtime = runtime
        self.root = root

    @property
    def state(self) -> str:
        """The current state: ``idle``, ``locomotion``, ``jump`` or ``land``."""
        return self.runtime.state_names()[0]

    @property
    def airborne(self) -> bool:
        """Whether the jump is playing (its flight, before the landing)."""
        return self.state == "jump"

    def drive(self, dt: float, velocity: Any, facing: Any, grounded: bool = True, jump: bool = False) -> Pose:
        """Set the parameters from the player's motion, advance ``dt`` seconds, return the local pose ``(J,)``.

        Parameters
        ----------
        dt
            Seconds.
        velocity
            The character's planar world velocity ``(3,)``, m/s (what it moves at this step).
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
        self.runtime.update(dt)
        pose = self.runtime.local_pose[0].copy()
        if self.root is not None:  # in place: the player moves the character
            pose.translations[self.root], pose.rotations[self.root] = remove_planar(
                pose.translations[self.root], pose.rotations[self.root]
            )
        return pose


def _strafe_clips(model: Model) -> dict[str, Clip]:
    """The mannequin's generated sideways and backward gaits on the scene hierarchy (none for other models).

    The model plays its scene's node hierarchy; the clips are made for the mannequin's 25-joint
    skin and moved onto the hierarchy nodes of those joints.
    """
    if not model.scene.skins:
        return {}
    joints = model.scene.skins[0].joints
    if tuple(model.skeleton.names[j] for j in joints) != tuple(name for name, _, _ in JOINTS):
        return {}
    count = model.skeleton.num_joints
    return {
        name: Clip(
            clip.name,
            tuple(Channel(int(joints[c.target]), c.path, c.interpolation, c.times, c.values) for c in clip.channels),
            count,
            clip.markers,
        )
        for name, clip in build_strafe_clips(build_skeleton()).items()
    }


def load_locomotion(model: Model, graph: Path = GRAPH) -> GraphLocomotion | None:
    """The locomotion graph bound to ``model``'s character, or ``None`` when it lacks the graph's clips.

    The mannequin gets its sideways and backward gaits generated (:func:`build_strafe_clips`).
    """
    skeleton = model.skeleton
    clips = {**model.clips, **_strafe_clips(model)}
    definition = load_graph(graph)
    try:
        bound = bind_graph(definition, skeleton, clips)
    except AssetError:
        return None
    root = model.root if any(g.root_motion for g in model.gaits.values()) else None
    return GraphLocomotion(GraphRuntime(bound, 1), root)
