"""Lifetime models (KM, exponential, Weibull, bathtub) compared by AIC per GPU.

The per-server lifetimes are reconstructed from the CDF arrays (the only lifetime data of CM-DARE). The figure is drawn from the
fits, so it takes no ``data``; ``data()`` is the AIC table.

Which lifetime model fits transient GPU servers? Kaplan–Meier, exponential, Weibull and the bathtub model of
Kadupitiya et al. compared by AIC per GPU and region, on CM-DARE's reconstructed lifetimes and on
ICAC'19's per-VM lifetimes of February 2019 (§2, §3.2), beyond the papers.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds
from perfmodel.models.lifetimes import (
    MAX_LIFETIME_H,
    fit_cdf_lifetimes,
    fit_icac_lifetimes,
    lifetimes_from_cdf,
)
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import (
    figure_size,
    legend_outside,
    paper_figure,
    plot_ecdf,
    plot_lines,
    subplots,
)

ITEM = Item(
    paper="perfmodel",
    number="beyond CM-DARE section on lifetimes",
    title="Lifetime models (KM, exponential, Weibull, bathtub) compared by AIC per GPU",
    upstream="-",
    sources=("CM-DARE lifetime CDF arrays (per-server lifetimes reconstructed from them, censored at 24 h)",),
    procedure=("Kaplan-Meier estimate of the pooled per-GPU lifetimes with fitted exponential, Weibull and "
               "bathtub CDFs (lifelines); AIC per model and GPU."),
    status="perfmodel analysis",
    variants=({"gpu": "K80"}, {"gpu": "P100"}, {"gpu": "V100"}),
    notebook="notebooks/06-lifetimes.ipynb",
    test="tests/models/test_bathtub.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


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


@paper_figure
def lifetime_models(gpu: str = "K80", *, ax=None):
    """Empirical CDF (Kaplan–Meier) of the pooled CM-DARE lifetimes of ``gpu`` with the fitted exponential, Weibull and
    bathtub CDFs over 0–24 h."""
    import warnings

    from lifelines import ExponentialFitter, WeibullFitter

    from perfmodel.models.bathtub import BathtubFitter

    g = ds.canonical_gpu(gpu)
    lt = lifetimes_from_cdf(g)
    t, e = lt["lifetime_h"].to_numpy(float), lt["revoked"].to_numpy(bool)
    grid = np.linspace(0.01, MAX_LIFETIME_H - 0.01, 200)
    fig, ax, own = subplots(ax, figsize=figure_size("column", 2.4))
    plot_ecdf(lt, x="lifetime_h", event="revoked", ax=ax, color="black", label="Kaplan–Meier", legend=False)
    fits = []
    for name, f in (("exponential", ExponentialFitter()), ("Weibull", WeibullFitter()), ("bathtub", BathtubFitter())):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f.fit(t, e)
        fits.append(pd.DataFrame({"lifetime_h": grid, "cdf": 1 - f.survival_function_at_times(grid).to_numpy(),
                                  "model": f"{name} (AIC {f.AIC_:.0f})"}))
    plot_lines(pd.concat(fits, ignore_index=True), x="lifetime_h", y="cdf", hue="model", ax=ax, palette=["C0", "C1", "C2"], legend=False)
    ax.set(xlabel="Lifetime (h)", ylabel="Fraction revoked", xlim=(0, 24), ylim=(0, 1), title=f"{g}, {len(t)} servers")
    legend_outside(ax, where="right")
    if own:
        fig.tight_layout()
    return fig


def data(gpu=None) -> pd.DataFrame:
    """The AIC table (``perfmodel.figures.lifetime_models_data``), only the rows of ``gpu`` when given."""
    d = lifetime_models_data()
    if gpu is None:
        return d
    from perfmodel.datasets import canonical_gpu

    return d[d["gpu"] == canonical_gpu(gpu)].reset_index(drop=True)


def numbers() -> pd.DataFrame:
    """perfmodel's own results: ΔAIC of each parametric lifetime model to the best one, per source and GPU (all regions
    pooled) (``COMPARISON_COLUMNS``, no paper value, status ``PERFMODEL-RESULT``, the protocol in ``reason``)."""
    import warnings

    from lifelines.exceptions import ApproximationWarning

    with warnings.catch_warnings():  # the bathtub fit's variance estimate (the AIC does not use it), and the optimiser's
        warnings.simplefilter("ignore", ApproximationWarning)  # overflowing trial steps (as figure() draws the same fits)
        warnings.filterwarnings("ignore", message="overflow encountered in exp", category=RuntimeWarning)
        d = lifetime_models_data()
    d = d[(d["region"] == "all") & d["aic"].notna()]
    rows = [dict(quantity=f"delta_aic_{r.model} ({r.source}, {r.gpu})", unit="1", value=r.delta_aic,
                 protocol=f"AIC of the {r.model} fit (lifelines, maximum likelihood, right-censored) minus the lowest AIC of "
                          f"exponential / Weibull / bathtub on the {r.n} pooled {r.gpu} lifetimes ({r.n_revoked} revoked) of {r.source}; "
                          "0 = the best model")
            for r in d.itertuples(index=False)]
    return _item.item_results(__name__, rows, citation="perfmodel's own result on the CM-DARE lifetime CDF arrays and ICAC'19 lifetime.csv")


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80"):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return lifetime_models(gpu=gpu, ax=ax)
