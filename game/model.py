"""Characters for the programs: the generated mannequin by default, any glTF scene or BVH take with ``--model``.

:func:`load_model` reads the whole default scene of a ``.gltf``/``.glb`` file
(:func:`engine.io.load_gltf`, its :class:`~engine.anim.scene.Scene`: skinned meshes of every skin,
rigid meshes under joints or any node, node-animated objects, morph targets) or a ``.bvh`` take
(converted in memory by :func:`engine.io.bvh_character.load_bvh_character`: its skeleton, its
motion as one clip and a bone mesh), then measures it **from its motion**, so that every program
places any file the same way.

The programs animate the scene's **node hierarchy** (:attr:`Model.skeleton` is
:attr:`Scene.hierarchy <engine.anim.scene.Scene.hierarchy>`, :attr:`Model.clips` its clips): one
:class:`~engine.animator.Animator` plays, blends and root-moves every node, joints of every skin
and plain nodes alike, IK works on its model matrices, and :meth:`Model.scene_frame` turns them
into the frame a :class:`~engine.render.SceneRenderer` draws, with the clips' morph weights. A file
without a skin is an **object** (:attr:`Model.root` is ``None``): it plays its clips, without gait,
root motion or IK.

The returned :class:`Model`'s ``frame`` maps the scene's world space to the **character frame**:
+Y up, +Z forward, metres, the lowest point of the first clip a program plays standing on ``y = 0``
and the root joint's mean ground position over that clip at the origin (an object's middle) —
whatever the file's units (the Fox is in centimetres), up axis (CesiumMan's skeleton is Z-up under
a correction node, which the scene's world space already includes), facing (CesiumMan walks along
+X) or rest pose (a BVH take's rest pose has the hips at the origin).

Measuring from motion (:mod:`game.bounds`): every clip is sampled over its duration and the box of
every vertex of the scene is taken at each sample. So

- **units**: the figure's animated height decides (:func:`game.measure.guess_unit`): a model whose height is
  not a plausible 0.25-3 m is read in the common unit that makes it one — an upright figure
  (taller than 1.5 × its depth along its facing) as a 1.4-2.2 m human
  (:func:`engine.anim.units.unit_for_height`, as the BVH reader does), anything else (the Fox) as
  the first of centimetres, inches, millimetres that fits. The assumption is one line of
  :attr:`Model.notes`; ``scale=`` overrides it.
- **ground**: each clip's lowest point over the clip is known (:attr:`Model.bounds`); a program
  that blends clips lowers the character by the weighted lowest points (:meth:`Model.ground`), so
  the feet of whatever plays touch the ground.
- **framing**: cameras frame the union of the boxes of the clips a program plays.

Facing and ground speed are read from the motion itself by :func:`game.measure.analyze_gait`: a clip whose
root joint travels is root motion (speed = travel / duration); an in-place clip moves its
planted feet backwards at the ground speed, so the median velocity of the lowest joints while
they touch the ground gives both the speed and, reversed, the direction of travel.

Clips are given roles by name (:func:`game.measure.clip_roles`): ``idle``/``survey``/``stand``, ``walk``,
``run``/``jog``, ``jump``, ``wave``. A program falls back on whatever is missing and says so.

Examples
--------
>>> model = load_model()                      # assets/mannequin.glb
>>> model.roles.walk, round(model.gaits["walk"].speed, 2), model.gaits["walk"].root_motion
('walk', 1.2, True)
>>> round(model.height, 2), model.reference
(1.85, 'idle')
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.anim.clip import Clip
from engine.anim.local_to_model import model_from_pose
from engine.anim.scene import MeshInstance, Scene, SceneClip, SceneFrame
from engine.anim.skeleton import Skeleton
from engine.anim.units import UNITS
from engine.animator import Action
from engine.errors import AssetError, InvalidInputError
from engine.io import load_gltf
from engine.io.bvh import UnitWarning, load_bvh
from engine.io.bvh_character import bvh_as_character, skin_bones
from engine.io.clip_files import refuse_clips_for_bvh
from engine.math import affine_inverse, matrix_from_trs, quat_from_axis_angle, transform_points
from engine.math._checks import FloatArray
from game.bounds import Bounds, ClipMotion, clip_motion, scene_frames
from game.measure import UPRIGHT_RATIO, ClipRoles, Gait, analyze_gait, clip_roles, guess_unit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT / "assets" / "mannequin.glb"
"""The generated mannequin (``ossa make-mannequin`` writes it)."""
SUFFIXES = (".gltf", ".glb", ".vrm", ".bvh")
"""The files ``--model`` takes."""


Playing = Iterable[tuple[str, float, float]]
"""Clips playing: ``(clip name, clip time in seconds, weight)`` each."""


@dataclass(frozen=True, eq=False)
class Model:
    """A loaded scene placed in the character frame (see the module docstring).

    Attributes
    ----------
    path
        The file read.
    scene
        The whole default scene: every mesh instance is drawn, every vertex is measured.
    clips
        The scene's clips over its hierarchy (:attr:`skeleton`), by name (file order), for the
        animators: each :class:`~engine.anim.scene.SceneClip`'s node channels plus its
        ``"weights"`` channels (pose sampling ignores those; they give the clip its full length,
        which a morph-only clip needs). :meth:`morph_weights` reads the weights.
    root
        Hierarchy index of the character's root (:func:`root_joint`: the skeleton's root joint, or
        an animated node above it) that root motion, gaits and the shadow follow; ``None`` for a
        scene without a skin, an **object**.
    frame
        ``(4, 4)`` scene world space → character frame: ``offset · facing · scale``. A character
        at world transform ``W`` draws with ``W @ frame`` (the ``placements`` of
        :meth:`engine.render.SceneRenderer.draw`).
    scale
        Metres per file unit (see :func:`game.measure.guess_unit`).
    unit
        The file's unit as assumed: ``"metres"``, ``"centimetres"``, ... or ``"--scale"`` when given.
    height
        How tall the figure stands while the :attr:`reference` clip plays, metres.
    reference
        The clip programs play first (the idle, else the walk, the run or the first clip; ``None``
        without clips): its lowest point is on ``y = 0`` and its root over the origin.
    root_motion
        Whether the gait clips carry their travel in the root joint (programs then play
        :attr:`root` without its planar motion, and :attr:`bounds` are measured that way).
    bounds
        :class:`~game.bounds.Bounds` of the figure over each clip, by clip name, character frame.
    rest_bounds
        Bounds of the rest pose, character frame.
    roles
        Clip names by role.
    gaits
        :class:`~game.measure.Gait` of the ``walk`` and ``run`` role clips and of the first clip, by clip name.
    notes
        One line per adjustment made (source, units, facing), for the programs' overlays.
    warnings
        Text of the loader's warnings (the programs show them instead of failing).
    standing
        Without an idle clip: each gait clip (walk, run, a lone clip that travels) → the clip time
        at which its lowest point is lowest (:func:`lowest_time`), where a program starts it and
        stands on it (the lowest point over the clip, on ``y = 0``, is then on the ground).
        Empty when the model has an idle clip.
    bones
        Whether the file has no mesh and its skins are drawn as bones (:func:`~engine.io.bvh_character.skin_bones`):
        an asset pack's file of clips, or a bare rig.
    """

    path: Path
    scene: Scene
    clips: Mapping[str, Clip]
    root: int | None
    frame: FloatArray
    scale: float
    unit: str
    height: float
    reference: str | None
    root_motion: bool
    bounds: Mapping[str, Bounds]
    rest_bounds: Bounds
    roles: ClipRoles
    gaits: dict[str, Gait]
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    standing: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    bones: bool = False

    @property
    def name(self) -> str:
        """The file's name without its suffix."""
        return self.path.stem

    @property
    def skeleton(self) -> Skeleton:
        """The scene's node hierarchy: what the animators play and IK bends (model space = scene world)."""
        return self.scene.hierarchy

    @property
    def is_object(self) -> bool:
        """Whether the scene has no skin: an animated object, without root joint, gaits or IK."""
        return self.root is None

    @property
    def mesh_nodes(self) -> int:
        """How many nodes of the scene draw a mesh."""
        return len(self.scene.instances)

    @property
    def in_place(self) -> int | None:
        """The node the programs play without its planar motion: :attr:`root` when :attr:`root_motion`."""
        return self.root if self.root_motion else None

    @cached_property
    def motion_frame(self) -> FloatArray:
        """``(4, 4)`` :attr:`root`'s parent space (where root motion is measured) → character frame."""
        parent = -1 if self.root is None else int(self.skeleton.parents[self.root])
        if parent < 0:
            return self.frame
        rest = model_from_pose(self.skeleton, self.skeleton.rest_pose)
        return self.frame @ rest[parent]

    def ground(self, weights: Mapping[str, float]) -> float:
        """Height of the lowest point of the clips playing at ``weights`` above ``y = 0``, character frame.

        The weighted mean of each clip's lowest point over the clip (the rest pose's when the
        weights sum to zero): a program draws the character this much lower to keep its feet on
        the ground whatever it blends. 0 for the :attr:`reference` clip alone.
        """
        total = sum(max(w, 0.0) for w in weights.values())
        if total <= 0.0:
            return float(self.rest_bounds.low[1])
        return sum(max(w, 0.0) * float(self.bounds[name].low[1]) for name, w in weights.items()) / total

    def to_model(self, points: Any) -> FloatArray:
        """Character-frame points ``(..., 3)`` (metres) in the skeleton's model space (file units).

        IK targets and other positions for :mod:`engine.anim.ik` are model-space points: a
        centimetre armature's are in centimetres, so a target given in metres must come through
        here (the demo's foot and look-at IK do).
        """
        return transform_points(affine_inverse(self.frame), np.asarray(points, dtype=np.float64))

    def motion_bounds(self, names: list[str] | tuple[str, ...] | None = None) -> Bounds:
        """The union of the bounds of clips ``names`` (default: every clip; the rest pose without clips)."""
        chosen = list(self.clips) if names is None else list(names)
        if not chosen:
            return self.rest_bounds
        return Bounds.union(self.bounds[name] for name in chosen)

    def morph_weights(self, playing: Playing) -> tuple[FloatArray, ...] | None:
        """Morph-target weights ``(T,)`` of every mesh instance while ``playing`` clips play; ``None``: the defaults.

        Each clip's weights (its ``"weights"`` channels at its time, the instance's defaults where
        it has none) count with the clip's weight; a total weight below 1 is filled with the
        defaults, as the rest pose fills in a pose blend, and a total above 1 is normalised.
        ``None`` (the defaults, what :meth:`engine.anim.scene.Scene.frame` takes) when no instance
        has morph targets.
        """
        scene = self.scene
        if not any(instance.num_targets for instance in scene.instances):
            return None
        chosen = [(scene.clips[name], float(time), max(float(w), 0.0)) for name, time, w in playing if w > 0.0]
        total = sum(w for _, _, w in chosen)
        mixed = [max(1.0 - total, 0.0) * weights for weights in scene.default_morph_weights()]
        for clip, time, weight in chosen:
            for k, weights in enumerate(scene.sample_morph_weights(clip, time)):
                mixed[k] = mixed[k] + weight * weights
        return tuple(weights / max(total, 1.0) for weights in mixed)

    def scene_frame(self, world: FloatArray, playing: Playing = ()) -> SceneFrame:
        """The scene frame to draw for node world matrices ``(C, N, 4, 4)`` while ``playing`` clips play.

        ``world`` are an animator's model matrices over :attr:`skeleton` (after IK); the morph
        weights are :meth:`morph_weights` of ``playing``, the same for all ``C``.
        """
        return self.scene.frame(world, self.morph_weights(playing))

    def sample_frame(self, name: str | None, times: FloatArray) -> SceneFrame:
        """The scene at ``times`` ``(T,)`` of clip ``name`` (``None``: the rest pose) as the programs play it alone.

        :attr:`root` plays in place when :attr:`root_motion`; world matrices are in scene world
        space (draw with :attr:`frame` as the placement).
        """
        clip = self.clips[name] if name is not None else None
        return scene_frames(self.scene, clip, times, np.eye(4), in_place=self.in_place)


