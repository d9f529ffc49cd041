"""CM-DARE ``cluster_size_training_speed.pdf``: steps/s vs number of P100 workers (1–8) with 2 parameter servers, 4 CNNs
(redraws cell 4; CATALOG.md §1.3)."""
from __future__ import annotations

from perfmodel.figures._cluster_common import ORDER, cluster_series, plot_speed_vs_workers

__all__ = ["cluster_size_training_speed_data", "cluster_size_training_speed"]


def cluster_size_training_speed_data(source: str = "reported"):
    """32 rows: the four ``*p100ps2`` series (``source='reported'``) or their recomputation from the runs (``'data'``)."""
    d = cluster_series(source)
    d = d[(d["gpu"] == "P100") & (d["n_ps"] == 2)]
    return d.set_index("model").loc[ORDER].reset_index()


def cluster_size_training_speed(source: str = "reported"):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(3.3, 1.5))
    plot_speed_vs_workers(cluster_size_training_speed_data(source), ax=ax, errorbars=False)
    ax.set_xlabel("Number of P100 workers")
    fig.tight_layout()
    return fig
