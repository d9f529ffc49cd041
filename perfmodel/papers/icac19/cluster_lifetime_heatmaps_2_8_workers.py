"""Heatmaps of the clusters of 2 and 8 transient K80.

2-spot/8-spot VM names carry a ``spot2-``/``spot8-`` prefix that the ``agg_data.csv`` Zone lacks; the loader matches them.

Paper: ICAC'19, Fig. 4. Upstream: cluster_2_8_spots_heatmap.pdf (training/code/heatmap.py).

Sources
-------
* cake-lab/transient-deep-learning: data/training/k80_spot/2-spot/
* cake-lab/transient-deep-learning: data/training/k80_spot/8-spot/

Procedure
---------
As Fig. 1, for the clusters of 2 and of 8 K80 workers (two figures).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.icac19 import _cost_tables as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "ICAC'19"
#: figure/table number as the paper prints it
NUMBER = "Fig. 4"
#: title
TITLE = "Heatmaps of the clusters of 2 and 8 transient K80"
#: the upstream file / notebook cell it redraws
UPSTREAM = "cluster_2_8_spots_heatmap.pdf (training/code/heatmap.py)"
#: upstream data files
SOURCES = (
    "cake-lab/transient-deep-learning: data/training/k80_spot/2-spot/",
    "cake-lab/transient-deep-learning: data/training/k80_spot/8-spot/",
)
#: procedure
PROCEDURE = "As Fig. 1, for the clusters of 2 and of 8 K80 workers (two figures)."
#: tolerance rule of its numbers
TOLERANCE = "no quoted numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA (group means verified)"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = "Its annotations' group means are checked in its test; the papers' quoted numbers for these clusters are in Tables III-V (cost_and_savings_tables)."
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "icac_fig4"
#: keyword arguments of each figure the runner draws
VARIANTS = ({"n_workers": 2}, {"n_workers": 8})
#: notebook showing it
NOTEBOOK = "notebooks/08-icac-tables.ipynb"
#: test checking it
TEST = "tests/papers/test_icac_cost_tables.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = "TDL:img/cluster_8_spots_heatmap.png"

__all__ = ["data", "numbers", "figure"]


def data(n_workers=2) -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_heatmap_data``)."""
    return _impl.icac_heatmap_data(n_workers=n_workers)


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``NO_NUMBERS``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, n_workers=2):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_heatmap(n_workers=n_workers, data=data, ax=ax)
