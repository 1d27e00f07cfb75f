"""After the blend: the player's model matrices and palette, once a frame, and its compiled frame state.

:class:`Composer` owns a player's pose, model and palette buffers (batch-innermost,
:mod:`engine.anim.layout`) and what is stale in them: after a pose every joint, after a stage's
edit (:meth:`Composer.pose_changed`) only that joint's subtree. :meth:`Composer.update_model`
composes what is stale (the whole skeleton once, then only subtrees), :meth:`Composer.finalize`
the palette, once, and on request the upload records. On the compiled backend the whole-skeleton
pass and the palette are one call of the kernels (:class:`~engine.backend.BufferFrame`), made
by :class:`CompiledLayers` from the player's layers.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.anim.local_to_model import model_from_pose
from engine.anim.rootmotion import UP, parent_up
from engine.anim.skeleton import Skeleton
from engine.anim.skinning import skinning_palette
from engine.backend import BufferFrame, ClipBank, FrameState, default_threads
from engine.backend.buffers import check_records
from engine.backend.select import compiled_module
from engine.backend.stage import CaptureFrame
from engine.errors import SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray
from engine.player.capture import VelocityTables
from engine.player.layers import LayerTable


def player_threads(threads: int | None) -> int:
    """Threads of a player's compiled calls: ``threads`` when given, else ``OSSA_THREADS`` when set, else 1.

    Not every CPU by default, unlike a crowd's :class:`~engine.backend.FrameState`: the
    player's compiled calls sit between numpy work, and with the other cores busy (a game's
    render and audio threads, other processes) each parallel call waits for a descheduled worker
    (measured on a shared 2-core machine: 2 threads made a 100-character update 10× slower than 1).
    """
    if threads is not None:
        return threads
    return default_threads() if os.environ.get("OSSA_THREADS") else 1


def kernel_blocks(threads: int, count: int) -> int:
    """Blocks a compiled call on ``threads`` threads splits ``count`` items into (1 or less: serial).

    The backend's rule (:func:`engine.backend._threads.parallel_blocks`), for a controller's own
    kernels run on the player's threads (the graph's write-back).
    """
    return int(compiled_module("engine.backend._threads").parallel_blocks(threads, count))


def joint_index(skeleton: Skeleton, joint: str | int, name: str) -> int:
    """The index of ``joint`` (a name or an index) in ``skeleton``; errors name the argument ``name``."""
    if isinstance(joint, str):
        try:
            return skeleton.index(joint)
        except SkeletonMismatchError as error:
            raise SkeletonMismatchError(f"{name}: {error}") from None
    if isinstance(joint, bool) or not 0 <= int(joint) < skeleton.num_joints:
        raise SkeletonMismatchError(f"{name}: joint index {joint} is out of range for {skeleton.num_joints} joints")
    return int(joint)


def subtree_roots(parents: IntArray, joints: set[int]) -> list[int]:
    """The joints of ``joints`` with no ancestor in the set, ascending (their subtrees cover the rest)."""
    roots = []
    for joint in sorted(joints):  # a handful of edited joints
        ancestor = int(parents[joint])
        while ancestor >= 0 and ancestor not in joints:
            ancestor = int(parents[ancestor])
        if ancestor < 0:
            roots.append(joint)
    return roots


class CompiledLayers:
    """The kernels' frame state over a player's layers and buffers, made again when layers are added.

    One kernel layer per player layer, playing its clip (clips shared by layers packed once), the
    root-motion joint ``root`` played in place by the kernels; additive layers keep weight 0 there
    (:attr:`factors`: 0 or 1 per layer) — their deltas are added afterwards, by the numpy pass, on
    both backends.
    """

    def __init__(
        self,
        skeleton: Skeleton,
        table: LayerTable,
        buffers: tuple[PoseBuffer, MatrixBuffer, MatrixBuffer],
        root: int | None = None,
    ) -> None:
        self.skeleton, self.table, self.buffers, self.root = skeleton, table, buffers, root
        self._made: tuple[int, BufferFrame, FloatArray] | None = None
        self._captures: tuple[int, CaptureFrame | None] | None = None

    def frame(self, threads: int) -> tuple[BufferFrame, FloatArray]:
        """The :class:`~engine.backend.BufferFrame` and the layers' 0/1 factors (additive layers 0)."""
        table = self.table
        if self._made is None or self._made[0] != table.version:
            blended = [r for r, layer in enumerate(table.layers) if not layer.additive]
            slot: dict[int, int] = {}
            clips: list[Any] = []
            for r in blended:
                compiled = table.layers[r].compiled
                if id(compiled) not in slot:
                    slot[id(compiled)] = len(clips)
                    clips.append(compiled)
            count = table.raw.shape[1]
            state = FrameState(
                ClipBank(self.skeleton, clips),
                table.count,
                count,
                overrides=table.override_spans.shape[0],
                threads=threads,
                in_place=self.root,
                up=UP if self.root is None else parent_up(self.skeleton, self.root),
            )
            for r in blended:
                state.play(r, slot[id(table.layers[r].compiled)])
            for r, layer in enumerate(table.layers):
                state.set_mask(r, layer.mask)
            for g, (start, stop) in enumerate(table.override_spans.tolist()):
                state.set_override(g, range(start, stop), table.override_masks[g])
            factors = np.array([[0.0] if layer.additive else [1.0] for layer in table.layers])
            self._made = (table.version, BufferFrame(state, *self.buffers), factors)
        return self._made[1], self._made[2]

    def captures(self, threads: int, tables: VelocityTables) -> CaptureFrame | None:
        """Captures of the blended layers on the kernels, or ``None`` when one plays a cubic clip (numpy then)."""
        table = self.table
        if self._captures is None or self._captures[0] != table.version:
            blended = [
                None if layer.additive else tables.of(r, layer, self.skeleton) for r, layer in enumerate(table.layers)
            ]
            usable = all(
                found is not None for found, layer in zip(blended, table.layers, strict=True) if not layer.additive
            )
            frame = CaptureFrame(self.frame(threads)[0].state, blended) if usable else None
            self._captures = (table.version, frame)
        return self._captures[1]

    def set_mask(self, row: int, mask: FloatArray | None) -> None:
        """Follow a layer's new mask (no new state)."""
        if self._made is not None:
            self._made[1].state.set_mask(row, mask)


