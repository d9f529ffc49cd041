"""The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost.

Predicted vs measured, two panels (time, cost).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.beyond import _plan_validation as _impl

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


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.plan_validation_data``)."""
    return _impl.plan_validation_data()


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
    return _impl.plan_validation(data=data, ax=ax)
