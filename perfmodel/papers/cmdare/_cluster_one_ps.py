"""CM-DARE ``figure_5.pdf`` (SIGMETRICS-draft numbering; save commented out upstream): steps/s vs number of K80 and
P100 workers with one parameter server, 4 CNNs (redraws cells 2–3)."""
from __future__ import annotations

from perfmodel.plotting import subplots

from perfmodel.papers.cmdare._cluster_common import ORDER, cluster_series, plot_speed_vs_workers

__all__ = ["figure_5_data", "figure_5"]


def figure_5_data(source: str = "reported"):
    """64 rows: K80 and P100, 1 PS, four CNNs × 1–8 workers."""
    d = cluster_series(source)
    d = d[d["n_ps"] == 1].assign(order=lambda x: x["model"].map(ORDER.index))
    return d.sort_values(["gpu", "order", "n_workers"]).drop(columns="order").reset_index(drop=True)


def figure_5(source: str = "reported", *, data=None, ax=None):
    """Two panels: K80 | P100."""
    import matplotlib.pyplot as plt

    d = figure_5_data(source) if data is None else data
    fig, axes, own = subplots(ax, 1, 2, figsize=(6.6, 1.8))
    for ax, gpu in zip(axes, ("K80", "P100")):
        plot_speed_vs_workers(d[d["gpu"] == gpu], ax=ax, errorbars=True)
        ax.set_xlabel(f"Number of {gpu} workers")
    if own:
        fig.tight_layout()
    return fig
