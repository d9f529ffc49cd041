"""The cost of asynchronous staleness per cluster size: accuracy lost and extra steps of 1-8 K80 workers.

Mean accuracy vs step per cluster size, and the step multiplier vs workers with its linear fit, two panels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import figure_size, legend_outside, paper_figure, plot_lines, subplots

ITEM = Item(
    paper="perfmodel",
    number="beyond ICAC'19",
    title="The cost of asynchronous staleness per cluster size: accuracy lost and extra steps of 1-8 K80 workers",
    upstream="-",
    sources=("ICAC'19 accuracy curves (training/k80_on_demand, k80_spot, experiment_1ps_vs_2ps/1ps_k80)",),
    procedure=("perfmodel.planning.staleness_cost on perfmodel.planning.icac_staleness_curves (homogeneous "
               "single-region K80 clusters, one PS, no revoked server or failed run): per cluster size the final "
               "accuracy and its gap to one worker, and the steps the mean curve needs to reach 95 % of the best "
               "level the worst size reaches before the learning-rate step (32 000), relative to one worker; "
               "bootstrap intervals over the runs (1000 resamples, seed 0). "
               "perfmodel.planning.fit_staleness_multiplier fits 1 + c (n - 1), weighted by runs."),
    status="perfmodel analysis",
    notebook="notebooks/07-planner-and-revocations.ipynb",
    test="tests/planning/test_staleness.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The per-size table the figure's right panel draws: :func:`perfmodel.planning.staleness_cost` with its defaults
    (one row per cluster size of ICAC'19's K80 clusters)."""
    from perfmodel.planning.efficiency import staleness_cost

    return staleness_cost()


def _mean_curves(grid_step: float) -> pd.DataFrame:
    """Mean accuracy per (cluster size, grid step) over the runs, each run interpolated on the common grid."""
    from perfmodel.planning.efficiency import icac_staleness_curves

    c = icac_staleness_curves()
    top = c.groupby("run_id")["step"].max().min()
    grid = np.arange(0.0, top + 1e-9, grid_step)
    parts = [pd.DataFrame({"n_workers": int(r["n_workers"].iloc[0]), "step": grid,
                           "accuracy": np.interp(grid, r["step"].to_numpy(float), r["accuracy"].to_numpy(float))})
             for _, r in c.groupby("run_id", sort=True)]
    return pd.concat(parts, ignore_index=True).groupby(["n_workers", "step"], as_index=False)["accuracy"].mean()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: per cluster size the step multiplier (with its bootstrap interval), the final accuracy
    and its gap to one worker; the fitted slope c of ``1 + c (n - 1)`` with its interval (``COMPARISON_COLUMNS``, no
    paper value, status ``PERFMODEL-RESULT``, the protocol in ``reason``), from :func:`data`."""
    from perfmodel.planning.efficiency import fit_staleness_multiplier

    d = data()
    fit = fit_staleness_multiplier(d)
    a = d.attrs
    how = (f"perfmodel.planning.staleness_cost on ICAC'19's homogeneous K80 clusters (1 PS, no revocation or failure): target accuracy "
           f"{a['target_accuracy']:.4f}, steps read on a {a['grid_step']:.0f}-step grid before step {a['before_step']}, reference "
           f"{a['reference_workers']} worker; interval: 2.5-97.5 % of {a['n_boot']} bootstrap resamples of the runs (seed {a['random_state']})")
    rows = [dict(quantity="target_accuracy", unit="fraction", value=a["target_accuracy"],
                 protocol="95 % of the lowest, over cluster sizes, best mean accuracy before the learning-rate step (32 000 steps)"),
            dict(quantity="staleness_slope", unit="1/worker", value=fit["slope"],
                 protocol=f"fit_staleness_multiplier: weighted least squares of 1 + c (n - 1) on the per-size multipliers (weights = runs); "
                          f"bootstrap interval {fit['slope_low']:.3f}-{fit['slope_high']:.3f}; weighted RMSE {fit['rmse']:.3f}")]
    for r in d.itertuples(index=False):
        n = int(r.n_workers)
        rows.append(dict(quantity=f"final_accuracy ({n} workers)", unit="fraction", value=r.final_accuracy,
                         protocol=f"mean over {r.runs} run(s) of the accuracy at the last evaluation (≈64 000 steps)"
                                  + (f", std {r.final_accuracy_std:.4f}" if r.runs > 1 else "")))
        if n == a["reference_workers"]:
            continue
        rows.append(dict(quantity=f"staleness_multiplier ({n} workers)", unit="1", value=r.staleness_multiplier,
                         protocol=f"{how}; {r.runs} run(s); interval {r.multiplier_low:.3f}-{r.multiplier_high:.3f}"))
        rows.append(dict(quantity=f"accuracy_gap ({n} workers)", unit="fraction", value=r.accuracy_gap,
                         protocol=f"final accuracy of 1 worker minus that of {n} ({r.runs} run(s)); interval {r.accuracy_gap_low:.4f}-"
                                  f"{r.accuracy_gap_high:.4f} over {a['n_boot']} bootstrap resamples"))
    return _item.item_results(__name__, rows)


@paper_figure
def _figure(data: pd.DataFrame | None = None, ax=None):
    from perfmodel.planning.efficiency import fit_staleness_multiplier

    d = globals()["data"]() if data is None else data
    fit = fit_staleness_multiplier(d)
    curves = _mean_curves(float(d.attrs.get("grid_step", 4000.0)))
    fig, axes, own = subplots(ax, 1, 2, figsize=figure_size("text", 2.8))
    sizes = sorted(int(n) for n in curves["n_workers"].unique())
    plot_lines(curves.assign(step_k=curves["step"] / 1000), x="step_k", y="accuracy", hue="n_workers", hue_order=sizes,
               labels=lambda n: f"{n} worker{'s' if n > 1 else ''}", legend=False, ax=axes[0], lw=1)
    axes[0].axhline(d["target_accuracy"].iloc[0], color="grey", ls=":", lw=0.8, label="target")
    if d.attrs.get("before_step") is not None:
        axes[0].axvline(d.attrs["before_step"] / 1000, color="grey", ls="--", lw=0.8, label="learning-rate step")
    axes[0].set(xlabel="Global step (thousands)", ylabel="Mean top-1 accuracy")
    legend_outside(axes[0], where="above", ncol=5)
    plot_lines(d, x="n_workers", y="staleness_multiplier", ax=axes[1], legend=False, marker="o", ls="none", label="measured")
    axes[1].vlines(d["n_workers"], d["multiplier_low"], d["multiplier_high"], color="C0", lw=1, label="95 % bootstrap interval")
    n = np.linspace(fit["min_workers"], fit["max_workers"], 50)
    fitted = pd.DataFrame({"n_workers": n, "multiplier": 1 + fit["slope"] * (n - fit["reference_workers"])})
    plot_lines(fitted, x="n_workers", y="multiplier", ax=axes[1], legend=False, color="black", lw=1,
               label=f"1 + {fit['slope']:.2f} (n - {fit['reference_workers']})")
    axes[1].set(xlabel="Workers (asynchronous, 1 PS)", ylabel="Steps to target / steps of 1 worker")
    legend_outside(axes[1], where="above", ncol=2)
    if own:
        fig.tight_layout()
    return fig


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size). Left: the mean accuracy curves of ICAC'19's K80
    clusters with the target and the learning-rate step; right: the multipliers of ``data`` and their fit."""
    return _figure(data=data, ax=ax)
