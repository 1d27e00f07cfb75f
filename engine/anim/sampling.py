"""Sample clips at given times with the glTF 2.0 interpolation rules.

Every channel is evaluated exactly as the glTF specification says:

- ``STEP``: the value of the last key at or before ``t``;
- ``LINEAR``: linear interpolation for translation and scale, spherical linear interpolation
  along the shortest arc for rotations;
- ``CUBICSPLINE``: the cubic Hermite spline of the specification, tangents scaled by the key
  interval ``t[k+1] - t[k]``; rotation outputs are normalised;
- before the first key and after the last key the value clamps to that key's value; a channel
  with a single key is constant.

Times are used as given: looping and playback speed belong to the caller (the animator).

Speed comes from :func:`compile_clip`, done once per clip. It merges the key times of all
channels into one timeline and re-expresses every channel on it. Re-keying is exact: a step
holds, a lerp is linear on any sub-interval, a slerp arc restricted to a sub-interval is a
slerp arc, and a cubic restricted to a sub-interval is a cubic. Sampling is then one
``searchsorted`` and one gather of every coefficient for all joints and characters, then a few
multiply-adds per group of channels (same path and interpolation). Slerp is evaluated as
``cos(u·θ)·start + sin(u·θ)·direction`` with the segment's frame precomputed, and the sine and
cosine come from a Taylor series sized at compile time for the widest arc (several times faster
than ``np.sin``, exact to double precision). The work happens batch-innermost
(:mod:`engine.anim.layout`): pass a :class:`~engine.anim.layout.PoseBuffer` as ``out`` to keep
the result in that layout (what :func:`~engine.anim.local_to_model.model_from_pose` reads
fastest); otherwise the pose comes back as ordinary C-ordered arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from engine.anim.clip import Channel, Clip, SampledClip
from engine.anim.layout import PoseBuffer, Workspace, as_slice, workspace_or_fresh, writable_components
from engine.anim.pose import Pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array

#: Order of the three pose paths.
PATHS = ("translation", "rotation", "scale")


@dataclass(frozen=True, eq=False)
class _Group:
    """Channels sharing one path and one evaluation kind, re-keyed on the clip's timeline.

    ``kind`` is ``"poly"`` (a polynomial in the segment parameter ``u`` with ``terms``
    coefficients: 1 for STEP, 2 for LINEAR, 4 for CUBICSPLINE) or ``"slerp"``
    (``cos(u·angle)·start + sin(u·angle)·direction``, ``terms`` = 2 for start and direction).
    ``rows`` selects the group's coefficients in :attr:`CompiledClip.table`, laid out
    ``(terms, width, N)``; a slerp group's ``N`` angles follow in ``angle_rows``.
    ``sine_terms`` is the number of Taylor terms that give sine and cosine of every arc of the
    group to double precision.
    """

    path: str
    kind: str
    targets: slice | IntArray
    rows: slice
    terms: int
    width: int
    count: int
    normalize: bool = False
    angle_rows: slice | None = None
    sine_terms: int = 0


@dataclass(frozen=True, eq=False)
class CompiledClip:
    """A clip re-keyed on one merged timeline, ready for fast sampling.

    Build it with :func:`compile_clip`; :func:`compiled` builds it once per clip and keeps it on
    the clip (what :func:`sample` uses).

    Attributes
    ----------
    clip
        The source clip.
    timeline
        ``(M,)`` strictly increasing merged key times. Segment ``m < M-1`` spans
        ``[timeline[m], timeline[m+1])``; segment ``M-1`` holds the values from the last key on
        (times before the first key use segment 0 at ``u = 0``).
    inverse_intervals
        ``(M,)`` ``1 / (timeline[m+1] - timeline[m])``, and 0 for the last, constant segment.
    table
        ``(R, M)`` every coefficient of every channel, one row per coefficient and one column per
        segment, so that one gather fetches all channels for all characters.
    groups
        Channels grouped by path and evaluation kind, each owning a block of rows.
    static
        For each path, the target indices no channel animates (they take the rest values).
    """

    clip: Clip
    timeline: FloatArray
    inverse_intervals: FloatArray
    table: FloatArray
    groups: tuple[_Group, ...]
    static: dict[str, IntArray]

    @property
    def num_targets(self) -> int:
        """Size of the target index space (joints, or nodes)."""
        return self.clip.num_targets


def _slerp_frame(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Angle ``(..., 1)`` and unit direction ``(..., 4)`` of the shortest arc from ``a`` to ``b``.

    The arc is ``cos(u·angle)·a + sin(u·angle)·direction``; ``angle = 2·atan2(|b-a|, |b+a|)`` is
    accurate for tiny and large angles alike, and a zero angle gets a zero direction.
    """
    b = np.where(np.sum(a * b, axis=-1, keepdims=True) < 0, -b, b)
    angle = 2.0 * np.arctan2(np.linalg.norm(b - a, axis=-1), np.linalg.norm(b + a, axis=-1))[..., None]
    sine = np.sin(angle)
    safe = np.where(sine > 0, sine, 1.0)
    direction = np.where(sine > 0, (b - np.cos(angle) * a) / safe, 0.0)
    return angle, direction


