"""CM-DARE ``figure_4.pdf`` (SIGMETRICS-draft numbering): step time vs normalized model GFLOPs of the 16 training CNNs,
K80 and P100. Source: ``0latency_data.csv`` (416 rows), sp2 cell 6 (CATALOG.md §1.1)."""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.figures._style import plot_scatter

__all__ = ["figure_4_data", "figure_4"]


def figure_4_data() -> pd.DataFrame:
    """416 rows: ``gpu``, ``model``, ``normalized_model``, ``step_time_s``."""
    return ds.load_speed_file("data")[["gpu", "model", "normalized_model", "step_time_s"]]


def figure_4(data: pd.DataFrame | None = None):
    import matplotlib.pyplot as plt

    data = figure_4_data() if data is None else data
    fig, ax = plt.subplots(figsize=(2, 2))
    plot_scatter(data, x="normalized_model", y="step_time_s", hue="gpu", ax=ax)
    ax.set(xlabel="Normalized Model GFLOPs", ylabel="Step Time (s)")
    fig.tight_layout()
    return fig
