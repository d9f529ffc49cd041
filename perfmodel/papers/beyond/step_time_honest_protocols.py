"""Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split.

The figure refits one configuration, so it takes no ``data``.

Paper: perfmodel, perfmodel (beyond CM-DARE prediction models). Upstream: -.

Sources
-------
* cake-lab/CM-DARE: data/processed_data/speed_data/ (speed samples)
* cake-lab/CM-DARE: data/processed_data/speed_data_base/ (V100 samples)

Procedure
---------
The paper's random 80/20 split (which leaks models between train and test) vs leave-one-model-out (K80, P100) and cross-GPU (train
K80+P100, test V100), per feature configuration.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.beyond import _speed_protocols as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "perfmodel"
#: figure/table number as the paper prints it
NUMBER = "perfmodel (beyond CM-DARE prediction models)"
#: title
TITLE = "Step-time prediction under honest protocols (LOMO, cross-GPU) vs the paper's split"
#: the upstream file / notebook cell it redraws
UPSTREAM = "-"
#: upstream data files
SOURCES = (
    "cake-lab/CM-DARE: data/processed_data/speed_data/ (speed samples)",
    "cake-lab/CM-DARE: data/processed_data/speed_data_base/ (V100 samples)",
)
#: procedure
PROCEDURE = "The paper's random 80/20 split (which leaks models between train and test) vs leave-one-model-out (K80, P100) and cross-GPU (train K80+P100, test V100), per feature configuration."
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
LEGACY_ID = "speed_protocols"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/02-speed-prediction.ipynb"
#: test checking it
TEST = "tests/papers/test_speed_protocols.py"

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.speed_protocols_data``)."""
    return _impl.speed_protocols_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (drawn from a fit: ``data`` must be None; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    _item.check_no_data(__name__, data)
    return _impl.speed_protocols(ax=ax)
