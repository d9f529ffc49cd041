"""CM-DARE ``speed_computation_correlation.pdf``: step time vs normalized computation (model FLOPs / GPU TFLOPS, min-max over
both GPUs), K80 and P100 pooled. Source: ``0latency_norm_computation.csv`` (520 rows), sp2 cells 33–34."""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.plotting import scatter_figure

__all__ = ["speed_computation_correlation_data", "speed_computation_correlation"]


def speed_computation_correlation_data() -> pd.DataFrame:
    """520 rows: ``gpu``, ``model``, ``normalized_computation``, ``step_time_s``."""
    return ds.load_speed_file("norm_computation")[["gpu", "model", "normalized_computation", "step_time_s"]]


def speed_computation_correlation(data: pd.DataFrame | None = None, *, ax=None):
    """The figure (2×2 in; K80 'x', P100 '^', alpha 0.1, as the notebook)."""
    return scatter_figure(speed_computation_correlation_data() if data is None else data, x="normalized_computation", y="step_time_s", xlabel="Normalized computation", ax=ax)
