"""NaN and infinity stop at the boundary of every public runtime function.

Each public function and constructor of :mod:`engine.anim`, :mod:`engine.camera`,
:mod:`engine.animator` and the palette upload of :mod:`engine.render` gets a valid call in
:data:`CALLS`; the sweep then replaces one floating-point argument at a time by one holding NaN,
``+inf`` or ``-inf`` and expects an :class:`~engine.errors.InvalidInputError` naming that
argument (validation is on by default). Inside :func:`engine.math.trusted` the scans are off,
which is the documented fast path for hot loops over data that was validated once: the same
call then returns without a finiteness error (garbage in, garbage out), except for what is
checked even then (sample times, and cheap scalar checks of durations and mask weights).
:func:`~engine.render.pack_palette`, the only way a palette reaches the GPU, refuses NaN,
infinity and float64 values that overflow float32; and a hypothesis sweep shows that valid
inputs, however extreme, never produce a non-finite palette.

:func:`test_every_public_runtime_callable_is_covered` fails when a new public function or class
appears without an entry here (or in :data:`NO_FLOAT_INPUT`, with the reason).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import engine.anim
import engine.camera
from engine.anim import (
    Channel,
    Clip,
    MatrixBuffer,
    Pose,
    Skeleton,
    additive_pose,
    aim_ik,
    apply_additive,
    apply_corrections,
    blend,
    ccd_ik,
    fabrik_ik,
    interpolate_poses,
    joint_matrices,
    local_to_model,
    model_from_pose,
    plan_retarget,
    propose_joint_map,
    retarget_clip,
    sample,
    sample_channel,
    skin_vertices,
    skin_vertices_dq,
    skinning_palette,
    slerp_chain,
    subtree_mask,
    two_bone_ik,
)
from engine.anim.mesh import MeshData
from engine.animator import Animator
from engine.camera import (
    Camera,
    CameraSequence,
    FollowRig,
    KalmanOrientationFilter,
    OneEuroFilter,
    camera_axes,
    cone_clamp,
    ease,
    half_life_from_stiffness,
    kalman_initial,
    kalman_step,
    look_at,
    look_at_matrix,
    one_euro_alpha,
    one_euro_initial,
    one_euro_step,
    orbit_orientation,
    smooth_position,
    smooth_position_naive,
    smooth_rotation,
    smooth_rotation_naive,
    smoothing_alpha,
    spring_position,
    spring_rotation,
    spring_stiffness_from_half_life,
    stiffness_from_half_life,
    swing_twist,
    swing_twist_clamp,
    view_matrix,
    yaw_pitch_from_forward,
)
from engine.errors import InvalidInputError
from engine.math import quat_from_axis_angle, trusted
from engine.render import pack_palette

BAD = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}

# ---------------------------------------------------------------------------------------------
# a small world to call everything with: a 4-joint chain (hip → knee → ankle → toe), its
# rest pose and model matrices, a clip, a skinned quad


NAMES = ["hip", "knee", "ankle", "toe"]
PARENTS = [-1, 0, 1, 2]
OFFSETS = np.array([[0.0, 1.0, 0.0], [0.0, -0.5, 0.05], [0.0, -0.5, -0.05], [0.0, -0.1, 0.2]])


def skeleton() -> Skeleton:
    return Skeleton(NAMES, PARENTS, rest_translations=OFFSETS)


def pose(angle: float = 0.3, batch: tuple[int, ...] = ()) -> Pose:
    rotations = np.broadcast_to(quat_from_axis_angle([1.0, 0.0, 0.0], angle), (*batch, 4, 4)).copy()
    return Pose(np.broadcast_to(OFFSETS, (*batch, 4, 3)).copy(), rotations, np.ones((*batch, 4, 3)))


def model() -> np.ndarray:
    return model_from_pose(skeleton(), pose())


def clip() -> Clip:
    turn = Channel(
        1, "rotation", "LINEAR", [0.0, 1.0], [[0.0, 0.0, 0.0, 1.0], list(quat_from_axis_angle([1, 0, 0], 1))]
    )
    slide = Channel(0, "translation", "STEP", [0.0, 0.5], [[0.0, 1.0, 0.0], [0.0, 1.2, 0.0]])
    return Clip("walk", (turn, slide), 4)


def quad() -> MeshData:
    return MeshData(
        positions=[[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0]],
        indices=[0, 1, 2, 2, 1, 3],
        joints=[[0, 1, 0, 0]] * 4,
        weights=[[0.5, 0.5, 0.0, 0.0]] * 4,
    )


def palette() -> np.ndarray:
    return skinning_palette(skeleton(), model())


Q = np.array([0.0, 0.0, 0.0, 1.0])
Q2 = quat_from_axis_angle([0.0, 1.0, 0.0], 0.4)
P = np.array([0.5, 1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# the calls


@dataclass
class Call:
    """A valid call ``function(**arguments())`` of a public runtime callable.

    ``floats`` lists the arguments holding floating-point data and, for each, the name the
    error message must give (usually the argument's own name); ``always_checked`` those that
    are refused even inside ``trusted()`` (cheap scalar checks, and sample times).
    """

    function: Callable[..., Any]
    arguments: Callable[[], dict[str, Any]]
    floats: dict[str, str]
    always_checked: frozenset[str] = field(default_factory=frozenset)

    def run(self, arguments: dict[str, Any]) -> Any:
        return self.function(**arguments)


def same(*names: str) -> dict[str, str]:
    return {name: name for name in names}


def playing(method: str) -> Callable[..., Any]:
    """A method of a playing ``walk`` action (``Action.<m>``), of its animator (``Animator.<m>``) or of
    a blend space over ``walk`` and ``run`` (``BlendSpace1D.<m>``)."""
    owner, _, name = method.partition(".")

    def call(**arguments: Any) -> Any:
        animator = Animator(skeleton(), 2)
        walk = animator.action(clip()).play()
        run = animator.action(clip()).play()
        if owner == "Animator" and name == "blend_space_1d":
            arguments["points"] = [(arguments.pop("walk_at"), walk), (arguments.pop("run_at"), run)]
        if "other" in arguments:
            arguments["other"] = run
        target = {"Action": walk, "Animator": animator}.get(owner)
        if owner == "BlendSpace1D":
            target = animator.blend_space_1d([(0.0, walk), (1.0, run)])
        return getattr(target, name)(**arguments)

    call.__name__ = method
    return call


CALLS: dict[str, Call] = {
    # engine.anim: data constructors
    "Skeleton": Call(
        Skeleton,
        lambda: {"names": NAMES, "parents": PARENTS, "rest_translations": OFFSETS, "rest_rotations": pose().rotations},
        same("rest_translations", "rest_rotations"),
    ),
    "MatrixBuffer.from_array": Call(
        MatrixBuffer.from_array, lambda: {"matrices": np.tile(np.eye(4), (2, 4, 1, 1))}, same("matrices")
    ),
    "Pose": Call(
        Pose,
        lambda: {"translations": OFFSETS, "rotations": pose().rotations, "scales": np.ones((4, 3))},
        same("translations", "rotations", "scales"),
    ),
    "Channel": Call(
        Channel,
        lambda: {
            "target": 0,
            "path": "translation",
            "interpolation": "LINEAR",
            "times": [0.0, 1.0],
            "values": [[0.0, 0, 0], [1.0, 0, 0]],
        },
        same("times", "values"),
    ),
    "MeshData": Call(
        MeshData,
        lambda: {"positions": quad().positions, "weights": quad().weights, "joints": quad().joints},
        same("positions", "weights"),
    ),
    # engine.anim: jobs
    "sample": Call(
        sample,
        lambda: {"clip": clip(), "rest": skeleton().rest_pose, "times": [0.25, 0.75]},
        same("times"),
        always_checked=frozenset({"times"}),
    ),
    "sample_channel": Call(
        sample_channel,
        lambda: {"channel": clip().channels[0], "times": [0.25]},
        same("times"),
        always_checked=frozenset({"times"}),
    ),
    "local_to_model": Call(
        local_to_model,
        lambda: {"skeleton": skeleton(), "local": pose().matrices()},
        same("local"),
    ),
    "skinning_palette": Call(skinning_palette, lambda: {"skeleton": skeleton(), "model": model()}, same("model")),
    "joint_matrices": Call(
        joint_matrices,
        lambda: {"world_joints": model(), "world_mesh_node": np.eye(4), "inverse_bind": np.tile(np.eye(4), (4, 1, 1))},
        same("world_joints", "world_mesh_node", "inverse_bind"),
    ),
    "skin_vertices": Call(skin_vertices, lambda: {"palette": palette(), "mesh": quad()}, same("palette")),
    "skin_vertices_dq": Call(skin_vertices_dq, lambda: {"palette": palette(), "mesh": quad()}, same("palette")),
    "blend": Call(
        blend,
        lambda: {
            "poses": [pose(0.1), pose(0.5)],
            "weights": [0.3, 0.7],
            "mask": np.ones((2, 4)),
            "rest": skeleton().rest_pose,
        },
        same("weights", "mask"),
    ),
    "interpolate_poses": Call(interpolate_poses, lambda: {"a": pose(0.1), "b": pose(0.5), "t": 0.4}, same("t")),
    "slerp_chain": Call(slerp_chain, lambda: {"poses": [pose(0.1), pose(0.5)], "weights": [0.5, 0.5]}, same("weights")),
    "apply_additive": Call(
        apply_additive,
        lambda: {
            "base": pose(0.1),
            "delta": additive_pose(pose(0.5), pose(0.1)),
            "weight": 0.5,
            "mask": np.ones(4),
        },
        same("weight", "mask"),
    ),
    "apply_corrections": Call(
        apply_corrections,
        lambda: {"pose": pose(), "joints": [1], "corrections": [Q2]},
        same("corrections"),
    ),
    "subtree_mask": Call(
        subtree_mask,
        lambda: {"skeleton": skeleton(), "joints": "knee", "weight": 0.5},
        same("weight"),
        always_checked=frozenset({"weight"}),
    ),
    "two_bone_ik": Call(
        two_bone_ik,
        lambda: {
            "skeleton": skeleton(),
            "model": model(),
            "start": "hip",
            "mid": "knee",
            "end": "ankle",
            "target": [0.1, 0.3, 0.2],
            "pole": [0.0, 0.0, 1.0],
            "soften": 0.9,
            "twist": 0.1,
            "weight": 0.8,
        },
        same("model", "target", "pole", "soften", "twist", "weight"),
    ),
    "aim_ik": Call(
        aim_ik,
        lambda: {
            "skeleton": skeleton(),
            "model": model(),
            "chain": ["hip", "knee"],
            "target": [1.0, 0.0, 1.0],
            "forward": [0.0, 0.0, 1.0],
            "up": [0.0, 1.0, 0.0],
            "pole": [0.0, 1.0, 0.0],
            "offset": [0.0, 0.0, 0.0],
            "weight": 0.7,
        },
        same("model", "target", "forward", "up", "pole", "offset", "weight"),
    ),
    "ccd_ik": Call(
        ccd_ik,
        lambda: {
            "skeleton": skeleton(),
            "model": model(),
            "chain": ["hip", "knee", "ankle", "toe"],
            "target": [0.2, 0.3, 0.3],
            "max_swing": 1.0,
            "max_twist": 0.5,
            "weight": 0.9,
        },
        same("model", "target", "max_swing", "max_twist", "weight"),
    ),
    "fabrik_ik": Call(
        fabrik_ik,
        lambda: {
            "skeleton": skeleton(),
            "model": model(),
            "chain": ["hip", "knee", "ankle", "toe"],
            "target": [0.2, 0.3, 0.3],
            "max_swing": 1.0,
            "max_twist": 0.5,
            "weight": 0.9,
        },
        same("model", "target", "max_swing", "max_twist", "weight"),
    ),
    "propose_joint_map": Call(
        propose_joint_map,
        lambda: {"source": skeleton(), "target": skeleton(), "source_up": [0.0, 1.0, 0.0], "target_up": [0, 1.0, 0]},
        same("source_up", "target_up"),
    ),
    "plan_retarget": Call(
        plan_retarget,
        lambda: {
            "source": skeleton(),
            "target": skeleton(),
            "joint_map": {n: n for n in NAMES},
            "source_up": [0.0, 1.0, 0.0],
            "target_up": [0.0, 1.0, 0.0],
            "root_scale": 1.0,
        },
        same("source_up", "target_up", "root_scale"),
    ),
    "retarget_clip": Call(
        retarget_clip,
        lambda: {
            "plan": plan_retarget(skeleton(), skeleton(), {n: n for n in NAMES}),
            "clip": clip(),
            "times": [0.0, 0.5, 1.0],
        },
        same("times"),
        always_checked=frozenset({"times"}),
    ),
    # engine.animator
    "Animator.update": Call(
        playing("Animator.update"), lambda: {"dt": [1 / 60, 1 / 30]}, same("dt"), always_checked=frozenset({"dt"})
    ),
    "Animator.blend_space_1d": Call(
        playing("Animator.blend_space_1d"),
        lambda: {"walk_at": 0.0, "run_at": 1.0},
        {"walk_at": "positions", "run_at": "positions"},
    ),
    "Action.set_time": Call(playing("Action.set_time"), lambda: {"time": 0.3}, same("time")),
    "Action.set_speed": Call(playing("Action.set_speed"), lambda: {"speed": [1.5, -1.0]}, same("speed")),
    "Action.set_weight": Call(playing("Action.set_weight"), lambda: {"weight": 0.5}, same("weight")),
    "Action.set_mask": Call(playing("Action.set_mask"), lambda: {"mask": [1.0, 1.0, 0.5, 0.0]}, same("mask")),
    "Action.fade_in": Call(
        playing("Action.fade_in"), lambda: {"duration": 0.2}, same("duration"), always_checked=frozenset({"duration"})
    ),
    "Action.fade_out": Call(
        playing("Action.fade_out"), lambda: {"duration": 0.2}, same("duration"), always_checked=frozenset({"duration"})
    ),
    "Action.crossfade_to": Call(
        playing("Action.crossfade_to"),
        lambda: {"other": None, "duration": 0.2, "warp": True},
        same("duration"),
        always_checked=frozenset({"duration"}),
    ),
    "Action.warp": Call(
        playing("Action.warp"),
        lambda: {"start_speed": 1.0, "end_speed": 2.0, "duration": 0.5},
        same("start_speed", "end_speed", "duration"),
        always_checked=frozenset({"duration"}),
    ),
    "BlendSpace1D.set_parameter": Call(
        playing("BlendSpace1D.set_parameter"),
        lambda: {"value": 0.3, "weight": 0.8},
        same("value", "weight"),
    ),
    # engine.camera
    "look_at": Call(
        look_at,
        lambda: {"eye": P, "target": [0.0, 1.0, 0.0], "up": [0.0, 1.0, 0.0], "previous": Q},
        same("eye", "target", "up", "previous"),
    ),
    "look_at_matrix": Call(look_at_matrix, lambda: {"eye": P, "target": [0.0, 1.0, 0.0]}, same("eye", "target")),
    "view_matrix": Call(view_matrix, lambda: {"position": P, "orientation": Q2}, same("position", "orientation")),
    "camera_axes": Call(camera_axes, lambda: {"orientation": Q2}, same("orientation")),
    "cone_clamp": Call(
        cone_clamp,
        lambda: {"orientation": Q2, "centre": Q, "limit": 0.2},
        same("orientation", "centre", "limit"),
    ),
    "swing_twist": Call(swing_twist, lambda: {"orientation": Q2, "axis": [0.0, 0.0, 1.0]}, same("orientation", "axis")),
    "swing_twist_clamp": Call(
        swing_twist_clamp,
        lambda: {"orientation": Q2, "centre": Q, "swing_limit": 0.2, "twist_limit": 0.1},
        same("orientation", "centre", "swing_limit", "twist_limit"),
    ),
    "smooth_rotation": Call(
        smooth_rotation,
        lambda: {"current": Q, "target": Q2, "dt": 0.016, "half_life": 0.1},
        same("current", "target", "dt", "half_life"),
    ),
    "smooth_position": Call(
        smooth_position,
        lambda: {"current": P, "target": [0.0, 0.0, 0.0], "dt": 0.016, "stiffness": 5.0},
        same("current", "target", "dt", "stiffness"),
    ),
    "smooth_rotation_naive": Call(
        smooth_rotation_naive,
        lambda: {"current": Q, "target": Q2, "dt": 0.016, "smooth_factor": 5.0},
        same("current", "target", "dt", "smooth_factor"),
    ),
    "smooth_position_naive": Call(
        smooth_position_naive,
        lambda: {"current": P, "target": [0.0, 0.0, 0.0], "dt": 0.016, "smooth_factor": 5.0},
        same("current", "target", "dt", "smooth_factor"),
    ),
    "smoothing_alpha": Call(smoothing_alpha, lambda: {"dt": 0.016, "half_life": 0.1}, same("dt", "half_life")),
    "stiffness_from_half_life": Call(stiffness_from_half_life, lambda: {"half_life": 0.1}, same("half_life")),
    "half_life_from_stiffness": Call(half_life_from_stiffness, lambda: {"stiffness": 5.0}, same("stiffness")),
    "spring_stiffness_from_half_life": Call(
        spring_stiffness_from_half_life, lambda: {"half_life": 0.1}, same("half_life")
    ),
    "spring_position": Call(
        spring_position,
        lambda: {"position": P, "velocity": [0.0, 0.1, 0.0], "target": [0.0, 0.0, 0.0], "dt": 0.016, "half_life": 0.1},
        same("position", "velocity", "target", "dt", "half_life"),
    ),
    "spring_rotation": Call(
        spring_rotation,
        lambda: {"orientation": Q, "angular_velocity": [0.0, 0.1, 0.0], "target": Q2, "dt": 0.016, "stiffness": 9.0},
        same("orientation", "angular_velocity", "target", "dt", "stiffness"),
    ),
    "orbit_orientation": Call(orbit_orientation, lambda: {"yaw": 0.3, "pitch": -0.2}, same("yaw", "pitch")),
    "yaw_pitch_from_forward": Call(yaw_pitch_from_forward, lambda: {"forward": [0.3, -0.2, -1.0]}, same("forward")),
    "ease": Call(ease, lambda: {"name": "smoothstep", "u": 0.3}, same("u")),
    "one_euro_alpha": Call(one_euro_alpha, lambda: {"dt": 0.016, "cutoff": 1.0}, same("dt", "cutoff")),
    "one_euro_initial": Call(one_euro_initial, lambda: {"measurement": Q2}, same("measurement")),
    "one_euro_step": Call(
        one_euro_step,
        lambda: {
            "state": one_euro_initial(Q),
            "measurement": Q2,
            "dt": 0.016,
            "min_cutoff": 1.0,
            "beta": 0.1,
            "d_cutoff": 1.0,
        },
        same("measurement", "dt", "min_cutoff", "beta", "d_cutoff"),
    ),
    "kalman_initial": Call(
        kalman_initial,
        lambda: {"measurement": Q2, "measurement_noise": 0.01, "initial_velocity_std": 1.0},
        same("measurement", "measurement_noise", "initial_velocity_std"),
    ),
    "kalman_step": Call(
        kalman_step,
        lambda: {
            "state": kalman_initial(Q, 0.01),
            "measurement": Q2,
            "dt": 0.016,
            "measurement_noise": 0.01,
            "process_noise": 1.0,
        },
        same("measurement", "dt", "measurement_noise", "process_noise"),
    ),
    "OneEuroFilter": Call(
        OneEuroFilter,
        lambda: {"min_cutoff": 1.0, "beta": 0.1, "d_cutoff": 1.0},
        same("min_cutoff", "beta", "d_cutoff"),
    ),
    "KalmanOrientationFilter": Call(
        KalmanOrientationFilter,
        lambda: {"measurement_noise": 0.01, "process_noise": 1.0, "initial_velocity_std": 1.0},
        same("measurement_noise", "process_noise", "initial_velocity_std"),
    ),
    "Camera": Call(
        Camera,
        lambda: {"position": P, "orientation": Q2, "fov_y": 1.0, "near": 0.1, "far": 100.0},
        same("position", "orientation", "fov_y", "near", "far"),
    ),
    "CameraSequence": Call(
        CameraSequence,
        lambda: {
            "times": [0.0, 1.0, 2.0],
            "positions": [P, P + 1.0, P + 2.0],
            "orientations": [Q, Q2, Q],
            "kinds": ("blend", "blend"),
            "easings": ("linear", "linear"),
        },
        same("times", "positions", "orientations"),
    ),
    "FollowRig": Call(
        FollowRig,
        lambda: {
            "distance": 4.0,
            "pivot_offset": [0.0, 1.6, 0.0],
            "yaw": 0.1,
            "pitch": -0.3,
            "cone_limit": 1.0,
            "rotation_half_life": 0.08,
            "position_half_life": 0.05,
        },
        same("distance", "pivot_offset", "yaw", "pitch", "cone_limit", "rotation_half_life", "position_half_life"),
    ),
    "FollowRig.update": Call(
        lambda **kw: FollowRig(cone_limit=1.0).update(**kw),
        lambda: {
            "dt": 0.016,
            "target_position": P,
            "target_facing": Q2,
            "yaw_input": 0.1,
            "pitch_input": 0.05,
            "distance": 3.0,
        },
        same("dt", "target_position", "target_facing", "yaw_input", "pitch_input", "distance"),
    ),
    # the GPU boundary
    "pack_palette": Call(pack_palette, lambda: {"palettes": palette()[None]}, same("palettes")),
}

#: Public callables whose inputs hold no floating-point data of their own (they take objects
#: that were validated when they were built, or indices and names).
NO_FLOAT_INPUT = {
    "Clip": "channels (validated Channels), names and marker times (checked finite by Clip itself)",
    "Clips": "validated Clips by name",
    "CompiledClip": "built by compile_clip from a validated Clip",
    "IKResult": "returned by the IK solvers",
    "PoseBuffer": "filled by the jobs, or from a validated Pose (from_pose, assign)",
    "Workspace": "scratch memory: takes shapes, no numbers",
    "RetargetPlan": "built by plan_retarget",
    "additive_clip": "a Clip and a Pose, both validated when built",
    "additive_pose": "Poses, validated when built",
    "compile_clip": "a validated Clip",
    "model_from_pose": "a validated Pose",
    "restrict_clip": "a Clip and joint indices",
    "retarget_pose": "a RetargetPlan and a Pose",
    "KalmanState": "built by kalman_initial / kalman_step",
    "OneEuroState": "built by one_euro_initial / one_euro_step",
    "EASINGS": "a constant",
    "SPRING_HALF_LIFE_FACTOR": "a constant",
}


def poisoned(value: Any, bad: float) -> Any:
    """``value`` (a number or array) with its first element replaced by ``bad``."""
    array = np.array(value, dtype=np.float64, order="C")  # C order: reshape(-1) is a view, not a copy
    array.reshape(-1)[0] = bad
    return array if array.ndim else float(array)


SWEEP = [(name, argument, label) for name, call in CALLS.items() for argument in call.floats for label in BAD]


def test_every_public_runtime_callable_is_covered() -> None:
    public = set(engine.anim.__all__) | set(engine.camera.__all__)
    covered = {name.split(".")[0] for name in CALLS} | set(NO_FLOAT_INPUT)
    assert sorted(public - covered) == []
    assert sorted(set(NO_FLOAT_INPUT) - public) == []


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_valid_call_succeeds(name: str) -> None:
    call = CALLS[name]
    arguments = call.arguments()
    assert set(call.floats) <= set(arguments)
    call.run(arguments)


@pytest.mark.parametrize(("name", "argument", "label"), SWEEP, ids=[f"{n}-{a}-{b}" for n, a, b in SWEEP])
def test_nan_and_inf_are_rejected_naming_the_argument(name: str, argument: str, label: str) -> None:
    call = CALLS[name]
    arguments = call.arguments()
    arguments[argument] = poisoned(arguments[argument], BAD[label])
    expected = re.escape(call.floats[argument])
    with pytest.raises(InvalidInputError, match=rf"\b{expected}\b.*(finite|nan|inf)"):
        call.run(arguments)


@pytest.mark.parametrize(("name", "argument", "label"), SWEEP, ids=[f"{n}-{a}-{b}" for n, a, b in SWEEP])
def test_trusted_skips_the_scans(name: str, argument: str, label: str) -> None:
    """The fast path: no finiteness error inside ``trusted()`` (but for what is always checked)."""
    call = CALLS[name]
    arguments = call.arguments()
    arguments[argument] = poisoned(arguments[argument], BAD[label])
    if argument in call.always_checked:
        with trusted(), np.errstate(all="ignore"), pytest.raises(InvalidInputError):
            call.run(arguments)
        return
    refused: InvalidInputError | None = None
    try:
        with trusted(), np.errstate(all="ignore"):
            call.run(arguments)
    except InvalidInputError as exc:  # other checks (ranges, degenerate input) may still refuse
        refused = exc
    assert refused is None or "finite" not in str(refused), refused


def test_trusted_mode_returns_to_validating() -> None:
    with trusted():
        pass
    with pytest.raises(InvalidInputError, match="times must be finite"):
        sample(clip(), skeleton().rest_pose, [np.nan])
    with pytest.raises(InvalidInputError, match="palettes must be finite in float32"):
        pack_palette(poisoned(palette()[None], np.nan))


# ---------------------------------------------------------------------------------------------
# the GPU boundary


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e39, -4e38])
def test_pack_palette_refuses_what_is_not_finite_in_float32(value: float) -> None:
    palettes = np.broadcast_to(palette(), (3, 4, 4, 4)).copy()
    palettes[2, 1, 0, 3] = value
    with pytest.raises(InvalidInputError, match=r"palettes must be finite in float32, got NaN or inf at .* = \(2, 1\)"):
        pack_palette(palettes)


def test_pack_palette_in_trusted_mode_packs_without_looking() -> None:
    palettes = palette()[None].copy()
    palettes[0, 0, 0, 0] = np.nan
    with trusted():
        packed = pack_palette(palettes)
    assert packed.dtype == np.float32
    assert np.isnan(packed[0, 0, 0])


@given(
    times=st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=4),
    weights=st.lists(st.floats(0.0, 1e6), min_size=2, max_size=2).filter(lambda w: sum(w) > 1e-9),
    angle=st.floats(-1e3, 1e3),
    target=st.lists(st.floats(-1e6, 1e6), min_size=3, max_size=3),
)
def test_valid_extreme_inputs_never_put_nan_into_a_palette(
    times: list[float], weights: list[float], angle: float, target: list[float]
) -> None:
    """sample → blend → IK → model → palette → pack, with valid inputs far from the usual range."""
    rig, walk = skeleton(), clip()
    layers = [sample(walk, rig.rest_pose, times), pose(angle, (len(times),))]
    local = blend(rig.rest_pose, layers, weights)
    solved = two_bone_ik(rig, model_from_pose(rig, local), "hip", "knee", "ankle", target, [0.0, 0.0, 1.0])
    packed = pack_palette(skinning_palette(rig, model_from_pose(rig, solved.apply(local))))
    assert np.isfinite(packed).all()


def test_signature_names_match_the_table() -> None:
    """Every argument the table poisons is a real parameter of the callable (no silent typos)."""
    for name, call in CALLS.items():
        if "." in name:
            continue
        parameters = inspect.signature(call.function).parameters
        assert set(call.arguments()) <= set(parameters), name
