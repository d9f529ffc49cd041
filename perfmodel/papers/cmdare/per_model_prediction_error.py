"""Per-model prediction error (sigmetrics_figure5_comb.csv).

The Step Time columns equal the test rows of the unshuffled ``0latency_data.csv`` split, but re-fitting gives predictions up to
0.0156 s different and error means up to 33.8 points different, so the CSV itself is the data. Largest errors: ResNet-15 P100 +206.4 %,
custom1 P100 +123.8 %, custom2 P100 +99.2 %.

CM-DARE per-model step-time prediction error (``sigmetrics_figure5_comb.csv``): mean signed % error of the
single-feature ``Model/GPU`` linear model per (GPU, CNN), with its std. The CSV is the data of the figure: no notebook
regenerates it, and re-fitting does not reproduce its predictions.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from perfmodel import datasets as ds
from perfmodel.papers import _item
from perfmodel.papers._item import Item
from perfmodel.plotting import figure_size, paper_figure, plot_bars, subplots

ITEM = Item(
    paper="CM-DARE",
    number="SIGMETRICS-draft figure 5 (sigmetrics_figure5_comb.csv)",
    title="Per-model prediction error (sigmetrics_figure5_comb.csv)",
    upstream="sigmetrics_figure5_comb.csv (no notebook reads it)",
    sources=("cake-lab/CM-DARE: data/processed_data/speed_data/sigmetrics_figure5_comb.csv",),
    procedure=("Bars of the mean signed % error of the single-feature Model/GPU linear regression per (GPU, "
               "model), from the CSV itself."),
    status="EXACT (as data); not regenerable from code",
    tolerance="no quoted numbers",
    no_numbers="The papers quote no number for it beyond the data checked in its test.",
    legacy_id="prediction_error",
    notebook="notebooks/02-speed-prediction.ipynb",
    test="tests/papers/test_speed_figures.py",
)

__all__ = ["ITEM", "data", "numbers", "figure"]


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


def data() -> pd.DataFrame:
    """The tidy frame the figure draws (``perfmodel.figures.prediction_error_data``)."""
    return prediction_error_data()


def numbers() -> pd.DataFrame:
    """No quoted numbers (see ``ITEM.no_numbers``): an empty ``COMPARISON_COLUMNS`` frame."""
    return _item.no_numbers(__name__)


def figure(data: pd.DataFrame | None = None, ax=None):
    """The figure as a matplotlib Figure (``data`` defaults to :func:`data`; ``ax``: the Axes to draw into,
    one per panel, default a new figure of the paper's size)."""
    return prediction_error(data=data, ax=ax)
