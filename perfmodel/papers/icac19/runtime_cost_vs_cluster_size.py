"""Normalized runtime and cost vs cluster size, 1 vs 2 PS, K80 and V100.

1-PS K80 durations 1.9337, 1.3140, 0.9621, 0.7607, 0.6439, 0.5431, 0.4927 h for N = 2..8. Its headline numbers are rows of the
``icac_clusters`` area, computed by ``mixed_gpu_clusters``.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.icac19 import _clusters as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 6a/6b",
    title="Normalized runtime and cost vs cluster size, 1 vs 2 PS, K80 and V100",
    upstream="1ps_2ps_time.pdf, 1ps_2ps_cost.pdf",
    sources=(("cake-lab/transient-deep-learning: data/training/experiment_1ps_vs_2ps/{1ps_k80/N_data.csv, 2psNk, "
              "1psNv, 2psNv}/"),),
    procedure=("Runtime and cost of clusters of 2-8 workers (K80 or V100, 1 or 2 PS) in % of the single-K80 "
               "training (the caption): the mean time and recorded cost of the 10 single-K80 on-demand runs. The "
               "paper's drawn points imply a 1.5 % lower baseline (3.854 h, $2.786)."),
    status="EXACT-DATA (time) / APPROX (cost baseline)",
    numbers_from="mixed_gpu_clusters",
    legacy_id="icac_fig6",
    notebook="notebooks/04-icac-clusters.ipynb",
    test="tests/papers/test_icac_cluster_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_fig6_data``)."""
    return _impl.icac_fig6_data()


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``mixed_gpu_clusters`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_fig6(data=data, ax=ax)
