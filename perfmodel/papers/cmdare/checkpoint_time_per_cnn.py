"""Checkpoint duration mean vs size, 20 CNNs.

The first 16 dat3 values equal ``ckpt.csv`` "Duration mean (s)" (3.79 ... 7.66); the last 4 (test CNNs) are 3.43, 4.21, 4.18,
5.65 (the file means of ``unaggregated_test.csv`` are 3.434, 4.196, 4.208, 5.666).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _checkpoint as _impl

ITEM = Item(
    paper="CM-DARE",
    number="figure_12.pdf (SIGMETRICS-draft numbering)",
    title="Checkpoint duration mean vs size, 20 CNNs",
    upstream="figure_12.pdf (redraws cell 18)",
    sources=("redraws cell 18 inline dat3, dat4 (transcribed)",
             "cake-lab/CM-DARE: data/processed_data/checkpoint/ckpt.csv"),
    procedure="Scatter of dat4 (size, MB) vs dat3 (duration mean, s).",
    status="INLINE",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="figure_12",
    notebook="notebooks/05-checkpoint-time.ipynb",
    test="tests/papers/test_checkpoint_numbers.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.figure_12_data``)."""
    return _impl.figure_12_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.figure_12(data=data, ax=ax)
