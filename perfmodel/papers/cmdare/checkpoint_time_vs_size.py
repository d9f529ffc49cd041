"""Checkpoint time vs checkpoint size, bubble = CV.

Quirk: in ``aggregated.csv`` "Duration mean (s)" is the mean of Diff (= Duration - Local duration, the upload part), not of the
total Duration (ResNet-15 3.56 s = mean Diff; the total 3.79 s is in ``ckpt.csv``); CV = std(Diff)/mean(Diff).

Paper: CM-DARE, not numbered in the upstream sources. Upstream: ckpt_duration_size_correlation.pdf (ckpt cell 39).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/checkpoint/aggregated.csv

Procedure
---------
Scatter x = Checkpoint Size (MB), y = Duration mean (s), marker area = coefficient of variation x 800, ylim 0-8 (20 rows).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _checkpoint as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "not numbered in the upstream sources"
#: title
TITLE = "Checkpoint time vs checkpoint size, bubble = CV"
#: the upstream file / notebook cell it redraws
UPSTREAM = "ckpt_duration_size_correlation.pdf (ckpt cell 39)"
#: upstream data files
SOURCES = ("cake-lab/CM-DARE: data/processed_data/checkpoint/aggregated.csv",)
#: procedure
PROCEDURE = "Scatter x = Checkpoint Size (MB), y = Duration mean (s), marker area = coefficient of variation x 800, ylim 0-8 (20 rows)."
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
LEGACY_ID = "ckpt_duration_size_correlation"
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
    """The tidy frame the figure draws (``perfmodel.figures.ckpt_duration_size_correlation_data``)."""
    return _impl.ckpt_duration_size_correlation_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.ckpt_duration_size_correlation(data=data, ax=ax)
