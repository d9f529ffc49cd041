"""TensorFlow cold vs warm start.

A per-model version (cell 17, not saved) gives cold/warm 75.6/14.79 s (ResNet-15) to 90.83/30.56 s (Shake-Shake big).

Paper: CM-DARE, not numbered in the upstream sources. Upstream: tf_restart.pdf (redraws cell 16).

Sources
-------
* redraws cell 16 inline scalars (transcribed)

Procedure
---------
Two bars: cold start 55.084635 s (yerr 3.44), warm start 11.872541 s (yerr 2.24).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers import _transient as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "not numbered in the upstream sources"
#: title
TITLE = "TensorFlow cold vs warm start"
#: the upstream file / notebook cell it redraws
UPSTREAM = "tf_restart.pdf (redraws cell 16)"
#: upstream data files
SOURCES = ("redraws cell 16 inline scalars (transcribed)",)
#: procedure
PROCEDURE = "Two bars: cold start 55.084635 s (yerr 3.44), warm start 11.872541 s (yerr 2.24)."
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
LEGACY_ID = "tf_restart"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/09-restart-startup.ipynb"
#: test checking it
TEST = "tests/papers/test_transient_overheads.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.tf_restart_data``)."""
    return _impl.tf_restart_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.tf_restart(data=data, ax=ax)
