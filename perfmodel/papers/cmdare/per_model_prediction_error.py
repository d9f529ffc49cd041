"""Per-model prediction error (sigmetrics_figure5_comb.csv).

The Step Time columns equal the test rows of the unshuffled ``0latency_data.csv`` split, but re-fitting gives predictions up to
0.0156 s different and error means up to 33.8 points different, so the CSV itself is the data. Largest errors: ResNet-15 P100 +206.4 %,
custom1 P100 +123.8 %, custom2 P100 +99.2 %.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _prediction_error as _impl

ITEM = Item(
    paper="CM-DARE",
    number="SIGMETRICS-draft figure 5 (sigmetrics_figure5_comb.csv)",
    title="Per-model prediction error (sigmetrics_figure5_comb.csv)",
    upstream="sigmetrics_figure5_comb.csv (no notebook reads it)",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/sigmetrics_figure5_comb.csv",),
    procedure=("Bars of the mean signed % error of the single-feature Model/GPU linear regression per (GPU, "
               "model), from the CSV itself."),
    status="EXACT (as data); not regenerable from code",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="prediction_error",
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.prediction_error_data``)."""
    return _impl.prediction_error_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.prediction_error(data=data, ax=ax)
