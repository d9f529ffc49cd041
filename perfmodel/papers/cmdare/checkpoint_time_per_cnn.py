"""Checkpoint duration mean vs size, 20 CNNs.

The first 16 dat3 values equal ``ckpt.csv`` "Duration mean (s)" (3.79 ... 7.66); the last 4 (test CNNs) are 3.43, 4.21, 4.18,
5.65 (the file means of ``unaggregated_test.csv`` are 3.434, 4.196, 4.208, 5.666).

Paper: CM-DARE, figure_12.pdf (SIGMETRICS-draft numbering). Upstream: figure_12.pdf (redraws cell 18).

Sources
-------
* redraws cell 18 inline dat3, dat4 (transcribed)
* cake-lab/CM-DARE: data/processed_data/checkpoint/ckpt.csv

Procedure
---------
Scatter of dat4 (size, MB) vs dat3 (duration mean, s).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _checkpoint as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "figure_12.pdf (SIGMETRICS-draft numbering)"
#: title
TITLE = "Checkpoint duration mean vs size, 20 CNNs"
#: the upstream file / notebook cell it redraws
UPSTREAM = "figure_12.pdf (redraws cell 18)"
#: upstream data files
SOURCES = ("redraws cell 18 inline dat3, dat4 (transcribed)", "cake-lab/CM-DARE: data/processed_data/checkpoint/ckpt.csv")
#: procedure
PROCEDURE = "Scatter of dat4 (size, MB) vs dat3 (duration mean, s)."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "INLINE"
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
LEGACY_ID = "figure_12"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/05-checkpoint-time.ipynb"
#: test checking it
TEST = "tests/papers/test_checkpoint_numbers.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.figure_12_data``)."""
    return _impl.figure_12_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.figure_12(data=data, ax=ax)