def _rekey(channel: Channel, timeline: FloatArray) -> tuple[str, FloatArray, FloatArray | None]:
    """Re-express one channel on ``timeline``: (kind, coefficients ``(M, n, w)``, angles ``(M, 1)``)."""
    times = channel.times
    values = channel.values
    rotation = channel.path == "rotation"
    count = times.size
    start, end = timeline, np.append(timeline[1:], timeline[-1])
    # Key interval holding each merged segment: times[k] <= start < end <= times[k+1].
    k = np.searchsorted(times, start, side="right") - 1
    before = k < 0
    after = k >= count - 1
    inside = ~(before | after)
    k_lo = np.clip(k, 0, count - 1)
    k_hi = np.clip(k + 1, 0, count - 1)
    span = np.where(inside, times[k_hi] - times[k_lo], 1.0)
    u0 = np.where(inside, (start - times[k_lo]) / span, 0.0)[:, None]
    u1 = np.where(inside, (end - times[k_lo]) / span, 0.0)[:, None]
    frozen = np.where(before, 0, np.where(after, count - 1, k_lo))  # key whose value holds

    if channel.interpolation == "CUBICSPLINE":
        v = values[:, 1]
        hold = v[frozen]
        p0 = v[k_lo]
        m0 = span[:, None] * values[k_lo, 2]
        p1 = v[k_hi]
        m1 = span[:, None] * values[k_hi, 0]
        c0, c1 = p0, m0
        c2 = -3.0 * p0 - 2.0 * m0 + 3.0 * p1 - m1
        c3 = 2.0 * p0 + m0 - 2.0 * p1 + m1
        h = u1 - u0
        # Taylor expansion of c0 + c1 s + c2 s² + c3 s³ at s = u0, in the sub-parameter u = (s - u0) / h.
        d0 = c0 + u0 * (c1 + u0 * (c2 + u0 * c3))
        d1 = h * (c1 + u0 * (2.0 * c2 + 3.0 * u0 * c3))
        d2 = h * h * (c2 + 3.0 * u0 * c3)
        d3 = h * h * h * c3
        where = inside[:, None]
        coeffs = np.stack(
            (np.where(where, d0, hold), np.where(where, d1, 0.0), np.where(where, d2, 0.0), np.where(where, d3, 0.0)),
            axis=1,
        )
        return "poly", coeffs, None

    if rotation:
        values = values / np.linalg.norm(values, axis=-1, keepdims=True)
    if channel.interpolation == "STEP" or count == 1:
        return "poly", values[frozen][:, None], None
    a, b = values[k_lo], values[k_hi]
    if not rotation:
        va = a + u0 * (b - a)
        vb = a + u1 * (b - a)
        coeffs = np.stack((np.where(inside[:, None], va, values[frozen]), np.where(inside[:, None], vb - va, 0.0)), 1)
        return "poly", coeffs, None
    angle, direction = _slerp_frame(a, b)
    # Sub-arc of the key arc from u0 to u1: rotate the (a, direction) frame by u0·angle.
    cos0, sin0 = np.cos(u0 * angle), np.sin(u0 * angle)
    sub_start = cos0 * a + sin0 * direction
    sub_direction = cos0 * direction - sin0 * a
    sub_angle = (u1 - u0) * angle
    held = values[frozen]
    coeffs = np.stack(
        (np.where(inside[:, None], sub_start, held), np.where(inside[:, None], sub_direction, 0.0)), axis=1
    )
    return "slerp", coeffs, np.where(inside[:, None], sub_angle, 0.0)