def playing_clips(actions: Iterable[Action], character: int = 0) -> list[tuple[str, float, float]]:
    """``(clip name, time, effective weight)`` of the non-additive actions of animator row ``character``."""
    return [
        (action.clip.name, float(action.time[character]), float(action.effective_weight[character]))
        for action in actions
        if not action.additive
    ]


def body_weights(actions: Iterable[Action], character: int = 0, root: int | None = 0) -> dict[str, float]:
    """How much each clip shapes the body of animator row ``character``, for :meth:`Model.ground`.

    Each non-additive action counts with its effective weight times its mask at the ``root``
    node (an arm-only layer such as the demo's wave counts 0: it does not move the feet; an
    object, ``root=None``, counts every action whole).
    """
    weights: dict[str, float] = {}
    for action in actions:
        if not action.additive:
            mask = 1.0 if action.mask is None or root is None else float(action.mask[root])
            weights[action.clip.name] = (
                weights.get(action.clip.name, 0.0) + float(action.effective_weight[character]) * mask
            )
    return weights


@dataclass(frozen=True)
class _Source:
    """What a file holds, before measuring; ``unit`` (name, metres per file unit) when the BVH reader read it."""

    scene: Scene
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    unit: tuple[str, float] | None = None
    bones: bool = False


def _read(path: Path, scale: float | None, clips: Sequence[Path]) -> _Source:
    """Read a ``.gltf``/``.glb``/``.vrm`` scene (``clips``: files of more clips) or convert a ``.bvh`` take."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InvalidInputError(
            f"--model {path}: expected a .gltf, .glb, .vrm or .bvh file, got {suffix or 'no suffix'!r}"
        )
    refuse_clips_for_bvh(path, clips)
    if not path.is_file():
        hint = " (run `ossa make-mannequin` to write it)" if path == DEFAULT_MODEL else ""
        raise AssetError(f"model file not found{hint}", file=str(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", UnitWarning)  # said as a note below
        if suffix == ".bvh":
            anim = load_bvh(path, scale=scale)  # ossa's rule for the unit: the one BVH reader decides
            scene = bvh_as_character(anim).scene
            unit = "--scale" if scale is not None else next(name for name in UNITS if anim.unit.startswith(name))
            notes: tuple[str, ...] = (
                f"a BVH take, converted in memory ({scene.skins[0].num_joints} joints, bone mesh)",
                *([f"lengths read as {anim.unit} (--scale to change)"] if scale is None else []),
                *([anim.calibration_note] if anim.calibration_note else []),
            )
            return _Source(scene, notes, tuple(str(w.message) for w in caught), (unit, anim.scale))
        asset = load_gltf(path, clips=clips)
        scene = asset.scene if asset.scene.instances else with_bones(asset.scene)
        bones = not asset.scene.instances and bool(scene.instances)
        if bones:
            notes = (f"no mesh in the file: its skin{'s' if len(scene.instances) > 1 else ''} drawn as bones",)
        else:
            notes = () if scene.instances else ("the scene draws no mesh: nothing to see but the skeleton (F1/B)",)
        notes += tuple(f"clips from {clip_file.report()}" for clip_file in asset.clip_files)
    return _Source(scene, notes, tuple(str(w.message) for w in caught), bones=bones)


def with_bones(scene: Scene) -> Scene:
    """``scene`` (with skins, without mesh instances) with each skin drawn as bones (:func:`skin_bones`).

    Each skin's bones are an instance at the first of its joints (else of the nodes) that no other
    instance holds: a skinned instance's node does not place it. A skin without a bone (one joint)
    and skins beyond the nodes' count (skins of the same joints, a node each) are not drawn.
    """
    instances: list[MeshInstance] = []
    taken: set[int] = set()
    for s, skin in enumerate(scene.skins):
        bones = skin_bones(scene, s)
        nodes = (*(int(j) for j in skin.joints), *range(scene.hierarchy.num_joints))
        node = next((n for n in nodes if n not in taken), None)
        if node is None or not bones.num_vertices:
            continue
        taken.add(node)
        instances.append(MeshInstance(node, s, (bones,), name=f"bones of {skin.name or f'skin {s}'}"))
    return replace(scene, instances=tuple(instances))


def playable_clip(clip: SceneClip) -> Clip:
    """``clip``'s node channels and its ``"weights"`` channels as one :class:`Clip` over the hierarchy."""
    if not clip.weights:
        return clip.nodes
    nodes = clip.nodes
    return Clip(nodes.name, (*nodes.channels, *clip.weights), nodes.num_targets, nodes.markers)


