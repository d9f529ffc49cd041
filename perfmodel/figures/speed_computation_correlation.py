"""CM-DARE ``speed_computation_correlation.pdf``: step time vs normalized computation (model FLOPs / GPU TFLOPS, min-max over
both GPUs), K80 and P100 pooled. Source: ``0latency_norm_computation.csv`` (520 rows), sp2 cells 33–34 (CATALOG.md §1.1)."""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.figures._style import plot_scatter

__all__ = ["speed_computation_correlation_data", "speed_computation_correlation"]


def speed_computation_correlation_data() -> pd.DataFrame:
    """520 rows: ``gpu``, ``model``, ``normalized_computation``, ``step_time_s``."""
    return ds.load_speed_file("norm_computation")[["gpu", "model", "normalized_computation", "step_time_s"]]


def speed_computation_correlation(data: pd.DataFrame | None = None):
    import matplotlib.pyplot as plt

    data = speed_computation_correlation_data() if data is None else data
    fig, ax = plt.subplots(figsize=(2, 2))
    plot_scatter(data, x="normalized_computation", y="step_time_s", hue="gpu", ax=ax)
    ax.set(xlabel="Normalized computation", ylabel="Step Time (s)")
    fig.tight_layout()
    return fig
