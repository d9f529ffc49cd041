"""The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost.

Predicted vs measured, two panels (time, cost).

Paper: perfmodel, beyond ICAC'19. Upstream: -.

Sources
-------
* ICAC'19 cluster runs (training/k80_spot, p100_v100_spot, k80_on_demand)

Procedure
---------
perfmodel.planning.plan.validate_against_icac: the planner's predicted training time and cost of each measured ICAC'19
configuration next to the measured means.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _plan_validation as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "beyond ICAC'19"
#: title
TITLE = "The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ("ICAC'19 cluster runs (training/k80_spot, p100_v100_spot, k80_on_demand)",)
#: procedure
PROCEDURE = "perfmodel.planning.plan.validate_against_icac: the planner's predicted training time and cost of each measured ICAC'19 configuration next to the measured means."
#: tolerance rule of its numbers
TOLERANCE = "none: perfmodel's own results, no paper value to hold them against (deterministic: a rerun gives the same values)"
#: reproduction status of the data behind it
STATUS = "perfmodel analysis"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "plan_validation"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/07-planner-and-revocations.ipynb"
#: test checking it
TEST = "tests/papers/test_plan_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


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
    return _item.own_results(LEGACY_ID, rows, citation="perfmodel's own result on " + " and ".join(SOURCES))


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.plan_validation(data=data, ax=ax)
