"""CM-DARE per-model step-time prediction error (``sigmetrics_figure5_comb.csv``): mean signed % error of the
single-feature ``Model/GPU`` linear model per (GPU, CNN), with its std. The CSV is the data of the figure: no notebook
regenerates it, and re-fitting does not reproduce its predictions."""
from __future__ import annotations

from perfmodel.plotting import figure_size, paper_figure, plot_bars, subplots

import numpy as np
import pandas as pd

from perfmodel import datasets as ds

__all__ = ["prediction_error_data", "prediction_error"]


def prediction_error_data() -> pd.DataFrame:
    """31 rows: ``gpu``, ``model``, ``step_time_mean_s``, ``predicted_step_time_s``, ``error_mean_pct``, ``error_std_pct``."""
    return ds.load_speed_prediction_errors()


@paper_figure
def prediction_error(data: pd.DataFrame | None = None, *, ax=None):
    """Grouped bars of the mean signed error (%) per CNN, K80 and P100 side by side, std as error bars (text width)."""
    data = prediction_error_data() if data is None else data
    d = data.assign(model=data["model"].astype(str), gpu=data["gpu"].astype(str))
    models = [m for m in ds.MODEL_IDS if m in set(d["model"])]
    fig, ax, own = subplots(ax, figsize=figure_size("text", 2.4))
    plot_bars(d, x="model", y="error_mean_pct", hue="gpu", yerr="error_std_pct", order=models, hue_order=("K80", "P100"), ax=ax)
    ax.set_xticks(np.arange(len(models)), [ds.model_info(m).label for m in models], rotation=60, ha="right")
    ax.axhline(0, color="grey", lw=0.6)
    ax.set(xlabel="", ylabel="Prediction error (%)")
    if own:
        fig.tight_layout()
    return fig
