"""Gradient noise scale (McCandlish et al.) on synthetic gradients with a known answer."""
from __future__ import annotations

import numpy as np
import pytest

from perfmodel.planning.efficiency import gradient_noise_scale, steps_multiplier


def test_noise_scale_of_synthetic_gradients():
    """Per-example gradients g_i = G + noise with tr Σ = d·σ²: B_simple = d σ² / |G|²."""
    rng = np.random.default_rng(0)
    d, sigma = 50, 2.0
    G = rng.normal(size=d)
    truth = d * sigma**2 / float(G @ G)
    def sq_norms(B, n=4000):
        means = G + rng.normal(scale=sigma / np.sqrt(B), size=(n, d))  # the mean of B per-example gradients
        return (means**2).sum(axis=1)
    est = gradient_noise_scale(sq_norms(8), sq_norms(128), 8, 128)
    assert est["b_simple"] == pytest.approx(truth, rel=0.05)
    assert est["trace_cov"] == pytest.approx(d * sigma**2, rel=0.05)
    assert steps_multiplier([truth], truth)[0] == pytest.approx(2.0)


def test_errors():
    with pytest.raises(ValueError, match="need 0 < batch_small < batch_big"):
        gradient_noise_scale([1.0], [0.5], 64, 32)
    with pytest.raises(ValueError, match="not positive"):
        gradient_noise_scale([1.0], [2.0], 8, 64)
