"""Clips stored in other files (animation-only GLBs of an asset pack), bound to a character by node name.

Asset packs and character downloads (Mixamo, KayKit, Quaternius) ship a character and its clips
in separate glTF files, each clip file holding the same rig without a mesh. :func:`attach_clips`
reads each file, binds every channel of its clips to the node of the same name in the
character's file, and returns the character's asset with those clips added — to
:attr:`GltfAsset.clips <engine.io.build.GltfAsset.clips>`, to each skin's clips and to the
scene's clips (morph-weight channels too, when the mesh there has as many targets) — and one
:class:`ClipFile` per file saying what bound and what did not, on either side. A file none of
whose animated nodes the character has is refused; partial overlap (a clip rig with two extra
hand-slot joints) is reported, not refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.anim.clip import Channel, Clip
from engine.anim.scene import Scene, SceneClip
from engine.errors import AssetError, InvalidInputError

if TYPE_CHECKING:
    from engine.io.build import GltfAsset


@dataclass(frozen=True)
class ClipFile:
    """How one clip file bound to a character.

    Attributes
    ----------
    path
        The clip file.
    clips
        The names its clips were added under (a name the character has already gets the file's
        stem in front: ``Med_General/T-Pose``, and ``#2``, ``#3``… after that if need be).
    bound
        Names of the nodes its clips animate that the character has.
    not_in_character
        Names of the nodes its clips animate that the character lacks (those channels are left out).
    not_animated
        Names of the character's joints that none of its clips animates (they keep their rest pose).
    """

    path: Path
    clips: tuple[str, ...]
    bound: tuple[str, ...]
    not_in_character: tuple[str, ...]
    not_animated: tuple[str, ...]

    def report(self) -> str:
        """One line: what bound and what is missing on either side."""
        text = (
            f"{self.path.name}: {len(self.clips)} clip(s) bound by node name to {len(self.bound)} of the character's "
            f"nodes"
        )
        if self.not_in_character:
            text += f"; not in the character (left out): {', '.join(self.not_in_character)}"
        if self.not_animated:
            text += f"; joints its clips do not animate (rest pose): {', '.join(self.not_animated)}"
        return text


def refuse_clips_for_bvh(path: Path, clips: Sequence[object]) -> None:
    """Clip files bind glTF clips to a glTF character's nodes; a BVH take (``path``) has its one clip."""
    if clips and path.suffix.lower() == ".bvh":
        raise InvalidInputError(f"--clips binds glTF clips to a glTF character; {path.name} is a BVH take")


def attach_clips(asset: GltfAsset, sources: Sequence[GltfAsset]) -> GltfAsset:
    """``asset`` with the clips of every loaded clip file in ``sources`` bound to it by node name.

    See the module docstring; :func:`engine.io.load_gltf` (``clips=``) reads the files.

    Raises
    ------
    AssetError
        None of the nodes a file's clips animate is named as one of the character's, or a
        morph-weight channel does not fit the mesh of the node it names.
    """
    hierarchy = asset.hierarchy
    by_name = {name: h for h, name in enumerate(hierarchy.names)}
    clips = list(asset.clips)
    scene_clips = dict(asset.scene.clips)
    skin_clips = [list(skin.clips) for skin in asset.skins]
    skin_slots = [_slots(asset, s) for s in range(len(asset.skins))]
    targets = {instance.node: instance.num_targets for instance in asset.scene.instances}
    position = {int(n): h for h, n in enumerate(asset.node_indices)}
    joints = {
        hierarchy.names[position[int(n)]]
        for skin in asset.skins
        for n in skin.joint_nodes[skin.is_joint]
        if int(n) in position
    }
    taken = set(scene_clips)
    reports = []
    for source in sources:
        file = source.path
        names = source.hierarchy.names
        animated = sorted(
            {names[c.target] for clip in source.clips for c in clip.channels}
            | {names[c.target] for clip in source.scene.clips.values() for c in clip.weights}
        )
        bound = [name for name in animated if name in by_name]
        if not bound:
            raise AssetError(
                f"none of the {len(animated)} nodes its clips animate ({_few(animated)}) is named as a node of the "
                f"character ({_few(sorted(joints) or hierarchy.names)}): nothing to bind",
                file=str(file),
            )
        added = []
        for clip, scene_clip in zip(source.clips, source.scene.clips.values(), strict=True):
            name = clip.name if clip.name not in taken else f"{file.stem}/{clip.name}"
            repeat = 2
            while name in taken:  # two clip files of the same name
                name, repeat = f"{file.stem}/{clip.name}#{repeat}", repeat + 1
            taken.add(name)
            added.append(name)
            channels = tuple(_rebound(c, by_name[names[c.target]]) for c in clip.channels if names[c.target] in by_name)
            nodes = Clip(name, channels, hierarchy.num_joints, clip.markers)
            weights = tuple(
                _weights(file, name, c, names[c.target], by_name[names[c.target]], targets)
                for c in scene_clip.weights
                if names[c.target] in by_name
            )
            clips.append(nodes)
            scene_clips[name] = SceneClip(name, nodes, weights)
            for s, slots in enumerate(skin_slots):
                kept = tuple(_rebound(c, slots[c.target]) for c in nodes.channels if c.target in slots)
                skin_clips[s].append(Clip(name, kept, asset.skins[s].skeleton.num_joints, clip.markers))
        missing = tuple(name for name in animated if name not in by_name)
        unanimated = tuple(sorted(joints - set(animated)))
        reports.append(ClipFile(file, tuple(added), tuple(bound), missing, unanimated))
    scene = asset.scene
    return replace(
        asset,
        clips=tuple(clips),
        skins=tuple(replace(skin, clips=tuple(skin_clips[s])) for s, skin in enumerate(asset.skins)),
        scene=Scene(scene.hierarchy, scene.skins, scene.instances, scene_clips, name=scene.name),
        clip_files=(*asset.clip_files, *reports),
    )


def _slots(asset: GltfAsset, s: int) -> dict[int, int]:
    """Hierarchy index → skeleton index of skin ``s``'s entries (those in the hierarchy)."""
    position = {int(n): h for h, n in enumerate(asset.node_indices)}
    return {position[int(n)]: k for k, n in enumerate(asset.skins[s].joint_nodes) if int(n) in position}


def _rebound(channel: Channel, target: int) -> Channel:
    """``channel`` on another target index."""
    return Channel(target, channel.path, channel.interpolation, channel.times, channel.values)


def _weights(file: Path, clip: str, channel: Channel, node: str, target: int, targets: dict[int, int]) -> Channel:
    """A morph-weight channel on the character's node ``node`` (hierarchy ``target``), checked against its mesh."""
    width = channel.values.shape[-1]
    if targets.get(target) != width:
        has = f"a mesh of {targets[target]} morph targets" if target in targets else "no mesh"
        raise AssetError(
            f"clip {clip!r} animates {width} morph weights of {node!r}, but the character's {node!r} has {has}",
            file=str(file),
        )
    return _rebound(channel, target)


def _few(names: Sequence[str], count: int = 6) -> str:
    """The first ``count`` of ``names``, then how many more."""
    shown = ", ".join(repr(n) for n in names[:count])
    return shown + (f" and {len(names) - count} more" if len(names) > count else "")
