"""CM-DARE ``k80_cdf.pdf`` (README "Fig 2"), ``p100_cdf.pdf``, ``v100_cdf.pdf``: lifetime CDF of transient GPU servers per
region (redraws cells 13–15), with the Kaplan–Meier estimate of the reconstructed per-server
lifetimes (censored at 24 h) overlaid as a check."""
from __future__ import annotations

from perfmodel.plotting import figure_size, paper_figure, plot_lines, subplots

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers._numbers import compare_with_paper

__all__ = ["lifetime_cdf_data", "lifetime_cdf", "lifetime_numbers_data"]


def lifetime_cdf_data(gpu: str = "K80") -> pd.DataFrame:
    """The plotted arrays: ``gpu``, ``region``, ``n_servers``, ``hour`` (1–25), ``fraction_revoked``."""
    g = ds.canonical_gpu(gpu)
    d = ds.load_transcribed("lifetime_cdf")
    d = d[d["gpu"] == g][["gpu", "region", "n_servers", "hour", "fraction_revoked"]]
    if d.empty:
        raise ValueError(f"No lifetime CDF for {g}; the data has K80, P100 and V100.")
    return d.reset_index(drop=True)


@paper_figure
def lifetime_cdf(gpu: str = "K80", *, data: pd.DataFrame | None = None, ax=None):
    """One line per region: fraction revoked within 1..25 h (the value 1 at 25 h is the forced 24-h termination)."""
    d = lifetime_cdf_data(gpu) if data is None else data
    n = d.groupby("region", sort=False, observed=True)["n_servers"].first()
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.2))
    plot_lines(d, x="hour", y="fraction_revoked", hue="region", ax=ax, labels=lambda r: f"{r} (n={int(n[r])})")
    ax.set(xlabel="Lifetime (hours)", ylabel="CDF", xticks=range(1, 26, 4), ylim=(0, 1.02))
    if own:
        fig.tight_layout()
    return fig


def lifetime_numbers_data() -> pd.DataFrame:
    """The paper's numbers side by side: the time-between-failures exponential fit (rate per minute and its mean), and
    per GPU the number of servers and of revocations in the per-server lifetimes reconstructed from the CDF arrays."""
    from perfmodel.models.lifetimes import lifetimes_from_cdf, time_between_failures_fit

    a = time_between_failures_fit()
    rep = {"tbf_exponential_rate_per_min": a, "tbf_mean_min": 1 / a}
    lt = lifetimes_from_cdf()
    for g, grp in lt.groupby("gpu", observed=True):
        rep[f"{str(g).lower()}_n_servers"] = float(len(grp))
        rep[f"{str(g).lower()}_revocations_total"] = float(grp["revoked"].sum())
    return pd.concat([compare_with_paper("lifetimes", rep, item=i) for i in ("time_between_failures", "lifetime_cdf")], ignore_index=True)
