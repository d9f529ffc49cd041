"""Chief rejoining: training time and final accuracy of the raw runs.

Final accuracies of the files: base 81.72, base-1 81.67, 5500 81.76, 6000 79.48, 6500-1 77.89, 6500-2 79.07, 7000-2 78.59,
7500 78.15, 7500-1 82.73 %; the notebook's inline [79.89, 80.07] (6.5k) and 81.395 (7k) match no file.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Chief rejoining: training time and final accuracy of the raw runs",
    upstream="S2020 cells 13-16 (not saved)",
    sources=("cake-lab/CM-DARE: data/processed_data/chief_rejoining/*.csv",),
    procedure=("Total training time (last - first wall time, 24k steps, checkpoint every 4k steps) and final "
               "accuracy of each raw run."),
    status="EXACT-DATA (raw files) / INLINE",
    numbers_from="vm_startup_breakdown",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.chief_rejoining_data``)."""
    return _impl.chief_rejoining_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.chief_rejoining(data=data, ax=ax)
