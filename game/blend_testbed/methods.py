"""One layered blend computed three ways, for the testbed's side-by-side view and its report.

- ``"ours"``: :func:`engine.anim.blending.blend`, every layer sign-aligned to a reference
  quaternion before the weighted sum (the engine's blend, what the animator runs);
- ``"slerp"``: :func:`engine.anim.blending.slerp_chain` with per-joint weights: successive
  slerps, shortest arc each time, order-dependent for three layers or more;
- ``"naive"``: **the seed's bug**, written here only to be looked at: the weighted sum of the
  quaternions as they come, then normalised. ``q`` and ``-q`` are the same rotation, but summed
  with weights they cancel: a layer stored in the other hemisphere drags the sum towards zero
  and its normalisation points anywhere.

All three see the same inputs: layers, per-joint weights (layer weight × mask) and the rest pose
filling in below the weight threshold, exactly as ``blend`` does it. :func:`flip_layer` negates
one layer's quaternions (the same rotations): the first two methods do not change, the naive sum
falls apart.
"""

from __future__ import annotations

import numpy as np

from engine.anim import Pose, Skeleton, blend, slerp_chain
from engine.math import quat_angle
from engine.math._checks import FloatArray

METHODS = ("ours", "slerp", "naive")
"""Method names, in the order of :func:`blend_three_ways`'s output."""

LABELS = {
    "ours": ("ours", "aligned sum: blend"),
    "slerp": ("slerp chain", "slerp_chain"),
    "naive": ("naive sum", "the seed's bug"),
}
"""Two-line label of each method: its name, then what it is."""


def joint_weights(weights: FloatArray, masks: FloatArray | None, num_joints: int, threshold: float) -> FloatArray:
    """Per-joint weights ``(N + 1, J)`` of ``N`` layers and, last, the rest pose.

    ``weights`` ``(N,)`` layer weights, ``masks`` ``(N, J)`` or ``None`` (all ones). The rest pose
    gets ``max(0, threshold - total)`` per joint, as in :func:`engine.anim.blending.blend`.
    """
    per_joint = np.broadcast_to(weights[:, None], (weights.size, num_joints))
    if masks is not None:
        per_joint = per_joint * masks
    rest = np.maximum(threshold - per_joint.sum(axis=0), 0.0)
    return np.concatenate((per_joint, rest[None]))


def with_rest(layers: Pose, skeleton: Skeleton) -> Pose:
    """``layers`` ``(N, J)`` with the skeleton's rest pose appended as layer ``N``."""
    rest = skeleton.rest_pose
    return Pose(
        np.concatenate((layers.translations, rest.translations[None])),
        np.concatenate((layers.rotations, rest.rotations[None])),
        np.concatenate((layers.scales, rest.scales[None])),
    )


def naive_blend(layers: Pose, weights: FloatArray) -> Pose:
    """The seed's blend: ``normalise(Σ w q)`` with no hemisphere alignment (testbed only).

    ``layers`` ``(N, J)``, per-joint ``weights`` ``(N, J)`` with a positive total per joint.
    Translations and scales are the weighted averages, as in the other methods. Where the sum
    cancels exactly (``q`` plus ``-q`` at equal weights) the seed produced NaN; the identity is
    returned there so the broken pose can still be drawn.
    """
    total = weights.sum(axis=0)[:, None]
    rotations = np.einsum("nj,njk->jk", weights, layers.rotations)
    norm = np.linalg.norm(rotations, axis=-1, keepdims=True)
    rotations = np.where(norm > 1e-12, rotations / np.maximum(norm, 1e-12), np.array([0.0, 0.0, 0.0, 1.0]))
    return Pose(
        np.einsum("nj,njk->jk", weights, layers.translations) / total,
        rotations,
        np.einsum("nj,njk->jk", weights, layers.scales) / total,
    )


def blend_three_ways(
    layers: Pose, weights: FloatArray, masks: FloatArray | None, skeleton: Skeleton, threshold: float
) -> Pose:
    """The blend of ``N`` layers of one character by each of :data:`METHODS`: a pose ``(3, J)``.

    Parameters
    ----------
    layers
        Sampled local poses ``(N, J)``; with ``N = 0`` all three are the rest pose.
    weights
        Layer weights ``(N,)``, non-negative.
    masks
        Per-layer joint masks ``(N, J)``, or ``None``.
    skeleton
        The skeleton: its rest pose fills in where the total weight is below ``threshold``.
    threshold
        The rest threshold (the animator's ``rest_threshold``).
    """
    if weights.size == 0:
        return skeleton.rest_pose.broadcast_to((len(METHODS),))
    ours = blend(skeleton.rest_pose, layers, weights, masks, threshold=threshold)
    per_joint = joint_weights(weights, masks, skeleton.num_joints, threshold)
    full = with_rest(layers, skeleton)
    # slerp_chain weights whole poses: give every joint its own batch entry, (N+1, J, 1).
    columns = Pose(full.translations[:, :, None], full.rotations[:, :, None], full.scales[:, :, None])
    chain = slerp_chain([columns[n] for n in range(weights.size + 1)], per_joint)
    naive = naive_blend(full, per_joint)
    return Pose(
        np.stack((ours.translations, chain.translations[:, 0], naive.translations)),
        np.stack((ours.rotations, chain.rotations[:, 0], naive.rotations)),
        np.stack((ours.scales, chain.scales[:, 0], naive.scales)),
    )


def flip_layer(layers: Pose, layer: int) -> Pose:
    """``layers`` with layer ``layer``'s quaternions negated: the same rotations, other hemisphere."""
    rotations = layers.rotations.copy()
    rotations[layer] *= -1.0
    return Pose(layers.translations, rotations, layers.scales)


def angular_errors(poses: Pose) -> FloatArray:
    """Per-joint rotation angle, degrees, of ``"slerp"`` and ``"naive"`` from ``"ours"``: ``(2, J)``."""
    return np.degrees(quat_angle(poses.rotations[1:], poses.rotations[:1]))
