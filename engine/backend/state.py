"""Per-crowd state of the frame jobs: which clip each layer plays, masks, overrides, cursors, scratch.

A :class:`FrameState` describes the layers ``L`` and characters ``C`` of a frame of
:mod:`engine.backend.frame`. Layer ``l`` of character ``c`` plays clip ``clip_ids[l, c]`` of a
:class:`~engine.backend.bank.ClipBank`; its weight at joint ``j`` is the frame's ``weight[l, c]``
times ``masks[l, j]`` times, for every **override** covering it, ``1 - W[g, c]·M[g, j]``.

An override is how a masked layer replaces the layers below it (an upper body over a gait) in a
flat, normalised blend: override ``g`` has a mask ``M[g]`` ``(J,)`` in ``[0, 1]``, covers the
layers ``[start, stop)`` (``spans[g]``) and gets a weight ``W[g, c]`` in ``[0, 1]`` per frame.
The overriding layers themselves carry ``W · M`` as their own weight and mask; the covered
layers lose exactly that share at each joint, so the weights at a joint still sum to what the
covered layers summed to. This is the nested blend ``blend(base, layer, 1 - W·M, W·M)`` of a
blend tree, written as one sum (rotations are normalised once instead of per level).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from engine.anim.rootmotion import UP
from engine.backend.bank import ClipBank
from engine.backend.select import default_threads, kernels
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, as_array
from engine.math.vec import vec_normalize

Int64Array = npt.NDArray[np.int64]


def check_threads(threads: Any, name: str) -> int:
    """``threads`` as a positive ``int``, else :class:`InvalidInputError` naming ``name``."""
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise InvalidInputError(f"{name} must be a positive integer, got {threads!r}")
    return int(threads)


def check_mask(mask: Any, joints: int, name: str, *, at_most_one: bool = False) -> FloatArray:
    """A per-joint weight array ``(J,)``, non-negative (and ``<= 1`` with ``at_most_one``)."""
    values = as_array(mask, name)
    if values.shape != (joints,):
        raise SkeletonMismatchError(f"{name} must have shape ({joints},), got {values.shape}")
    if np.any(values < 0.0) or (at_most_one and np.any(values > 1.0)):
        bad = int(np.argmax((values < 0.0) | (at_most_one & (values > 1.0))))
        limits = "in [0, 1]" if at_most_one else "non-negative"
        raise InvalidInputError(f"{name} must be {limits}, got {values[bad]} at joint {bad}")
    return values


class FrameState:
    """Layers, masks, overrides, sampling cursors and scratch of ``C`` characters (module docstring).

    Parameters
    ----------
    bank
        The clips (and skeleton) the crowd plays.
    layers
        ``L``, the number of layers blended per character.
    characters
        ``C``, the number of characters.
    overrides
        ``G``, the number of overrides (default 0); set each with :meth:`set_override`.
    threads
        The most threads a call may use (default :func:`~engine.backend.select.default_threads`);
        one scratch block of about ``480·J`` bytes each.
    in_place
        The joint every layer plays in place (root motion: only its height and swing are kept,
        :func:`~engine.anim.rootmotion.remove_planar`, before blending), or ``None``.
    up
        Up ``(3,)`` of that joint's parent space (default +Y,
        :func:`~engine.anim.rootmotion.parent_up`): the twist removed is about it.

    Attributes
    ----------
    cursors
        ``(L, C)`` int64: the merged-timeline segment each layer was last sampled in (ozz's
        sampling context); the search for the next frame's segment starts there. Any value is
        safe (it is clamped); :meth:`play` resets it.
    everyone
        ``(C,)`` read-only ``0 .. C-1``.
    workspace
        The numpy backend's buffers, kept between frames (:mod:`engine.backend._reference`).

    Examples
    --------
    >>> from engine.backend import evaluate_frame
    >>> from engine.procedural.mannequin import build_mannequin
    >>> mannequin = build_mannequin()
    >>> bank = ClipBank(mannequin.skeleton, [mannequin.clips["walk"], mannequin.clips["run"]])
    >>> state = FrameState(bank, layers=2, characters=3).play(1, "run")
    >>> palette = state.new_palette()
    >>> times, weights = np.full((2, 3), 0.25), np.full((2, 3), 0.5)
    >>> evaluate_frame(state, times, weights, out=palette).shape
    (3, 25, 4, 4)
    """

    def __init__(
        self,
        bank: ClipBank,
        layers: int,
        characters: int,
        *,
        overrides: int = 0,
        threads: int | None = None,
        in_place: int | None = None,
        up: Any = UP,
    ) -> None:
        if not isinstance(bank, ClipBank):
            raise InvalidInputError(f"bank must be a ClipBank, got {type(bank).__name__}")
        if int(layers) < 1 or int(characters) < 1 or int(overrides) < 0:
            raise InvalidInputError(
                f"layers and characters must be at least 1 and overrides at least 0, got {layers}, {characters}, "
                f"{overrides}"
            )
        self.bank = bank
        self.threads = default_threads() if threads is None else check_threads(threads, "threads")
        joints, count = bank.num_joints, int(characters)
        if in_place is not None and (isinstance(in_place, bool) or not 0 <= int(in_place) < joints):
            raise InvalidInputError(f"in_place must be a joint index below {joints} or None, got {in_place!r}")
        self.in_place = None if in_place is None else int(in_place)
        self.up = vec_normalize(as_array(up, "up", (3,)).reshape(3), "up")
        self._clip_ids = np.zeros((int(layers), count), dtype=np.int64)
        self._masks = np.ones((int(layers), joints))
        self._override_masks = np.zeros((int(overrides), joints))
        self._override_spans = np.zeros((int(overrides), 2), dtype=np.int64)
        self.cursors = np.zeros((int(layers), count), dtype=np.int64)
        self.everyone: Int64Array = np.arange(count, dtype=np.int64)
        self.everyone.flags.writeable = False
        self._scratch: tuple[FloatArray, FloatArray] | None = None
        # stand-ins for what a compiled call does not read or write (same types: no extra compilation)
        self.no_local = (np.zeros((0, joints, 3)), np.zeros((0, joints, 4)), np.zeros((0, joints, 3)))
        self.no_palette = np.zeros((0, joints, 4, 4), dtype=np.float32)
        self.no_model = np.zeros((0, 0, 4, 4))
        self.no_samples = np.zeros((0, 11, joints))
        self.no_layers = np.zeros((int(layers), count))
        self.no_overrides = np.zeros((int(overrides), count))
        self.workspace: dict[str, Any] = {}

    @property
    def num_layers(self) -> int:
        """``L``."""
        return self._clip_ids.shape[0]

    @property
    def num_characters(self) -> int:
        """``C``."""
        return self._clip_ids.shape[1]

    @property
    def num_overrides(self) -> int:
        """``G``."""
        return self._override_spans.shape[0]

    @property
    def clip_ids(self) -> Int64Array:
        """``(L, C)`` bank clip of each layer and character (read-only view); change it with :meth:`play`."""
        return _read_only(self._clip_ids)

    @property
    def masks(self) -> FloatArray:
        """``(L, J)`` per-joint weight of each layer (read-only view); change it with :meth:`set_mask`."""
        return _read_only(self._masks)

    @property
    def override_masks(self) -> FloatArray:
        """``(G, J)`` the overrides' masks ``M`` (read-only view; :meth:`set_override`)."""
        return _read_only(self._override_masks)

    @property
    def override_spans(self) -> Int64Array:
        """``(G, 2)`` the layers ``[start, stop)`` each override covers (read-only view; :meth:`set_override`)."""
        return _read_only(self._override_spans)

    def play(self, layer: int, clip: int | str, characters: Any = None) -> FrameState:
        """Make ``layer`` play ``clip`` (bank index or name) for ``characters`` (default all); returns self."""
        layer = self._layer(layer)
        index = self.bank.index(clip) if isinstance(clip, str) else int(clip)
        if not 0 <= index < self.bank.num_clips:
            raise InvalidInputError(f"clip must be a name or an index below {self.bank.num_clips}, got {clip!r}")
        chosen = self.select(characters)
        self._clip_ids[layer, chosen] = index
        self.cursors[layer, chosen] = 0
        return self

    def set_mask(self, layer: int, mask: Any) -> FrameState:
        """Per-joint weights ``(J,)`` of ``layer`` (non-negative; ``None`` for all ones); returns self."""
        layer = self._layer(layer)
        self._masks[layer] = 1.0 if mask is None else check_mask(mask, self.bank.num_joints, "mask")
        return self

    def set_override(self, override: int, covered: range, mask: Any) -> FrameState:
        """Override ``override`` covers the layers of ``covered`` (a ``range``) with ``mask`` ``(J,)`` in ``[0, 1]``."""
        if not 0 <= int(override) < self.num_overrides:
            raise InvalidInputError(f"override must be in [0, {self.num_overrides}), got {override}")
        if not isinstance(covered, range) or covered.step != 1 or not 0 <= covered.start <= covered.stop:
            raise InvalidInputError(f"covered must be a range of layers with step 1, got {covered!r}")
        if covered.stop > self.num_layers:
            raise InvalidInputError(f"covered must lie in [0, {self.num_layers}), got {covered!r}")
        self._override_masks[override] = check_mask(mask, self.bank.num_joints, "mask", at_most_one=True)
        self._override_spans[override] = (covered.start, covered.stop)
        return self

    def new_palette(self, dtype: Any = np.float32) -> np.ndarray:
        """A zeroed palette buffer ``(C, J, 4, 4)`` for :func:`~engine.backend.frame.evaluate_frame` (float32 or 64)."""
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise InvalidInputError(f"dtype must be float32 or float64, got {dtype}")
        return np.zeros((self.num_characters, self.bank.num_joints, 4, 4), dtype=dtype)

    def scratch(self) -> tuple[FloatArray, FloatArray]:
        """The compiled kernels' scratch, one block per thread (allocated on first use)."""
        if self._scratch is None:
            module = kernels()
            joints, blocks = self.bank.num_joints, self.threads
            self._scratch = (
                np.zeros((blocks, module.SCRATCH_ROWS, joints)),
                np.zeros((blocks, module.MODEL_FLOATS * joints)),
            )
        return self._scratch

    def select(self, characters: Any) -> Int64Array:
        """``characters`` (``None``: all) as a C-contiguous int64 index array, checked against ``C``."""
        if characters is None:
            return self.everyone
        chosen = np.asarray(characters)
        if chosen.dtype != np.int64:
            if chosen.size and not np.issubdtype(chosen.dtype, np.integer):
                raise InvalidInputError(f"characters must be integer indices, got {chosen.dtype}")
            chosen = chosen.astype(np.int64)
        if chosen.ndim != 1:
            raise InvalidInputError(f"characters must be a 1-D index array, got shape {chosen.shape}")
        if chosen.size and (chosen.min() < 0 or chosen.max() >= self.num_characters):
            bad = chosen[(chosen < 0) | (chosen >= self.num_characters)][0]
            raise InvalidInputError(f"characters must lie in [0, {self.num_characters}), got {bad}")
        return np.ascontiguousarray(chosen)

    def per_layer(self, values: Any, name: str) -> FloatArray:
        """``values`` as a C-ordered float64 ``(L, C)`` array (no copy when it already is one)."""
        return self._shaped(values, (self.num_layers, self.num_characters), name, "(layers, characters)")

    def per_override(self, values: Any) -> FloatArray:
        """Override weights as a C-ordered float64 ``(G, C)`` array; ``None``: all 0."""
        if values is None:
            return self.no_overrides
        return self._shaped(values, (self.num_overrides, self.num_characters), "override_weights", "(overrides, C)")

    def first_bad(
        self, times: FloatArray, weights: FloatArray, override_weights: FloatArray, characters: Int64Array
    ) -> str | None:
        """The first non-finite time, negative or non-finite weight, or override weight outside [0, 1], described."""
        for name, values, ok in (
            ("times", times, np.isfinite(times)),
            ("weights", weights, np.isfinite(weights) & (weights >= 0.0)),
            ("override_weights", override_weights, (override_weights >= 0.0) & (override_weights <= 1.0)),
        ):
            bad = np.argwhere(~ok[:, characters])
            if bad.size:
                row, column = (int(i) for i in bad[np.argsort(characters[bad[:, 1]], kind="stable")][0])
                c = int(characters[column])
                what = {"times": "finite seconds", "weights": "finite and non-negative"}.get(name, "in [0, 1]")
                return f"{name}[{row}, {c}] must be {what}, got {values[row, c]}"
        return None

    def kernel_inputs(
        self, times: FloatArray, weights: FloatArray, override_weights: FloatArray
    ) -> tuple[tuple[Any, ...], FloatArray, tuple[Any, ...]]:
        """The layers tuple, the masks and the overrides tuple the compiled kernels unpack (no copy)."""
        layers = (self._clip_ids, times, weights, self.cursors)
        return (layers, *self.kernel_masks(override_weights))

    def kernel_root(self) -> tuple[int, FloatArray]:
        """The in-place root the compiled kernels unpack: its joint (-1: none) and its parent space's up."""
        return (-1 if self.in_place is None else self.in_place), self.up

    def kernel_masks(self, override_weights: FloatArray) -> tuple[FloatArray, tuple[Any, ...]]:
        """The masks and the overrides tuple (with ``override_weights``) the compiled kernels unpack (no copy)."""
        return self._masks, (self._override_masks, self._override_spans, override_weights)

    def joint_weights(self, weights: FloatArray, override_weights: FloatArray, characters: Int64Array) -> FloatArray:
        """``(L, J, K)`` each layer's weight per joint for ``characters``: weight × mask × the overrides' complements.

        The numpy backend's blend weights (the kernels compute the same per character).
        """
        w = weights[:, characters][:, None, :] * self._masks[:, :, None]
        for g in range(self.num_overrides):  # loop over overrides (a handful)
            start, stop = (int(v) for v in self._override_spans[g])
            overriding = override_weights[g, characters]
            if stop > start and np.any(overriding > 0.0):
                w[start:stop] *= 1.0 - overriding[None, None, :] * self._override_masks[g][None, :, None]
        return w

    def _shaped(self, values: Any, expected: tuple[int, int], name: str, meaning: str) -> FloatArray:
        array = np.ascontiguousarray(values, dtype=np.float64)
        if array.shape != expected:
            raise InvalidInputError(f"{name} must have shape {meaning} = {expected}, got {array.shape}")
        return array

    def _layer(self, layer: int) -> int:
        if not 0 <= int(layer) < self.num_layers:
            raise InvalidInputError(f"layer must be in [0, {self.num_layers}), got {layer}")
        return int(layer)

    def __repr__(self) -> str:
        overrides = f", {self.num_overrides} overrides" if self.num_overrides else ""
        return (
            f"FrameState({self.num_layers} layers{overrides}, {self.num_characters} characters, {self.threads} threads)"
        )


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
