"""CM-DARE ``speed_complexity_correlation.pdf`` (README "Fig 1"): step time vs normalized model GFLOPs, K80 and P100, 20 CNNs.

Source: ``0latency_k80_new.csv`` + ``0latency_p100_new2.csv`` (260 rows each), sp2 cells 31–32.
"""
from __future__ import annotations

import pandas as pd

from perfmodel import datasets as ds
from perfmodel.plotting import scatter_figure

__all__ = ["speed_complexity_correlation_data", "speed_complexity_correlation"]


def speed_complexity_correlation_data() -> pd.DataFrame:
    """520 rows: ``gpu``, ``model``, ``normalized_model``, ``step_time_s`` (the two per-GPU files, concatenated)."""
    cols = ["gpu", "model", "normalized_model", "step_time_s"]
    return pd.concat([ds.load_speed_file("k80_new")[cols], ds.load_speed_file("p100_new2")[cols]], ignore_index=True)


def speed_complexity_correlation(data: pd.DataFrame | None = None, *, ax=None):
    """The figure (2×2 in; K80 'x', P100 '^', alpha 0.1, as the notebook)."""
    return scatter_figure(speed_complexity_correlation_data() if data is None else data, x="normalized_model", y="step_time_s", xlabel="Normalized Model GFLOPs", ax=ax)