def root_joint(scene: Scene) -> int | None:
    """The character's root: the top-most of the skins' joints and their animated ancestors; ``None`` without a skin.

    Usually the skeleton's root joint. A node above it counts when a clip moves it (an animated
    armature), and so does an animated ancestor of a partial skin (a character of rigid parts
    whose skins cover its hands only: its root bone, not a wrist). Ties go to the first node.
    """
    parents = scene.hierarchy.parents
    joints = {int(j) for skin in scene.skins for j in skin.joints}
    if not joints:
        return None
    animated = {channel.target for clip in scene.clips.values() for channel in clip.nodes.channels}
    candidates = set(joints)
    for joint in joints:
        node = int(parents[joint])
        while node >= 0:
            if node in animated:
                candidates.add(node)
            node = int(parents[node])
    depth = np.zeros(len(parents), dtype=int)
    for node, parent in enumerate(parents):  # parents precede children
        depth[node] = depth[parent] + 1 if parent >= 0 else 0
    return min(candidates, key=lambda node: (depth[node], node))


def load_model(
    path: str | Path | None = None, *, scale: float | None = None, clips: Sequence[str | Path] = ()
) -> Model:
    """Load ``path`` (default :data:`DEFAULT_MODEL`) and measure it into a :class:`Model`.

    Parameters
    ----------
    path
        A ``.gltf``, ``.glb`` (any scene: characters, rigid parts, animated objects, morphs) or
        ``.bvh`` file.
    scale
        Metres per file unit; ``None`` guesses it from the animated height (:func:`game.measure.guess_unit`).
    clips
        glTF files whose clips to add, bound to the model's nodes by name (``--clips``).

    Raises
    ------
    AssetError
        The file is missing or malformed (the message says where).
    InvalidInputError
        The file is not ``.gltf``, ``.glb`` or ``.bvh``, or ``scale`` is not a positive number.
    """
    path = Path(path) if path is not None else DEFAULT_MODEL
    if scale is not None and not (np.isfinite(scale) and scale > 0.0):
        raise InvalidInputError(f"--scale must be a positive number of metres per unit, got {scale}")
    source = _read(path, scale, [Path(c) for c in clips])
    scene = source.scene
    skeleton = scene.hierarchy
    playable = MappingProxyType({name: playable_clip(clip) for name, clip in scene.clips.items()})
    root = root_joint(scene)
    notes = list(source.notes)
    roles = clip_roles(list(playable))
    first = next((n for n, c in playable.items() if c.duration > 0.0), next(iter(playable), None))  # not Godot's RESET
    measured = roles.idle or roles.walk or roles.run or first
    # 1. facing, from the gait's direction of travel, in file units (the thresholds scale with the height)
    identity = np.eye(4)
    raw = clip_motion(scene, playable[measured] if measured else None, identity, root=root)
    probe = roles.walk or roles.run or first
    yaw = 0.0
    if probe is not None and root is not None:
        travel = analyze_gait(skeleton, playable[probe], identity, raw.height, root).direction
        yaw = float(np.round(np.arctan2(travel[0], travel[2]) / (np.pi / 2)) * (np.pi / 2))  # models are axis-aligned
    if yaw != 0.0:
        notes.append(f"'{probe}' travels {np.degrees(yaw):+.0f}° from +Z: turned to face +Z")
    facing = matrix_from_trs(np.zeros(3), quat_from_axis_angle([0.0, 1.0, 0.0], -yaw), np.ones(3))
    # 2. units: as the BVH reader read them (a take is in metres already), else from the animated height and
    # whether the figure stands upright (taller than deep)
    faced = raw.transformed(facing)
    depth = float(np.median(faced.highs[:, 2] - faced.lows[:, 2]))
    if source.unit is not None:
        (unit, scale), factor = source.unit, 1.0
    elif scale is None:
        scale, unit, assumed = guess_unit(raw.height, raw.height >= UPRIGHT_RATIO * depth, root is not None)
        factor = scale
        if assumed:
            notes.append(f"{assumed}" + (f", scaled by {scale:g}" if scale != 1.0 else "") + " (--scale to change)")
    else:
        unit, factor = "--scale", scale
    base = facing @ np.diag([factor, factor, factor, 1.0])
    height = raw.height * factor
    # 3. gaits, then every clip's bounds as the programs play it, and the offset that grounds the reference
    gaits = {
        name: analyze_gait(skeleton, playable[name], base, height, root) if root is not None else Gait(0.0)
        for name in dict.fromkeys(n for n in (roles.walk, roles.run, first) if n is not None)
    }
    root_motion = any(g.root_motion for g in gaits.values())
    motions: dict[str | None, ClipMotion] = {
        name: clip_motion(scene, playable[name] if name else None, base, root=root, in_place=root_motion)
        for name in (None, *playable)
    }
    # 4. standing still without an idle clip: each gait at the phase of its lowest point
    standing = {} if roles.idle else {name: lowest_time(motions[name]) for name, g in gaits.items() if g.moves}
    if standing:
        notes.append(
            "no idle clip: standing still on "
            + ", ".join(f"'{name}' at {time:.2f} s" for name, time in standing.items())
            + " (the lowest point of each)"
        )
    reference = roles.idle or roles.walk or roles.run or first
    shown = motions[reference]
    centre = shown.roots.mean(axis=0)
    offset = np.array([-centre[0], -float(shown.lows[:, 1].min()), -centre[2]])
    frame = matrix_from_trs(offset, [0.0, 0.0, 0.0, 1.0], np.ones(3)) @ base
    return Model(
        path=path,
        scene=scene,
        clips=playable,
        root=root,
        frame=frame,
        scale=float(scale),
        unit=unit,
        height=float(shown.height),
        reference=reference,
        root_motion=root_motion,
        bounds=MappingProxyType({name: motions[name].bounds.shifted(offset) for name in playable}),
        rest_bounds=motions[None].bounds.shifted(offset),
        roles=roles,
        gaits=gaits,
        notes=tuple(notes),
        warnings=source.warnings,
        standing=MappingProxyType(standing),
        bones=source.bones,
    )


def lowest_time(motion: ClipMotion) -> float:
    """The clip time at which the figure's lowest point is lowest (the first such sample)."""
    return float(motion.times[int(np.argmin(motion.lows[:, 1]))])
