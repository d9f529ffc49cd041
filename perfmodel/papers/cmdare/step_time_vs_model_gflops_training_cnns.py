"""Step time vs normalized model GFLOPs, the 16 training CNNs.

The upstream file name ``figure_4`` is the SIGMETRICS draft's numbering, not the ICDCS'20 figure number. The four
held-out CNNs (the unseen-model test of the speed prediction) are not in this file.

Paper: CM-DARE, figure_4.pdf (SIGMETRICS-draft numbering). Upstream: figure_4.pdf (sp2 cell 6).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/speed_data/0latency_data.csv

Procedure
---------
Scatter of Step Time (s) against Normalized Model of 416 rows = 16 CNNs x 2 GPUs x 13 samples (shuffled rs=0 upstream, order
only).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _speed_training_cnns as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "figure_4.pdf (SIGMETRICS-draft numbering)"
#: title
TITLE = "Step time vs normalized model GFLOPs, the 16 training CNNs"
#: the upstream file / notebook cell it redraws
UPSTREAM = "figure_4.pdf (sp2 cell 6)"
#: upstream data files
SOURCES = ("cake-lab/CM-DARE: data/processed_data/speed_data/0latency_data.csv",)
#: procedure
PROCEDURE = "Scatter of Step Time (s) against Normalized Model of 416 rows = 16 CNNs x 2 GPUs x 13 samples (shuffled rs=0 upstream, order only)."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA"
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
LEGACY_ID = "figure_4"
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
    """The tidy frame the figure draws (``perfmodel.figures.figure_4_data``)."""
    return _impl.figure_4_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.figure_4(data=data, ax=ax)
