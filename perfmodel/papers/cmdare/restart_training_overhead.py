"""Extra training time vs steps since the last checkpoint.

Overheads 18.98, 87.72, 146.81, 197.01, 253.66 s. The raw chief-rejoining files match values of the inline arrays but with a
shifted and partly edited mapping (some inline values are in no file), so the figure uses the inline arrays.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Extra training time vs steps since the last checkpoint",
    upstream="restart_training_overhead.pdf (S2020 cell 14)",
    sources=("S2020 cell 14 inline arrays (transcribed)",
             "cake-lab/CM-DARE: data/processed_data/chief_rejoining/*.csv (partial raw data)"),
    procedure=("x = steps since the last checkpoint in {1.5k, 2k, 2.5k, 3k, 3.5k}; y = mean(y_i) - mean(ybase) "
               "with ybase = [1357.3, 1361.28]; error bar = np.std(y_i)."),
    status="INLINE",
    numbers_from="vm_startup_breakdown",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.restart_training_overhead_data``)."""
    return _impl.restart_training_overhead_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.restart_training_overhead(data=data, ax=ax)
