"""Heatmaps of the clusters of 2 and 8 transient K80.

2-spot/8-spot VM names carry a ``spot2-``/``spot8-`` prefix that the ``agg_data.csv`` Zone lacks; the loader matches them.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.icac19 import _cost_tables as _impl

ITEM = Item(
    paper="ICAC'19",
    number="Fig. 4",
    title="Heatmaps of the clusters of 2 and 8 transient K80",
    upstream="cluster_2_8_spots_heatmap.pdf (training/code/heatmap.py)",
    sources=("cake-lab/transient-deep-learning: data/training/k80_spot/2-spot/",
             "cake-lab/transient-deep-learning: data/training/k80_spot/8-spot/"),
    procedure=("Authors' heatmap.py: a server marked revoked gets its VM uptime / the master's VM uptime (not "
               "capped), every other server 1; servers sorted by it (W1 lightest); clusters numbered failed "
               "first, then by revoked workers (descending), ties in vm_data.csv order; the r=0 clusters share "
               "one column; accuracy / time / cost rows below (transient PS; a revoked worker billed by its whole "
               "uptime, as the authors' cost code), the r=0 column as (mean, std) over its clusters without a "
               "revoked server. Two panels: 2 K80 left, 8 K80 right."),
    status="EXACT-DATA (group means verified)",
    tolerance="no quoted numbers",
    numbers_from="cost_and_savings_tables",
    legacy_id="icac_fig4",
    notebook="notebooks/08-icac-tables.ipynb",
    test="tests/papers/test_icac_cost_tables.py",
    authors_image="TDL:img/cluster_8_spots_heatmap.png",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws: :func:`perfmodel.figures.icac_heatmap_data` for 2 and for 8 workers, with an
    ``n_workers`` column."""
    return pd.concat([_impl.icac_heatmap_data(n_workers=n).assign(n_workers=n) for n in (2, 8)], ignore_index=True)


def numbers() -> pd.DataFrame:
    """This item's rows of the comparison table that ``cost_and_savings_tables`` computes (``COMPARISON_COLUMNS``)."""
    return _item.numbers_from(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as the paper prints it: the 2-K80 panel left, the 8-K80 panel right (``ax``: two Axes)."""
    return _impl.icac_heatmaps_2_8(data=data, ax=ax)
