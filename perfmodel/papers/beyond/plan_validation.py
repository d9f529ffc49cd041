"""The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost.

Predicted vs measured, two panels (time, cost).

Paper: perfmodel, perfmodel (beyond ICAC'19). Upstream: -.

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
NUMBER = "perfmodel (beyond ICAC'19)"
#: title
TITLE = "The planner vs the measured ICAC'19 clusters: predicted vs measured time and cost"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ("ICAC'19 cluster runs (training/k80_spot, p100_v100_spot, k80_on_demand)",)
#: procedure
PROCEDURE = "perfmodel.planning.plan.validate_against_icac: the planner's predicted training time and cost of each measured ICAC'19 configuration next to the measured means."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "perfmodel analysis"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = "perfmodel's own analysis; the paper quotes no number for it beyond the data checked in its test."
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

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.plan_validation_data``)."""
    return _impl.plan_validation_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.plan_validation(data=data, ax=ax)
