"""Chief rejoining: training time and final accuracy of the raw runs.

Final accuracies of the files: base 81.72, base-1 81.67, 5500 81.76, 6000 79.48, 6500-1 77.89, 6500-2 79.07, 7000-2 78.59,
7500 78.15, 7500-1 82.73 %; the notebook's inline [79.89, 80.07] (6.5k) and 81.395 (7k) match no file.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: S2020 cells 13-16 (not saved).

Sources
-------
* cake-lab/CM-DARE: data/processed_data/chief_rejoining/*.csv

Procedure
---------
Total training time (last - first wall time, 24k steps, checkpoint every 4k steps) and final accuracy of each raw run.
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
TITLE = "Chief rejoining: training time and final accuracy of the raw runs"
#: the upstream file / notebook cell it redraws
UPSTREAM = "S2020 cells 13-16 (not saved)"
#: upstream data files
SOURCES = ("cake-lab/CM-DARE: data/processed_data/chief_rejoining/*.csv",)
#: procedure
PROCEDURE = "Total training time (last - first wall time, 24k steps, checkpoint every 4k steps) and final accuracy of each raw run."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA (raw files) / INLINE"
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
LEGACY_ID = "chief_rejoining"
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
    """The tidy frame the figure draws (``perfmodel.figures.chief_rejoining_data``)."""
    return _impl.chief_rejoining_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``vm_startup_breakdown`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.chief_rejoining(data=data, ax=ax)