def compile_clip(clip: Clip) -> CompiledClip:
    """Re-key every channel of ``clip`` on one merged timeline (see the module docstring).

    Costs ``O(M · channels)`` memory where ``M`` is the number of distinct key times in the clip.
    Rotation keys are normalised first (glTF requires unit quaternions; this removes rounding).
    """
    timeline = np.unique(np.concatenate([c.times for c in clip.channels])) if clip.channels else np.zeros(1)
    buckets: dict[tuple[str, str, int, int], list[tuple[int, FloatArray, FloatArray | None]]] = {}
    for channel in clip.channels:  # one group per path, kind, terms and width (weights differ in width)
        kind, coeffs, angles = _rekey(channel, timeline)
        key = (channel.path, kind, coeffs.shape[1], coeffs.shape[2])
        buckets.setdefault(key, []).append((channel.target, coeffs, angles))
    groups: list[_Group] = []
    blocks: list[FloatArray] = []
    start = 0
    for (path, kind, terms, _), members in sorted(buckets.items()):
        members.sort(key=lambda m: m[0])
        targets = np.array([m[0] for m in members], dtype=np.intp)
        coefficients = np.stack([m[1] for m in members], axis=-1)  # (M, terms, width, N)
        count, width = targets.size, coefficients.shape[2]
        blocks.append(coefficients.reshape(timeline.size, -1).T)
        rows = slice(start, start + terms * width * count)
        start = rows.stop
        if kind == "slerp":
            angles = np.stack([m[2][:, 0] for m in members], axis=-1)  # type: ignore[index]
            blocks.append(angles.T)
            angle_rows = slice(start, start + count)
            start = angle_rows.stop
            group = _Group(
                path,
                kind,
                as_slice(targets),
                rows,
                terms,
                width,
                count,
                False,
                angle_rows,
                _sine_terms(float(angles.max(initial=0.0))),
            )
        else:
            group = _Group(path, kind, as_slice(targets), rows, terms, width, count, path == "rotation" and terms > 1)
        groups.append(group)
    table = np.ascontiguousarray(np.concatenate(blocks)) if blocks else np.zeros((0, timeline.size))
    animated: dict[str, set[int]] = {path: set() for path in PATHS}
    for channel in clip.channels:
        animated.setdefault(channel.path, set()).add(channel.target)
    static = {
        path: np.array([j for j in range(clip.num_targets) if j not in animated[path]], dtype=np.intp) for path in PATHS
    }
    inverse = np.append(1.0 / np.diff(timeline), 0.0)
    for array in (timeline, inverse, table, *static.values()):
        array.flags.writeable = False
    return CompiledClip(clip, timeline, inverse, table, tuple(groups), static)


#: Taylor terms of sine and cosine are added while they can exceed this (below ½ ulp of 1).
_SERIES_TOLERANCE = 2.0**-56


def _sine_terms(largest: float) -> int:
    """Terms of the sine and cosine Taylor series that reach double precision on ``[0, largest]``."""
    terms = 1
    while largest ** (2 * terms) / math.factorial(2 * terms) > _SERIES_TOLERANCE:
        terms += 1
    return terms


