"""The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost.

Predicted vs measured, two panels (time, cost).

The planner against what was measured: ICAC'19 clusters (ResNet-32, 64000 steps) predicted from CM-DARE's
measurements vs their measured time and cost (beyond the papers).
"""
from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.planning.plan import validate_against_icac
from perfmodel.plotting import (
    figure_size,
    legend_outside,
    paper_figure,
    plot_parity,
    subplots,
)

ITEM = Item(
    paper="perfmodel",
    number="beyond ICAC'19",
    title="The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost",
    upstream="-",
    sources=("ICAC'19 cluster runs (training/k80_spot, p100_v100_spot, k80_on_demand)",),
    procedure=("perfmodel.planning.plan.validate_against_icac: the planner's predicted training time and cost of "
               "each measured ICAC'19 configuration next to the measured means."),
    status="perfmodel analysis",
    notebook="notebooks/07-planner-and-revocations.ipynb",
    test="tests/papers/test_plan_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def plan_validation_data() -> pd.DataFrame:
    """:func:`perfmodel.planning.validate_against_icac` — per configuration, measured and predicted time and cost."""
    return validate_against_icac()


@paper_figure
def plan_validation(data: pd.DataFrame | None = None, *, ax=None):
    """Two panels: predicted vs measured training time (h) and cost (USD), one point per ICAC'19 configuration (the
    GPUs' legend right of the cost panel)."""
    d = plan_validation_data() if data is None else data
    frame = d.assign(gpu=d["gpu"].astype(str))
    gpus = sorted(frame["gpu"].unique())
    fig, axes, own = subplots(ax, 1, 2, figsize=figure_size("text", 2.8))
    for ax, (m, p, unit) in zip(axes, (("measured_time_h", "predicted_time_h", "time (h)"), ("measured_cost_usd", "predicted_cost_usd", "cost (USD)"))):
        plot_parity(frame, x=m, y=p, hue="gpu", hue_order=gpus, s=14, alpha=1.0, ax=ax, legend=False)
        ax.set(xlabel=f"Measured {unit}", ylabel=f"Predicted {unit}")
    mape = d.attrs.get("mape", {})
    if mape:
        axes[0].set_title(f"MAPE {mape['time_pct']:.1f} %")
        axes[1].set_title(f"MAPE {mape['cost_pct']:.1f} %")
    legend_outside(axes[1], where="right")
    if own:
        fig.tight_layout()
    return fig


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.plan_validation_data``)."""
    return plan_validation_data()


def numbers() -> pd.DataFrame:
    """perfmodel's own results: the planner's MAPE on time and cost over the measured ICAC'19 configurations, and its
    absolute % error on each (``COMPARISON_COLUMNS``, no paper value, status ``PERFMODEL-RESULT``, the protocol in ``reason``)."""
    from perfmodel.diagnostics.metrics import mape

    d = data()
    how = ("perfmodel.planning.validate_against_icac: the planner's prediction (ResNet-32, 64000 steps, from CM-DARE's measurements) "
           "vs the mean of the measured ICAC'19 runs")
    rows = []
    for what, unit in (("time", "h"), ("cost", "usd")):
        rows.append(dict(quantity=f"{what}_mape_pct", unit="pct", value=mape(d[f"measured_{what}_{unit}"], d[f"predicted_{what}_{unit}"]),
                         protocol=f"{how}, over the {len(d)} configurations; MAPE from perfmodel.diagnostics.metrics"))
    for r in d.itertuples(index=False):
        kind = "transient" if r.transient else "on-demand"
        for what, m, p in (("time", r.measured_time_h, r.predicted_time_h), ("cost", r.measured_cost_usd, r.predicted_cost_usd)):
            rows.append(dict(quantity=f"{what}_ape_pct ({r.config})", unit="pct", value=mape([m], [p]),
                             protocol=f"{how} of {r.config} ({r.n_workers} {r.gpu} workers, {kind}; {r.n_runs} runs); absolute % "
                                      "error from perfmodel.diagnostics.metrics"))
    return _item.item_results(__name__, rows)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return plan_validation(data=data, ax=ax)
