"""Time for a new server request: immediate vs delayed.

Immediate request K80 70.33 s, P100 67.33 s, V100 70.92 s; delayed K80 68.44 s, P100 66.44 s, V100 66.78 s. A cross-region
K80 pair is defined in the notebook but not plotted.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers import _transient as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Time for a new server request: immediate vs delayed",
    upstream="vm_startup_exp.pdf (S2020 cell 36)",
    sources=("S2020 cell 36 inline scalars (transcribed)",),
    procedure="Bars of the inline means with their std, per GPU (K80, P100, V100), immediate vs delayed request.",
    status="INLINE",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="vm_startup_exp",
    notebook="notebooks/09-restart-startup.ipynb",
    test="tests/papers/test_transient_overheads.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.vm_startup_exp_data``)."""
    return _impl.vm_startup_exp_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.vm_startup_exp(data=data, ax=ax)
