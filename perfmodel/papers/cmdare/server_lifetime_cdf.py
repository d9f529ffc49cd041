"""Lifetime CDF of transient GPU servers per region (k80/p100/v100_cdf); time between failures.

K80: 48 + 48 + 30 + 30 = 156 servers (the README's "over 156 instances"); six regions overall. The CM-DARE repository holds no
raw lifetime data; the older transient-deep-learning ``lifetime/lifetime.csv`` is a different, smaller sample. The fitted rate is
a = 0.00033254 per minute (mean time between failures about 50 h); the Weibull, gamma and lognormal curves of the notebook are
overlaid by hand, not fitted.

CM-DARE ``k80_cdf.pdf`` (README "Fig 2"), ``p100_cdf.pdf``, ``v100_cdf.pdf``: lifetime CDF of transient GPU servers per
region (redraws cells 13–15), with the Kaplan–Meier estimate of the reconstructed per-server
lifetimes (censored at 24 h) overlaid as a check.
"""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers._item import Item
from perfmodel.papers._numbers import compare_with_paper
from perfmodel.plotting import figure_size, paper_figure, plot_lines, subplots

ITEM = Item(
    paper="CM-DARE",
    number="Fig. 2 = k80_cdf (CM-DARE README numbering)",
    title="Lifetime CDF of transient GPU servers per region (k80/p100/v100_cdf); time between failures",
    upstream="k80_cdf.pdf, p100_cdf.pdf, v100_cdf.pdf (redraws cells 13-15); time between failures S2020 cells 25-30",
    sources=("redraws cells 13-15 inline CDF arrays (transcribed)",
             "S2020 cells 25-30 inline inter-failure times (transcribed)"),
    procedure=("Each inline array has 25 values plotted with x-ticks 1, 5, ..., 25: the value at index i is the "
               "fraction of servers revoked within i+1 hours (the final 1 is the forced 24-h termination). Sample "
               "sizes come from the denominators. Time between failures: curve_fit of 1 - exp(-a x) (x in "
               "minutes, p0 = 0.001) on the 128-bin histogram CDF of 128 inter-failure times."),
    status="INLINE",
    numbers_area="lifetimes",
    legacy_id="lifetime_cdf",
    variants=({"gpu": "K80"}, {"gpu": "P100"}, {"gpu": "V100"}),
    notebook="notebooks/06-lifetimes.ipynb",
    test="tests/papers/test_transient_lifetime_cdf.py",
    authors_image="CM:img/k80_cdf.png",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


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


def data(gpu="K80") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.lifetime_cdf_data``)."""
    return lifetime_cdf_data(gpu=gpu)


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``lifetimes`` area (rows of other items name them in ``item``)."""
    return lifetime_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80"):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return lifetime_cdf(gpu=gpu, data=data, ax=ax)
