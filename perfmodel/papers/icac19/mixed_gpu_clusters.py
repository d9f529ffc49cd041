"""Mixed-GPU clusters normalized to homogeneous ones; headline numbers of Figs. 6-8.

The upstream ``training/README.md`` swaps the numbers (cross-region "fig.7", mixed GPU "fig.8"); in the camera-ready, Fig. 7 is mixed
GPU and Fig. 8 cross region. Headlines: "up to 50 % speedup", "17 % more cost" for (1,1,2), "28 % slowdown", "26 % cost reduction" for
(2,1,1) vs (0,0,4). Its numbers() computes the whole ``icac_clusters`` area (Figs. 6-8).
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers._item import Item
from perfmodel.papers.icac19 import _clusters as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 7a/7b/7c",
    title="Mixed-GPU clusters normalized to homogeneous ones; headline numbers of Figs. 6-8",
    upstream="hetero_time.pdf, hetero_cost.pdf, hetero_acc.pdf",
    sources=(("cake-lab/transient-deep-learning: "
              "data/training/experiment_mixed_gpu/{1v1p2k,1v2p1k,2v1p1k}/agg_data.csv"),
             "cake-lab/transient-deep-learning: data/training/k80_spot/4-spot/",
             "cake-lab/transient-deep-learning: data/training/p100_v100_spot/{4p100,4v100}/"),
    procedure=("(N_K80, N_P100, N_V100) = (2,1,1), (1,2,1), (1,1,2) normalized to the homogeneous (4,0,0) r=0, "
               "(0,4,0), (0,0,4) clusters: time, cost and accuracy in %."),
    status="EXACT-DATA",
    numbers_area="icac_clusters",
    legacy_id="icac_fig7",
    notebook="notebooks/04-icac-clusters.ipynb",
    test="tests/papers/test_icac_cluster_figures.py",
    authors_image="TDL:img/hetero_cost.png",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


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
