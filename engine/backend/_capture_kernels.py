"""Compiled captures (numba): the layers sampled and blended, with the blend's exact velocity, row by row.

What :class:`engine.backend.stage.CaptureFrame` runs: for each captured row, the frame kernel's
character (:func:`engine.backend._kernels._character`: every weighted layer sampled, handed over
as sampled, and blended) and right after it, while those samples are in the cache, their
velocity — the same arithmetic as the numpy reference of :mod:`engine.player.capture`
(agreeing to rounding): each layer's velocity looked up in its clip's per-segment table
(:class:`~engine.anim.clip_velocity.VelocityTable`) times the layer's rate, the root-motion joint
taken apart (its planar velocity kept aside), then the derivative of the blend
(:func:`~engine.anim.velocity.blend_velocity`), the rest pose as one more layer where the
weights sum below the threshold.

numba's disk cache notices changes to a cached function's own file only, so
:mod:`engine.backend.kernel_cache` keys this module's by the frame kernels' modules too. Inputs
are trusted (the callers check them).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, prange

from engine.backend import _kernels, _sampling_kernels, kernel_cache
from engine.backend._kernels import _character
from engine.backend._sampling_kernels import bisect
from engine.backend._threads import parallel_blocks


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def capture(frame: Any, velocity: Any, scratch: Any) -> None:
    """``K`` captures: each row sampled and blended, then its velocity (module docstring).

    ``frame`` = (inputs, outputs) as :func:`~engine.backend._kernels._character` takes them but
    for ``samples``, row ``k`` for character index ``k``.
    ``velocity`` = (layers, tables, blend, out): ``layers`` = (weights, weight rates, times,
    rates ``(L, K)`` float64, leaving ``(L, K)`` bool, the velocity table of each layer ``(L,)``
    int64, whether it loops ``(L,)`` bool); ``tables`` = (key times, every table's first key ``(T
    + 1,)``, segment velocities ``(N, J, 3, 3)``, every table's first segment ``(T,)``); ``blend`` =
    (rest pose ``(10, J)``, threshold, root joint or -1); ``out`` = (velocity ``(K, J, 3, 3)``:
    linear, angular, scaling; planar root velocity ``(K, 3)``: ``(vx, vz, yaw rate)`` in the
    root's heading). ``scratch`` = (the frame kernels' scratch, ``samples`` ``(B, S, 11, J)``: the
    row's weighted layers as sampled, their root joints put in place, ``(B, S, 9)``: per slot the
    root's velocity taken apart, ``(B, 2 S, J)``: per slot its per-joint weight and weight rate),
    ``B`` blocks (the serial kernel uses the first), ``S`` at least the most weighted layers of a row:
    a block's samples are used by one row, then the next.
    """
    inputs, outputs = frame
    frame_scratch, samples, work, joint_weights = scratch
    buffers = _buffers(samples.shape[1], samples.shape[3])
    blocks = (frame_scratch[0][0], frame_scratch[1][0], samples[0], work[0], joint_weights[0], buffers)
    _capture_rows(0, outputs[0][0].shape[0], inputs, outputs, velocity, blocks)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, parallel=True)
def capture_parallel(
    blocks: int,
    layers: Any,
    masks: Any,
    overrides: Any,
    threshold: Any,
    root: Any,
    bank: Any,
    frame_work: Any,
    frame_model: Any,
    local: Any,
    palette: Any,
    model_out: Any,
    velocity_layers: Any,
    tables: Any,
    blend: Any,
    velocity_out: Any,
    planar_out: Any,
    samples: Any,
    work: Any,
    joint_weights: Any,
) -> None:
    """:func:`capture` over ``blocks`` contiguous blocks of the rows in parallel (the same numbers).

    The arguments come one by one (a parallel loop's body takes no tuple of tuples); the scratch
    arrays hold one block each.
    """
    count = planar_out.shape[0]
    for b in prange(blocks):
        inputs, outputs = (layers, masks, overrides, threshold, root, bank), (local, palette, model_out)
        velocity = (velocity_layers, tables, blend, (velocity_out, planar_out))
        buffers = _buffers(samples.shape[1], samples.shape[3])
        block = (frame_work[b], frame_model[b], samples[b], work[b], joint_weights[b], buffers)
        _capture_rows(b * count // blocks, (b + 1) * count // blocks, inputs, outputs, velocity, block)


def capture_on(threads: int, frame: Any, velocity: Any, scratch: Any) -> None:
    """:func:`capture` on ``threads`` threads (at most one block of rows each), serial for one.

    Each scratch array holds at least ``threads`` blocks.
    """
    inputs, outputs = frame
    blocks = parallel_blocks(threads, outputs[0][0].shape[0])
    if blocks <= 1:
        capture(frame, velocity, scratch)
        return
    (frame_work, frame_model), samples, work, joint_weights = scratch
    frame_layers, masks, overrides, threshold, root, bank = inputs
    local, palette, model_out = outputs
    layers, tables, blend, (velocity_out, planar_out) = velocity
    capture_parallel(
        blocks,
        frame_layers,
        masks,
        overrides,
        threshold,
        root,
        bank,
        frame_work[:blocks],
        frame_model[:blocks],
        local,
        palette,
        model_out,
        layers,
        tables,
        blend,
        velocity_out,
        planar_out,
        samples,
        work,
        joint_weights,
    )


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _capture_rows(first: int, stop: int, inputs: Any, outputs: Any, velocity: Any, block: Any) -> None:
    """Rows ``first <= k < stop`` of :func:`capture` with one block's scratch ``block``.

    ``block`` = (the frame kernels' work rows and model scratch, the samples, the root velocities,
    the joint weights, :func:`_buffers`); ``outputs`` = (local, palette, model).
    """
    frame_work, frame_model, samples, work, joint_weights, buffers = block
    sampled = (outputs[0], outputs[1], outputs[2], samples)
    for k in range(first, stop):
        _character(k, inputs, frame_work, frame_model, sampled, True, False)
        _velocities(k, samples, velocity, work, joint_weights, buffers)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _segment(times: Any, first: Any, count: Any, t: Any, loop: Any, leaving: Any) -> Any:
    """The velocity-table segment at clip time ``t`` (-1: none; the clip holds still), as ``VelocityTable.at``.

    Arriving (``leaving`` false): ``times[m] < t <= times[m + 1]``; leaving: ``times[m] <= t <
    times[m + 1]``; a looping clip arrives at its first key from the end and leaves its last key
    into the start.
    """
    if leaving:
        if loop and t >= times[first + count - 1]:
            t = times[first]
        low = bisect(times, first, -1, count, t)  # the last m with times[m] <= t
    else:
        if loop and t <= times[first]:
            t = times[first + count - 1]
        low, high = -1, count  # the last m with times[m] < t
        while high - low > 1:
            middle = (low + high) >> 1
            if times[first + middle] < t:
                low = middle
            else:
                high = middle
    return low if 0 <= low < count - 1 else -1


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _velocities(k: int, samples: Any, velocity: Any, work: Any, joint_weights: Any, buffers: Any) -> None:
    """The velocity of capture ``k`` (:func:`capture`'s ``velocity``), its layers just sampled into ``samples``.

    Each slot's pose is read where it was sampled (its root put in place there) and its velocity
    from its table's segment, times its rate; ``work`` ``(S, 9)`` keeps, per slot, the root
    joint's velocity taken apart and ``joint_weights`` ``(2 S, J)`` (rows ``2 s`` and ``2 s + 1``:
    slot ``s``'s weight per joint and its rate): one scratch block, with ``buffers``
    (:func:`_buffers`).
    """
    layers, tables, blend, out = velocity
    weights, weight_rates, times, rates, leaving, table_of, loops = layers
    key_times, key_starts, velocities, segment_starts = tables
    threshold, root = blend[1], blend[2]
    velocity_out, planar_out = out
    segments, speeds, passes = buffers
    joints = samples.shape[2]
    used = 0
    planar_x = planar_z = yaw_rate_sum = root_weight = 0.0
    for layer in range(weights.shape[0]):
        w = weights[layer, k]
        if not w > 0.0:
            continue
        sampled = samples[used]
        wr = weight_rates[layer, k]
        for j in range(joints):
            joint_weights[2 * used, j] = w * sampled[10, j]
            joint_weights[2 * used + 1, j] = wr * sampled[10, j]
        table = table_of[layer]
        first_key, keys = key_starts[table], key_starts[table + 1] - key_starts[table]
        m = _segment(key_times, first_key, keys, times[layer, k], loops[layer], leaving[layer, k])
        segments[used] = segment_starts[table] + m if m >= 0 else -1
        speeds[used] = rates[layer, k]
        if root >= 0:  # the root apart: its planar velocity aside, in place with its velocity
            rows, speed = work[used], speeds[used]
            for e in range(9):
                rows[e] = velocities[segments[used], root, e // 3, e % 3] * speed if m >= 0 else 0.0
            x, y, z, q = sampled[3, root], sampled[4, root], sampled[5, root], sampled[6, root]
            vx, vz = rows[0], rows[2]
            ox, oy, oz = rows[3], rows[4], rows[5]
            spin_y = 0.5 * (-ox * z + oy * q + oz * x)  # q̇ = ½ (ω, 0) · q: its y and w
            spin_w = 0.5 * (-ox * x - oy * y - oz * z)
            yaw_rate = 2.0 * (q * spin_y - y * spin_w) / max(y * y + q * q, 1e-300)
            yaw = 2.0 * math.atan2(y, q)
            if yaw > math.pi:
                yaw -= 2.0 * math.pi
            elif yaw <= -math.pi:
                yaw += 2.0 * math.pi
            bs, bc = -math.sin(0.5 * yaw), math.cos(0.5 * yaw)  # back = twist⁻¹ = (0, bs, 0, bc)
            cos_yaw, sin_yaw = bc * bc - bs * bs, 2.0 * bc * bs  # R(back): a turn by -yaw about +Y
            at_root = joint_weights[2 * used, root]
            planar_x += at_root * (cos_yaw * vx + sin_yaw * vz)
            planar_z += at_root * (-sin_yaw * vx + cos_yaw * vz)
            yaw_rate_sum += at_root * yaw_rate
            root_weight += at_root
            rows[3] = cos_yaw * ox + sin_yaw * oz
            rows[4] = oy - yaw_rate
            rows[5] = -sin_yaw * ox + cos_yaw * oz
            rows[0], rows[2] = 0.0, 0.0
            sampled[0, root], sampled[2, root] = 0.0, 0.0
            sampled[3, root] = bc * x + bs * z
            sampled[4, root] = bc * y + bs * q
            sampled[5, root] = bc * z - bs * x
            sampled[6, root] = bc * q - bs * y
        used += 1
    _blend_velocity(samples, used, (segments, speeds, velocities, work), joint_weights, blend, passes, velocity_out[k])
    norm_root = max(root_weight, threshold)
    planar_out[k, 0] = planar_x / norm_root
    planar_out[k, 1] = planar_z / norm_root
    planar_out[k, 2] = yaw_rate_sum / norm_root


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _buffers(slots: int, joints: int) -> Any:
    """One block's scratch for :func:`_velocities` and :func:`_blend_velocity`.

    Per slot its segment (-1: the clip holds still) and rate ``(S,)``, then each slot's nine
    velocity components at one joint ``(S, 9)``, and per joint the rotations' sums, their rates,
    norms, projections and ω: thirteen ``(J,)`` rows, each an array of its own (rows of one 2-D
    array would keep the passes over them scalar).
    """
    rows = (
        np.empty((slots, 9)),
        (np.empty(joints), np.empty(joints), np.empty(joints), np.empty(joints)),
        (np.empty(joints), np.empty(joints), np.empty(joints), np.empty(joints)),
        np.empty(joints),
        np.empty(joints),
        (np.empty(joints), np.empty(joints), np.empty(joints)),
    )
    return np.empty(slots, dtype=np.int64), np.empty(slots), rows


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _blend_velocity(poses: Any, used: int, slotted: Any, joint_weights: Any, blend: Any, rows: Any, out_k: Any) -> None:
    """The velocity ``(J, 3, 3)`` of one capture's blend of its ``used`` slots into ``out_k``.

    ``poses`` ``(S, 11, J)``: the slots as sampled; ``slotted`` = (each slot's segment, rate, the
    segment velocities, the root's velocity taken apart ``(S, 9)``); ``joint_weights`` as
    :func:`_velocities`; ``rows``: the last of :func:`_buffers`. Per joint the translations and scales (twelve
    sums in one pass over the slots) and the rotations' sums; the rotations' normalisation then
    in passes over the joints.
    """
    segments, speeds, velocities, root_velocity = slotted
    rest, threshold, root = blend
    lookup, sums, rates, norms, along, omega = rows
    s0_row, s1_row, s2_row, s3_row = sums
    d0_row, d1_row, d2_row, d3_row = rates
    joints = poses.shape[2]
    for j in range(joints):
        total = rate_total = 0.0
        for s in range(used):
            total += joint_weights[2 * s, j]
            rate_total += joint_weights[2 * s + 1, j]
            segment, speed = segments[s], speeds[s]  # the slot's velocity here: its segment's times its rate
            if j == root:  # the root's taken apart
                for e in range(9):
                    lookup[s, e] = root_velocity[s, e]
            elif segment >= 0:
                for e in range(9):
                    lookup[s, e] = velocities[segment, j, e // 3, e % 3] * speed
            else:
                for e in range(9):
                    lookup[s, e] = 0.0
        below = total < threshold  # the rest pose: one more layer, its weight falling as theirs rise
        rest_weight = threshold - total if below else 0.0
        rest_rate = -rate_total if below else 0.0
        inverse = 1.0 / (total + rest_weight)
        # translations (rows 0-2) and scales (7-9): (Σ w v + Σ ẇ (t - t̄)) / W, each sum over the slots in order
        m0, m1, m2 = rest_weight * rest[0, j], rest_weight * rest[1, j], rest_weight * rest[2, j]
        m7, m8, m9 = rest_weight * rest[7, j], rest_weight * rest[8, j], rest_weight * rest[9, j]
        for s in range(used):
            w = joint_weights[2 * s, j]
            m0, m1, m2 = m0 + w * poses[s, 0, j], m1 + w * poses[s, 1, j], m2 + w * poses[s, 2, j]
            m7, m8, m9 = m7 + w * poses[s, 7, j], m8 + w * poses[s, 8, j], m9 + w * poses[s, 9, j]
        m0, m1, m2, m7, m8, m9 = m0 * inverse, m1 * inverse, m2 * inverse, m7 * inverse, m8 * inverse, m9 * inverse
        g0, g1, g2 = rest_rate * (rest[0, j] - m0), rest_rate * (rest[1, j] - m1), rest_rate * (rest[2, j] - m2)
        g7, g8, g9 = rest_rate * (rest[7, j] - m7), rest_rate * (rest[8, j] - m8), rest_rate * (rest[9, j] - m9)
        h0 = h1 = h2 = h7 = h8 = h9 = 0.0
        for s in range(used):
            w, wr = joint_weights[2 * s, j], joint_weights[2 * s + 1, j]
            h0, h1, h2 = h0 + w * lookup[s, 0], h1 + w * lookup[s, 1], h2 + w * lookup[s, 2]
            h7, h8, h9 = h7 + w * lookup[s, 6], h8 + w * lookup[s, 7], h9 + w * lookup[s, 8]
            g0, g1, g2 = (
                g0 + wr * (poses[s, 0, j] - m0),
                g1 + wr * (poses[s, 1, j] - m1),
                g2 + wr * (poses[s, 2, j] - m2),
            )
            g7, g8, g9 = (
                g7 + wr * (poses[s, 7, j] - m7),
                g8 + wr * (poses[s, 8, j] - m8),
                g9 + wr * (poses[s, 9, j] - m9),
            )
        out_k[j, 0, 0], out_k[j, 0, 1], out_k[j, 0, 2] = (h0 + g0) * inverse, (h1 + g1) * inverse, (h2 + g2) * inverse
        out_k[j, 2, 0], out_k[j, 2, 1], out_k[j, 2, 2] = (h7 + g7) * inverse, (h8 + g8) * inverse, (h9 + g9) * inverse
        # rotations, signs aligned to the first weighted layer's (else the rest's):
        # s = Σ σ w q, ṡ = Σ σ (w ½ (ω, 0) q + ẇ q), then ω in _angular
        reference = used
        for s in range(used):
            if joint_weights[2 * s, j] > 0.0:
                reference = s
                break
        aligned = poses[reference] if reference < used else rest
        r0, r1, r2, r3 = aligned[3, j], aligned[4, j], aligned[5, j], aligned[6, j]
        s0 = s1 = s2 = s3 = d0 = d1 = d2 = d3 = 0.0
        for s in range(used + 1 if below else used):  # the rest only where it weighs
            if s < used:
                w, wr = joint_weights[2 * s, j], joint_weights[2 * s + 1, j]
                x, y, z, q = poses[s, 3, j], poses[s, 4, j], poses[s, 5, j], poses[s, 6, j]
                ox, oy, oz = lookup[s, 3], lookup[s, 4], lookup[s, 5]
            else:
                w, wr = rest_weight, rest_rate
                x, y, z, q = rest[3, j], rest[4, j], rest[5, j], rest[6, j]
                ox = oy = oz = 0.0
            sign = -1.0 if x * r0 + y * r1 + z * r2 + q * r3 < 0.0 else 1.0
            sw, sr = sign * w, sign * wr
            s0, s1, s2, s3 = s0 + sw * x, s1 + sw * y, s2 + sw * z, s3 + sw * q
            half = 0.5 * sw
            d0 += half * (ox * q + oy * z - oz * y) + sr * x
            d1 += half * (-ox * z + oy * q + oz * x) + sr * y
            d2 += half * (ox * y - oy * x + oz * q) + sr * z
            d3 += half * (-ox * x - oy * y - oz * z) + sr * q
        s0_row[j], s1_row[j], s2_row[j], s3_row[j] = s0, s1, s2, s3
        d0_row[j], d1_row[j], d2_row[j], d3_row[j] = d0, d1, d2, d3
    _angular(sums, rates, norms, along, omega)
    w0, w1, w2 = omega
    for j in range(joints):
        out_k[j, 1, 0], out_k[j, 1, 1], out_k[j, 1, 2] = w0[j], w1[j], w2[j]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False, inline="always")
def _angular(sums: Any, rates: Any, norms: Any, along: Any, omega: Any) -> None:
    """ω = 2 ((ṡ - r (r·ṡ)) / |s|) r*, r = s / |s|, per joint, into ``omega`` (three ``(J,)`` rows).

    ``sums`` (s) and ``rates`` (ṡ): four ``(J,)`` rows each, overwritten (r into ``sums``, the
    tangent into ``rates``); ``norms`` and ``along`` ``(J,)``: scratch. One row written per pass,
    so that each pass vectorises (its divisions and roots above all).
    """
    s0, s1, s2, s3 = sums
    t0, t1, t2, t3 = rates
    w0, w1, w2 = omega
    for j in range(norms.size):
        norms[j] = math.sqrt(s0[j] * s0[j] + s1[j] * s1[j] + s2[j] * s2[j] + s3[j] * s3[j])
    for j in range(norms.size):
        s0[j] = s0[j] / norms[j]
    for j in range(norms.size):
        s1[j] = s1[j] / norms[j]
    for j in range(norms.size):
        s2[j] = s2[j] / norms[j]
    for j in range(norms.size):
        s3[j] = s3[j] / norms[j]
    for j in range(norms.size):
        along[j] = s0[j] * t0[j] + s1[j] * t1[j] + s2[j] * t2[j] + s3[j] * t3[j]
    for j in range(norms.size):
        t0[j] = (t0[j] - s0[j] * along[j]) / norms[j]
    for j in range(norms.size):
        t1[j] = (t1[j] - s1[j] * along[j]) / norms[j]
    for j in range(norms.size):
        t2[j] = (t2[j] - s2[j] * along[j]) / norms[j]
    for j in range(norms.size):
        t3[j] = (t3[j] - s3[j] * along[j]) / norms[j]
    for j in range(norms.size):  # 2 · tangent · conj(unit)
        w0[j] = 2.0 * (-t3[j] * s0[j] + t0[j] * s3[j] - t1[j] * s2[j] + t2[j] * s1[j])
    for j in range(norms.size):
        w1[j] = 2.0 * (-t3[j] * s1[j] + t0[j] * s2[j] + t1[j] * s3[j] - t2[j] * s0[j])
    for j in range(norms.size):
        w2[j] = 2.0 * (-t3[j] * s2[j] - t0[j] * s1[j] + t1[j] * s0[j] + t2[j] * s3[j])


# a capture inlines the frame kernels' character and segment search: the cache follows their modules too
kernel_cache.follow(capture, __file__, (_kernels, _sampling_kernels, *_kernels.INLINED))
