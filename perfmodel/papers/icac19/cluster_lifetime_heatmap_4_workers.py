"""Heatmap: worker lifetime / cluster time of the 32 clusters of 4 transient K80.

13 of 128 servers were revoked in 11 of the 32 clusters (12 worker revocations and 1 master). The per-cluster annotations of the
paper (accuracy / time / cost) charge the PS at the transient price (0.041 $/h), like Table I. Its numbers are the Fig. 1 rows of the
``icac_tables`` area, computed by ``cost_and_savings_tables``.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.icac19 import _cost_tables as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 1",
    title="Heatmap: worker lifetime / cluster time of the 32 clusters of 4 transient K80",
    upstream="cluster_4_spots_heatmap.pdf (training/code/heatmap.py)",
    sources=("cake-lab/transient-deep-learning: data/training/k80_spot/4-spot/vm_data.csv",
             "cake-lab/transient-deep-learning: data/training/k80_spot/4-spot/train_data_processed.csv"),
    procedure=("Authors' heatmap.py: a server marked revoked gets its VM uptime / the master's VM uptime (not "
               "capped), every other server 1; servers sorted by it (W1 lightest); clusters numbered failed "
               "first, then by revoked workers (descending), ties in vm_data.csv order; the r=0 clusters share "
               "one column; accuracy / time / cost rows below (transient PS; a revoked worker billed by its whole "
               "uptime, as the authors' cost code), the r=0 column as (mean, std) over its clusters without a "
               "revoked server."),
    status="EXACT-DATA (group means verified)",
    numbers_from="cost_and_savings_tables",
    legacy_id="icac_fig1",
    variants=({"n_workers": 4},),
    notebook="notebooks/08-icac-tables.ipynb",
    test="tests/papers/test_icac_cost_tables.py",
    authors_image="TDL:img/cluster_4_spots_heatmap.png",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data(n_workers=4) -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.icac_heatmap_data``)."""
    return _impl.icac_heatmap_data(n_workers=n_workers)


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``cost_and_savings_tables`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None, *, n_workers=4):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.icac_heatmap(n_workers=n_workers, data=data, ax=ax)
