"""Step time vs normalized model GFLOPs, the 16 training CNNs.

The upstream file name ``figure_4`` is the SIGMETRICS draft's numbering, not the ICDCS'20 figure number. The four
held-out CNNs (the unseen-model test of the speed prediction) are not in this file.

CM-DARE ``figure_4.pdf`` (SIGMETRICS-draft numbering): step time vs normalized model GFLOPs of the 16 training CNNs,
K80 and P100. Source: ``0latency_data.csv`` (416 rows), sp2 cell 6.
"""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import scatter_figure

ITEM = Item(
    paper="CM-DARE",
    number="figure_4.pdf (SIGMETRICS-draft numbering)",
    title="Step time vs normalized model GFLOPs, the 16 training CNNs",
    upstream="figure_4.pdf (sp2 cell 6)",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/0latency_data.csv",),
    procedure=("Scatter of Step Time (s) against Normalized Model of 416 rows = 16 CNNs x 2 GPUs x 13 samples "
               "(shuffled rs=0 upstream, order only)."),
    status="EXACT-DATA",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="figure_4",
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def figure_4_data() -> pd.DataFrame:
    """416 rows: ``gpu``, ``model``, ``normalized_model``, ``step_time_s``."""
    return ds.load_speed_file("data")[["gpu", "model", "normalized_model", "step_time_s"]]


def figure_4(data: pd.DataFrame | None = None, *, ax=None):
    """The figure (2×2 in; K80 'x', P100 '^', alpha 0.1, as the notebook)."""
    return scatter_figure(figure_4_data() if data is None else data, x="normalized_model", y="step_time_s", xlabel="Normalized Model GFLOPs", ax=ax)


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.figure_4_data``)."""
    return figure_4_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return figure_4(data=data, ax=ax)
