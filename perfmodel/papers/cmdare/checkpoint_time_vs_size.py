"""Checkpoint time vs checkpoint size, bubble = CV.

Quirk: in ``aggregated.csv`` "Duration mean (s)" is the mean of Diff (= Duration - Local duration, the upload part), not of the
total Duration (ResNet-15 3.56 s = mean Diff; the total 3.79 s is in ``ckpt.csv``); CV = std(Diff)/mean(Diff).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _checkpoint as _impl

ITEM = Item(
    paper="CM-DARE",
    number="not numbered in the upstream sources",
    title="Checkpoint time vs checkpoint size, bubble = CV",
    upstream="ckpt_duration_size_correlation.pdf (ckpt cell 39)",
    sources=("cake-lab/CM-DARE: data/processed_data/checkpoint/aggregated.csv",),
    procedure=("Scatter x = Checkpoint Size (MB), y = Duration mean (s), marker area = coefficient of variation x "
               "800, ylim 0-8 (20 rows)."),
    status="EXACT-DATA",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="ckpt_duration_size_correlation",
    notebook="notebooks/05-checkpoint-time.ipynb",
    test="tests/papers/test_checkpoint_numbers.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.ckpt_duration_size_correlation_data``)."""
    return _impl.ckpt_duration_size_correlation_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.ckpt_duration_size_correlation(data=data, ax=ax)
