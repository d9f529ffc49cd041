"""K80 speed vs workers, ResNets / Shake-Shakes (ps_bot_k80_1..2).

K80 clusters scale near linearly: "speed(n) = n * speed(1)" has a MAPE over n = 2..8 of 4.34 %, 0.32 %, 1.02 %, 3.93 %.

Paper: CM-DARE, not numbered in the upstream sources. Upstream: ps_bot_k80_{1,2}.pdf (redraws cells 5-6, save commented out).

Sources
-------
* redraws cell 1 inline arrays (transcribed)

Procedure
---------
K80 steps/s vs 1-8 workers with 1 PS: k = 1 the ResNets, k = 2 the Shake-Shakes; 2x2 in.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _ps_bottleneck as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "not numbered in the upstream sources"
#: title
TITLE = "K80 speed vs workers, ResNets / Shake-Shakes (ps_bot_k80_1..2)"
#: the upstream file / notebook cell it redraws
UPSTREAM = "ps_bot_k80_{1,2}.pdf (redraws cells 5-6, save commented out)"
#: upstream data files
SOURCES = ("redraws cell 1 inline arrays (transcribed)",)
#: procedure
PROCEDURE = "K80 steps/s vs 1-8 workers with 1 PS: k = 1 the ResNets, k = 2 the Shake-Shakes; 2x2 in."
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
LEGACY_ID = "ps_bot_k80"
#: keyword arguments of each figure the runner draws
VARIANTS = ({"k": 1}, {"k": 2})
#: notebook showing it
NOTEBOOK = "notebooks/03-cluster-speed.ipynb"
#: test checking it
TEST = "tests/papers/test_cluster_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data(k=1) -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.ps_bot_k80_data``)."""
    return _impl.ps_bot_k80_data(k=k)


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, k=1):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.ps_bot_k80(k=k, data=data, ax=ax)
