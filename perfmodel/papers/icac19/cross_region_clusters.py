"""Cross-region clusters normalized to single-region ones.

Durations from ``train_data_processed.csv``: wall time at the first row with Step >= 64000 minus the wall time of the (last)
Step-0 row. Headline: cross-region training is "up to 48 %" slower.

Paper: ICAC'19, Fig. 8a/8b. Upstream: cross_region_k80.pdf, cross_region_p100.pdf.

Sources
-------
* cake-lab/transient-deep-learning: data/training/experiment_cross_region/{3e1c,2e2c,2e1c1w}[-p100]/train_data_processed.csv

Procedure
---------
(N_east, N_central, N_west) = (3,1), (2,2), (2,1,1): time and accuracy normalized to the single-region 4-worker cluster (4-spot
r=0: 0.97581 h, 91.058 %; 4p100: 0.4704 h, 91.35 %).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.icac19 import _clusters as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "ICAC'19"
#: figure/table number as the paper prints it
NUMBER = "Fig. 8a/8b"
#: title
TITLE = "Cross-region clusters normalized to single-region ones"
#: the upstream file / notebook cell it redraws
UPSTREAM = "cross_region_k80.pdf, cross_region_p100.pdf"
#: upstream data files
SOURCES = (
    "cake-lab/transient-deep-learning: data/training/experiment_cross_region/{3e1c,2e2c,2e1c1w}[-p100]/train_data_processed.csv",
)
#: procedure
PROCEDURE = "(N_east, N_central, N_west) = (3,1), (2,2), (2,1,1): time and accuracy normalized to the single-region 4-worker cluster (4-spot r=0: 0.97581 h, 91.058 %; 4p100: 0.4704 h, 91.35 %)."
#: tolerance rule of its numbers
TOLERANCE = "EXACT numbers within 1e-6 relative (or the printed rounding as atol); APPROX numbers within the rule of their row in datasets/reference/paper_numbers"
#: reproduction status of the data behind it
STATUS = "EXACT-DATA"
#: non-empty: why the item cannot be reproduced at all
UNAVAILABLE = ""
#: non-empty: why figure() draws nothing
NO_FIGURE = ""
#: non-empty: why numbers() is empty
NO_NUMBERS = ""
#: datasets/reference/paper_numbers area its numbers() compares (the whole area)
NUMBERS_AREA = ""
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = "mixed_gpu_clusters"
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "icac_fig8"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/04-icac-clusters.ipynb"
#: test checking it
TEST = "tests/papers/test_icac_cluster_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = ""

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig8_data``)."""
    return _impl.icac_fig8_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``mixed_gpu_clusters`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig8(data=data, ax=ax)
