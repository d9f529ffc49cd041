"""CM-DARE per-model step-time prediction error (``sigmetrics_figure5_comb.csv``): mean signed % error of the
single-feature ``Model/GPU`` linear model per (GPU, CNN), with its std. The CSV is the data of the figure: no notebook
regenerates it, and re-fitting does not reproduce its predictions."""
from __future__ import annotations

from perfmodel.plotting import subplots

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = ["prediction_error_data", "prediction_error"]


def prediction_error_data() -> pd.DataFrame:
    """31 rows: ``gpu``, ``model``, ``step_time_mean_s``, ``predicted_step_time_s``, ``error_mean_pct``, ``error_std_pct``."""
    return ds.load_speed_prediction_errors()


def prediction_error(data: pd.DataFrame | None = None, *, ax=None):
    """Grouped bars of the mean signed error (%) per CNN, K80 and P100 side by side, std as error bars."""
    import matplotlib.pyplot as plt

    data = prediction_error_data() if data is None else data
    models = [m for m in ds.MODEL_IDS if m in set(data["model"].astype(str))]
    x = np.arange(len(models))
    fig, ax, own = subplots(ax, figsize=(6.5, 2.2))
    for i, gpu in enumerate(("K80", "P100")):
        g = data[data["gpu"] == gpu].set_index(data[data["gpu"] == gpu]["model"].astype(str)).reindex(models)
        ax.bar(x + (i - 0.5) * 0.4, g["error_mean_pct"], 0.4, yerr=g["error_std_pct"].fillna(0), label=gpu)
    ax.set_xticks(x, [ds.model_info(m).label for m in models], rotation=60, ha="right", fontsize=6)
    ax.axhline(0, color="grey", lw=0.6)
    ax.set(ylabel="Prediction error (%)")
    ax.legend(frameon=False)
    if own:
        fig.tight_layout()
    return fig
