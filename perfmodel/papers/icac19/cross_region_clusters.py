"""Cross-region clusters normalized to single-region ones.

Durations from ``train_data_processed.csv``: wall time at the first row with Step >= 64000 minus the wall time of the (last)
Step-0 row. Headline: cross-region training is "up to 48 %" slower.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.icac19 import _clusters as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 8a/8b",
    title="Cross-region clusters normalized to single-region ones",
    upstream="cross_region_k80.pdf, cross_region_p100.pdf",
    sources=(("cake-lab/transient-deep-learning: "
              "data/training/experiment_cross_region/{3e1c,2e2c,2e1c1w}[-p100]/train_data_processed.csv"),),
    procedure=("(N_east, N_central, N_west) = (3,1), (2,2), (2,1,1): time and accuracy normalized to the "
               "single-region 4-worker cluster (4-spot r=0: 0.97581 h, 91.058 %; 4p100: 0.4704 h, 91.35 %)."),
    status="EXACT-DATA",
    numbers_from="mixed_gpu_clusters",
    legacy_id="icac_fig8",
    notebook="notebooks/04-icac-clusters.ipynb",
    test="tests/papers/test_icac_cluster_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


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
