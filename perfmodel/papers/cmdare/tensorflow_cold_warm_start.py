"""TensorFlow cold vs warm start.

A per-model version (cell 17, not saved) gives cold/warm 75.6/14.79 s (ResNet-15) to 90.83/30.56 s (Shake-Shake big).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="TensorFlow cold vs warm start",
    upstream="tf_restart.pdf (redraws cell 16)",
    sources=("redraws cell 16 inline scalars (transcribed)",),
    procedure="Two bars: cold start 55.084635 s (yerr 3.44), warm start 11.872541 s (yerr 2.24).",
    status="INLINE",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="tf_restart",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.tf_restart_data``)."""
    return _impl.tf_restart_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.tf_restart(data=data, ax=ax)
