"""Compiled transition kernels (numba): the player's frozen and dead-blend transitions.

The same arithmetic as the numpy reference of :mod:`engine.player.transitions` (agreeing to
rounding), one character at a time on character-major arrays: :func:`apply_blends`, frozen (a
snapshot nlerped into the pose, ``α = e / T``) and dead-blend transitions (the snapshot
extrapolated with its velocity decaying, nlerped in with ``smoothstep(e / T)``,
:func:`~engine.anim.inertialization.dead_blend`). The inertialized and spring offsets are
:mod:`engine.backend._pose_offset_kernels`', a capture's velocity
:mod:`engine.backend._capture_kernels`'.

Self-contained on purpose, like :mod:`engine.backend._kernels`: numba's disk cache notices
changes to a cached function's own file only. Inputs are trusted (the callers check them).
"""

from __future__ import annotations

import math
from typing import Any

from numba import njit

#: Stage kinds (:mod:`engine.backend.stage`, where they are defined for every caller).
FROZEN, DEAD_BLEND = 1, 4
#: Below this angle (radians) ``exp`` of a rotation vector uses its series (as the numpy stage).
_SMALL_TURN = 1e-4
_LN2 = math.log(2.0)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def apply_blends(characters: Any, elapsed: Any, kinds: Any, timing: Any, snapshots: Any, pose: Any) -> None:
    """Frozen and dead-blend transitions: the (extrapolated) snapshot nlerped into ``pose`` in place.

    ``characters``, ``elapsed``, ``kinds`` ``(K,)`` (:data:`FROZEN` or :data:`DEAD_BLEND`);
    ``timing`` = (durations ``(C,)``, half-lives ``(C,)``); ``snapshots`` = (poses ``(C, 10, J)``:
    translation, rotation, scale rows; velocities ``(C, 9, J)``: linear, angular, scaling rows);
    ``pose`` as for :func:`apply_offsets`.
    """
    durations, half_lives = timing
    snapshot, velocity = snapshots
    translations, rotations, scales = pose
    joints = translations.shape[1]
    for k in range(characters.size):
        c, t, kind = characters[k], elapsed[k], kinds[k]
        total = durations[c]
        if kind == FROZEN:
            alpha = min(max(t / total, 0.0), 1.0) if total > 0.0 else 1.0
            travel = 0.0
        else:
            progress = min(max(t / total if total > 0.0 else 1.0, 0.0), 1.0)
            alpha = progress * progress * (3.0 - 2.0 * progress)
            rate = _LN2 / half_lives[c]
            travel = (1.0 - math.exp(-rate * t)) / rate
        keep = 1.0 - alpha
        for j in range(joints):
            a = snapshot[c]
            v = velocity[c]
            for e in range(3):
                start = a[e, j] + travel * v[e, j]
                translations[c, j, e] = start + alpha * (translations[c, j, e] - start)
                grown = a[7 + e, j] + travel * v[6 + e, j]
                scales[c, j, e] = grown + alpha * (scales[c, j, e] - grown)
            ax, ay, az, aw = a[3, j], a[4, j], a[5, j], a[6, j]
            if travel != 0.0:  # the snapshot turned by ω·travel: exp(½ ω travel) · q (quat_from_rotvec)
                h0, h1, h2 = 0.5 * travel * v[3, j], 0.5 * travel * v[4, j], 0.5 * travel * v[5, j]
                n = math.sqrt(h0 * h0 + h1 * h1 + h2 * h2)
                scale = 1.0 - n * n / 6.0 if n < _SMALL_TURN else math.sin(n) / n
                ex, ey, ez, ew = h0 * scale, h1 * scale, h2 * scale, math.cos(n)
                ax, ay, az, aw = (
                    ew * ax + ex * aw + ey * az - ez * ay,
                    ew * ay - ex * az + ey * aw + ez * ax,
                    ew * az + ex * ay - ey * ax + ez * aw,
                    ew * aw - ex * ax - ey * ay - ez * az,
                )
            bx, by, bz, bw = rotations[c, j, 0], rotations[c, j, 1], rotations[c, j, 2], rotations[c, j, 3]
            if ax * bx + ay * by + az * bz + aw * bw < 0.0:  # the shortest arc (quat_nlerp)
                bx, by, bz, bw = -bx, -by, -bz, -bw
            qx, qy = keep * ax + alpha * bx, keep * ay + alpha * by
            qz, qw = keep * az + alpha * bz, keep * aw + alpha * bw
            norm = math.sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
            rotations[c, j, 0], rotations[c, j, 1] = qx / norm, qy / norm
            rotations[c, j, 2], rotations[c, j, 3] = qz / norm, qw / norm
