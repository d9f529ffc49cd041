"""Revocations per hour since VM start and per hour of day, K80/P100/V100.

Totals K80 72 revocations (33 in hour 0), P100 65, V100 69; hour-of-day peaks K80 hour 10, P100 and V100 hour 13. The time zone
of the hour of day is not stated upstream.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Revocations per hour since VM start and per hour of day, K80/P100/V100",
    upstream=("{k80,p100,v100}_hour_after_starting.pdf (redraws cells 20-22), {k80,p100,v100}_hour_of_day.pdf "
              "(redraws cells 24-26)"),
    sources=("redraws cells 20-26 inline arrays (transcribed)",),
    procedure=("Bars of the inline counts: 24 bins of hours since start (ylim 0-40), 25 bins of hour of day "
               "(index 24 a padding 0; ylim 0-20)."),
    status="INLINE",
    numbers_from="vm_startup_breakdown",
    variants=({"gpu": "K80", "basis": "hours_since_start"},
              {"gpu": "P100", "basis": "hours_since_start"},
              {"gpu": "V100", "basis": "hours_since_start"},
              {"gpu": "K80", "basis": "hour_of_day"},
              {"gpu": "P100", "basis": "hour_of_day"},
              {"gpu": "V100", "basis": "hour_of_day"}),
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(gpu="K80", basis="hours_since_start") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.revocations_by_hour_data``)."""
    return _impl.revocations_by_hour_data(gpu=gpu, basis=basis)


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80", basis="hours_since_start"):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.revocations_by_hour(gpu=gpu, basis=basis, data=data, ax=ax)