class Composer:
    """A player's model matrices and palette of its pose buffer, composed once (module docstring).

    With ``character_major`` the buffers keep each character's numbers together in memory (the
    order the compiled kernels write, one character at a time: contiguous), seen through the same
    batch-innermost buffer types; else batch-innermost (the order the numpy jobs read fastest).

    Attributes
    ----------
    pose_buffer, model_buffer, palette_buffer
        The local pose (:class:`~engine.anim.layout.PoseBuffer`), model matrices and skinning
        palette (:class:`~engine.anim.layout.MatrixBuffer`) of ``C`` characters.
    """

    def __init__(self, skeleton: Skeleton, count: int, *, character_major: bool = False) -> None:
        joints = skeleton.num_joints
        self.skeleton = skeleton
        if character_major:  # the kernels' order in memory, seen through the batch-innermost buffer types
            t, r, s = (np.empty((count, joints, width)).transpose(2, 1, 0) for width in (3, 4, 3))
            pose = PoseBuffer(t, r, s, (count,))
            model = MatrixBuffer(np.empty((count, joints, 4, 4)).transpose(2, 3, 1, 0), (count,))
            palette = MatrixBuffer(np.empty((count, joints, 4, 4)).transpose(3, 2, 1, 0), (count,))  # column-major
        else:
            pose, model, palette = (
                PoseBuffer.empty(count, joints),
                MatrixBuffer.empty(count, joints),
                MatrixBuffer.empty(count, joints),
            )
        self.pose_buffer = pose.assign(skeleton.rest_pose)
        self.model_buffer = model_from_pose(skeleton, self.pose_buffer, out=model)
        self.palette_buffer = skinning_palette(skeleton, self.model_buffer, out=palette)
        self.workspace = Workspace()
        self._stale: set[int] | None = set()  # joints whose subtrees need model matrices; None: all
        self._palette_stale = False
        self._characters: IntArray | None = None
        self._unkept = np.zeros(count, dtype=bool)  # characters whose model matrices a finalize did not store

    @property
    def buffers(self) -> tuple[PoseBuffer, MatrixBuffer, MatrixBuffer]:
        """``(pose_buffer, model_buffer, palette_buffer)``."""
        return self.pose_buffer, self.model_buffer, self.palette_buffer

    def posed(self, characters: IntArray | None) -> None:
        """The pose of ``characters`` (``None``: all) was written: everything of theirs is stale."""
        self._stale, self._palette_stale, self._characters = None, True, characters

    def pose_changed(self, joint: int) -> None:
        """Joint ``joint`` of the pose (and below) was edited: its subtree is composed again."""
        if self._stale is not None:
            self._stale.add(joint)
        self._palette_stale = True

    def update_model(self, compiled: BufferFrame | None, backend: str | None) -> MatrixBuffer:
        """Model matrices up to date: the whole skeleton once (no palette: stages may edit), then stale subtrees.

        Characters whose matrices a :meth:`finalize` without ``model`` did not store are composed
        whole first (with the posed ones).
        """
        if self._unkept.any() and compiled is not None:
            if self._stale is None:  # the posed characters too, in the same pass
                posed = np.arange(self._unkept.size) if self._characters is None else self._characters
                self._unkept[posed] = True
                self._stale = set()
            compiled.finalize(characters=np.flatnonzero(self._unkept), backend=backend, palette=False)
            self._unkept[:] = False
            self._palette_stale = True
        if self._stale is None and compiled is not None:  # every joint; the palette waits for the stages' edits
            compiled.finalize(characters=self._characters, backend=backend, palette=False)
            self._palette_stale = True
        elif self._stale is None:
            model_from_pose(self.skeleton, self.pose_buffer, out=self.model_buffer, workspace=self.workspace)
        elif self._stale:
            for joint in subtree_roots(self.skeleton.parents, self._stale):
                model_from_pose(
                    self.skeleton, self.pose_buffer, out=self.model_buffer, from_joint=joint, workspace=self.workspace
                )
        self._stale = set()
        return self.model_buffer

    def finalize(
        self,
        compiled: BufferFrame | None,
        backend: str | None,
        records: np.ndarray | None,
        *,
        model: bool = True,
        pending: IntArray | None = None,
    ) -> MatrixBuffer:
        """Model matrices and the palette, once; the palette also into ``records`` (column-major) when given.

        Without ``model`` (records given, compiled, nothing composed since the pose) the model
        matrices are not stored: :meth:`update_model` composes them when asked. ``pending``
        (compiled, nothing composed since the pose): the posed characters still to compose, the
        others composed into these outputs with their pose (``Player.end_frame``).
        """
        if records is not None:
            check_records(records, self.pose_buffer.shape)
        if self._stale is None and compiled is not None:  # nothing composed since the pose: one pass for both
            keep = model or records is None
            rest = self._characters if pending is None else pending
            if rest is None or rest.size:
                compiled.finalize(records=records, characters=rest, backend=backend, model=keep)
            if not keep:
                self._unkept[slice(None) if self._characters is None else self._characters] = True
            self._stale, self._palette_stale = set(), records is not None  # with records, the palette went there only
            return self.palette_buffer
        self.update_model(compiled, backend)
        if self._palette_stale:
            skinning_palette(self.skeleton, self.model_buffer, out=self.palette_buffer, workspace=self.workspace)
            self._palette_stale = False
        if records is not None:
            np.copyto(records, self.palette_buffer.entries.transpose(3, 2, 1, 0), casting="same_kind")
        return self.palette_buffer
