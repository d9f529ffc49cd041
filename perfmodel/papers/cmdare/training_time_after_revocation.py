"""Estimated vs actual training time of 11 runs with a revocation.

MAPE 0.835 %, MAE 10.09 s, max |error| 22 s. How the authors produced the estimates is not in the notebook;
``perfmodel.planning.estimate_time_after_revocation`` rebuilds them from the cluster model.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Estimated vs actual training time of 11 runs with a revocation",
    upstream="S2020 cells 38-40 (not saved)",
    sources=("S2020 cells 38-40 inline arrays (transcribed)",),
    procedure=("Scatter of est_time vs act_time (s) of 11 runs, coloured by the step of the revocation; MAPE, MAE "
               "and max |error| of the estimates."),
    status="INLINE",
    numbers_from="vm_startup_breakdown",
    legacy_id="training_time_estimates",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.training_time_estimates_data``)."""
    return _impl.training_time_estimates_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.training_time_estimates(data=data, ax=ax)
