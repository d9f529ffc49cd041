"""Wall time vs checkpoint interval, Young/Daly optimum vs simulation.

Default job: ResNet-32 on 4 K80 servers, 10 h of work.

Paper: perfmodel, perfmodel (beyond CM-DARE section on checkpoints). Upstream: -.

Sources
-------
* CM-DARE checkpoint data (predicted checkpoint time)
* CM-DARE lifetime CDF arrays

Procedure
---------
Expected wall time of a job vs checkpoint interval, simulated and by the Young/Daly first-order formula, with the optimum marked.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _revocation_overhead as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "perfmodel (beyond CM-DARE section on checkpoints)"
#: title
TITLE = "Wall time vs checkpoint interval, Young/Daly optimum vs simulation"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = ("CM-DARE checkpoint data (predicted checkpoint time)", "CM-DARE lifetime CDF arrays")
#: procedure
PROCEDURE = "Expected wall time of a job vs checkpoint interval, simulated and by the Young/Daly first-order formula, with the optimum marked."
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
LEGACY_ID = "checkpoint_interval"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/07-planner-and-revocations.ipynb"
#: test checking it
TEST = "tests/papers/test_plan_figures.py"

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.checkpoint_interval_data``)."""
    return _impl.checkpoint_interval_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.checkpoint_interval(data=data, ax=ax)
