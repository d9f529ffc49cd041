"""The bathtub lifetime model of Kadupitiya, Jadhao & Sharma (HPDC'20) as a lifelines fitter, and the AIC comparison
of lifetime models per GPU and region."""
from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest

import perfmodel as pm
from perfmodel.models.bathtub import BathtubFitter


def _sample(A, tau1, tau2, n, seed, b=24.0):
    """Inverse-transform samples of F(t) = A (1 − e^(−t/τ1) + e^((t−b)/τ2)), censored at b."""
    rng = np.random.default_rng(seed)
    F = lambda t: A * (1 - np.exp(-t / tau1) + np.exp((t - b) / tau2))  # noqa: E731
    u = rng.random(n)
    t = np.full(n, b)
    for i in np.flatnonzero(u < F(b - 1e-9)):
        lo, hi = 0.0, b
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if F(mid) < u[i] else (lo, mid)
        t[i] = hi
    return t, t < b


def test_bathtub_recovers_known_parameters_with_censoring():
    t, e = _sample(0.3, 1.5, 2.0, 4000, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = BathtubFitter().fit(t, e)
    assert f.params_["A_"] == pytest.approx(0.3, rel=0.08)
    assert f.params_["tau1_"] == pytest.approx(1.5, rel=0.15)
    assert f.params_["tau2_"] == pytest.approx(2.0, rel=0.25)
    with pytest.raises(ValueError, match="deadline_h must be a positive"):
        BathtubFitter(deadline_h=0)


def test_fit_lifetimes_compares_four_models_and_handles_edge_cases():
    t, e = _sample(0.3, 1.5, 2.0, 600, seed=1)
    d = pm.models.fit_lifetimes(t, e).set_index("model")
    assert list(d.index) == ["kaplan_meier", "exponential", "weibull", "bathtub"]
    assert d.loc["bathtub", "aic"] < d.loc["exponential", "aic"]  # data drawn from a bathtub
    ties = pm.models.fit_lifetimes([0.0, 0.0, 1.0, 1.0, 1.0, 24, 24, 24], [True, True, True, True, True, False, False, False])
    assert ties["n"].iloc[0] == 8 and np.isfinite(ties.set_index("model").loc["exponential", "aic"])
    none = pm.models.fit_lifetimes([24.0, 24.0, 24.0]).set_index("model")
    assert none.loc["bathtub", "params"].startswith("no revocation observed") and none.loc["bathtub", "p_revoked_24h"] == 0
    with pytest.raises(ValueError, match="lifetimes must be ≥ 0 hours"):
        pm.models.fit_lifetimes([1.0, -0.5])


def test_lifetime_model_comparison_per_gpu_and_region():
    """CM-DARE pooled lifetimes: the bathtub has the lowest AIC for K80 (591.7) and V100 (456.6), Weibull for P100
    (506.6); every group with a revocation has a best model."""
    d = pm.figures.lifetime_models_data()
    pooled = d[(d["source"] == "CM-DARE CDFs") & (d["region"] == "all") & d["best"]].set_index("gpu")["model"]
    assert pooled.to_dict() == {"K80": "bathtub", "P100": "weibull", "V100": "bathtub"}
    g = d.groupby(["source", "gpu", "region"]).agg(best=("best", "sum"), n_revoked=("n_revoked", "first"))
    assert g.loc[g["n_revoked"] > 0, "best"].eq(1).all() and g.loc[g["n_revoked"] == 0, "best"].eq(0).all()
    assert (g["n_revoked"] == 0).sum() >= 1  # a region without revocation (ICAC'19 V100 us-central1) is handled
    icac = d[d["source"].str.startswith("ICAC")]
    assert set(icac["gpu"]) == {"K80", "P100", "V100"} and icac.groupby("gpu")["n"].max().to_dict() == {"K80": 64, "P100": 40, "V100": 48}
    fig = pm.figures.lifetime_models("V100")
    assert len(fig.axes[0].lines) == 4
    plt.close(fig)
