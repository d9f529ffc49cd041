"""Estimated vs actual training time of 11 runs with a revocation.

MAPE 0.835 %, MAE 10.09 s, max |error| 22 s. How the authors produced the estimates is not in the notebook;
``perfmodel.planning.estimate_time_after_revocation`` rebuilds them from the cluster model.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: S2020 cells 38-40 (not saved).

Sources
-------
* S2020 cells 38-40 inline arrays (transcribed)

Procedure
---------
Scatter of est_time vs act_time (s) of 11 runs, coloured by the step of the revocation; MAPE, MAE and max |error| of the
estimates.
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
TITLE = "Estimated vs actual training time of 11 runs with a revocation"
#: the upstream file / notebook cell it redraws
UPSTREAM = "S2020 cells 38-40 (not saved)"
#: upstream data files
SOURCES = ("S2020 cells 38-40 inline arrays (transcribed)",)
#: procedure
PROCEDURE = "Scatter of est_time vs act_time (s) of 11 runs, coloured by the step of the revocation; MAPE, MAE and max |error| of the estimates."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "INLINE"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = "vm_startup_breakdown"
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "training_time_estimates"
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
    """The tidy frame the figure draws (``perfmodel.figures.training_time_estimates_data``)."""
    return _impl.training_time_estimates_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.training_time_estimates(data=data, ax=ax)
