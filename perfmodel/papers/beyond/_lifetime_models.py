"""Which lifetime model fits transient GPU servers? Kaplan–Meier, exponential, Weibull and the bathtub model of
Kadupitiya et al. compared by AIC per GPU and region, on CM-DARE's reconstructed lifetimes and on
ICAC'19's per-VM lifetimes of February 2019 (§2, §3.2), beyond the papers."""
from __future__ import annotations

from perfmodel.plotting import subplots

import numpy as np
import pandas as pd

from perfmodel import datasets as ds
from perfmodel.models.lifetimes import MAX_LIFETIME_H, fit_cdf_lifetimes, fit_icac_lifetimes, lifetimes_from_cdf

__all__ = ["lifetime_models_data", "lifetime_models"]


def lifetime_models_data() -> pd.DataFrame:
    """One row per (source, GPU, region, model): ``params``, ``log_likelihood``, ``aic``, ``p_revoked_24h``, ``n``,
    ``n_revoked``, ``delta_aic`` (to the group's best parametric model) and ``best`` (lowest AIC of the group)."""
    cm = pd.concat([fit_cdf_lifetimes(g) for g in ("K80", "P100", "V100")], ignore_index=True).assign(source="CM-DARE CDFs")
    ic = fit_icac_lifetimes().rename(columns={"server_type": "gpu"}).assign(source="ICAC'19 lifetime.csv (Feb 2019)")
    d = pd.concat([cm, ic], ignore_index=True)
    key = ["source", "gpu", "region"]
    d["delta_aic"] = d["aic"] - d.groupby(key)["aic"].transform("min")
    d["best"] = d["delta_aic"].eq(0)
    return d[key + ["model", "params", "log_likelihood", "aic", "delta_aic", "best", "p_revoked_24h", "n", "n_revoked"]]


def lifetime_models(gpu: str = "K80", *, ax=None):
    """Empirical CDF (Kaplan–Meier) of the pooled CM-DARE lifetimes of ``gpu`` with the fitted exponential, Weibull and
    bathtub CDFs over 0–24 h."""
    import matplotlib.pyplot as plt
    from lifelines import ExponentialFitter, KaplanMeierFitter, WeibullFitter

    from perfmodel.models.bathtub import BathtubFitter

    g = ds.canonical_gpu(gpu)
    lt = lifetimes_from_cdf(g)
    t, e = lt["lifetime_h"].to_numpy(float), lt["revoked"].to_numpy(bool)
    grid = np.linspace(0.01, MAX_LIFETIME_H - 0.01, 200)
    fig, ax, own = subplots(ax, figsize=(3.3, 2.4))
    km = KaplanMeierFitter().fit(t, e)
    ax.step(km.survival_function_.index, 1 - km.survival_function_.iloc[:, 0], where="post", color="black", label="Kaplan–Meier")
    for name, f in (("exponential", ExponentialFitter()), ("Weibull", WeibullFitter()), ("bathtub", BathtubFitter())):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f.fit(t, e)
        ax.plot(grid, 1 - f.survival_function_at_times(grid).to_numpy(), label=f"{name} (AIC {f.AIC_:.0f})")
    ax.set(xlabel="Lifetime (h)", ylabel="Fraction revoked", xlim=(0, 24), ylim=(0, 1), title=f"{g}, {len(t)} servers")
    ax.title.set_fontsize(8)
    ax.legend(frameon=False, fontsize=6)
    if own:
        fig.tight_layout()
    return fig
