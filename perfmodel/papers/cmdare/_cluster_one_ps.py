"""CM-DARE ``figure_5.pdf`` (SIGMETRICS-draft numbering; save commented out upstream): steps/s vs number of K80 and
P100 workers with one parameter server, 4 CNNs (redraws cells 2–3)."""
from __future__ import annotations

from perfmodel.plotting import figure_size, paper_figure, subplots

from perfmodel.papers.cmdare._cluster_common import ORDER, cluster_series, plot_speed_vs_workers

__all__ = ["figure_5_data", "figure_5"]


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
