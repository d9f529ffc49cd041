"""Expected revocations vs job length: renewal function vs Monte Carlo.

Deterministic: the simulation takes a fixed ``random_state``.

Paper: perfmodel, perfmodel (beyond CM-DARE section on lifetimes). Upstream: -.

Sources
-------
* CM-DARE lifetime CDF arrays

Procedure
---------
Expected number of revocations of n servers over a job of given hours: the renewal function of the fitted lifetime model vs a
seeded Monte Carlo simulation.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _revocation_overhead as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "perfmodel (beyond CM-DARE section on lifetimes)"
#: title
TITLE = "Expected revocations vs job length: renewal function vs Monte Carlo"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ("CM-DARE lifetime CDF arrays",)
#: procedure
PROCEDURE = "Expected number of revocations of n servers over a job of given hours: the renewal function of the fitted lifetime model vs a seeded Monte Carlo simulation."
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
LEGACY_ID = "revocation_expectations"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/07-planner-and-revocations.ipynb"
#: test checking it
TEST = "tests/papers/test_plan_figures.py"

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.revocation_expectations_data``)."""
    return _impl.revocation_expectations_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.revocation_expectations(data=data, ax=ax)