def _sin_cos(arc: FloatArray, terms: int, workspace: Workspace) -> tuple[FloatArray, FloatArray]:
    """Sine and cosine of ``arc`` (``0 <= arc <= π/2``) by their Taylor series, Horner in ``arc²``.

    Several times faster than ``np.sin``/``np.cos`` on small arcs and as accurate: the first
    dropped term is below ``2⁻⁵⁶`` (:func:`_sine_terms`). The results are workspace memory.
    """
    square = np.multiply(arc, arc, out=workspace.empty(arc.shape))
    sine = workspace.empty(arc.shape)
    sine.fill((-1.0) ** (terms - 1) / math.factorial(2 * terms - 1))
    cosine = workspace.empty(arc.shape)
    cosine.fill((-1.0) ** (terms - 1) / math.factorial(2 * terms - 2))
    for k in range(terms - 2, -1, -1):
        sine *= square
        sine += (-1.0) ** k / math.factorial(2 * k + 1)
        cosine *= square
        cosine += (-1.0) ** k / math.factorial(2 * k)
    sine *= arc
    return sine, cosine


def compiled(clip: Clip | CompiledClip) -> CompiledClip:
    """The compiled form of ``clip``, built on first use and kept on the clip; a ``CompiledClip`` as is."""
    if isinstance(clip, CompiledClip):
        return clip
    if not isinstance(clip, Clip):
        raise InvalidInputError(f"clip must be a Clip or CompiledClip, got {type(clip).__name__}")
    if clip._compiled is None:
        object.__setattr__(clip, "_compiled", compile_clip(clip))
    return clip._compiled


def compiled_channel(channel: Channel) -> CompiledClip:
    """``channel`` alone as a one-target :class:`CompiledClip`, built on first use and kept on the channel."""
    if channel._compiled is None:
        alone = Channel(0, channel.path, channel.interpolation, channel.times, channel.values)
        object.__setattr__(channel, "_compiled", compile_clip(Clip(channel.path, (alone,), 1)))
    return channel._compiled


def _check_times(times: Any) -> FloatArray:
    """``times`` as a float array; NaN and infinity are rejected even under ``trusted()`` (cheap)."""
    times = as_array(times, "times", finite=False)
    if not np.isfinite(times).all():
        bad = np.argwhere(~np.isfinite(times.reshape(-1)))[0, 0]
        raise InvalidInputError(f"times must be finite seconds, got {times.reshape(-1)[bad]} at flat index {bad}")
    return times


def _segments(compiled_clip: CompiledClip, times: FloatArray) -> tuple[IntArray, FloatArray]:
    """Segment index ``(B,)`` and segment parameter ``u`` clamped to ``[0, 1]`` ``(B,)`` of flat ``times``."""
    index = np.searchsorted(compiled_clip.timeline, times, side="right")
    index -= 1
    np.maximum(index, 0, out=index)
    u = times - compiled_clip.timeline[index]
    u *= compiled_clip.inverse_intervals[index]
    np.clip(u, 0.0, 1.0, out=u)
    return index, u


@overload
def sample(
    clip: Clip | CompiledClip | SampledClip,
    rest: Pose,
    times: Any,
    *,
    out: PoseBuffer,
    workspace: Workspace | None = None,
) -> PoseBuffer: ...


@overload
def sample(
    clip: Clip | CompiledClip | SampledClip,
    rest: Pose,
    times: Any,
    *,
    out: Pose | None = None,
    workspace: Workspace | None = None,
) -> Pose: ...


