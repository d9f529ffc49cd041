"""Steps/s vs #K80 and #P100 workers, 1 PS.

The upstream file name ``figure_5`` is the SIGMETRICS draft's numbering. The plotted means are the authors' inline arrays; the
numbers recomputed from the raw runs are checked by ``cluster_speed_vs_p100_workers``.

Paper: CM-DARE, figure_5.pdf (SIGMETRICS-draft numbering). Upstream: figure_5.pdf (redraws cells 2-3, save commented out).

Sources
-------
* redraws cell 1 inline *k80, *p100 arrays (transcribed)
* cake-lab/CM-DARE: data/processed_data/speed_and_cluster_size/{k80,p100}/

Procedure
---------
Two panels (K80 | P100), steps/s of the four CNNs vs 1-8 workers with one parameter server, error bars = the inline std arrays.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.cmdare import _cluster_one_ps as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "CM-DARE"
#: figure/table number as the paper prints it
NUMBER = "figure_5.pdf (SIGMETRICS-draft numbering)"
#: title
TITLE = "Steps/s vs #K80 and #P100 workers, 1 PS"
#: the upstream file / notebook cell it redraws
UPSTREAM = "figure_5.pdf (redraws cells 2-3, save commented out)"
#: upstream data files
SOURCES = (
    "redraws cell 1 inline *k80, *p100 arrays (transcribed)",
    "cake-lab/CM-DARE: data/processed_data/speed_and_cluster_size/{k80,p100}/",
)
#: procedure
PROCEDURE = "Two panels (K80 | P100), steps/s of the four CNNs vs 1-8 workers with one parameter server, error bars = the inline std arrays."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "INLINE / APPROX-DATA"
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
LEGACY_ID = "figure_5"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/03-cluster-speed.ipynb"
#: test checking it
TEST = "tests/papers/test_cluster_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.figure_5_data``)."""
    return _impl.figure_5_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.figure_5(data=data, ax=ax)
