"""Steps/s vs #K80 and #P100 workers, 1 PS.

The upstream file name ``figure_5`` is the SIGMETRICS draft's numbering. The plotted means are the authors' inline arrays; the
numbers recomputed from the raw runs are checked by ``cluster_speed_vs_p100_workers``.

CM-DARE ``figure_5.pdf`` (SIGMETRICS-draft numbering; save commented out upstream): steps/s vs number of K80 and
P100 workers with one parameter server, 4 CNNs (redraws cells 2–3).
"""
from __future__ import annotations

import pandas as pd

from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.papers.cmdare._cluster_common import (
    ORDER,
    cluster_series,
    plot_speed_vs_workers,
)
from perfmodel.plotting import figure_size, paper_figure, subplots

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


def figure_5_data(source: str = "reported"):
    """64 rows: K80 and P100, 1 PS, four CNNs × 1–8 workers."""
    d = cluster_series(source)
    d = d[d["n_ps"] == 1].assign(order=lambda x: x["model"].map(ORDER.index))
    return d.sort_values(["gpu", "order", "n_workers"]).drop(columns="order").reset_index(drop=True)


@paper_figure
def figure_5(source: str = "reported", *, data=None, ax=None):
    """Two panels across the text width: K80 | P100 (the CNNs' legend above the K80 panel only: both panels share it)."""
    d = figure_5_data(source) if data is None else data
    fig, axes, own = subplots(ax, 1, 2, figsize=figure_size("text", 2.0))
    for ax, gpu in zip(axes, ("K80", "P100")):
        plot_speed_vs_workers(d[d["gpu"] == gpu], ax=ax, errorbars=True)
        ax.set_xlabel(f"Number of {gpu} workers")
    if axes[1].get_legend() is not None:
        axes[1].get_legend().remove()
    if own:
        fig.tight_layout()
    return fig


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.figure_5_data``)."""
    return figure_5_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return figure_5(data=data, ax=ax)
