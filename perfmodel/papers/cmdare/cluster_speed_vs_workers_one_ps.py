"""Steps/s vs #K80 and #P100 workers, 1 PS.

The upstream file name ``figure_5`` is the SIGMETRICS draft's numbering. The plotted means are the authors' inline arrays; the
numbers recomputed from the raw runs are checked by ``cluster_speed_vs_p100_workers``.
"""

from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare import _cluster_one_ps as _impl

ITEM = Item(
    paper="CM-DARE",
    number="figure_5.pdf (SIGMETRICS-draft numbering)",
    title="Steps/s vs #K80 and #P100 workers, 1 PS",
    upstream="figure_5.pdf (redraws cells 2-3, save commented out)",
    sources=("redraws cell 1 inline *k80, *p100 arrays (transcribed)",
             "cake-lab/CM-DARE: data/processed_data/speed_and_cluster_size/{k80,p100}/"),
    procedure=("Two panels (K80 | P100), steps/s of the four CNNs vs 1-8 workers with one parameter server, error "
               "bars = the inline std arrays."),
    status="INLINE / APPROX-DATA",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="figure_5",
    notebook="notebooks/03-cluster-speed.ipynb",
    test="tests/papers/test_cluster_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.figure_5_data``)."""
    return _impl.figure_5_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return _impl.figure_5(data=data, ax=ax)
