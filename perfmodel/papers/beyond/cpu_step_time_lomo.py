"""CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out.

The figure refits on the measurements, so it takes no ``data`` frame (``perfmodel.figures.cpu_lomo(steps=...)`` takes other
measurements).

Paper: perfmodel, perfmodel (beyond CM-DARE prediction models). Upstream: -.

Sources
-------
* datasets/measurements (perfmodel's own CPU step times)

Procedure
---------
Leave-one-model-out evaluation of CM-DARE's step-time regressors on perfmodel's CPU measurements, per feature set.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _cpu_measurements as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "perfmodel (beyond CM-DARE prediction models)"
#: title
TITLE = "CM-DARE's step-time regressions on perfmodel's own CPU measurements, leave-one-model-out"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ("datasets/measurements (perfmodel's own CPU step times)",)
#: procedure
PROCEDURE = "Leave-one-model-out evaluation of CM-DARE's step-time regressors on perfmodel's CPU measurements, per feature set."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "perfmodel analysis"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = "perfmodel's own analysis; the paper quotes no number for it beyond the data checked in its test."
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "cpu_lomo"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/10-cpu-measurements.ipynb"
#: test checking it
TEST = "tests/papers/test_cpu_measurements.py"

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.cpu_lomo_data``)."""
    return _impl.cpu_lomo_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.cpu_lomo(ax=ax)
