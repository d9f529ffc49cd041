"""CM-DARE ``figure_4.pdf`` (SIGMETRICS-draft numbering): step time vs normalized model GFLOPs of the 16 training CNNs,
K80 and P100. Source: ``0latency_data.csv`` (416 rows), sp2 cell 6."""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.plotting import scatter_figure

__all__ = ["figure_4_data", "figure_4"]


def figure_4_data() -> pd.DataFrame:
    """416 rows: ``gpu``, ``model``, ``normalized_model``, ``step_time_s``."""
    return ds.load_speed_file("data")[["gpu", "model", "normalized_model", "step_time_s"]]


def figure_4(data: pd.DataFrame | None = None, *, ax=None):
    """The figure (2×2 in; K80 'x', P100 '^', alpha 0.1, as the notebook)."""
    return scatter_figure(figure_4_data() if data is None else data, x="normalized_model", y="step_time_s", xlabel="Normalized Model GFLOPs", ax=ax)
