"""Mixed-GPU clusters normalized to homogeneous ones; headline numbers of Figs. 6-8.

The upstream ``training/README.md`` swaps the numbers (cross-region "fig.7", mixed GPU "fig.8"); in the camera-ready, Fig. 7 is mixed
GPU and Fig. 8 cross region. Headlines: "up to 50 % speedup", "17 % more cost" for (1,1,2), "28 % slowdown", "26 % cost reduction" for
(2,1,1) vs (0,0,4). Its numbers() computes the whole ``icac_clusters`` area (Figs. 6-8).

Paper: ICAC'19, Fig. 7a/7b/7c. Upstream: hetero_time.pdf, hetero_cost.pdf, hetero_acc.pdf.

Sources
-------
* cake-lab/transient-deep-learning: data/training/experiment_mixed_gpu/{1v1p2k,1v2p1k,2v1p1k}/agg_data.csv
* cake-lab/transient-deep-learning: data/training/k80_spot/4-spot/
* cake-lab/transient-deep-learning: data/training/p100_v100_spot/{4p100,4v100}/

Procedure
---------
(N_K80, N_P100, N_V100) = (2,1,1), (1,2,1), (1,1,2) normalized to the homogeneous (4,0,0) r=0, (0,4,0), (0,0,4) clusters: time,
cost and accuracy in %.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers.icac19 import _clusters as _impl

#: paper the item belongs to ("perfmodel": beyond the papers)
PAPER = "ICAC'19"
#: figure/table number as the paper prints it
NUMBER = "Fig. 7a/7b/7c"
#: title
TITLE = "Mixed-GPU clusters normalized to homogeneous ones; headline numbers of Figs. 6-8"
#: the upstream file / notebook cell it redraws
UPSTREAM = "hetero_time.pdf, hetero_cost.pdf, hetero_acc.pdf"
#: upstream data files
SOURCES = (
    "cake-lab/transient-deep-learning: data/training/experiment_mixed_gpu/{1v1p2k,1v2p1k,2v1p1k}/agg_data.csv",
    "cake-lab/transient-deep-learning: data/training/k80_spot/4-spot/",
    "cake-lab/transient-deep-learning: data/training/p100_v100_spot/{4p100,4v100}/",
)
#: procedure
PROCEDURE = "(N_K80, N_P100, N_V100) = (2,1,1), (1,2,1), (1,1,2) normalized to the homogeneous (4,0,0) r=0, (0,4,0), (0,0,4) clusters: time, cost and accuracy in %."
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
NUMBERS_AREA = "icac_clusters"
#: item whose numbers() computes this item's numbers
NUMBERS_FROM = ""
#: the id before the papers were packages (still accepted by --only)
LEGACY_ID = "icac_fig7"
#: keyword arguments of each figure the runner draws
VARIANTS = ({},)
#: notebook showing it
NOTEBOOK = "notebooks/04-icac-clusters.ipynb"
#: test checking it
TEST = "tests/papers/test_icac_cluster_figures.py"
#: the authors' own image of the figure (a registry key of kind "image"; the report shows it beside ours), "" when none
AUTHORS_IMAGE = "TDL:img/hetero_cost.png"

__all__ = ["data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig7_data``)."""
    return _impl.icac_fig7_data()


def numbers() -> pd.DataFrame:
    """Paper value next to reproduced value (``COMPARISON_COLUMNS``) for the whole ``icac_clusters`` area (rows of other items name them in ``item``)."""
    return _impl.icac_cluster_numbers_data()


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig7(data=data, ax=ax)
