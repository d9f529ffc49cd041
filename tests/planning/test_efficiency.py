"""Gradient noise scale (McCandlish et al.) on synthetic gradients with a known answer."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=200, deadline=None)
@given(b=st.floats(1e-3, 1e6), B1=st.integers(1, 100_000), B2=st.integers(1, 100_000))
def test_statistical_efficiency_is_at_most_one_and_falls_with_the_batch(b, B1, B2):
    from perfmodel.planning import statistical_efficiency

    e1, e2 = float(statistical_efficiency(B1, b)), float(statistical_efficiency(B2, b))
    assert 0 < e1 <= 1 and 0 < e2 <= 1
    if B1 < B2:
        assert e1 >= e2
    # samples to the target, steps x batch, are the small-batch minimum over the efficiency
    assert float(steps_multiplier(B1, b)) * B1 == pytest.approx(b / float(statistical_efficiency(B1, b)), rel=1e-9)
