"""Accuracy vs steps: static 1-K80 cluster vs a growing cluster with naive and adaptive LR.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 5",
    title="Accuracy vs steps: static 1-K80 cluster vs a growing cluster with naive and adaptive LR",
    upstream="adaptive_lr.pdf",
    sources=("cake-lab/transient-deep-learning: data/adaptive_lr/lr_baseline.csv",
             "cake-lab/transient-deep-learning: data/adaptive_lr/lr_case1.csv",
             "cake-lab/transient-deep-learning: data/adaptive_lr/lr_case2.csv"),
    procedure=("Top-1 accuracy vs step of the 1 K80 + 1 PS baseline and of the dynamic cluster (one K80 added "
               "every 16k steps) with naive and adaptive learning rate."),
    status="APPROX-DATA",
    numbers_from="vm_startup_breakdown",
    legacy_id="icac_fig5",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig5_data``)."""
    return _impl.icac_fig5_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig5(data=data, ax=ax)