def sample(
    clip: Clip | CompiledClip | SampledClip,
    rest: Pose,
    times: Any,
    *,
    out: Pose | PoseBuffer | None = None,
    workspace: Workspace | None = None,
) -> Pose | PoseBuffer:
    """Local pose played by ``clip`` at ``times`` (seconds, used as given), ``rest`` where it has no channel.

    Parameters
    ----------
    clip
        A :class:`~engine.anim.clip.Clip` (joints of a skin, or all nodes of a scene
        hierarchy), its :class:`CompiledClip`, or a compressed clip (:class:`~engine.anim.clip.SampledClip`).
    rest
        The values of the targets no channel animates: a :class:`~engine.anim.pose.Pose`
        ``(J,)`` with ``J = clip.num_targets``, usually ``skeleton.rest_pose``, or
        ``Pose.identity(J)`` for an additive clip (whose unanimated joints are identity deltas).
    times
        A scalar, or an array of any shape ``B`` (usually ``(C,)``, one time per character).
    out
        Optional destination shaped ``(*B, J)``, filled and returned: a
        :class:`~engine.anim.layout.PoseBuffer` (the fast path: no layout change), or a
        :class:`~engine.anim.pose.Pose` with writable arrays of any memory layout.
    workspace
        Scratch memory to reuse (:class:`~engine.anim.layout.Workspace`); ``None`` allocates.

    Returns
    -------
    Pose or PoseBuffer
        ``out`` when given; else a new C-ordered pose: translations ``(*B, J, 3)``, unit rotations
        ``(*B, J, 4)``, scales ``(*B, J, 3)``.

    Raises
    ------
    SkeletonMismatchError
        If the clip targets a different number of joints than ``rest`` has.
    InvalidInputError
        If ``rest`` is not one pose ``(J,)``, ``times`` holds NaN or infinity, or ``out`` has the
        wrong shape.

    Examples
    --------
    >>> import numpy as np
    >>> from engine.anim import Channel, Clip, Skeleton
    >>> skeleton = Skeleton(["root"], [-1])
    >>> slide = Channel(0, "translation", "LINEAR", [0.0, 2.0], [[0, 0, 0], [2.0, 0, 0]])
    >>> clip = Clip("slide", [slide], num_targets=1)
    >>> sample(clip, skeleton.rest_pose, [-1.0, 0.5, 3.0]).translations[:, 0, 0]
    array([0. , 0.5, 2. ])
    """
    compiled_clip: CompiledClip | SampledClip
    if isinstance(clip, Clip | CompiledClip) or not isinstance(clip, SampledClip):
        compiled_clip = one = compiled(clip)  # anything but a clip raises here
        name = one.clip.name
    else:  # a compressed clip (engine.compress)
        compiled_clip, name = clip, clip.name
    if not isinstance(rest, Pose):
        raise InvalidInputError(f"rest must be a Pose (e.g. skeleton.rest_pose), got {type(rest).__name__}")
    joints = compiled_clip.num_targets
    if rest.num_joints != joints:
        raise SkeletonMismatchError(
            f"clip {name!r} animates {joints} targets but the rest pose has {rest.num_joints} joints"
        )
    if rest.shape != (joints,):
        raise InvalidInputError(f"rest must be one pose of {joints} joints, shape ({joints},), got {rest.shape}")
    times = _check_times(times)
    batch = times.shape
    target = (*batch, joints)
    if out is not None and (not isinstance(out, Pose | PoseBuffer) or out.shape != target):
        got = out.shape if isinstance(out, Pose | PoseBuffer) else type(out).__name__
        raise InvalidInputError(
            f"out must be a Pose or PoseBuffer shaped {target} (times {batch}, {joints} joints), got {got}"
        )
    rest_values = rest.arrays()
    ws = workspace_or_fresh(workspace)
    if isinstance(out, PoseBuffer):
        with ws.scope():
            _fill(compiled_clip, rest_values, times.reshape(-1), out, ws)
        return out
    with ws.scope():
        buffer = PoseBuffer.scratch(ws, batch, joints)
        _fill(compiled_clip, rest_values, times.reshape(-1), buffer, ws)
        if out is None:
            return buffer.to_pose()
        for name, array, width, values in zip(PATHS, out.arrays(), (3, 4, 3), buffer.arrays(), strict=True):
            np.copyto(writable_components(array, joints, (width,), f"out.{name}"), values)
    return out


