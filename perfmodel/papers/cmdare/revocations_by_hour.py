"""Revocations per hour since VM start and per hour of day, K80/P100/V100.

Totals K80 72 revocations (33 in hour 0), P100 65, V100 69; hour-of-day peaks K80 hour 10, P100 and V100 hour 13. The time zone
of the hour of day is not stated upstream.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: {k80,p100,v100}_hour_after_starting.pdf (redraws cells 20-22), {k80,p100,v100}_hour_of_day.pdf (redraws cells 24-26).

Sources
-------
* redraws cells 20-26 inline arrays (transcribed)

Procedure
---------
Bars of the inline counts: 24 bins of hours since start (ylim 0-40), 25 bins of hour of day (index 24 a padding 0; ylim 0-20).
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
TITLE = "Revocations per hour since VM start and per hour of day, K80/P100/V100"
#: the upstream file / notebook cell it redraws
UPSTREAM = "{k80,p100,v100}_hour_after_starting.pdf (redraws cells 20-22), {k80,p100,v100}_hour_of_day.pdf (redraws cells 24-26)"
#: upstream data files
SOURCES = ("redraws cells 20-26 inline arrays (transcribed)",)
#: procedure
PROCEDURE = "Bars of the inline counts: 24 bins of hours since start (ylim 0-40), 25 bins of hour of day (index 24 a padding 0; ylim 0-20)."
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
LEGACY_ID = "revocations_by_hour"
#: keyword arguments of each figure the runner draws
VARIANTS = (
    {"gpu": "K80", "basis": "hours_since_start"},
    {"gpu": "P100", "basis": "hours_since_start"},
    {"gpu": "V100", "basis": "hours_since_start"},
    {"gpu": "K80", "basis": "hour_of_day"},
    {"gpu": "P100", "basis": "hour_of_day"},
    {"gpu": "V100", "basis": "hour_of_day"},
)
#: notebook showing it
NOTEBOOK = "notebooks/09-restart-startup.ipynb"
#: test checking it
TEST = "tests/papers/test_transient_overheads.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data(gpu="K80", basis="hours_since_start") -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.revocations_by_hour_data``)."""
    return _impl.revocations_by_hour_data(gpu=gpu, basis=basis)


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, gpu="K80", basis="hours_since_start"):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.revocations_by_hour(gpu=gpu, basis=basis, data=data, ax=ax)
