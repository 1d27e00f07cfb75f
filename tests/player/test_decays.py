"""The root-velocity decays of the transition stage and the synced phase rate, against written-out references.

:func:`~engine.player.transitions.decay_weight` computes each kind's curve for the entries of that
kind only; the reference below computes every curve everywhere and picks (the numbers must be the
same to the bit), and the curve is the derivative of :func:`~engine.player.transitions.decay_integral`.
:func:`~engine.player.sync.synced_rate` sums the weights and the weighted rates in one pass and the
plain mean only where some character's clips all have weight 0.
"""

from __future__ import annotations

import numpy as np

from engine.backend.stage import DEAD_BLEND, FROZEN, INERTIALIZE, NONE, SPRING
from engine.player.sync import synced_rate
from engine.player.transitions import decay_integral, decay_weight


def reference_weight(kind: np.ndarray, elapsed: np.ndarray, duration: np.ndarray, half_life: np.ndarray) -> np.ndarray:
    """Every curve for every entry, then the entry's kind's (0 without a transition)."""
    safe = np.where(duration > 0.0, duration, 1.0)
    s = np.where(duration > 0.0, np.clip(elapsed / safe, 0.0, 1.0), 1.0)
    rate = 1.6783469900166608 / np.where(half_life > 0.0, half_life, 1.0)
    t = np.maximum(elapsed, 0.0)
    curves = [1.0 - s**3 * (10.0 - 15.0 * s + 6.0 * s * s), 1.0 - s * s * (3.0 - 2.0 * s), 1.0 - s]
    per_kind = np.select([kind == INERTIALIZE, kind == DEAD_BLEND, kind == FROZEN], curves, default=0.0)
    return np.where(kind == SPRING, np.exp(-rate * t) * (1.0 + rate * t), per_kind)


def test_decay_weight_is_every_kinds_curve_bitwise() -> None:
    rng = np.random.default_rng(3)
    n = 400
    kind = rng.choice([NONE, FROZEN, INERTIALIZE, SPRING, DEAD_BLEND], size=n)
    duration = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.05, 1.0, n))
    elapsed = rng.uniform(-0.1, 1.2, n)
    half_life = rng.uniform(0.05, 0.5, n)
    got = decay_weight(kind, elapsed, duration, half_life)
    assert np.array_equal(got, reference_weight(kind, elapsed, duration, half_life))
    for code in (FROZEN, INERTIALIZE, SPRING, DEAD_BLEND):  # one kind alone, and a mix
        alone = np.full(n, code)
        assert np.array_equal(
            decay_weight(alone, elapsed, duration, half_life), reference_weight(alone, elapsed, duration, half_life)
        )
    assert not decay_weight(np.full(3, NONE), elapsed[:3], duration[:3], half_life[:3]).any()


def test_decay_weight_is_the_integrals_derivative() -> None:
    rng = np.random.default_rng(4)
    n = 200
    kind = rng.choice([FROZEN, INERTIALIZE, SPRING, DEAD_BLEND], size=n)
    duration, half_life = rng.uniform(0.2, 1.0, n), rng.uniform(0.1, 0.5, n)
    elapsed = rng.uniform(0.01, 0.9, n) * duration
    h = 1e-6
    slope = (
        decay_integral(kind, elapsed + h, duration, half_life) - decay_integral(kind, elapsed - h, duration, half_life)
    ) / (2 * h)
    assert np.allclose(decay_weight(kind, elapsed, duration, half_life), slope, atol=1e-7)


def test_synced_rate_mixes_weighted_and_plain_means() -> None:
    rng = np.random.default_rng(5)
    weights = rng.random((4, 6))
    weights[:, [1, 4]] = 0.0  # these characters' clips all have weight 0: the plain mean of the rates
    cycles = rng.uniform(0.5, 2.0, (4, 1))
    got = synced_rate(weights, cycles)
    for c in range(6):
        w = weights[:, c]
        expected = cycles[:, 0].mean() if not w.any() else (w * cycles[:, 0]).sum() / w.sum()
        assert np.isclose(got[c], expected, rtol=1e-14, atol=0.0)
    assert np.array_equal(synced_rate(weights[:, [0, 2]], cycles), got[[0, 2]])  # all weighted: no plain mean
    per_character = rng.uniform(0.5, 2.0, (4, 6))  # rates per clip and character
    assert np.allclose(
        synced_rate(weights, per_character)[0], (weights[:, 0] * per_character[:, 0]).sum() / weights[:, 0].sum()
    )
