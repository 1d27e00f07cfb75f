"""The controllers' side of a player: its layers, overrides, weights and times, checked at the boundary.

:class:`LayerControls` is the part of :class:`~engine.player.Player` that controllers use to add
layers and overrides and to write each frame's weights and times: every write goes into the
player's :class:`~engine.player.layers.LayerTable` and takes effect (reads are read-only views).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.anim.clip import Clip, SampledClip
from engine.anim.events import Loop, clip_time, wrap_raw
from engine.anim.pose import Pose
from engine.anim.skeleton import Skeleton
from engine.errors import InvalidInputError
from engine.math._checks import BoolArray, FloatArray, IntArray, as_array, shaped
from engine.player.layers import Layer, LayerTable, check_mask
from engine.player.markers import MarkerCallback, Markers


class LayerControls:
    """Layers, overrides, weights and times of ``C`` characters (module docstring; the player's base)."""

    def __init__(self, skeleton: Skeleton, count: int, root_joint: int | None) -> None:
        self.skeleton = skeleton
        self.num_characters = count
        self.root_joint = root_joint
        self._table = LayerTable(count, skeleton.num_joints)
        self._markers = Markers()
        self._rates = np.zeros((0, count))  # each layer's clip seconds per second over the last frame

    def _layers_added(self) -> None:
        """Called after a layer was added (the player's transition stage follows the animated joints)."""

    def _mask_changed(self, row: int, mask: FloatArray | None) -> None:
        """Called after layer ``row``'s mask changed (the player's compiled state follows)."""

    # --- layers ---------------------------------------------------------------------------------

    @property
    def num_layers(self) -> int:
        """``L``, the layers added so far."""
        return self._table.count

    @property
    def num_overrides(self) -> int:
        """``G``, the overrides added so far."""
        return self._table.override_spans.shape[0]

    def layer(self, row: int) -> Layer:
        """The :class:`~engine.player.layers.Layer` in row ``row`` (what it plays; immutable)."""
        return self._table.layers[self._row(row)]

    def add_layer(
        self,
        clip: Clip | SampledClip,
        *,
        loop: Loop = Loop.REPEAT,
        mask: Any = None,
        additive: bool = False,
        reference: Pose | None = None,
    ) -> int:
        """A new layer playing ``clip`` (time 0, weight 0); returns its row.

        ``additive`` layers are added on top of the blend as a delta against ``reference``
        (``None``: the clip's first frame, :func:`~engine.anim.additive.additive_clip`), in row
        order. ``mask`` ``(J,)`` weights the layer per joint.
        """
        layer = Layer.make(
            self.skeleton, clip, loop=loop, mask=mask, additive=additive, reference=reference, root=self.root_joint
        )
        row = self._table.add(layer)
        self._rates = np.concatenate((self._rates, np.zeros((1, self.num_characters))))
        self._layers_added()
        return row

    def add_override(self, covered: range, mask: Any) -> int:
        """An override (weight 0) of the layers ``covered`` by ``mask`` ``(J,)`` in ``[0, 1]``; returns its index.

        With weight ``W`` a covered layer weighs ``1 - W·M_j`` of itself at joint ``j``
        (:mod:`engine.backend.state`): the layers that override them carry ``W`` and ``M``.
        """
        if not isinstance(covered, range) or covered.step != 1 or not 0 <= covered.start <= covered.stop:
            raise InvalidInputError(f"covered must be a range of layers with step 1, got {covered!r}")
        if covered.stop > self.num_layers:
            raise InvalidInputError(f"covered must lie within the {self.num_layers} layers, got {covered!r}")
        values = check_mask(mask, self.skeleton.num_joints)
        if values is None or np.any(values > 1.0):
            raise InvalidInputError("an override's mask must be given, with values in [0, 1]")
        return self._table.add_override(covered, values)

    def set_mask(self, row: int, mask: Any) -> None:
        """Weight layer ``row`` per joint: ``(J,)`` non-negative, or ``None`` (every joint 1)."""
        layer = self.layer(row).with_mask(check_mask(mask, self.skeleton.num_joints))
        self._table.put(row, layer)  # the same layout: the compiled state follows at once
        self._mask_changed(row, layer.mask)

    def set_loop(self, row: int, loop: Loop) -> None:
        """Set layer ``row``'s loop mode; it continues from the same clip time."""
        layer = self.layer(row)
        self._table.raw[row] = clip_time(self._table.raw[row], layer.duration, layer.loop)
        self._table.put(row, Layer(**{**vars(layer), "loop": Loop(loop)}))

    # --- per-frame inputs -----------------------------------------------------------------------

    @property
    def weights(self) -> FloatArray:
        """``(L, C)`` each layer's weight per character (read-only view; :meth:`set_weights`)."""
        return read_only(self._table.weights)

    @property
    def override_weights(self) -> FloatArray:
        """``(G, C)`` each override's weight per character (read-only view; :meth:`set_override_weights`)."""
        return read_only(self._table.override_weights)

    @property
    def raw_times(self) -> FloatArray:
        """``(L, C)`` raw times (:mod:`engine.anim.events`; read-only view)."""
        return read_only(self._table.raw)

    @property
    def times(self) -> FloatArray:
        """``(L, C)`` clip times: the raw times mapped by each layer's loop mode (a copy)."""
        return self._clip_times().copy()

    def _clip_times(self) -> FloatArray:
        """``(L, C)`` clip times; the raw times themselves (not to be written) unless a layer ping-pongs."""
        table = self._table
        if not table.any_ping_pong:  # clip time = raw time
            return table.raw
        return clip_time(table.raw, table.durations[:, None], table.loops[:, None])

    @property
    def rates(self) -> FloatArray:
        """``(L, C)`` each layer's clip seconds per second over the last frame (a copy)."""
        return self._rates.copy()

    def set_weights(self, rows: Any, values: Any, characters: Any = None) -> None:
        """Weights of layers ``rows`` (an index, slice or index array): ``values`` broadcast to ``(n, K)``, ``>= 0``."""
        self._set(self._table.weights, rows, values, characters, "weights", upper=np.inf)

    def set_override_weights(self, rows: Any, values: Any, characters: Any = None) -> None:
        """Weights of overrides ``rows``: ``values`` in ``[0, 1]`` broadcast to ``(n, K)``."""
        self._set(self._table.override_weights, rows, values, characters, "override weights", upper=1.0)

    def set_time(self, rows: Any, raw: Any, characters: Any = None, *, fresh: bool = True, where: Any = None) -> None:
        """Put layers ``rows`` at raw time ``raw`` (broadcast to ``(n, K)``): a jump, no travel.

        ``fresh``: a marker exactly at the new time fires on the next frame (after a start or a
        jump); ``False`` only re-locks a time the layer reached by itself (a sync phase).
        ``where`` (broadcast to ``(n, K)``): only the entries where it is true (``None``: all).
        """
        index, pick = np.arange(self.num_layers)[rows], self.select(characters)
        values = np.broadcast_to(as_array(raw, "raw"), (np.size(index), pick.size) if np.ndim(index) else (pick.size,))
        values = values.reshape(np.size(index), pick.size)
        if where is not None and characters is None and isinstance(rows, slice):  # whole rows: in place
            chosen = np.broadcast_to(np.asarray(where, dtype=bool), values.shape)
            np.copyto(self._table.raw[rows], values, where=chosen)
            if fresh:
                self._table.fresh[rows] |= chosen
            return
        entries = np.ix_(np.atleast_1d(index), pick)
        if where is None:
            self._table.raw[entries] = values
            if fresh:
                self._table.fresh[entries] = True
            return
        chosen = np.broadcast_to(np.asarray(where, dtype=bool), values.shape)
        self._table.raw[entries] = np.where(chosen, values, self._table.raw[entries])
        if fresh:
            self._table.fresh[entries] |= chosen

    def on_marker(self, row: int, name: str, callback: MarkerCallback) -> None:
        """Call ``callback(marker, time, characters, weights)`` per crossing of marker ``name`` of layer ``row``.

        Fires for characters where the layer ran and has weight, once per crossing (a frame
        spanning two loops calls it twice), during :meth:`advance_layers`.
        """
        self._markers.add(self._row(row), self.layer(row), name, callback)

    # --- helpers ----------------------------------------------------------------------------------

    def select(self, characters: Any) -> IntArray:
        """Character indices from an index, slice, index array, boolean mask or ``None`` (all)."""
        everyone = np.arange(self.num_characters)
        if characters is None:
            return everyone
        try:
            return np.atleast_1d(everyone[characters])
        except (IndexError, TypeError) as exc:
            raise InvalidInputError(
                f"characters must index {self.num_characters} characters (int, slice, indices or mask), "
                f"got {characters!r}: {exc}"
            ) from None

    def _row(self, row: int) -> int:
        if isinstance(row, bool) or not isinstance(row, int | np.integer) or not 0 <= row < self.num_layers:
            raise InvalidInputError(f"layer must be an index below {self.num_layers}, got {row!r}")
        return int(row)

    def _set(self, table: FloatArray, rows: Any, values: Any, characters: Any, name: str, *, upper: float) -> None:
        index = np.atleast_1d(np.arange(table.shape[0])[rows])
        pick = self.select(characters)
        array = check_weights(values, name, upper)
        where = index if characters is None else np.ix_(index, pick)  # whole rows: no character index
        table[where] = np.broadcast_to(array, (index.size, pick.size))

    def _clock_buffers(self, shape: tuple[int, int]) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """The layer table as the clock kernels take it, and their five outputs ``shape`` (``move_layer``'s).

        The table: raw times, rates, fresh flags, weights ``(L, C)``; the outputs: the raw times
        before, the end times clamped, the whole loops crossed, the raw times reached, the fresh
        flags before (the compiled twin of :meth:`_move`'s).
        """
        table = self._table
        out = (np.empty(shape), np.empty(shape), np.empty(shape), np.empty(shape), np.empty(shape, dtype=bool))
        return (table.raw, self._rates, table.fresh, table.weights), out

    def _move(
        self, block: Any, ends: tuple[FloatArray, BoolArray], layers: tuple[FloatArray, IntArray], step: FloatArray
    ) -> tuple[FloatArray, ...]:
        """The layer entries ``block`` moved to ``ends`` = (unwrapped raw times, running) ``(n, K)`` (numpy).

        ``layers`` = each entry's duration and loop code ``(n, 1)``; ``step`` ``(K,)`` the frame's
        seconds. Returns the raw times before, the end times clamped, the raw times reached and
        the whole loops crossed (the reference of the compiled clock kernel).
        """
        table, (stop, moving), (durations, loops) = self._table, ends, layers
        start = table.raw[block]
        stop = np.where(loops == Loop.ONCE, np.clip(stop, 0.0, durations), stop)
        raw, wraps = wrap_raw(stop, durations, loops)
        table.raw[block] = raw
        self._rates[block] = np.divide(stop - start, step, out=self._rates[block], where=step > 0.0)
        table.fresh[block] &= ~moving
        return start, stop, raw, wraps

    def _animated(self) -> dict[str, IntArray]:
        """Per path, the joints some layer's clip animates."""
        found: dict[str, set[int]] = {"translation": set(), "rotation": set(), "scale": set()}
        for layer in self._table.layers:
            if not isinstance(layer.source, Clip):  # a compressed clip: every joint may move
                for joints in found.values():
                    joints.update(range(self.skeleton.num_joints))
                continue
            for channel in layer.source.channels:
                if channel.path in found:
                    found[channel.path].add(channel.target)
        return {path: np.array(sorted(joints), dtype=np.intp) for path, joints in found.items()}


def check_weights(values: Any, name: str, upper: float = np.inf) -> FloatArray:
    """``values`` as a float64 array of weights: finite, non-negative and at most ``upper``.

    Raises
    ------
    InvalidInputError
        A weight out of range (or not finite), named ``name``.
    """
    array = as_array(values, name)
    if np.any(array < 0.0) or (upper < np.inf and np.any(array > upper)):
        limits = "non-negative" if upper == np.inf else f"in [0, {upper:g}]"
        raise InvalidInputError(f"{name} must be {limits}, got {float(array.min())}..{float(array.max())}")
    return array


def layer_writes(shape: tuple[int, int], weights: Any, jump: Any, exact: Any) -> tuple[np.ndarray, ...]:
    """``Player.advance_layers``' weights, jump times, where to jump and exact times as the kernel takes them.

    Each broadcast to ``shape`` ``(n, K)`` (C-contiguous) and checked; each not given: an empty
    ``(0, 0)`` array.
    """
    none, nowhere = np.zeros((0, 0)), np.zeros((0, 0), dtype=bool)
    return (
        none if weights is None else shaped(check_weights(weights, "weights"), shape),
        none if jump is None else shaped(as_array(jump[0], "jump"), shape),
        nowhere if jump is None else shaped(np.asarray(jump[1], dtype=bool), shape),
        none if exact is None else shaped(as_array(exact, "exact"), shape),
    )


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``."""
    view = array.view()
    view.flags.writeable = False
    return view
