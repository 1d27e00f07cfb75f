"""The frame jobs on batch-innermost buffers: the :class:`~engine.animator.Animator`'s fused path.

The crowd jobs of :mod:`engine.backend.frame` read and write character-major arrays; an Animator
keeps its frame in the batch-innermost buffers of :mod:`engine.anim.layout` instead
(:class:`~engine.anim.layout.PoseBuffer`, :class:`~engine.anim.layout.MatrixBuffer`), which its
post-blend stages (IK) read and edit. A :class:`BufferFrame` binds a
:class:`~engine.backend.frame.FrameState` to such a set of buffers: the compiled kernels take
them as strided views (no copy, no transposition pass), the numpy backend runs the batched jobs
of :mod:`engine.anim` on them.

- :meth:`BufferFrame.sample_blend`: every layer sampled and blended into the pose buffer;
- :meth:`BufferFrame.finalize`: the pose buffer to the model matrices and the palette (row-major
  in :class:`~engine.anim.layout.MatrixBuffer` order, float64, as
  :func:`~engine.anim.skinning.skinning_palette` writes it).
"""

from __future__ import annotations

from typing import Any

from engine.anim.blending import REST_THRESHOLD
from engine.anim.layout import MatrixBuffer, PoseBuffer, Workspace
from engine.backend import _reference
from engine.backend.frame import FrameState, _check_threshold, _first_bad, _per_layer, _threads_for
from engine.backend.select import kernels, resolve
from engine.errors import InvalidInputError


class BufferFrame:
    """A :class:`FrameState` and the batch-innermost buffers its jobs write (module docstring).

    Parameters
    ----------
    state
        Layers, clips, masks and cursors of ``C`` characters.
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
        self._local_views = tuple(array.transpose(2, 1, 0) for array in pose.arrays())
        self._model_view = model.entries.transpose(3, 2, 0, 1)
        self._palette_view = palette.entries.transpose(3, 2, 1, 0)
        self._workspace = Workspace()

    def __repr__(self) -> str:
        return f"BufferFrame({self.state!r})"

    def sample_blend(
        self, times: Any, weights: Any, *, threshold: float = REST_THRESHOLD, backend: str | None = None
    ) -> PoseBuffer:
        """Sample every weighted layer at ``times`` ``(L, C)`` and blend with ``weights`` ``(L, C)`` into :attr:`pose`.

        The blend of :func:`~engine.anim.blending.blend` (layers of weight 0 are not sampled);
        cursors are updated. Returns :attr:`pose`.

        Raises
        ------
        InvalidInputError
            A time that is not finite or a weight that is negative or not finite.
        """
        state = self.state
        times, weights = _per_layer(times, state, "times"), _per_layer(weights, state, "weights")
        threshold = _check_threshold(threshold)
        everyone = state.everyone
        if resolve(backend) == "numpy":
            problem = _first_bad(times, weights, everyone)
            if problem is not None:
                raise InvalidInputError(problem)
            args = (state.bank, state._clip_ids, state._masks, state.cursors, times, weights, everyone, threshold)
            self.pose.assign(_reference.local_pose(*args, state._workspace))
            return self.pose
        self._run(times, weights, threshold, blend=True, compose=False)
        return self.pose

    def finalize(self, *, backend: str | None = None) -> MatrixBuffer:
        """Model matrices into :attr:`model` and the skinning palette into :attr:`palette`, from :attr:`pose`.

        Returns :attr:`palette`.
        """
        if resolve(backend) == "numpy":
            _reference.buffer_matrices(self.state.bank, self.pose, self.model, self.palette, self._workspace)
            return self.palette
        no_layers = self.state._no_layers
        self._run(no_layers, no_layers, 1.0, blend=False, compose=True)
        return self.palette

    def _run(self, times: Any, weights: Any, threshold: float, *, blend: bool, compose: bool) -> None:
        state = self.state
        everyone = state.everyone
        layers = (state._clip_ids, times, weights, state.cursors)
        skipped = kernels().run(
            everyone,
            layers,
            state._masks,
            threshold,
            state.bank.arrays,
            state.scratch(),
            self._local_views,
            self._palette_view,
            self._model_view,
            blend,
            compose,
            _threads_for(state, None, everyone.size),
        )
        if skipped:
            raise InvalidInputError(_first_bad(times, weights, everyone) or f"{skipped} characters had bad input")
