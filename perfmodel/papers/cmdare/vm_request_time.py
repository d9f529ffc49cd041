"""Time for a new server request: immediate vs delayed.

Immediate request K80 70.33 s, P100 67.33 s, V100 70.92 s; delayed K80 68.44 s, P100 66.44 s, V100 66.78 s. A cross-region
K80 pair is defined in the notebook but not plotted.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: vm_startup_exp.pdf (S2020 cell 36).

Sources
-------
* S2020 cell 36 inline scalars (transcribed)

Procedure
---------
Bars of the inline means with their std, per GPU (K80, P100, V100), immediate vs delayed request.
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
TITLE = "Time for a new server request: immediate vs delayed"
#: the upstream file / notebook cell it redraws
UPSTREAM = "vm_startup_exp.pdf (S2020 cell 36)"
#: upstream data files
SOURCES = ("S2020 cell 36 inline scalars (transcribed)",)
#: procedure
PROCEDURE = "Bars of the inline means with their std, per GPU (K80, P100, V100), immediate vs delayed request."
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
LEGACY_ID = "vm_startup_exp"
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
    """The tidy frame the figure draws (``perfmodel.figures.vm_startup_exp_data``)."""
    return _impl.vm_startup_exp_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.vm_startup_exp(data=data, ax=ax)
