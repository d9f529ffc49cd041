"""Per-model prediction error (sigmetrics_figure5_comb.csv).

The Step Time columns equal the test rows of the unshuffled ``0latency_data.csv`` split, but re-fitting gives predictions up to
0.0156 s different and error means up to 33.8 points different, so the CSV itself is the data. Largest errors: ResNet-15 P100 +206.4 %,
custom1 P100 +123.8 %, custom2 P100 +99.2 %.

Paper: CM-DARE, SIGMETRICS-draft figure 5 (sigmetrics_figure5_comb.csv). Upstream: sigmetrics_figure5_comb.csv (no notebook reads it).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/speed_data/sigmetrics_figure5_comb.csv

Procedure
---------
Bars of the mean signed % error of the single-feature Model/GPU linear regression per (GPU, model), from the CSV itself.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _prediction_error as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "SIGMETRICS-draft figure 5 (sigmetrics_figure5_comb.csv)"
#: title
TITLE = "Per-model prediction error (sigmetrics_figure5_comb.csv)"
#: the upstream file / notebook cell it redraws
UPSTREAM = "sigmetrics_figure5_comb.csv (no notebook reads it)"
#: upstream data files
SOURCES = ("cake-lab/CM-DARE: data/processed_data/speed_data/sigmetrics_figure5_comb.csv",)
#: procedure
PROCEDURE = "Bars of the mean signed % error of the single-feature Model/GPU linear regression per (GPU, model), from the CSV itself."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "EXACT (as data); not regenerable from code"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = "The papers quote no number for it beyond the data checked in its test."
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "prediction_error"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/02-speed-prediction.ipynb"
#: test checking it
TEST = "tests/papers/test_speed_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.prediction_error_data``)."""
    return _impl.prediction_error_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.prediction_error(data=data, ax=ax)
