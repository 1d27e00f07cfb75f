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

Speed comes from :func:`~engine.anim.compiled_clip.compile_clip`, done once per clip. It merges the key times of all
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
from typing import Any, overload

import numpy as np

from engine.anim.clip import Channel, Clip, SampledClip
from engine.anim.compiled_clip import PATHS, CompiledClip, Group, compiled, compiled_channel
from engine.anim.layout import PoseBuffer, Workspace, workspace_or_fresh, writable_components
from engine.anim.pose import Pose
from engine.errors import InvalidInputError, SkeletonMismatchError
from engine.math._checks import FloatArray, IntArray, as_array


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
    group: Group, block: FloatArray, gathered: FloatArray, u: FloatArray, dest: FloatArray, workspace: Workspace
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