def _fill(
    compiled_clip: CompiledClip | SampledClip,
    rest: tuple[FloatArray, FloatArray, FloatArray],
    times: FloatArray,
    buffer: PoseBuffer,
    workspace: Workspace,
) -> None:
    """Write the pose at flat ``times`` ``(B,)`` into ``buffer``: rest values, then every channel."""
    if not isinstance(compiled_clip, CompiledClip):  # a compressed clip (the protocol check is slow: not first)
        compiled_clip.fill(rest, times, buffer)
        return
    outputs = dict(zip(PATHS, buffer.arrays(), strict=True))
    for path, rest_values in zip(PATHS, rest, strict=True):
        static = compiled_clip.static[path]
        if static.size:
            outputs[path][:, static] = rest_values[static].T[:, :, None]
    _sample_into(compiled_clip, times, outputs, workspace)


def _sample_into(
    compiled_clip: CompiledClip, times: FloatArray, outputs: dict[str, FloatArray], workspace: Workspace
) -> None:
    """Write every channel of ``compiled_clip`` at flat ``times`` ``(B,)`` into ``outputs[path]`` ``(w, J, B)``."""
    if not compiled_clip.groups:
        return
    index, u = _segments(compiled_clip, times)
    table = compiled_clip.table
    # (R, B) in C order: every coefficient of every channel for every character, in one gather
    gathered = np.take(table, index, axis=1, out=workspace.empty((table.shape[0], index.size)), mode="clip")
    count = times.size
    for group in compiled_clip.groups:
        if group.path not in outputs:  # morph weights in a pose sample: read with sample_channel
            continue
        block = gathered[group.rows].reshape(group.terms, group.width, group.count, count)
        if isinstance(group.targets, slice):
            _evaluate_into(group, block, gathered, u, outputs[group.path][:, group.targets], workspace)
        else:
            value = workspace.empty(block.shape[1:])
            _evaluate_into(group, block, gathered, u, value, workspace)
            outputs[group.path][:, group.targets] = value


def _evaluate_into(
    group: _Group, block: FloatArray, gathered: FloatArray, u: FloatArray, dest: FloatArray, workspace: Workspace
) -> None:
    """Evaluate one group into ``dest`` ``(w, N, B)`` from its coefficients ``block`` ``(terms, w, N, B)``."""
    if group.kind == "slerp":
        assert group.angle_rows is not None
        arc = np.multiply(gathered[group.angle_rows], u, out=workspace.empty((group.count, u.size)))
        sine, cosine = _sin_cos(arc, group.sine_terms, workspace)
        np.multiply(block[0], cosine, out=dest)
        dest += np.multiply(block[1], sine, out=block[1])
        return
    if group.terms == 1:
        dest[...] = block[0]
        return
    np.multiply(block[-1], u, out=dest)
    dest += block[-2]
    for d in range(group.terms - 3, -1, -1):
        dest *= u
        dest += block[d]
    if group.normalize:
        dest /= np.sqrt(np.einsum("wnb,wnb->nb", dest, dest))


def sample_channel(channel: Channel, times: Any) -> FloatArray:
    """Values of one channel at ``times`` ``(*B,)``: ``(*B, w)``, ``w`` the channel's width (rotations unit).

    Same rules as :func:`sample`; used to evaluate animated nodes outside a skeleton and morph
    target weights (``w`` = number of targets, interpolated like translations).
    """
    if not isinstance(channel, Channel):
        raise InvalidInputError(f"channel must be a Channel, got {type(channel).__name__}")
    times = _check_times(times)
    width = channel.values.shape[-1]
    values = np.empty((width, 1, times.size))
    _sample_into(compiled_channel(channel), times.reshape(-1), {channel.path: values}, workspace_or_fresh(None))
    return values[:, 0].T.reshape(*times.shape, width)
