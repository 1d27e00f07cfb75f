"""The frame jobs on batch-innermost buffers: the :class:`~engine.player.Player`'s compiled path.

The crowd jobs of :mod:`engine.backend.frame` read and write character-major arrays; a player
keeps its frame in the batch-innermost buffers of :mod:`engine.anim.layout` instead
(:class:`~engine.anim.layout.PoseBuffer`, :class:`~engine.anim.layout.MatrixBuffer`), which its
post-blend stages (IK) read and edit. A :class:`BufferFrame` binds a
:class:`~engine.backend.state.FrameState` to such a set of buffers: the compiled kernels take
them as strided views (no copy, no transposition pass), the numpy backend runs the batched jobs
of :mod:`engine.anim` on them.

- :meth:`BufferFrame.sample_blend`: every layer sampled and blended into the pose buffer;
- :meth:`BufferFrame.finalize`: the pose buffer to the model matrices and the palette (row-major
  in :class:`~engine.anim.layout.MatrixBuffer` order, float64, as
  :func:`~engine.anim.skinning.skinning_palette` writes it), or the palette into a caller's
  float32 upload array (column-major records, as :func:`~engine.backend.frame.evaluate_frame`).

Both take ``characters`` (an index array): only those are written (animation LOD).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.blending import REST_THRESHOLD
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.backend import _reference
from engine.backend.frame import check_threshold, run, threads_for
from engine.backend.select import resolve
from engine.backend.state import FrameState
from engine.errors import InvalidInputError


class BufferFrame:
    """A :class:`FrameState` and the batch-innermost buffers its jobs write (module docstring).

    Parameters
    ----------
    state
        Layers, clips, masks, overrides and cursors of ``C`` characters.
    pose, model, palette
        The local pose ``(C, J)``, the model matrices and the skinning palette ``(C, J)``; the
        jobs write them in place.
    """

    def __init__(self, state: FrameState, pose: PoseBuffer, model: MatrixBuffer, palette: MatrixBuffer) -> None:
        if not isinstance(state, FrameState):
            raise InvalidInputError(f"state must be a FrameState, got {type(state).__name__}")
        shape = (state.num_characters, state.bank.num_joints)
        if not isinstance(pose, PoseBuffer) or pose.num_layers is not None or pose.shape != shape:
            raise InvalidInputError(f"pose must be a single-layer PoseBuffer shaped {shape}, got {pose!r}")
        for name, buffer in (("model", model), ("palette", palette)):
            if not isinstance(buffer, MatrixBuffer) or buffer.shape != (*shape, 4, 4):
                raise InvalidInputError(f"{name} must be a MatrixBuffer shaped {(*shape, 4, 4)}, got {buffer!r}")
        self.state, self.pose, self.model, self.palette = state, pose, model, palette
        # the kernels' (C, J, ...) views of the buffers: local[c, j, e], model[c, j, row, column],
        # palette[c, j, column, row] (the kernels write palettes column-major)
        t, r, sc = (array.transpose(2, 1, 0) for array in pose.arrays())
        self._local_views = (t, r, sc)
        self._model_view = model.entries.transpose(3, 2, 0, 1)
        self._palette_view = palette.entries.transpose(3, 2, 1, 0)
        self._workspace = Workspace()

    def __repr__(self) -> str:
        return f"BufferFrame({self.state!r})"

    def sample_blend(
        self,
        times: Any,
        weights: Any,
        *,
        override_weights: Any = None,
        characters: Any = None,
        threshold: float = REST_THRESHOLD,
        backend: str | None = None,
        compose: bool = False,
        records: np.ndarray | None = None,
        model: bool = True,
        stage: Any = None,
    ) -> PoseBuffer:
        """Sample every weighted layer at ``times`` ``(L, C)`` and blend with ``weights`` ``(L, C)`` into :attr:`pose`.

        The blend of :func:`~engine.backend.frame.sample_blend` (layers of weight 0 are not
        sampled; ``override_weights`` ``(G, C)``); cursors are updated. Returns :attr:`pose`.

        With ``compose`` the same characters' model matrices and palette too, as :meth:`finalize`
        with ``records`` and ``model`` writes them next (the same numbers): on the kernels in the
        same pass, each character composed while its pose is in cache (not read back).

        ``stage`` (compiled only): a transition stage's inertialized and spring offsets, added to
        each character's pose right after its blend, before it is composed
        (:meth:`engine.player.transitions.TransitionStage.in_pass`): the numbers of
        :func:`~engine.backend.stage.apply_offsets` on the pose afterwards, in the same pass.

        Raises
        ------
        InvalidInputError
            A time that is not finite, a weight that is negative or not finite, an override
            weight outside ``[0, 1]``.
        """
        state = self.state
        times, weights = state.per_layer(times, "times"), state.per_layer(weights, "weights")
        override_weights = state.per_override(override_weights)
        threshold = check_threshold(threshold)
        chosen = state.select(characters)
        palette, model_out = self._outputs(records, True, model) if compose else (state.no_palette, state.no_model)
        if resolve(backend) == "numpy":
            if stage is not None:
                raise InvalidInputError("the transition stage's offsets run in the pass on the compiled backend only")
            problem = state.first_bad(times, weights, override_weights, chosen)
            if problem is not None:
                raise InvalidInputError(problem)
            pose = PoseBuffer.from_pose(
                _reference.local_pose(state, times, weights, override_weights, chosen, threshold)
            )
            for mine, theirs in zip(self.pose.arrays(), pose.arrays(), strict=True):
                mine[..., chosen] = theirs
            if compose:
                self.finalize(records=records, characters=chosen, backend="numpy", model=model)
            return self.pose
        workers = threads_for(state, None, chosen.size)
        run(
            state,
            chosen,
            times,
            weights,
            override_weights,
            threshold,
            self._local_views,
            palette,
            model_out,
            True,
            compose,
            workers,
            stage,
        )
        return self.pose

    def finalize(
        self,
        *,
        records: np.ndarray | None = None,
        characters: Any = None,
        backend: str | None = None,
        palette: bool = True,
        model: bool = True,
    ) -> MatrixBuffer:
        """Model matrices into :attr:`model` and the palette from :attr:`pose`; returns :attr:`palette`.

        With ``records`` (a writable ``(C, J, 4, 4)`` float32 or float64 array) the palette goes
        there instead, each matrix column-major (the upload layout of
        :func:`~engine.backend.frame.evaluate_frame`), and :attr:`palette` is left as it was.
        Without ``palette`` the kernels write the model matrices only (a stage edits the pose
        before the palette is made); without ``model`` the palette only (the model matrices are
        composed on the way and not stored: half the memory written). The numpy reference
        writes both.
        """
        state = self.state
        chosen = state.select(characters)
        out, model_out = self._outputs(records, palette, model)
        if resolve(backend) == "numpy":
            if chosen is state.everyone and records is None:
                _reference.buffer_matrices(state, self.pose, self.model, self.palette, self._workspace)
            else:
                self._numpy_subset(chosen, records)
            return self.palette
        empty = state.no_layers
        workers = threads_for(state, None, chosen.size)
        run(
            state,
            chosen,
            empty,
            empty,
            state.no_overrides,
            1.0,
            self._local_views,
            out,
            model_out,
            False,
            True,
            workers,
        )
        return self.palette

    def _outputs(self, records: np.ndarray | None, palette: bool, model: bool) -> tuple[np.ndarray, np.ndarray]:
        """The kernels' palette and model outputs: ``records`` (checked) or :attr:`palette`, each or an empty one."""
        state = self.state
        if records is not None:
            check_records(records, (state.num_characters, state.bank.num_joints))
        out = self._palette_view if records is None else records
        return out if palette else state.no_palette, self._model_view if model else state.no_model

    def _numpy_subset(self, chosen: Any, records: np.ndarray | None) -> None:
        """The numpy jobs for some characters (or into ``records``): gathered, composed, scattered."""
        local = self.pose.to_pose()
        with_rows = type(local)(*(array[chosen] for array in local.arrays()))
        model, palette = _reference.model_and_palette(self.state, with_rows)
        self._model_view[chosen] = model
        if records is None:
            self._palette_view[chosen] = np.swapaxes(palette, -1, -2)
        else:
            records[chosen] = np.swapaxes(palette, -1, -2)


def check_records(records: Any, shape: tuple[int, ...]) -> None:
    """Raise unless ``records`` is a writable float32 or float64 array shaped ``(*shape, 4, 4)`` (``shape``: C, J)."""
    expected = (*shape, 4, 4)
    if (
        not isinstance(records, np.ndarray)
        or records.shape != expected
        or records.dtype not in (np.float32, np.float64)
    ):
        raise InvalidInputError(f"records must be a float32 or float64 array shaped {expected}, got {records!r}")
    if not records.flags.writeable:
        raise InvalidInputError("records must be writable")
